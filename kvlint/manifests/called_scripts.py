"""A script a host script runs from its own tree.

A Slurm job or a start script often hands the launch to another script of the repository
(``bash service.sh "$MODEL" 8000``, ``./scripts/serve.sh``, ``source serve_env.sh``): the
engine command is in that script. When it lies inside the linted tree, kvlint reads it
(bounded, as manifests are; recorded for the result cache) and puts its commands in place of
the call, each word on the calling line, so that findings land in the file being linted and
the script's assignments and the caller's exports meet as they do when it runs.

Arguments are bound as the shell binds them: ``$1``, ``${1}``, ``${1:-default}`` and ``"$@"``
take the words the call passes. A word kvlint cannot carry into another quoting context
unchanged (one with blanks, quotes or a command substitution) is not put in: its parameter
is then unresolved (KV902), never its default, since an argument was passed. A script that
moves its arguments (``shift``, ``getopts``) or loops over them has nothing bound and its
passed positions are unresolved in the same way.

The path is looked up beside the calling file, then in each folder above it up to the tree's
root (a Slurm job runs from the folder it was submitted from, usually the repository's); a
folder put in front of it through a variable or ``$(dirname "$0")`` is taken as the calling
file's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from kvlint.manifests.base import DocumentContext, Documents
from kvlint.manifests.engine_launch import SHELLS
from kvlint.manifests.engine_programs import find_program
from kvlint.manifests.shell_words import Word, split_env_prefix

__all__ = ["Calls", "bind_arguments", "called_scripts"]

MAX_CALL_DEPTH = 2
"""Scripts followed from a script that another script runs (a job -> a wrapper -> a launcher)."""
MAX_CALLS = 16
"""Script calls followed in one file."""
MAX_LEVELS = 8
"""Folders above the calling file looked in for the script."""
_SOURCE = frozenset({"source", "."})
_SHELL_FLAGS = re.compile(r"-[a-zA-Z]{1,4}")
"""Options a shell takes before a script file (``bash -l x.sh``, ``sh -ex x.sh``)."""
_SAFE = re.compile(r"[A-Za-z0-9_./:@%+=,${}-]{1,512}")
"""An argument that reads the same unquoted, in double quotes and in a word: no blanks,
quotes, globbing or substitutions (``$VAR`` and ``${VAR}`` are expanded in the called script
from the same environment)."""
_MOVES_ARGUMENTS = re.compile(r"(?m)(?:^|[;&|\s])(?:shift|getopts)\b|\$#|for\s+\w+\s*(?:;|\n|do\b)")
_POSITIONAL = re.compile(r'"\$@"|"\$\*"|\$@|\$\*|\$\{(\d)([:-][^}]*)?\}|\$(\d)')


@dataclass
class Calls:
    """The commands with the scripts they run put in, and for each calling line what was
    read there (a note for the served models started on that line)."""

    commands: list[list[Word]]
    notes: dict[int | None, str] = field(default_factory=dict)


def called_scripts(commands: Sequence[list[Word]], ctx: DocumentContext) -> Calls:
    """``commands`` of the file ``ctx.path`` with each run of a script of its tree replaced
    by that script's commands (see the module's docs)."""
    if not ctx.path or ctx.path in ("-", "<stdin>"):
        return Calls([list(c) for c in commands])
    calls = Calls([])
    _expand(commands, ctx, Path(ctx.path), 0, calls, {str(Path(ctx.path).resolve())})
    return calls


def _expand(commands: Sequence[list[Word]], ctx: DocumentContext, here: Path, depth: int,
            calls: Calls, seen: set[str]) -> None:
    from kvlint.manifests.shell_arrays import file_commands

    for command in commands:
        call = _call(list(command)) if len(calls.notes) < MAX_CALLS else None
        found = None if call is None else _read(ctx, here, call[0])
        if call is None or found is None or str(found[0].resolve()) in seen or \
                depth >= MAX_CALL_DEPTH:
            calls.commands.append(list(command))
            continue
        resolved, text, shown = found
        line = command[0].line if command else None
        inner = [[replace(w, line=line) for w in c]
                 for c in file_commands(bind_arguments(text, call[1]))]
        calls.notes.setdefault(line, f"the engine command is in {shown}, which this line "
                                     "runs: read from there")
        _expand(inner, ctx, resolved, depth + 1, calls, seen | {str(resolved.resolve())})


def _call(command: list[Word]) -> tuple[str, list[Word]] | None:
    """``(script path as written, its arguments)`` when the command runs a script file."""
    rest = split_env_prefix(command)[1]
    if not rest or find_program([w.text for w in rest]) is not None:
        return None
    first = rest[0].text
    if first in _SOURCE and len(rest) >= 2:
        return rest[1].text, rest[2:]
    for i, word in enumerate(rest[:16]):
        base = PurePosixPath(word.text).name
        if base in SHELLS:
            j = i + 1
            while j < len(rest) and _SHELL_FLAGS.fullmatch(rest[j].text) and \
                    "c" not in rest[j].text:
                j += 1
            if j < len(rest) and rest[j].text.endswith(".sh"):
                return rest[j].text, rest[j + 1:]
            return None
        if base.endswith(".sh") and not word.text.startswith("-") and (
                i == 0 or not rest[i - 1].text.startswith("-")):
            return word.text, rest[i + 1:]
    return None


def _candidates(written: str) -> list[str]:
    """Paths relative to a folder that ``written`` may name: as written, and with a leading
    ``$VAR/`` or ``$(dirname "$0")/`` (the calling file's folder) dropped."""
    text = written.strip()
    if text.startswith("/") or not text.endswith(".sh") or "\x00" in text:
        return []
    if "$" not in text and "`" not in text:
        return [text[2:] if text.startswith("./") else text]
    tail = re.split(r"\$\([^)]*\)\)?|\$\{[^}]*\}|\$\w+|`[^`]*`", text)[-1].lstrip("/")
    return [tail] if tail and "$" not in tail and "`" not in tail else []


def _read(ctx: DocumentContext, here: Path, written: str) -> tuple[Path, str, str] | None:
    from kvlint.loaders.files import read_referenced, tree_root

    root = Path(tree_root(ctx.path))
    for relative in _candidates(written):
        if ".." in PurePosixPath(relative).parts:
            continue
        folder = here.parent
        for _ in range(MAX_LEVELS):
            path = folder / relative
            if path.is_file():
                read = read_referenced(str(path), ctx.path)
                if isinstance(ctx.documents, Documents):
                    ctx.documents.note_read(str(path), read.state)
                if read.text is None:
                    return None
                try:
                    shown = str(path.relative_to(Path(ctx.path).parent))
                except ValueError:
                    shown = str(path)
                return path, read.text, shown
            if folder.resolve() == root.resolve() or folder.parent == folder:
                break
            folder = folder.parent
    return None


def bind_arguments(text: str, args: Sequence[Word]) -> str:
    """``text`` with its positional parameters given ``args`` (see the module's docs)."""
    values = [w.text for w in args]
    bindable = not _MOVES_ARGUMENTS.search(text)

    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole.strip('"') in ("$@", "$*"):
            if bindable and all(_SAFE.fullmatch(v) for v in values):
                return " ".join(values)
            return whole
        number = int(match.group(1) or match.group(3))
        if number == 0:
            return whole
        if number > len(values):
            return whole  # unset: the default applies, as without arguments
        value = values[number - 1]
        if bindable and _SAFE.fullmatch(value):
            return value
        return f"${number}"  # passed but not carried: unresolved, never its default

    return _POSITIONAL.sub(one, text)
