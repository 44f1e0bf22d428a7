"""The reporter interface: an output format, registered through ``kvlint_reporters``."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from kvlint.reporters.display import PLAIN, Display

if TYPE_CHECKING:
    from kvlint.linter import LintRun


class Reporter:
    """Renders a :class:`~kvlint.linter.LintRun`. ``name`` is the ``--format`` value."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    display: Display = PLAIN
    """The terminal's layout (width, colour, quiet, verbose); the command line sets it on
    the instance. Formats for machines ignore it."""

    def render(self, run: LintRun) -> str:
        raise NotImplementedError
