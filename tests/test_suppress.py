"""Suppressions: inline comments, annotations, file level, reasons required, KV901."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from tests.helpers import CONFIGS, ROOT

CASE = (ROOT / "fixtures" / "cases" / "vllm-phi3-medium-tp8.yaml").read_text()
PHI = f"microsoft/Phi-3-medium-4k-instruct={CONFIGS / 'microsoft--Phi-3-medium-4k-instruct.json'}"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def lint(path: Path, *args: str) -> tuple[int, list[tuple[int | None, str, str]]]:
    result = CliRunner().invoke(main, ["lint", str(path), "--model-map", PHI, "--format",
                                       "json", "--isolated", "--no-plugins", *args])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    found = sorted((f["line"], f["code"], f["message"]) for r in data["results"]
                   for f in r["findings"])
    return result.exit_code, found


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deploy.yaml"
    path.write_text(text)
    return path


def test_inline_suppression_on_the_line_above(tmp_path: Path) -> None:
    # the TP flag is on line 14: the directive goes on the line above it
    text = CASE.replace("            - --tensor-parallel-size\n",
                        "            # kvlint: ignore[KV202] we pin tp=8 until the 2-node move\n"
                        "            - --tensor-parallel-size\n")
    # (the case's 4 GPUs for tp=8 is KV206, an error of its own: not what is tested here)
    code, found = lint(write(tmp_path, text), "--ignore", "KV206")
    assert sorted(c for _, c, _ in found) == ["KV303"]
    assert code == 0


def test_inline_suppression_on_the_same_line_by_name(tmp_path: Path) -> None:
    text = CASE.replace('              nvidia.com/gpu: "4"\n',
                        '              nvidia.com/gpu: "4"  # kvlint: ignore[gpu-count-mismatch]'
                        ' shared node\n')
    _, found = lint(write(tmp_path, text))
    assert "KV206" not in [c for _, c, _ in found]


def test_suppression_without_reason_suppresses_nothing_and_is_reported(tmp_path: Path) -> None:
    flag = "            - --tensor-parallel-size\n"
    text = CASE.replace(flag, "            # kvlint: ignore[KV202]\n" + flag)
    code, found = lint(write(tmp_path, text))
    assert code == 1
    assert (14, "KV901", "suppression of KV202 has no reason, so it suppresses nothing: "
            "write the reason after the brackets (# kvlint: ignore[KV202] why)") in found
    assert any(c == "KV202" for _, c, _ in found)


def test_unused_suppression_is_kv901(tmp_path: Path) -> None:
    text = CASE.replace("  name: phi3\n", "  name: phi3  # kvlint: ignore[KV101] legacy MHA\n")
    _, found = lint(write(tmp_path, text))
    assert (5, "KV901", "suppression of KV101 matched no finding: remove it") in found
    _, quiet = lint(write(tmp_path, text), "--ignore", "KV901")
    assert "KV901" not in [c for _, c, _ in quiet]


def test_file_level_suppression(tmp_path: Path) -> None:
    text = "# kvlint: ignore-file[KV202,KV206] lab cluster, tp is under test\n" + CASE
    _, found = lint(write(tmp_path, text))
    assert [c for _, c, _ in found] == ["KV303"]


def test_kubernetes_annotation_covers_its_object(tmp_path: Path) -> None:
    text = CASE.replace("  name: phi3\n", "  name: phi3\n  annotations:\n"
                        '    ignore-check.kvlint.io/KV206: "GPUs are shared by MIG"\n')
    other = text + "---\n" + CASE.replace("name: phi3", "name: phi3-b")
    _, found = lint(write(tmp_path, other))
    kv206 = [line for line, c, _ in found if c == "KV206"]
    assert len(kv206) == 1 and kv206[0] > 25  # only the second object's finding remains


# The flag is on line 14 (`- --tensor-parallel-size`), its value on line 15 (`- "8"`): the
# finding spans both, and a reasoned comment on either line or the line above either
# suppresses it (and is used: no KV901).
FLAG = "            - --tensor-parallel-size\n"
VALUE = '            - "8"\n'
WHY = "# kvlint: ignore[KV202] pinned until the 2-node move"


@pytest.mark.parametrize("text", [
    CASE.replace(FLAG, f"            {WHY}\n{FLAG}"),  # above the flag
    CASE.replace(FLAG, f"{FLAG[:-1]}  {WHY}\n"),  # on the flag's line
    CASE.replace(VALUE, f"{VALUE[:-1]}  {WHY}\n"),  # on the value's line
    CASE.replace(VALUE, f"            {WHY}\n{VALUE}"),  # above the value (below the flag)
], ids=["above-flag", "flag-line", "value-line", "above-value"])
def test_suppression_anywhere_on_the_flag_value_span(tmp_path: Path, text: str) -> None:
    code, found = lint(write(tmp_path, text), "--ignore", "KV206")  # KV206: an error of its own
    assert sorted(c for _, c, _ in found) == ["KV303"]
    assert code == 0


def test_suppression_outside_the_span_is_unused(tmp_path: Path) -> None:
    # two lines above the flag, and below the value: neither touches the span
    far = CASE.replace("          args:\n", f"          {WHY}\n          args:\n")
    _, found = lint(write(tmp_path, far))
    assert [c for _, c, _ in found].count("KV202") == 1
    assert (13, "KV901", "suppression of KV202 matched no finding: remove it") in found
    below = CASE.replace("            - --kv-cache-dtype\n",
                         f"            - --kv-cache-dtype  {WHY}\n")
    _, found = lint(write(tmp_path, below))
    assert {c for _, c, _ in found} >= {"KV202", "KV901"}


def test_findings_carry_the_flag_column_and_the_value_line(tmp_path: Path) -> None:
    """`path:line:col` points at the flag; JSON `end_line` and SARIF `endLine` at the value."""
    path = write(tmp_path, CASE)
    text = CliRunner().invoke(main, ["lint", str(path), "--model-map", PHI, "--isolated",
                                     "--no-plugins", "--format", "text"]).stdout
    assert f"{path}:14:15: microsoft/Phi-3-medium-4k-instruct  KV202 error" in text
    assert f"{path}:20:15: microsoft/Phi-3-medium-4k-instruct  KV206 error" in text
    result = CliRunner().invoke(main, ["lint", str(path), "--model-map", PHI, "--isolated",
                                       "--no-plugins", "--format", "json"])
    by_code = {f["code"]: f for r in json.loads(result.stdout)["results"]
               for f in r["findings"]}
    assert (by_code["KV202"]["line"], by_code["KV202"]["column"],
            by_code["KV202"]["end_line"]) == (14, 15, 15)
    assert "end_line" not in by_code["KV206"]  # `nvidia.com/gpu: "4"`: one line
    # an inline `--flag=value` is one line; the column is the flag's
    inline = CASE.replace(FLAG + VALUE, "            - --tensor-parallel-size=8\n")
    result = CliRunner().invoke(main, ["lint", str(write(tmp_path, inline)), "--model-map",
                                       PHI, "--isolated", "--no-plugins", "--format", "json"])
    by_code = {f["code"]: f for r in json.loads(result.stdout)["results"]
               for f in r["findings"]}
    assert (by_code["KV202"]["line"], by_code["KV202"]["column"]) == (14, 15)
    assert "end_line" not in by_code["KV202"]


SHELL = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: phi3
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          command: ["/bin/sh", "-c"]
          args:
            - |
              vllm serve microsoft/Phi-3-medium-4k-instruct \\
                --tensor-parallel-size \\
                8{comment}
          resources:
            limits:
              nvidia.com/gpu: "8"
"""


def test_a_shell_continuation_spans_flag_and_value(tmp_path: Path) -> None:
    """In a shell script the value may follow its flag after `\\`-newline: the finding is at
    the flag (line 15, column 17) and spans to the value (line 16), where a comment
    suppresses it."""
    path = write(tmp_path, SHELL.format(comment=""))
    result = CliRunner().invoke(main, ["lint", str(path), "--model-map", PHI, "--isolated",
                                       "--no-plugins", "--format", "json"])
    by_code = {f["code"]: f for r in json.loads(result.stdout)["results"]
               for f in r["findings"]}
    assert (by_code["KV202"]["line"], by_code["KV202"]["column"],
            by_code["KV202"]["end_line"]) == (15, 17, 16)
    _, found = lint(write(tmp_path, SHELL.format(comment=f"  {WHY}")))
    assert [c for _, c, _ in found] == ["KV303"]


ENGINE_WHY = "# kvlint: ignore[{code}] our build patches the parser"


@pytest.mark.parametrize(("flag", "value", "code"), [
    ("--tensor-parallel-size", "abc", "KV702"),  # a value vLLM refuses
    ("--kv-cache-dtype", "fp8_e4m3fn", "KV702"),
    ("--tp", "8", "KV701"),  # an option vLLM lacks, with the word it took
])
@pytest.mark.parametrize("where", ["flag-line", "value-line", "above-value"])
def test_engine_refusals_span_the_flag_and_its_value(tmp_path: Path, flag: str, value: str,
                                                     code: str, where: str) -> None:
    """KV701/KV702 sit on the option's line and span its value's: a reasoned comment on
    either line (or above the value) suppresses them and is used (no KV901)."""
    why = ENGINE_WHY.format(code=code)
    flag_line = f"            - {flag}\n"
    value_line = f'            - "{value}"\n'
    pair = {"flag-line": f"{flag_line[:-1]}  {why}\n{value_line}",
            "value-line": f"{flag_line}{value_line[:-1]}  {why}\n",
            "above-value": f"{flag_line}            {why}\n{value_line}"}[where]
    # the pair replaces the case's tp pair (or, for the dtype, its kv-cache-dtype pair)
    old = FLAG + VALUE if flag != "--kv-cache-dtype" else \
        "            - --kv-cache-dtype\n            - fp8\n"
    text, bare = CASE.replace(old, pair), CASE.replace(old, flag_line + value_line)
    _, unsuppressed = lint(write(tmp_path, bare))
    assert code in [c for _, c, _ in unsuppressed]
    result = CliRunner().invoke(main, ["lint", str(write(tmp_path, bare)), "--model-map", PHI,
                                       "--format", "json", "--isolated", "--no-plugins"])
    refusal = next(f for r in json.loads(result.stdout)["results"] for f in r["findings"]
                   if f["code"] == code)
    line = 14 if flag != "--kv-cache-dtype" else 16
    assert (refusal["line"], refusal["column"], refusal["end_line"]) == (line, 15, line + 1)
    _, found = lint(write(tmp_path, text))
    codes = [c for _, c, _ in found]
    assert code not in codes and "KV901" not in codes, found


def test_engine_refusals_in_a_shell_string_point_at_the_option(tmp_path: Path) -> None:
    """Inside a shell string the parser knows an option word's line only: KV701/KV702 get
    the column of the word on that line (not column 1), and a value after `\\`-newline
    extends the span to its line."""
    text = SHELL.format(comment="").replace(
        "                --tensor-parallel-size \\\n                8",
        "                --tp 2 --dtype=fp32 --kv-cache-dtype \\\n                bogus")
    path = write(tmp_path, text)
    result = CliRunner().invoke(main, ["lint", str(path), "--model-map", PHI, "--isolated",
                                       "--no-plugins", "--format", "json"])
    found = sorted((f["code"], f["line"], f.get("column"), f.get("end_line"), f["data"]["option"])
                   for r in json.loads(result.stdout)["results"] for f in r["findings"]
                   if f["code"] in ("KV701", "KV702"))
    assert found == [("KV701", 15, 17, None, "--tp"),
                     ("KV702", 15, 24, None, "--dtype"),
                     ("KV702", 15, 37, 16, "--kv-cache-dtype")]
