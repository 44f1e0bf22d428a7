"""Time the CPU path of ``kvlint probe``: the whole command, and per implementation the
model build, the decode step alone and the decode step under the byte accounting.

    python bench/probe_cpu.py [--context 512] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("meta-llama--Llama-3.2-1B-Instruct", "deepseek-ai--DeepSeek-V2-Lite")


def whole_command(model: str, context: int, runs: int) -> list[float]:
    """Wall seconds of ``kvlint probe MODEL --device cpu --impl eager,sdpa`` (fresh process)."""
    config = ROOT / "fixtures" / "configs" / f"{model}.json"
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kvlint", "probe", str(config), "--device", "cpu",
                        "--impl", "eager,sdpa", "--context", str(context), "--format", "json",
                        "--fail-on", "never", "--no-plugins"], check=True,
                       capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - started)
    return times


def phases(model: str, context: int, runs: int) -> dict[str, dict[str, float]]:
    """Per implementation: build, plain step and accounted step seconds (median of runs)."""
    import torch

    from kvlint.probe import build as builder
    from kvlint.probe.accounting import KvAccounting, SdpaRecorder

    torch.set_grad_enabled(False)
    raw = json.loads((ROOT / "fixtures" / "configs" / f"{model}.json").read_text())
    found: dict[str, dict[str, float]] = {}
    for impl in ("eager", "sdpa"):
        started = time.perf_counter()
        built = builder.build(raw, impl=impl, layers=1, dtype="bfloat16")
        build_s = time.perf_counter() - started
        shapes = builder.layer_shapes(built, 1)
        plain, accounted = [], []
        for _ in range(runs):
            cache = builder.prefilled_cache(built, shapes, context)
            started = time.perf_counter()
            builder.decode_step(built, cache, context, 1)
            plain.append(time.perf_counter() - started)
            cache = builder.prefilled_cache(built, shapes, context)
            accounting = KvAccounting(builder.cache_tensors(cache))
            started = time.perf_counter()
            with SdpaRecorder(accounting), accounting:
                builder.decode_step(built, cache, context, 1)
            accounted.append(time.perf_counter() - started)
        found[impl] = {"build_s": build_s, "step_s": statistics.median(plain),
                       "accounted_step_s": statistics.median(accounted)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for model in MODELS:
        times = whole_command(model, args.context, args.runs)
        print(f"{model}: kvlint probe --impl eager,sdpa --context {args.context}: "
              f"median {statistics.median(times):.2f} s (min {min(times):.2f}, "
              f"max {max(times):.2f})")
        for impl, figures in phases(model, args.context, args.runs).items():
            print(f"  {impl:6} build {figures['build_s']:.2f} s · step "
                  f"{figures['step_s'] * 1e3:.1f} ms · step under accounting "
                  f"{figures['accounted_step_s'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
