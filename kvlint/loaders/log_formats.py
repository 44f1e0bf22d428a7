"""What the engines' start-up log readers share (:mod:`kvlint.loaders.vllm_log`,
:mod:`kvlint.loaders.sglang_log`, :mod:`kvlint.loaders.trtllm_log`,
:mod:`kvlint.loaders.lmdeploy_log`): a format string as literal text and placeholders, one row
of a generated format table, the small word and number helpers their patterns use, and the
reader over one table with what it gathers. Pure, except :func:`read_log_text` and
:func:`read_log_file`."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from packaging.version import InvalidVersion, Version

from kvlint.loaders.start_failures import OutOfMemory

__all__ = [
    "MAX_BYTES",
    "MAX_JOINED_LINES",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "STRONG",
    "EngineLog",
    "FieldPattern",
    "FormatEntry",
    "LineMatch",
    "Placeholder",
    "TableReader",
    "TableState",
    "VersionRange",
    "entry_patterns",
    "field_meaning",
    "figure",
    "figures",
    "format_tokens",
    "joined_record",
    "left_context",
    "line_date",
    "log_lines",
    "named_values",
    "number",
    "parse_version",
    "read_log_file",
    "read_log_text",
    "read_table",
    "word_count",
]

MAX_BYTES = 32 * 1024 * 1024
"""Read at most this much of a log file (a start-up log is a few hundred KiB)."""
MAX_LINE_CHARS = 64 * 1024
"""A longer line is cut here before any pattern looks at it."""
MAX_LINES = 500_000
"""Lines past this many are not read (a start-up log has a few thousand)."""
MAX_JOINED_LINES = 8
"""A record wrapped over several lines is followed over at most this many more."""

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
    lines: tuple[tuple[str, int, int, tuple[str, ...]], ...] = ()
    """``(file, first line, last line, releases)``: where the call printing it sits in each
    release read (a record's ``[file.py:line]`` then names the releases it may come from)."""

    def releases_at(self, file: str, line: int) -> tuple[str, ...]:
        """The releases read whose call printing this format is at ``file:line``."""
        return tuple(v for name, first, last, found in self.lines
                     if name == file and first <= line <= last for v in found)


def _lines(raw: Any) -> tuple[tuple[str, int, int, tuple[str, ...]], ...]:
    out: list[tuple[str, int, int, tuple[str, ...]]] = []
    for at, versions in (raw or {}).items():
        name, _, span = str(at).rpartition(":")
        first, _, last = span.partition("-")
        out.append((name, int(first), int(last or first), tuple(map(str, versions))))
    return tuple(out)


def read_table(path: Path) -> tuple[dict[str, Any], tuple[FormatEntry, ...]]:
    """A generated table (its JSON) and its ``formats`` as entries."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return data, tuple(FormatEntry(e["id"], e["format"], e["style"], e["first"], e["last"],
                                   e["source"], tuple(e["fields"]), _lines(e.get("lines")))
                       for e in data["formats"])


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


def joined_record(lines: list[str], index: int, record_start: re.Pattern[str]) -> str:
    """The record at ``lines[index]`` with the lines that continue it (up to
    :data:`MAX_JOINED_LINES` of them, each up to a blank line or one ``record_start`` finds),
    cut at :data:`MAX_LINE_CHARS`."""
    parts = [lines[index]]
    for follow in lines[index + 1:index + 1 + MAX_JOINED_LINES]:
        if not follow.strip() or record_start.search(follow):
            break
        parts.append(follow)
    return "".join(parts)[:MAX_LINE_CHARS]


def named_values(text: str, patterns: dict[str, re.Pattern[str]]) -> dict[str, str]:
    """The value each pattern finds in ``text`` (its first group that matched), by name."""
    out: dict[str, str] = {}
    for name, pattern in patterns.items():
        found = pattern.search(text)
        if found is not None:
            out[name] = next((g for g in found.groups() if g is not None), "")
    return out


# --------------------------------------------------------------------------------------------
# A reader over one generated table (issue 33: the TensorRT-LLM and LMDeploy readers): each
# read placeholder of each entry becomes one linear regular expression, the placeholder and
# the literal text before it (extended over neighbouring placeholders until it names enough
# words), gated on the entry's first words; the entries a line matches narrow the release
# range. The SGLang reader (kvlint.loaders.sglang_log) uses it too; the vLLM reader builds its
# own patterns (per printed line, with the text after a figure, grouped by gate word).

NUM = r"\d[\d,]{0,30}(?:\.\d{1,20})?"
WORDISH = r"[\w.:/+-]{1,64}"
_SKIP_TEXT = r".{0,160}?"
STRONG = 8
"""A pattern's literal text names at least this many word characters around its figure."""
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


def left_context(segment: list[str | int], position: int) -> tuple[int, list[str | int]]:
    """Where the pattern of the placeholder at ``segment[position]`` (one printed line's
    literals and placeholder indices) starts, and what it holds before the placeholder: back
    until it names :data:`STRONG` word characters, its first literal from a word's start
    (within 48 characters), without the unit of a figure before it where enough words remain,
    and without leading punctuation."""
    start, strength = position, 0
    while start > 0 and strength < STRONG:
        start -= 1
        strength += word_count(segment[start])
    left = list(segment[start:position])
    if left and isinstance(left[0], str):
        part = left[0]
        if len(part) > 48:
            part = part[-48:]
            part = part[part.find(" ") + 1:] if " " in part else part
        if start > 0:  # after a figure: drop its unit ("GB, ")
            rest = re.sub(r"^\S*\s+", "", part, count=1)
            part = rest if word_count(rest) >= STRONG else part
        left[0] = part.lstrip(" ,;.)")
    return start, left


def entry_patterns(entry: FormatEntry, unread: frozenset[str] = frozenset()
                   ) -> list[tuple[str, str, str, str, bool]]:
    """(regex, gate word, head, field, is text) for each read placeholder of ``entry``; a
    placeholder printed on the line after its words (``config:\\n{...}``) gives the words
    alone and an empty capture (its reader reads the lines that follow); an entry with no
    placeholder read gives its words alone, captured, under the field ``!``. The fields
    ``unread`` (read by the reader's own code: SGLang's pool label and ``server_args``) get
    no pattern, and are skipped as any text next to a figure, as a ``-`` one is."""
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
        if not isinstance(item, int) or item >= len(meanings) or meanings[item][0] == "-" \
                or meanings[item][0] in unread:
            continue
        name, text, negative = meanings[item]
        if item in after_newline:
            before = next((p for p in reversed(segment[:position]) if isinstance(p, str)
                           and p.strip()), "")
            if before:
                out.append((re.escape(before.strip()) + "()", max(
                    _WORD.findall(before), key=len, default=""), head, name, True))
            continue
        start, left = left_context(segment, position)
        parts: list[str] = []
        for part in left:
            if isinstance(part, str):
                parts.append(re.escape(part))
            else:
                other = meanings[part] if part < len(meanings) else ("-", False, False)
                parts.append(_SKIP_TEXT if other[0] == "-" or other[0] in unread
                             else f"(?:{WORDISH})" if other[1]
                             else "(?:" + ("-?" if other[2] else "") + NUM + ")")
        parts.append(f"({WORDISH})" if text else "(" + ("-?" if negative else "") + NUM + ")")
        regex = "".join(parts)
        after_figure = start > 0 and isinstance(segment[start - 1], int)
        if (regex[:1].isalnum() or regex.startswith(("#", "\\["))) and not after_figure:
            regex = r"(?<![\w.])" + regex
        if not text:
            regex += r"(?![\d.]*\d)"
        named = [w for p in segment[start:position] if isinstance(p, str)
                 for w in _WORD.findall(p)]
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
    """The patterns of one generated table (``formats``) and what else it holds (``unread``:
    see :func:`entry_patterns`)."""

    def __init__(self, path: Path, unread: frozenset[str] = frozenset()) -> None:
        data, entries = read_table(path)
        self.versions: tuple[str, ...] = tuple(data["versions"])
        self.entries: tuple[FormatEntry, ...] = entries
        self.data: dict[str, Any] = data
        compiled = []
        for index, entry in enumerate(self.entries):
            for regex, gate, head, name, text in entry_patterns(entry, unread):
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


@functools.lru_cache(maxsize=1024)
def parse_version(text: str) -> Version | None:
    """``text`` as a release (``None``: not one); cached, as a log's every line narrows the
    range by the same table entries' releases (a 500,000-line log parsed 3 million)."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


class VersionRange:
    """The releases every line read is printed by (from the entries' ``first``/``last``).

    Where lines disagree (several logs joined, a line a poster condensed into another
    release's wording), the range is the one the most lines agree on: each line's range is
    a vote, and the releases inside the most votes win (ties: the earliest lines' range)."""

    MAX_VOTES = 4096
    """Distinct line ranges kept (a log's lines match a few dozen table entries)."""

    def __init__(self) -> None:
        self.low: Version | None = None
        self.high: Version | None = None
        self.conflict = False
        self.votes: dict[tuple[Version, Version], int] = {}

    def narrow(self, first: str, last: str) -> None:
        low, high = parse_version(first), parse_version(last)
        if low is not None and high is not None:
            self.narrow_to(low, high)

    def narrow_to(self, low: Version, high: Version) -> bool:
        """Narrow to ``[low, high]``; ``False`` (a conflict, the range kept) where it does not
        meet the range so far."""
        if (low, high) in self.votes or len(self.votes) < self.MAX_VOTES:
            self.votes[(low, high)] = self.votes.get((low, high), 0) + 1
        new_low = low if self.low is None else max(low, self.low)
        new_high = high if self.high is None else min(high, self.high)
        if new_low > new_high:
            self.conflict = True
            return False
        self.low, self.high = new_low, new_high
        return True

    def narrow_entries(self, entries: list[FormatEntry]) -> None:
        """One line's entries: the widest range of those it matched."""
        if not entries:
            return
        zero = Version("0")
        self.narrow(min((e.first for e in entries), key=lambda v: parse_version(v) or zero),
                    max((e.last for e in entries), key=lambda v: parse_version(v) or zero))

    def _majority(self) -> tuple[Version, Version] | None:
        """The range inside the most votes, where lines conflict (``None``: no majority
        beyond the range the earliest lines agree on)."""
        if not self.conflict or self.low is None or self.high is None:
            return None
        kept = sum(n for (lo, hi), n in self.votes.items() if lo <= self.low and self.high <= hi)
        best: tuple[int, Version, Version] | None = None
        for point in sorted({lo for lo, _ in self.votes}):
            inside = [(lo, hi, n) for (lo, hi), n in self.votes.items() if lo <= point <= hi]
            count = sum(n for _, _, n in inside)
            if best is None or count > best[0]:
                best = (count, max(lo for lo, _, _ in inside), min(hi for _, hi, _ in inside))
        if best is None or best[0] <= kept:
            return None
        return best[1], best[2]

    def as_tuple(self) -> tuple[str, str] | None:
        if self.low is None or self.high is None:
            return None
        low, high = self._majority() or (self.low, self.high)
        return str(low), str(high)


_DATED = (
    re.compile(r"(?<!\d)(20\d\d)-(\d\d)-(\d\d)[ T]\d\d:\d\d"),  # 2025-10-16 09:06
    re.compile(r"\[(\d\d)/(\d\d)/(20\d\d)-\d\d:\d\d"),  # TensorRT-LLM's [10/16/2025-09:06
)
"""The dated stamps engines put at the head of a log record (year, month, day; or month,
day, year)."""


def line_date(line: str) -> date | None:
    """The day a log record's stamp gives (in its first 64 characters), if it has one."""
    head = line[:64]
    for index, pattern in enumerate(_DATED):
        found = pattern.search(head)
        if found is None:
            continue
        a, b, c = (int(g) for g in found.groups())
        year, month, day = (a, b, c) if index == 0 else (c, a, b)
        try:
            return date(year, month, day)
        except ValueError:
            return None
    return None


class TableState:
    """What a reader over a :class:`TableReader` gathers: the first value printed for each
    field (as printed), the release range, the ids of the entries matched, the first lines
    read and the earliest day a matched line is stamped with."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.range = VersionRange()
        self.ids: dict[str, None] = {}
        self.evidence: list[str] = []
        self.dated: date | None = None

    def cite(self, text: str) -> None:
        if len(self.evidence) < MAX_EVIDENCE:
            self.evidence.append(text)

    def matched(self, reader: TableReader, line: str, hit: LineMatch) -> list[FormatEntry]:
        """The entries ``hit`` matched on ``line``, with the range narrowed to them, their ids
        kept and the line cited."""
        entries = [reader.entries[i] for i in hit.entries]
        self.range.narrow_entries(entries)
        day = line_date(line)
        if day is not None and (self.dated is None or day < self.dated):
            self.dated = day
        for entry in entries:
            if len(self.ids) < MAX_IDS:
                self.ids.setdefault(entry.id, None)
        self.cite(line[max(0, hit.origin - 40):hit.origin + 120])
        return entries

    def conflict_notes(self, engine: str) -> list[str]:
        if not self.range.conflict:
            return []
        return [f"lines worded as different {engine} releases print them (several logs "
                "joined?); the release range is the one most lines agree on"]

    def result(self, count: int, notes: list[str]) -> dict[str, Any]:
        """The :class:`EngineLog` fields of what was read from ``count`` lines, with ``notes``
        (and one for the lines not read)."""
        if count >= MAX_LINES:
            notes = [*notes, f"only the first {MAX_LINES:,} lines were read"]
        return {"version_range": self.range.as_tuple(), "formats": tuple(self.ids),
                "dated": self.dated.isoformat() if self.dated else None,
                "evidence": tuple(self.evidence), "lines": count, "notes": tuple(notes),
                "raw": dict(self.values)}


@dataclass(frozen=True)
class EngineLog:
    """What every table reader's result says besides its figures."""

    version_range: tuple[str, str] | None = None
    formats: tuple[str, ...] = ()
    """The ids of the table entries the lines read matched (the engine's log formats)."""
    dated: str | None = None
    """The earliest day (ISO) a line read is stamped with, where the engine stamps a year."""
    evidence: tuple[str, ...] = ()
    """The first few lines read (for "which lines decided it")."""
    lines: int = 0
    truncated: bool = False
    notes: tuple[str, ...] = ()
    raw: dict[str, str] = field(default_factory=dict, compare=False)
    oom: OutOfMemory | None = None
    """The out-of-memory error a failed start ended with
    (:func:`kvlint.loaders.start_failures.find_out_of_memory`)."""


def figures(values: dict[str, str], ints: tuple[str, ...], floats: tuple[str, ...]
            ) -> dict[str, int | float]:
    """The printed ``values`` that are figures: those named in ``ints`` as int (below
    2**62), in ``floats`` as float."""
    out: dict[str, int | float] = {}
    for name, raw in values.items():
        value = figure(raw)
        if value is None:
            continue
        if name in ints and abs(value) < 2**62:
            out[name] = int(value)
        elif name in floats:
            out[name] = value
    return out


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


class _Log(Protocol):
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def notes(self) -> tuple[str, ...]: ...


_LogT = TypeVar("_LogT", bound=_Log)


def read_log_file(path: Path, engine: str, parse: Callable[[str], _LogT]) -> _LogT:
    """``parse`` of the log at ``path`` (its first :data:`MAX_BYTES`), marked truncated, with a
    note, where the file was longer; an unreadable file is a usage error naming ``engine``."""
    text, cut = read_log_text(path, engine)
    log = parse(text)
    if cut:
        log = replace(log, truncated=True,
                      notes=(*log.notes, f"only the first {MAX_BYTES // 2**20} MiB was read"))
    return log
