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

import re
import shlex

from kvlint.manifests.base import ServedModel
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script

__all__ = ["is_systemd_unit", "systemd_models"]

MAX_LINES = 20_000
_SECTION = re.compile(r"^\s*\[([^\]]{1,60})\]\s*$")
_SETTING = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]{0,60})\s*=\s*(.*)$")


def is_systemd_unit(path: str) -> bool:
    return path.lower().endswith(".service")


def _settings(text: str) -> list[tuple[str, str, str, int]]:
    """``(section, key, value, line)`` of every setting, continuations joined."""
    out: list[tuple[str, str, str, int]] = []
    section = ""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines()[:MAX_LINES], 1):
        line = raw.rstrip()
        if not pending:
            if not line.strip() or line.lstrip().startswith(("#", ";")):
                continue
            found = _SECTION.match(line)
            if found is not None:
                section = found.group(1).strip()
                continue
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        joined = " ".join(part.strip() for part in pending)
        pending = []
        setting = _SETTING.match(joined)
        if setting is not None:
            out.append((section, setting.group(1), setting.group(2), start))
    return out


def _environment(value: str) -> list[str]:
    """The ``NAME=value`` items of one ``Environment=`` setting."""
    try:
        items = shlex.split(value)
    except ValueError:
        return []
    return [item for item in items if re.match(r"[A-Za-z_]\w*=", item)]


def systemd_models(text: str, path: str) -> list[ServedModel]:
    """Every served model a service unit's ``ExecStart=`` starts."""
    env: list[str] = []
    commands: list[list[Word]] = []
    for section, key, value, line in _settings(text):
        if section != "Service":
            continue
        if key == "Environment":
            env.extend(_environment(value))
        elif key == "ExecStart" and value.strip():
            command = value.strip().lstrip("-@+!:")
            words = [w.text for c in split_script(command) for w in c]
            if words:
                commands.append([Word(item, line) for item in env] +
                                [Word(word, line) for word in words])
    return command_models(commands, text, path, kind="systemd-unit")
