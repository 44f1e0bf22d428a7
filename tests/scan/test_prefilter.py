"""The text pre-filter of the source analyzer: a file none of whose calls can start a finding
is parsed (invalid Python is still reported) but not walked, and that never loses a finding."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from kvlint.scan import analyzer
from kvlint.scan.vocabulary import ORIGIN_NAMES, UPPROJ, may_have_findings

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "fixtures" / "sources"


def _walked(text: str) -> list[analyzer.SourceFinding]:
    """The findings of a full walk, pre-filter or not."""
    return list(analyzer._iter_findings(ast.parse(text)))


def test_every_fixture_with_findings_passes_the_filter() -> None:
    for path in sorted(SOURCES.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if _walked(text):
            assert may_have_findings(text), path.name


def test_skipped_transformers_files_have_no_findings() -> None:
    """Every third file of the installed transformers that the filter skips: a full walk finds
    nothing in it either (read as text, never imported)."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("transformers is not installed")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))[::3]
    skipped = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if not may_have_findings(text):
            skipped += 1
            assert not list(analyzer._iter_findings(tree)), path
    assert skipped > 100


def test_files_without_an_origin_call_are_not_walked() -> None:
    text = "def f(key, value):\n    return torch.matmul(key, value)\n"
    assert not may_have_findings(text)
    assert analyzer.scan_source(text, "plain.py") == []
    with pytest.raises(ValueError, match="invalid Python"):
        analyzer.scan_source("def f(:\n", "broken.py")  # still parsed


@pytest.mark.parametrize("name", ["repeat_interleave", "repeat", "expand", "broadcast_to",
                                  *sorted(UPPROJ)])
def test_each_origin_call_passes_the_filter(name: str) -> None:
    assert any(token in name for token in ORIGIN_NAMES)
    assert may_have_findings(f"def f(k):\n    return k.{name}(2, dim=1)\n")


def test_a_normalised_identifier_is_still_walked() -> None:
    """Python reads an identifier spelt with a fullwidth r (U+FF52) as ``repeat_interleave``
    (NFKC normalisation of names)."""
    ascii_source = (
        "import torch\n\n\n"
        "def attend(query, key_states):\n"
        "    key_states = key_states.repeat_interleave(4, dim=1)\n"
        "    return torch.matmul(query, key_states)\n"
    )
    fullwidth = ascii_source.replace(".repeat_interleave", ".\uff52epeat_interleave")
    assert not any(name in fullwidth for name in ORIGIN_NAMES)
    assert may_have_findings(fullwidth)
    found = analyzer.scan_source(fullwidth, "wide.py")
    assert [(f.code, f.line) for f in found] == [("KV401", 5)]
    assert found == analyzer.scan_source(ascii_source, "wide.py")
    # accents and other letters that cannot become those names do not force a walk
    assert not may_have_findings("def f():\n    return '\u2211 \u2192 \u00df \u2014'\n")
    assert may_have_findings("def f():\n    return '\u00e7a'\n")  # c, cedilla: walked


def test_depth_is_only_a_problem_for_a_file_that_is_walked() -> None:
    deep = "def f(k):\n    x = " + "+".join(["k"] * 1000) + "\n    return x\n"
    assert analyzer.scan_source(deep, "deep.py") == []
    with pytest.raises(ValueError, match="nesting too deep to analyse"):
        analyzer.scan_source(deep + "\n\ndef g(k):\n    return k.expand(2)\n", "deep.py")


@pytest.mark.parametrize("comment", [
    "# noqa: E501", "# noqa", "# NOQA: F401, E402", "# noqa: KV401", "# NOQA:kv401",
    "# noqa: E501, KV401 reference", "# kvlint: ignore[KV401] why", "# kvlint: ignore[KV401]",
    "# kvlint: ignore-file[KV402] vendored", "# type: ignore  # noqa: E501 kv cache",
])
def test_suppression_prefilter_never_hides_a_directive(comment: str) -> None:
    """Files whose suppression comments cannot be kvlint's are not tokenized for them."""
    from kvlint.suppress import directives, may_have_directives

    text = f"import torch\n\n\ndef f(k):\n    return k  {comment}\n"
    if not may_have_directives(text):
        assert directives("f.py", text) == []
    if "KV4" in comment.upper() or "kvlint:" in comment:
        assert may_have_directives(text)
    assert not may_have_directives("x = 1  # noqa: E501\ny = 2  # NOQA\n")
