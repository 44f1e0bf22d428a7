"""Agreement of kvlint's theory with real vLLM start-up logs (fixtures/vllm_logs).

For each log whose model config is in fixtures/configs: ``kvlint probe CONFIG --vllm-log LOG``
(JSON), then the printed KV tokens per GPU against kvlint's reproduction from the printed KV
memory (``floor(GiB x 2^30 / (16 x theory bytes per token)) x 16``), the interval the printed
GiB's rounding allows, the error, and the cache ratio (allocated / theory bytes per token).

Usage: ``python bench/vllm_logs.py`` (prints a Markdown table).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "fixtures" / "vllm_logs"
CONFIGS = ROOT / "fixtures" / "configs"

CASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("llama-3.1-8b-v0-rtx3090-20k.log", "meta-llama--Meta-Llama-3.1-8B.json", ()),
    ("llama-3.1-8b-v0-rtx3090-29k.log", "meta-llama--Meta-Llama-3.1-8B.json", ()),
    ("qwen3-8b-v1-lmcache-cudagraph.log", "Qwen--Qwen3-8B.json", ()),
    ("qwen3-235b-a22b-fp8-tp4.log", "Qwen--Qwen3-235B-A22B.json", ("--tp", "4")),
    ("deepseek-v2-lite-chat-v1-needed.log", "deepseek-ai--DeepSeek-V2-Lite.json", ()),
    ("llama-3.1-70b-w8a8-v1-2048.log", "meta-llama--Meta-Llama-3.1-70B.json", ()),
    ("llama-3-8b-v0-h100-profile.log", "meta-llama--Meta-Llama-3-8B.json", ()),
    # vLLM 0.19.0 on H100 80GB (llm-d-planner accuracy runs): tp, pp, KV dtype from the log
    *((f"llmd-{name}.log", config, ()) for name, config in (
        ("llama-3.1-8b-h100-tp1-8192", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("llama-3.1-8b-h100-tp1-32768", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("llama-3.1-8b-h100-tp1-8192-kvfp8", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("llama-3.1-8b-h100-tp2-8192", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("llama-3.1-8b-h100-tp4-8192", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("llama-3.1-8b-h100-pp2-8192", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("llama-3.1-8b-h100-pp4-8192", "meta-llama--Meta-Llama-3.1-8B.json"),
        ("qwen2.5-7b-h100-tp1-8192", "Qwen--Qwen2.5-7B.json"),
        ("qwen2.5-7b-h100-tp2-8192", "Qwen--Qwen2.5-7B.json"),
        ("qwen2.5-7b-h100-tp4-8192", "Qwen--Qwen2.5-7B.json"),
        ("qwen3-8b-h100-tp1-8192", "Qwen--Qwen3-8B.json"),
        ("qwen3-30b-a3b-h100-tp1-8192", "Qwen--Qwen3-30B-A3B.json"),
        ("phi-4-h100-tp1-8192", "microsoft--phi-4.json"),
        ("mixtral-8x7b-h100-tp2-8192", "mistralai--Mixtral-8x7B-v0.1.json"),
        ("qwen2.5-72b-h100-tp2-8192", "Qwen--Qwen2.5-72B.json"),
        ("deepseek-v2-lite-h100-tp1-8192", "deepseek-ai--DeepSeek-V2-Lite.json"),
    )),
)


def run(log: str, config: str, extra: tuple[str, ...]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "kvlint", "probe", str(CONFIGS / config), "--vllm-log",
         str(LOGS / log), *extra, "--format", "json", "--no-plugins"],
        capture_output=True, text=True, check=False, cwd=ROOT)
    data = json.loads(out.stdout)
    impl: dict[str, object] = data["results"][0]["probe"]["impls"][0]
    return impl


def main() -> None:
    print("| log | model, tp | theory B/token/GPU | printed KV | printed tokens | kvlint tokens "
          "(rounding interval) | error | cache ratio |")
    print("|---|---|---|---|---|---|---|---|")
    within: list[bool] = []
    for log, config, extra in CASES:
        m = run(log, config, extra)
        details = m["details"]
        assert isinstance(details, dict)
        printed = details["printed"]
        tp = details["tp"]
        model = config.removesuffix(".json").split("--")[1]
        ratio = "-" if m["cache_ratio"] is None else f"{m['cache_ratio']:.4f}"
        if "tokens" in details:
            t = details["tokens"]
            within.append(bool(t["within_rounding"]))
            error = f"{t['error']:+.2%}"
            kv = min(v for v in (printed["kv_cache_gib"], printed["kv_in_use_gib"])
                     if v is not None)
            print(f"| {log} | {model}, tp {tp}, pp {details['pp']} | "
                  f"{m['theory_cache_bytes']:,} | "
                  f"{kv} GiB | {t['printed']:,} | {t['predicted']:,} "
                  f"({t['low']:,}..{t['high']:,}) | {error} | {ratio} |")
        elif "needed" in details:
            n = details["needed"]
            print(f"| {log} | {model}, tp {tp} | {m['theory_cache_bytes']:,} | needed "
                  f"{n['printed_gib']} GiB for {n['max_seq_len']:,} tokens | - | "
                  f"{n['predicted_gib']:.4f} GiB | "
                  f"{n['printed_gib'] / n['predicted_gib'] - 1:+.2%} | {ratio} |")
        elif printed.get("gpu_blocks") is not None:
            print(f"| {log} | {model}, tp {tp} | {m['theory_cache_bytes']:,} | not printed | "
                  f"{printed['gpu_blocks']:,} blocks | - | - | - |")
        else:
            print(f"| {log} | {model}, tp {tp} | {m['theory_cache_bytes']:,} | "
                  f"{printed.get('kv_cache_gib')} GiB | not printed | - | - | - |")

    print(f"\n{sum(within)} of {len(within)} logs with KV tokens and memory printed: kvlint's "
          "tokens from the printed memory within its rounding")


if __name__ == "__main__":
    main()
