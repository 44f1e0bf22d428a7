"""Capacity vs vLLM start-up logs: kvlint's predicted KV tokens against the numbers vLLM printed.

Each case is a published start-up log (URL) whose GPU memory total, gpu_memory_utilization,
max_model_len and tp are known. kvlint supplies the weights and the KV bytes per token
(``kvlint check --format json``); kvlint.model.memory supplies vLLM's other terms for the
GPU total the log printed. Run: ``PYTHONPATH=$PWD python bench/capacity_vs_logs.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from kvlint.model.memory import GIB, block_tokens, memory_terms, model_dims


@dataclass(frozen=True)
class Case:
    name: str
    url: str
    config: str
    version: str
    total_gib: float
    """total_gpu_memory as printed (GiB, two decimals)."""
    utilization: float
    max_model_len: int
    tp: int
    printed_tokens: int | None
    printed_kv_gib: float | None = None
    gpu_name: str = ""


CASES = (
    Case("Llama-3.1-8B, RTX 3090, max-model-len 20000",
         "https://github.com/vllm-project/vllm/issues/10517", "meta-llama--Meta-Llama-3.1-8B",
         "0.6.4", 23.58, 0.90, 20000, 1, 1952 * 16, 3.81, "RTX 3090"),
    Case("Llama-3.1-8B, RTX 3090, max-model-len 29000",
         "https://github.com/vllm-project/vllm/issues/10517", "meta-llama--Meta-Llama-3.1-8B",
         "0.6.4", 23.58, 0.90, 29000, 1, 1478 * 16, 2.89, "RTX 3090"),
    Case("Llama-3-8B, H100, tp=1, max-model-len 8192",
         "https://github.com/vllm-project/vllm/pull/10511", "meta-llama--Meta-Llama-3-8B",
         "0.6.5", 79.22, 0.90, 8192, 1, None, 53.29, "H100"),
    # "24 GB GPU"; the total is derived from the log's own line: 0.52 GiB of CUDA graphs make
    # utilization 0.9764 "equivalent to 0.9543", so total = 0.52 / 0.0221 = 23.53 GiB
    Case("Qwen3-8B, 24 GB GPU, max-model-len 16384 (total derived)",
         "https://github.com/LMCache/LMCache/issues/3430", "Qwen--Qwen3-8B",
         "0.21.0", 23.53, 0.9764, 16384, 1, 46_368, 6.37, "24 GB GPU"),
)


def kvlint_numbers(case: Case) -> tuple[int, int]:
    """(weight bytes per GPU, KV bytes per token per GPU) as kvlint computes them."""
    out = subprocess.run(
        [sys.executable, "-m", "kvlint", "check", f"fixtures/configs/{case.config}.json",
         "--gpu", "H100", "--tp", str(case.tp), "--max-model-len", str(case.max_model_len),
         "--engine-version", case.version, "--format", "json"],
        check=False, capture_output=True, text=True)
    result = json.loads(out.stdout)["results"][0]
    return (result["capacity"]["weight_bytes_per_gpu"],
            result["kv"]["bytes_per_token_per_gpu"])


def main() -> None:
    rows = []
    for case in CASES:
        weights, per_token = kvlint_numbers(case)
        with open(f"fixtures/configs/{case.config}.json", encoding="utf-8") as f:
            dims = model_dims(json.load(f))
        assert dims is not None
        terms = memory_terms(gpu_memory_bytes=round(case.total_gib * GIB),
                             gpu_name=case.gpu_name, utilization=case.utilization,
                             weight_bytes=weights, dims=dims, tp=case.tp,
                             version=case.version, max_model_len=case.max_model_len)
        predicted = block_tokens(terms.kv_memory_bytes, per_token)
        printed = case.printed_tokens
        if printed is None and case.printed_kv_gib is not None:  # only the memory was printed
            printed = block_tokens(round(case.printed_kv_gib * GIB), per_token)
        error = (predicted - printed) / printed * 100 if printed else float("nan")
        rows.append((case, terms, predicted, printed, error))
        print(f"| {case.name} | vLLM {case.version} | {case.total_gib} GiB x "
              f"{case.utilization:.2f} | {weights / GIB:.2f} | "
              f"{terms.activation_peak_bytes / GIB:.2f} | {terms.non_torch_bytes / GIB:.2f} | "
              f"{terms.cuda_graph_bytes / GIB:.2f} | {terms.kv_memory_bytes / GIB:.2f} "
              f"({case.printed_kv_gib}) | {predicted:,} | {printed:,}"
              f"{'' if case.printed_tokens else ' (from memory)'} | {error:+.1f} % | "
              f"[log]({case.url}) |")
    inside = sum(1 for r in rows if abs(r[4]) <= 5)
    print(f"\n{inside} of {len(rows)} cases within +-5 %")


if __name__ == "__main__":
    main()
