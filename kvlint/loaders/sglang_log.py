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
  (each entry cites ``path@version``), through :class:`kvlint.loaders.log_formats.TableReader`.
  Every placeholder the table names a field for becomes one linear regular expression: the
  placeholder and the literal text before it (extended over neighbouring placeholders until
  it names enough words), so a line wrapped or cut after the figure is still read; a line
  must also hold the entry's first words. The entries matched
  narrow :attr:`SglangLog.version_range`, and so do the ``server_args`` options present (the
  table's ``server_args``: the releases that declare each);
* written here, not from the table: the options of the ``server_args=`` line
  (:data:`SERVER_ARGS`, as ``name=value`` or ``'name': value``), followed over wrapped lines;
  the pool label before ``KV Cache is allocated`` and the rank label of the prefix.

Bounded like the vLLM reader (:mod:`kvlint.loaders.log_formats`): ``MAX_BYTES`` of the file,
``MAX_LINES`` lines of at most ``MAX_LINE_CHARS`` characters, linear expressions only; odd
input gives an empty result and notes, never an exception.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.loaders.log_formats import (
    MAX_JOINED_LINES,
    MAX_LINE_CHARS,
    EngineLog,
    FormatEntry,
    TableReader,
    TableState,
    figure,
    joined_record,
    log_lines,
    named_values,
    number,
    read_log_file,
)
from kvlint.loaders.start_failures import find_out_of_memory

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
_POOL = re.compile(r"(?:^|\] |: )([\w .-]{0,48}?) ?KV Cache (?:is allocated|VA upper bound)")
_UNREAD = frozenset({"pool", "server_args"})
"""Table fields read here, not by the table's patterns: the pool label, the options."""
_ARG_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(r"(?<![\w'])'?" + name + r"'?(?:=|: )(?:" + {
        "text": r"'([^']{0,1024})'",
        "int": r"(-?\d{1,12})(?![\d.])",
        "float": r"(\d{1,3}(?:\.\d{1,16})?(?:e-?\d{1,3})?)(?![\d.])",
        "bool": r"(True|False|true|false)"}[kind] + r"|(None|null))")
    for name, kind in SERVER_ARGS.items()}


@functools.lru_cache(maxsize=1)
def table() -> TableReader:
    """The patterns of :data:`FORMATS_FILE`."""
    return TableReader(FORMATS_FILE, _UNREAD)


def format_table() -> tuple[tuple[str, ...], tuple[FormatEntry, ...], dict[str, tuple[str, str]]]:
    """(releases read, entries, server_args option -> (first, last)) of :data:`FORMATS_FILE`."""
    reader = table()
    args = {k: (v["first"], v["last"]) for k, v in reader.data.get("server_args", {}).items()}
    return reader.versions, reader.entries, args


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
class SglangLog(EngineLog):
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
    ranks: tuple[str, ...] = ()

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


class _State(TableState):
    def __init__(self) -> None:
        super().__init__()
        self.differs: dict[str, set[str]] = {}
        self.pools: list[KvPool] = []
        self.args: dict[str, str] = {}
        self.ranks: dict[str, None] = {}

    def put(self, name: str, value: str) -> None:
        old = self.values.get(name)
        if old is None:
            self.values[name] = value
        elif old != value:
            seen = self.differs.setdefault(name, {old})
            if len(seen) < 8:
                seen.add(value)


def _server_args(lines: list[str], index: int, state: _State) -> None:
    joined = joined_record(lines, index, _RECORD_START)
    joined = joined[joined.find("server_args="):]
    _, entries, declared = format_table()
    repr_form = joined.startswith("server_args=ServerArgs(")
    if repr_form or joined.startswith("server_args={"):
        forms = [e for e in entries if e.id.startswith("server_args.")
                 and ("!r}" in e.format) == repr_form]
        for entry in forms:
            state.ids.setdefault(entry.id, None)
        state.range.narrow_entries(forms)
    for name, value in named_values(joined, _ARG_PATTERNS).items():
        state.args.setdefault(name, value)
        if name in declared:
            state.range.narrow(*declared[name])


def _pool_label(line: str) -> str:
    found = _POOL.search(line)
    return found.group(1).strip() if found else ""


def _parse_line(lines: list[str], index: int, line: str, state: _State) -> None:
    rank_match = _RANK.search(line[:256]) if "[" in line else None
    rank = rank_match.group(1).strip() if rank_match else ""
    if "server_args=" in line and "server_args=" not in state.values:
        state.values["server_args="] = "1"
        _server_args(lines, index, state)
        state.cite(line[:160])
    reader = table()
    hit = reader.match(line)
    if hit is None:
        return
    if rank and len(state.ranks) < 64:
        state.ranks.setdefault(rank, None)
    entries = state.matched(reader, line, hit)
    if any(e.id.startswith("kv_allocated") for e in entries):
        label = _pool_label(line)
        if len(state.pools) < MAX_POOLS * 8:
            state.pools.append(_pool(rank, label, hit.found))
        return
    for name, value in hit.found.items():
        state.put(name, value)


def _pool(rank: str, label: str, found: dict[str, str]) -> KvPool:
    tokens = figure(found.get("kv_tokens"))
    raw = tuple(found[n] for n in ("k_gib", "v_gib", "kv_gib") if n in found)
    return KvPool(rank, label, None if tokens is None else int(tokens),
                  figure(found.get("k_gib")), figure(found.get("v_gib")),
                  figure(found.get("kv_gib")), found.get("kv_dtype"), raw)


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


def _unwrapped(lines: list[str], index: int) -> str:
    """``lines[index]`` with the lines that continue it when it ends in a comma: a record a
    terminal or a post wrapped after one of its ``name=value,`` fields (no SGLang format ends
    a line with a comma), up to a blank line or a line that starts a record of its own (a
    ``[`` prefix); at most :data:`MAX_JOINED_LINES` of them, each joined with one space."""
    parts = [lines[index]]
    while parts[-1].rstrip().endswith(",") and len(parts) <= MAX_JOINED_LINES:
        at = index + len(parts)
        follow = lines[at] if at < len(lines) else ""
        if not follow.strip() or follow.lstrip().startswith("["):
            break
        parts.append(follow.strip())
    return " ".join(p.rstrip() for p in parts)[:MAX_LINE_CHARS] if len(parts) > 1 \
        else lines[index]


def parse_text(text: str) -> SglangLog:
    """The figures of the SGLang log ``text`` (pure; never raises on odd input)."""
    lines = list(log_lines(text))
    state = _State()
    for index in range(len(lines)):
        _parse_line(lines, index, _unwrapped(lines, index), state)
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
    notes += state.conflict_notes("SGLang")
    return SglangLog(**values, **state.result(len(lines), notes),  # type: ignore[arg-type]
                     oom=find_out_of_memory(lines),
                     pools=tuple(state.pools), server_args=dict(state.args),
                     ranks=tuple(state.ranks))


def read_log(path: Path) -> SglangLog:
    """Parse the SGLang log file ``path`` (its first
    :data:`~kvlint.loaders.log_formats.MAX_BYTES` bytes)."""
    return read_log_file(path, "an SGLang", parse_text)
