"""The out-of-memory errors of a failed start (kvlint/loaders/start_failures.py): each
program's wording as its source words it, sizes in GiB worked by hand, the engine's own
wording preferred, and no memory verdict read from other CUDA errors."""

from __future__ import annotations

import pytest

from kvlint.loaders import lmdeploy_log, sglang_log, trtllm_log, vllm_log
from kvlint.loaders.start_failures import find_out_of_memory

# c10/cuda/CUDACachingAllocator.cpp as torch 2.1.0 words it ('capacty', sic)
TORCH_21 = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 172.00 MiB. "
            "GPU 0 has a total capacty of 15.57 GiB of which 127.38 MiB is free. Including "
            "non-PyTorch memory, this process has 15.45 GiB memory in use.")
TORCH_22 = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has "
            "a total capacity of 79.25 GiB of which 512 bytes is free.")
TORCH_20 = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB "
            "total capacity; 22.10 GiB already allocated; 10.56 MiB free; 22.40 GiB reserved "
            "in total by PyTorch)")
# PyTorch's ROCm build: the same message, hipified
HIP = ("torch._inductor.exc.InductorError: OutOfMemoryError: HIP out of memory. Tried to "
       "allocate 80.00 MiB. GPU 0 has a total capacity of 15.92 GiB of which 0 bytes is free.")
TURBOMIND = ("RuntimeError: [TM][ERROR] CUDA runtime error: out of memory "
             "/lmdeploy/src/turbomind/utils/memory_utils.cu:32")
TURBOMIND_14 = "[TM][FATAL][1206.22:10:01.000001][allocator.cc:88] CUDA error: out of memory"
TRT = ("[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory "
       "(/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:92)")

# the engines' own refusals when their sizing leaves no KV cache (vllm/v1/core/
# kv_cache_utils.py@0.11.0; sglang/srt/model_executor/model_runner.py@0.5.5.post3)
VLLM_NO_CACHE = ("ValueError: No available memory for the cache blocks. Try increasing "
                 "`gpu_memory_utilization` when initializing the engine.")
SGLANG_POOL = ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
               "Current value: self.server_args.mem_fraction_static=0.84")


@pytest.mark.parametrize(("line", "wording", "engine", "tried", "total", "free"), [
    (TORCH_21, "torch.2.1", None, 172 / 1024, 15.57, 127.38 / 1024),
    (TORCH_22, "torch.2.1", None, 2.0, 79.25, 512 / 2**30),
    (TORCH_20, "torch.2.0", None, 20 / 1024, 23.69, 10.56 / 1024),
    (HIP, "torch.2.1", None, 80 / 1024, 15.92, 0.0),
    ("torch.OutOfMemoryError: CUDA out of memory.", "torch", None, None, None, None),
    (TURBOMIND, "turbomind", "lmdeploy", None, None, None),
    (TURBOMIND_14, "turbomind.fatal", "lmdeploy", None, None, None),
    (TRT, "tensorrt_llm", "trtllm", None, None, None),
    (VLLM_NO_CACHE, "vllm.no_cache_memory", "vllm", None, None, None),
    (SGLANG_POOL, "sglang.pool", "sglang", None, None, None),
])
def test_each_wording(line: str, wording: str, engine: str | None, tried: float | None,
                      total: float | None, free: float | None) -> None:
    found = find_out_of_memory(["INFO starting", line])
    assert found is not None
    assert (found.wording, found.engine) == (wording, engine)
    assert (found.tried_gib, found.total_gib, found.free_gib) == (
        pytest.approx(tried), pytest.approx(total), pytest.approx(free))
    assert found.line.startswith(("CUDA", "HIP", "[TM]", "[TensorRT-LLM]", "No available",
                                  "Not enough"))


def test_tensorrt_llms_executor_report_gives_its_total() -> None:
    found = find_out_of_memory([
        "[07/08/2025-19:47:15] [TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: "
        "Executor creation failed due to insufficient GPU memory.", "",
        "The following component could not be created: Sampler",
        "Total GPU memory (GiB): 140.06",
        "Free GPU memory before component creation attempt (GiB): 108.86"])
    assert found is not None
    assert (found.wording, found.engine, found.total_gib) == (
        "tensorrt_llm.executor", "trtllm", 140.06)


def test_the_engines_wording_wins_and_keeps_pytorchs_sizes() -> None:
    found = find_out_of_memory([TORCH_21, "Traceback (most recent call last):", TURBOMIND])
    assert found is not None
    assert (found.wording, found.engine) == ("turbomind", "lmdeploy")
    assert found.total_gib == pytest.approx(15.57)
    assert found.said() == (
        "'[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/"
        "memory_utils.cu:32' (0.17 GiB requested, 0.12 of 15.57 GiB free)")


@pytest.mark.parametrize("line", [
    "CUDA error: an illegal memory access was encountered",
    "[TensorRT-LLM][ERROR] CUDA runtime error in cudaMemcpy: invalid argument",
    "[TM][ERROR] CUDA runtime error: an illegal memory access was encountered x.cu:1",
    "INFO the pool keeps 10% free so that decode never runs out of memory",
    "CUDA out of memory. Tried to allocate more than 1EB memory.",
])
def test_other_errors_are_no_memory_verdict(line: str) -> None:
    found = find_out_of_memory([line])
    if found is not None:   # the allocator's 1 EB guard is its own out-of-memory error
        assert found.wording == "torch" and found.total_gib is None
    else:
        assert "1EB" not in line


@pytest.mark.parametrize(("reader", "line", "engine"), [
    (trtllm_log, TRT, "trtllm"), (lmdeploy_log, TURBOMIND, "lmdeploy"),
    (sglang_log, TORCH_22, None), (sglang_log, SGLANG_POOL, "sglang"),
    (vllm_log, VLLM_NO_CACHE, "vllm"),
])
def test_every_table_reader_carries_it(reader: object, line: str, engine: str | None) -> None:
    log = reader.parse_text("some start-up line\n" + line + "\n")  # type: ignore[attr-defined]
    assert log.oom is not None and log.oom.engine == engine


def test_a_hostile_line_costs_linear_time() -> None:
    line = "CUDA out of memory. Tried to allocate " + "9" * 60_000 + " GiB. GPU 0 has a total"
    found = find_out_of_memory([line] * 50)
    assert found is not None and found.wording == "torch"
    assert len(found.line) <= 160
