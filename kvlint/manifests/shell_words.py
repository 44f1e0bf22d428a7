"""Shell words, read without running anything: :func:`split_script` turns an ``sh -c`` script
(or a YAML command string) into simple commands of :class:`Word` s, each with its line in the
manifest (quote removal, ``\\``-newline continuations, comments, redirections and here-docs
dropped); :func:`split_env_prefix` takes the ``KEY=VALUE`` assignments (and ``exec``/``env``/
``nohup``) off the front of a command.

The lowest of the three shell modules: :mod:`.shell_env` (expansion) and
:mod:`.engine_command` (engines' argument grammars) build on it; it imports neither
(an import-linter ``layers`` contract in ``pyproject.toml``).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace

from kvlint.manifests.yaml_marks import LStr

__all__ = ["Heredoc", "ScalarLines", "Word", "continued_lines", "split_env_prefix",
           "split_script"]


# --- words and scripts ---------------------------------------------------------------------


@dataclass(frozen=True)
class Heredoc:
    """A here-document a command reads as its standard input (``cat > serve.sh <<EOF``,
    ``bash <<'EOF'``): its ``body`` (lines up to the delimiter, tabs stripped for ``<<-``),
    the manifest line of its first line, and whether the delimiter was quoted (then the
    body is taken literally; otherwise the shell expands it as in double quotes)."""

    body: str
    line: int | None
    quoted: bool


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal, with the 1-based line it starts on.

    ``split``: the word holds an unquoted expansion, so its expanded value is split into
    several words at whitespace (shell field splitting). ``literal``: every ``$`` in it was
    single-quoted or escaped, so it is never expanded. Both default to ``False`` for words a
    caller builds from an exec-form list (Kubernetes ``args:``), and neither takes part in
    equality.
    """

    text: str
    line: int | None
    split: bool = field(default=False, compare=False, repr=False)
    literal: bool = field(default=False, compare=False, repr=False)
    column: int | None = field(default=None, compare=False, repr=False)
    """1-based column of the word where the caller knows it (an exec-form list item)."""
    joined: str = field(default="", compare=False, repr=False)
    """On a command's first word: ``&&`` or ``||`` when that operator joins the command to
    the one before it (it runs only when that one succeeds, or fails)."""
    ends: str = field(default="", compare=False, repr=False)
    """On a command's last word: ``)`` or ``|`` when that character ended the command (a
    ``case`` branch's patterns are written ``a|b)``); "" otherwise."""
    heredoc: Heredoc | None = field(default=None, compare=False, repr=False)
    """On a command's first word: the first here-document the command reads."""
    writes: str = field(default="", compare=False, repr=False)
    """On a command's first word: the file its standard output is redirected to (``>``,
    ``>>``, ``>|``; the target as written, quotes removed), "" when none."""


_SEPARATORS = frozenset(";&|\n()")
_BLANK = frozenset(" \t\r")
_PLACEHOLDER = re.compile(r"<[A-Za-z][\w./:-]*(?: [\w./:-]+){0,7}>(?=[ \t\r\n;]|$)")
"""A word written as a placeholder for the reader to fill in (``--download-dir <DIR>``,
``<SCRATCH DIR>``, ``<path/to/model>``): at a word's start, a letter after ``<``, no blank
before ``>``, and a blank, ``;`` or the end after it. Read literally, the shell would take it as
two redirections (and fail on the comment after them); the author means a value not yet given,
so it is one literal word (never expanded) that the option it follows takes as its value. A
redirection is written with a blank on one side at least (``< in.txt > out.log``,
``<in >out``), so it is not this."""
_ORDINARY = re.compile(r"""[^\\'"$`#<>&;|()\n \t\r]+""")
"""A run of characters :meth:`_Splitter.run` only appends to the word (``#`` and ``&``,
ordinary only in some places, are left to the loop)."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)", re.DOTALL)


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """Index of the ``close`` that ends the group whose body starts at ``start`` (nesting,
    quotes inside skipped); ``len(text)`` when unterminated."""
    depth = 1
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            i = _dquote_end(text, i + 1) + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


MAX_SUBSTITUTIONS = 64
"""Command substitutions read per word (a real one has one or two)."""


def substitutions(text: str) -> list[str]:
    """The commands of ``text``'s command substitutions, ``$(...)`` and backquotes (not
    ``$((...))`` arithmetic), outermost first: the shell runs each before the command the
    word belongs to (``CID=$(docker run ...)``)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n and len(out) < MAX_SUBSTITUTIONS:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":  # a single-quoted part substitutes nothing
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
            end = _matching(text, i + 2, "(", ")")
            out.append(text[i + 2:end])
            i = end + 1
            continue
        if c == "`":
            j = text.find("`", i + 1)
            end = n if j < 0 else j
            out.append(text[i + 1:end])
            i = end + 1
            continue
        i += 1
    return out


def _dquote_end(text: str, start: int) -> int:
    """Index of the ``"`` closing a double-quoted string whose body starts at ``start``."""
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i
        if c == "$" and i + 1 < n and text[i + 1] in "({":
            i = _matching(text, i + 2, text[i + 1], ")" if text[i + 1] == "(" else "}") + 1
            continue
        if c == "`":
            j = text.find("`", i + 1)
            i = n if j < 0 else j + 1
            continue
        i += 1
    return n


class ScalarLines:
    """Maps an offset in a script to its 1-based line in the manifest."""

    def __init__(self, script: str, line: int | None, style: str | None,
                 raw: str | None) -> None:
        self.script = script
        self.line = line
        self.style = style
        self.raw = raw
        self._state: tuple[int, int, int] | None = None  # (script index, raw index, line)
        self._newlines: list[int] | None = None

    def at(self, offset: int) -> int | None:
        if self.line is None:
            return None
        if self.style == "|":  # newlines before the offset, by bisection: linear overall
            if self._newlines is None:
                self._newlines = [m.start() for m in re.finditer("\n", self.script)]
            return self.line + 1 + bisect.bisect_left(self._newlines, offset)
        if self.raw is None:
            return self.line
        return self._align(offset)

    def _align(self, offset: int) -> int:
        """Walk the scalar's source text alongside its value: every non-blank character of
        the value appears, in order, in the source (YAML folding only changes whitespace;
        an escape it cannot find is skipped). Words come in order, so the walk resumes
        where the previous word left it."""
        assert self.raw is not None and self.line is not None
        raw = self.raw
        if self._state is not None and self._state[0] <= offset:
            i, p, line = self._state
        else:
            i = 0
            p = raw.find("\n") + 1 if self.style == ">" else 0  # content after the indicator
            line = self.line + raw.count("\n", 0, p)
        script = self.script
        end = min(offset + 1, len(script))
        while i < end:
            c = script[i]
            if c not in " \t\r\n":
                q = raw.find(c, p)
                if q >= 0:
                    line += raw.count("\n", p, q)
                    p = q + 1
            i += 1
        self._state = (end, p, line)
        return line


def split_script(script: str, *, line: int | None = None,
                 style: str | None = None) -> list[list[Word]]:
    """Split a shell script into simple commands of words.

    Commands end at newlines, ``;``, ``&&``, ``||``, ``|``, ``&`` and parentheses outside
    quotes; ``\\``-newline continues a line (``\\`` before a CRLF too: a file saved on
    Windows, read as a checkout that converts line ends); ``#`` at the start of a word starts
    a comment; redirections (``> file``, ``2>&1``, heredocs) are dropped (the first stdout
    target and each here-document kept on the command's first word). Words lose their
    quotes as in ``sh`` (a single-quoted JSON document with spaces is one word);
    ``$(...)``, ``${...}`` and ``$((...))`` stay inside their word, unexpanded.

    ``line`` is the manifest line of the scalar and ``style`` its YAML style: a literal
    block (``|``) puts each word on ``line + 1 + newlines before it``; a single-line scalar
    puts every word on ``line``. When ``script`` is a
    :class:`~kvlint.manifests.yaml_marks.LStr` and ``line`` is not given, its own
    line and style are used, and for a folded, quoted or plain scalar spanning several lines
    its source text places each word on its real line (otherwise the scalar's line).
    """
    raw = None
    if isinstance(script, LStr) and (line is None or line == script.line):
        if line is None:
            line = script.line or None
            style = script.style if style is None else style
        raw = script.raw
    lines = ScalarLines(str(script), line, style, raw)
    return _Splitter(str(script), lines).run()


class _Splitter:
    def __init__(self, text: str, lines: ScalarLines) -> None:
        self.text = text
        self.lines = lines
        self.commands: list[list[Word]] = []
        self.current: list[Word] = []
        self.chars: list[str] = []
        self.start = -1
        self.live = False
        self.dead = False
        self.unquoted_dollar = False
        self.heredocs: list[tuple[str, bool, bool, int]] = []
        """Here-documents whose bodies follow the current line: (delimiter, ``<<-``,
        quoted, index of the command that reads it)."""
        self.writes = ""
        """The current command's standard-output redirection target."""
        self.join = ""
        """The ``&&``/``||`` before the command being read ("" after any other separator)."""

    def end_word(self) -> None:
        if self.start >= 0:
            text = "".join(self.chars)
            self.current.append(Word(text, self.lines.at(self.start),
                                     split=self.unquoted_dollar,
                                     literal=self.dead and not self.live,
                                     joined="" if self.current else self.join))
        self.chars = []
        self.start = -1
        self.live = self.dead = self.unquoted_dollar = False

    def end_command(self) -> None:
        self.end_word()
        if self.current:
            if self.writes:
                self.current[0] = replace(self.current[0], writes=self.writes)
            self.commands.append(self.current)
        self.current = []
        self.writes = ""

    def begin(self, i: int) -> None:
        if self.start < 0:
            self.start = i

    def run(self) -> list[list[Word]]:
        text = self.text
        n = len(text)
        i = 0
        ordinary = _ORDINARY.match
        while i < n:
            run = ordinary(text, i)
            if run is not None:  # most of a script: taken a run at a time
                self.begin(i)
                self.chars.append(run.group())
                i = run.end()
                continue
            c = text[i]
            if c == "\\":
                if i + 1 >= n or text[i + 1] == "\n":  # a continuation (to the end of
                    i += 2                              # the script: bash drops it too)
                    continue
                if text.startswith("\r\n", i + 1):  # a file saved with CRLF line ends: read
                    i += 3                             # as the checkout that converts them
                    continue
                self.begin(i)
                if i + 1 < n:
                    if text[i + 1] == "$":
                        self.dead = True
                    self.chars.append(text[i + 1])
                i += 2
                continue
            if c == "'":
                self.begin(i)
                j = text.find("'", i + 1)
                j = n if j < 0 else j
                body = text[i + 1:j]
                if "$" in body:
                    self.dead = True
                self.chars.append(body)
                i = j + 1
                continue
            if c == '"':
                self.begin(i)
                j = _dquote_end(text, i + 1)
                self.chars.append(self._dquoted(text[i + 1:j]))
                i = j + 1
                continue
            if c == "$" and i + 1 < n and text[i + 1] in "({":
                self.begin(i)
                close = ")" if text[i + 1] == "(" else "}"
                j = _matching(text, i + 2, text[i + 1], close)
                self.chars.append(text[i:j + 1])
                self.live = self.unquoted_dollar = True
                i = j + 1
                continue
            if c == "$":
                self.begin(i)
                self.chars.append(c)
                self.live = self.unquoted_dollar = True
                i += 1
                continue
            if c == "`":
                self.begin(i)
                j = text.find("`", i + 1)
                j = n if j < 0 else j
                self.chars.append(text[i:j + 1])
                self.live = self.unquoted_dollar = True
                i = j + 1
                continue
            if c in _BLANK:
                self.end_word()
                i += 1
                continue
            if c == "#" and self.start < 0:
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "<" and self.start < 0:
                found = _PLACEHOLDER.match(text, i)
                if found is not None:  # <DIR>, <SCRATCH DIR>: a value left to fill in
                    self.begin(i)
                    self.chars.append(found.group(0))
                    self.dead = True
                    i = found.end()
                    continue
            if c in "<>" or (c == "&" and i + 1 < n and text[i + 1] == ">"):
                i = self._redirect(i)
                continue
            if c in _SEPARATORS:
                had = bool(self.current) or self.start >= 0
                self.end_command()
                pair = text[i:i + 2]
                if had and (c == ")" or (c == "|" and pair != "||")):
                    last = self.commands[-1]
                    last[-1] = replace(last[-1], ends=c)
                if pair in ("&&", "||"):
                    self.join = pair
                    i += 2
                    continue
                if had or c != "\n":  # a newline right after && keeps the join
                    self.join = ""
                if c == "\n" and self.heredocs:
                    i = self._skip_heredocs(i + 1)
                    continue
                i += 1
                continue
            self.begin(i)
            self.chars.append(c)
            i += 1
        self.end_command()
        return self.commands

    def _dquoted(self, body: str) -> str:
        """Double-quote removal: backslash escapes only ``$ ` " \\`` and newline."""
        if "$" in body or "`" in body:
            self.live = True
        if "\\" not in body:
            return body
        out: list[str] = []
        i = 0
        while i < len(body):
            c = body[i]
            if c == "\\" and i + 1 < len(body) and body[i + 1] in '$`"\\\n':
                if body[i + 1] == "$":
                    self.dead = True
                if body[i + 1] != "\n":
                    out.append(body[i + 1])
                i += 2
                continue
            out.append(c)
            i += 1
        return "".join(out)

    def _redirect(self, i: int) -> int:
        """Drop a redirection operator and its target; returns the index after them."""
        text = self.text
        n = len(text)
        fd = "".join(self.chars) if self.start >= 0 else ""
        if fd.isdigit():  # 2>file: the fd number
            self.chars = []
            self.start = -1
        else:
            self.end_word()
        j = i
        while j < n and text[j] in "<>&|-":
            j += 1
        op = text[i:j]
        if op.startswith("<<") and not op.startswith("<<<"):
            strip = op.endswith("-")
            k = j
            while k < n and text[k] in " \t":
                k += 1
            m = k
            while m < n and text[m] not in " \t\n;&|<>":
                m += 1
            delimiter = text[k:m].strip("'\"")
            if delimiter:
                quoted = any(q in text[k:m] for q in "'\"\\")
                self.heredocs.append((delimiter, strip, quoted, len(self.commands)))
            return m
        if op.endswith("&") and j < n and (text[j].isdigit() or text[j] == "-"):
            while j < n and (text[j].isdigit() or text[j] == "-"):
                j += 1
            return j
        while j < n and text[j] in " \t":
            j += 1
        # the target word (quotes allowed)
        target = j
        while j < n and text[j] not in " \t\n;&|<>()":
            if text[j] == "'":
                k = text.find("'", j + 1)
                j = n if k < 0 else k + 1
            elif text[j] == '"':
                j = _dquote_end(text, j + 1) + 1
            elif text[j] == "\\":
                j += 2
            else:
                j += 1
        if op in (">", ">>", ">|") and fd in ("", "1") and not self.writes:
            self.writes = re.sub(r"""['"]""", "", text[target:j])
        return j

    def _skip_heredocs(self, i: int) -> int:
        """Skip the bodies of the here-documents the line before ``i`` opened, giving each
        to the command that reads it."""
        text = self.text
        for delimiter, strip, quoted, index in self.heredocs:
            start = i
            lines: list[str] = []
            while i < len(text):
                j = text.find("\n", i)
                j = len(text) if j < 0 else j
                body = text[i:j].lstrip("\t") if strip else text[i:j]
                i = j + 1
                if body == delimiter:
                    break
                lines.append(body)
            if index < len(self.commands) and self.commands[index][0].heredoc is None:
                first = self.commands[index][0]
                self.commands[index][0] = replace(first, heredoc=Heredoc(
                    "\n".join(lines), self.lines.at(start), quoted))
        self.heredocs = []
        return i


_WRAPPERS = frozenset({"exec", "env", "nohup"})


def split_env_prefix(words: list[Word]) -> tuple[dict[str, str], list[Word]]:
    """Remove the leading ``KEY=VALUE`` assignments (and ``exec``/``env``/``nohup``, with
    ``env``'s ``-i``/``-u NAME`` options) of a command. The values are the raw words
    (unexpanded; :class:`~kvlint.manifests.yaml_marks.LStr` s carrying the word's
    line) and the rest is the command."""
    values: dict[str, str] = {}
    i = 0
    while i < len(words):
        text = words[i].text
        if text in _WRAPPERS:
            i += 1
            if text == "env":
                while i < len(words) and words[i].text.startswith("-"):
                    i += 2 if words[i].text in ("-u", "--unset") else 1
            continue
        match = _ASSIGNMENT.fullmatch(text)
        if match is None:
            break
        values[match.group(1)] = LStr(match.group(2), words[i].line or 0)
        i += 1
    return values, list(words[i:])


def continued_lines(lines: list[str], mark: str) -> list[tuple[str, int]]:
    """Logical lines with their first line's 1-based number: a line ending in ``mark`` (but
    not in ``mark`` twice, an escaped one) is joined, without it, to the next (cmd.exe's
    ``^``, PowerShell's backtick)."""
    out: list[tuple[str, int]] = []
    pending: list[str] = []
    start = 0
    for number, line in enumerate(lines, 1):
        if not pending:
            start = number
        stripped = line.rstrip()
        if stripped.endswith(mark) and not stripped.endswith(mark * 2):
            pending.append(stripped[:-len(mark)])
            continue
        pending.append(line)
        out.append((" ".join(pending), start))
        pending = []
    if pending:
        out.append((" ".join(pending), start))
    return out
