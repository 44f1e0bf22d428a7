"""An example third-party kvlint plugin: one rule and one output format.

Installed through the ``kvlint`` entry-point group, exactly like a real package would be:
``[project.entry-points.kvlint] example = "kvlint_example_plugin"``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.linter import LintRun
from kvlint.reporters.base import Reporter
from kvlint.rules.base import Rule, RuleContext


class LargeKvPerToken(Rule):
    """## What it does
    Flags models that need more than 256 KiB of KV per token.

    ## Why is this bad?
    Our cluster's sizing assumes at most 256 KiB per token.

    ## Example
    A 32-layer MHA model with 32 heads of 128 dims: 512 KiB per token.

    ## Use instead
    A GQA model, or an fp8 KV cache.
    """

    code = "EX101"
    name = "large-kv-per-token"
    severity = Severity.WARNING

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is not None and a.footprint.bytes_per_token > 256 * 1024:
            yield self.finding(f"{a.footprint.bytes_per_token} B/token exceeds 262,144",
                               bytes_per_token=a.footprint.bytes_per_token)


class CountReporter(Reporter):
    name = "count"
    description = "number of findings only"

    def render(self, run: LintRun) -> str:
        return f"{sum(len(r.findings) for r in run.results)}\n"


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [LargeKvPerToken]


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [CountReporter]
