"""``--format concise``: one line per finding, ``path:line:col: CODE message``, as ruff's
concise output and compilers write them (editors and CI log viewers link each to its line).

Findings are in reading order (path, line, column, code), each once. A finding without a
file (``kvlint check`` on a Hub model) is placed at its target's reference, line 1, column 1,
as ruff places what it read from stdin at ``-``. Infos are folded into one line unless
``--verbose``, selected by name or failing the run (``--fail-on info``); with ``-q`` nothing
but the findings is printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter
from kvlint.reporters.display import (
    Display,
    hidden_line,
    in_reading_order,
    located,
    location,
    severity_counts,
    split_infos,
)
from kvlint.reporters.escape import printable

if TYPE_CHECKING:
    from kvlint.diagnostics import Finding
    from kvlint.linter import LintRun


def line(ref: str, f: Finding, display: Display) -> str:
    """``path:line:col: CODE message`` (controls and line breaks escaped)."""
    path, row, col = location(f, ref)
    sep = display.paint(":", fg="cyan")
    where = f"{display.paint(printable(path), bold=True)}{sep}{row}{sep}{col}{sep}"
    return f"{where} {display.severity(f.code, f.severity)} {printable(f.message)}"


def footer(run: LintRun, found: list[Finding], hidden: list[Finding]) -> list[str]:
    """What follows the findings: the infos hidden, then the counts and the exit code."""
    lines = [printable(text)] if (text := hidden_line(hidden)) else []
    counts = " · ".join(severity_counts(found)) or "no findings"
    lines.append(f"{counts} · exit {run.exit_code} (fail-on: {run.fail_on})")
    return lines


class ConciseReporter(Reporter):
    name = "concise"
    description = "one line per finding (path:line:col: CODE message); default under pre-commit"

    def render(self, run: LintRun) -> str:
        everything = located(run, ordered=False)  # only what is shown needs sorting
        shown, hidden = split_infos(everything, self.display, run.fail_on)
        lines = [line(ref, f, self.display) for ref, f in in_reading_order(shown)]
        if not self.display.quiet:
            lines.extend(footer(run, [f for _, f in everything], hidden))
        return "".join(f"{text}\n" for text in lines)


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [ConciseReporter]
