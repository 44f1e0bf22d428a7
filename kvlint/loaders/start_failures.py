"""The out-of-memory errors a start-up log ends with when the engine could not start (pure
text parsing).

A start that fails for memory prints no KV pool; what it prints is the allocator's error.
Three programs word it, and each wording is read here from its own source:

* **PyTorch's caching allocator** (every Python engine: vLLM, SGLang, LMDeploy's PyTorch
  engine, TensorRT-LLM's PyTorch backend), ``c10/cuda/CUDACachingAllocator.cpp``, read in
  the strings of ``torch/lib/libc10_cuda.so`` of the 2.0.1, 2.1.0 and 2.2.0 wheels
  (``pip download --no-deps torch==X``) and in the source at pytorch/pytorch@eb42ad6e:

  - up to 2.0: ``CUDA out of memory. Tried to allocate X (GPU N; T total capacity; A already
    allocated; F free; R reserved in total by PyTorch)``;
  - 2.1: ``CUDA out of memory. Tried to allocate X. GPU N has a total capacty of T of which
    F is free.`` (sic: ``capacty``);
  - 2.2 on: the same with ``capacity``.

  PyTorch's ROCm builds say ``HIP out of memory`` in the same words (hipify renames the
  CUDA allocator's strings; seen in a ROCm 7.2 log of vLLM 0.14, not read in a ROCm wheel).
  Sizes are ``format_size``'s: ``N bytes``, or two decimals of ``KiB``/``MiB``/``GiB``.
* **TurboMind** (LMDeploy's C++ engine), ``src/turbomind/utils/cuda_utils.h``
  ``check()``: ``[TM][ERROR] CUDA runtime error: out of memory FILE:LINE`` (a thrown
  ``runtime_error`` @v0.4.2..v0.7.3, a ``TM_LOG_ERROR`` line @v0.8.0..v0.13.0); from v0.14.0
  ``ReportCudaError`` in ``src/turbomind/utils/cuda_utils.cc`` logs
  ``[TM][FATAL][time][file:line] CUDA error: out of memory`` (the logger's prefix,
  ``src/turbomind/core/logger.cc``@v0.14.0).
* **TensorRT-LLM's C++ runtime**, ``cpp/include/tensorrt_llm/common/cudaUtils.h`` ``check()``
  @05316d33: ``[TensorRT-LLM][ERROR] CUDA runtime error in FUNC: out of memory``; its PyTorch
  backend's executor (1.0 on) reports ``Executor creation failed due to insufficient GPU
  memory.`` and then ``Total GPU memory (GiB): X`` (``_ExecutorMemoryMonitor``,
  ``tensorrt_llm/_torch/pyexecutor/py_executor_creator.py``).

* **The engines' own refusals** when their start-up sizing leaves no KV cache: vLLM's
  ``No available memory for the cache blocks.`` (V0 ``raise_if_cache_size_invalid``,
  vllm/worker/worker.py@0.4.1 and @0.7.3; V1 ``check_enough_kv_cache_memory``,
  vllm/v1/core/kv_cache_utils.py@0.7.3 and @0.11.0; vllm/v1/core/kv_cache_planning.py@0.34.0)
  and SGLang's ``Not enough memory. Please try to increase --mem-fraction-static.``
  (``init_memory_pool``, sglang/srt/model_executor/model_runner.py@0.2.15, @0.3.6,
  @0.4.3.post2, @0.4.10.post1 and @0.5.5.post3, which adds ``Current value:
  self.server_args.mem_fraction_static=F``; ``pool_configurator.py``@0.5.23, ``Current value:
  mem_fraction_static=F``).

Only the out-of-memory wordings are read (a CUDA error of another kind is not a memory
verdict). Every pattern is linear and searched inside a line, so prefixes (ranks, pids,
``torch.OutOfMemoryError:``) are tolerated."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

MAX_SHOWN = 160
"""The characters of the error line kept for the report."""

_SIZE = r"(\d{1,12}(?:\.\d{1,6})?) ?(bytes|KiB|MiB|GiB|TiB)"
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


@dataclass(frozen=True)
class Wording:
    """One program's out-of-memory message: ``engine`` is the engine only it prints (``None``
    for PyTorch's, which every Python engine prints)."""

    id: str
    engine: str | None
    pattern: re.Pattern[str]
    source: str


WORDINGS: tuple[Wording, ...] = (
    Wording("torch.2.1", None, re.compile(
        rf"(?:CUDA|HIP) out of memory\. Tried to allocate {_SIZE}\. GPU (\d{{1,4}}) has a "
        rf"total capac(?:i)?ty of {_SIZE} of which {_SIZE} is free"),
        "c10/cuda/CUDACachingAllocator.cpp (libc10_cuda.so of torch 2.1.0 'capacty', 2.2.0 "
        "and pytorch/pytorch@eb42ad6e 'capacity')"),
    Wording("torch.2.0", None, re.compile(
        rf"(?:CUDA|HIP) out of memory\. Tried to allocate {_SIZE} \(GPU (\d{{1,4}}); {_SIZE} total "
        rf"capacity; {_SIZE} already allocated; {_SIZE} free"),
        "c10/cuda/CUDACachingAllocator.cpp (libc10_cuda.so of torch 2.0.1)"),
    Wording("torch", None, re.compile(r"(?:CUDA|HIP) out of memory\."),
            "c10/cuda/CUDACachingAllocator.cpp (the message's first words, every release "
            "read)"),
    Wording("turbomind", "lmdeploy", re.compile(
        r"\[TM\]\[ERROR\] CUDA runtime error: out of memory"),
        "src/turbomind/utils/cuda_utils.h@v0.4.2..v0.13.0 check()"),
    Wording("turbomind.fatal", "lmdeploy", re.compile(
        r"\[TM\]\[FATAL\]\S{0,80} CUDA error: out of memory"),
        "src/turbomind/utils/cuda_utils.cc@v0.14.0 ReportCudaError, "
        "src/turbomind/core/logger.cc@v0.14.0"),
    Wording("tensorrt_llm", "trtllm", re.compile(
        r"\[TensorRT-LLM\]\[ERROR\] CUDA runtime error in [^\n]{1,200}?: out of memory"),
        "cpp/include/tensorrt_llm/common/cudaUtils.h@05316d33 check()"),
    Wording("tensorrt_llm.executor", "trtllm", re.compile(
        r"Executor creation failed due to insufficient GPU memory"),
        "tensorrt_llm/_torch/pyexecutor/py_executor_creator.py "
        "_ExecutorMemoryMonitor._maybe_explain_if_oom (1.0-1.2, read through the code search)"),
    Wording("vllm.no_cache_memory", "vllm", re.compile(
        r"No available memory for the cache blocks"),
        "vllm/worker/worker.py@0.4.1..0.7.3 raise_if_cache_size_invalid, "
        "vllm/v1/core/kv_cache_utils.py@0.7.3..0.11.0 check_enough_kv_cache_memory, "
        "vllm/v1/core/kv_cache_planning.py@0.34.0"),
    Wording("sglang.pool", "sglang", re.compile(
        r"Not enough memory\. Please try to increase --mem-fraction-static"),
        "sglang/srt/model_executor/model_runner.py@0.2.15..0.5.5.post3 init_memory_pool, "
        "pool_configurator.py@0.5.23"),
)
_MARKS = ("out of memory", "insufficient GPU memory", "No available memory",
          "Not enough memory")
"""Words every wording above contains: a line without any is not read further."""
_TRT_TOTAL = re.compile(r"Total GPU memory \(GiB\): (\d{1,6}(?:\.\d{1,4})?)")
"""The same report's next lines (``Total GPU memory (GiB): {:.2f}``, the executor's
``torch.cuda.mem_get_info()[1]``)."""


@dataclass(frozen=True)
class OutOfMemory:
    """A start-up log's out-of-memory error: the first line that prints one, the engine
    that wording names (``None``: PyTorch's, any Python engine) and, where PyTorch's message
    gives them, the GPU's total and free memory and the allocation that failed (GiB)."""

    line: str
    wording: str
    engine: str | None
    source: str
    total_gib: float | None = None
    free_gib: float | None = None
    tried_gib: float | None = None

    def said(self) -> str:
        """The error in a sentence's words."""
        sizes = []
        if self.tried_gib is not None:
            sizes.append(f"{self.tried_gib:.2f} GiB requested")
        if self.free_gib is not None and self.total_gib is not None:
            sizes.append(f"{self.free_gib:.2f} of {self.total_gib:.2f} GiB free")
        return f"{self.line!r}" + (f" ({', '.join(sizes)})" if sizes else "")


def _gib(number: str, unit: str) -> float:
    return float(number) * _UNITS[unit] / 2**30


def _read(line: str, wording: Wording) -> OutOfMemory | None:
    hit = wording.pattern.search(line)
    if hit is None:
        return None
    shown = line[hit.start():][:MAX_SHOWN].strip()
    out = OutOfMemory(shown, wording.id, wording.engine, wording.source)
    groups = hit.groups()
    if wording.id == "torch.2.1":
        return replace(out, tried_gib=_gib(groups[0], groups[1]),
                       total_gib=_gib(groups[3], groups[4]), free_gib=_gib(groups[5], groups[6]))
    if wording.id == "torch.2.0":
        return replace(out, tried_gib=_gib(groups[0], groups[1]),
                       total_gib=_gib(groups[3], groups[4]), free_gib=_gib(groups[7], groups[8]))
    return out


def find_out_of_memory(lines: Iterable[str]) -> OutOfMemory | None:
    """The first out-of-memory error among ``lines``: an engine's own wording where the log
    has one (it names the engine), with the sizes of PyTorch's message where the log also
    prints that; ``None`` when no line reports one."""
    engine_own: OutOfMemory | None = None
    torch: OutOfMemory | None = None
    total: float | None = None
    for line in lines:
        if total is None and "Total GPU memory (GiB)" in line:
            found_total = _TRT_TOTAL.search(line)
            total = float(found_total.group(1)) if found_total else None
        if not any(mark in line for mark in _MARKS):
            continue
        for wording in WORDINGS:
            found = _read(line, wording)
            if found is None:
                continue
            if found.engine is not None:
                engine_own = engine_own or found
            elif torch is None or (torch.total_gib is None and found.total_gib is not None):
                torch = found
            break
        if engine_own is not None and torch is not None and torch.total_gib is not None:
            break
    if engine_own is None:
        return torch
    if torch is not None and torch.total_gib is not None:
        return replace(engine_own, total_gib=torch.total_gib, free_gib=torch.free_gib,
                       tried_gib=torch.tried_gib)
    if total is not None and engine_own.wording == "tensorrt_llm.executor":
        return replace(engine_own, total_gib=total)
    return engine_own
