"""A script as its plain run reads it: the ``case`` branch it takes, the command a variable holds,
its loops over its own arguments run zero times.

Serve scripts often pick a mode with ``MODE=${1:-awq}`` and ``case "$MODE" in fp16) ...;;
awq) ...;; esac``. Read as written, each branch's ``MODEL=...`` is a value of its own and the
model is unresolved; run as written (no arguments, no variables exported), the script takes
the branch its default matches. kvlint reads the script's text before it splits commands:
a ``case`` whose subject is one variable, set exactly once before it, at the start of a line
(not inside a branch or a loop), to a literal, a positional parameter's default
(``${1:-awq}``) or its own default (``${MODE:-awq}``), keeps only the branch whose patterns
match that value (bash's pattern matching: ``*``, ``?``, ``[...]``, ``a|b``); its other lines
become blank, so lines keep their numbers. When that value is a default the caller overrides
(``${1:-unified}``, ``${MODE:-unified}``), a branch that sets no variable and only runs
commands (``prefill) sglang serve ... ;;``) is a mode of its own and stays too: a script of
modes has each linted, while branches that configure one later command keep only the
default. Any other ``case`` stays as written: a subject set any other way, a pattern with a
variable, a fall-through (``;&``, ``;;&``), a ``case`` inside a branch. Bounded: at most
:data:`MAX_CASES` blocks per script.

A plain run has no arguments, so a loop over them (``for a in "$@"``, ``while [[ $# -gt 0
]]``, ``while getopts ...``) runs zero times: its lines become blank, and the defaults set
before it stand (``--model) MODEL=$2`` inside it would otherwise make the model unresolved).

An ``if`` that tests one variable the script sets once, at a line's start, to a literal
(``MULTI_MODE=false`` then ``if [ "$MULTI_MODE" = true ]; then ... else ... fi``; ``==``,
``!=``, ``[[ ]]`` with bash's pattern matching, or ``if $FLAG`` with ``true``/``false``) keeps
only the branch the plain run takes, like a ``case``; one with ``elif``, or a ``fi`` that
shares its line, stays as written.

Scripts also build a whole command in a variable and run it: ``CMD="docker run ... IMAGE
..."`` then ``exec $CMD`` (word splitting) or ``eval "$CMD"``. A command that is only that
variable, set exactly once before it at the start of a line to a quoted string, is read as
the command it holds, put on the line that runs it (continuations and line breaks become
spaces). A value with quotes is read so only under ``eval``, which parses them; word
splitting keeps them literal. A value with a command substitution stays as written.
"""

from __future__ import annotations

import itertools
import re
from fnmatch import fnmatchcase

from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import split_script

__all__ = ["here_path", "literal_value", "plain_run", "plain_run_argument_loops",
           "plain_run_cases", "plain_run_commands", "plain_run_counted_loops", "plain_run_ifs"]

MAX_CASES = 64
"""``case`` blocks read per script (a real one has a few)."""
_CASE = re.compile(r'^[ \t]*case[ \t]+"?\$\{?([A-Za-z_]\w{0,63})\}?"?[ \t]+in[ \t]*(?:#.*)?$',
                   re.MULTILINE)
_ESAC = re.compile(r"^[ \t]*esac\b.*$", re.MULTILINE)
_HEADER = re.compile(r"^[ \t]*\(?[ \t]*([^()\n]+?)[ \t]*\)(.*)$")
_OTHER_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*):?[-=]")
"""A default of a named variable (``${MODE:-awq}``): the script's own, or another's."""
_PLAIN = re.compile(r"[^\s$`\\\"'(){};&|<>]+")
"""A value a ``case`` pattern or an image reference can be: one plain word."""


def _value(raw: str, name: str) -> str | None:
    """The value a plain run gives ``name`` from one assignment's right side (a literal, a
    positional parameter's default ``${1:-awq}`` or its own default ``${MODE:-awq}``, as
    :meth:`~kvlint.manifests.shell_env.Env.expand` reads them with nothing exported), or
    ``None``: another variable's default (the environment decides), anything else."""
    commands = split_script(raw)
    if len(commands) != 1 or len(commands[0]) != 1:
        return None
    word = commands[0][0]
    other = _OTHER_DEFAULT.match(word.text)
    if other is not None and other.group(1) != name:
        return None
    value = word.text if word.literal else Env({}, k8s=False).expand(word.text, k8s=False)
    return value if isinstance(value, str) and _PLAIN.fullmatch(value) else None


def _assigned(text: str, name: str, before: int) -> str | None:
    """The right side of the one assignment of ``name`` before ``before``, at a line's
    start (not indented: not inside a branch or a loop), when nothing reads into it
    (``read``, ``getopts``...); ``None`` otherwise."""
    assignment = re.compile(rf"^([ \t]*)(?:(?:export|local|readonly|declare)[ \t]+)?"
                            rf"{re.escape(name)}=(.*)$", re.MULTILINE)
    found = list(itertools.islice(assignment.finditer(text, 0, before), 2))
    if len(found) != 1 or found[0].group(1) or \
            re.search(rf"\b(?:read|getopts|mapfile|readarray)\b[^\n]*\b{re.escape(name)}\b",
                      text[:before]):
        return None
    return found[0].group(2)


def _subject(text: str, name: str, before: int) -> str | None:
    """The value ``name`` has at ``before`` on a plain run: set once, at a line's start."""
    raw = _assigned(text, name, before)
    return _value(raw, name) if raw is not None else None


def _overridable(text: str, name: str, before: int) -> bool:
    """Whether the plain run's value of ``name`` is a default the caller can override (a
    positional parameter's, ``${1:-unified}``, or its own, ``${MODE:-unified}``) rather
    than a literal the script fixes."""
    raw = _assigned(text, name, before)
    return raw is not None and "${" in raw


def _assigns(body: list[tuple[int, str]]) -> bool:
    """Whether a ``case`` branch sets a variable: a command of assignments only, or a
    ``read``/``export``/``local`` that may. Such a branch configures the run the script
    makes after the ``case``, so only the branch a plain run takes is read."""
    commands = split_script("\n".join(line for _, line in body))
    for words in commands:
        if not words:
            continue
        if words[0].text in ("export", "local", "readonly", "declare", "read", "unset",
                             "shift", "set", "source", "."):
            return True
        if all(_ASSIGNMENT.match(w.text) for w in words):
            return True
    return False


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")


def _clauses(lines: list[str]) -> list[tuple[list[str], list[tuple[int, str]]]] | None:
    """``(patterns, [(line index, body text)])`` of each clause of a ``case`` body, or
    ``None`` when the body is not one kvlint reads."""
    out: list[tuple[list[str], list[tuple[int, str]]]] = []
    body: list[tuple[int, str]] | None = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if body is None:
            if not stripped or stripped.startswith("#"):
                continue
            header = _HEADER.match(line)
            if header is None or "$" in header.group(1) or "`" in header.group(1):
                return None
            patterns = [p.strip().strip("'\"") for p in header.group(1).split("|")]
            body = []
            out.append((patterns, body))
            line, stripped = header.group(2), header.group(2).strip()
        if ";&" in stripped or re.search(r"\bcase\b", stripped):
            return None  # a fall-through, or a case inside a branch
        if ";;" in stripped:
            body.append((index, line.split(";;", 1)[0]))
            body = None
            continue
        body.append((index, line))
    return out


def plain_run_cases(text: str) -> str:
    """``text`` with each ``case`` kvlint can decide cut to the branch a plain run takes
    (module doc); the text as it was otherwise."""
    if "case" not in text or "esac" not in text:
        return text
    out: list[str] = []
    last = 0
    for count, case in enumerate(_CASE.finditer(text)):
        if count >= MAX_CASES or case.start() < last:
            break
        esac = _ESAC.search(text, case.end())
        value = _subject(text, case.group(1), case.start())
        if esac is None or value is None:
            continue
        lines = text[case.end() + 1:esac.start()].split("\n")
        clauses = _clauses(lines)
        if clauses is None:
            continue
        taken = next((body for patterns, body in clauses
                      if any(fnmatchcase(value, p) for p in patterns)), [])
        kept = dict(taken)
        if _overridable(text, case.group(1), case.start()):
            # a mode the caller picks (``${1:-unified}``): a branch that only runs commands
            # with the script's shared settings is a run of its own, kept as written
            for _, body in clauses:
                if body is not taken and not _assigns(body):
                    kept.update(body)
        chosen = "\n".join(kept.get(i, "") for i in range(len(lines)))
        out += [text[last:case.start()], "\n", chosen]
        last = esac.end()
    out.append(text[last:])
    return "".join(out)


_COMMAND_USE = re.compile(r'^([ \t]*)((?:sudo[ \t]+|exec[ \t]+|nohup[ \t]+)*)'
                          r'(eval[ \t]+"?\$\{?([A-Za-z_]\w{0,63})\}?"?'
                          r'|\$\{?([A-Za-z_]\w{0,63})\}?)'
                          r'((?:[ \t]*(?:[0-9]?>>?(?:&[0-9])?[ \t]*(?:"[^"\n]*"|[^\s;&|"]+)?'
                          r'|&(?!&)))*)[ \t]*(?:#.*)?$', re.MULTILINE)
"""A command that is one variable: ``$CMD``, ``exec $CMD``, ``eval "$CMD"`` (or ``eval $CMD``),
with redirections and a ``&`` after it (``eval "$CMD" > "$LOG" 2>&1 &``), which stay."""


def _command_value(text: str, name: str, before: int, evaluated: bool) -> str | None:
    """The one-line command a variable holds at ``before`` on a plain run: set once, at a
    line's start, to a quoted string (its line continuations and line breaks become
    spaces, as word splitting or ``eval`` reads them); ``None`` otherwise."""
    assignment = re.compile(rf"^{re.escape(name)}=([\"'])", re.MULTILINE)
    appends = _appends(text, name, before)
    found = [m for m in assignment.finditer(text, 0, before)
             if not any(m.start() == a.start() for a in appends)]
    others = re.findall(rf"(?:^|[\s;])(?:export[ \t]+)?{re.escape(name)}\+?=", text[:before],
                        re.MULTILINE)
    if len(found) != 1 or len(others) != 1 + len(appends):
        return None
    quote = found[0].group(1)
    end = text.find(quote, found[0].end())
    while quote == '"' and end > 0 and text[end - 1] == "\\":
        end = text.find(quote, end + 1)
    if end < 0 or end > before or \
            text[end + 1:end + 2] not in ("", "\n", " ", "\t", ";", "#"):
        return None
    value = text[found[0].end():end]
    if not evaluated and any(c in value for c in "'\"`"):
        return None  # word splitting keeps quotes literal: not what the author meant
    if "$(" in value or "`" in value:
        return None
    for append in appends:
        if append.start() < found[0].start():
            return None
        if not append.group(1).startswith((" ", "\t")):  # at a line's start: runs
            value += append.group(2)
    if evaluated and quote == '"':
        # CMD="... '$N'": the double-quoted assignment already put N's value in, which the
        # single quotes then hold together for eval: the word is N's value
        value = re.sub(r"'(\$\{?[A-Za-z_]\w{0,63}\}?)'", r'"\1"', value)
        # CMD="... --model \"$M\"": the assignment's escapes leave the quotes eval parses
        value = re.sub(r'\\([$`"\\])', r"\1", value.replace("\\\n", " "))
    return " ".join(value.replace("\\\n", " ").split())


def _appends(text: str, name: str, before: int) -> list[re.Match[str]]:
    """``NAME="$NAME more words"`` lines before ``before``: at a line's start (a plain run
    appends them), or indented inside a block (an ``if`` a plain run mostly skips: its
    defaults leave optional flags off), each on one line."""
    pattern = re.compile(rf'^([ \t]*){re.escape(name)}="\$\{{?{re.escape(name)}\}}?'
                         rf'([^"$`\\]*(?:\$\{{?[A-Za-z_]\w{{0,63}}\}}?[^"$`\\]*)*)"[ \t]*$',
                         re.MULTILINE)
    return list(pattern.finditer(text, 0, before))[:256]


def plain_run_commands(text: str) -> str:
    """``text`` with each command that is one variable holding a whole command
    (``CMD="docker run ... IMAGE ..."`` then ``exec $CMD`` or ``eval "$CMD"``) replaced by
    that command on its line, so the container or engine it starts is read; the text as it
    was otherwise. Bounded: at most :data:`MAX_CASES` such uses."""
    if "$" not in text:
        return text
    out: list[str] = []
    last = 0
    for count, use in enumerate(_COMMAND_USE.finditer(text)):
        if count >= MAX_CASES:
            break
        name = use.group(4) or use.group(5)
        value = _command_value(text, name, use.start(), evaluated=use.group(4) is not None)
        if not value:
            continue
        out += [text[last:use.start()], use.group(1), use.group(2), value, use.group(6)]
        last = use.end()
    out.append(text[last:])
    return _split_words("".join(out))


_SPLIT_USE = re.compile(
    r"^[ \t]*(?:[\w./:@%+=-]+[ \t]+)*\$\{?[A-Za-z_]\w{0,63}\}?"
    r"(?:[ \t]+(?:\$\{?[A-Za-z_]\w{0,63}\}?|[\w./:@%+=-]+))*[ \t]*$", re.MULTILINE)
"""A command of plain words and unquoted variables (``srun ${APPTAINER} ${IMAGE} ${ARGS}``)."""
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w{0,63})\}?")


def _split_words(text: str) -> str:
    """``text`` with each unquoted variable of a command made of plain words and such
    variables replaced by the command words it holds (set once, at a line's start, to a
    quoted string): the shell splits an unquoted expansion into words, so ``${RUNNER}
    ${IMAGE} ${ARGS}`` runs the words they hold. A variable kvlint cannot read stays as
    written. Bounded: at most :data:`MAX_CASES` variable lookups in all."""
    if "$" not in text:
        return text
    out: list[str] = []
    last = 0
    lookups = scanned = 0
    for use in _SPLIT_USE.finditer(text):
        line = use.group(0)
        names = {found.group(1) for found in _VARIABLE.finditer(line)}
        if len(names) > MAX_SPLIT_NAMES:
            continue  # not a command a person wrote: left as written
        lookups += len(names)
        scanned += len(names) * use.start()
        if lookups > MAX_CASES or scanned > MAX_SPLIT_SCAN:
            break  # each lookup reads the text before the command: bounded
        held = {name: _command_value(text, name, use.start(), evaluated=False)
                for name in names}

        def value(found: re.Match[str], held: dict[str, str | None] = held) -> str:
            return held.get(found.group(1)) or found.group(0)

        out += [text[last:use.start()], _VARIABLE.sub(value, line)]
        last = use.end()
    out.append(text[last:])
    return "".join(out)


MAX_SPLIT_NAMES = 16
"""Distinct variables one split command may name (each is looked up once)."""
MAX_SPLIT_SCAN = 8 * 2**20
"""Characters the lookups of :func:`_split_words` may read in all (each reads the text before
its command): a hostile file cannot make them quadratic."""


_ARGUMENT_LOOP = re.compile(
    r"""^[ \t]*(?:for[ \t]+[A-Za-z_]\w*(?:[ \t]+in[ \t]+"?\$[@*]"?)?[ \t]*(?:;[ \t]*do\b.*)?"""
    r"""|while[ \t]+(?:\[\[?[ \t]+"?\$#"?[ \t]+-(?:gt|ne)[ \t]+0[ \t]+\]\]?"""
    r"""|\(\([ \t]*"?\$#"?[ \t]*(?:>[ \t]*0[ \t]*)?\)\)"""
    r"""|\[\[?[ \t]+-n[ \t]+"?\$\{?1\}?"?[ \t]+\]\]?"""
    r"""|getopts[ \t]+\S+[ \t]+[A-Za-z_]\w*)[ \t]*(?:;[ \t]*do\b.*)?)[ \t]*(?:\#.*)?$""",
    re.MULTILINE)
"""A loop over the script's own arguments: ``for a in "$@"`` (or ``for a``), ``while [[ $# -gt
0 ]]``, ``while (( $# ))``, ``while [ -n "$1" ]``, ``while getopts ...``."""
_DO = re.compile(r"(?:^|;)[ \t]*do\b")
_DONE = re.compile(r"(?:^|;)[ \t]*done\b")
_COMMENT = re.compile(r"(?:^|[ \t])#.*$")


def plain_run_argument_loops(text: str) -> str:
    """``text`` with each loop over the script's own arguments blanked (lines kept): a
    plain run has none, so the loop runs zero times and its assignments (``--model)
    MODEL=$2``) never happen. A loop whose ``done`` is not found stays as written. Bounded:
    at most :data:`MAX_CASES` loops."""
    if "$" not in text or ("while" not in text and "for" not in text):
        return text
    lines = text.split("\n")
    out = list(lines)
    count = 0
    i = 0
    while i < len(lines) and count < MAX_CASES:
        if not _ARGUMENT_LOOP.match(lines[i]):
            i += 1
            continue
        count += 1
        depth, end, rest = 0, None, ""
        for j in range(i, min(len(lines), i + 2000)):
            code = _COMMENT.sub("", lines[j])
            depth += len(_DO.findall(code))
            closing = list(_DONE.finditer(code))
            depth -= len(closing)
            if depth <= 0 and closing:
                end, rest = j, code[closing[-1].end():]
                break
        if end is None or rest.strip():  # `done < file`, `done; cmd`: left as written
            i += 1
            continue
        loop = re.match(r"[ \t]*for[ \t]+([A-Za-z_]\w{0,63})\b", lines[i])
        taken = _FROM_ARGUMENT if loop is None else re.compile(
            _FROM_ARGUMENT.pattern.replace("OPTARG", f"OPTARG|{loop.group(1)}"))
        filled = {m.group(1) for k in range(i, end + 1) for m in taken.finditer(lines[k])}
        for k in range(i, end + 1):
            out[k] = ""
        _required(out, i, filled)
        i = end + 1
    return "\n".join(out)


_FROM_ARGUMENT = re.compile(
    r"""(?:^|[\s;)])([A-Za-z_]\w{0,63})=["']?\$\{?(?:[1-9]|OPTARG)\}?(?=["'\s;]|$)""")
"""An assignment of a script argument in an argument loop: ``--model) MODEL="$2"`` (or of
a ``for`` loop's own variable)."""


def _required(lines: list[str], before: int, names: set[str]) -> None:
    """Each of ``names`` whose last assignment before line ``before`` is empty
    (``MODEL=""``): the argument the loop fills is what the script needs, so its plain run
    leaves it unknown (written as the script's first argument, which a plain run does not
    have) instead of the empty string. One pass back over the lines, however many names."""
    left = set(names)
    for k in range(before - 1, -1, -1):
        if not left:
            return
        found = _ASSIGNED.match(lines[k])
        if found is None or found.group(2) not in left:
            continue
        left.discard(found.group(2))
        if found.group(3).strip() in ('""', "''", ""):
            lines[k] = f'{found.group(1)}"$1"'


_ASSIGNED = re.compile(r"""^([ \t]*(?:export[ \t]+)?([A-Za-z_]\w{0,63})=)(.*)$""")
"""An assignment at a line's start: its ``NAME=`` part, the name, and the value written."""


_IF = re.compile(
    r"""^[ \t]*if[ \t]+(?:(?P<test>\[\[?)[ \t]+"?\$\{?(?P<name>[A-Za-z_]\w{0,63})\}?"?[ \t]+"""
    r"""(?P<op>==?|!=)[ \t]+["']?(?P<value>[\w.:/@+-]*)["']?[ \t]+\]\]?"""
    r"""|"?\$\{?(?P<flag>[A-Za-z_]\w{0,63})\}?"?)[ \t]*;[ \t]*then[ \t]*(?:\#.*)?$""")
"""``if [ "$MODE" = value ]; then`` (``==``, ``!=``, ``[[ ]]``), or ``if $FLAG; then`` with
FLAG ``true``/``false``: a test of one variable against a literal, then on its own line."""
_IF_ARGS = re.compile(
    r"""^[ \t]*if[ \t]+(?:\[\[?[ \t]+"?\$#"?[ \t]+-(?P<cmp>gt|ne|ge|eq|lt|le)[ \t]+"""
    r"""(?P<n>\d{1,3})[ \t]+\]\]?"""
    r"""|\(\([ \t]*"?\$#"?[ \t]*(?:(?P<op>>=?|==|!=|<=?)[ \t]*(?P<m>\d{1,3})[ \t]*)?\)\)"""
    r"""|\[\[?[ \t]+(?P<nz>-[nz])[ \t]+"?\$\{?1(?::-)?\}?"?[ \t]+\]\]?)[ \t]*;[ \t]*then[ \t]*"""
    r"""(?:\#.*)?$""")
"""``if [ $# -gt 0 ]; then`` (``[[ ]]``, ``-ne``, ``-eq``...), ``if (( $# ))`` or ``if [ -n "$1"
]; then``: a test of the script's own arguments, which a plain run has none of."""
_COMPARE = {"gt": ">", "ne": "!=", "ge": ">=", "eq": "==", "lt": "<", "le": "<="}
_IF_START = re.compile(r"(?:^|;)[ \t]*if\b")
_FI = re.compile(r"(?:^|;)[ \t]*fi\b")
_ELSE = re.compile(r"^[ \t]*else[ \t]*(?:\#.*)?$")
_ELIF = re.compile(r"^[ \t]*elif\b")


def _branch(lines: list[str], start: int) -> tuple[int | None, int] | None:
    """``(else line or None, fi line)`` of the ``if`` at ``start`` (nested ones skipped);
    ``None`` for one with ``elif``, a ``fi`` not alone on its line, or no end within reach."""
    depth, other = 1, None
    for j in range(start + 1, min(len(lines), start + 2000)):
        code = _COMMENT.sub("", lines[j])
        opened, closed = len(_IF_START.findall(code)), len(_FI.findall(code))
        if depth == 1 and not opened and _ELIF.match(code):
            return None
        if depth == 1 and not opened and _ELSE.match(code):
            other = j
            continue
        depth += opened - closed
        if depth <= 0:
            return (other, j) if code.strip() == "fi" else None
    return None


def plain_run_ifs(text: str) -> str:
    """``text`` with each ``if`` that tests one variable the script sets once, at a line's
    start, to a literal (:func:`_subject`) cut to the branch a plain run takes (its other
    lines blank, so lines keep their numbers); any other ``if`` as written. Bounded: at most
    :data:`MAX_CASES` such tests."""
    if "if" not in text or "fi" not in text:
        return text
    lines = text.split("\n")
    count = 0
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    i = 0
    while i < len(lines) and count < MAX_CASES:
        if not _IF_ARGS.match(lines[i]) and not _IF.match(lines[i]):
            i += 1
            continue
        count += 1
        taken = _taken(lines[i], text, offsets[i])
        shape = _branch(lines, i)
        if taken is None or shape is None:
            i += 1
            continue
        other, end = shape
        keep = range(i + 1, other if other is not None else end) if taken else \
            range(other + 1, end) if other is not None else range(0)
        for k in range(i, end + 1):
            if k not in keep:
                lines[k] = ""
        i += 1
    return "\n".join(lines)


def _taken(line: str, text: str, offset: int) -> bool | None:
    """Whether a plain run takes the ``then`` branch of the ``if`` on ``line`` (at ``offset``
    of ``text``): a test of the script's arguments (:data:`_IF_ARGS`), or of one variable set
    once to a literal (:data:`_IF`); ``None`` when kvlint cannot tell."""
    arguments = _IF_ARGS.match(line)
    if arguments is not None:
        return _no_arguments(arguments)
    found = _IF.match(line)
    if found is None:
        return None
    value = _subject(text, found.group("name") or found.group("flag"), offset)
    if value is None:
        return None
    if found.group("flag"):
        return value == "true" if value in ("true", "false") else None
    equal = fnmatchcase(value, found.group("value")) if found.group("test") == "[[" \
        else value == found.group("value")
    return equal if found.group("op") != "!=" else not equal


def _no_arguments(test: re.Match[str]) -> bool:
    """Whether an :data:`_IF_ARGS` test holds when the script is given no argument."""
    if test.group("nz"):
        return test.group("nz") == "-z"
    op = _COMPARE[test.group("cmp")] if test.group("cmp") else test.group("op")
    if op is None:  # (( $# )): true when there are arguments
        return False
    bound = int(test.group("n") or test.group("m"))
    given = 0  # a plain run's $#
    return {">": given > bound, ">=": given >= bound, "==": given == bound,
            "!=": given != bound, "<": given < bound, "<=": given <= bound}[op]


def plain_run(text: str) -> str:
    """The script's text as its plain run reads it: its loops over its own arguments run
    zero times, its counted loops list their values, its ``if`` and ``case`` blocks on its
    own mode cut to the branch taken, its commands held in variables put where they run."""
    return plain_run_commands(plain_run_cases(plain_run_ifs(plain_run_counted_loops(
        plain_run_argument_loops(text)))))


_COUNTED = re.compile(
    r"^([ \t]*)for[ \t]*\(\([ \t]*([A-Za-z_]\w{0,63})[ \t]*=[ \t]*(\$?\{?\w+\}?)[ \t]*;"
    r"[ \t]*\2[ \t]*(<=?)[ \t]*(\$?\{?\w+\}?)[ \t]*;"
    r"[ \t]*(?:\2[ \t]*\+\+|\+\+[ \t]*\2|\2[ \t]*\+=[ \t]*1|\2[ \t]*=[ \t]*\2[ \t]*\+[ \t]*1)"
    r"[ \t]*\)\)", re.MULTILINE)
"""A counted loop: ``for ((i=0; i<NUM_WORKERS; i++))`` (``<=``, ``++i``, ``i+=1``)."""
MAX_LOOP_PASSES = 16
"""The most passes of a loop read one by one (a loop over a node's GPUs): a counted loop's
values listed here, a ``for`` loop's passes in :mod:`.engine_env`."""


def plain_run_counted_loops(text: str) -> str:
    """``text`` with each counted loop whose bounds are integers (written, or variables the
    script sets once at a line's start) written as ``for i in 0 1 ...`` on its line, so its
    passes are read one by one (:func:`~kvlint.manifests.engine_env.engine_invocations`);
    a loop of other bounds, or of more than :data:`MAX_LOOP_PASSES` passes, stays as written."""
    if "((" not in text:
        return text

    def bound(word: str, before: int) -> int | None:
        name = word.strip("${}")
        value = name if name.isdigit() else _subject(text, name, before)
        return int(value) if value is not None and value.isdigit() and len(value) < 7 \
            else None

    def one(found: re.Match[str]) -> str:
        low, high = bound(found.group(3), found.start()), bound(found.group(5), found.start())
        if low is None or high is None:
            return found.group(0)
        stop = high + 1 if found.group(4) == "<=" else high
        if not 1 < stop - low <= MAX_LOOP_PASSES:
            return found.group(0)
        values = " ".join(str(n) for n in range(low, stop))
        return f"{found.group(1)}for {found.group(2)} in {values}"

    return _COUNTED.sub(one, text)


_REFERENCE = re.compile(r"\$\{?([A-Za-z_]\w{0,63})\}?")


def literal_value(text: str, word: str, before: int | None = None) -> str | None:
    """The value a word that is one variable (``$IMAGE``, ``${IMAGE}``) has on the script's
    plain run, when the script sets it once, at a line's start, to a literal or a default
    (``IMAGE=${IMAGE:-vllm/vllm-openai:v0.10.1.1}``) before ``before`` (default: anywhere);
    ``None`` otherwise."""
    match = _REFERENCE.fullmatch(word.strip())
    if match is None:
        return None
    return _subject(text, match.group(1), len(text) if before is None else before)


_HERE = re.compile(r"""["']?(?:\$\(\s*pwd\s*\)|`pwd`|\$\{PWD\}|\$PWD)/"""
                   r"""([\w.@+-][\w./@+-]{0,255})["']?""")
"""``$(pwd)/NAME`` (or ``$PWD/NAME``, quoted or not): a path in the folder the script runs in."""


def here_path(text: str, word: str) -> str | None:
    """The path (``./NAME``) a word that is one variable names when the script sets that
    variable once, at a line's start, to ``$(pwd)/NAME``: the file beside the script, for a
    script run in its own folder (as one that checks ``[[ -f $(pwd)/config.yaml ]]`` is);
    ``None`` otherwise. ``word`` may also be such a path itself."""
    own = _HERE.fullmatch(word.strip())
    if own is not None:
        return "./" + own.group(1)
    match = _REFERENCE.fullmatch(word.strip())
    raw = _assigned(text, match.group(1), len(text)) if match is not None else None
    value = _HERE.fullmatch(raw.strip()) if raw is not None else None
    return "./" + value.group(1) if value is not None else None

