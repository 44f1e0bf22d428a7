"""The reporter interface: an output format, registered through ``kvlint_reporters``."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from kvlint.linter import LintRun


class Reporter:
    """Renders a :class:`~kvlint.linter.LintRun`. ``name`` is the ``--format`` value."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    def render(self, run: LintRun) -> str:
        raise NotImplementedError
