"""TensorRT-LLM and LMDeploy capacity against real start-up logs (issue 33).

The logs and their facts (``expected.json``, written by hand from the source before kvlint was
run) stay outside the project; ``bench/engine_logs_heldout.md`` lists their sources. A folder
holds ``files/``, ``expected.json`` and ``cases.json``: for each log id (``trtllm-01``) the
config stem, the engine and the ``kvlint check`` arguments from the poster's facts, written
by hand before any prediction (a ``group`` other than ``main`` is reported apart). Two steps,
so that predictions are frozen before they are compared::

    python bench/engine_logs_heldout.py predict --logs /work/logs33 --out PRED.json
    python bench/engine_logs_heldout.py compare --logs /work/logs33 --pred PRED.json

A start that fails for memory is predicted right when kvlint reports an error-level KV501,
KV503 or KV504; one that starts, when kvlint's ``max_tokens`` is within 5 % of the tokens the
log printed (TensorRT-LLM's ``Allocated ... (N)``, or blocks x tokens per block). The per-token
column compares kvlint's bytes per token per GPU with the log's (printed or derived).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "fixtures" / "configs"
FAILS = ("KV501", "KV503", "KV504")


def _facts(logs: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for e in json.loads((logs / "expected.json").read_text("utf-8")):
        # ``trtllm-01-...`` (the first batches) or a batch number ``501-trtllm-...``
        found = re.match(r"(\d{3,})-", e["file"]) or re.match(r"(\w+-\d\d)", e["file"])
        if found:
            out[found.group(1)] = e
    return out


def predict(logs: Path) -> dict[str, Any]:
    cases = json.loads((logs / "cases.json").read_text("utf-8"))
    out: dict[str, Any] = {}
    for key, case in cases.items():
        if key.startswith("_"):
            continue
        if case.get("skip"):
            out[key] = {"skip": case["skip"]}
            continue
        args = [sys.executable, "-m", "kvlint", "check",
                str(CONFIGS / f"{case['config']}.json"), "--engine", case["engine"],
                *case["args"], "--format", "json", "--no-plugins", "--isolated", "--offline"]
        run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        try:
            result = json.loads(run.stdout)["results"][0]
        except (ValueError, KeyError, IndexError):
            out[key] = {"error": (run.stderr or run.stdout).strip()[:300]}
            continue
        cap = result.get("capacity") or {}
        kv = result.get("kv") or {}
        out[key] = {"max_tokens": cap.get("max_tokens"),
                    "bytes_per_token_per_gpu": kv.get("bytes_per_token_per_gpu"),
                    "errors": [f["code"] for f in result["findings"]
                               if f["severity"] == "error"],
                    "group": case.get("group", "main"),
                    "command": " ".join(args[3:])}
    return out


def _printed_tokens(e: dict[str, Any]) -> int | None:
    printed = e.get("printed") or {}
    if printed.get("kv_tokens"):
        return int(printed["kv_tokens"])
    blocks, per = printed.get("kv_blocks"), printed.get("tokens_per_block") or \
        (e.get("derived") or {}).get("tokens_per_block")
    return int(blocks) * int(per) if blocks and per else None


def compare(logs: Path, pred: dict[str, Any]) -> int:
    facts = _facts(logs)
    rows, errors = [], {}
    skipped = []
    for key, p in sorted(pred.items()):
        if p.get("skip"):
            skipped.append(f"{key}: {p['skip']}")
            continue
        e = facts[key]
        group = p.get("group", "main")
        fails = any(c in FAILS for c in p.get("errors", []))
        printed = _printed_tokens(e)
        per = (e.get("printed") or {}).get("bytes_per_token") or \
            (e.get("derived") or {}).get("bytes_per_token")
        ours = p.get("bytes_per_token_per_gpu")
        per_cell = f"{per} / {ours}" if per else f"- / {ours}"
        if e.get("failed_for_memory") and not printed:
            rows.append((key, group, "fails", "fail" if fails else "starts", "", per_cell,
                         fails))
        elif printed and p.get("max_tokens") is not None:
            err = (p["max_tokens"] - printed) / printed
            errors.setdefault(group, []).append(err)
            rows.append((key, group, f"{printed:,}", f"{p['max_tokens']:,}",
                         f"{100 * err:+.1f} %", per_cell, abs(err) <= 0.05 and not fails))
        else:
            rows.append((key, group, str(printed), str(p.get("max_tokens")), "no comparison",
                         per_cell, False))
    print("| log | group | printed | predicted | error | B/token printed / kvlint | right |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
    for group in sorted({r[1] for r in rows}):
        subset = [r for r in rows if r[1] == group]
        right = sum(1 for r in subset if r[-1])
        errs = errors.get(group, [])
        median = f"{100 * statistics.median(abs(x) for x in errs):.1f} %" if errs else "n/a"
        print(f"{group}: {right} of {len(subset)} right; |error| median {median}")
    for line in skipped:
        print(f"skipped {line}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("predict", "compare"))
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--pred", type=Path)
    args = parser.parse_args()
    if args.step == "predict":
        data = json.dumps(predict(args.logs), indent=1)
        if args.out:
            args.out.write_text(data + "\n", encoding="utf-8")
        print(data)
        return 0
    return compare(args.logs, json.loads(args.pred.read_text(encoding="utf-8")))


if __name__ == "__main__":
    sys.exit(main())
