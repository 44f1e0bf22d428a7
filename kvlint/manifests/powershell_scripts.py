"""PowerShell scripts (``.ps1``) that start an engine, read as PowerShell runs them
(https://learn.microsoft.com/powershell/module/microsoft.powershell.core/about/about_parsing,
about_Quoting_Rules, about_Special_Characters, about_Variables):

* a backtick (`````) at a line's end continues the command on the next line; ``#`` starts a
  comment and ``<# ... #>`` a block comment;
* ``$Name = "value"`` and ``$env:NAME = "value"`` assign (a double-quoted value expands the
  variables in it, a single-quoted one is literal); ``$Name``, ``${Name}`` and ``$env:NAME``
  expand to the value set above (names are case-insensitive); a variable the file never sets
  is given to the command layer as ``${NAME}``: unresolved, never empty;
* words are split at blanks outside quotes, and the quotes removed; a backtick escapes the
  next character; backslashes are path separators, never escapes;
* ``& "C:\\path\\llama-server.exe" args`` (the call operator) and
  ``Start-Process [-FilePath] PROGRAM -ArgumentList "args"`` (or ``'a','b'``) run PROGRAM with
  those arguments; the program's directory and ``.exe`` are not part of its name;
* control lines (``if``, ``foreach``, ``function``...), cmdlets such as ``Write-Host`` and
  braces start no server here (a server started inside a block is read, its condition not).

The commands then go the way a script's do
(:func:`~kvlint.manifests.shell_scripts.command_models`).
"""

from __future__ import annotations

import re

from kvlint.manifests.base import ServedModel
from kvlint.manifests.shell_env import bounded_sub
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, continued_lines

__all__ = ["is_powershell", "powershell_command", "powershell_models"]

MAX_LINES = 20_000
_ASSIGN = re.compile(r"^\$(env:)?([A-Za-z_][\w]{0,60})\s*=\s*(.*)$", re.IGNORECASE)
_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_]\w{0,60})\}|\$(env:)?([A-Za-z_]\w{0,60})",
                        re.IGNORECASE)
_ARG = r"(?:'[^']*'|\"(?:`.|[^\"`])*\"|[^\s'\"`;|(){}@]+)"
_JOIN_PATH = re.compile(rf"Join-Path\s+(?:-Path\s+)?({_ARG})\s+(?:-ChildPath\s+)?({_ARG})",
                        re.IGNORECASE)
"""``Join-Path A B``: ``A/B`` (the one cmdlet whose value a script's program path is built
with)."""
_WORD = re.compile(r"(?:'[^']*'|\"(?:`.|[^\"`])*\"|`.|[^\s'\"`])+")
_CONTROL = ("if", "elseif", "else", "foreach", "for", "while", "do", "switch", "function",
            "param", "try", "catch", "finally", "return", "exit", "break", "continue", "{", "}",
            "write-host", "write-output", "write-error", "write-warning", "start-sleep",
            "set-location", "cd", "echo", "remove-item", "new-item", "get-process",
            "stop-process", "test-path", "out-null", "clear-host", "pause", "read-host")


def is_powershell(path: str) -> bool:
    return path.lower().endswith((".ps1", ".psm1"))


def _lines(text: str) -> list[tuple[str, int]]:
    """Logical lines with their first line's number, comments dropped (a backtick at the
    end joins the next line)."""
    def blank(match: re.Match[str]) -> str:  # keep the line numbers
        return "\n" * match.group(0).count("\n")

    text = re.sub(r"<#.*?#>", blank, text, flags=re.DOTALL)
    text = re.sub(r"@([\"']) *\r?\n.*?\r?\n\1@", blank, text, flags=re.DOTALL)  # here-strings
    return continued_lines([_uncomment(raw) for raw in text.splitlines()[:MAX_LINES]], "`")


def _unquoted(line: str) -> list[int]:
    """The positions of ``line``'s characters outside quotes."""
    out: list[int] = []
    quote = ""
    for i, c in enumerate(line):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        else:
            out.append(i)
    return out


def _uncomment(line: str) -> str:
    """``line`` without its ``#`` comment (a ``#`` inside quotes is text)."""
    for i in _unquoted(line):
        if line[i] == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _expand(text: str, variables: dict[str, str | None]) -> str:
    """``text`` with ``$Name``/``$env:NAME`` replaced (unknown: ``${NAME}``); a result over
    :data:`~kvlint.manifests.shell_env.MAX_EXPANDED_CHARS` is an unresolved reference."""

    def one(match: re.Match[str]) -> str:
        name = (match.group(1) or match.group(3)).upper()
        value = variables.get(name)
        return value if value is not None else f"${{{name}}}"

    return bounded_sub(_REFERENCE, one, text, "${POWERSHELL_EXPANSION}")


def _unquote(token: str, variables: dict[str, str | None]) -> str:
    """One word as PowerShell passes it: quotes removed, a double-quoted part expanded,
    backtick escapes resolved."""
    out: list[str] = []
    for part in re.findall(r"'[^']*'|\"(?:`.|[^\"`])*\"|`.|[^'\"`]+", token):
        if part.startswith("'"):
            out.append(part[1:-1])
        elif part.startswith('"'):
            out.append(re.sub(r"`(.)", r"\1", _expand(part[1:-1], variables)))
        elif part.startswith("`"):
            out.append(part[1:])
        else:
            out.append(_expand(part, variables))
    return "".join(out)


def _program(word: str) -> str:
    """``C:\\llama\\llama-server.exe`` -> ``llama-server``."""
    name = re.split(r"[\\/]", word)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _start_process(tokens: list[str], variables: dict[str, str | None]) -> list[str]:
    """``Start-Process [-FilePath] P [-ArgumentList A] [-NoNewWindow ...]``: P and the words
    of A (a string split at blanks, or a comma-separated list)."""
    program: str | None = None
    arguments: list[str] = []
    i = 1
    while i < len(tokens):
        token = tokens[i]
        lowered = token.lower()
        if lowered in ("-filepath", "-file") and i + 1 < len(tokens):
            program, i = _unquote(tokens[i + 1], variables), i + 2
        elif lowered in ("-argumentlist", "-args") and i + 1 < len(tokens):
            listed = tokens[i + 1]
            i += 2
            while listed.endswith(",") and i < len(tokens):  # 'a', 'b' split at blanks
                listed, i = listed + tokens[i], i + 1
            for item in re.findall(r"'[^']*'|\"(?:`.|[^\"`])*\"|[^,]+", listed):
                value = _unquote(item.strip(), variables)
                arguments.extend(_WORD.findall(value) if item.strip()[:1] in "'\"" else
                                 [value])
        elif token.startswith("-"):
            i += 2 if lowered in ("-workingdirectory", "-windowstyle",
                                  "-redirectstandardoutput", "-redirectstandarderror") else 1
        elif program is None:
            program, i = _unquote(token, variables), i + 1
        else:
            i += 1
    return [program, *arguments] if program else []


def powershell_command(body: str, variables: dict[str, str | None]) -> list[str]:
    """The program and arguments one PowerShell command line runs (``[]``: none, or a line
    that starts no program); an assignment updates ``variables`` (upper-case names)."""
    body = body.strip()
    assigned = _ASSIGN.match(body)
    if assigned is not None:
        value = assigned.group(3).strip()
        simple = re.fullmatch(r"'[^']*'|\"(?:`.|[^\"`])*\"|[^\s'\"`;|(){}@]+", value)
        joined = _JOIN_PATH.fullmatch(value)
        variables[assigned.group(2).upper()] = _unquote(value, variables) if simple else \
            "/".join(_unquote(part, variables) for part in joined.group(1, 2)) if joined \
            else None
        return []
    tokens = _WORD.findall(body)
    if not tokens or tokens[0].lower() in _CONTROL or tokens[0].startswith(("{", "}")):
        return []
    if tokens[0] in ("&", "."):
        tokens = tokens[1:]
    if tokens and tokens[0].lower() in ("start-process", "saps"):
        words = _start_process(tokens, variables)
    else:
        words = [_unquote(t, variables) for t in tokens]
    words = [w for w in words if w]
    if words:
        words[0] = _program(words[0])
    return words


def powershell_models(text: str, path: str) -> list[ServedModel]:
    """Every served model a PowerShell script starts."""
    variables: dict[str, str | None] = {}
    commands: list[list[Word]] = []
    for raw, line in _lines(text):
        for statement in _statements(raw):
            words = powershell_command(statement, variables)
            if words:
                commands.append([Word(w, line) for w in words])
    return command_models(commands, text, path, kind="powershell")


def _statements(line: str) -> list[str]:
    """A line's statements, split at ``;`` outside quotes."""
    cuts = [i for i in _unquoted(line) if line[i] == ";"]
    return [line[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(line)], strict=True)]
