"""Where the command line writes: one-line errors on stderr, reports to stdout or a file,
and how a report is laid out for a terminal (width, colour)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from kvlint.linter import LintRun


def echo_error(message: str) -> None:
    """One line on stderr: nothing a terminal or a CI runner acts on (controls, lone
    surrogates and newlines shown as escapes)."""
    from kvlint.reporters.escape import printable

    click.echo(f"kvlint: error: {printable(message)}", err=True)


def fail(message: str) -> NoReturn:
    echo_error(message)
    sys.exit(2)


def emit(text: str, output: str | None) -> None:
    """``text`` to ``output`` (replaced atomically) or stdout, as UTF-8; a character UTF-8
    cannot carry (a lone surrogate from a file name) as its ``\\udcXX`` escape."""
    from kvlint.outputs import write_report

    data = text.encode("utf-8", "backslashreplace")
    if output:
        write_report(output, data)
    else:
        click.echo(data, nl=False)


def _stdout_isatty() -> bool:
    """Whether stdout is a terminal (False under click's CliRunner, whose stdout is a buffer;
    a closed or detached stream counts as no terminal)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def terminal_width() -> int | None:
    """The terminal's columns (``COLUMNS`` first) when stdout is one; ``None`` (no wrapping)
    when it is a pipe or a file."""
    import shutil

    return shutil.get_terminal_size().columns if _stdout_isatty() else None


def display_style(output: str | None) -> Callable[..., str] | None:
    """``click.style`` when the report is coloured: ``FORCE_COLOR`` (non-empty) forces
    colour even into a pipe, ``NO_COLOR`` (non-empty) turns it off, else a terminal gets it.
    Files written with --output are never coloured. FORCE_COLOR wins over NO_COLOR, as in
    ruff."""
    if output is not None:
        return None
    if os.environ.get("FORCE_COLOR"):
        return click.style
    if os.environ.get("NO_COLOR"):
        return None
    return click.style if _stdout_isatty() else None


def echo_config_errors(run: LintRun) -> None:
    """One line on stderr for each config that did not resolve, one for the models the Hub
    could not be asked about."""
    from kvlint.reporters.escape import printable

    for result in run.results:
        if result.config_error and result.target.ref not in run.unavailable:
            click.echo(f"kvlint: error: {printable(result.config_error)}", err=True)
    echo_unavailable(run)


def echo_unavailable(run: LintRun) -> None:
    """One line on stderr for every model the Hub could not be asked about."""
    line = run.unavailable_line()
    if line is not None:
        click.echo(f"kvlint: error: {line}", err=True)
