"""``--format json``: DESIGN §7, schema_version 1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter

if TYPE_CHECKING:
    from kvlint.linter import LintRun


class JsonReporter(Reporter):
    name = "json"
    description = "machine-readable results (kvlint schema prints the JSON Schema)"

    def render(self, run: LintRun) -> str:
        from kvlint.report import build_report  # pydantic only when JSON is asked for

        return build_report(run).model_dump_json(indent=2) + "\n"


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [JsonReporter]
