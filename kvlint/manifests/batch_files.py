"""Windows batch files (``.bat``, ``.cmd``) that start an engine, read as cmd.exe runs them
(https://learn.microsoft.com/windows-server/administration/windows-commands/cmd, ``set``,
``start``, ``call``): each line a command, a ``^`` at a line's end joining the next one.

* ``set NAME=value`` and ``set "NAME=value"`` assign (the value as written, ``%VAR%`` in it
  expanded); ``set /a`` and ``set /p`` compute or prompt: unknown here;
* ``%NAME%`` (and ``!NAME!``) expand to the value set above; a variable the file never sets,
  and a batch argument (``%1``, ``%~dp0``), is given to the command layer as ``${NAME}``:
  unresolved, never empty;
* ``start ["title"] [/switches] program args`` and ``call program args`` run ``program``;
  ``rem``, ``::``, ``echo``, labels and control lines (``if``, ``for``, ``goto``) start no
  server here (a server started inside ``if``/``for`` is not read);
* words are split at blanks outside double quotes, and the quotes removed, as a program's
  command line is parsed (backslashes are path separators, not escapes); the program's
  directory and ``.exe`` are not part of its name (``C:\\llama\\llama-server.exe``).

The commands then go the way a script's do
(:func:`~kvlint.manifests.shell_scripts.command_models`).
"""

from __future__ import annotations

import re

from kvlint.manifests.base import ServedModel
from kvlint.manifests.powershell_scripts import powershell_command
from kvlint.manifests.shell_env import bounded_sub
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, continued_lines

__all__ = ["batch_models", "is_batch"]

_REFERENCE = re.compile(r"%%|%~?[0-9*]|%~[a-z]{1,8}[0-9]|%([A-Za-z_][\w.-]{0,60})%|"
                        r"!([A-Za-z_][\w.-]{0,60})!")
_WORD = re.compile(r'(?:"[^"]*"|[^\s"])+')
_SKIP = ("rem", "echo", "if", "for", "goto", "exit", "pause", "cd", "pushd", "popd",
         "setlocal", "endlocal", "title", "cls", "timeout", "chcp", "color", "mkdir", "md",
         "del", "copy", "type", "where", "choice")
MAX_LINES = 20_000


def is_batch(path: str) -> bool:
    return path.lower().endswith((".bat", ".cmd"))


def _lines(text: str) -> list[tuple[str, int]]:
    """Logical lines with their first line's number (``^`` at the end joins the next)."""
    return continued_lines(text.splitlines()[:MAX_LINES], "^")


def _expand(text: str, variables: dict[str, str | None]) -> str:
    """``text`` with ``%NAME%`` replaced; a result over
    :data:`~kvlint.manifests.shell_env.MAX_EXPANDED_CHARS` is an unresolved reference."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        name = match.group(1) or match.group(2)
        if name is None:
            return "${BATCH_ARGUMENT}"  # %1, %~dp0: given when the file is run
        value = variables.get(name.upper())
        return value if value is not None else f"${{{name.upper()}}}"

    return bounded_sub(_REFERENCE, one, text, "${BATCH_EXPANSION}")


def _program(word: str) -> str:
    """``C:\\llama\\llama-server.exe`` -> ``llama-server``."""
    name = re.split(r"[\\/]", word)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _powershell_script(tokens: list[str]) -> str | None:
    """The script of ``powershell [-switches] -Command "script"`` (cmd.exe's quoting: the
    outer quotes removed, ``\\"`` a quote inside)."""
    for i, token in enumerate(tokens[1:-1], 1):
        if token.lower() in ("-command", "-c"):
            script = " ".join(tokens[i + 1:])
            if script.startswith('"') and script.endswith('"') and len(script) > 1:
                script = script[1:-1]
            return script.replace('\\"', '"')
    return None


def batch_models(text: str, path: str) -> list[ServedModel]:
    """Every served model a batch file starts."""
    variables: dict[str, str | None] = {}
    commands: list[list[Word]] = []
    for raw, line in _lines(text):
        body = raw.strip().lstrip("@").strip()
        if not body or body.startswith("::") or body.startswith(":"):
            continue
        head = body.split(None, 1)[0].lower()
        if head == "set":
            rest = body[3:].strip()
            if rest.lower().startswith(("/a", "/p")):
                name = rest[2:].strip().strip('"').split("=", 1)[0].strip()
                variables[name.upper()] = None
                continue
            rest = rest[1:rest.rfind('"')] if rest.startswith('"') and '"' in rest[1:] \
                else rest
            name, eq, value = rest.partition("=")
            if eq and name.strip():
                expanded = _expand(value, variables)
                variables[name.strip().upper()] = \
                    None if expanded == "${BATCH_EXPANSION}" else expanded
            continue
        if head in _SKIP or head.startswith(("echo.", "rem ")):
            continue
        tokens = _WORD.findall(_expand(body, variables))
        if tokens and _program(tokens[0]).lower() in ("powershell", "pwsh"):
            script = _powershell_script(tokens)
            tokens = [f'"{w}"' for w in powershell_command(script, {})] if script else []
        while tokens and tokens[0].lower() in ("call", "start", "cmd"):
            first = tokens.pop(0).lower()
            if first == "start" and tokens and tokens[0].startswith('"'):
                tokens.pop(0)  # the window title
            while tokens and tokens[0].startswith("/"):
                tokens.pop(0)  # /B, /MIN, cmd's /c
        if not tokens:
            continue
        words = [Word(t.replace('"', ""), line) for t in tokens]
        words[0] = Word(_program(words[0].text), line)
        commands.append(words)
    return command_models(commands, text, path, kind="batch-file")
