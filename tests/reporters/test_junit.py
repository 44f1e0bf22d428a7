"""``--format junit``: JUnit XML that parses, one testcase per (target, rule), honest counts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kvlint.diagnostics import Severity
from kvlint.linter import LintRun
from kvlint.reporters import junit
from kvlint.reporters.junit import JunitReporter, xml_text
from tests.reporters import (
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


def parse(run: LintRun) -> ET.Element:
    text = JunitReporter().render(run)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "kvlint"
    cases = suite.findall("testcase")
    counted = {"tests": len(cases),
               "failures": sum(1 for c in cases if c.find("failure") is not None),
               "errors": sum(1 for c in cases if c.find("error") is not None)}
    for element in (root, suite):
        assert {k: int(element.get(k, "-1")) for k in counted} == counted
    assert suite.get("skipped") == "0"
    return suite


def cases(suite: ET.Element) -> dict[tuple[str, str], ET.Element]:
    found = {(c.get("classname", ""), c.get("name", "")): c for c in suite.findall("testcase")}
    assert len(found) == len(suite.findall("testcase")), "testcases are unique"
    return found


def test_lint_run_counts_and_cases() -> None:
    suite = parse(lint_run())
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "6", "0")
    by_key = cases(suite)
    phi = "fixtures/cases/vllm-phi3-medium-tp8.yaml:12 (microsoft/Phi-3-medium-4k-instruct)"
    kv202 = by_key[(phi, "KV202 tp-indivisible-kv-heads")]
    failure = kv202.find("failure")
    assert failure is not None
    assert failure.get("type") == "error"
    assert (failure.get("message") or "").startswith("vLLM 0.8.5 refuses tp=8")
    assert (failure.text or "").startswith(
        "fixtures/cases/vllm-phi3-medium-tp8.yaml:14: KV202 error: vLLM 0.8.5 refuses")
    assert (kv202.get("file"), kv202.get("line")) == \
        ("fixtures/cases/vllm-phi3-medium-tp8.yaml", "14")
    # too few GPUs for the tp: a start that fails, an error like KV202
    kv206 = by_key[(phi, "KV206 gpu-count-mismatch")]
    assert (kv206.find("failure") is not None and
            kv206.find("failure").get("type") == "error")  # type: ignore[union-attr]
    # below --fail-on: reported, not failing
    kv303 = by_key[(phi, "KV303 sliding-window-full-allocation")]
    assert kv303.find("failure") is None
    assert "KV303 info:" in (kv303.findtext("system-out") or "")
    # the Phi target fails, so it gets no passing "kvlint" case
    assert (phi, "kvlint") not in by_key
    assert ("fixtures/cases/invalid.yaml:5", "KV903 manifest-unparsable") in by_key


def test_fail_on_moves_findings_between_failure_and_system_out() -> None:
    suite = parse(lint_run(fail_on="warning"))
    assert suite.get("failures") == "6"
    suite = parse(lint_run(fail_on="info"))
    assert suite.get("failures") == "7"
    suite = parse(lint_run(fail_on="never"))
    assert suite.get("failures") == "0"
    by_key = cases(suite)
    # nothing fails: every target has its passing case (5 targets + 7 rule cases)
    assert sum(1 for (_, name) in by_key if name == "kvlint") == 5
    assert suite.get("tests") == "12"


def test_passing_target_gets_one_kvlint_case() -> None:
    suite = parse(check_run(LLAMA31, QWEN3, tp=8))
    by_key = cases(suite)
    assert set(by_key) == {
        ("fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json", "kvlint"),
        ("fixtures/configs/Qwen--Qwen3-8B.json", "kvlint"),
    }
    assert suite.get("failures") == "0"
    assert all(len(c) == 0 for c in by_key.values())


def test_check_run_with_failures() -> None:
    suite = parse(check_run(LLAMA31, PHI3M))  # tp=16
    by_key = cases(suite)
    llama = "fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json"
    phi = "fixtures/configs/microsoft--Phi-3-medium-4k-instruct.json"
    assert set(by_key) == {(llama, "KV201 tp-replicates-kv-heads"), (llama, "kvlint"),
                           (phi, "KV202 tp-indivisible-kv-heads"),
                           (phi, "KV203 tp-indivisible-attention-heads")}
    assert suite.get("failures") == "2"


def test_several_findings_of_one_rule_share_a_testcase() -> None:
    a = finding("KV201", "first", severity=Severity.WARNING, path="d.yaml", line=3)
    b = finding("KV201", "second", severity=Severity.ERROR, path="d.yaml", line=9)
    c = finding("KV201", "third", severity=Severity.INFO, path="d.yaml", line=12)
    suite = parse(run_of(made_up("acme/m", a, b, c, path="d.yaml", line=2)))
    (case,) = [c for c in suite.findall("testcase") if c.get("name") != "kvlint"]
    assert case.get("classname") == "d.yaml:2 (acme/m)"
    failure = case.find("failure")
    assert failure is not None
    assert (failure.get("type"), failure.get("message")) == ("error", "second")
    assert failure.text == "d.yaml:9: KV201 error: second"
    assert case.findtext("system-out") == ("d.yaml:3: KV201 warning: first\n"
                                           "d.yaml:12: KV201 info: third")
    assert case.get("line") == "9"


def test_unresolved_config_is_an_error_case() -> None:
    suite = parse(run_of(hub_result(), unresolved_result(), fail_on="never"))
    by_key = cases(suite)
    assert ("meta-llama/Llama-3.1-8B@main", "KV201 tp-replicates-kv-heads") in by_key
    broken = by_key[("acme/broken@main", "kvlint")]
    error = broken.find("error")
    assert error is not None and error.get("type") == "config-unresolved"
    assert "missing field" in (error.get("message") or "")
    assert suite.get("errors") == "1"
    assert broken.get("file") is None


def test_properties_record_the_gate() -> None:
    suite = parse(lint_run())
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props == {"fail-on": "error", "exit-code": "1",
                     "findings": "6 error, 0 warning, 1 info"}


def test_control_characters_cannot_break_the_xml() -> None:
    f = finding("KV201", "bad \x00 bytes \x1b[31m & <tags> \"quotes\"", path="a.yaml", line=1)
    suite = parse(run_of(made_up("acme/\x07m", f, path="a.yaml", line=1)))
    (case, _) = suite.findall("testcase")
    failure_or_out = case.findtext("system-out")
    assert failure_or_out == "a.yaml:1: KV201 warning: bad \\x00 bytes \\x1b[31m & <tags> " \
                             "\"quotes\""
    assert case.get("classname") == "a.yaml:1 (acme/\\x07m)"


def test_xml_text() -> None:
    assert xml_text("ok\ttab\nline\r") == "ok\ttab\nline\\r"
    assert xml_text("\x00\x08\x0b\x0c\x1f\ufffe") == "\\x00\\x08\\x0b\\x0c\\x1f\ufffd"
    assert xml_text("\x1b]0;title\x07 \udc80 \u202e") == "\\x1b]0;title\\x07 \\udc80 \\u202e"
    assert xml_text("≥ \U0001d6fc") == "≥ \U0001d6fc"  # astral plane kept


def test_empty_run() -> None:
    suite = parse(run_of())
    assert suite.get("tests") == "0"


def test_output_is_deterministic() -> None:
    assert JunitReporter().render(lint_run()) == JunitReporter().render(lint_run())


def test_reporter_is_a_plugin() -> None:
    assert junit.kvlint_reporters() == [JunitReporter]
    assert JunitReporter.name == "junit"
