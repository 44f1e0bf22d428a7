"""Shell commands, environment expansion and engine command lines, read without running them.

- :func:`split_script` turns an ``sh -c`` script (or a YAML command string) into simple
  commands of :class:`Word` s, each with its line in the manifest;
- :class:`Env` expands Kubernetes ``$(VAR)`` references and shell parameters
  (``$VAR``, ``${VAR:-default}``, ``$((a * b))``...) from the values a manifest sets, and
  says :class:`~kvlint.manifests.base.Unresolved` for anything it does not set;
- :func:`find_engine` recognises an engine invocation and :func:`parse_engine_args` reads its
  arguments the way that engine's own parser does (option tables in :mod:`.cli_options`);
- :func:`kvlint.manifests.engine_env.engine_invocations` does all of it for a list of
  commands, following assignments.

Nothing is executed: command substitutions (``$(cmd)``, backticks) are never run, they are
reported as unresolved.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.cli_options import OPTION_TABLES
from kvlint.manifests.model_overrides import config_overrides
from kvlint.manifests.yaml_marks import LDict, LList, LStr

__all__ = [
    "EngineArgs",
    "Env",
    "OptionUse",
    "Word",
    "env_args_llamacpp",
    "env_args_tgi",
    "env_from_k8s",
    "env_from_mapping_or_list",
    "field_of_option",
    "find_engine",
    "integer_value",
    "judge_known_options_only",
    "parse_engine_args",
    "split_env_prefix",
    "split_script",
]


# --- words and scripts ---------------------------------------------------------------------


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


_SEPARATORS = frozenset(";&|\n()")
_BLANK = frozenset(" \t\r")
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


class _Lines:
    """Maps an offset in a script to its 1-based line in the manifest."""

    def __init__(self, script: str, line: int | None, style: str | None,
                 raw: str | None) -> None:
        self.script = script
        self.line = line
        self.style = style
        self.raw = raw
        self._state: tuple[int, int, int] | None = None  # (script index, raw index, line)

    def at(self, offset: int) -> int | None:
        if self.line is None:
            return None
        if self.style == "|":
            return self.line + 1 + self.script.count("\n", 0, offset)
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
    quotes; ``\\``-newline continues a line; ``#`` at the start of a word starts a comment;
    redirections (``> file``, ``2>&1``, heredocs) are dropped. Words lose their quotes as in
    ``sh`` (a single-quoted JSON document with spaces is one word); ``$(...)``, ``${...}``
    and ``$((...))`` stay inside their word, unexpanded.

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
    lines = _Lines(str(script), line, style, raw)
    return _Splitter(str(script), lines).run()


class _Splitter:
    def __init__(self, text: str, lines: _Lines) -> None:
        self.text = text
        self.lines = lines
        self.commands: list[list[Word]] = []
        self.current: list[Word] = []
        self.chars: list[str] = []
        self.start = -1
        self.live = False
        self.dead = False
        self.unquoted_dollar = False
        self.heredocs: list[tuple[str, bool]] = []

    def end_word(self) -> None:
        if self.start >= 0:
            text = "".join(self.chars)
            self.current.append(Word(text, self.lines.at(self.start),
                                     split=self.unquoted_dollar,
                                     literal=self.dead and not self.live))
        self.chars = []
        self.start = -1
        self.live = self.dead = self.unquoted_dollar = False

    def end_command(self) -> None:
        self.end_word()
        if self.current:
            self.commands.append(self.current)
        self.current = []

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
                if i + 1 < n and text[i + 1] == "\n":
                    i += 2
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
            if c in "<>" or (c == "&" and i + 1 < n and text[i + 1] == ">"):
                i = self._redirect(i)
                continue
            if c in _SEPARATORS:
                self.end_command()
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
        if self.start >= 0 and "".join(self.chars).isdigit():  # 2>file: the fd number
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
                self.heredocs.append((delimiter, strip))
            return m
        if op.endswith("&") and j < n and (text[j].isdigit() or text[j] == "-"):
            while j < n and (text[j].isdigit() or text[j] == "-"):
                j += 1
            return j
        while j < n and text[j] in " \t":
            j += 1
        # the target word (quotes allowed)
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
        return j

    def _skip_heredocs(self, i: int) -> int:
        text = self.text
        for delimiter, strip in self.heredocs:
            while i < len(text):
                j = text.find("\n", i)
                j = len(text) if j < 0 else j
                body = text[i:j].lstrip("\t") if strip else text[i:j]
                i = j + 1
                if body == delimiter:
                    break
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


# --- environment ---------------------------------------------------------------------------


class _Unset(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_K8S_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
_SPECIAL = frozenset("@*#?$!-0123456789")
_ARITH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_ARITH = 10**18
_MAX_ARITH_TOKENS = 256
"""Numbers, operators and parentheses in one ``$((...))``: real manifests use a handful
(``$((GPUS * 2))``); the bound keeps the parse and the tree walk shallow."""
_ARITH_TOKEN = re.compile(r"\d+|[^\s\d]")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Env:
    """The environment a command runs in, as far as the manifest says.

    ``values``: variables the manifest sets (container env, compose ``environment``, a
    command's ``KEY=VALUE`` prefix...); ``None`` marks one that exists but whose value the
    manifest does not hold (``valueFrom``, a secret, a bare ``KEY``). ``platform``: variables
    the platform injects (``LWS_GROUP_SIZE``, ``SKYPILOT_NUM_GPUS_PER_NODE``,
    ``DSTACK_GPUS_NUM``...), looked up after ``values``. ``k8s``: whether ``$(VAR)`` is a
    Kubernetes reference when :meth:`expand` is not told (command substitution otherwise).
    Values may be :class:`~kvlint.manifests.yaml_marks.LStr` s, whose line
    :meth:`line_of` reports.
    """

    def __init__(self, values: Mapping[str, str | None],
                 platform: Mapping[str, str] | None = None, *, k8s: bool = True,
                 reasons: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, str | None] = dict(values)
        self.platform: dict[str, str] = dict(platform or {})
        self.k8s = k8s
        self.reasons: dict[str, str] = dict(reasons or {})

    def __repr__(self) -> str:
        return f"Env({self.values!r}, platform={self.platform!r}, k8s={self.k8s})"

    def with_values(self, values: Mapping[str, str | None],
                    reasons: Mapping[str, str] | None = None) -> Env:
        """A copy with ``values`` set on top (already expanded: no expansion here)."""
        merged = {**self.values, **values}
        why = {k: v for k, v in self.reasons.items() if k not in values}
        why.update(reasons or {})
        return Env(merged, self.platform, k8s=self.k8s, reasons=why)

    def assign(self, values: Mapping[str, str], *, k8s: bool | None = None) -> Env:
        """A copy with shell assignments applied: each value is expanded in this
        environment first (``NUM_SHARD=$DSTACK_GPUS_NUM``); an unresolvable one becomes a
        variable without a value, with the reason kept."""
        out: dict[str, str | None] = {}
        reasons: dict[str, str] = {}
        for name, raw in values.items():
            value = self.expand(raw, k8s=k8s)
            if isinstance(value, Unresolved):
                out[name] = None
                reasons[name] = value.reason
            else:
                line = getattr(raw, "line", 0)
                out[name] = LStr(value, line) if line else value
        return self.with_values(out, reasons)

    def lookup(self, name: str) -> str | None:
        """The value of ``name``; ``None`` when it is unset. Raises for a variable that is
        set but whose value the manifest does not hold."""
        if name in self.values:
            value = self.values[name]
            if value is None:
                raise _Unset(self.reasons.get(name)
                             or f"${name} has no value in the manifest (set at deploy time)")
            return value
        return self.platform.get(name)

    def line_of(self, name: str) -> int | None:
        """The manifest line of ``name``'s value, when known."""
        value = self.values.get(name, self.platform.get(name))
        line = getattr(value, "line", None)
        return line if isinstance(line, int) and line > 0 else None

    def get(self, name: str) -> str | Unresolved | None:
        """``name``'s value, an :class:`Unresolved` when it has none in the manifest, or
        ``None`` when it is not set at all."""
        try:
            return self.lookup(name)
        except _Unset as unset:
            return Unresolved(reason=unset.reason, line=self.line_of(name), text=f"${name}")

    def expand(self, text: str, *, k8s: bool | None = None) -> str | Unresolved:
        """``text`` with its variables replaced, or :class:`Unresolved` when any of them
        cannot be resolved from the manifest.

        ``k8s=True`` first replaces Kubernetes ``$(VAR)`` references (``$$`` escapes a
        ``$``; an undefined ``$(VAR)`` would stay literal in the container, so it is
        unresolved). Then shell parameters: ``$VAR``, ``${VAR}``, ``${VAR-default}``,
        ``${VAR:-default}``, ``${VAR=default}``, ``${VAR+alt}``, ``${VAR:+alt}``,
        ``${#VAR}`` and ``$((expr))`` over integers (``+ - * / %`` and parentheses, parsed,
        never evaluated as code). Command substitution and special parameters (``$@``,
        ``$1``...) are unresolved.
        """
        use_k8s = self.k8s if k8s is None else k8s
        try:
            text_k8s = self._k8s(text) if use_k8s and "$" in text else text
            if "$" not in text_k8s and "`" not in text_k8s:
                return text_k8s.replace("\x00", "$")
            return self._shell(text_k8s, 0)
        except _Unset as unset:
            return Unresolved(reason=unset.reason, text=str(text))

    def _k8s(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$$"  # kept for the shell pass, which reads it as an escaped $
            name = match.group(1)
            value = self.lookup(name)
            if value is None:
                raise _Unset(f"$({name}) is not set in the manifest (Kubernetes leaves an "
                             "undefined $(VAR) as it is)")
            return value.replace("$", "\x00")  # substituted text is not expanded again

        return _K8S_REF.sub(replace, text).replace("$$", "\x00")

    def _shell(self, text: str, depth: int) -> str:
        if depth > 20:
            raise _Unset("expansion nested too deeply")
        out: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c == "`":
                raise _Unset(f"command substitution {text[i:]!r} is not evaluated")
            if c != "$" or i + 1 >= n:
                out.append(c)
                i += 1
                continue
            nxt = text[i + 1]
            if text.startswith("$((", i):
                end = _matching(text, i + 3, "(", ")")
                if end + 1 >= n or text[end + 1] != ")":
                    raise _Unset(f"command substitution {text[i:end + 1]!r} is not evaluated")
                out.append(str(self._arith(text[i + 3:end], depth)))
                i = end + 2
            elif nxt == "(":
                end = _matching(text, i + 2, "(", ")")
                raise _Unset(f"command substitution {text[i:end + 1]} is not evaluated")
            elif nxt == "{":
                end = _matching(text, i + 2, "{", "}")
                out.append(self._parameter(text[i + 2:end], depth))
                i = end + 1
            elif nxt == "_" or nxt.isalpha():
                match = _NAME.match(text, i + 1)
                assert match is not None
                name = match.group(0)
                value = self.lookup(name)
                if value is None:
                    raise _Unset(f"${name} is not set in the manifest")
                out.append(value)
                i = match.end()
            elif nxt in _SPECIAL:
                raise _Unset(f"${nxt} is a shell parameter set when the container runs")
            else:
                out.append(c)
                i += 1
        return "".join(out).replace("\x00", "$")

    def _parameter(self, body: str, depth: int) -> str:
        if body.startswith("#") and _NAME.fullmatch(body[1:]):
            value = self.lookup(body[1:])
            if value is None:
                raise _Unset(f"${body[1:]} is not set in the manifest")
            return str(len(value))
        match = _NAME.match(body)
        if match is None:
            if body[:1] in _SPECIAL:
                raise _Unset(f"${{{body}}} is a shell parameter set when the container runs")
            raise _Unset(f"${{{body}}} is not a variable kvlint can expand")
        name = match.group(0)
        rest = body[match.end():]
        if not rest:
            value = self.lookup(name)
            if value is None:
                raise _Unset(f"${name} is not set in the manifest")
            return value
        colon = rest.startswith(":")
        op = rest[1:2] if colon else rest[:1]
        word = rest[2:] if colon else rest[1:]
        if op not in ("-", "=", "+", "?"):
            raise _Unset(f"${{{body}}} is an expansion kvlint does not evaluate")
        value = self.lookup(name)
        missing = value is None or (colon and value == "")
        if op in ("-", "="):
            return self._shell(word, depth + 1) if missing else str(value)
        if op == "+":
            return "" if missing else self._shell(word, depth + 1)
        if missing:
            raise _Unset(f"${name} is not set in the manifest")
        return str(value)

    def _arith(self, expr: str, depth: int) -> int:
        expanded = self._shell(expr, depth + 1) if "$" in expr else expr

        def name(match: re.Match[str]) -> str:
            value = self.lookup(match.group(0))
            if value is None:
                raise _Unset(f"${match.group(0)} is not set in the manifest")
            value = value.strip()
            if not re.fullmatch(r"[-+]?\d+", value):
                raise _Unset(f"${match.group(0)} = {value!r} is not an integer")
            return f"({value})"

        numeric = _ARITH_NAME.sub(name, expanded)
        if re.search(r"(?<![\w.])0\d", numeric):
            raise _Unset(f"$(({expr})) uses an octal number")
        return _evaluate(numeric, expr)


def _evaluate(numeric: str, expr: str) -> int:
    """Integer arithmetic as ``sh`` does it, over a parsed tree that admits only numbers,
    ``+ - * / %``, unary signs and parentheses (at most ``_MAX_ARITH_TOKENS`` of them)."""
    tokens = itertools.islice(_ARITH_TOKEN.finditer(numeric), _MAX_ARITH_TOKENS + 1)
    if sum(1 for _ in tokens) > _MAX_ARITH_TOKENS:
        raise _Unset(f"$(({_short(expr)})) is too long for kvlint to evaluate "
                     f"(over {_MAX_ARITH_TOKENS} terms)")
    try:
        tree = ast.parse(numeric.strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise _Unset(f"$(({_short(expr)})) is not arithmetic kvlint can evaluate") from None

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and isinstance(
                node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod)):
            left = walk(node.left)
            right = walk(node.right)
            if isinstance(node.op, ast.Add):
                result = left + right
            elif isinstance(node.op, ast.Sub):
                result = left - right
            elif isinstance(node.op, ast.Mult):
                result = left * right
            else:
                if right == 0:
                    raise _Unset(f"$(({expr})) divides by zero")
                quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)
                result = quotient if isinstance(node.op, ast.Div) else left - right * quotient
            if abs(result) > _MAX_ARITH:
                raise _Unset(f"$(({expr})) overflows")
            return result
        raise _Unset(f"$(({expr})) is not arithmetic kvlint can evaluate")

    return walk(tree)


def _short(expr: str) -> str:
    """An expression for a message: its first 40 characters."""
    return expr if len(expr) <= 40 else f"{expr[:37]}..."


def _env_value(value: object, line: int | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, LStr):
        return value
    if isinstance(value, (dict, list)):
        return None
    return LStr(_text(value), line or 0)


def env_from_k8s(items: Any) -> dict[str, str | None]:
    """A Kubernetes container ``env:`` list as values: ``value`` (strings as written,
    numbers as text, ``$(VAR)`` of earlier entries expanded as Kubernetes does);
    ``valueFrom`` and entries without a value are ``None`` (known, value not in the
    manifest). Values keep their line."""
    out: dict[str, str | None] = {}
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = str(item["name"])
        if "valueFrom" in item and "value" not in item:
            out[name] = None
            continue
        line = item.value_lines.get("value", (0, 0))[0] if isinstance(item, LDict) else None
        value = _env_value(item.get("value", ""), line)
        if value is not None and "$(" in value:
            expanded = _k8s_dependent(value, out)
            value = None if expanded is None else LStr(expanded, getattr(value, "line", 0))
        out[name] = value
    return out


def _k8s_dependent(value: str, earlier: Mapping[str, str | None]) -> str | None:
    """``$(VAR)`` of earlier entries expanded; ``None`` when one of them has no value in
    the manifest (``valueFrom``); an undefined one stays literal, as in Kubernetes."""
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        if name in earlier and earlier[name] is None:
            unknown = True
        found = earlier.get(name)
        return match.group(0) if found is None else found

    expanded = _K8S_REF.sub(replace, value)
    return None if unknown else expanded


def env_from_mapping_or_list(obj: Any) -> dict[str, str | None]:
    """A compose ``environment:``, SkyPilot ``envs:`` or dstack ``env:`` block as values:
    a mapping (``KEY: value``; a null value is ``None``) or a list of ``KEY=VALUE`` (a bare
    ``KEY`` is ``None``: passed through from outside the manifest). Values keep their
    line."""
    out: dict[str, str | None] = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            line = obj.value_lines.get(key, (0, 0))[0] if isinstance(obj, LDict) else None
            out[str(key)] = _env_value(value, line)
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            if not isinstance(item, str):
                continue
            line = obj.item_lines[index][0] if isinstance(obj, LList) else 0
            key, eq, value = item.partition("=")
            key = key.strip()
            if key:
                out[key] = LStr(value, line) if eq else None
    return out


# --- engines -------------------------------------------------------------------------------

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "-c"})
_MODULES = {
    "vllm.entrypoints.openai.api_server": "vllm",
    "vllm.entrypoints.api_server": "vllm",
    "dynamo.vllm": "vllm",
    "sglang.launch_server": "sglang",
    "dynamo.sglang": "sglang",
    "dynamo.trtllm": "trtllm",
    "sglang_router.launch_server": "sglang",  # the router and SGLang servers, one command
}
_WRAPPER_MODULES = frozenset({"dynamo.vllm", "dynamo.sglang", "dynamo.trtllm",
                              "sglang_router.launch_server"})
"""Modules that parse the engine's options and their own (Dynamo's, the router's): options
the engine does not know are theirs, not reported."""
_NOT_COMMANDS = frozenset({"echo", "printf", "pip", "pip3", "uv", "apt-get", "apt", "conda",
                           "grep", "which", "test", "[", "[[", "cat", "ls"})
_TRTLLM_OTHER = frozenset({"disaggregated", "disaggregated_mpi_worker", "mm_embedding_serve",
                           "grpc", "--help", "-h"})


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def find_engine(words: Sequence[str]) -> tuple[str, int] | None:
    """The engine a command launches and the index of its first argument, or ``None``.

    Recognises ``vllm serve``, ``sglang serve``, ``python[3] -m`` with
    ``vllm.entrypoints.openai.api_server`` / ``dynamo.vllm`` / ``sglang.launch_server`` /
    ``dynamo.sglang`` / ``dynamo.trtllm`` / ``sglang_router.launch_server`` /
    ``lmdeploy serve api_server``, ``text-generation-launcher``, ``trtllm-serve [serve]``,
    ``lmdeploy serve api_server`` and ``llama-server`` (any path prefix; after ``uv run``).
    Other servers (``text-embeddings-router``, ``trtllm-serve disaggregated``,
    ``python -m dynamo.frontend``) are ``None``.
    """
    found = _find_engine(words)
    return None if found is None else (found[0], found[2])


def _find_engine(words: Sequence[str]) -> tuple[str, int, int] | None:
    """``(engine, index of the program word, index of the first argument)``."""
    if not words or (_base(words[0]) in _NOT_COMMANDS and list(words[:2]) != ["uv", "run"]):
        return None  # `uv pip install vllm` installs; `uv run vllm serve` runs it
    n = len(words)
    for i, word in enumerate(words):
        base = _base(word)
        nxt = words[i + 1] if i + 1 < n else None
        if base == "vllm" and nxt == "serve":
            return "vllm", i, i + 2
        if base == "sglang" and nxt == "serve":
            return "sglang", i, i + 2
        if base == "text-generation-launcher":
            return "tgi", i, i + 1
        if base == "llama-server":
            return "llamacpp", i, i + 1
        if base == "trtllm-serve":
            if nxt == "serve":
                return "trtllm", i, i + 2
            if nxt in _TRTLLM_OTHER:
                return None
            return "trtllm", i, i + 1
        if base == "lmdeploy" and list(words[i + 1:i + 3]) == ["serve", "api_server"]:
            return "lmdeploy", i, i + 3
        if _PYTHON.fullmatch(base):
            module = _python_module(words, i + 1)
            if module is not None:
                return module[0], i, module[1]
    return None


def _python_module(words: Sequence[str], j: int) -> tuple[str, int] | None:
    n = len(words)
    while j < n and words[j].startswith("-") and words[j] != "-m" and not (
            words[j].startswith("-m") and len(words[j]) > 2):
        j += 2 if words[j] in _PYTHON_VALUE_OPTIONS else 1
    if j >= n:
        return None
    if words[j] == "-m" and j + 1 < n:
        module, after = words[j + 1], j + 2
    elif words[j].startswith("-m") and len(words[j]) > 2:
        module, after = words[j][2:], j + 1
    else:
        return None
    if module in _MODULES:
        return _MODULES[module], after
    if module == "lmdeploy" and list(words[after:after + 2]) == ["serve", "api_server"]:
        return "lmdeploy", after + 2
    return None


@dataclass(frozen=True)
class EngineArgs:
    """What an engine command line sets. ``None``: not given (the engine's default);
    :class:`Unresolved`: given, but the manifest does not determine the value.

    ``unknown`` holds options the engine's parser would not recognise (or that are
    ambiguous abbreviations) and words kvlint could not place; ``options`` every recognised
    option by its canonical spelling; ``notes`` what a reader should know (an abbreviation
    expanded, a legacy variable read...).
    """

    engine: str
    model: Located[str] | Unresolved | None = None
    served_name: Located[str] | Unresolved | None = None
    tp: Located[int] | Unresolved | None = None
    pp: Located[int] | Unresolved | None = None
    dp: Located[int] | Unresolved | None = None
    dp_attention: Located[bool] | None = None
    ep: Located[int] | Unresolved | None = None
    kv_cache_dtype: Located[str] | Unresolved | None = None
    max_model_len: Located[int] | Unresolved | None = None
    max_num_seqs: Located[int] | Unresolved | None = None
    max_num_batched_tokens: Located[int] | Unresolved | None = None
    """vLLM ``--max-num-batched-tokens``: the size of its start-up profile run."""
    kv_cache_memory_bytes: Located[int] | Unresolved | None = None
    """vLLM ``--kv-cache-memory-bytes``: the KV cache's bytes per GPU, set by hand."""
    extensible_kv_cache: Located[bool] | Unresolved | None = None
    """vLLM ``--[no-]enable-extensible-kv-cache`` (0.34.0)."""
    kv_tokens_cap: Located[int] | Unresolved | None = None
    """SGLang ``--max-total-tokens``: the most tokens its KV pool holds."""
    gpu_memory_utilization: Located[float] | Unresolved | None = None
    config_file: Located[str] | Unresolved | None = None
    unknown: tuple[str, ...] = ()
    expert_parallel: Located[bool] | None = None
    """vLLM ``--enable-expert-parallel``, SGLang ``--enable-ep-moe`` (the EP size follows
    from tp x dp)."""
    dp_local: Located[int] | Unresolved | None = None
    """vLLM ``--data-parallel-size-local``: DP ranks on this node."""
    nnodes: Located[int] | Unresolved | None = None
    """SGLang / LMDeploy ``--nnodes``."""
    dtype: Located[str] | Unresolved | None = None
    quantization: Located[str] | Unresolved | None = None
    """vLLM/SGLang ``--quantization``, TGI ``--quantize`` / ``QUANTIZE``, LMDeploy
    ``--model-format``: the weight format the engine loads (or converts) the checkpoint to."""
    node_rank: Located[int] | Unresolved | None = None
    """SGLang ``--node-rank``: which node of an ``--nnodes`` server this command starts (only
    node 0 serves requests)."""
    config_overrides: Located[str] | Unresolved | None = None
    """Model-config fields the command overrides (vLLM ``--hf-overrides``, ``--rope-scaling``,
    ``--rope-theta``; SGLang ``--json-model-override-args``), as canonical JSON text
    (:mod:`.model_overrides`)."""
    notes: tuple[str, ...] = ()
    options: Mapping[str, Located[Any] | Unresolved] = field(
        default_factory=dict, compare=False, hash=False, repr=False)
    env: Mapping[str, Located[str] | Unresolved] = field(
        default_factory=dict, compare=False, hash=False, repr=False)
    """Variables of the process's environment that change what the engine accepts
    (``manifests.engine_env``)."""
    uses: tuple[OptionUse, ...] = field(default=(), compare=False, hash=False, repr=False)
    """Every option word of the command line, in order, as the engine's parser meets it
    (judged against the engine version by :mod:`.engine_options`: KV701/KV702)."""


@dataclass(frozen=True)
class OptionUse:
    """One option as written on an engine command line.

    ``canonical`` is the option it resolves to in the union of the option tables (``None``:
    unknown, ambiguous or refused spelling; ``reason`` says which); ``values`` the words it
    took (``None`` for a value kvlint cannot expand); ``inline`` whether the value was given
    as ``--flag=value``; ``kind`` the option's arity (``value``, ``flag``, ``many``...)."""

    name: str
    canonical: str | None
    kind: str
    values: tuple[str | None, ...]
    line: int | None
    column: int | None
    inline: bool = False
    reason: str = ""
    source: str = ""
    """Where the value came from when not the command line (``env NUM_SHARD``)."""
    value_line: int | None = None
    """The last line of the option's value words when below the option's own line (a flag
    and its value on separate lines): the end of the finding's span, for suppressions."""
    written: str = ""
    """The first value as written when an expansion gave it (``${KV_CACHE_MEMORY_BYTES-}``);
    empty when it was written as it is."""


@dataclass(frozen=True)
class _Grammar:
    kinds: Mapping[str, str]
    longs: tuple[str, ...]
    underscores: bool
    abbrev: bool
    positional_model: bool


_GRAMMAR_RULES = {
    # engine: (underscore→dash, argparse unique prefixes, positional model)
    "vllm": (True, True, True),
    "sglang": (False, True, False),
    "lmdeploy": (False, True, True),
    "trtllm": (False, False, True),
    "tgi": (False, False, False),
    "llamacpp": (True, False, False),  # common/arg.cpp: '_' -> '-' in "--" arguments
}

_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "model": ("--model",), "served_name": ("--served-model-name",),
        "tp": ("--tensor-parallel-size", "-tp"), "pp": ("--pipeline-parallel-size", "-pp"),
        "dp": ("--data-parallel-size", "-dp"), "dp_local": ("--data-parallel-size-local",
                                                          "-dpl"),
        "expert_parallel": ("--enable-expert-parallel", "-ep"),
        "kv_cache_dtype": ("--kv-cache-dtype",), "max_model_len": ("--max-model-len",),
        "max_num_seqs": ("--max-num-seqs",),
        "max_num_batched_tokens": ("--max-num-batched-tokens",),
        "kv_cache_memory_bytes": ("--kv-cache-memory-bytes",),
        "extensible_kv_cache": ("--enable-extensible-kv-cache",),
        "gpu_memory_utilization": ("--gpu-memory-utilization",), "config_file": ("--config",),
        "dtype": ("--dtype",), "quantization": ("--quantization", "-q"),
    },
    "sglang": {
        "model": ("--model-path", "--model"), "served_name": ("--served-model-name",),
        "tp": ("--tp-size", "--tensor-parallel-size"),
        "pp": ("--pp-size", "--pipeline-parallel-size"),
        "dp": ("--dp-size", "--data-parallel-size"),
        "attn_dp": ("--attn-dp-size", "--attention-data-parallel-size"),
        "dp_attention": ("--enable-dp-attention",),
        "ep": ("--ep-size", "--expert-parallel-size"),
        "expert_parallel": ("--enable-ep-moe", "--enable-deepep-moe"),
        "kv_cache_dtype": ("--kv-cache-dtype",), "max_model_len": ("--context-length",),
        "max_num_seqs": ("--max-running-requests",),
        "gpu_memory_utilization": ("--mem-fraction-static",), "config_file": ("--config",),
        "nnodes": ("--nnodes",), "dtype": ("--dtype",),
        "kv_tokens_cap": ("--max-total-tokens",), "quantization": ("--quantization",),
        "node_rank": ("--node-rank",),
    },
    "trtllm": {
        "model": ("--model-path", "--model"), "served_name": ("--served-model-name",),
        "tp": ("--tensor_parallel_size", "--tp_size", "--tensor-parallel-size"),
        "pp": ("--pipeline_parallel_size", "--pp_size", "--pipeline-parallel-size"),
        "ep": ("--moe_expert_parallel_size", "--ep_size", "--expert-parallel-size"),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_model_len": ("--max_seq_len", "--max-seq-len"),
        "max_num_seqs": ("--max_batch_size", "--max-batch-size"),
        "gpu_memory_utilization": ("--free_gpu_memory_fraction",
                                   "--kv_cache_free_gpu_memory_fraction",
                                   "--free-gpu-memory-fraction"),
        "config_file": ("--config", "--extra_llm_api_options", "--extra-engine-args"),
    },
    "tgi": {
        "model": ("--model-id",), "served_name": ("--served-model-name",),
        "tp": ("--num-shard",), "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_model_len": ("--max-total-tokens",),
        "max_num_seqs": ("--max-batch-size", "--max-concurrent-requests"),
        "gpu_memory_utilization": ("--cuda-memory-fraction",), "dtype": ("--dtype",),
        "quantization": ("--quantize",),
    },
    "lmdeploy": {
        "served_name": ("--model-name",), "tp": ("--tp",), "dp": ("--dp",), "ep": ("--ep",),
        "kv_cache_dtype": ("--quant-policy",), "max_model_len": ("--session-len",),
        "max_num_seqs": ("--max-batch-size",),
        "gpu_memory_utilization": ("--cache-max-entry-count",), "nnodes": ("--nnodes",),
        "dtype": ("--dtype",), "quantization": ("--model-format",),
    },
    "llamacpp": {
        "model": ("-hf", "-hfr", "--hf-repo", "-m", "--model"),
        "served_name": ("-a", "--alias"), "kv_cache_dtype": ("-ctk", "--cache-type-k"),
        "max_model_len": ("-c", "--ctx-size"), "max_num_seqs": ("-np", "--parallel"),
    },
}

_INT_FIELDS = frozenset({"tp", "pp", "dp", "dp_local", "ep", "max_num_seqs", "max_model_len",
                         "max_num_batched_tokens", "kv_cache_memory_bytes", "kv_tokens_cap",
                         "nnodes", "attn_dp", "node_rank"})
_BOOL_FIELDS = frozenset({"dp_attention", "expert_parallel", "extensible_kv_cache"})
_LMDEPLOY_QUANT_POLICY = {"0": "auto", "none": "auto", "4": "int4", "int4": "int4",
                          "8": "int8", "int8": "int8", "16": "fp8", "fp8": "fp8",
                          "17": "fp8_e5m2", "fp8_e5m2": "fp8_e5m2", "42": "turbo_quant",
                          "turbo_quant": "turbo_quant", "fp8_e4m3": "fp8"}
"""lmdeploy/cli/utils.py@1263d5cd ``--quant-policy`` choices (numbers and names; ``fp8_e4m3``
is an alias of ``fp8`` in the lmdeploy 0.18.0 wheel's ``ArgumentHelper.quant_policy``)."""


@cache
def _grammar(engine: str) -> _Grammar:
    kinds: dict[str, str] = {}
    for kind, names in OPTION_TABLES.get(engine, {}).items():
        for name in names.split():
            kinds[name] = "flag" if kind == "negatable" else kind
            if kind == "negatable" and name.startswith("--"):
                kinds["--no-" + name[2:]] = "flag"
    for fields in _FIELDS.get(engine, {}).values():
        for name in fields:
            kinds.setdefault(name, "value")
    underscores, abbrev, positional = _GRAMMAR_RULES.get(engine, (False, False, False))
    for name, kind in _table_spellings(engine).items():
        # engines.toml spellings are always recognised, unless argparse reaches them as
        # an abbreviation anyway (SGLang's --tp is a prefix of --tp-size, not an alias)
        if name not in kinds and not (abbrev and any(k.startswith(name) for k in kinds)):
            kinds[name] = kind
    longs = tuple(sorted(k for k in kinds if k.startswith("--")))
    return _Grammar(kinds, longs, underscores, abbrev, positional)


_TABLE_FIELDS = {"model": "model", "tp": "tp", "pp": "pp", "dp": "dp",
                 "kv_cache_dtype": "kv_cache_dtype", "max_model_len": "max_model_len",
                 "max_num_seqs": "max_num_seqs",
                 "gpu_memory_utilization": "gpu_memory_utilization", "config": "config_file"}


@cache
def _table_spellings(engine: str) -> dict[str, str]:
    """Option spellings of ``engines.toml`` ``[engines.X.flags]`` (kind by key)."""
    try:
        from kvlint.engines import load_engines

        spec = load_engines().get(engine)
    except Exception:  # pragma: no cover - the table is optional here
        return {}
    out: dict[str, str] = {}
    if spec is not None:
        for key, spellings in spec.flags.items():
            for name in spellings:
                if name.startswith("-"):
                    flag = key == "dp_attention" and engine == "sglang" and "size" not in name
                    out[name] = "flag" if flag else "value"
    return out


@cache
def _field_options(engine: str) -> dict[str, tuple[str, ...]]:
    """Semantic field → option spellings: kvlint's list, plus engines.toml's."""
    fields = {k: tuple(v) for k, v in _FIELDS.get(engine, {}).items()}
    grammar = _grammar(engine)
    try:
        from kvlint.engines import load_engines

        spec = load_engines().get(engine)
    except Exception:  # pragma: no cover
        spec = None
    if spec is not None:
        for key, target in _TABLE_FIELDS.items():
            for name in spec.flags.get(key, ()):
                if name in grammar.kinds and name not in fields.get(target, ()):
                    fields[target] = (*fields.get(target, ()), name)
    return fields


def _resolve_option(grammar: _Grammar, name: str) -> tuple[str | None, str, str]:
    """``(canonical, kind, note)``: ``canonical`` is ``None`` for an unknown or ambiguous
    option (``note`` says which)."""
    lookup = name
    if grammar.underscores and name.startswith("--"):
        head, dot, tail = name[2:].partition(".")
        lookup = "--" + head.replace("_", "-") + dot + tail
    base = lookup.split(".", 1)[0] if lookup.startswith("--") else lookup
    kind = grammar.kinds.get(base)
    if kind is not None:
        if base != lookup:
            return base, "value", ""  # --compilation-config.level 3: a JSON field
        return base, kind, ""
    if grammar.abbrev and base.startswith("--") and len(base) > 2:
        at = bisect.bisect_left(grammar.longs, base)
        matches = []
        while at < len(grammar.longs) and grammar.longs[at].startswith(base):
            matches.append(grammar.longs[at])
            at += 1
        if len(matches) == 1:
            full = matches[0]
            return full, grammar.kinds[full] if base == lookup else "value", (
                f"{name} is an abbreviation of {full} (argparse accepts unique prefixes)")
        if len(matches) > 1:
            shown = ", ".join(matches[:4]) + (", ..." if len(matches) > 4 else "")
            return None, "value", (f"{name} is an ambiguous abbreviation ({shown}); the "
                                   "engine refuses it")
    if grammar.underscores is False and name.startswith("--") and "_" in name:
        dashed = name.replace("_", "-")
        if dashed in grammar.kinds:
            return None, grammar.kinds[dashed], (
                f"{name}: this engine does not accept underscores for {dashed}")
    return None, "value", ""


@dataclass
class _Token:
    text: str | None
    unresolved: Unresolved | None
    line: int | None
    raw: str
    column: int | None = None


def _expand_words(words: Sequence[Word], env: Env) -> list[_Token]:
    tokens: list[_Token] = []
    for word in words:
        if word.literal or ("$" not in word.text and "`" not in word.text):
            tokens.append(_Token(word.text, None, word.line, word.text, word.column))
            continue
        value = env.expand(word.text)
        if isinstance(value, Unresolved):
            tokens.append(_Token(None, Unresolved(reason=value.reason, line=word.line,
                                                  text=word.text), word.line, word.text,
                                 word.column))
        elif word.split:
            tokens.extend(_Token(part, None, word.line, word.text) for part in value.split())
        else:
            tokens.append(_Token(value, None, word.line, word.text, word.column))
    return tokens


def _is_option(token: _Token) -> bool:
    text = token.text
    return (text is not None and text.startswith("-") and text != "-"
            and not re.fullmatch(r"-\d+(\.\d+)?", text))


@dataclass
class _Parsed:
    values: dict[str, tuple[str, list[_Token], str]] = field(default_factory=dict)
    """canonical option → (spelling used, value tokens, note) of its last occurrence."""
    positionals: list[_Token] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    order: dict[str, int] = field(default_factory=dict)
    """canonical option → position of its last occurrence (aliases: the last one wins)."""
    uses: list[OptionUse] = field(default_factory=list)

    def record(self, name: str, canonical: str | None, kind: str, note: str,
               values: list[_Token], token: _Token, *, inline: bool) -> None:
        reason = "" if canonical is not None else (
            "ambiguous" if "ambiguous" in note else
            "underscore" if "underscores" in note else "unknown")
        below = [v.line for v in values if v.line is not None and token.line is not None
                 and v.line > token.line]
        written = values[0].raw if values and "$" in values[0].raw else ""
        self.uses.append(OptionUse(name, canonical, kind, tuple(v.text for v in values),
                                   token.line, token.column, inline, reason,
                                   value_line=max(below) if below else None,
                                   written=written))
        if canonical is None:
            self.unknown.append(name)
            return
        self.values[canonical] = (name, values, note)
        self.order[canonical] = len(self.uses)


_TAKES_ANY_VALUE = frozenset({"trtllm", "llamacpp"})
"""click (``trtllm-serve``) and llama.cpp (``common/arg.cpp``: ``argv[++i]``) take the word
after a value-taking option as its value even when it starts with ``-``."""


def _scan(engine: str, tokens: list[_Token]) -> _Parsed:
    grammar = _grammar(engine)
    out = _Parsed()
    i = 0
    n = len(tokens)
    while i < n:
        token = tokens[i]
        i += 1
        if token.text is None:
            raw_name, raw_eq, _ = token.raw.partition("=")
            if raw_eq and raw_name.startswith("-") and "$" not in raw_name:
                canonical, kind, note = _resolve_option(grammar, raw_name)
                if note:
                    out.notes.append(note)
                out.record(raw_name, canonical, kind, note, [token], token, inline=True)
                continue
            out.positionals.append(token)
            continue
        if token.text == "--":
            out.positionals.extend(tokens[i:])
            break
        if not _is_option(token):
            out.positionals.append(token)
            continue
        text = token.text
        name, eq, inline = text.partition("=")
        if engine == "llamacpp" and eq:
            # llama.cpp looks the whole word up: --ctx-size=4096 is no option of its
            out.record(text, None, "flag", "", [], token, inline=True)
            out.uses[-1] = replace(out.uses[-1], reason="inline")
            continue
        if engine == "vllm" and re.fullmatch(r"-O\d", text):
            out.record(text, "--optimization-level", "value", "",
                       [_Token(text[2:], None, token.line, text)], token, inline=True)
            continue
        canonical, kind, note = _resolve_option(grammar, name)
        if note:
            out.notes.append(note)
        values: list[_Token] = []
        if eq:
            raw_value = token.raw.partition("=")[2] if "=" in token.raw else inline
            values = [_Token(inline, None, token.line, raw_value)]
        elif kind == "value":
            # argparse and clap refuse an option-like word as the value ("expected one
            # argument"); click and llama.cpp take the next word whatever it is
            if i < n and (not _is_option(tokens[i]) or engine in _TAKES_ANY_VALUE):
                values = [tokens[i]]
                i += 1
        elif kind == "optional":
            if i < n and not _is_option(tokens[i]) and (
                    engine != "llamacpp" or (tokens[i].text or "").lower() in (
                        "on", "off", "auto", "true", "false", "1", "0")):
                values = [tokens[i]]
                i += 1
        elif kind == "many":
            while i < n and not _is_option(tokens[i]):
                values.append(tokens[i])
                i += 1
        out.record(name, canonical, kind, note, values, token, inline=bool(eq))
    return out


def _source(spelling: str, tokens: list[_Token]) -> str:
    raw = " ".join(t.raw for t in tokens if "$" in t.raw or "`" in t.raw)
    return f"{spelling} {raw}" if raw else spelling


def _convert(engine: str, key: str, spelling: str, canonical: str, values: list[_Token],
             line: int | None) -> Located[Any] | Unresolved | None:
    source = _source(spelling, values)
    if key in _BOOL_FIELDS:
        negated = canonical.startswith("--no-")
        if values:
            text = (values[0].text or "").strip().lower()
            if values[0].unresolved is not None:
                return values[0].unresolved
            flag = text in ("1", "true", "yes", "on", "")
            return Located(flag and not negated, line, source=source)
        return Located(not negated, line, source=source)
    if not values:
        return Unresolved(reason=f"{spelling} is given without a value", line=line,
                          text=spelling)
    first = values[0]
    if first.unresolved is not None:
        return Unresolved(reason=first.unresolved.reason, line=line, text=first.raw)
    text = (first.text or "").strip()
    if key in _INT_FIELDS:
        number = _integer(engine, key, text)
        if number is None:
            return Unresolved(reason=f"{spelling} {text!r} is not an integer the engine "
                              "accepts", line=line, text=text)
        if number < 0 and key == "max_model_len":
            return None  # -1 / auto: the engine derives it
        return Located(number, line, source=source)
    if key == "gpu_memory_utilization":
        try:
            return Located(float(text), line, source=source)
        except ValueError:
            return Unresolved(reason=f"{spelling} {text!r} is not a number", line=line,
                              text=text)
    if key == "kv_cache_dtype" and engine == "lmdeploy":
        mapped = _LMDEPLOY_QUANT_POLICY.get(text.lower())
        if mapped is None:
            return Unresolved(reason=f"--quant-policy {text!r} is not a policy LMDeploy "
                              "knows", line=line, text=text)
        return Located(mapped, line, source=source)
    if key == "served_name" and len(values) > 1:
        return Located(text, line, source=source)
    return Located(text, line, source=source)


def field_of_option(engine: str) -> dict[str, str]:
    """Option spelling → the :class:`EngineArgs` field it sets (``--tensor-parallel-size``
    → ``tp``), for every spelling kvlint reads for ``engine``."""
    return {name: key for key, names in _field_options(engine).items() for name in names}


def integer_value(engine: str, key: str, text: str, version: str | None = None) -> int | None:
    """``text`` as ``engine``'s parser reads the integer option of field ``key`` (``None``
    when it refuses it); ``version``: as that known vLLM version's parser reads it (one of
    the option tables' versions; ``None``: as the newest does)."""
    return _integer(engine, key, text, version)


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_HUMAN_READABLE = frozenset({"max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"})
_PLAIN_INT_AT = {"0.8.5": frozenset({"max_num_batched_tokens"})}
"""vLLM versions whose parser reads these fields as a plain ``int`` (``scheduler_kwargs`` of
vllm/engine/arg_utils.py@v0.8.5 line 826; ``--max-model-len`` is ``human_readable_int``
there, line 477)."""
_NO_AUTO_OR_TERA = frozenset({"0.8.5", "0.11.0"})
"""vLLM versions whose ``human_readable_int`` knows neither ``t``/``T`` (its multipliers stop
at ``g``/``G``: arg_utils.py@v0.8.5 lines 1676-1700, @v0.11.0 lines 1740-1772) nor ``auto``
for ``--max-model-len`` (``human_readable_int_or_auto`` from 0.33.0: arg_utils.py@v0.33.0
lines 404-406)."""
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _integer(engine: str, key: str, text: str, version: str | None = None) -> int | None:
    """An integer as the engine's parser reads it. vLLM's ``--max-model-len`` takes
    ``human_readable_int_or_auto`` (vllm/utils/argparse_utils.py@v0.33.0): ``k/m/g/t`` are
    powers of 1000 (decimals allowed: ``25.6k`` = 25600), ``K/M/G/T`` powers of 1024
    (integers only), and ``-1``/``auto`` mean "derive it" (returned as -1);
    ``--max-num-batched-tokens`` and ``--kv-cache-memory-bytes`` take ``human_readable_int``
    (the same without ``auto``: ``human_readable_int_args``, vllm/engine/arg_utils.py@v0.34.0
    lines 396-408; ``human_readable_ints``, arg_utils.py@v0.11.0 lines 233-239)."""
    if engine == "vllm" and key in _HUMAN_READABLE and \
            key not in _PLAIN_INT_AT.get(version or "", ()):
        old = version in _NO_AUTO_OR_TERA
        if key == "max_model_len" and text.lower() == "auto" and not old:
            return -1
        match = _HUMAN.fullmatch(text)
        if match and not (old and match.group(2) in "tT"):
            number, suffix = match.groups()
            if len(number) > _MAX_DIGITS:
                return None
            if suffix.islower():
                scaled = float(number) * _DECIMAL[suffix]
                # vLLM computes int(float(...)): past the float range it fails to start
                return int(scaled) if math.isfinite(scaled) else None
            if "." in number:
                return None
            return int(number) * _BINARY[suffix]
    if re.fullmatch(r"[-+]?\d+", text) and len(text) <= _MAX_DIGITS:
        return int(text)
    return None


_MAX_DIGITS = 4300
"""Python's int() refuses longer decimal strings (sys.int_info.default_max_str_digits), so an
engine whose parser is Python's refuses such a value at start."""


def parse_engine_args(engine: str, words: Sequence[Word], env: Env) -> EngineArgs:
    """The arguments of an ``engine`` command line (``words`` after the program, as
    :func:`find_engine` indexes them), read with that engine's parser rules:

    ``--flag value`` and ``--flag=value``; vLLM's dash/underscore equivalence; argparse's
    unique-prefix abbreviations for vLLM, SGLang and LMDeploy (``--max-num-seq`` →
    ``--max-num-seqs``; an ambiguous prefix is reported, not guessed); click/clap/llama.cpp
    exact names for TensorRT-LLM, TGI and llama.cpp; boolean flags and ``--no-`` negations;
    a positional model for ``vllm serve``, ``lmdeploy serve api_server`` and
    ``trtllm-serve``; the last occurrence of an option wins, across its aliases
    (``--tensor-parallel-size=4 -tp=8`` is 8). Every option word is kept in
    ``EngineArgs.uses`` (with its line and column) for :mod:`.engine_options` to judge
    against the engine version (KV701/KV702). Every word is expanded through
    ``env`` first (unquoted expansions split into words); a value that cannot be resolved is
    :class:`Unresolved`. TGI and llama.cpp read options not given on the command line from
    their environment variables (``NUM_SHARD``, ``LLAMA_ARG_CTX_SIZE``...).
    """
    tokens = _expand_words(words, env)
    parsed = _scan(engine, tokens)
    grammar = _grammar(engine)
    fields: dict[str, Any] = {}
    options: dict[str, Located[Any] | Unresolved] = {}
    last_line: dict[str, int | None] = {}  # each option word's line, its last use winning
    for token in tokens:
        if token.text is not None:
            last_line[token.text.split("=", 1)[0]] = token.line
    for canonical, (spelling, values, _note) in parsed.values.items():
        line = last_line.get(spelling)
        if values and line is None:
            line = values[0].line
        if values and values[0].unresolved is not None:
            options[canonical] = Unresolved(reason=values[0].unresolved.reason, line=line,
                                            text=values[0].raw)
        else:
            value: Any = (True if not values else
                          values[0].text if len(values) == 1 else [v.text for v in values])
            if canonical.startswith("--no-") and not values:
                value = False
            options[canonical] = Located(value, line, source=_source(spelling, values),
                                         value_line=_value_line(line, values))
    notes = list(parsed.notes)
    unknown = list(parsed.unknown)
    uses = list(parsed.uses)
    for key, names in _field_options(engine).items():
        candidates = []
        for name in names:
            candidates.append(name)
            if name.startswith("--") and grammar.kinds.get("--no-" + name[2:]) == "flag":
                candidates.append("--no-" + name[2:])
        given = [c for c in candidates if c in parsed.values]
        if given:
            # the parser stores every alias in one destination: the last occurrence wins
            # (argparse, click, llama.cpp; clap refuses a repeat, which KV701 reports)
            candidate = max(given, key=lambda c: parsed.order.get(c, 0))
            spelling, values, _ = parsed.values[candidate]
            fields[key] = _convert(engine, key, spelling, candidate, values,
                                   _line(options.get(candidate)))
            fields[key] = _with_value_line(fields[key], values)
    positionals = list(parsed.positionals)
    if grammar.positional_model and positionals and "model" not in fields:
        first = positionals.pop(0)
        if first.unresolved is not None:
            fields["model"] = first.unresolved
        else:
            fields["model"] = Located(first.text or "", first.line,
                                      source=f"positional {first.raw}"
                                      if "$" in first.raw else "positional")
    for token in positionals:
        unknown.append(token.raw)
        if token.text is not None:  # a word the engine's parser has no place for
            uses.append(OptionUse(token.raw, None, "positional", (), token.line, token.column,
                                  reason="positional"))
        if token.unresolved is not None:
            notes.append(f"{token.raw} is not resolved ({token.unresolved.reason}); it may "
                         "add arguments kvlint cannot see")
    if engine == "sglang":
        _sglang_dp(fields, notes)
    if engine == "lmdeploy" and isinstance(fields.get("dp"), Located) and (
            fields["dp"].value > 1):
        dp = fields["dp"]
        fields["dp_attention"] = Located(True, dp.line, source=f"{dp.source} (LMDeploy's "
                                         "data parallelism is attention DP)")
    if engine == "llamacpp" and isinstance(fields.get("max_model_len"), Located) and (
            fields["max_model_len"].value == 0):
        fields["max_model_len"] = None
        notes.append("-c 0: the context size is the model's training context")
    if engine == "llamacpp" and "--hf-file" in options:
        notes.append("llama.cpp reads the GGUF file named by --hf-file from the --hf-repo")
    overrides = config_overrides(engine, uses)
    if overrides is not None:
        fields["config_overrides"] = overrides
        if isinstance(overrides, Located):
            notes.append(f"{overrides.source} change the model's config as the engine "
                         "loads it: kvlint applies them before any check")
    result = EngineArgs(engine=engine, unknown=tuple(unknown), notes=tuple(notes),
                        options=options, uses=tuple(uses),
                        **{k: v for k, v in fields.items() if k in _ENGINE_ARG_FIELDS})
    if engine == "tgi":
        return _fill(result, env_args_tgi(env))
    if engine == "llamacpp":
        return _fill(result, env_args_llamacpp(env))
    return result


def judge_known_options_only(args: EngineArgs) -> EngineArgs:
    """``args`` for a command whose parser is not the engine's alone (a wrapper that adds
    options, a launcher kvlint rewrote as the engine's command): options the engine does not
    know are not reported (KV701), values of the ones it knows still are (KV702)."""
    return replace(args, uses=tuple(u for u in args.uses if u.canonical is not None))


_ENGINE_ARG_FIELDS = frozenset({
    "model", "served_name", "tp", "pp", "dp", "dp_attention", "ep", "kv_cache_dtype",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
    "extensible_kv_cache", "kv_tokens_cap", "gpu_memory_utilization", "config_file",
    "expert_parallel",
    "dp_local", "nnodes", "dtype", "quantization", "config_overrides", "node_rank"})


def _value_line(line: int | None, values: list[_Token]) -> int | None:
    """The line of an option's value when it is not the option's own line."""
    where = values[0].line if values else None
    return where if where is not None and where != line else None


def _with_value_line(value: Any, values: list[_Token]) -> Any:
    if isinstance(value, Located) and value.value_line is None:
        where = _value_line(value.line, values)
        return replace(value, value_line=where) if where is not None else value
    return value


def _line(value: object) -> int | None:
    return value.line if isinstance(value, (Located, Unresolved)) else None


def _sglang_dp(fields: dict[str, Any], notes: list[str]) -> None:
    """SGLang ≥ 0.5.22 spells DP attention ``--attn-dp-size N``."""
    attn = fields.pop("attn_dp", None)
    if attn is None:
        return
    if "dp" in fields:
        notes.append("--attn-dp-size with --dp-size: --dp-size then counts full replicas "
                     "(SGLang >= 0.5.22); dp below is the attention DP size")
    fields["dp"] = attn
    if isinstance(attn, Located):
        fields["dp_attention"] = Located(True, attn.line, source=attn.source)


def _fill(args: EngineArgs, fallback: EngineArgs) -> EngineArgs:
    """``args`` with the fields it lacks taken from ``fallback`` (the options the command
    line does not give are read from the environment)."""
    updates: dict[str, Any] = {}
    for name in _ENGINE_ARG_FIELDS:
        if getattr(args, name) is None and getattr(fallback, name) is not None:
            updates[name] = getattr(fallback, name)
    given = {u.canonical for u in args.uses}
    extra = tuple(u for u in fallback.uses if u.canonical not in given)
    if extra:
        updates["uses"] = args.uses + extra
    if not updates and not fallback.notes:
        return args
    return replace(args, notes=args.notes + tuple(n for n in fallback.notes
                                                  if n not in args.notes), **updates)


def _env_field(env: Env, names: Iterable[str], key: str, engine: str,
               note: str = "") -> Located[Any] | Unresolved | None:
    for name in names:
        value = env.get(name)
        if value is None:
            continue
        line = env.line_of(name)
        if isinstance(value, Unresolved):
            return Unresolved(reason=value.reason, line=line, text=f"${name}")
        expanded = env.expand(value, k8s=False) if "$" in value else value
        if isinstance(expanded, Unresolved):
            return Unresolved(reason=expanded.reason, line=line, text=value)
        token = _Token(expanded, None, line, value)
        converted = _convert(engine, key, f"env {name}", name, [token], line)
        if isinstance(converted, Located) and note:
            converted = Located(converted.value, converted.line, converted.column,
                                source=f"{converted.source} ({note})")
        return converted
    return None


def _env_uses(env: Env, options: Mapping[str, str]) -> tuple[OptionUse, ...]:
    """The environment variables an engine reads as options (clap ``env``, llama.cpp
    ``LLAMA_ARG_*``), as option uses for KV702: a variable's value is parsed like the
    option's."""
    uses = []
    for name, option in options.items():
        value = env.get(name)
        if not isinstance(value, str):
            continue
        expanded = env.expand(value, k8s=False) if "$" in value else value
        if isinstance(expanded, str):
            uses.append(OptionUse(option, option, "value", (expanded,), env.line_of(name),
                                  None, source=f"env {name}"))
    return tuple(uses)


_TGI_ENV = {"NUM_SHARD": "--num-shard", "MAX_TOTAL_TOKENS": "--max-total-tokens",
            "MAX_BATCH_SIZE": "--max-batch-size",
            "MAX_CONCURRENT_REQUESTS": "--max-concurrent-requests",
            "KV_CACHE_DTYPE": "--kv-cache-dtype", "CUDA_MEMORY_FRACTION": "--cuda-memory-fraction",
            "DTYPE": "--dtype", "QUANTIZE": "--quantize"}
_LLAMACPP_ENV = {"LLAMA_ARG_CTX_SIZE": "--ctx-size", "LLAMA_ARG_N_PARALLEL": "--parallel",
                 "LLAMA_ARG_CACHE_TYPE_K": "--cache-type-k"}


def env_args_tgi(env: Env) -> EngineArgs:
    """What TGI's launcher reads from its environment (clap ``long, env`` options:
    ``MODEL_ID``, ``NUM_SHARD``, ``MAX_TOTAL_TOKENS``, ``MAX_BATCH_SIZE`` /
    ``MAX_CONCURRENT_REQUESTS``, ``KV_CACHE_DTYPE``, ``CUDA_MEMORY_FRACTION``,
    ``SERVED_MODEL_NAME``, ``DTYPE``; launcher/src/main.rs@db931fcf). ``NUM_GPUS`` (the
    variable of early Azure ML TGI deployments, not read by the launcher itself) is taken as
    the shard count when ``NUM_SHARD`` is absent, with a note."""
    notes: list[str] = []
    tp = _env_field(env, ["NUM_SHARD"], "tp", "tgi")
    if tp is None:
        tp = _env_field(env, ["NUM_GPUS"], "tp", "tgi", note="legacy variable")
        if tp is not None:
            notes.append("NUM_GPUS is the shard count of early Azure ML TGI images; the TGI "
                         "launcher itself reads NUM_SHARD")
    return EngineArgs(
        engine="tgi",
        model=_env_field(env, ["MODEL_ID"], "model", "tgi"),
        served_name=_env_field(env, ["SERVED_MODEL_NAME"], "served_name", "tgi"),
        tp=tp,
        kv_cache_dtype=_env_field(env, ["KV_CACHE_DTYPE"], "kv_cache_dtype", "tgi"),
        max_model_len=_env_field(env, ["MAX_TOTAL_TOKENS"], "max_model_len", "tgi"),
        max_num_seqs=_env_field(env, ["MAX_BATCH_SIZE", "MAX_CONCURRENT_REQUESTS"],
                                "max_num_seqs", "tgi"),
        gpu_memory_utilization=_env_field(env, ["CUDA_MEMORY_FRACTION"],
                                          "gpu_memory_utilization", "tgi"),
        dtype=_env_field(env, ["DTYPE"], "dtype", "tgi"),
        quantization=_env_field(env, ["QUANTIZE"], "quantization", "tgi"),
        notes=tuple(notes),
        uses=_env_uses(env, _TGI_ENV),
    )


def env_args_llamacpp(env: Env) -> EngineArgs:
    """What ``llama-server`` reads from ``LLAMA_ARG_*`` variables (common/arg.cpp
    ``set_env``: ``LLAMA_ARG_HF_REPO``, ``LLAMA_ARG_MODEL``, ``LLAMA_ARG_CTX_SIZE``,
    ``LLAMA_ARG_N_PARALLEL``, ``LLAMA_ARG_CACHE_TYPE_K``, ``LLAMA_ARG_ALIAS``)."""
    max_len = _env_field(env, ["LLAMA_ARG_CTX_SIZE"], "max_model_len", "llamacpp")
    if isinstance(max_len, Located) and max_len.value == 0:
        max_len = None
    return EngineArgs(
        engine="llamacpp",
        model=_env_field(env, ["LLAMA_ARG_HF_REPO", "LLAMA_ARG_MODEL"], "model", "llamacpp"),
        served_name=_env_field(env, ["LLAMA_ARG_ALIAS"], "served_name", "llamacpp"),
        kv_cache_dtype=_env_field(env, ["LLAMA_ARG_CACHE_TYPE_K"], "kv_cache_dtype",
                                  "llamacpp"),
        max_model_len=max_len,
        max_num_seqs=_env_field(env, ["LLAMA_ARG_N_PARALLEL"], "max_num_seqs", "llamacpp"),
        uses=_env_uses(env, _LLAMACPP_ENV),
    )


# --- whole scripts -------------------------------------------------------------------------
