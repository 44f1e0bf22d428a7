"""``--statistics``: how many findings each rule reported, most first, as ruff prints them
(``count<TAB>code<TAB>name``, the columns padded). kvlint fixes nothing itself, so ruff's
``[*]`` fixable marker never appears. Duplicates are folded as the text formats fold them;
infos are counted too (a count hides nothing). For manifests, :func:`engine_commands` is a
summary line (written to standard error, so the table stays ruff's) counting the engine
commands read as served models and the files that run an engine kvlint could not read."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kvlint.reporters.display import Display, Style, located

if TYPE_CHECKING:
    from kvlint.diagnostics import Severity
    from kvlint.linter import LintRun


def render_statistics(run: LintRun, style: Style | None = None) -> str:
    display = Display(style=style)
    found = [f for _, f in located(run)]
    counts = Counter(f.code for f in found)
    about: dict[str, tuple[str, Severity]] = {f.code: (f.name, f.severity) for f in found}
    if not counts:
        return ""
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    count_width = max(len(str(n)) for _, n in rows)
    code_width = max(len(code) for code, _ in rows)
    lines = []
    for code, n in rows:
        name, severity = about[code]
        painted = display.severity(code.ljust(code_width), severity)
        lines.append(f"{display.paint(str(n).rjust(count_width), bold=True)}\t{painted}\t{name}")
    return "\n".join(lines) + "\n"


_UNREAD = ("KV903", "KV904")


def engine_commands(run: LintRun) -> str:
    """How many engine commands of the linted manifests kvlint read as a served model, and
    how many files run an engine it could not read (KV904), so a format it does not
    understand shows in the numbers; empty when no manifest was linted."""
    manifests = [r for r in run.results if r.target.kind == "manifest"]
    if not manifests:
        return ""
    served = sum(1 for r in manifests if not any(f.code in _UNREAD for f in r.findings))
    unread = sum(1 for r in manifests for f in r.findings if f.code == "KV904")
    return (f"# engine commands: {served} read as served models, {unread} in files kvlint "
            "could not read (KV904)\n")
