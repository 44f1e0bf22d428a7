"""Capacity against vLLM start-up logs kvlint was never built or tuned on (issue 29).

The logs (``bench/vllm_logs_heldout.md`` lists their sources) are kept outside the project,
with the facts each poster gave written down by hand before kvlint was run
(``expected.json``). A log is predictable when its model's config is in ``fixtures/configs``
(the same architecture) and its GPU is named. For each, kvlint is run as a user would run it,
from the poster's facts only (nothing read from the printed KV figures)::

    kvlint check CONFIG --gpu GPU --tp T --pp P [--engine-version V] [--max-model-len L]
                 [--gpu-memory-utilization U] --format json

Two steps, so that predictions are frozen before they are compared:

    python bench/capacity_heldout.py predict --logs /work/logs29 --out PRED.json
    python bench/capacity_heldout.py compare --logs /work/logs29 --pred PRED.json

``read`` checks the log reader alone: whether it gets every figure each log prints.

A start that the log shows failing for memory is predicted right when kvlint reports KV501 or
KV503; a start that succeeds, when kvlint's ``max_tokens`` is within 5 % of the printed ``GPU
KV cache size`` (or ``# GPU blocks`` x the version's block size, 16 before 0.34).
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

CASES: dict[str, tuple[str, str]] = {
    # log number -> (fixtures/configs/<config>.json of the same architecture, kvlint GPU)
    # written from expected.json's model and gpu fields before any prediction was made
    "001": ("openai--gpt-oss-120b", "H100"),
    "002": ("openai--gpt-oss-120b", "H100"),
    "003": ("openai--gpt-oss-120b", "H100"),
    "004": ("meta-llama--Llama-3.2-11B-Vision", "H100"),
    "024": ("meta-llama--Llama-3.2-3B-Instruct", "L4"),
    "039": ("microsoft--Phi-3-mini-4k-instruct", "A40"),
}
"""039 is Phi-3-mini-128k: the 4k config has the same layers, heads and sizes; its
max_model_len is the 128k model's (131,072), given below."""
MAX_LEN = {"039": 131072}


def _facts(logs: Path) -> dict[str, dict[str, Any]]:
    entries = json.loads((logs / "expected.json").read_text(encoding="utf-8"))
    return {e["file"][:3]: e for e in entries}


def _log_version(logs: Path, entry: dict[str, Any]) -> str | None:
    """The newest vLLM release whose wording the log's lines all have (VllmLog.version_range):
    what ``--infer-version`` passes when the poster states none."""
    from kvlint.loaders.vllm_log import parse_text

    text = (logs / "files" / entry["file"]).read_text(encoding="utf-8", errors="replace")
    found = getattr(parse_text(text), "version_range", None)
    return str(found[1]) if found else None


def predict(logs: Path, infer_version: bool = False) -> dict[str, Any]:
    facts = _facts(logs)
    out: dict[str, Any] = {}
    for key, (config, gpu) in CASES.items():
        e = facts[key]
        args = [sys.executable, "-m", "kvlint", "check", str(CONFIGS / f"{config}.json"),
                "--gpu", gpu, "--tp", str(e.get("tp") or 1), "--pp", str(e.get("pp") or 1),
                "--format", "json", "--no-plugins", "--isolated", "--offline"]
        version = e.get("vllm_version") or (_log_version(logs, e) if infer_version else None)
        if version:
            args += ["--engine-version", version.split("+")[0].split(".dev")[0]]
        length = MAX_LEN.get(key) or e.get("max_model_len")
        if length:
            args += ["--max-model-len", str(length)]
        if e.get("gpu_memory_utilization"):
            args += ["--gpu-memory-utilization", str(e["gpu_memory_utilization"])]
        run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        try:
            result = json.loads(run.stdout)["results"][0]
        except (ValueError, KeyError, IndexError):
            out[key] = {"error": (run.stderr or run.stdout).strip()[:300]}
            continue
        cap = result.get("capacity") or {}
        out[key] = {"max_tokens": cap.get("max_tokens"),
                    "codes": [f["code"] for f in result["findings"]],
                    "command": " ".join(args[3:])}
    return out


def compare(logs: Path, pred: dict[str, Any]) -> int:
    facts = _facts(logs)
    errors: list[float] = []
    rows = []
    for key, p in pred.items():
        e = facts[key]
        printed = e["printed"]
        failed = bool(e["failed_for_memory"])
        predicted_fail = any(c in ("KV501", "KV503") for c in p.get("codes", []))
        tokens = printed.get("kv_cache_tokens") or (
            printed["gpu_blocks"] * (printed.get("block_size") or 16)
            if printed.get("gpu_blocks") else None)
        if failed:
            ok = predicted_fail
            rows.append((key, "fails", "fail" if predicted_fail else "starts", "", ok))
        elif tokens and p.get("max_tokens"):
            err = (p["max_tokens"] - tokens) / tokens
            errors.append(err)
            rows.append((key, f"{tokens:,}", f"{p['max_tokens']:,}", f"{100 * err:+.1f} %",
                         abs(err) <= 0.05 and not predicted_fail))
        else:
            rows.append((key, str(tokens), str(p.get("max_tokens")), "no comparison", False))
    print("| log | printed | predicted | error | right |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    right = sum(1 for r in rows if r[-1])
    median = f"{100 * statistics.median(abs(x) for x in errors):.1f} %" if errors else "n/a"
    print(f"\n{right} of {len(rows)} right; |error| median {median} over {len(errors)} "
          "started logs")
    return 0


READ_FIELDS = {"gpu_blocks": "gpu_blocks", "kv_cache_tokens": "kv_tokens",
               "available_kv_gib": "kv_cache_gib", "weights_gib": "weights_gib",
               "total_gpu_memory_gib": "total_gpu_gib"}
"""expected.json's printed figures -> the VllmLog fields that should hold them."""


def read(logs: Path) -> int:
    """Whether kvlint's log reader gets every figure the poster's log prints (the facts
    written by hand), log by log: the share of logs read fully, and what was missed."""
    from kvlint.loaders.vllm_log import parse_text

    facts = _facts(logs)
    full = 0
    for key, e in sorted(facts.items()):
        text = (logs / "files" / e["file"]).read_text(encoding="utf-8", errors="replace")
        log = parse_text(text)
        missed = []
        for printed, attr in READ_FIELDS.items():
            want = e["printed"].get(printed)
            got = getattr(log, attr, None)
            if printed == "kv_cache_tokens" and got is None:  # a refusal's token count
                got = getattr(log, "max_tokens_error", None)
            if want is None:
                continue
            if got is None or abs(float(got) - float(want)) > max(0.011, abs(want) * 0.001):
                missed.append(f"{printed}={want} (read {got})")
        message = e.get("failure_message") or ""
        if e["failed_for_memory"] and any(c.isdigit() for c in message.split("]")[-1]) and \
                not any(
                getattr(log, a, None) is not None for a in (
                    "needed_gib", "max_tokens_error", "estimated_max_len", "kv_cache_gib",
                    "gpu_blocks")):
            missed.append("the failure's figures")
        full += not missed
        print(f"{key} {'ok' if not missed else 'MISSED ' + '; '.join(missed)}"
              f"  (versions {getattr(log, 'version_range', None)})")
    print(f"\n{full} of {len(facts)} logs: every printed figure read")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("predict", "compare", "read"))
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--pred", type=Path)
    parser.add_argument("--infer-version", action="store_true",
                        help="without a stated version, the newest release whose wording the "
                             "log has (the log reader's version range)")
    args = parser.parse_args()
    if args.step == "read":
        return read(args.logs)
    if args.step == "predict":
        found = predict(args.logs, args.infer_version)
        text = json.dumps(found, indent=1)
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        print(text)
        return 0
    return compare(args.logs, json.loads(args.pred.read_text(encoding="utf-8")))


if __name__ == "__main__":
    raise SystemExit(main())
