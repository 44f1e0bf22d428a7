"""The ``kvlint`` group: one line on stderr and exit 2 for every usage or kvlint error, and
commands imported only when they run (``--version`` and ``--help`` stay light)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from kvlint import __version__
from kvlint.cli.output import fail
from kvlint.errors import KvlintError


def _usage_message(err: click.UsageError) -> str:
    """A click usage error as kvlint's one line: ``--tp: 0 is not in the range x>=1``."""
    param = err.param if isinstance(err, click.BadParameter) else None
    if param is None or isinstance(err, click.MissingParameter) or not err.message:
        return err.format_message()
    names = [o for o in param.opts if o.startswith("--")] or param.opts
    name = names[0] if names and isinstance(param, click.Option) else \
        param.human_readable_name
    return f"{name}: {err.message}"


def _usage_error(err: click.UsageError) -> bool:
    """Whether ``err`` is a mistake to report in one line (not the help a bare ``kvlint``
    prints)."""
    return type(err).__name__ != "NoArgsIsHelpError"


COMMANDS: dict[str, str] = {
    "check": "kvlint.cli.check:check",
    "compare": "kvlint.cli.compare:compare",
    "github-action": "kvlint.cli.action:github_action",
    "lint": "kvlint.cli.lint:lint",
    "lock": "kvlint.cli.lock:lock_command",
    "probe": "kvlint.cli.probe:probe",
    "rule": "kvlint.cli.rules:rule_command",
    "rules": "kvlint.cli.rules:rules_command",
    "scan": "kvlint.cli.scan:scan",
    "schema": "kvlint.cli.rules:schema_command",
}
"""Each command's module and function: a command is imported when it is resolved (run, or
listed by ``--help``), so ``kvlint lint`` never imports the probe's or the scanner's code."""


class _Group(click.Group):
    """Turns kvlint errors and click's usage errors into one line on stderr and exit 2,
    never a traceback or click's four-line usage block; resolves the commands lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as err:
            if not _usage_error(err):
                raise
            fail(_usage_message(err))

    def invoke(self, ctx: click.Context) -> Any:
        hub_guard = sys.modules.get("kvlint.loaders.hub_guard")  # not imported: fresh
        if hub_guard is not None:
            hub_guard.reset()  # each command is a new run: no endpoint known down, no time spent
        try:
            return super().invoke(ctx)
        except KvlintError as err:
            fail(str(err))
        except KeyboardInterrupt:
            fail("interrupted")
        except click.UsageError as err:
            if not _usage_error(err):
                raise
            fail(_usage_message(err))
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as err:
            if os.environ.get("KVLINT_DEBUG"):
                raise
            fail(f"internal error: {type(err).__name__}: {err} (please report it; "
                  "KVLINT_DEBUG=1 shows the traceback)")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kvlint")
def main() -> None:
    """Lint LLM serving configurations for KV-cache waste and engine incompatibilities."""
