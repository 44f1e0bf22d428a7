"""A Compose ``command``/``entrypoint`` written as one string, split into words as Compose
splits it.

compose-go decodes a string ``command`` or ``entrypoint`` (``types.ShellCommand``,
types/command.go@e70e961) with ``shellwords.Parse`` of mattn/go-shellwords v1.0.12 (its
go.mod), after interpolating the file. That splitter is not a shell:

* spaces, tabs and line breaks separate words (a ``command: |`` block with one option per
  line is one command); ``#`` is an ordinary character (a comment line's words are passed
  to the program);
* ``\\`` keeps the next character in the word (outside single quotes), a line break
  included: ``\\`` at the end of a line of a literal block puts the line break at the start
  of the next word, and at the end of a folded block's line (folded into a space) it puts a
  space there (``' --tensor-parallel-size'``), a word the engine takes for a positional
  argument;
* the first ``;``, ``&``, ``|``, ``<`` or ``>`` outside quotes ends the command: the rest of
  the string is dropped (a ``>`` right after a word that starts with a digit drops that
  word too: ``2>&1``);
* ``(`` outside quotes that does not follow ``$``, an unclosed quote, ``$(`` or backquote,
  or a final ``\\`` make the string invalid: Compose refuses the file (``invalid command
  line string``) and starts nothing. A ``)`` outside quotes opens such a ``$(`` span until
  the next one.

``${...}`` is kept inside its word, unexpanded: kvlint interpolates each word afterwards and
splits an expanded one at whitespace (:func:`kvlint.manifests.compose._interp_words`), as
Compose splits the interpolated string.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kvlint.manifests.base import ServedModel
from kvlint.manifests.shell_words import ScalarLines, Word
from kvlint.manifests.yaml_values import words_of_list

__all__ = ["CommandSplit", "compose_words", "explained"]

SPLITTER = "go-shellwords v1.0.12 (compose-go types/command.go@e70e961)"
MAX_CHARS = 200_000
"""Characters of a command string read (a real one has a few hundred)."""


@dataclass(frozen=True)
class CommandSplit:
    """The words of a command string as Compose passes them, and what Compose does with the
    rest: ``dropped`` is the text after the character that ended the command; ``invalid``
    says why Compose refuses the string (then ``words`` is what was read before it)."""

    words: list[Word]
    dropped: str = ""
    invalid: str = ""


def compose_words(value: Any, line: int | None) -> CommandSplit:
    """``value`` (a service's ``command`` or ``entrypoint``, on ``line``) as words."""
    if isinstance(value, list):
        return CommandSplit(words_of_list(value))
    if not isinstance(value, str):
        return CommandSplit([])
    text = str(value)[:MAX_CHARS]
    own = getattr(value, "line", None) or None
    style = getattr(value, "style", None)
    raw = getattr(value, "raw", None) if line is None or line == own else None
    lines = ScalarLines(text, line if line is not None else own, style, raw)
    return _Parse(text, lines).run()


class _Parse:
    """``Parser.Parse`` of go-shellwords v1.0.12 with ParseEnv and ParseBacktick off (as
    compose-go calls it), each word placed on its line."""

    def __init__(self, text: str, lines: ScalarLines) -> None:
        self.text = text
        self.lines = lines
        self.words: list[Word] = []
        self.buf: list[str] = []
        self.start = -1
        self.dollar_word = False

    def _add(self, i: int, char: str) -> None:
        if not self.buf:
            self.start = i
        self.buf.append(char)

    def _emit(self) -> None:
        self.words.append(Word("".join(self.buf), self.lines.at(max(self.start, 0)),
                               split=self.dollar_word))
        self.buf = []
        self.start = -1
        self.dollar_word = False

    def run(self) -> CommandSplit:
        text = self.text
        escaped = double = single = back = dollar = False
        got = False  # a word is under way (argSingle / argQuoted)
        braces = 0
        i = 0
        while i < len(text):
            r = text[i]
            if braces:  # inside ${...}: kept whole for interpolation
                self._add(i, r)
                braces += 1 if text.startswith("${", i) else -1 if r == "}" else 0
                if text.startswith("${", i):
                    self._add(i + 1, "{")
                    i += 1
                i += 1
                continue
            if escaped:
                self._add(i, r)
                escaped, got = False, True
            elif r == "\\":
                if single:
                    self._add(i, r)
                else:
                    escaped = True
            elif r in " \t\r\n":
                if single or double or back or dollar:
                    self._add(i, r)
                elif got:
                    self._emit()
                    got = False
            elif r == "$" and text.startswith("${", i) and not single:
                self._add(i, "$")
                self._add(i + 1, "{")
                self.dollar_word = self.dollar_word or not double
                braces, got = 1, True
                i += 1
            elif r == "`" and not (single or double or dollar):
                back = not back
                self._add(i, r)
                got = True
            elif r == ")" and not (single or double or back):
                dollar = not dollar
                self._add(i, r)
                got = True
            elif r == "(" and not (single or double or back):
                if not dollar and self.buf and self.buf[-1] == "$":
                    dollar = True
                    self._add(i, r)
                else:
                    return self._invalid("a '(' outside quotes that does not follow '$'", i)
            elif r == '"' and not (single or dollar):
                if double:
                    got = True
                    if not self.buf:
                        self.start = i
                double = not double
            elif r == "'" and not (double or dollar):
                if single:
                    got = True
                    if not self.buf:
                        self.start = i
                single = not single
            elif r in ";&|<>" and not (single or double or back or dollar):
                if r == ">" and self.buf and self.buf[0].isdigit():
                    got = False
                if got:
                    self._emit()
                return CommandSplit(self.words, dropped=text[i:].strip())
            else:
                if r == "$" and not (single or double):
                    self.dollar_word = True  # $NAME: interpolated, then split
                self._add(i, r)
                got = True
            i += 1
        if got:
            self._emit()
        if escaped or single or double or back or dollar or braces:
            what = ("a final '\\'" if escaped else "an unclosed quote" if single or double
                    else "an unclosed '${'" if braces else
                    "an unclosed backquote" if back else "an unclosed '$(' or a stray ')'")
            return self._invalid(what, len(text) - 1)
        return CommandSplit(self.words)

    def _invalid(self, what: str, i: int) -> CommandSplit:
        where = self.lines.at(i)
        return CommandSplit(self.words, invalid=f"{what}"
                            + (f" (line {where})" if where is not None else ""))


def explained(served: ServedModel) -> ServedModel:
    """``served`` with each argument the engine refuses because of how Compose split the
    string (a ``#`` comment's words, a word that starts with the space or line break a
    ``\\`` kept) told why."""
    problems = []
    for problem in served.engine_problems:
        word = problem.option
        why = ("a '\\' at the end of the line before keeps the line break (or, in a folded "
               "block, the space) in the word" if word[:1] in (" ", "\t", "\n", "\r")
               else "a '#' is no comment in a Compose command string" if word.startswith("#")
               else "")
        if why and problem.data.get("reason") == "positional":
            problem = replace(problem, message=f"{problem.message}; Compose split the string "
                              f"with {SPLITTER}: {why} (write the command as a list, or "
                              "drop the '\\' and the comment lines)")
        problems.append(problem)
    return replace(served, engine_problems=tuple(problems)) if problems else served
