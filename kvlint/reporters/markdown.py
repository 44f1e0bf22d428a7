"""``--format markdown``: a summary fit for ``$GITHUB_STEP_SUMMARY`` and PR comments.

A table with one row per result (model, file:line for manifests, attention, KV bytes per
token, per GPU, replication, its findings), then every finding with its location and
message, or "No findings.". Paths are relative to the repository root.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter
from kvlint.reporters.escape import printable
from kvlint.reporters.sarif import (
    display_path,
    help_uri,
    locate,
    names_model,
    repository_root,
    target_label,
)
from kvlint.units import fmt_bytes, fmt_ratio

if TYPE_CHECKING:
    from kvlint.linter import LintRun, ModelResult
    from kvlint.rules.base import Rule

ICONS = {Severity.ERROR: "❌", Severity.WARNING: "⚠️", Severity.INFO: "\u2139\ufe0f"}  # (i)


_MARKUP = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "[": "\\[", "]": "\\]",
           "`": "\\`"}
"""Characters that make Markdown of text: HTML (``<``, ``>``, ``&`` as entities), links,
images and link definitions (``[``, ``]``), code spans, and the backslash itself."""
_INLINE = str.maketrans(_MARKUP)
_CELL = str.maketrans({**_MARKUP, "|": "\\|"})
_BLOCK_START = re.compile(r"^(?:[#>+*=~_-]|\d{1,9}[.)])")
"""What turns the start of a line into a heading, quote, list, rule or setext underline."""


def cell(text: str) -> str:
    """Table-cell safe: markup escaped (``|`` too; no HTML, links or images), controls and
    a lone CR as visible escapes (``\\r``, ``\\x1b``), line breaks as ``<br>``. A cell
    never starts a line, so it cannot make a heading or a list."""
    lines = text.replace("\r\n", "\n").split("\n")
    return "<br>".join(printable(part.strip().translate(_CELL)) for part in lines)


def inline(text: str) -> str:
    """A message on one Markdown line (a list item's second line): whitespace runs and line
    breaks become one space, markup and controls are escaped as in :func:`cell`, and a
    block marker at its start (``#``, ``-``, ``>``, ``1.``) is escaped so that the line
    stays a paragraph."""
    out = printable(" ".join(text.split()).translate(_INLINE))
    return _BLOCK_START.sub(lambda m: m.group()[:-1] + "\\" + m.group()[-1], out)


def code_span(text: str) -> str:
    """``text`` as inline code, fenced with more backticks than it contains; line breaks
    and controls are written as escapes, so the span cannot end the paragraph."""
    text = printable(text)
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _where(result: ModelResult, finding: Finding | None, root: Path) -> str:
    if finding is not None:
        where = locate(result, finding)
        path, line = where.path, where.line
    else:
        path, line = result.target.path, result.target.line
    if not path:
        return ""
    shown = display_path(path, root)
    return f"{shown}:{line}" if line else shown


def _per_gpu(result: ModelResult) -> str:
    a = result.analysis
    assert a is not None
    fp = a.footprint
    layout = a.plan.layout
    where = f"tp={layout.tp}" + (f" pp={layout.pp}" if layout.pp > 1 else "")
    if fp.bytes_per_token_per_gpu is None:
        return f"refused at {where}"
    return f"{fmt_bytes(fp.bytes_per_token_per_gpu)} at {where}"


def _row(result: ModelResult, root: Path, with_file: bool) -> list[str]:
    from kvlint.compare import attention_label  # compare pulls in the linter: only here

    manifest = result.target.kind == "manifest"
    row = [target_label(result) if names_model(result) or not manifest else "-"]
    if with_file:
        row.append(_where(result, None, root) if manifest else "")
    a = result.analysis
    if a is None:
        unresolved = "unresolved" if result.config_error or result.findings else "-"
        row += [unresolved, "-", "-", "-"]
    else:
        fp = a.footprint
        replication = fp.replication_factor
        row += [attention_label(a.geometry), fmt_bytes(fp.bytes_per_token), _per_gpu(result),
                f"{fmt_ratio(replication)}x" if replication is not None else "-"]
    row.append(", ".join(f"{f.code} {f.severity.value}" for f in result.findings) or "none")
    return [cell(c) for c in row]


def _rule_link(code: str, rules: dict[str, type[Rule]]) -> str:
    rule = rules.get(code)
    uri = help_uri(rule) if rule is not None else None
    return f"[{code}]({uri})" if uri else code


def _finding(result: ModelResult, finding: Finding, root: Path,
             rules: dict[str, type[Rule]]) -> str:
    where = _where(result, finding, root)
    about = [code_span(where)] if where else []
    if names_model(result):
        about.append(code_span(target_label(result)))
    head = (f"- {ICONS[finding.severity]} **{_rule_link(finding.code, rules)}** "
            f"{finding.severity.value} · {code_span(finding.name)}")
    if about:
        head += " · " + " · ".join(about)
    return f"{head}  \n  {inline(finding.message)}"


def _summary(run: LintRun) -> str:
    counts = [(run.count(s), s.value) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)]
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in counts if n]
    results = len(run.results)
    return (f"{results} result{'s' if results != 1 else ''} · "
            f"{' · '.join(parts) or 'no findings'} · exit {run.exit_code} "
            f"(fail-on: {run.fail_on})")


def render_markdown(run: LintRun, root: Path | None = None) -> str:
    root = root or repository_root()
    lines = ["## kvlint", "", _summary(run), ""]
    if run.results:
        with_file = any(r.target.kind == "manifest" for r in run.results)
        headers = ["model", *(["file"] if with_file else []), "attention", "KV/token",
                   "per GPU", "replication", "findings"]
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|" + "|".join("---" for _ in headers) + "|")
        lines.extend("| " + " | ".join(_row(r, root, with_file)) + " |" for r in run.results)
        lines.append("")
    lines += ["### Findings", ""]
    rules = {rule.code: rule for rule in run.rules}
    found = [_finding(r, f, root, rules) for r in run.results for f in r.findings]
    lines.extend(found or ["No findings."])
    return "\n".join(lines) + "\n"


class MarkdownReporter(Reporter):
    name = "markdown"
    description = "a Markdown summary table and the findings (job summaries, PR comments)"

    def render(self, run: LintRun) -> str:
        return render_markdown(run)


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [MarkdownReporter]
