"""The built-in output formats, registered through the same hook as third-party ones.

Each is offered as a :class:`LazyReporter` with its name and description: the module that
renders it is imported only when a report in that format is rendered, so a run importing
only the format it prints (``--format json`` never imports the SARIF or JUnit writers).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter

if TYPE_CHECKING:
    from kvlint.linter import LintRun

REPORTERS: tuple[tuple[str, str, str], ...] = (
    ("text", "kvlint.reporters.text:TextReporter",
     "a table per model and the findings, for people"),
    ("concise", "kvlint.reporters.concise:ConciseReporter",
     "one line per finding (path:line:col: CODE message); default under pre-commit"),
    ("json", "kvlint.reporters.json:JsonReporter",
     "machine-readable results (kvlint schema prints the JSON Schema)"),
    ("sarif", "kvlint.reporters.sarif:SarifReporter",
     "SARIF 2.1.0 for GitHub code scanning (paths relative to the repository root)"),
    ("github", "kvlint.reporters.github:GithubReporter",
     "GitHub Actions annotations (::error file=...::message) and a summary line"),
    ("markdown", "kvlint.reporters.markdown:MarkdownReporter",
     "a Markdown summary table and the findings (job summaries, PR comments)"),
    ("junit", "kvlint.reporters.junit:JunitReporter",
     "JUnit XML: one testcase per target and rule (CI test reports)"),
)
"""Format name -> ``module:Class`` and description (``tests/reporters`` checks them against
the classes)."""


class LazyReporter(Reporter):
    """A built-in format that imports its implementation (``target``) to render."""

    target: ClassVar[str] = ""

    @classmethod
    def implementation(cls) -> type[Reporter]:
        """The reporter class this one stands for."""
        module, _, name = cls.target.partition(":")
        real = getattr(importlib.import_module(module), name)
        assert issubclass(real, Reporter) and real.name == cls.name, cls.target
        return real  # type: ignore[no-any-return]

    def render(self, run: LintRun) -> str:
        real = self.implementation()()
        real.display = self.display
        return real.render(run)


LAZY_REPORTERS: tuple[type[LazyReporter], ...] = tuple(
    type(f"Lazy{target.rpartition(':')[2]}", (LazyReporter,),
         {"name": name, "target": target, "description": description,
          "__module__": __name__})
    for name, target, description in REPORTERS)


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return list(LAZY_REPORTERS)
