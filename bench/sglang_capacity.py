"""SGLang capacity against real SGLang start-up logs (issue 30).

The logs and the facts of each (``expected.json``, written down by hand from the source
before kvlint was run on them) are kept outside the project; ``bench/sglang_logs.md`` lists
their sources. A log is predictable when a config of its architecture is in
``fixtures/configs`` and its GPU is named (or its memory printed). kvlint is run as a user
would run it, from the poster's facts only (model, GPU, tp/dp/pp, version, the flags given;
nothing read from the printed pool)::

    kvlint check CONFIG --engine sglang --gpu GPU --tp T [--engine-version V]
                 [--gpu-memory-utilization MEM_FRACTION_STATIC] [...] --format json

Predictions are frozen before they are compared:

    python bench/sglang_capacity.py predict --logs /work/logs30 --out PRED.json
    python bench/sglang_capacity.py compare --logs /work/logs30 --pred PRED.json

A start that fails for memory is predicted right when kvlint reports KV501 or KV503; one that
starts, when kvlint's ``max_tokens`` is within 5 % of the ``#tokens`` /
``max_total_num_tokens`` SGLang printed. ``TUNED`` names the logs the start-up context
estimate (kvlint/model/sglang_memory.py) was fitted to; the rest are held out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "fixtures" / "configs"

CASES: dict[str, tuple[str, list[str]]] = {
    # log id -> (fixtures/configs/<config>.json of the same architecture, kvlint arguments
    # from the log's facts); written from expected.json before any prediction was made
    "01": ("meta-llama--Meta-Llama-3.1-8B", ["--gpu", "H100", "--engine-version", "0.4.1"]),
    "04": ("meta-llama--Meta-Llama-3-8B", ["--gpu", "MI300X", "--engine-version", "0.3.4"]),
    "13": ("deepseek-ai--DeepSeek-V4-Pro", ["--gpu", "H200", "--tp", "8",
                                            "--gpu-memory-utilization", "0.88"]),
    "19": ("deepseek-ai--DeepSeek-R1", ["--gpu", "H20", "--tp", "16",
                                        "--gpu-memory-utilization", "0.93"]),
    "21": ("Qwen--Qwen3-0.6B", ["--gpu-memory", str(round(16303 / 1024, 4))]),
    "27": ("Qwen--Qwen2.5-7B", ["--gpu", "RTX-3090", "--gpu-memory-utilization", "0.88"]),
    # added with their configs (fixtures/configs/SOURCES.md), before any prediction of them
    "09": ("Qwen--Qwen3-235B-A22B-FP8", ["--gpu", "H100", "--tp", "4",
                                         "--gpu-memory-utilization", "0.93"]),
    "16": ("Qwen--QwQ-32B", ["--gpu", "L4", "--tp", "4", "--engine-version", "0.4.3.post4",
                             "--gpu-memory-utilization", "0.85"]),
    "20": ("Qwen--Qwen3-14B", ["--gpu", "RTX-4090", "--tp", "4",
                               "--gpu-memory-utilization", "0.8"]),
    "24": ("Qwen--Qwen3-4B", ["--gpu", "H100", "--engine-version", "0.5.18",
                              "--gpu-memory-utilization", "0.85", "--max-model-len", "32768"]),
}
"""01: the docs notebook's GPU is an 80 GB-class card, taken as an H100, and its date
(2025-01) as SGLang 0.4.1; 04: a 2024-10 MI300X run, taken as 0.3.4; 27: DeepSeek-R1-Distill-
Qwen-7B has Qwen2.5-7B's architecture and sizes (Qwen2ForCausalLM); 21: an RTX 5080 known by
the 16,303 MiB nvidia-smi printed."""
TUNED = frozenset({"01", "04"})


def _facts(logs: Path) -> dict[str, dict[str, Any]]:
    return {str(e["id"]): e for e in json.loads((logs / "expected.json").read_text("utf-8"))}


def _cases(logs: Path) -> dict[str, tuple[str, list[str]]]:
    """``cases.json`` beside the logs when there is one (written by hand before predicting:
    ``{"ID": {"config": STEM, "args": [...]}}``), else :data:`CASES` (the first batch)."""
    path = logs / "cases.json"
    if not path.exists():
        return CASES
    cases = json.loads(path.read_text(encoding="utf-8"))
    return {k: (v["config"], list(v["args"])) for k, v in cases.items()
            if not k.startswith("_")}


def _printed(e: dict[str, Any]) -> int | None:
    """The pool's tokens the log printed (``max_total_num_tokens`` or ``#tokens``)."""
    value = e.get("max_total_num_tokens_printed") or e.get("kv_tokens_printed")
    return int(value) if value else None


def _log_version(logs: Path, key: str) -> str | None:
    """The release ``probe --engine-log`` models an unversioned log at (its lines' date and
    wording): what ``--infer-version`` passes when the poster states none."""
    from kvlint.loaders.sglang_log import read_log
    from kvlint.probe.log_common import log_version

    name = _facts(logs)[key].get("file")
    if not name:
        return None
    log = read_log(logs / name)
    config = json.loads((CONFIGS / f"{_cases(logs)[key][0]}.json").read_text("utf-8"))
    return log_version("sglang", None, None, [], log.version_range, log.dated, config)


def predict(logs: Path, infer_version: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (config, extra) in _cases(logs).items():
        if infer_version and "--engine-version" not in extra:
            guess = _log_version(logs, key)
            extra = [*extra, "--engine-version", guess] if guess else extra
        args = [sys.executable, "-m", "kvlint", "check", str(CONFIGS / f"{config}.json"),
                "--engine", "sglang", *extra, "--format", "json", "--no-plugins",
                "--isolated", "--offline"]
        run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        try:
            result = json.loads(run.stdout)["results"][0]
        except (ValueError, KeyError, IndexError):
            out[key] = {"error": (run.stderr or run.stdout).strip()[:300]}
            continue
        cap = result.get("capacity") or {}
        out[key] = {"max_tokens": cap.get("max_tokens"),
                    "codes": [f["code"] for f in result["findings"]],
                    "errors": [f["code"] for f in result["findings"]
                               if f["severity"] == "error"],
                    "command": " ".join(args[3:-5])}
    return out


def compare(logs: Path, pred: dict[str, Any]) -> int:
    facts = _facts(logs)
    tuned = frozenset() if (logs / "cases.json").exists() else TUNED  # a later batch: all held out
    groups: dict[str, list[float]] = {"tuned": [], "held out": []}
    rows = []
    for key, p in sorted(pred.items()):
        e = facts[key]
        group = "tuned" if key in tuned else "held out"
        printed = _printed(e)
        # a start fails when kvlint gives KV501/KV503 as errors (SGLang's KV501 is a warning:
        # it starts and caps requests); predictions frozen before "errors" was kept use codes
        predicted_fail = any(c in ("KV501", "KV503", "KV504")
                             for c in p.get("errors", p.get("codes", [])))
        if (e.get("failed_for_memory") or e.get("failed")) and not printed:
            rows.append((key, group, "fails", "fail" if predicted_fail else "starts", "",
                         predicted_fail))
        elif printed and p.get("max_tokens") is not None:
            err = (p["max_tokens"] - printed) / printed
            groups[group].append(err)
            rows.append((key, group, f"{printed:,}", f"{p['max_tokens']:,}",
                         f"{100 * err:+.1f} %", abs(err) <= 0.05 and not predicted_fail))
        else:
            rows.append((key, group, str(printed), str(p.get("max_tokens")), "no comparison",
                         False))
    print("| log | set | printed | predicted | error | right |\n|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    for group, errors in groups.items():
        subset = [r for r in rows if r[1] == group]
        right = sum(1 for r in subset if r[-1])
        median = (f"{100 * statistics.median(abs(x) for x in errors):.1f} %" if errors
                  else "n/a")
        print(f"{group}: {right} of {len(subset)} right; |error| median {median}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("predict", "compare"))
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--pred", type=Path)
    parser.add_argument("--infer-version", action="store_true",
                        help="model a log whose poster states no version as probe "
                             "--engine-log does (its lines' date and wording)")
    args = parser.parse_args()
    if args.step == "predict":
        data = json.dumps(predict(args.logs, args.infer_version), indent=1)
        if args.out:
            args.out.write_text(data + "\n", encoding="utf-8")
        print(data)
        return 0
    return compare(args.logs, json.loads(args.pred.read_text(encoding="utf-8")))


if __name__ == "__main__":
    sys.exit(main())
