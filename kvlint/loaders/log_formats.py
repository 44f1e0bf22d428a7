"""What the engines' start-up log readers share (:mod:`kvlint.loaders.vllm_log`,
:mod:`kvlint.loaders.sglang_log`, :mod:`kvlint.loaders.trtllm_log`,
:mod:`kvlint.loaders.lmdeploy_log`): a format string as literal text and placeholders, one row
of a generated format table, the small word and number helpers their patterns use, and the
reader over one table. Pure, except :func:`read_log_text`."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

__all__ = ["MAX_BYTES", "MAX_LINES", "MAX_LINE_CHARS", "FieldPattern", "FormatEntry",
           "LineMatch", "Placeholder", "TableReader", "VersionRange", "entry_patterns",
           "field_meaning", "figure", "format_tokens", "log_lines", "number", "parse_version",
           "read_log_text", "word_count"]

MAX_BYTES = 32 * 1024 * 1024
"""Read at most this much of a log file (a start-up log is a few hundred KiB)."""
MAX_LINE_CHARS = 64 * 1024
"""A longer line is cut here before any pattern looks at it."""
MAX_LINES = 500_000
"""Lines past this many are not read (a start-up log has a few thousand)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

_PRINTF = re.compile(r"%(?:\([^)]{0,40}\))?[-+ 0#]{0,4}(?:\d{1,3}|\*)?(?:\.\d{1,3})?"
                     r"(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfFgGcrsa%]")
"""A printf placeholder: Python's, and C's length modifiers (``%lu``, ``%lld``: TurboMind)."""


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


# --------------------------------------------------------------------------------------------
# A reader over one generated table (issue 33: the TensorRT-LLM and LMDeploy readers): each
# read placeholder of each entry becomes one linear regular expression, the placeholder and
# the literal text before it (extended over neighbouring placeholders until it names enough
# words), gated on the entry's first words; the entries a line matches narrow the release
# range. The SGLang reader (kvlint.loaders.sglang_log) is built the same way.

NUM = r"\d[\d,]{0,30}(?:\.\d{1,20})?"
WORDISH = r"[\w.:/+-]{1,64}"
_SKIP_TEXT = r".{0,160}?"
_STRONG = 8
_WORD = re.compile(r"[A-Za-z_]{3,40}")
_QUOTING = re.compile(r"[\"`{]|request|prompt", re.IGNORECASE)
MAX_IDS = 64
MAX_EVIDENCE = 6


@dataclass(frozen=True)
class FieldPattern:
    """One read placeholder of one table entry, as a compiled pattern."""

    regex: re.Pattern[str]
    gate: str
    """The longest word before the placeholder: a line without it is not tried."""
    head: str
    """The entry's first literal words: a line must hold them."""
    entry: int
    name: str
    text: bool


def field_meaning(text: str) -> tuple[str, bool, bool]:
    """(field, is text, negative allowed) of a table ``fields`` item (``-``: not read)."""
    name, _, rest = text.partition(",")
    return (name if not name.startswith("-") else "-"), "text" in rest, "negative" in rest


def entry_patterns(entry: FormatEntry) -> list[tuple[str, str, str, str, bool]]:
    """(regex, gate word, head, field, is text) for each read placeholder of ``entry``; a
    placeholder printed on the line after its words (``config:\\n{...}``) gives the words
    alone and an empty capture (its reader reads the lines that follow); an entry with no
    placeholder read gives its words alone, captured, under the field ``!``."""
    meanings = [field_meaning(m) for m in entry.fields]
    tokens = format_tokens(entry.format, entry.style)
    segment: list[str | int] = []
    after_newline: set[int] = set()
    count = 0
    for token in tokens:
        if isinstance(token, Placeholder):
            if segment and segment[-1] == "":
                after_newline.add(count)
            segment.append(count)
            count += 1
        else:
            line = token.split("\n", 1)[0] if segment else token.rsplit("\n", 1)[-1]
            if not segment and "\n" in token and not line.strip():
                segment.append(token.rstrip(" \n").rsplit("\n", 1)[-1])
                segment.append("")
                continue
            segment.append(line)
    literals = [i for i in segment if isinstance(i, str) and i.strip()]
    head = literals[0].strip()[:40] if literals else ""
    out: list[tuple[str, str, str, str, bool]] = []
    if not any(m[0] != "-" for m in meanings):
        words = head or entry.format.strip()[:40]
        gate = max(_WORD.findall(words), key=len, default="")
        return [("(" + re.escape(words) + ")", gate, words, "!", True)] if words else []
    for position, item in enumerate(segment):
        if not isinstance(item, int) or item >= len(meanings) or meanings[item][0] == "-":
            continue
        name, text, negative = meanings[item]
        if item in after_newline:
            before = next((p for p in reversed(segment[:position]) if isinstance(p, str)
                           and p.strip()), "")
            if before:
                out.append((re.escape(before.strip()) + "()", max(
                    _WORD.findall(before), key=len, default=""), head, name, True))
            continue
        start, strength = position, 0
        while start > 0 and strength < _STRONG:
            start -= 1
            strength += word_count(segment[start])
        parts: list[str] = []
        for index, part in enumerate(segment[start:position]):
            if isinstance(part, str):
                if index == 0 and len(part) > 48:
                    part = part[-48:]
                    part = part[part.find(" ") + 1:] if " " in part else part
                if index == 0 and start > 0:  # after a figure: drop its unit ("GB, ")
                    rest = re.sub(r"^\S*\s+", "", part, count=1)
                    part = rest if word_count(rest) >= _STRONG else part
                parts.append(re.escape(part.lstrip(" ,;.)") if index == 0 else part))
            else:
                other = meanings[part] if part < len(meanings) else ("-", False, False)
                parts.append(_SKIP_TEXT if other[0] == "-" else f"(?:{WORDISH})" if other[1]
                             else "(?:" + ("-?" if other[2] else "") + NUM + ")")
        parts.append(f"({WORDISH})" if text else "(" + ("-?" if negative else "") + NUM + ")")
        regex = "".join(parts)
        after_figure = start > 0 and isinstance(segment[start - 1], int)
        if (regex[:1].isalnum() or regex.startswith(("#", "\\["))) and not after_figure:
            regex = r"(?<![\w.])" + regex
        if not text:
            regex += r"(?![\d.]*\d)"
        left = [p for p in segment[start:position] if isinstance(p, str)]
        named = [w for p in left for w in _WORD.findall(p)]
        out.append((regex, max(named, key=len, default=""), head, name, text))
    return out


@dataclass(frozen=True)
class LineMatch:
    """What one line gave: the fields read (as printed) and the entries it matched."""

    found: dict[str, str]
    entries: tuple[int, ...]
    origin: int
    """Where the first matched entry's words start in the line."""


class TableReader:
    """The patterns of one generated table (``formats``) and what else it holds."""

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self.versions: tuple[str, ...] = tuple(data["versions"])
        self.entries: tuple[FormatEntry, ...] = tuple(
            FormatEntry(e["id"], e["format"], e["style"], e["first"], e["last"], e["source"],
                        tuple(e["fields"])) for e in data["formats"])
        self.data: dict[str, Any] = data
        compiled = []
        for index, entry in enumerate(self.entries):
            for regex, gate, head, name, text in entry_patterns(entry):
                compiled.append(FieldPattern(re.compile(regex), gate, head, index, name, text))
        self.patterns: tuple[FieldPattern, ...] = tuple(compiled)

    def match(self, line: str) -> LineMatch | None:
        """The fields of ``line`` (``None``: no entry, or a line quoting start-up text)."""
        words = set(_WORD.findall(line))
        found: dict[str, str] = {}
        matched: set[int] = set()
        origin = len(line)
        for pattern in self.patterns:
            if pattern.gate and pattern.gate not in words:
                continue
            if pattern.head and pattern.head not in line:
                continue
            hit = pattern.regex.search(line)
            if hit is None:
                continue
            at = line.rfind(pattern.head, 0, hit.start() + len(pattern.head)) \
                if pattern.head else hit.start()
            origin = min(origin, at if at >= 0 else hit.start())
            found.setdefault(pattern.name, hit.group(1))
            matched.add(pattern.entry)
        if not matched or _QUOTING.search(line[:origin]):
            return None
        return LineMatch(found, tuple(sorted(matched)), origin)


def parse_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


class VersionRange:
    """The releases every line read is printed by (from the entries' ``first``/``last``)."""

    def __init__(self) -> None:
        self.low: Version | None = None
        self.high: Version | None = None
        self.conflict = False

    def narrow(self, first: str, last: str) -> None:
        low, high = parse_version(first), parse_version(last)
        if low is None or high is None:
            return
        new_low = low if self.low is None else max(low, self.low)
        new_high = high if self.high is None else min(high, self.high)
        if new_low > new_high:
            self.conflict = True
            return
        self.low, self.high = new_low, new_high

    def narrow_entries(self, entries: list[FormatEntry]) -> None:
        """One line's entries: the widest range of those it matched."""
        if not entries:
            return
        zero = Version("0")
        self.narrow(min((e.first for e in entries), key=lambda v: parse_version(v) or zero),
                    max((e.last for e in entries), key=lambda v: parse_version(v) or zero))

    def as_tuple(self) -> tuple[str, str] | None:
        if self.low is None or self.high is None:
            return None
        return str(self.low), str(self.high)


def read_log_text(path: Path, engine: str) -> tuple[str, bool]:
    """The first :data:`MAX_BYTES` of the log at ``path`` as text, and whether it was cut;
    an unreadable file is a usage error naming ``engine``."""
    from kvlint.errors import UsageError
    from kvlint.loaders.files import UnreadableFile, read_bytes

    try:
        data = read_bytes(path, MAX_BYTES, truncate=True)
    except UnreadableFile as err:
        raise UsageError(f"{path}: cannot read it ({err}); expected {engine} start-up log "
                         "saved to a file") from None
    return data[:MAX_BYTES].decode("utf-8", "replace"), len(data) > MAX_BYTES


def figure(raw: str | None) -> float | None:
    """A printed figure as a finite float (``None``: absent or not one)."""
    if raw is None:
        return None
    try:
        value = number(raw)
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None
