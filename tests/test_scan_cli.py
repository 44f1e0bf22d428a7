"""`kvlint scan` end to end: files, packages, suppressions, output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import GQA_SOURCE

SOURCE = GQA_SOURCE


def scan(*args: str) -> Result:
    return CliRunner().invoke(main, ["scan", *args, "--isolated", "--no-plugins"])


def as_json(*args: str) -> dict[str, Any]:
    result = scan(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_materialised_gqa_is_found_on_its_line(tmp_path: Path) -> None:
    (tmp_path / "attn.py").write_text(SOURCE)
    data = as_json(str(tmp_path))
    [result] = data["results"]
    assert result["target"]["kind"] == "source"
    codes = sorted((f["code"], f["line"]) for f in result["findings"])
    assert ("KV401", 12) in codes
    assert all(c == "KV401" for c, _ in codes)
    assert scan(str(tmp_path)).exit_code == 0  # a warning under fail-on error
    assert scan(str(tmp_path), "--fail-on", "warning").exit_code == 1


def test_python_suppression_with_reason(tmp_path: Path) -> None:
    text = SOURCE.replace(
        "        key_states = repeat_kv(key_states, self.num_key_value_groups)\n",
        "        # kvlint: ignore[KV401] reference implementation, never served\n"
        "        key_states = repeat_kv(key_states, self.num_key_value_groups)\n")
    (tmp_path / "attn.py").write_text(text)
    lines = [f["line"] for r in as_json(str(tmp_path))["results"] for f in r["findings"]
             if f["code"] == "KV401"]
    assert 13 not in lines


def test_safe_sdpa_with_enable_gqa_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "sdpa.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def attend(query, key_states, value_states):\n"
        "    return F.scaled_dot_product_attention(query, key_states, value_states,"
        " enable_gqa=True)\n")
    assert as_json(str(tmp_path))["results"] == []


def test_invalid_python_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "attn.py").write_text(SOURCE)
    data = as_json(str(tmp_path))
    codes = {f["code"] for r in data["results"] for f in r["findings"]}
    assert codes == {"KV401", "KV903"}


def test_kvlint_itself_is_clean() -> None:
    data = as_json("--package", "kvlint")
    assert [f for r in data["results"] for f in r["findings"]] == []


def test_scan_needs_something_to_scan() -> None:
    result = scan()
    assert result.exit_code == 2
    assert "give PATH..., --package NAME or --hub MODEL" in result.stderr


def test_unknown_package() -> None:
    result = scan("--package", "no-such-distribution-xyz")
    assert result.exit_code == 2
    assert "package 'no-such-distribution-xyz' is not installed" in result.stderr


KEY_LINE = "        key_states = repeat_kv(key_states, self.num_key_value_groups)\n"


def _kv401_lines(tmp_path: Path, text: str) -> tuple[list[int], list[tuple[int, str]]]:
    (tmp_path / "attn.py").write_text(text)
    findings = [f for r in as_json(str(tmp_path))["results"] for f in r["findings"]]
    return ([f["line"] for f in findings if f["code"] == "KV401"],
            [(f["line"], f["message"]) for f in findings if f["code"] == "KV901"])


def test_noqa_suppresses_like_flake8(tmp_path: Path) -> None:
    """`# noqa: KV401` on the finding's line suppresses it (no reason needed); codes of other
    tools beside it are left alone."""
    for comment in ("# noqa: KV401", "# NOQA:KV401", "# noqa: E501, KV401 reference code"):
        lines, unused = _kv401_lines(tmp_path, SOURCE.replace(
            KEY_LINE, f"{KEY_LINE[:-1]}  {comment}\n"))
        assert lines == [13], comment
        assert unused == []


def test_noqa_is_line_only_and_bare_noqa_is_not_ours(tmp_path: Path) -> None:
    # flake8's noqa covers its own line only: on the line above it matches nothing (KV901)
    lines, unused = _kv401_lines(tmp_path, SOURCE.replace(
        KEY_LINE, f"        # noqa: KV401\n{KEY_LINE}"))
    assert lines == [13, 14]
    assert unused == [(12, "suppression of KV401 matched no finding: remove it")]
    # a bare noqa, or one naming only other tools' codes, is not kvlint's (the strings are
    # split so that ruff does not read them as its own directives)
    for comment in ("# " + "noqa", "# " + "noqa: E501"):
        lines, unused = _kv401_lines(tmp_path, SOURCE.replace(
            KEY_LINE, f"{KEY_LINE[:-1]}  {comment}\n"))
        assert lines == [12, 13], comment
        assert unused == []
    # a noqa inside a string is not a comment
    lines, _ = _kv401_lines(tmp_path, SOURCE.replace(
        KEY_LINE, f'{KEY_LINE[:-1]}; note = "# noqa: KV401"\n'))
    assert lines == [12, 13]
