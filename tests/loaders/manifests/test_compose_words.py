"""A Compose command written as one string is split as compose-go splits it
(kvlint/manifests/compose_words.py: go-shellwords v1.0.12's Parse, as types/command.go@e70e961
calls it), not as a shell would. Fixtures are written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.compose_words import compose_words
from kvlint.manifests.yaml_marks import LStr, load_documents
from tests.helpers import CONFIGS
from tests.loaders.manifests.support import extract_text, model_map, v


@pytest.mark.parametrize(("text", "words", "dropped"), [
    ("vllm serve m --tp 2", ["vllm", "serve", "m", "--tp", "2"], ""),
    ("a\n--b 1\n\t--c", ["a", "--b", "1", "--c"], ""),  # line breaks only separate words
    ("a # not a comment", ["a", "#", "not", "a", "comment"], ""),
    ("a 'x y' \"p q\" '' z", ["a", "x y", "p q", "", "z"], ""),
    ("a --x=\"1 2\"'3'", ["a", "--x=1 23"], ""),
    ("a b\\ c \\\\", ["a", "b c", "\\"], ""),
    ("a \\\n--b", ["a", "\n--b"], ""),  # the escaped line break stays in the next word
    ("a --p 8 2>&1 | tee log", ["a", "--p", "8"], ">&1 | tee log"),
    ("a --p 8 > log", ["a", "--p", "8"], "> log"),
    ("a; b", ["a"], "; b"),
    ("a '|' \"&\" x", ["a", "|", "&", "x"], ""),
    ("a $(date +%s) `id -u`", ["a", "$(date +%s)", "`id -u`"], ""),
    ("a ${X:-p q} b", ["a", "${X:-p q}", "b"], ""),  # interpolated before splitting
])
def test_words_as_compose_splits_them(text: str, words: list[str], dropped: str) -> None:
    split = compose_words(text, None)
    assert [w.text for w in split.words] == words and split.dropped == dropped
    assert split.invalid == ""


@pytest.mark.parametrize(("text", "why"), [
    ("python -c print(1)", "'('"),
    ("a (b)", "'('"),
    ("a b)", "unclosed '$('"),
    ("a 'b", "unclosed quote"),
    ('a "b', "unclosed quote"),
    ("a \\", "final '\\'"),
    ("a `b", "backquote"),
    ("a $(b", "unclosed '$('"),
])
def test_strings_compose_refuses(text: str, why: str) -> None:
    assert why in compose_words(text, None).invalid


def test_words_keep_their_lines() -> None:
    """A literal block puts each word on its line; a folded one on its source line."""
    (doc,) = load_documents("c:\n  command: |\n    a\n    --b 1\n  f: >\n    x\n    --y 2\n",
                            "c.yaml")
    assert isinstance(doc, dict)
    doc = doc["c"]
    lit = compose_words(doc["command"], None)
    assert [(w.text, w.line) for w in lit.words] == [("a", 3), ("--b", 4), ("1", 4)]
    assert isinstance(doc["f"], LStr)
    folded = compose_words(doc["f"], None)
    assert [(w.text, w.line) for w in folded.words] == [("x", 6), ("--y", 7), ("2", 7)]


def test_compose_file_readings() -> None:
    """Through the compose parser: one option per line is one command; the words after a
    pipe are not passed (a note says so); a '#' line's words are arguments vLLM refuses."""
    text = ("services:\n"
            "  a:\n    image: vllm/vllm-openai:v0.10.1.1\n"
            "    command: |\n      --model Qwen/Qwen2.5-7B\n      --max-model-len 8192\n"
            "  b:\n    image: vllm/vllm-openai:v0.10.1.1\n"
            "    command: --model Qwen/Qwen2.5-7B --max-model-len 4096 2>&1 | tee /l\n"
            "  c:\n    image: vllm/vllm-openai:v0.10.1.1\n"
            "    command: >\n      --model Qwen/Qwen2.5-7B\n      # the context\n"
            "      --max-model-len 2048\n")
    a, b, c = extract_text(text, "compose.yaml")
    assert (v(a.max_model_len), a.engine_problems) == (8192, ())
    assert (v(b.max_model_len), b.engine_problems) == (4096, ())
    assert any("before '>&1 | tee /l'" in n for n in b.notes)
    assert v(c.max_model_len) == 2048
    assert [p.option for p in c.engine_problems] == ["#", "the", "context"]
    assert "a '#' is no comment" in c.engine_problems[0].message


def test_a_refused_string_is_kv903_and_the_other_services_are_linted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n"
        "  ok:\n    image: vllm/vllm-openai:v0.10.1.1\n"
        "    command: --model Qwen/Qwen2.5-7B --max-model-len 8192\n"
        "  bad:\n    image: vllm/vllm-openai:v0.10.1.1\n"
        "    command: sh -c (vllm serve Qwen/Qwen2.5-7B)\n", encoding="utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(path), "--offline", "--no-plugins", "--format", "json",
        *model_map({"Qwen/Qwen2.5-7B": "Qwen--Qwen2.5-7B.json"}, CONFIGS)])
    data = json.loads(result.stdout)
    found = [(f["code"], f["severity"], f.get("line")) for r in data["results"]
             for f in r["findings"]]
    assert ("KV903", "error", 7) in [(c, s, ln) for c, s, ln in found], result.output
    assert result.exit_code == 1
    assert [r["serving"]["max_model_len"] for r in data["results"] if r.get("serving")
            and r["serving"].get("max_model_len")] == [8192]
