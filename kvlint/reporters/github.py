"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

``::error file=deploy/vllm.yaml,line=14,col=1,title=KV202 tp-indivisible-kv-heads::message``
(warning -> ``::warning``, info -> ``::notice``), then one plain summary line. Paths are
relative to the repository root, as GitHub expects. Findings about a Hub model without a
file carry no ``file``/``line`` and name the model in their title.

GitHub shows only about ten annotations of each kind per step, so CI should also write the
SARIF or markdown report; the summary line gives the totals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter
from kvlint.reporters.escape import printable
from kvlint.reporters.sarif import display_path, locate, names_model, repository_root, target_label

if TYPE_CHECKING:
    from kvlint.linter import LintRun, ModelResult

COMMANDS: Mapping[Severity, str] = {
    Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(value: str) -> str:
    """A command's message, as GitHub's toolkit escapes it: ``%``, CR and LF
    percent-encoded (``%`` first); other control characters become visible escapes, so
    nothing in it can end the command or start another."""
    return printable(value, keep="\r\n").replace("%", "%25").replace("\r", "%0D") \
        .replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A property value: as :func:`escape_data`, plus ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def safe_line(text: str) -> str:
    """A plain line of output that the runner cannot read as a workflow command: line
    breaks and controls escaped, and a leading ``::`` defused."""
    line = printable(text)
    return line if not line.lstrip().startswith("::") else "\\" + line.lstrip()


def command(kind: str, message: str, properties: Mapping[str, str | int | None]) -> str:
    """``::kind key=value,...::message`` with GitHub's escaping; ``None`` values dropped."""
    props = ",".join(f"{key}={escape_property(str(value))}"
                     for key, value in properties.items() if value is not None)
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(result: ModelResult, finding: Finding, root: Path) -> str:
    where = locate(result, finding)
    title = f"{finding.code} {finding.name}"
    if names_model(result):
        title += f" ({target_label(result)})"
    props: dict[str, str | int | None] = {}
    if where.path:
        props["file"] = display_path(where.path, root)
        if where.line:
            props["line"] = where.line
            props["col"] = where.column or 1
    props["title"] = title
    return command(COMMANDS[finding.severity], finding.message, props)


def summary(run: LintRun) -> str:
    counts = [(run.count(s), s.value) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)]
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in counts if n]
    models = len(run.results)
    return (f"kvlint: {models} result{'s' if models != 1 else ''} · "
            f"{' · '.join(parts) or 'no findings'} · exit {run.exit_code} "
            f"(fail-on: {run.fail_on})")


class GithubReporter(Reporter):
    name = "github"
    description = "GitHub Actions annotations (::error file=...::message) and a summary line"

    def render(self, run: LintRun) -> str:
        root = repository_root()
        lines = [annotation(r, f, root) for r in run.results for f in r.findings]
        lines.append(safe_line(summary(run)))
        return "\n".join(lines) + "\n"


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [GithubReporter]
