"""``--format github``: workflow-command annotations with GitHub's escaping."""

from __future__ import annotations

import random
import re

import pytest

from kvlint.diagnostics import Severity
from kvlint.reporters import github
from kvlint.reporters.github import (
    GithubReporter,
    annotation,
    command,
    escape_data,
    escape_property,
)
from tests.helpers import ROOT
from tests.reporters import (
    CASES,
    LLAMA31,
    QWEN3,
    check_run,
    finding,
    hub_result,
    lint_run,
    made_up,
    run_of,
    unresolved_result,
)

COMMAND_RE = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")


def unescape_data(value: str) -> str:
    """What the Actions runner does to a command's message (runner's CommandStringConvert
    in reverse order of escaping)."""
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return (value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":")
            .replace("%2C", ",").replace("%25", "%"))


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """A command line as the runner reads it: kind, properties, message."""
    match = COMMAND_RE.match(line)
    assert match, line
    kind, props, message = match.groups()
    properties = {}
    for item in (props or "").split(","):
        if item:
            key, _, value = item.partition("=")
            properties[key] = unescape_property(value)
    return kind, properties, unescape_data(message)


# ----------------------------------------------------------------- escaping
@pytest.mark.parametrize(("raw", "data", "prop"), [
    ("plain text", "plain text", "plain text"),
    ("100%", "100%25", "100%25"),
    ("a\rb", "a%0Db", "a%0Db"),
    ("a\nb", "a%0Ab", "a%0Ab"),
    ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
    ("key: value", "key: value", "key%3A value"),
    ("a,b", "a,b", "a%2Cb"),
    ("::error::", "::error::", "%3A%3Aerror%3A%3A"),
    ("%0A", "%250A", "%250A"),  # an already-escaped sequence stays literal
    ("%3A%2C", "%253A%252C", "%253A%252C"),
    ("%%", "%25%25", "%25%25"),
    ("tp=8, pp=2: 50%\n", "tp=8, pp=2: 50%25%0A", "tp=8%2C pp=2%3A 50%25%0A"),
    ("≥ 0.3.2 ∈ {1, 2}", "≥ 0.3.2 ∈ {1, 2}", "≥ 0.3.2 ∈ {1%2C 2}"),
    ("", "", ""),
])
def test_escaping(raw: str, data: str, prop: str) -> None:
    assert escape_data(raw) == data
    assert escape_property(raw) == prop


def test_escaping_round_trips_and_leaves_no_separator() -> None:
    rng = random.Random(20240501)
    alphabet = "%\r\n:,=a1 %0A%25%3A%2C"
    for _ in range(2000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 16)))
        data, prop = escape_data(raw), escape_property(raw)
        assert unescape_data(data) == raw
        assert unescape_property(prop) == raw
        assert "\r" not in data and "\n" not in data
        assert not {"\r", "\n", ":", ","} & set(prop)


def test_command_drops_missing_properties_and_parses_back() -> None:
    line = command("warning", "50% of\nthe KV", {"file": "a:b,c.yaml", "line": None,
                                                "title": "KV201 x"})
    assert line == "::warning file=a%3Ab%2Cc.yaml,title=KV201 x::50%25 of%0Athe KV"
    assert parse(line) == ("warning", {"file": "a:b,c.yaml", "title": "KV201 x"},
                           "50% of\nthe KV")
    assert command("notice", "m", {}) == "::notice::m"


def test_annotation_escapes_path_title_and_message() -> None:
    f = finding("KV206", "4 GPUs, need 8: 100%\nfix it", path="deploy/a,b:c.yaml", line=7,
                column=5)
    result = made_up("org/model,v2:x", f, path="deploy/a,b:c.yaml", line=3)
    line = annotation(result, f, ROOT)
    assert line.startswith("::warning file=deploy/a%2Cb%3Ac.yaml,line=7,col=5,title=")
    assert "\n" not in line
    kind, props, message = parse(line)
    assert kind == "warning"
    assert props == {"file": "deploy/a,b:c.yaml", "line": "7", "col": "5",
                     "title": "KV206 gpu-count-mismatch (org/model,v2:x)"}
    assert message == "4 GPUs, need 8: 100%\nfix it"


# ----------------------------------------------------------------- real runs
def test_lint_annotations() -> None:
    lines = GithubReporter().render(lint_run()).splitlines()
    assert lines[:-1] == [line for line in lines if line.startswith("::")]
    parsed = [parse(line) for line in lines[:-1]]
    assert len(parsed) == 7
    by_title = {p[1]["title"]: p for p in parsed}
    kind, props, message = by_title[
        "KV202 tp-indivisible-kv-heads (microsoft/Phi-3-medium-4k-instruct)"]
    assert kind == "error"
    assert props["file"] == "fixtures/cases/vllm-phi3-medium-tp8.yaml"
    assert (props["line"], props["col"]) == ("14", "15")  # `--tensor-parallel-size`
    assert message.startswith("vLLM 0.8.5 refuses tp=8 for 10 KV heads")
    assert by_title["KV206 gpu-count-mismatch (microsoft/Phi-3-medium-4k-instruct)"][0] == \
        "error"
    assert by_title["KV303 sliding-window-full-allocation (microsoft/Phi-3-medium-4k-instruct)"
                    ][0] == "notice"
    # a manifest that does not parse: its path is the target, no model to name
    assert by_title["KV903 manifest-unparsable"][1]["file"] == "fixtures/cases/invalid.yaml"
    assert lines[-1] == "kvlint: 5 results · 6 errors · 1 info · exit 1 " \
                        "(fail-on: error)"


def test_severity_commands() -> None:
    assert github.COMMANDS == {Severity.ERROR: "error", Severity.WARNING: "warning",
                               Severity.INFO: "notice"}
    info = finding("KV201", severity=Severity.INFO, path="a.yaml", line=1)
    assert GithubReporter().render(run_of(made_up("m", info))).startswith("::notice ")


def test_checked_config_file_has_file_but_no_line() -> None:
    lines = GithubReporter().render(check_run(LLAMA31)).splitlines()
    kind, props, _ = parse(lines[0])
    assert kind == "warning"
    assert props == {"file": "fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json",
                     "title": "KV201 tp-replicates-kv-heads"}


def test_hub_model_has_no_file_and_names_the_model() -> None:
    out = GithubReporter().render(run_of(hub_result(), unresolved_result()))
    first, second, summary = out.splitlines()
    assert first.startswith("::warning title=KV201 tp-replicates-kv-heads "
                            "(meta-llama/Llama-3.1-8B@main)::")
    assert "file=" not in first and "line=" not in first
    assert second.startswith("::error title=KV900 config-unresolved (acme/broken@main)::")
    assert summary.endswith("exit 2 (fail-on: error)")


def test_paths_relative_to_repository_root_from_a_subdirectory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    run = lint_run(CASES / "invalid.yaml")
    monkeypatch.chdir(CASES)
    absolute = run_of(*(made_up(r.target.ref, *(
        finding(f.code, f.message, path=str(ROOT / f.path) if f.path else None, line=f.line)
        for f in r.findings), path=r.target.path, line=r.target.line) for r in run.results))
    _, props, _ = parse(GithubReporter().render(absolute).splitlines()[0])
    assert props["file"] == "fixtures/cases/invalid.yaml"


def test_clean_run_prints_only_the_summary() -> None:
    assert GithubReporter().render(check_run(QWEN3, tp=8)) == \
        "kvlint: 1 result · no findings · exit 0 (fail-on: error)\n"


def test_reporter_is_a_plugin() -> None:
    assert github.kvlint_reporters() == [GithubReporter]
    assert GithubReporter.name == "github"
