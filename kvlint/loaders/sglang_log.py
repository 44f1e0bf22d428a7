"""Read the figures an SGLang start-up log prints about its memory and KV pool (pure text
parsing; the SGLang counterpart of :mod:`kvlint.loaders.vllm_log`).

SGLang prints, per rank (``[2025-03-08 12:29:21 TP3]``): ``Load weight begin. avail mem=X GB``
(the GPU memory free before the weights: what it sizes the pool from), ``Load weight end. ...
avail mem=X GB, mem usage=Y GB.``, ``KV Cache is allocated. #tokens: N, K size: X GB, V size:
Y GB`` (``KV size`` for MLA; ``dtype: ...`` first from 0.5.1x; no ``#tokens`` up to 0.4.2),
``Memory pool end. avail mem=X GB`` and, once, ``max_total_num_tokens=N, ...`` and the
``server_args=ServerArgs(...)`` line (a dict from 0.5.2x). SGLang's ``GB`` is GiB (``/ 1 <<
30``). Hybrid sliding-window models add ``Use sliding window memory pool. full_layer_tokens=F,
swa_layer_tokens=S`` and one pool line per sub-pool (labelled ``Full``/``SWA`` from 0.5.2x),
and ``SWAKVPool mem usage`` for both; a speculative draft model prints a second pool per rank.

What is read, and how:

* the figures come from :data:`FORMATS_FILE`, ``sglang_log_formats.json``: SGLang's own format
  strings read from its source release by release by :mod:`kvlint.generators.sglang_log_table`
  (each entry cites ``path@version``). Every placeholder the table names a field for becomes
  one linear regular expression: the placeholder and the literal text before it (extended
  over neighbouring placeholders until it names enough words), so a line wrapped or cut after
  the figure is still read; a line must also hold the entry's first words. The entries matched
  narrow :attr:`SglangLog.version_range`, and so do the ``server_args`` options present (the
  table's ``server_args``: the releases that declare each);
* written here, not from the table: the options of the ``server_args=`` line
  (:data:`SERVER_ARGS`, as ``name=value`` or ``'name': value``), followed over wrapped lines;
  the pool label before ``KV Cache is allocated`` and the rank label of the prefix.

Bounded like the vLLM reader: :data:`MAX_BYTES` of the file, :data:`MAX_LINES` lines of at most
:data:`MAX_LINE_CHARS` characters, linear expressions only; odd input gives an empty result and
notes, never an exception.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kvlint.errors import UsageError
from kvlint.loaders.files import UnreadableFile, read_bytes
from kvlint.loaders.log_formats import (
    MAX_BYTES,
    MAX_LINE_CHARS,
    MAX_LINES,
    FormatEntry,
    Placeholder,
    format_tokens,
    log_lines,
    number,
    word_count,
)

MAX_JOINED_LINES = 8
MAX_POOLS = 64

FORMATS_FILE = Path(__file__).parent / "sglang_log_formats.json"
"""SGLang's format strings, per release (written by :mod:`kvlint.generators.sglang_log_table`)."""

SERVER_ARGS: dict[str, str] = {
    "model_path": "text", "tp_size": "int", "dp_size": "int", "pp_size": "int",
    "mem_fraction_static": "float", "kv_cache_dtype": "text", "context_length": "int",
    "page_size": "int", "max_total_tokens": "int", "chunked_prefill_size": "int",
    "cuda_graph_max_bs": "int", "enable_dp_attention": "bool", "dtype": "text",
    "quantization": "text", "speculative_algorithm": "text", "swa_full_tokens_ratio": "float",
    "attention_backend": "text", "max_running_requests": "int", "disable_cuda_graph": "bool",
}
"""The ``ServerArgs`` options read from the ``server_args=`` line, by kind."""

_RANK = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d((?: [A-Z]{1,4}\d{1,6}){1,4})\]")
_RECORD_START = re.compile(r"^\s{0,8}(?:\[\d{4}-|\d{4}-\d\d-\d\d |[A-Z]{4,8}[ :])")
_WORD = re.compile(r"[A-Za-z_]{3,40}")
_NUM = r"\d[\d,]{0,30}(?:\.\d{1,20})?"
_WORDISH = r"[\w.:/+-]{1,64}"
_SKIP_TEXT = r".{0,160}?"
_STRONG = 8
_POOL = re.compile(r"(?:^|\] |: )([\w .-]{0,48}?) ?KV Cache (?:is allocated|VA upper bound)")
_QUOTING = re.compile(r"[\"`{]|request|prompt", re.IGNORECASE)
_ARG_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(r"(?<![\w'])'?" + name + r"'?(?:=|: )(?:" + {
        "text": r"'([^']{0,1024})'",
        "int": r"(-?\d{1,12})(?![\d.])",
        "float": r"(\d{1,3}(?:\.\d{1,16})?(?:e-?\d{1,3})?)(?![\d.])",
        "bool": r"(True|False|true|false)"}[kind] + r"|(None|null))")
    for name, kind in SERVER_ARGS.items()}


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    gate: str
    head: str
    entry: int
    name: str
    text: bool


@functools.lru_cache(maxsize=1)
def format_table() -> tuple[tuple[str, ...], tuple[FormatEntry, ...], dict[str, tuple[str, str]]]:
    """(releases read, entries, server_args option -> (first, last)) of :data:`FORMATS_FILE`."""
    data = json.loads(FORMATS_FILE.read_text(encoding="utf-8"))
    entries = tuple(FormatEntry(e["id"], e["format"], e["style"], e["first"], e["last"],
                                e["source"], tuple(e["fields"])) for e in data["formats"])
    args = {k: (v["first"], v["last"]) for k, v in data.get("server_args", {}).items()}
    return tuple(data["versions"]), entries, args


def _meaning(text: str) -> tuple[str, bool, bool]:
    """(field, is text, negative allowed) of a table ``fields`` item (``-``: not read)."""
    name, _, rest = text.partition(",")
    return (name if not name.startswith("-") else "-"), "text" in rest, "negative" in rest


def _entry_patterns(entry: FormatEntry) -> list[tuple[str, str, str, str, bool]]:
    """(regex, gate word, head, field, is text) for each read placeholder of ``entry``."""
    meanings = [_meaning(m) for m in entry.fields]
    tokens = format_tokens(entry.format, entry.style)
    segment: list[str | int] = []
    count = 0
    for token in tokens:
        if isinstance(token, Placeholder):
            segment.append(count)
            count += 1
        else:
            segment.append(token.split("\n", 1)[0] if segment else token.rsplit("\n", 1)[-1])
    literals = [i for i in segment if isinstance(i, str) and i.strip()]
    head = literals[0].strip()[:40] if literals else ""
    out = []
    for position, item in enumerate(segment):
        if not isinstance(item, int) or item >= len(meanings) or meanings[item][0] in (
                "-", "pool", "server_args"):
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
                name, text, negative = meanings[part] if part < len(meanings) else ("-", 0, 0)
                parts.append(_SKIP_TEXT if name in ("-", "pool") else f"(?:{_WORDISH})" if text
                             else "(?:" + ("-?" if negative else "") + _NUM + ")")
        name, text, negative = meanings[item]
        parts.append(f"({_WORDISH})" if text else "(" + ("-?" if negative else "") + _NUM + ")")
        regex = "".join(parts)
        after_figure = start > 0 and isinstance(segment[start - 1], int)
        if (regex[:1].isalnum() or regex.startswith("#")) and not after_figure:
            regex = r"(?<![\w.])" + regex
        if not text:
            regex += r"(?![\d.]*\d)"
        left = [p for p in segment[start:position] if isinstance(p, str)]
        words = [w for p in left for w in _WORD.findall(p)]
        out.append((regex, max(words, key=len, default=""), head, name, text))
    return out


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[_Pattern, ...]:
    compiled = []
    for index, entry in enumerate(format_table()[1]):
        for regex, gate, head, name, text in _entry_patterns(entry):
            compiled.append(_Pattern(re.compile(regex), gate, head, index, name, text))
    return tuple(compiled)


@dataclass(frozen=True)
class KvPool:
    """One ``KV Cache is allocated`` line (one pool of one rank)."""

    rank: str
    label: str
    """``""`` (the only pool), ``Full``, ``SWA`` or another label SGLang printed."""
    tokens: int | None
    k_gib: float | None
    v_gib: float | None
    kv_gib: float | None
    dtype: str | None
    raw: tuple[str, ...]
    """The printed GiB figures (K, V or KV), for their rounding."""

    @property
    def gib(self) -> float | None:
        if self.kv_gib is not None:
            return self.kv_gib
        if self.k_gib is not None and self.v_gib is not None:
            return self.k_gib + self.v_gib
        return None


@dataclass(frozen=True)
class SglangLog:
    """What one SGLang start-up log says (``None``: the log does not print it). Memory is in
    GiB per GPU, as SGLang prints it (its ``GB``)."""

    free_start_gib: float | None = None
    """``Load weight begin. avail mem=``: free GPU memory before the weights."""
    free_after_load_gib: float | None = None
    weights_gib: float | None = None
    """``Load weight end. ... mem usage=``."""
    arch: str | None = None
    dtype: str | None = None
    kv_dtype: str | None = None
    pools: tuple[KvPool, ...] = ()
    """Every KV pool line, in order (all ranks)."""
    free_after_pool_gib: float | None = None
    max_total_num_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    available_gpu_mem_gib: float | None = None
    swa_full_tokens: int | None = None
    swa_tokens: int | None = None
    swa_pool_gib: float | None = None
    post_capture_tokens: int | None = None
    post_capture_kv_gib: float | None = None
    post_capture_free_gib: float | None = None
    mamba_cache_size: int | None = None
    mamba_conv_gib: float | None = None
    mamba_ssm_gib: float | None = None
    swa_disabled_arch: str | None = None
    server_args: dict[str, str] = field(default_factory=dict)
    """The options of :data:`SERVER_ARGS` the ``server_args=`` line printed (as printed)."""
    version_range: tuple[str, str] | None = None
    formats: tuple[str, ...] = ()
    """The ids of the table entries the lines read matched (sglang_log_formats.json)."""
    evidence: tuple[str, ...] = ()
    """The first few lines read (for "which lines decided it")."""
    ranks: tuple[str, ...] = ()
    lines: int = 0
    truncated: bool = False
    notes: tuple[str, ...] = ()
    raw: dict[str, str] = field(default_factory=dict, compare=False)

    def arg_int(self, name: str) -> int | None:
        try:
            return int(self.server_args[name])
        except (KeyError, ValueError):
            return None

    def arg_float(self, name: str) -> float | None:
        try:
            value = float(self.server_args[name])
        except (KeyError, ValueError, OverflowError):
            return None
        return value if value == value and value not in (float("inf"), float("-inf")) else None

    @property
    def tp(self) -> int | None:
        return self.arg_int("tp_size")

    @property
    def model(self) -> str | None:
        return self.server_args.get("model_path")

    def is_read(self) -> bool:
        """Anything of SGLang's start-up was read."""
        return bool(self.formats or self.server_args)


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


class _State:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.differs: dict[str, set[str]] = {}
        self.pools: list[KvPool] = []
        self.args: dict[str, str] = {}
        self.low: Version | None = None
        self.high: Version | None = None
        self.conflict = False
        self.ids: dict[str, None] = {}
        self.evidence: list[str] = []
        self.ranks: dict[str, None] = {}
        self.other_pools: dict[str, None] = {}

    def put(self, name: str, value: str) -> None:
        old = self.values.get(name)
        if old is None:
            self.values[name] = value
        elif old != value:
            seen = self.differs.setdefault(name, {old})
            if len(seen) < 8:
                seen.add(value)

    def narrow(self, first: str, last: str) -> None:
        low, high = _version(first), _version(last)
        if low is None or high is None:
            return
        new_low = low if self.low is None else max(low, self.low)
        new_high = high if self.high is None else min(high, self.high)
        if new_low > new_high:
            self.conflict = True
            return
        self.low, self.high = new_low, new_high


def _server_args(lines: list[str], index: int, state: _State) -> None:
    parts = [lines[index]]
    for follow in lines[index + 1:index + 1 + MAX_JOINED_LINES]:
        if not follow.strip() or _RECORD_START.search(follow):
            break
        parts.append(follow)
    joined = "".join(parts)[:MAX_LINE_CHARS]
    joined = joined[joined.find("server_args="):]
    _, entries, declared = format_table()
    repr_form = joined.startswith("server_args=ServerArgs(")
    if repr_form or joined.startswith("server_args={"):
        forms = [e for e in entries if e.id.startswith("server_args.")
                 and ("!r}" in e.format) == repr_form]
        for entry in forms:
            state.ids.setdefault(entry.id, None)
        if forms:
            state.narrow(min((e.first for e in forms), key=lambda v: _version(v) or Version("0")),
                         max((e.last for e in forms), key=lambda v: _version(v) or Version("0")))
    for name, pattern in _ARG_PATTERNS.items():
        found = pattern.search(joined)
        if found is None:
            continue
        value = next((g for g in found.groups() if g is not None), "")
        state.args.setdefault(name, value)
        if name in declared:
            state.narrow(*declared[name])


def _pool_label(line: str) -> str:
    found = _POOL.search(line)
    return found.group(1).strip() if found else ""


def _parse_line(lines: list[str], index: int, line: str, state: _State) -> None:
    rank_match = _RANK.search(line[:256]) if "[" in line else None
    rank = rank_match.group(1).strip() if rank_match else ""
    if "server_args=" in line and "server_args=" not in state.values:
        state.values["server_args="] = "1"
        _server_args(lines, index, state)
        if len(state.evidence) < 6:
            state.evidence.append(line[:160])
    words = set(_WORD.findall(line))
    table = format_table()[1]
    found: dict[str, str] = {}
    matched: set[int] = set()
    origin = len(line)
    for pattern in _patterns():
        if pattern.gate and pattern.gate not in words:
            continue
        if pattern.head and pattern.head not in line:
            continue
        hit = pattern.regex.search(line)
        if hit is None:
            continue
        at = line.rfind(pattern.head, 0, hit.start() + len(pattern.head)) if pattern.head \
            else hit.start()
        origin = min(origin, at if at >= 0 else hit.start())
        found.setdefault(pattern.name, hit.group(1))
        matched.add(pattern.entry)
    if not found or _QUOTING.search(line[:origin]):
        return
    if rank and len(state.ranks) < 64:
        state.ranks.setdefault(rank, None)
    if len(state.evidence) < 6:
        state.evidence.append(line[max(0, origin - 40):origin + 120])
    entries = [table[i] for i in sorted(matched)]
    lows = [e.first for e in entries]
    highs = [e.last for e in entries]
    low = min(lows, key=lambda v: _version(v) or Version("0"))
    high = max(highs, key=lambda v: _version(v) or Version("0"))
    state.narrow(low, high)
    for entry in entries:
        if len(state.ids) < 64:
            state.ids.setdefault(entry.id, None)
    if any(e.id.startswith("kv_allocated") for e in entries):
        label = _pool_label(line)
        if len(state.pools) < MAX_POOLS * 8:
            state.pools.append(_pool(rank, label, found))
        return
    for name, value in found.items():
        state.put(name, value)


def _pool(rank: str, label: str, found: dict[str, str]) -> KvPool:
    def figure(name: str) -> float | None:
        try:
            return number(found[name]) if name in found else None
        except ValueError:
            return None

    tokens = figure("kv_tokens")
    raw = tuple(found[n] for n in ("k_gib", "v_gib", "kv_gib") if n in found)
    return KvPool(rank, label, None if tokens is None else int(tokens), figure("k_gib"),
                  figure("v_gib"), figure("kv_gib"), found.get("kv_dtype"), raw)


_INTS = ("max_total_num_tokens", "chunked_prefill_size", "max_prefill_tokens",
         "max_running_requests", "context_len", "swa_full_tokens", "swa_tokens",
         "post_capture_tokens", "mamba_cache_size")
_FLOATS = ("free_start_gib", "free_after_load_gib", "weights_gib", "free_after_pool_gib",
           "available_gpu_mem_gib", "swa_pool_gib", "post_capture_kv_gib",
           "post_capture_free_gib", "mamba_conv_gib",
           "mamba_ssm_gib")
_STRINGS = ("arch", "dtype", "kv_dtype", "swa_disabled_arch")
_SMALLEST = ("free_start_gib", "free_after_load_gib", "free_after_pool_gib")
"""SGLang sizes every rank's pool from the smallest free memory over the ranks
(``get_available_gpu_memory(..., distributed=True)`` takes the minimum)."""


def parse_text(text: str) -> SglangLog:
    """The figures of the SGLang log ``text`` (pure; never raises on odd input)."""
    lines = list(log_lines(text))
    state = _State()
    for index, line in enumerate(lines):
        _parse_line(lines, index, line, state)
    values: dict[str, object] = {}
    for name, raw in state.values.items():
        try:
            if name in _INTS:
                values[name] = int(number(raw))
            elif name in _FLOATS:
                values[name] = number(raw)
                if name in _SMALLEST and name in state.differs:
                    values[name] = min(number(v) for v in state.differs[name])
            elif name in _STRINGS:
                values[name] = raw
        except (ValueError, OverflowError):
            continue
    notes = []
    for name, seen in sorted(state.differs.items()):
        if name in _SMALLEST:
            notes.append(f"{name} differs across ranks ({', '.join(sorted(seen)[:4])}): "
                         "used the smallest, as SGLang does")
    if state.conflict:
        notes.append("lines worded as different SGLang releases print them (several logs "
                     "joined?); the release range is from the lines that agree")
    if len(lines) >= MAX_LINES:
        notes.append(f"only the first {MAX_LINES:,} lines were read")
    version_range = None
    if state.low is not None and state.high is not None:
        version_range = (str(state.low), str(state.high))
    return SglangLog(**values, pools=tuple(state.pools),  # type: ignore[arg-type]
                     server_args=dict(state.args), version_range=version_range,
                     formats=tuple(state.ids), evidence=tuple(state.evidence),
                     ranks=tuple(state.ranks), lines=len(lines), notes=tuple(notes),
                     raw=dict(state.values))


def read_log(path: Path) -> SglangLog:
    """Parse the SGLang log file ``path`` (its first :data:`MAX_BYTES` bytes)."""
    try:
        data = read_bytes(path, MAX_BYTES, truncate=True)
    except UnreadableFile as err:
        raise UsageError(f"{path}: cannot read it ({err}); expected an SGLang start-up log "
                         "saved to a file") from None
    log = parse_text(data[:MAX_BYTES].decode("utf-8", "replace"))
    if len(data) > MAX_BYTES:
        log = replace(log, truncated=True,
                      notes=(*log.notes, f"only the first {MAX_BYTES // 2**20} MiB was read"))
    return log
