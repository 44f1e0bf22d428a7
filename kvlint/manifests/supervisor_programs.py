"""supervisord program sections (``[program:NAME]`` in ``supervisord.conf`` or a ``conf.d``
file) that start an engine, read as supervisord runs them (Supervisor's configuration docs,
"[program:x] Section Settings"; ``supervisor/options.py``):

* ``command=`` is the program's command line; supervisord splits it into words with
  ``shlex`` (double quotes group words) and runs no shell; an INI value continues on the
  next lines that start with whitespace; ``;`` and ``#`` start a comment line;
* ``%(ENV_NAME)s`` expands to supervisord's own environment variable (unknown here: read as
  ``${NAME}``, unresolved), and ``environment=KEY="value",KEY2="value"`` sets the program's
  environment before it starts;
* ``numprocs`` above 1 starts that many copies of the program (each its own server), noted.

The commands then go the way a script's do
(:func:`~kvlint.manifests.shell_scripts.command_models`).
"""

from __future__ import annotations

import re
import shlex

from kvlint.manifests.base import ServedModel
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word

__all__ = ["is_supervisor_config", "supervisor_models"]

MAX_LINES = 20_000
SUFFIXES = (".conf", ".ini")
_SECTION = re.compile(r"^\[([^\]\n]{1,200})\]\s*$")
_SETTING = re.compile(r"^([A-Za-z_][A-Za-z0-9_]{0,60})\s*[=:]\s*(.*)$")
_PROGRAM = re.compile(r"^\[program:[^\]\n]{1,200}\]\s*$", re.MULTILINE)
_ENV_EXPR = re.compile(r"%\(ENV_([A-Za-z_][A-Za-z0-9_]{0,100})\)s")
_ENV_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]{0,100})\s*=\s*(\"[^\"]*\"|'[^']*'|[^,]*)"
                       r"\s*(?:,|$)")


def is_supervisor_config(path: str, text: str) -> bool:
    """Whether ``path`` is a supervisord configuration with a ``[program:...]`` section."""
    return path.lower().endswith(SUFFIXES) and _PROGRAM.search(text[:1_000_000]) is not None


def _sections(text: str) -> list[tuple[str, dict[str, tuple[str, int]]]]:
    """``(section, {key: (value, line)})`` of the file, continuation lines joined (each
    value's parts gathered, then joined once: linear in the file)."""
    parts: list[tuple[str, dict[str, tuple[list[str], int]]]] = []
    current: dict[str, tuple[list[str], int]] | None = None
    last: str | None = None
    for number, raw in enumerate(text.splitlines()[:MAX_LINES], 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith((";", "#")):
            continue
        if line[0] in " \t" and current is not None and last is not None:
            current[last][0].append(_uncommented(line))
            continue
        header = _SECTION.match(line)
        if header is not None:
            current, last = {}, None
            parts.append((header.group(1).strip(), current))
            continue
        setting = _SETTING.match(line)
        if setting is not None and current is not None:
            last = setting.group(1).lower()
            current[last] = ([_uncommented(setting.group(2))], number)
    return [(name, {key: (" ".join(p for p in pieces if p), where)
                    for key, (pieces, where) in values.items()})
            for name, values in parts]


def _uncommented(text: str) -> str:
    """One line of a value without its inline comment (``;`` after whitespace)."""
    return re.sub(r"\s;.*$", "", text).strip()


def _environment(value: str) -> list[str]:
    """The ``NAME=value`` items of ``environment=`` (quotes around a value dropped)."""
    out = []
    for found in _ENV_ITEM.finditer(value):
        name, item = found.group(1), found.group(2).strip()
        if item[:1] in "\"'" and item[-1:] == item[:1]:
            item = item[1:-1]
        out.append(f"{name}={item}")
    return out


def supervisor_models(text: str, path: str) -> list[ServedModel]:
    """Every served model the ``[program:...]`` sections' ``command=`` lines start."""
    commands: list[list[Word]] = []
    copies: dict[int, int] = {}
    for section, settings in _sections(text):
        if not section.startswith("program:") or "command" not in settings:
            continue
        command, line = settings["command"]
        try:
            words = shlex.split(_ENV_EXPR.sub(r"${\1}", command))
        except ValueError:
            continue
        env = _environment(settings.get("environment", ("", line))[0])
        if words:
            commands.append([Word(item, line) for item in env] +
                            [Word(word, line) for word in words])
        count = settings.get("numprocs", ("1", line))[0]
        if count.isdigit() and int(count) > 1:
            copies[line] = int(count)
    found = command_models(commands, text, path, kind="supervisor-program")
    return [_noted(served, copies) for served in found]


def _noted(served: ServedModel, copies: dict[int, int]) -> ServedModel:
    from dataclasses import replace

    count = copies.get(served.line or 0)
    if count is None:
        return served
    return replace(served, notes=(*served.notes, f"numprocs={count}: supervisord starts "
                                  f"{count} copies of this server"))
