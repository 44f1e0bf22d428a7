"""systemd service units (``.service``) that start an engine, read as systemd runs them
(systemd.service(5) ``ExecStart=``, systemd.exec(5) ``Environment=``, systemd.syntax(7)):

* the ``[Service]`` section's ``ExecStart=`` lines are the commands (``ExecStartPre=``,
  ``ExecStop=`` and the others prepare or stop; not read); a line ending in ``\\`` continues
  on the next; ``#`` and ``;`` at a line's start are comments;
* the command is split into words with shell-like quoting; systemd runs no shell, but it
  expands ``$NAME``/``${NAME}`` from ``Environment=`` (``NAME=value`` items, quoted ones
  whole) before the program starts; ``EnvironmentFile=`` is not read (its variables stay
  unresolved);
* the special prefixes of the executable (``-``, ``@``, ``+``, ``!``, ``:``) are dropped.

The commands then go the way a script's do
(:func:`~kvlint.manifests.shell_scripts.command_models`).
"""

from __future__ import annotations

from kvlint.manifests.base import ManifestProblem, ServedModel
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.systemd_exec import unit_commands, unit_refusal

__all__ = ["is_systemd_unit", "systemd_models", "systemd_problems"]


def is_systemd_unit(path: str) -> bool:
    return path.lower().endswith(".service")


def systemd_models(text: str, path: str) -> list[ServedModel]:
    """Every served model a service unit's ``ExecStart=`` starts."""
    return command_models(unit_commands(text), text, path, kind="systemd-unit")


def systemd_problems(text: str, path: str) -> list[ManifestProblem]:
    """A unit systemd refuses to load (KV903): nothing it names starts."""
    refused = unit_refusal(text)
    if refused is None:
        return []
    line, why = refused
    return [ManifestProblem(path=path, line=line, kind="invalid-object", message=why)]
