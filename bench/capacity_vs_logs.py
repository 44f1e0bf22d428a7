"""Capacity vs vLLM start-up logs: kvlint's predicted KV tokens against the numbers vLLM printed.

Every case is a real start-up log in ``fixtures/vllm_logs`` (provenance in its SOURCES.md) whose
GPU memory total, gpu_memory_utilization, max_model_len and parallel layout are known. The log
is read with kvlint's own parser (``kvlint.loaders.vllm_log``); what a log does not print is
given below with the reason. kvlint is then run as a user would run it::

    kvlint check CONFIG --gpu-memory TOTAL --gpu-memory-utilization U --max-model-len L
                 --tp T --pp P --engine-version V [--kv-cache-dtype D] --format json

and its ``max_tokens`` (whole 16-token blocks of the KV budget; vLLM's terms from
kvlint/model/memory.py) is compared with the printed ``GPU KV cache size`` (or, for a log that
prints only the KV memory, the tokens that memory holds at kvlint's bytes per token).

Run: ``PYTHONPATH=$PWD python bench/capacity_vs_logs.py`` (prints a Markdown table).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvlint.loaders.vllm_log import VllmLog, read_log

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "fixtures" / "vllm_logs"
CONFIGS = ROOT / "fixtures" / "configs"
GIB = 1024**3


@dataclass(frozen=True)
class Case:
    log: str
    config: str
    """fixtures/configs/<config>.json (same architecture as the served checkpoint)."""
    label: str
    version: str | None = None
    """When the log does not print it (the reason is in ``why``)."""
    total_gib: float | None = None
    utilization: float | None = None
    max_model_len: int | None = None
    why: str = ""


LLMD = "0.19.0"
CASES = (
    Case("llama-3.1-8b-v0-rtx3090-20k.log", "meta-llama--Meta-Llama-3.1-8B",
         "Llama-3.1-8B, RTX 3090, len 20000", version="0.6.4", max_model_len=20000,
         why="vllm#10517: the thread's command (--max-model-len 20000) and version"),
    Case("llama-3.1-8b-v0-rtx3090-29k.log", "meta-llama--Meta-Llama-3.1-8B",
         "Llama-3.1-8B, RTX 3090, len 29000", version="0.6.4", max_model_len=29000,
         why="vllm#10517: the thread's command and version"),
    Case("llama-3-8b-v0-h100-profile.log", "meta-llama--Meta-Llama-3-8B",
         "Llama-3-8B, H100, tp 1", version="0.6.5", max_model_len=8192,
         why="vllm#10511 (merged for 0.6.5): default max_model_len (the config's 8192)"),
    Case("qwen3-8b-v1-lmcache-cudagraph.log", "Qwen--Qwen3-8B",
         "Qwen3-8B, 24 GB GPU, len 16384", version="0.21.0", total_gib=23.53,
         why="LMCache#3430: 'default since v0.21.0' in the log; total derived from its own line "
             "(0.52 GiB of graphs = utilization 0.9764 - 0.9543: 0.52 / 0.0221 = 23.53 GiB)"),
    *(Case(f"llmd-{name}.log", config, label) for name, config, label in (
        ("llama-3.1-8b-h100-tp1-8192", "meta-llama--Meta-Llama-3.1-8B", "Llama-3.1-8B tp 1"),
        ("llama-3.1-8b-h100-tp1-32768", "meta-llama--Meta-Llama-3.1-8B",
         "Llama-3.1-8B tp 1, len 32768"),
        ("llama-3.1-8b-h100-tp1-8192-kvfp8", "meta-llama--Meta-Llama-3.1-8B",
         "Llama-3.1-8B tp 1, fp8 KV"),
        ("llama-3.1-8b-h100-tp2-8192", "meta-llama--Meta-Llama-3.1-8B", "Llama-3.1-8B tp 2"),
        ("llama-3.1-8b-h100-tp4-8192", "meta-llama--Meta-Llama-3.1-8B", "Llama-3.1-8B tp 4"),
        ("llama-3.1-8b-h100-pp2-8192", "meta-llama--Meta-Llama-3.1-8B", "Llama-3.1-8B pp 2"),
        ("llama-3.1-8b-h100-pp4-8192", "meta-llama--Meta-Llama-3.1-8B", "Llama-3.1-8B pp 4"),
        ("qwen2.5-7b-h100-tp1-8192", "Qwen--Qwen2.5-7B", "Qwen2.5-7B tp 1"),
        ("qwen2.5-7b-h100-tp2-8192", "Qwen--Qwen2.5-7B", "Qwen2.5-7B tp 2"),
        ("qwen2.5-7b-h100-tp4-8192", "Qwen--Qwen2.5-7B", "Qwen2.5-7B tp 4"),
        ("qwen3-8b-h100-tp1-8192", "Qwen--Qwen3-8B", "Qwen3-8B tp 1"),
        ("qwen3-30b-a3b-h100-tp1-8192", "Qwen--Qwen3-30B-A3B", "Qwen3-30B-A3B tp 1"),
        ("phi-4-h100-tp1-8192", "microsoft--phi-4", "phi-4 tp 1"),
        ("mixtral-8x7b-h100-tp2-8192", "mistralai--Mixtral-8x7B-v0.1", "Mixtral-8x7B tp 2"),
        ("qwen2.5-72b-h100-tp2-8192", "Qwen--Qwen2.5-72B", "Qwen2.5-72B tp 2"),
        ("deepseek-v2-lite-h100-tp1-8192", "deepseek-ai--DeepSeek-V2-Lite",
         "DeepSeek-V2-Lite tp 1"),
    )),
)


def _need(value: Any, what: str, case: Case) -> Any:
    if value is None:
        raise SystemExit(f"{case.log}: the log does not print {what} and the case gives none")
    return value


def predict(case: Case, log: VllmLog) -> dict[str, Any]:
    """kvlint's answer for the plan the log ran."""
    total = _need(case.total_gib or log.total_gpu_gib, "the GPU total", case)
    util = _need(case.utilization or log.gpu_memory_utilization, "the utilization", case)
    length = _need(case.max_model_len or log.max_model_len or log.concurrency_tokens,
                   "max_model_len", case)
    version = _need(case.version or log.version, "the version", case)
    args = [sys.executable, "-m", "kvlint", "check", str(CONFIGS / f"{case.config}.json"),
            "--gpu-memory", str(total), "--gpu-memory-utilization", str(util),
            "--max-model-len", str(length), "--tp", str(log.tp or 1), "--pp", str(log.pp or 1),
            "--engine-version", version, "--format", "json", "--no-plugins"]
    if log.kv_cache_dtype and log.kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", log.kv_cache_dtype]
    out = subprocess.run(args, check=False, capture_output=True, text=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.stdout)["results"][0]
    return {"total": total, "util": util, "version": version, "result": result}


def main() -> None:
    print("| case | vLLM | GPU x util | weights GiB kvlint (log) | ~act. kvlint (log) | "
          "~non-torch kvlint (log) | ~graphs | KV GiB predicted (printed) | tokens predicted | "
          "tokens printed | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    errors = []
    for case in CASES:
        log = read_log(LOGS / case.log)
        p = predict(case, log)
        cap = p["result"]["capacity"]
        terms = cap["memory_profile"]
        per_token = p["result"]["kv"]["bytes_per_token_per_gpu"]
        predicted = cap["max_tokens"]
        printed = log.capacity_tokens
        note = ""
        if printed is None:  # only the KV memory was printed
            kv = _need(log.kv_memory_gib, "KV figures", case)
            printed = int(kv * GIB) // (16 * per_token) * 16
            note = " (from memory)"
        error = (predicted - printed) / printed * 100
        errors.append(error)

        def pair(ours: int, theirs: float | None) -> str:
            return f"{ours / GIB:.2f} ({'-' if theirs is None else theirs})"

        print(f"| {case.label} | {p['version']} | {p['total']} GiB x {p['util']} | "
              f"{pair(terms['weight_bytes'], log.weights_gib)} | "
              f"{pair(terms['activation_peak_bytes'], log.activation_peak_gib)} | "
              f"{pair(terms['non_torch_bytes'], log.non_torch_gib)} | "
              f"{terms['cuda_graph_bytes'] / GIB:.2f} | "
              f"{pair(terms['kv_memory_bytes'], log.kv_memory_gib)} | {predicted:,} | "
              f"{printed:,}{note} | {error:+.1f} % |")
    inside = sum(1 for e in errors if abs(e) <= 5)
    print(f"\n{inside} of {len(errors)} within +-5 %; errors {min(errors):+.1f} % .. "
          f"{max(errors):+.1f} %, median {sorted(errors)[len(errors) // 2]:+.1f} %")


if __name__ == "__main__":
    main()
