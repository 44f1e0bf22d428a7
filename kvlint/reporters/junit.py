"""``--format junit``: JUnit XML for CI test-report views.

``<testsuites>`` holds one ``<testsuite name="kvlint">``. Every (target, rule) pair with
findings is one ``<testcase classname=TARGET name="CODE rule-name">``: the findings at or
above ``--fail-on`` make its ``<failure type=SEVERITY>`` (every message in the body), lower
ones go to its ``<system-out>``. Each target without a failing finding also gets one passing
``<testcase name="kvlint">``; a target whose config could not be resolved (exit 2) gets an
``<error>`` there instead. ``TARGET`` is the model (``ref@revision`` for Hub models), or for
manifests ``path:line`` of the served model, followed by the model in parentheses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.diagnostics import Finding, Severity, fails
from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter
from kvlint.reporters.escape import printable
from kvlint.reporters.sarif import display_path, locate, names_model, repository_root, target_label

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from kvlint.linter import LintRun, ModelResult

SUITE = "kvlint"
PASSING_CASE = "kvlint"
_XML_INVALID = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def xml_text(text: str) -> str:
    """``text`` as XML 1.0 can carry it: control characters and lone surrogates written as
    visible escapes (``\\x1b``, ``\\r``; tab and newline kept), the non-characters U+FFFE and
    U+FFFF as U+FFFD."""
    return re.sub(_XML_INVALID, "\ufffd", printable(text, keep="\t\n"))


def classname(result: ModelResult, root: Path) -> str:
    t = result.target
    if t.kind == "manifest" and t.path:
        where = display_path(t.path, root) + (f":{t.line}" if t.line else "")
        return f"{where} ({t.ref})" if names_model(result) else where
    if t.path and not names_model(result):
        return display_path(t.path, root)  # a checked config.json
    return target_label(result)


def _line(finding: Finding, result: ModelResult, root: Path) -> str:
    where = locate(result, finding)
    at = ""
    if where.path:
        at = display_path(where.path, root) + (f":{where.line}" if where.line else "") + ": "
    return printable(f"{at}{finding.code} {finding.severity.value}: {finding.message}")


def _attrs(**values: object) -> dict[str, str]:
    return {k: xml_text(printable(str(v))) for k, v in values.items() if v is not None}


def _testcases(result: ModelResult, run: LintRun, root: Path, suite: Element) -> None:
    from xml.etree.ElementTree import SubElement

    cls = classname(result, root)
    by_rule: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_rule.setdefault(finding.code, []).append(finding)
    failing_target = False
    for findings in by_rule.values():
        first = findings[0]
        failing = [f for f in findings if fails(f.severity, run.fail_on)]
        passing = [f for f in findings if not fails(f.severity, run.fail_on)]
        where = locate(result, (failing or findings)[0])
        case = SubElement(suite, "testcase", _attrs(
            classname=cls, name=f"{first.code} {first.name}",
            file=display_path(where.path, root) if where.path else None,
            line=where.line, time="0"))
        if failing:
            failing_target = True
            worst = max(failing, key=lambda f: f.severity.rank)
            failure = SubElement(case, "failure", _attrs(
                message=worst.message, type=worst.severity.value))
            failure.text = xml_text("\n".join(_line(f, result, root) for f in failing))
        if passing:
            out = SubElement(case, "system-out")
            out.text = xml_text("\n".join(_line(f, result, root) for f in passing))
    if result.config_error or not failing_target:
        t = result.target
        case = SubElement(suite, "testcase", _attrs(
            classname=cls, name=PASSING_CASE,
            file=display_path(t.path, root) if t.path else None, line=t.line, time="0"))
        if result.config_error:
            error = SubElement(case, "error", _attrs(message=result.config_error,
                                                     type="config-unresolved"))
            error.text = xml_text(result.config_error)


def render_junit(run: LintRun, root: Path | None = None) -> str:
    from xml.etree.ElementTree import Element, indent, tostring

    root = root or repository_root()
    suites = Element("testsuites", {"name": SUITE})
    suite = Element("testsuite", {"name": SUITE})
    suites.append(suite)
    for result in run.results:
        _testcases(result, run, root, suite)
    cases = list(suite)
    counts = {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.find("failure") is not None),
        "errors": sum(1 for c in cases if c.find("error") is not None),
        "skipped": 0,
    }
    for element in (suites, suite):
        for key, value in counts.items():
            if element is suites and key == "skipped":
                continue
            element.set(key, str(value))
        element.set("time", "0")
    summary = [f"{run.count(s)} {s.value}" for s in (Severity.ERROR, Severity.WARNING,
                                                     Severity.INFO)]
    props = Element("properties")
    for prop, text in (("fail-on", run.fail_on), ("exit-code", str(run.exit_code)),
                       ("findings", ", ".join(summary))):
        props.append(Element("property", {"name": prop, "value": text}))
    suite.insert(0, props)
    indent(suites, space="  ")
    body = tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


class JunitReporter(Reporter):
    name = "junit"
    description = "JUnit XML: one testcase per target and rule (CI test reports)"

    def render(self, run: LintRun) -> str:
        return render_junit(run)


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [JunitReporter]
