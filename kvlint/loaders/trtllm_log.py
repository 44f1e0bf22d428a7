"""Read the figures a TensorRT-LLM start-up log prints about its KV cache (pure text parsing;
the TensorRT-LLM counterpart of :mod:`kvlint.loaders.sglang_log`).

TensorRT-LLM prints, from its C++ KV cache manager (``[TensorRT-LLM][INFO] ...``, per rank):
``Memory usage when calculating max tokens in paged kv cache: total: X GiB, available: Y GiB``
(the TensorRT workflow's sizing), ``Number of tokens per block: N.`` and ``[MemUsageChange]
Allocated X GiB for max tokens in paged KV cache (N).``: the pool's bytes (every primary pool,
``%0.2f`` GiB) and its tokens (primary blocks x tokens per block); the 0.7 ``gptSession`` said
``Using N tokens in paged KV cache.``. The PyTorch backend (``[TRT-LLM] [I] ...``) profiles
first, with a small temporary cache (so a first ``Allocated`` line comes before the real
one), and prints the memory after the weights, the profiled activations and non-torch memory,
and ``Peak memory during memory usage profiling ...: X GiB, available KV cache memory when
calculating max tokens: Y GiB, fraction is set F, kv size is N. device total memory T GiB``:
``kv size`` is TensorRT-LLM's own per-token ESTIMATE (``head_dim x kv // tp``, smaller than the
pool's when tp does not divide the KV heads), not the pool's bytes. ``import tensorrt_llm``
prints ``[TensorRT-LLM] TensorRT-LLM version: V``.

The figures come from :data:`FORMATS_FILE`, ``trtllm_log_formats.json``: TensorRT-LLM's own
format strings read by :mod:`kvlint.generators.trtllm_log_table` (each entry cites
``path@version``), through :class:`kvlint.loaders.log_formats.TableReader`; the version line
is read here. Every ``Allocated`` line is kept, in order (:attr:`TrtllmLog.allocations`).
Bounded like the other readers; odd input gives an empty result and notes, never an
exception.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from kvlint.loaders.log_formats import (
    MAX_JOINED_LINES,
    MAX_LINE_CHARS,
    EngineLog,
    TableReader,
    TableState,
    figure,
    figures,
    log_lines,
    read_log_file,
)
from kvlint.loaders.start_failures import find_out_of_memory

FORMATS_FILE = Path(__file__).parent / "trtllm_log_formats.json"
"""TensorRT-LLM's format strings, per release (written by
:mod:`kvlint.generators.trtllm_log_table`)."""

MAX_ALLOCATIONS = 256


def _unwrapped(lines: list[str], index: int) -> str:
    """``lines[index]`` with the indented lines after it, as a terminal or a blog wraps one
    record (each joined with one space; at most :data:`MAX_JOINED_LINES` of them)."""
    parts = [lines[index]]
    for follow in lines[index + 1:index + 1 + MAX_JOINED_LINES]:
        if follow[:1] not in (" ", "\t") or not follow.strip():
            break
        parts.append(follow.strip())
    return " ".join(parts)[:MAX_LINE_CHARS] if len(parts) > 1 else lines[index]


_VERSION = re.compile(r"TensorRT-LLM version: (\d{1,4}(?:\.\d{1,6}){1,3}(?:(?:rc|a|b|\.post|"
                      r"\.dev)\d{1,12})?)")


@functools.lru_cache(maxsize=1)
def table() -> TableReader:
    """The patterns of :data:`FORMATS_FILE`."""
    return TableReader(FORMATS_FILE)


@dataclass(frozen=True)
class Allocation:
    """One ``[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)`` line."""

    gib: float
    raw: str
    """The GiB figure as printed, for its rounding."""
    tokens: int
    after_profile: bool
    """Printed after the PyTorch backend's ``Peak memory`` line (the final cache)."""


@dataclass(frozen=True)
class TrtllmLog(EngineLog):
    """What one TensorRT-LLM start-up log says (``None``: not printed). Memory in GiB
    (TensorRT-LLM's ``GiB``: ``/ (1 << 30)``)."""

    version: str | None = None
    """``TensorRT-LLM version: V`` as printed."""
    total_gib: float | None = None
    available_gib: float | None = None
    tokens_per_block: int | None = None
    allocations: tuple[Allocation, ...] = ()
    window_size: int | None = None
    window_primary_blocks: int | None = None
    primary_blocks: int | None = None
    session_kv_tokens: int | None = None
    config_fraction: float | None = None
    config_max_tokens: int | None = None
    peak_gib: float | None = None
    profiled_available_gib: float | None = None
    fraction: float | None = None
    kv_size_estimate: int | None = None
    device_total_gib: float | None = None
    tmp_kv_gib: float | None = None
    weights_gib: float | None = None
    weights_outside_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None

    @property
    def pool(self) -> Allocation | None:
        """The KV pool the server runs with: the first ``Allocated`` line after the PyTorch
        backend's profile, else the last one printed."""
        after = [a for a in self.allocations if a.after_profile]
        if after:
            return after[0]
        return self.allocations[-1] if self.allocations else None

    @property
    def total_memory_gib(self) -> float | None:
        """The GPU's total memory as CUDA reports it (either line)."""
        return self.device_total_gib or self.total_gib

    @property
    def pytorch_backend(self) -> bool:
        return any(i.startswith(("peak", "weights", "activations", "non_torch"))
                   for i in self.formats)

    def is_read(self) -> bool:
        """Anything of TensorRT-LLM's start-up was read."""
        return bool(self.formats or self.version)


class _State(TableState):
    def __init__(self) -> None:
        super().__init__()
        self.allocations: list[Allocation] = []
        self.profiled = False
        self.version: str | None = None


def _parse_line(line: str, state: _State) -> None:
    if state.version is None and "TensorRT-LLM version" in line:
        printed = _VERSION.search(line)
        if printed is not None:
            state.version = printed.group(1)
            state.cite(line[:160])
    reader = table()
    hit = reader.match(line)
    if hit is None:
        return
    state.matched(reader, line, hit)
    found = dict(hit.found)
    if "peak_gib" in found:
        state.profiled = True
    if "kv_bytes" in found and "kv_tokens" in found:  # bytes, not GiB: exact
        size = figure(found.pop("kv_bytes"))
        if size is not None and 0 < size < 2**62:
            found["kv_gib"] = f"{size / 2**30:.12f}"
    if "kv_gib" in found and "kv_tokens" in found:
        raw = found["kv_gib"]
        gib, tokens = figure(found.pop("kv_gib")), figure(found.pop("kv_tokens"))
        if gib is not None and tokens is not None and 0 < tokens < 2**62 \
                and len(state.allocations) < MAX_ALLOCATIONS:
            state.allocations.append(Allocation(gib, raw, int(tokens), state.profiled))
    for name, value in found.items():
        state.values.setdefault(name, value)


_INTS = ("tokens_per_block", "window_size", "window_primary_blocks", "primary_blocks",
         "session_kv_tokens", "config_max_tokens", "kv_size_estimate")
_FLOATS = ("total_gib", "available_gib", "config_fraction", "peak_gib",
           "profiled_available_gib", "fraction", "device_total_gib", "tmp_kv_gib",
           "weights_gib", "weights_outside_gib", "activation_gib", "non_torch_gib")


def parse_text(text: str) -> TrtllmLog:
    """The figures of the TensorRT-LLM log ``text`` (pure; never raises on odd input)."""
    lines = list(log_lines(text))
    state = _State()
    for index in range(len(lines)):
        _parse_line(_unwrapped(lines, index), state)
    notes = state.conflict_notes("TensorRT-LLM")
    sizes = {(a.raw, a.tokens) for a in state.allocations if a.after_profile} or \
        {(a.raw, a.tokens) for a in state.allocations[-1:]}
    if len({a.tokens for a in state.allocations if a.after_profile}) > 1:
        notes.append(f"{len(sizes)} different final KV pools printed (ranks or a draft "
                     "model's cache): the first is compared")
    size = figure(state.values.pop("kv_bytes", None))
    tokens = figure(state.values.get("session_kv_tokens"))
    if not state.allocations and size and tokens and 0 < size < 2**62 and 0 < tokens < 2**62:
        # 0.8's "Allocate B bytes for k/v cache." beside "Using N tokens in paged KV cache"
        state.allocations.append(Allocation(size / 2**30, f"{size / 2**30:.12f}",
                                            int(tokens), False))
    return TrtllmLog(**figures(state.values, _INTS, _FLOATS),  # type: ignore[arg-type]
                     **state.result(len(lines), notes), version=state.version,
                     oom=find_out_of_memory(lines),
                     allocations=tuple(state.allocations))


def read_log(path: Path) -> TrtllmLog:
    """Parse the TensorRT-LLM log file ``path`` (its first
    :data:`~kvlint.loaders.log_formats.MAX_BYTES` bytes)."""
    return read_log_file(path, "a TensorRT-LLM", parse_text)
