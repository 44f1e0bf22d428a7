"""Read the figures a vLLM start-up log prints about its KV cache (pure text parsing).

A log pasted from a terminal, a GitHub issue or ``docker logs`` carries prefixes
(``(EngineCore_DP0 pid=1) INFO 10-03 16:22:17 [gpu_worker.py:298]``, ``(VllmWorker rank=0
pid=7)``, ``> app-1 |``), ANSI colours, wrapped lines and several ranks' copies of a line.
Every pattern below is searched *inside* a line, so any prefix is tolerated. Lines are
capped at :data:`MAX_LINE_CHARS` and the text at :data:`MAX_BYTES`, so a hostile file (one
huge line, binary, NUL bytes) costs bounded time and memory; every regular expression is
linear (no nested quantifiers).

The lines read (vLLM V0 and V1, 0.5 to 0.2x formats):

* engine config: ``Initializing a V1 LLM engine (v0.8.3) with config: model='...',
  ... dtype=torch.bfloat16, max_seq_len=102400, ... tensor_parallel_size=1,
  pipeline_parallel_size=1, ... enforce_eager=True, kv_cache_dtype=auto, ...``; the
  ``non-default args: {...}`` dict and the banner's ``version X`` / ``model Y``;
* memory profiling: V0 ``Loading model weights took X GB``, ``Memory profiling results:
  ... non_torch_memory=XGiB kv_cache_size=XGiB gpu_memory_utilization=0.90`` or ``model
  weights take XGiB; non_torch_memory takes XGiB; PyTorch activation peak memory takes
  XGiB; the rest of the memory reserved for KV Cache is XGiB``; V1 ``Model loading took X
  GiB``, ``Available KV cache memory: X GiB``, ``Estimated CUDA graph memory: X GiB``,
  newer ``Actual usage is X GiB for consumed memory (weights + non-torch), X GiB for peak
  activation, and X GiB for CUDAGraph memory ... Current kv cache memory in use is X GiB``;
* capacity: ``# GPU blocks: N`` (V0 also ``, # CPU blocks: M``), ``GPU KV cache size: N
  tokens``, ``Maximum concurrency for L tokens per request: Xx``, and the start-up errors
  ``maximum number of tokens that can be stored in KV cache (N)`` and ``(X GiB KV cache is
  needed, which is larger than the available KV cache memory (Y GiB)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.errors import UsageError

MAX_BYTES = 32 * 1024 * 1024
"""Read at most this much of a log file (a start-up log is a few hundred KiB)."""
MAX_LINE_CHARS = 64 * 1024
"""A longer line is cut here before any pattern looks at it."""
MAX_LINES = 500_000
"""Lines past this many are not read (a start-up log has a few thousand)."""
MAX_JOINED_LINES = 8
"""A wrapped engine-config line is followed over at most this many continuation lines."""

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_RANK = re.compile(r"\(([A-Za-z][\w-]{0,40}(?: rank=\d{1,6})?) pid=\d{1,10}"
                   r"(?:, ip=[\w.:-]{1,64})?\)")
_RECORD_START = re.compile(r"(?:\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:)|"
                           r"(?:\([A-Za-z][\w-]{0,40}(?: rank=\d{1,6})? pid=\d{1,10}\))")
_NUM = r"(\d[\d,]{0,30}(?:\.\d{1,12})?)"

_ENGINE = re.compile(r"Initializing an? (?:(V[01]) )?LLM engine \(v?([^)\s]{1,80})\) with config")
_BANNER_VERSION = re.compile(r"\bversion\s+(\d[\w.+-]{0,80})")
_BANNER_MODEL = re.compile(r"\bmodel\s{2,}(\S{1,512})")

_CONFIG_FIELDS: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"\bmodel='([^']{0,1024})'"),
    "tp": re.compile(r"\btensor_parallel_size=(\d{1,6})"),
    "pp": re.compile(r"\bpipeline_parallel_size=(\d{1,6})"),
    "dtype": re.compile(r"\bdtype=(?:torch\.)?(\w{1,32})"),
    "max_model_len": re.compile(r"\bmax_seq_len=(\d{1,12})"),
    "kv_cache_dtype": re.compile(r"\bkv_cache_dtype=(\w{1,32})"),
    "enforce_eager": re.compile(r"\benforce_eager=(True|False)"),
    "block_size": re.compile(r"\bblock_size=(\d{1,6})"),
    "gpu_memory_utilization": re.compile(r"\bgpu_memory_utilization=(\d{1,3}(?:\.\d{1,12})?)"),
}
_ARGS_FIELDS: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"'model': '([^']{0,1024})'"),
    "tp": re.compile(r"'tensor_parallel_size': (\d{1,6})"),
    "pp": re.compile(r"'pipeline_parallel_size': (\d{1,6})"),
    "dtype": re.compile(r"'dtype': '(\w{1,32})'"),
    "max_model_len": re.compile(r"'max_model_len': (\d{1,12})"),
    "kv_cache_dtype": re.compile(r"'kv_cache_dtype': '(\w{1,32})'"),
    "enforce_eager": re.compile(r"'enforce_eager': (True|False)"),
    "block_size": re.compile(r"'block_size': (\d{1,6})"),
    "gpu_memory_utilization": re.compile(r"'gpu_memory_utilization': (\d{1,3}(?:\.\d{1,12})?)"),
}
_MAX_MODEL_LEN = re.compile(r"Using max model len (\d{1,12})")

_GIB = r"\s?GiB"
_MEMORY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("weights_gib", re.compile(r"Loading model weights took " + _NUM + r"\s?GB")),
    ("weights_gib", re.compile(r"Model loading took " + _NUM + _GIB)),
    ("weights_gib", re.compile(r"model weights take\s{1,16}" + _NUM + _GIB)),
    ("non_torch_gib", re.compile(r"non_torch_memory(?:=| takes |\s{2,16})" + _NUM + _GIB)),
    ("non_torch_gib", re.compile(r"non-torch forward increase memory: " + _NUM + _GIB)),
    ("non_torch_gib", re.compile(_NUM + r" GiB for non-torch memory")),
    ("activation_peak_gib", re.compile(r"activation peak memory(?: takes)?\s{1,16}" + _NUM
                                       + _GIB)),
    ("activation_peak_gib", re.compile(r"torch peak memory increase: " + _NUM + _GIB)),
    ("peak_torch_gib", re.compile(r"\bpeak_torch_memory=" + _NUM + _GIB)),
    ("activation_peak_gib", re.compile(_NUM + r" GiB for peak activation")),
    ("consumed_gib", re.compile(_NUM + r" GiB for consumed memory")),
    ("cuda_graph_gib", re.compile(r"Estimated CUDA graph memory: " + _NUM + _GIB)),
    ("cuda_graph_gib", re.compile(_NUM + r" GiB for CUDAGraph memory")),
    ("cuda_graph_gib", re.compile(r"Graph capturing finished in \d{1,6} secs?, took " + _NUM
                                  + _GIB)),
    ("total_gpu_gib", re.compile(r"total_gpu_memory(?:=|\s{2,16})" + _NUM + _GIB)),
    ("total_gpu_gib", re.compile(r"\btotal_memory=" + _NUM + _GIB)),
    ("kv_cache_gib", re.compile(r"Available KV cache memory: " + _NUM + _GIB)),
    ("kv_cache_gib", re.compile(r"\bkv_cache_size=" + _NUM + _GIB)),
    ("kv_cache_gib", re.compile(r"\bavailable_kv_cache_memory\s{1,16}" + _NUM + _GIB)),
    ("kv_cache_gib", re.compile(r"reserved for KV Cache is " + _NUM + _GIB)),
    # --kv-cache-memory-bytes: "reserved 20.00GiB memory for KV Cache as specified by
    # kv_cache_memory_bytes config and skipped memory profiling" (vllm/v1/worker/
    # gpu_worker.py@v0.11.0 lines 240-247; "20.0 GiB" @v0.34.0 lines 696-706)
    ("kv_cache_set_gib", re.compile(r"reserved " + _NUM + _GIB + r" memory for KV Cache as "
                                    r"specified by kv_cache_memory_bytes")),
    ("kv_in_use_gib", re.compile(r"Current kv cache memory in use is " + _NUM + _GIB)),
    ("gpu_memory_utilization", re.compile(r"\bgpu_memory_utilization(?:=|\s{2,16})"
                                          r"(\d{1,3}(?:\.\d{1,12})?)")),
    ("gpu_memory_utilization", re.compile(r"gpu_memory_utilization \((\d{1,3}(?:\.\d{1,12})?)\)")),
    ("gpu_memory_utilization", re.compile(r"current --gpu-memory-utilization="
                                          r"(\d{1,3}(?:\.\d{1,12})?) is equivalent")),
    ("gpu_memory_utilization", re.compile(r"Desired GPU memory utilization is \("
                                          r"(\d{1,3}(?:\.\d{1,12})?),")),
)
_SNAPSHOT_ONLY = ("total_gpu_gib",)
"""V1's ``worker init memory snapshot`` line (debug level, before the model loads) also
prints ``non_torch_memory=``: the CUDA context, not the profile's increase; only its
``total_memory=`` is read."""
_SMALLEST = ("kv_cache_gib", "kv_in_use_gib")
"""Per-rank KV memory: vLLM sizes every worker's cache to the smallest (pipeline stages differ
in weights and activation peak), so the smallest printed figure is the one the printed tokens
come from (vllm/v1/core/kv_cache_utils.py@v0.19.0 ``get_kv_cache_configs``: the number of
blocks is the minimum over workers)."""
_LARGEST = ("activation_peak_gib", "non_torch_gib")
"""Per-rank profile terms: the fullest rank's figure (pipeline stages: the last one, with the
sampler, sets the smallest KV pool)."""

_GPU_BLOCKS = re.compile(r"(?:^|[^\w])(?:# )?GPU blocks: " + _NUM)
_CPU_BLOCKS = re.compile(r"# CPU blocks: " + _NUM)
_KV_TOKENS = re.compile(r"GPU KV cache size: " + _NUM + r" tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: "
                          + _NUM + r"x")
_MAX_TOKENS_ERROR = re.compile(r"maximum number of tokens that can be stored in KV cache "
                               r"\(" + _NUM + r"\)")
_NEEDED = re.compile(r"max seq len \(" + _NUM + r"\), \(" + _NUM + r" GiB KV cache is needed, "
                     r"which is larger than the available KV cache memory \(" + _NUM + r" GiB\)")


@dataclass(frozen=True)
class VllmLog:
    """What one vLLM start-up log says (``None``: the log does not print it)."""

    model: str | None = None
    version: str | None = None
    engine: str | None = None
    """``V0`` or ``V1`` when the engine-config line names it."""
    tp: int | None = None
    pp: int | None = None
    dtype: str | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    enforce_eager: bool | None = None
    block_size: int | None = None
    weights_gib: float | None = None
    """Model weights per GPU (V0 prints "GB" for what it computes in GiB)."""
    non_torch_gib: float | None = None
    activation_peak_gib: float | None = None
    peak_torch_gib: float | None = None
    """V0's ``peak_torch_memory`` (weights included)."""
    consumed_gib: float | None = None
    cuda_graph_gib: float | None = None
    total_gpu_gib: float | None = None
    kv_cache_gib: float | None = None
    """The KV pool per GPU: ``Available KV cache memory``, V0's ``kv_cache_size=`` or
    ``reserved for KV Cache is``."""
    kv_in_use_gib: float | None = None
    kv_cache_set_gib: float | None = None
    """The KV cache size ``--kv-cache-memory-bytes`` gave (vLLM then skips its memory
    profile and reserves exactly that)."""
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    kv_tokens: int | None = None
    """``GPU KV cache size: N tokens``."""
    concurrency_tokens: int | None = None
    concurrency: float | None = None
    max_tokens_error: int | None = None
    """V0's start-up error: the tokens the KV cache can store."""
    needed_gib: float | None = None
    """V1's start-up error: the KV memory one max-length request needs ..."""
    needed_len: int | None = None
    """... at this max seq len."""
    ranks: tuple[str, ...] = ()
    """Process labels seen in prefixes (``EngineCore_DP0``, ``Worker_TP1``...)."""
    lines: int = 0
    truncated: bool = False
    """The file was longer than :data:`MAX_BYTES` (only its start was read)."""
    notes: tuple[str, ...] = ()
    raw: dict[str, str] = field(default_factory=dict, compare=False)
    """The matched text of each field, as printed (for the report)."""

    @property
    def capacity_tokens(self) -> int | None:
        """Tokens the KV pool holds per GPU: the printed size, else blocks x block size."""
        if self.kv_tokens is not None:
            return self.kv_tokens
        if self.gpu_blocks is not None:
            return self.gpu_blocks * (self.block_size or 16)
        return None

    @property
    def kv_memory_gib(self) -> float | None:
        """The KV pool in GiB: the smaller of the available memory and the memory in use
        (a pipeline-parallel log prints "Available KV cache memory" for its first stage only;
        every stage's "in use" line shows the smallest, which sized the cache)."""
        known = [v for v in (self.kv_cache_gib, self.kv_in_use_gib, self.kv_cache_set_gib)
                 if v is not None]
        return min(known) if known else None

    def has_kv_figures(self) -> bool:
        return self.kv_memory_gib is not None and self.capacity_tokens is not None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _clean(line: str) -> str:
    line = _ANSI.sub("", line[:MAX_LINE_CHARS])
    return _CONTROL.sub("", line)


def _lines(text: str) -> Iterable[str]:
    """Lines split on newlines only (``\r`` dropped), each cut and cleaned, lazily."""
    start = 0
    count = 0
    while start < len(text) and count < MAX_LINES:
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield _clean(text[start:min(end, start + MAX_LINE_CHARS)]).rstrip("\r")
        count += 1
        start = end + 1


class _Fields:
    """First value per field (per rank order; the smallest of :data:`_SMALLEST`, the largest
    of :data:`_LARGEST`), with a note when ranks disagree."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.rank_of: dict[str, str] = {}
        self.differs: dict[str, set[str]] = {}

    def put(self, name: str, value: str, rank: str) -> None:
        if name not in self.values or self._replaces(name, value):
            if name in self.values and self.values[name] != value:
                self.differs.setdefault(name, {self.values[name]}).add(value)
            self.values[name] = value
            self.rank_of[name] = rank
        elif self.values[name] != value:
            seen = self.differs.setdefault(name, {self.values[name]})
            if len(seen) < 8:
                seen.add(value)


    def _replaces(self, name: str, value: str) -> bool:
        if name not in _SMALLEST and name not in _LARGEST:
            return False
        try:
            new, old = _number(value), _number(self.values[name])
        except ValueError:
            return False
        return new < old if name in _SMALLEST else new > old


def _config_text(lines: list[str], index: int) -> str:
    """The engine-config line at ``index`` with its wrapped continuation lines joined."""
    parts = [lines[index]]
    for follow in lines[index + 1:index + 1 + MAX_JOINED_LINES]:
        if not follow.strip() or _RECORD_START.search(follow):
            break
        parts.append(follow)
    return "".join(parts)[:MAX_LINE_CHARS]


def parse_text(text: str) -> VllmLog:
    """The figures of the vLLM log ``text`` (pure; never raises on odd input)."""
    lines = list(_lines(text))
    fields = _Fields()
    ranks: dict[str, None] = {}
    for index, line in enumerate(lines):
        # cheap substring gates keep a long hostile line from meeting every pattern
        # the innermost prefix names the process: (EngineCore_DP0 pid=1) (RayWorkerWrapper ...)
        labels = _RANK.findall(line[:512]) if " pid=" in line else []
        rank = labels[-1] if labels else ""
        if rank and len(ranks) < 64:
            ranks.setdefault(rank, None)
        _parse_line(lines, index, line, rank, fields)
    truncated = len(lines) >= MAX_LINES
    log = _build(fields, tuple(ranks), len(lines))
    if truncated:
        from dataclasses import replace

        log = replace(log, truncated=True,
                      notes=(*log.notes, f"only the first {MAX_LINES:,} lines were read"))
    return log


def _parse_line(lines: list[str], index: int, line: str, rank: str, fields: _Fields) -> None:
    if "LLM engine" in line:
        engine = _ENGINE.search(line)
        if engine:
            if engine.group(1):
                fields.put("engine", engine.group(1), rank)
            fields.put("version", engine.group(2).lstrip("v"), rank)
            joined = _config_text(lines, index)
            for name, pattern in _CONFIG_FIELDS.items():
                found = pattern.search(joined)
                if found:
                    fields.put(name, found.group(1), rank)
    if "non-default args" in line:
        for name, pattern in _ARGS_FIELDS.items():
            found = pattern.search(line)
            if found:
                fields.put(name, found.group(1), rank)
    if "\u2588" in line:  # the banner's block letters
        version = _BANNER_VERSION.search(line)
        if version:
            fields.put("version", version.group(1), rank)
        model = _BANNER_MODEL.search(line)
        if model:
            fields.put("model", model.group(1), rank)
    found = _MAX_MODEL_LEN.search(line) if "max model len" in line else None
    if found:
        fields.put("max_model_len", found.group(1), rank)
    if "GB" in line or "GiB" in line or "gpu_memory_utilization" in line \
            or "GPU memory utilization" in line or "gpu-memory-utilization" in line:
        snapshot = "memory snapshot" in line
        for name, pattern in _MEMORY:
            if snapshot and name not in _SNAPSHOT_ONLY:
                continue
            found = pattern.search(line)
            if found:
                fields.put(name, found.group(1), rank)
    found = _NEEDED.search(line) if "KV cache is needed" in line else None
    if found:
        fields.put("needed_len", found.group(1), rank)
        fields.put("needed_gib", found.group(2), rank)
        fields.put("kv_cache_gib", found.group(3), rank)
    if "blocks" not in line and "tokens" not in line:
        return
    for name, pattern in (("gpu_blocks", _GPU_BLOCKS), ("cpu_blocks", _CPU_BLOCKS),
                          ("kv_tokens", _KV_TOKENS),
                          ("max_tokens_error", _MAX_TOKENS_ERROR)):
        found = pattern.search(line)
        if found:
            fields.put(name, found.group(1), rank)
    found = _CONCURRENCY.search(line)
    if found:
        fields.put("concurrency_tokens", found.group(1), rank)
        fields.put("concurrency", found.group(2), rank)


_INTS = ("tp", "pp", "max_model_len", "block_size", "gpu_blocks", "cpu_blocks", "kv_tokens",
         "concurrency_tokens", "max_tokens_error", "needed_len")
_FLOATS = ("gpu_memory_utilization", "weights_gib", "non_torch_gib", "activation_peak_gib",
           "peak_torch_gib",
           "consumed_gib", "cuda_graph_gib", "total_gpu_gib", "kv_cache_gib", "kv_in_use_gib",
           "kv_cache_set_gib", "concurrency", "needed_gib")
_STRINGS = ("model", "version", "engine", "dtype", "kv_cache_dtype")


def _build(fields: _Fields, ranks: tuple[str, ...], count: int) -> VllmLog:
    values: dict[str, object] = {}
    for name, text in fields.values.items():
        try:
            if name in _INTS:
                values[name] = int(_number(text))
            elif name in _FLOATS:
                values[name] = _number(text)
            elif name == "enforce_eager":
                values[name] = text == "True"
            elif name in _STRINGS:
                values[name] = text
        except (ValueError, OverflowError):
            continue
    notes = []
    for name, seen in sorted(fields.differs.items()):
        shown = ", ".join(sorted(seen)[:4])
        where = fields.rank_of[name] or "the first line"
        which = ("the smallest" if name in _SMALLEST else "the largest" if name in _LARGEST
                 else "the first")
        notes.append(f"{name} differs across ranks or restarts ({shown}); "
                     f"used {which}, from {where}")
    workers = [r for r in ranks if not r.startswith("APIServer")]
    if len(workers) > 1:
        notes.append(f"lines from {len(workers)} processes ({', '.join(workers[:8])}): "
                     "figures are per GPU, taken from the first that printed each (KV memory: the "
                     "smallest; activation peak and non-torch memory: the largest)")
    return VllmLog(**values, ranks=ranks, lines=count,  # type: ignore[arg-type]
                   notes=tuple(notes), raw=dict(fields.values))


def read_log(path: Path) -> VllmLog:
    """Parse the vLLM log file ``path`` (its first :data:`MAX_BYTES` bytes)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as err:
        raise UsageError(f"{path}: cannot read it ({err.strerror or err}); expected a vLLM "
                         "start-up log") from None
    truncated = len(data) > MAX_BYTES
    text = data[:MAX_BYTES].decode("utf-8", "replace")
    log = parse_text(text)
    if truncated:
        from dataclasses import replace

        log = replace(log, truncated=True,
                      notes=(*log.notes, f"only the first {MAX_BYTES // 2**20} MiB was read"))
    return log
