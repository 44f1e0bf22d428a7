"""Makefiles that start an engine: each recipe line as the shell make hands it to runs it
(GNU make's manual, https://www.gnu.org/software/make/manual/make.html: "Recipe Syntax",
"Splitting Recipe Lines", "How to Use Variables").

What make does before the shell sees a recipe line, and so what kvlint does:

* a recipe line starts with a tab (make's default ``.RECIPEPREFIX``); a ``\\``-newline inside
  it is kept for the shell (which joins the lines), and the tab that starts each continuation
  line is removed; the ``@``, ``-`` and ``+`` prefixes are make's, not the command's;
* ``$(NAME)`` and ``${NAME}`` are make variables, expanded from the file's assignments
  (``=``, ``:=``, ``::=``, ``?=``, ``+=``, with ``export``/``override``) in the order they
  appear (kvlint does not defer ``=``: a later assignment of a variable the value names is
  not seen); ``$$`` is a ``$`` for the shell. A variable the file never sets may come from
  the environment or the ``make`` command line (``make serve MODEL=...``), so it is given to
  the shell as ``${NAME}``: unset there, so unresolved, never empty. A make function
  (``$(shell ...)``, ``$(word ...)``) is left as written: the shell reads it as a command
  substitution, also unresolved;
* each recipe line runs in a shell of its own (``.ONESHELL`` is not read).

The commands then go the way a script's do
(:func:`~kvlint.manifests.shell_scripts.command_models`).
"""

from __future__ import annotations

import re

from kvlint.manifests.base import ServedModel
from kvlint.manifests.shell_env import MAX_EXPANDED_CHARS
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script

__all__ = ["is_makefile", "makefile_models"]

_NAMES = ("Makefile", "makefile", "GNUmakefile")
_ASSIGNMENT = re.compile(
    r"^(?:(?:export|override)\s+)*([A-Za-z_][A-Za-z0-9_.-]*)\s*(\?=|\+=|::=|:::=|:=|!=|=)\s*(.*)$")
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}"
                        r"|\$([A-Za-z_])")
MAX_DEPTH = 16
"""Nested references expanded at most this deep (``A = $(B)``, ``B = $(A)`` ends here)."""


def is_makefile(path: str) -> bool:
    """``Makefile``, ``makefile``, ``GNUmakefile``, ``Makefile.gpu``, ``serve.mk``,
    ``gpu.Makefile``."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.endswith((*_NAMES, ".mk")) or \
        name.startswith(tuple(f"{n}." for n in _NAMES))


def _logical(lines: list[str], start: int) -> tuple[str, int]:
    """The logical line starting at ``lines[start]`` (backslash-newlines collapsed to one
    space, as make reads a variable definition) and the index after it."""
    parts = []
    i = start
    while True:
        line = lines[i]
        i += 1
        if line.endswith("\\") and i < len(lines):
            parts.append(line[:-1].strip())
            continue
        parts.append(line.strip())
        return " ".join(p for p in parts if p), i


def _expand(text: str, variables: dict[str, str]) -> str:
    """``text`` with make's references replaced (see the module's docstring); one longer
    than :data:`~kvlint.manifests.shell_env.MAX_EXPANDED_CHARS` is unresolved."""
    out, over = _expand_bounded(text, variables, 0, {})
    return "${MAKE_EXPANSION}" if over else out


def _expand_bounded(text: str, variables: dict[str, str], depth: int,
                    memo: dict[str, str]) -> tuple[str, bool]:
    """``(text expanded, whether it grew past the bound)``. Each variable is expanded once
    (``memo``); one whose value grows past the bound, or refers to itself, is given as
    ``${NAME}``: unresolved, not a memory bomb (``A = $(B)$(B)``, ``B = $(C)$(C)``...)."""
    size = 0

    def one(match: re.Match[str]) -> str:
        nonlocal size
        if match.group(0) == "$$":
            return "$$"  # stays an escape until the last pass
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in variables or depth >= MAX_DEPTH:
            return f"${{{name}}}"  # the environment's or the command line's: unresolved
        if name not in memo:
            memo[name] = f"${{{name}}}"  # a reference to itself while expanding: unresolved
            value, over = _expand_bounded(variables[name], variables, depth + 1, memo)
            memo[name] = f"${{{name}}}" if over else value
        size += len(memo[name])
        return memo[name] if size <= MAX_EXPANDED_CHARS else ""

    out = _REFERENCE.sub(one, text)
    return out, size > MAX_EXPANDED_CHARS


def _assign(variables: dict[str, str], name: str, op: str, value: str) -> None:
    if op == "?=":
        variables.setdefault(name, value)
    elif op == "+=":
        variables[name] = f"{variables[name]} {value}".strip() if name in variables else value
    elif op == "!=":
        variables[name] = f"$(shell {value})"  # a shell's output: never known here
    elif op in (":=", "::=", ":::="):
        variables[name] = _expand(value, variables)
    else:
        variables[name] = value


def makefile_models(text: str, path: str) -> list[ServedModel]:
    """Every served model the recipes of a Makefile start."""
    lines = text.splitlines()
    variables: dict[str, str] = {}
    commands: list[list[Word]] = []
    i = 0
    in_rule = False
    while i < len(lines):
        line = lines[i]
        if line.startswith("\t") and in_rule:
            start = i
            recipe = [line[1:]]
            i += 1
            while recipe[-1].endswith("\\") and i < len(lines):
                following = lines[i]
                recipe.append(following[1:] if following.startswith("\t") else following)
                i += 1
            body = "\n".join(recipe).lstrip()
            while body[:1] in ("@", "-", "+"):
                body = body[1:].lstrip()
            shell = _expand(body, variables).replace("$$", "$")
            commands.extend(split_script(shell, line=start, style="|"))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        logical, i = _logical(lines, i)
        assignment = _ASSIGNMENT.match(logical)
        if assignment and not _is_rule(logical, assignment):
            name, op, value = assignment.groups()
            _assign(variables, name, op, value.split(" #", 1)[0].strip())
            continue
        in_rule = ":" in logical and not logical.startswith(("ifeq", "ifneq", "ifdef",
                                                             "ifndef", "else", "endif",
                                                             "include", "-include", "define",
                                                             "endef", "$("))
        if in_rule and ";" in logical:  # ``target: prerequisites ; recipe``
            inline = logical.split(";", 1)[1].strip()
            if inline:
                shell = _expand(inline, variables).replace("$$", "$")
                commands.extend(split_script(shell, line=i))
    return command_models(commands, text, path, kind="makefile")


def _is_rule(logical: str, assignment: re.Match[str]) -> bool:
    """A rule whose target list looks like an assignment (``serve: MODEL=x``: a
    target-specific variable) is still a rule line, not a global assignment."""
    colon = logical.find(":")
    return 0 <= colon < assignment.start(2) and assignment.group(2) not in (":=", "::=",
                                                                            ":::=")
