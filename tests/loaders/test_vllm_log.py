"""The vLLM start-up log parser on real logs (fixtures/vllm_logs, verbatim from public
threads; provenance in its SOURCES.md) and on hostile text generated here."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from kvlint.errors import UsageError
from kvlint.loaders import vllm_log
from kvlint.loaders.vllm_log import parse_text, read_log
from tests.helpers import ROOT

LOGS = ROOT / "fixtures" / "vllm_logs"

EXPECTED: dict[str, dict[str, Any]] = {
    "llama-3.1-8b-v0-rtx3090-20k.log": dict(
        weights_gib=14.9888, non_torch_gib=0.35, peak_torch_gib=17.06, total_gpu_gib=23.58,
        kv_cache_gib=3.81, gpu_memory_utilization=0.9, gpu_blocks=1952, cpu_blocks=2048,
        concurrency_tokens=20000, concurrency=1.56, capacity_tokens=1952 * 16),
    "llama-3.1-8b-v0-rtx3090-29k.log": dict(
        kv_cache_gib=2.89, gpu_blocks=1478, concurrency_tokens=29000, concurrency=0.82,
        max_tokens_error=23648, peak_torch_gib=17.98, capacity_tokens=23648),
    "llama-3.1-70b-w8a8-v1-2048.log": dict(
        weights_gib=67.7229, gpu_blocks=1381, concurrency_tokens=2048, concurrency=10.79,
        kv_cache_gib=None, kv_tokens=None, capacity_tokens=22096),
    "qwen3-14b-v1-lmcache.log": dict(
        kv_cache_gib=6.51, kv_tokens=42656, concurrency_tokens=32768, concurrency=1.3,
        ranks=("EngineCore_DP0",), gpu_blocks=None),
    "qwen3-235b-a22b-fp8-tp4.log": dict(kv_cache_gib=8.11, kv_tokens=178880, ranks=()),
    "qwen3-8b-v1-lmcache-cudagraph.log": dict(
        cuda_graph_gib=0.52, gpu_memory_utilization=0.9764, kv_cache_gib=6.37, kv_tokens=46368,
        concurrency_tokens=16384, concurrency=2.83, ranks=("EngineCore",)),
    "deepseek-v2-lite-chat-v1-needed.log": dict(
        model="/home/user/DeepSeek-V2-Lite-Chat/", version="0.8.3.dev172+g2b93162f",
        engine="V1", needed_gib=0.95, needed_len=32768, kv_cache_gib=0.93, kv_tokens=None),
    "qwen2.5-7b-v1-dp-config.log": dict(
        model="/mnt/tenant-home_speed/Model/Qwen/Qwen2.5-7B-Instruct", version="0.8.3",
        engine="V1", tp=1, pp=1, dtype="bfloat16", max_model_len=102400,
        kv_cache_dtype="auto", enforce_eager=True, ranks=("EngineCore_1",)),
    "opt-125m-v0-config.log": dict(
        version="0.6.4.post2.dev395+g02222a02.d20241217", engine="V0", tp=1, pp=1,
        dtype="float16", max_model_len=2048, kv_cache_dtype="auto", enforce_eager=True),
    "qwen3.8-27b-fp8-tp2-ranks.log": dict(
        consumed_gib=15.03, activation_peak_gib=1.59, cuda_graph_gib=0.09,
        kv_in_use_gib=12.24, gpu_memory_utilization=0.92, kv_cache_gib=None,
        ranks=("Worker_TP0", "Worker_TP1")),
    "qwen3.6-35b-a3b-nvfp4-v0.24.log": dict(
        kv_cache_gib=6.01, kv_tokens=569878, concurrency_tokens=131072, concurrency=4.35,
        model="~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4", dtype="bfloat16",
        max_model_len=131072, kv_cache_dtype="fp8"),
    "a40-lvllm-v1.log": dict(weights_gib=11.55, kv_cache_gib=12.57, kv_tokens=53136),
    "ray-pp-v1-rayworkers.log": dict(
        kv_cache_gib=2.09, kv_tokens=54384, concurrency_tokens=160000, concurrency=1.34,
        cuda_graph_gib=0.6, ranks=("RayWorkerWrapper", "EngineCore_DP0")),
    "llama-3.1-8b-v0-tp2-config.log": dict(
        version="dev", engine=None, tp=2, pp=1, dtype="bfloat16", max_model_len=8192,
        kv_cache_dtype="auto", enforce_eager=False, kv_cache_gib=None),
    "qwen3-8b-gguf-v0.18-args.log": dict(
        version="0.18.0", model="/models/unsloth/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf",
        max_model_len=16384, kv_cache_dtype="fp8", gpu_memory_utilization=0.79,
        kv_cache_gib=None),
    # vLLM 0.19.0 on H100 80GB (llm-d-planner accuracy runs; trimmed, see SOURCES.md)
    "llmd-deepseek-v2-lite-h100-tp1-8192.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=29.43,
        activation_peak_gib=1.93, non_torch_gib=0.26, kv_cache_gib=43.61, kv_in_use_gib=43.61,
        kv_tokens=1505552),
    "llmd-llama-3.1-8b-h100-pp2-8192.log": dict(
        tp=1, pp=2, max_model_len=8192, kv_cache_dtype='auto', weights_gib=7.51,
        activation_peak_gib=2.01, non_torch_gib=0.07, kv_cache_gib=66.54, kv_in_use_gib=65.63,
        kv_tokens=1075312),
    "llmd-llama-3.1-8b-h100-pp4-8192.log": dict(
        tp=1, pp=4, max_model_len=8192, kv_cache_dtype='auto', weights_gib=4.26,
        activation_peak_gib=2.01, non_torch_gib=0.07, kv_cache_gib=69.8, kv_in_use_gib=68.89,
        kv_tokens=2257264),
    "llmd-llama-3.1-8b-h100-tp1-32768.log": dict(
        tp=1, pp=1, max_model_len=32768, kv_cache_dtype='auto', weights_gib=14.99,
        activation_peak_gib=1.89, non_torch_gib=0.25, kv_cache_gib=58.11, kv_in_use_gib=58.11,
        kv_tokens=476016),
    "llmd-llama-3.1-8b-h100-tp1-8192-kvfp8.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='fp8', weights_gib=14.99,
        activation_peak_gib=1.89, non_torch_gib=0.25, kv_cache_gib=58.11, kv_in_use_gib=58.11,
        kv_tokens=952032),
    "llmd-llama-3.1-8b-h100-tp1-8192.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=14.99,
        activation_peak_gib=1.89, non_torch_gib=0.25, kv_cache_gib=58.11, kv_in_use_gib=58.11,
        kv_tokens=476016),
    "llmd-llama-3.1-8b-h100-tp2-8192.log": dict(
        tp=2, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=7.51,
        activation_peak_gib=1.89, non_torch_gib=2.07, kv_cache_gib=63.76, kv_in_use_gib=63.76,
        kv_tokens=1044688),
    "llmd-llama-3.1-8b-h100-tp4-8192.log": dict(
        tp=4, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=3.77,
        activation_peak_gib=1.89, non_torch_gib=2.13, kv_cache_gib=67.44, kv_in_use_gib=67.44,
        kv_tokens=2209792),
    "llmd-mixtral-8x7b-h100-tp2-8192.log": dict(
        tp=2, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=43.51,
        activation_peak_gib=1.21, non_torch_gib=2.07, kv_cache_gib=28.44, kv_in_use_gib=28.44,
        kv_tokens=465936),
    "llmd-phi-4-h100-tp1-8192.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=27.39,
        activation_peak_gib=1.52, non_torch_gib=0.25, kv_cache_gib=46.08, kv_in_use_gib=46.08,
        kv_tokens=241568),
    "llmd-qwen2.5-72b-h100-tp2-8192.log": dict(
        tp=2, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=67.8,
        activation_peak_gib=2.29, non_torch_gib=2.09, kv_cache_gib=3.04, kv_in_use_gib=3.04,
        kv_tokens=19920),
    "llmd-qwen2.5-7b-h100-tp1-8192.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=14.25,
        activation_peak_gib=2.21, non_torch_gib=0.24, kv_cache_gib=58.53, kv_in_use_gib=58.53,
        kv_tokens=1096000),
    "llmd-qwen2.5-7b-h100-tp2-8192.log": dict(
        tp=2, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=7.12,
        activation_peak_gib=2.21, non_torch_gib=2.06, kv_cache_gib=63.84, kv_in_use_gib=63.84,
        kv_tokens=2390592),
    "llmd-qwen2.5-7b-h100-tp4-8192.log": dict(
        tp=4, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=3.55,
        activation_peak_gib=2.21, non_torch_gib=2.13, kv_cache_gib=67.34, kv_in_use_gib=67.34,
        kv_tokens=5043280),
    "llmd-qwen3-30b-a3b-h100-tp1-8192.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=56.88,
        activation_peak_gib=2.68, non_torch_gib=0.27, kv_cache_gib=15.41, kv_in_use_gib=15.41,
        kv_tokens=168288),
    "llmd-qwen3-8b-h100-tp1-8192.log": dict(
        tp=1, pp=1, max_model_len=8192, kv_cache_dtype='auto', weights_gib=15.27,
        activation_peak_gib=2.21, non_torch_gib=0.25, kv_cache_gib=57.5, kv_in_use_gib=57.5,
        kv_tokens=418688),
    "llama-3-8b-v0-h100-profile.log": dict(
        total_gpu_gib=79.22, gpu_memory_utilization=0.9, weights_gib=14.96, non_torch_gib=1.79,
        activation_peak_gib=1.26, kv_cache_gib=53.29, kv_tokens=None),
}


def test_every_log_is_covered_and_documented() -> None:
    names = {p.name for p in LOGS.glob("*.log")}
    assert names == set(EXPECTED)
    sources = (LOGS / "SOURCES.md").read_text()
    assert all(f"| {name} | https://github.com/" in sources for name in names)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_log_fields(name: str) -> None:
    log = read_log(LOGS / name)
    for field, value in EXPECTED[name].items():
        assert getattr(log, field) == value, field
    assert not log.truncated


def test_ranks_that_disagree_are_noted_and_the_smallest_kv_kept() -> None:
    # vLLM sizes every worker's cache to the smallest (num_blocks: min over workers)
    log = read_log(LOGS / "qwen3.8-27b-fp8-tp2-ranks.log")
    assert log.kv_in_use_gib == 12.24 and log.kv_memory_gib == 12.24
    assert any(n.startswith("kv_in_use_gib differs across ranks or restarts (12.24, 12.26); "
                            "used the smallest, from Worker_TP1") for n in log.notes)
    assert any("lines from 2 processes (Worker_TP0, Worker_TP1)" in n for n in log.notes)


def test_pipeline_stages_the_smallest_pool_and_the_fullest_stage() -> None:
    # stage 0 prints "Available KV cache memory: 66.54 GiB"; the last stage (sampler: 2.01 GiB
    # of activation) has 65.63 GiB in use, and the printed tokens are that pool's
    log = read_log(LOGS / "llmd-llama-3.1-8b-h100-pp2-8192.log")
    assert (log.kv_cache_gib, log.kv_in_use_gib, log.kv_memory_gib) == (66.54, 65.63, 65.63)
    assert log.activation_peak_gib == 2.01 and log.non_torch_gib == 0.07
    assert 65.63 * 2**30 // (16 * 65536) * 16 <= 1075312 <= 65.635 * 2**30 // (16 * 65536) * 16
    assert any(n.startswith("activation_peak_gib differs across ranks or restarts (1.1, 2.01); "
                            "used the largest, from Worker_PP1") for n in log.notes)


def test_init_snapshot_gives_the_total_not_the_non_torch_increase() -> None:
    # the debug snapshot's non_torch_memory=0.51GiB is the CUDA context before loading; the
    # profile's increase is "non-torch forward increase memory: 0.25GiB"
    log = read_log(LOGS / "llmd-llama-3.1-8b-h100-tp1-8192.log")
    assert (log.total_gpu_gib, log.non_torch_gib) == (79.19, 0.25)


def test_ansi_colours_and_prefixes_are_tolerated() -> None:
    text = ("\x1b[32m(VllmWorker rank=0 pid=7)\x1b[0m INFO 03-12 10:11:12 [gpu_worker.py:227] "
            "Available KV cache memory: \x1b[1m6.51\x1b[0m GiB\r\n"
            "app-1  | (EngineCore_DP0 pid=9) INFO 03-12 10:11:12 [kv_cache_utils.py:864] "
            "GPU KV cache size: 42,656 tokens\n")
    log = parse_text(text)
    assert (log.kv_cache_gib, log.kv_tokens) == (6.51, 42656)
    assert log.ranks == ("VllmWorker rank=0", "EngineCore_DP0")


def test_wrapped_engine_config_line_is_joined() -> None:
    log = read_log(LOGS / "opt-125m-v0-config.log")
    assert log.model is not None and log.model.endswith("27dcfa74d334bc871f3234de431e71c6eeba5dd6")


def test_a_pipeline_config_line() -> None:
    log = parse_text("INFO 01-01 00:00:00 llm_engine.py:1] Initializing an LLM engine (v0.5.4) "
                     "with config: model='m', dtype=torch.float16, max_seq_len=8192, "
                     "tensor_parallel_size=4, pipeline_parallel_size=2, enforce_eager=False, "
                     "kv_cache_dtype=fp8_e5m2, block_size=32")
    assert (log.version, log.engine, log.tp, log.pp, log.kv_cache_dtype, log.block_size,
            log.enforce_eager) == ("0.5.4", None, 4, 2, "fp8_e5m2", 32, False)


# ------------------------------------------------------------------------------ hostile text
def _timed(path: Path) -> tuple[vllm_log.VllmLog, float]:
    start = time.perf_counter()
    log = read_log(path)
    return log, time.perf_counter() - start


def test_one_huge_line_is_cut_and_the_file_capped(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with path.open("wb") as handle:
        handle.write(b"GPU KV cache size: " + b"9," * 20 + b"x" * (vllm_log.MAX_BYTES + 1024))
        handle.write(b"\nGPU KV cache size: 5 tokens\n")
    log, seconds = _timed(path)
    assert log.truncated and log.kv_tokens is None
    assert seconds < 20


def test_binary_with_nul_bytes(tmp_path: Path) -> None:
    path = tmp_path / "binary.log"
    path.write_bytes(os.urandom(1 << 20) + b"\nAvailable KV cache\x00 memory: 1.50 GiB\x00\n"
                     + b"\x00" * 4096 + b"\xff\xfe GPU KV cache size: 1,024 tokens\n")
    log, seconds = _timed(path)
    assert (log.kv_cache_gib, log.kv_tokens) == (1.5, 1024)
    assert seconds < 20


def test_too_many_lines_are_capped(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    path.write_bytes(b"GPU blocks: 1\n" * (vllm_log.MAX_LINES + 10))
    log, seconds = _timed(path)
    assert log.truncated and log.gpu_blocks == 1 and log.lines == vllm_log.MAX_LINES
    assert seconds < 30


@pytest.mark.parametrize("line", [
    "GPU KV cache size: " + "1," * 50_000 + " tokens",
    "Maximum concurrency for " + "9" * 60_000 + " tokens per request: 1x",
    "(" * 60_000 + " pid=1)",
    "model='" + "a" * 60_000,
    "Initializing a V1 LLM engine (v" + "1" * 60_000 + ") with config: " + "x=" * 5_000,
    "(1.0 GiB KV cache is needed, " * 2_000,
    "\x1b[" * 30_000,
], ids=["commas", "digits", "parens", "quote", "engine", "needed", "ansi"])
def test_pathological_lines_are_fast(line: str) -> None:
    start = time.perf_counter()
    parse_text("\n".join([line] * 20))
    assert time.perf_counter() - start < 10


def test_unreadable_file_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"missing\.log: cannot read it"):
        read_log(tmp_path / "missing.log")


@pytest.mark.parametrize(("line", "weights", "low"), [
    ("Model loading took 53.75 GiB memory and 41.2 seconds", 53.75, "0.12.0"),
    ("Model loading took 53.75 GiB memory", 53.75, "0.12.0"),   # the tail trimmed by a poster
    ("Model loading took 15.51 GiB and 9.8 seconds", 15.51, "0.8.5"),
    ("Model loading took 15.51 GiB", 15.51, "0.8.5"),
])
def test_a_line_cut_after_its_figures_words_is_read(line: str, weights: float,
                                                    low: str) -> None:
    """A pasted line whose tail after the figure's words was cut off (``and N seconds``):
    the figure is read, and the words that remain still tell the release."""
    log = parse_text(line + "\n")
    assert log.weights_gib == weights
    assert log.version_range is not None and log.version_range[0] == low
    assert parse_text("Model loading took 53.75 GiB of it\n").weights_gib is None
