"""The command line (docs/design.md §7): the only package that imports click.

``main`` is the ``kvlint`` group (:mod:`kvlint.cli.group`); each command lives in its own
module and is imported when it runs. Shared parts: :mod:`~kvlint.cli.options` (options and
the serving plan), :mod:`~kvlint.cli.session` (settings, plugins, rules, outputs) and
:mod:`~kvlint.cli.output` (stderr lines, reports, terminal layout)."""

from kvlint.cli.group import main

__all__ = ["main"]
