"""A third-party plugin whose rule crashes: kvlint must still answer in one line."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.rules.attention import MhaKvCache
from kvlint.rules.base import Rule, RuleContext


class Crashes(Rule):
    __doc__ = MhaKvCache.__doc__
    code = "EX900"
    name = "crashes"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        raise RuntimeError("boom")


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [Crashes]
