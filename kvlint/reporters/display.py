"""How the human formats (text, concise) lay findings out: the terminal's width, colour,
quiet and verbose, and the findings in the order and number a person reads them.

The command line decides the :class:`Display` (it alone knows the terminal and imports
click); reporters only read it. ``style`` is ``click.style`` when colour is on, so the
escapes come from click and a reporter never writes one by hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvlint.diagnostics import Finding, Severity

if TYPE_CHECKING:
    from kvlint.linter import LintRun
    from kvlint.registry import Registry

Style = Callable[..., str]


@dataclass(frozen=True)
class Display:
    """Layout of the human formats. The defaults are those of a pipe: no wrapping, no
    colour, headers and the summary shown, infos folded into one line."""

    width: int | None = None
    """Wrap prose to this many columns (a terminal); ``None``: never wrap (a pipe, a file)."""
    style: Style | None = None
    """``click.style`` when colour is on; ``None``: plain text."""
    quiet: bool = False
    """Findings only: no model tables, no summary lines."""
    verbose: bool = False
    """Every info shown, none summarised."""
    shown_infos: frozenset[str] = field(default_factory=frozenset)
    """Info codes the command line selected by name or prefix: shown, not summarised."""

    def paint(self, text: str, **styles: Any) -> str:
        """``text`` in ``styles`` (click.style's keywords) when colour is on."""
        return self.style(text, **styles) if self.style and text else text

    def severity(self, text: str, severity: Severity) -> str:
        """``text`` in its severity's colour: errors red, warnings yellow, infos blue (bold,
        as ruff paints codes)."""
        colour = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}
        return self.paint(text, fg=colour[severity], bold=True)


PLAIN = Display()


def location(finding: Finding, ref: str) -> tuple[str, int, int]:
    """Where a finding is, as the concise format writes it: its file (else the target's
    reference, as ruff writes ``-`` for stdin), line and column (1 when unknown)."""
    return (finding.path or ref, finding.line or 1, finding.column or 1)


def located(run: LintRun, ordered: bool = True) -> list[tuple[str, Finding]]:
    """Every finding of ``run`` with its target's reference, in reading order (path, line,
    column, code; ``ordered=False``: in the order found, for callers that count or sort a
    part with :func:`in_reading_order`), each finding once: the same code, path, line and
    message reported for two served models of one file (prefill and decode servers at one
    line) is one line of output, as it is one line of the file."""
    seen: set[tuple[str, str | None, int | None, str]] = set()
    found: list[tuple[str, Finding]] = []
    for result in run.results:
        for f in result.findings:
            key = (f.code, f.path or result.target.ref, f.line, f.message)
            if key not in seen:
                seen.add(key)
                found.append((result.target.ref, f))
    return in_reading_order(found) if ordered else found


def in_reading_order(items: list[tuple[str, Finding]]) -> list[tuple[str, Finding]]:
    """``items`` sorted by path, line, column and code (stable)."""
    return sorted(items, key=lambda item: (*location(item[1], item[0]), item[1].code))


def split_infos(items: Sequence[tuple[str, Finding]], display: Display, fail_on: str = "error"
                ) -> tuple[list[tuple[str, Finding]], list[Finding]]:
    """``(shown, hidden)``: infos are hidden unless ``--verbose``, selected by name, or
    failing the run (``--fail-on info``: what fails a run is always shown)."""
    if display.verbose or fail_on == "info":
        return list(items), []
    shown, hidden = [], []
    for ref, f in items:
        if f.severity is Severity.INFO and f.code not in display.shown_infos:
            hidden.append(f)
        else:
            shown.append((ref, f))
    return shown, hidden


def hidden_line(hidden: Iterable[Finding]) -> str | None:
    """``56 infos hidden (KV205 x40, KV303 x16); use --verbose or --select to show``."""
    counts = Counter(f.code for f in hidden)
    total = sum(counts.values())
    if not total:
        return None
    parts = ", ".join(f"{code} x{n}" for code, n in
                      sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return (f"{total} info{'s' if total != 1 else ''} hidden ({parts}); use --verbose or "
            "--select to show")


def explicit_infos(registry: Registry, selectors: Iterable[str]) -> frozenset[str]:
    """The codes ``--select``/``--extend-select`` name (by code, prefix or name): their
    infos are shown one by one."""
    return frozenset(rule.code for selector in selectors for rule in registry.select([selector]))


def severity_counts(found: Iterable[Finding]) -> list[str]:
    """``['1 error', '30 warnings', '32 infos']`` (severities without findings left out)."""
    counts = Counter(f.severity for f in found)
    return [f"{counts[s]} {s.value}{'s' if counts[s] != 1 else ''}"
            for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if counts[s]]
