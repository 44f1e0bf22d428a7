"""What the engines' start-up log readers share (:mod:`kvlint.loaders.vllm_log`,
:mod:`kvlint.loaders.sglang_log`): a format string as literal text and placeholders, one row of
a generated format table, and the small word and number helpers their patterns use. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["MAX_BYTES", "MAX_LINES", "MAX_LINE_CHARS", "FormatEntry", "Placeholder",
           "format_tokens", "log_lines", "number", "word_count"]

MAX_BYTES = 32 * 1024 * 1024
"""Read at most this much of a log file (a start-up log is a few hundred KiB)."""
MAX_LINE_CHARS = 64 * 1024
"""A longer line is cut here before any pattern looks at it."""
MAX_LINES = 500_000
"""Lines past this many are not read (a start-up log has a few thousand)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_PRINTF = re.compile(r"%(?:\([^)]{0,40}\))?[-+ 0#]{0,4}(?:\d{1,3}|\*)?(?:\.\d{1,3})?"
                     r"[diouxXeEfFgGcrsa%]")


@dataclass(frozen=True)
class Placeholder:
    """One placeholder of a format string, as written in the engine's source (``%.2f``,
    ``{num_gpu_blocks}``)."""

    spec: str


def format_tokens(text: str, style: str) -> list[str | Placeholder]:
    """A format string as literal text and placeholders (``style``: ``printf`` or ``brace``)."""
    tokens: list[str | Placeholder] = []
    literal: list[str] = []
    if style == "printf":
        position = 0
        for found in _PRINTF.finditer(text):
            literal.append(text[position:found.start()])
            if found.group() == "%%":
                literal.append("%")
            else:
                tokens.append("".join(literal))
                literal = []
                tokens.append(Placeholder(found.group()))
            position = found.end()
        literal.append(text[position:])
    elif style == "brace":
        index = 0
        while index < len(text):
            char = text[index]
            if char in "{}" and text[index + 1:index + 2] == char:
                literal.append(char)
                index += 2
                continue
            if char == "{":
                depth, end = 0, index
                while end < len(text):
                    depth += {"{": 1, "}": -1}.get(text[end], 0)
                    if depth == 0:
                        break
                    end += 1
                tokens.append("".join(literal))
                literal = []
                tokens.append(Placeholder(text[index:end + 1]))
                index = end + 1
                continue
            literal.append(char)
            index += 1
    else:
        literal.append(text)
    tokens.append("".join(literal))
    return [t for t in tokens if not isinstance(t, str) or t]


@dataclass(frozen=True)
class FormatEntry:
    """One row of a generated table: an engine's format string and the releases that print
    it (``first``/``last`` read), with where it was first seen and what each placeholder
    sets."""

    id: str
    format: str
    style: str
    first: str
    last: str
    source: str
    fields: tuple[str, ...]


def word_count(item: str | int) -> int:
    """Word characters of a literal part (0 for a placeholder's index)."""
    return len(re.findall(r"\w", item)) if isinstance(item, str) else 0


def number(text: str) -> float:
    """A printed figure (``1,234.5``) as a float."""
    return float(text.replace(",", ""))


def log_lines(text: str) -> Iterator[str]:
    """A log's lines split on newlines only (``\r`` dropped), each cut at
    :data:`MAX_LINE_CHARS` and cleaned of colour codes and control characters, lazily, at most
    :data:`MAX_LINES` of them."""
    start = count = 0
    while start < len(text) and count < MAX_LINES:
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        line = text[start:min(end, start + MAX_LINE_CHARS)]
        yield _CONTROL.sub("", _ANSI.sub("", line)).rstrip("\r")
        count += 1
        start = end + 1
