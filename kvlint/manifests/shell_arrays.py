"""Bash arrays in a script: ``ARGS=( --tp 2 ... )``, ``ARGS+=( ... )`` and ``"${ARGS[@]}"``.

Scripts often gather an engine's options in an array and pass them as ``"${ARGS[@]}"``, which
expands to the array's words, each one argument. kvlint reads a script's text before it splits
commands: every use of an array set in the file by literal ``=( ... )`` / ``+=( ... )`` lists
(appends taken whether or not their branch runs, except one guarded by a variable the script
leaves empty: ``if [[ -n "$X" ]]; then ARGS+=(--x "$X")`` after ``X=""``) is put in as those
words, quoted as they were written, and the assignments become blank lines (so lines keep
their numbers). An array set
any other way (``read -a``, a loop, ``mapfile``) stays as written: unresolved. Bounded: at most
:data:`MAX_ARRAY_CHARS` characters are put in.
"""

from __future__ import annotations

import re

__all__ = ["inline_arrays"]

MAX_ARRAY_CHARS = 65_536
"""Characters of array words put into one script (a real one puts in a few hundred)."""
_ASSIGN = re.compile(r"^[ \t]*(?:(?:local|declare|typeset)(?:[ \t]+-a)?[ \t]+)?"
                     r"([A-Za-z_]\w{0,63})(\+?)=\(", re.MULTILINE)


def _closing(text: str, start: int) -> int | None:
    """The index of the ``)`` that closes the list opened before ``start`` (quotes, escapes
    and comments respected); ``None`` when it is not closed."""
    quote = ""
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 2
            continue
        elif c == "#" and (i == start or text[i - 1] in " \t\n"):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif c == ")":
            return i
        elif c == "(":
            return None  # a nested list or a substitution: not a plain word list
        i += 1
    return None


def _uncommented(line: str) -> str:
    """``line`` without a comment: a ``#`` that starts a word outside quotes."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _words(inner: str) -> str:
    """The list's words on one line (comments dropped, line breaks as spaces)."""
    lines = [_uncommented(line).strip().removesuffix("\\").strip()
             for line in inner.splitlines()]
    return " ".join(part for part in lines if part)


_GUARD = re.compile(r"(?:\bif[ \t]+)?\[\[?[ \t]+-n[ \t]+\"?\$\{?([A-Za-z_]\w{0,63})\}?\"?"
                    r"[ \t]+\]\]?[ \t]*(?:;[ \t]*then|&&)?[ \t]*$")


def _unset_guard(text: str, start: int) -> bool:
    """Whether the append at ``start`` runs only when a variable is non-empty
    (``if [[ -n "${X}" ]]; then ARGS+=(...)``, ``[ -n "$X" ] && ARGS+=(...)``) that the
    script sets to the empty string and to nothing else but its arguments: run as written,
    the append does not happen."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    if not before.strip():  # the guard on the line above (if ...; then)
        above = text.rfind("\n", 0, max(line_start - 1, 0)) + 1
        before = text[above:max(line_start - 1, 0)]
    guard = _GUARD.search(before.strip())
    if guard is None:
        return False
    name = re.escape(guard.group(1))
    values = re.findall(rf"^[ \t]*(?:export[ \t]+|local[ \t]+|readonly[ \t]+)?{name}=(\S*)",
                        text, re.MULTILINE)
    return bool(values) and all(v.split("#")[0] in ("", '""', "''") for v in values)


def inline_arrays(text: str) -> str:
    """``text`` with the uses of its literal arrays replaced by their words (see the module
    docstring); the text as it was when it sets none."""
    if "=(" not in text or ("[@]" not in text and "[*]" not in text):
        return text
    arrays: dict[str, str] = {}
    out: list[str] = []
    last = 0
    budget = MAX_ARRAY_CHARS
    for match in _ASSIGN.finditer(text):
        if match.start() < last:
            continue
        end = _closing(text, match.end())
        if end is None:
            continue
        words = _words(text[match.end():end])
        budget -= len(words)
        if budget < 0:
            return text
        name, append = match.group(1), match.group(2)
        if append and _unset_guard(text, match.start()):
            words = ""
        arrays[name] = f"{arrays[name]} {words}".strip() if append and name in arrays else words
        out.append(text[last:match.start()])
        out.append("\n" * text.count("\n", match.start(), end + 1))
        last = end + 1
    out.append(text[last:])
    result = "".join(out)
    if not arrays:
        return text

    def use(found: re.Match[str]) -> str:
        return arrays.get(found.group(1), found.group(0))

    pattern = re.compile(r'"?\$\{(' + "|".join(map(re.escape, arrays)) + r')\[[@*]\]\}"?')
    return pattern.sub(use, result)
