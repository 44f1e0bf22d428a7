"""``--format markdown``: the step-summary / PR-comment table and the findings."""

from __future__ import annotations

import re

import pytest

from kvlint.reporters import markdown
from kvlint.reporters.markdown import MarkdownReporter, cell, code_span
from tests.reporters import (
    CASES,
    DSV3,
    LLAMA31,
    PHI3M,
    QWEN3,
    check_run,
    finding,
    hub_result,
    lint_run,
    made_up,
    run_of,
    unresolved_result,
)


def table(text: str) -> list[list[str]]:
    """The table's rows (header first) split on unescaped pipes."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert re.fullmatch(r"\|(---\|)+", rows[1])
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]
    assert len({len(r) for r in split}) == 1, "every row has as many cells as the header"
    return [split[0], *split[2:]]


def findings_section(text: str) -> list[str]:
    return text.split("### Findings\n\n", 1)[1].splitlines()


def test_check_table() -> None:
    text = MarkdownReporter().render(check_run(LLAMA31, DSV3, PHI3M))
    assert text.startswith("## kvlint\n\n3 results · 2 errors · 2 warnings · exit 1")
    header, *rows = table(text)
    assert header == ["model", "attention", "KV/token", "per GPU", "replication", "findings"]
    assert rows[0] == ["fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json", "GQA 32/8",
                       "128 KiB", "16.0 KiB at tp=16", "2x", "KV201 warning"]
    assert rows[1][1:] == ["MLA 512+64", "68.6 KiB", "68.6 KiB at tp=16", "16x",
                           "KV204 warning"]
    assert rows[2][1:] == ["GQA 40/10", "200 KiB", "refused at tp=16", "-",
                           "KV202 error, KV203 error"]


def test_findings_section() -> None:
    lines = findings_section(MarkdownReporter().render(check_run(LLAMA31)))
    assert lines[0] == (
        "- ⚠️ **[KV201](https://github.com/kvlint/kvlint/blob/main/rules/KV201.md)** warning"
        " · `tp-replicates-kv-heads` · `fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json`  ")
    assert lines[1].startswith("  8 KV heads over tp=16: each head is stored on 2 GPUs;")
    assert len(lines) == 2


def test_lint_table_has_file_and_line() -> None:
    text = MarkdownReporter().render(lint_run())
    header, *rows = table(text)
    assert header == ["model", "file", "attention", "KV/token", "per GPU", "replication",
                      "findings"]
    assert len(rows) == 5
    by_file = {r[1]: r for r in rows}
    assert by_file["fixtures/cases/vllm-phi3-medium-tp8.yaml:12"] == [
        "microsoft/Phi-3-medium-4k-instruct", "fixtures/cases/vllm-phi3-medium-tp8.yaml:12",
        "GQA 40/10", "100 KiB", "refused at tp=8", "-",
        "KV202 error, KV206 error, KV303 info"]
    assert by_file["fixtures/cases/invalid.yaml:5"] == [
        "-", "fixtures/cases/invalid.yaml:5", "unresolved", "-", "-", "-", "KV903 error"]
    found = [line for line in findings_section(text) if line.startswith("- ")]
    assert len(found) == 7
    assert any("`fixtures/cases/vllm-phi3-medium-tp8.yaml:20` · "
               "`microsoft/Phi-3-medium-4k-instruct`" in line and "KV206" in line
               for line in found)


def test_hub_and_unresolved_models() -> None:
    text = MarkdownReporter().render(run_of(hub_result(), unresolved_result()))
    _, hub, broken = table(text)
    assert hub[0] == "meta-llama/Llama-3.1-8B@main"
    assert broken == ["acme/broken@main", "unresolved", "-", "-", "-", "KV900 error"]
    lines = findings_section(text)
    assert "`acme/broken@main`" in lines[2]
    assert "missing field" in lines[3]


def test_clean_run_says_no_findings() -> None:
    text = MarkdownReporter().render(check_run(QWEN3, tp=8))
    assert "1 result · no findings · exit 0 (fail-on: error)" in text
    assert table(text)[1][-1] == "none"
    assert findings_section(text) == ["No findings."]


def test_empty_run() -> None:
    text = MarkdownReporter().render(run_of())
    assert "|" not in text
    assert text.endswith("### Findings\n\nNo findings.\n")


def test_pipes_and_newlines_are_escaped_in_cells() -> None:
    f = finding("KV201", "a | b\nc", path="deploy/x|y.yaml", line=3)
    text = MarkdownReporter().render(run_of(made_up("org/a|b", f, path="deploy/x|y.yaml",
                                                    line=2)))
    header, row = table(text)
    assert row[0] == "org/a\\|b"
    assert row[1] == "deploy/x\\|y.yaml:2"
    assert len(row) == len(header)
    message = findings_section(text)[1]
    assert message == "  a | b c"  # a list item, not a table: one line is enough


@pytest.mark.parametrize(("raw", "escaped"), [
    ("a|b", "a\\|b"), ("a\\|b", "a\\\\\\|b"), ("x\ny", "x<br>y"), ("x\r\ny", "x<br>y"),
    ("plain", "plain"),
])
def test_cell(raw: str, escaped: str) -> None:
    assert cell(raw) == escaped


def test_code_span_fences_backticks() -> None:
    assert code_span("a.yaml:3") == "`a.yaml:3`"
    assert code_span("we`ird") == "``we`ird``"
    assert code_span("`x`") == "`` `x` ``"


def test_html_in_messages_is_neutralised() -> None:
    f = finding("KV201", "<script>x</script>", path="a.yaml", line=1)
    text = MarkdownReporter().render(run_of(made_up("m", f, path="a.yaml", line=1)))
    assert "<script>" not in text and "&lt;script&gt;x&lt;/script&gt;" in text


def test_output_is_deterministic() -> None:
    assert MarkdownReporter().render(lint_run(CASES)) == MarkdownReporter().render(lint_run())


def test_reporter_is_a_plugin() -> None:
    assert markdown.kvlint_reporters() == [MarkdownReporter]
    assert MarkdownReporter.name == "markdown"
