"""Read the figures an LMDeploy start-up log prints about its KV cache (pure text parsing; the
LMDeploy counterpart of :mod:`kvlint.loaders.sglang_log`).

LMDeploy has two engines, and each says different things:

* the serving engine logs its options once, ``updated backend_config=TurbomindEngineConfig(
  ...)`` or ``PytorchEngineConfig(...)`` (tp, ``cache_max_entry_count``, ``cache_block_seq_len``
  / ``block_size``, ``quant_policy``...), and up to 0.11 ``Using {backend} engine``;
* the PyTorch engine, at INFO, ``Building CacheEngine with config:`` and the ``CacheConfig(...)``
  repr on the next line (``block_size=64, ..., num_gpu_blocks=N, ...``: the cache's size in
  blocks, no bytes), and at DEBUG ``minimal free gpu memory: X mb`` (after the weights, the
  least over ranks), ``estimated max runtime memory: Y mb`` and ``Initialize cache engine
  with N gpu blocks``; a start that fails says ``No enough gpu memory for kv cache.``;
* TurboMind's C++ (``[TM][INFO] ...``): ``[BlockManager] block_size = X MB`` (whole MiB up to
  0.7, ``%.3f`` from 0.8, fmt from 0.13) and ``max_block_count = N`` (to 0.14), ``max cached
  tokens: N`` (0.12-0.14), the linear-state ``Adjusting block_count: free_before ...`` lines
  (0.12-0.14) and ``Object cache budget: X MB from free Y MB and ratio R`` (0.15+); and, from
  Python, the ``turbomind model config:`` JSON (0.6-0.13), whose ``cache_block_seq_len`` is the
  block's tokens.

The figures come from :data:`FORMATS_FILE`, ``lmdeploy_log_formats.json``: LMDeploy's own
format strings, Python and C++, read release by release by
:mod:`kvlint.generators.lmdeploy_log_table` (each entry cites ``path@version``), through
:class:`kvlint.loaders.log_formats.TableReader`. Written here, not from the table: the options of
the ``backend_config=`` and ``CacheConfig(`` reprs (:data:`BACKEND_ARGS`, :data:`CACHE_ARGS`)
and the keys of the TurboMind JSON (:data:`TM_CONFIG_KEYS`), followed over the lines after
their record. Bounded like the other readers; odd input gives an empty result and notes,
never an exception.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.loaders.log_formats import (
    EngineLog,
    TableReader,
    TableState,
    figure,
    figures,
    joined_record,
    log_lines,
    named_values,
    read_log_file,
)
from kvlint.loaders.start_failures import find_out_of_memory

FORMATS_FILE = Path(__file__).parent / "lmdeploy_log_formats.json"
"""LMDeploy's format strings, per release (written by
:mod:`kvlint.generators.lmdeploy_log_table`)."""

BACKEND_ARGS: dict[str, str] = {
    "tp": "int", "dp": "int", "session_len": "int", "max_batch_size": "int",
    "cache_max_entry_count": "float", "cache_block_seq_len": "int", "block_size": "int",
    "num_gpu_blocks": "int", "max_prefill_token_num": "int", "quant_policy": "int",
    "dtype": "text", "model_format": "text",
}
"""The engine-config options read from the ``backend_config=`` line, by kind."""
CACHE_ARGS: dict[str, str] = {
    "max_batches": "int", "block_size": "int", "num_gpu_blocks": "int", "num_cpu_blocks": "int",
    "window_size": "int", "cache_max_entry_count": "float", "max_prefill_token_num": "int",
    "quant_policy": "int", "kernel_block_size": "int",
}
"""The ``CacheConfig`` fields read from the line after ``Building CacheEngine with config:``."""
TM_CONFIG_KEYS = ("cache_block_seq_len", "cache_max_entry_count", "tp", "tensor_para_size",
                  "session_len", "quant_policy", "num_layer", "kv_head_num", "size_per_head")
"""The keys read from the ``turbomind model config:`` JSON."""

MAX_JSON_LINES = 400
_RECORD_START = re.compile(r"^\s{0,8}(?:\[\d{4}-|\d{4}-\d\d-\d\d[ T]|\[TM\]|[A-Z]{4,8}[ :\]])")
_NONE = r"|(None|null)"
_KINDS = {"text": r"'([^']{0,256})'",
          "int": r"(-?\d{1,12})(?![\d.])|<\w{1,40}\.\w{1,40}: (-?\d{1,6})>",
          "float": r"(\d{1,3}(?:\.\d{1,16})?(?:e-?\d{1,3})?)(?![\d.])"}


def _arg_patterns(names: dict[str, str]) -> dict[str, re.Pattern[str]]:
    return {name: re.compile(r"(?<![\w'\"])['\"]?" + name + r"['\"]?(?:=|: )(?:"
                             + _KINDS[kind] + _NONE + ")") for name, kind in names.items()}


_BACKEND_PATTERNS = _arg_patterns(BACKEND_ARGS)
_CACHE_PATTERNS = _arg_patterns(CACHE_ARGS)
_TM_PATTERNS = _arg_patterns({k: "float" if k == "cache_max_entry_count" else "int"
                              for k in TM_CONFIG_KEYS})


@functools.lru_cache(maxsize=1)
def table() -> TableReader:
    """The patterns of :data:`FORMATS_FILE`."""
    return TableReader(FORMATS_FILE)


def backend_arg_versions() -> dict[str, tuple[str, str]]:
    """``backend_config`` option -> (first, last) release read that declares it."""
    return {k: (v["first"], v["last"])
            for k, v in table().data.get("backend_args", {}).items()}


@dataclass(frozen=True)
class LmdeployLog(EngineLog):
    """What one LMDeploy start-up log says (``None``: the log does not print it). Memory in
    MiB as LMDeploy prints it (``mb`` and ``MB`` are ``>> 20`` / ``/ (1 << 20)``)."""

    backend_hint: str | None = None
    """``turbomind`` or ``pytorch`` as ``Using ... engine`` / ``input backend=`` print it."""
    backend_args: dict[str, str] = field(default_factory=dict)
    backend_class: str | None = None
    """``TurbomindEngineConfig`` or ``PytorchEngineConfig``: the repr's class."""
    cache_config: dict[str, str] = field(default_factory=dict)
    tm_config: dict[str, str] = field(default_factory=dict)
    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None
    free_mib: float | None = None
    runtime_mib: float | None = None
    max_prefill_token_num: int | None = None
    block_size: int | None = None
    """``Update `block_size=N` for large `head_dim=...```: the block's tokens, lowered."""
    head_dim: int | None = None
    out_of_memory: str | None = None
    session_len: int | None = None
    max_batch_size: int | None = None
    tm_tp: int | None = None
    block_mib: float | None = None
    block_mib_raw: str | None = None
    block_mib_whole: bool = False
    """TurboMind up to 0.7 prints ``block_size >> 20``: whole MiB, rounded down."""
    max_block_count: int | None = None
    max_cached_tokens: int | None = None
    session_len_truncated: int | None = None
    free_before_mib: float | None = None
    linear_mib: float | None = None
    target_mib: float | None = None
    adjusted_block_count: int | None = None
    cache_budget_mib: float | None = None
    tm_free_mib: float | None = None
    tm_cache_ratio: float | None = None
    default_block_seq_len: int | None = None
    default_cache_max_entry_count: float | None = None
    default_session_len: int | None = None

    def _int(self, values: dict[str, str], name: str) -> int | None:
        try:
            return int(values[name])
        except (KeyError, ValueError):
            return None

    def _float(self, values: dict[str, str], name: str) -> float | None:
        return figure(values.get(name))

    @property
    def backend(self) -> str | None:
        """``turbomind`` or ``pytorch``: what the lines read say ran."""
        if any(i.startswith("tm_") for i in self.formats) or \
                self.backend_class == "TurbomindEngineConfig":
            return "turbomind"
        if self.cache_config or self.num_gpu_blocks is not None or \
                self.backend_class == "PytorchEngineConfig":
            return "pytorch"
        return self.backend_hint if self.backend_hint in ("turbomind", "pytorch") else None

    @property
    def tp(self) -> int | None:
        return self._int(self.backend_args, "tp") or self.tm_tp or \
            self._int(self.tm_config, "tp") or self._int(self.tm_config, "tensor_para_size")

    @property
    def block_tokens(self) -> int | None:
        """Tokens per KV block: the PyTorch engine's ``block_size``, TurboMind's
        ``cache_block_seq_len``."""
        if self.backend == "turbomind":
            return self._int(self.backend_args, "cache_block_seq_len") or \
                self._int(self.tm_config, "cache_block_seq_len") or self.default_block_seq_len
        return self._int(self.cache_config, "block_size") or self.block_size or \
            self._int(self.backend_args, "block_size")

    @property
    def gpu_blocks(self) -> int | None:
        if self.backend == "turbomind":
            return self.adjusted_block_count or self.max_block_count
        return self._int(self.cache_config, "num_gpu_blocks") or self.num_gpu_blocks

    @property
    def kv_tokens(self) -> int | None:
        """The cache's tokens on one GPU, as printed (blocks x tokens per block)."""
        if self.backend == "turbomind" and self.max_cached_tokens:
            return self.max_cached_tokens
        blocks, tokens = self.gpu_blocks, self.block_tokens
        return blocks * tokens if blocks and tokens else None

    @property
    def cache_max_entry_count(self) -> float | None:
        return self._float(self.cache_config, "cache_max_entry_count") or \
            self._float(self.backend_args, "cache_max_entry_count") or \
            self._float(self.tm_config, "cache_max_entry_count") or \
            self.default_cache_max_entry_count or self.tm_cache_ratio

    @property
    def quant_policy(self) -> int | None:
        return self._int(self.cache_config, "quant_policy") if "quant_policy" in \
            self.cache_config else self._int(self.backend_args, "quant_policy")

    def is_read(self) -> bool:
        """Anything of LMDeploy's start-up was read."""
        return bool(self.formats or self.backend_args or self.cache_config)


def _joined(lines: list[str], index: int, start: str) -> str:
    """The record at ``lines[index]`` from ``start`` on, with the lines that continue it."""
    joined = joined_record(lines, index, _RECORD_START)
    at = joined.find(start)
    return joined[at:] if at >= 0 else ""


class _State(TableState):
    def __init__(self) -> None:
        super().__init__()
        self.backend_args: dict[str, str] = {}
        self.backend_class: str | None = None
        self.cache_config: dict[str, str] = {}
        self.tm_config: dict[str, str] = {}
        self.whole_mib = False
        self.differs: set[str] = set()


def _special(lines: list[str], index: int, name: str, state: _State) -> None:
    """The multi-line records: the engine config repr, the ``CacheConfig`` repr, the JSON."""
    if name == "backend_config" and not state.backend_args:
        text = _joined(lines, index, "backend_config=")
        found = re.match(r"backend_config=(\w{1,40})\(", text)
        if found is not None:
            state.backend_class = found.group(1)
            state.backend_args = named_values(text, _BACKEND_PATTERNS)
            versions = backend_arg_versions()
            for arg in state.backend_args:
                if arg in versions:
                    state.range.narrow(*versions[arg])
    elif name == "cache_config" and not state.cache_config:
        for at in range(index, min(index + 3, len(lines))):
            if "CacheConfig(" in lines[at]:
                state.cache_config = named_values(_joined(lines, at, "CacheConfig("),
                                                  _CACHE_PATTERNS)
                break
    elif name == "tm_config" and not state.tm_config:
        for follow in lines[index + 1:index + 1 + MAX_JSON_LINES]:
            if _RECORD_START.search(follow):
                break
            for key, value in named_values(follow, _TM_PATTERNS).items():
                state.tm_config.setdefault(key, value)


_SPECIAL = ("backend_config", "cache_config", "tm_config")


def _parse_line(lines: list[str], index: int, state: _State) -> None:
    reader = table()
    line = lines[index]
    hit = reader.match(line)
    if hit is None:
        return
    for entry in state.matched(reader, line, hit):
        if entry.id.startswith("tm_block_size") and "%lu" in entry.format \
                and "." not in hit.found.get("block_mib", "."):
            state.whole_mib = True
    for name, value in hit.found.items():
        if name in _SPECIAL:
            _special(lines, index, name, state)
        elif name == "!":
            state.values.setdefault("out_of_memory", line[hit.origin:hit.origin + 120].strip())
        elif name not in state.values:
            state.values[name] = value
        elif state.values[name] != value:
            state.differs.add(name)


_INTS = ("num_gpu_blocks", "num_cpu_blocks", "max_prefill_token_num", "block_size", "head_dim",
         "session_len", "max_batch_size", "max_block_count", "max_cached_tokens",
         "session_len_truncated", "adjusted_block_count", "default_block_seq_len",
         "default_session_len")
_FLOATS = ("free_mib", "runtime_mib", "block_mib", "free_before_mib", "linear_mib",
           "target_mib", "cache_budget_mib", "tm_free_mib", "tm_cache_ratio",
           "default_cache_max_entry_count")
_RENAMED = {"backend": "backend_hint", "tp": "tm_tp"}


def parse_text(text: str) -> LmdeployLog:
    """The figures of the LMDeploy log ``text`` (pure; never raises on odd input)."""
    lines = list(log_lines(text))
    state = _State()
    for index in range(len(lines)):
        _parse_line(lines, index, state)
    values: dict[str, object] = {
        _RENAMED.get(name, name): value
        for name, value in figures(state.values, _INTS, _FLOATS).items()}
    if "backend" in state.values:
        values[_RENAMED["backend"]] = state.values["backend"].strip().lower()[:200]
    if "out_of_memory" in state.values:
        values["out_of_memory"] = state.values["out_of_memory"]
    notes = []
    for name in sorted(state.differs & {"block_mib", "max_block_count", "free_mib"}):
        notes.append(f"{name} differs between lines (several ranks, or several starts in one "
                     "file): the first is used")
    notes += state.conflict_notes("LMDeploy")
    return LmdeployLog(**values,  # type: ignore[arg-type]
                       oom=find_out_of_memory(lines),
                       **state.result(len(lines), notes),
                       backend_args=state.backend_args, backend_class=state.backend_class,
                       cache_config=state.cache_config, tm_config=state.tm_config,
                       block_mib_raw=state.values.get("block_mib"),
                       block_mib_whole=state.whole_mib)


def read_log(path: Path) -> LmdeployLog:
    """Parse the LMDeploy log file ``path`` (its first
    :data:`~kvlint.loaders.log_formats.MAX_BYTES` bytes)."""
    return read_log_file(path, "an LMDeploy", parse_text)
