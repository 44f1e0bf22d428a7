"""Bash arrays in a script: ``ARGS=( --tp 2 ... )``, ``ARGS+=( ... )`` and ``"${ARGS[@]}"``.

Scripts often gather an engine's options in an array and pass them as ``"${ARGS[@]}"``, which
expands to the array's words, each one argument. kvlint reads a script's text before it splits
commands: every use of an array set in the file by literal ``=( ... )`` / ``+=( ... )`` lists
(appends taken whether or not their branch runs, except one guarded by a variable the script
leaves empty: ``if [[ -n "$X" ]]; then ARGS+=(--x "$X")`` after ``X=""``) is put in as those
words, quoted as they were written, and the assignments become blank lines (so lines keep
their numbers). An array set
any other way (``read -a``, a loop, ``mapfile``) stays as written: unresolved. A POSIX
script's one list, ``set -- WORDS`` / ``set -- "$@" WORDS`` used as ``"$@"``, is read the same
way after its first ``set --``. Container scripts (``sh -c``) are read the same way
(:func:`script_commands`). Bounded: at most :data:`MAX_ARRAY_CHARS` characters are put in.
"""

from __future__ import annotations

import re

from kvlint.manifests.located_str import LStr
from kvlint.manifests.shell_plain_run import plain_run
from kvlint.manifests.shell_words import Word, split_script

__all__ = ["file_commands", "inline_arrays", "script_commands"]

MAX_ARRAY_CHARS = 65_536
"""Characters of array words put into one script (a real one puts in a few hundred)."""
_ASSIGN = re.compile(r"^[ \t]*(?:(?:local|declare|typeset)(?:[ \t]+-a)?[ \t]+)?"
                     r"([A-Za-z_]\w{0,63})(\+?)=\(", re.MULTILINE)


def _scan(text: str, start: int, stops: str, *, comments: bool) -> int | None:
    """The index of the first of ``stops`` from ``start`` outside quotes and escapes (and,
    with ``comments``, outside a ``#`` comment); ``None`` when there is none."""
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
        elif comments and c == "#" and (i == start or text[i - 1] in " \t\n"):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif c in stops:
            return i
        i += 1
    return None


def _closing(text: str, start: int) -> int | None:
    """The index of the ``)`` that closes the list opened before ``start`` (quotes, escapes
    and comments respected); ``None`` when it is not closed, or holds a nested list or a
    substitution (not a plain word list)."""
    found = _scan(text, start, "()", comments=True)
    return found if found is not None and text[found] == ")" else None


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


def _unset_guard(text: str, start: int, known: dict[str, bool]) -> bool:
    """Whether the append at ``start`` runs only when a variable is non-empty
    (``if [[ -n "${X}" ]]; then ARGS+=(...)``, ``[ -n "$X" ] && ARGS+=(...)``) that the
    script sets to the empty string and to nothing else but its arguments: run as written,
    the append does not happen. ``known``: each variable's verdict, so a script of many
    guarded appends scans its text once a variable."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    if not before.strip():  # the guard on the line above (if ...; then)
        above = text.rfind("\n", 0, max(line_start - 1, 0)) + 1
        before = text[above:max(line_start - 1, 0)]
    guard = _GUARD.search(before.strip())
    if guard is None:
        return False
    name = guard.group(1)
    if name not in known:
        values = re.findall(rf"^[ \t]*(?:export[ \t]+|local[ \t]+|readonly[ \t]+)?"
                            rf"{re.escape(name)}=(\S*)", text, re.MULTILINE)
        known[name] = bool(values) and all(v.split("#")[0] in ("", '""', "''")
                                           for v in values)
    return known[name]


_SET = re.compile(r"^[ \t]*set[ \t]+--(?=[ \t])", re.MULTILINE)
_POSITIONAL_USE = re.compile(r'"\$(?:@|\{@\})"|\$(?:@|\{@\})(?![\w{])')


def _command_end(text: str, start: int) -> int:
    """The index where the command starting at ``start`` ends: an unquoted newline not
    continued by ``\\``, ``;``, ``&`` or ``|``; the text's end when none."""
    found = _scan(text, start, "\n;&|", comments=False)
    return len(text) if found is None else found


def _positional_lists(text: str) -> str:
    """``set -- serve "$MODEL" --tp 2`` and ``set -- "$@" --x`` (a POSIX shell's one
    list): the uses of ``"$@"`` after the first such command become its words (appends
    taken whether or not their branch runs, unless guarded by a variable left empty), and
    the commands blank lines. Before it, ``"$@"`` is the script's own arguments, as
    written."""
    first = _SET.search(text)
    if first is None:
        return text
    words = ""
    guards: dict[str, bool] = {}
    out: list[str] = [text[:first.start()]]
    last = first.start()
    budget = MAX_ARRAY_CHARS
    for match in _SET.finditer(text):
        if match.start() < last:
            continue
        end = _command_end(text, match.end())
        given = _words(text[match.end():end])
        budget -= len(given)
        if budget < 0:
            return text
        out.append(_put(words, text[last:match.start()]))  # the list as it was before
        head, _, tail = given.partition(" ")
        if head in ('"$@"', "$@", '"${@}"'):
            if not _unset_guard(text, match.start(), guards):
                words = f"{words} {tail}".strip()
        else:
            words = given
        out.append("\n" * text.count("\n", match.start(), end))
        last = end
    out.append(_put(words, text[last:]))
    return "".join(out)


def _put(words: str, text: str) -> str:
    """``text`` with its ``"$@"`` uses replaced by ``words``."""
    return _POSITIONAL_USE.sub(lambda _: words, text)


def inline_arrays(text: str) -> str:
    """``text`` with the uses of its literal arrays replaced by their words (see the module
    docstring); the text as it was when it sets none."""
    if "set --" in text:
        text = _positional_lists(text)
    if "=(" not in text or ("[@]" not in text and "[*]" not in text):
        return text
    arrays: dict[str, str] = {}
    guards: dict[str, bool] = {}
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
        if append and _unset_guard(text, match.start(), guards):
            words = ""
        arrays[name] = f"{arrays[name]} {words}".strip() if append and name in arrays else words
        out.append(text[last:match.start()])
        out.append("\n" * text.count("\n", match.start(), end + 1))
        last = end + 1
    out.append(text[last:])
    result = "".join(out)
    if not arrays:
        return text

    scanner = _QuoteScanner(result)

    def use(found: re.Match[str]) -> str:
        if scanner.quoted_at(found.start()):
            # part of a longer double-quoted word ("> vllm serve ${ARGS[*]}"): one string,
            # whose text does not matter here; its own quote stays where it was
            return found.group(0)
        return arrays.get(found.group(1), found.group(0))

    pattern = re.compile(r'"?\$\{(' + "|".join(map(re.escape, arrays)) + r')\[[@*]\]\}"?')
    return pattern.sub(use, result)


class _QuoteScanner:
    """Whether a position of ``text`` lies inside a quoted string that began earlier on its
    line: a use that is not a whole word of its own (``"${ARGS[@]}"`` and ``${ARGS[@]}``
    are, also inside a command substitution ``"$( ... )"``, whose words are quoted anew).
    Asked in increasing positions, it reads the text once (a hostile one-line script with
    many uses costs one pass, not one per use)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.quote = ""
        self.outer: list[str] = []  # the quotes around each open $( ... )

    def quoted_at(self, at: int) -> bool:
        text, i = self.text, self.pos
        quote, outer = self.quote, self.outer
        while i < at:
            c = text[i]
            if c == "\n":
                quote, outer = "", []
            elif quote == "'":
                if c == "'":
                    quote = ""
            elif c == "\\":
                i += 1
            elif c == "$" and text.startswith("$(", i):
                outer.append(quote)
                quote = ""
                i += 1
            elif c == ")" and not quote and outer:
                quote = outer.pop()
            elif c == '"':
                quote = "" if quote == '"' else '"'
            elif c == "'" and not quote:
                quote = "'"
            i += 1
        self.pos, self.quote, self.outer = max(i, at), quote, outer
        return bool(quote)


def script_commands(script: str, line: int | None = None) -> list[list[Word]]:
    """The commands of an inline script (``sh -c SCRIPT``) as its plain run reads them
    (:func:`~kvlint.manifests.shell_plain_run.plain_run`), its arrays and ``set --`` lists
    put in: a YAML scalar (:class:`LStr`) keeps its own lines and style unless
    ``line`` says it sits elsewhere."""
    own = isinstance(script, LStr) and (line is None or line == script.line)
    inlined = inline_arrays(plain_run(str(script)))
    if inlined == str(script):
        return split_script(script) if own else split_script(str(script), line=line)
    if own and isinstance(script, LStr):
        return split_script(inlined, line=script.line, style=script.style)
    return split_script(inlined, line=line)


def file_commands(text: str, first_line: int = 1) -> list[list[Word]]:
    """The commands of a script file as its plain run reads them (its ``case`` on its own
    mode, its commands held in variables: :func:`~kvlint.manifests.shell_plain_run.plain_run`),
    its arrays put in, each word on its own line, the text's first line being
    ``first_line`` (a here-document's body starts where it stands in its file)."""
    return split_script(inline_arrays(plain_run(text)), line=first_line - 1, style="|")
