"""A ``case`` on a variable the script sets itself: the branch its plain run takes.

Serve scripts often pick a mode with ``MODE=${1:-awq}`` and ``case "$MODE" in fp16) ...;;
awq) ...;; esac``. Read as written, each branch's ``MODEL=...`` is a value of its own and the
model is unresolved; run as written (no arguments, no variables exported), the script takes
the branch its default matches. kvlint reads the script's text before it splits commands:
a ``case`` whose subject is one variable, set exactly once before it, at the start of a line
(not inside a branch or a loop), to a literal, a positional parameter's default
(``${1:-awq}``) or its own default (``${MODE:-awq}``), keeps only the branch whose patterns
match that value (bash's pattern matching: ``*``, ``?``, ``[...]``, ``a|b``); its other lines
become blank, so lines keep their numbers. Any other ``case`` stays as written: a subject set
any other way, a pattern with a variable, a fall-through (``;&``, ``;;&``), a ``case`` inside
a branch. Bounded: at most :data:`MAX_CASES` blocks per script.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

__all__ = ["plain_run_cases"]

MAX_CASES = 64
"""``case`` blocks read per script (a real one has a few)."""
_CASE = re.compile(r'^[ \t]*case[ \t]+"?\$\{?([A-Za-z_]\w{0,63})\}?"?[ \t]+in[ \t]*(?:#.*)?$',
                   re.MULTILINE)
_ESAC = re.compile(r"^[ \t]*esac\b.*$", re.MULTILINE)
_HEADER = re.compile(r"^[ \t]*\(?[ \t]*([^()\n]+?)[ \t]*\)(.*)$")
_DEFAULT = re.compile(r"\$\{(?:[1-9]|(\w+)):?-(.*)\}")


def _value(raw: str, name: str) -> str | None:
    """The value a plain run gives ``name`` from one assignment's right side, or ``None``."""
    text = raw.split(" #", 1)[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    default = _DEFAULT.fullmatch(text)
    if default is not None:
        if default.group(1) not in (None, name):
            return None  # another variable's default: the environment decides
        text = default.group(2).strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
    if not text or any(c in text for c in "$`\\\"'(){};&|<> \t"):
        return None
    return text


def _subject(text: str, name: str, before: int) -> str | None:
    """The value ``name`` has at ``before`` on a plain run: set once, at a line's start."""
    assignment = re.compile(rf"^([ \t]*)(?:(?:export|local|readonly|declare)[ \t]+)?"
                            rf"{re.escape(name)}=(.*)$", re.MULTILINE)
    found = list(assignment.finditer(text, 0, before))
    if len(found) != 1 or found[0].group(1) or \
            re.search(rf"\b(?:read|getopts|mapfile|readarray)\b[^\n]*\b{re.escape(name)}\b",
                      text[:before]):
        return None
    return _value(found[0].group(2), name)


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
        chosen = "\n".join(kept.get(i, "") for i in range(len(lines)))
        out += [text[last:case.start()], "\n", chosen]
        last = esac.end()
    out.append(text[last:])
    return "".join(out)
