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
import os
import re
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
    return {e["file"].split("-")[0]: e for e in entries}


def _log_version(logs: Path, entry: dict[str, Any], config: str | None = None) -> str | None:
    """The vLLM release ``probe --vllm-log`` models an unversioned log at
    (:func:`kvlint.probe.log_common.log_version`: the oldest release whose wording the log's
    lines all have, from the first that serves the model's architecture): what
    ``--infer-version`` passes when the poster states none."""
    from kvlint.loaders.vllm_log import parse_text
    from kvlint.probe.log_common import log_version

    text = (logs / "files" / entry["file"]).read_text(encoding="utf-8", errors="replace")
    found = getattr(parse_text(text), "version_range", None)
    if not found:
        return None
    model = json.loads((CONFIGS / f"{config}.json").read_text(encoding="utf-8")) \
        if config else None
    return log_version("vllm", None, None, [], (str(found[0]), str(found[1])), None, model)


_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:\.post\d+)?")
_SAMPLER = (("Using FlashInfer for top-p & top-k sampling", "1"),
            ("Falling back to the PyTorch-native implementation of top-p", "0"),
            ("Falling back to default sampling implementation", "0"))
"""vLLM's own words for the top-k/top-p sampler it chose (v1/sample/ops/topk_topp_sampler.py@
v0.10.1.1), as ``VLLM_USE_FLASHINFER_SAMPLER`` would set it: what ``--infer-sampler`` passes."""


def _log_sampler(logs: Path, entry: dict[str, Any]) -> str | None:
    text = (logs / "files" / entry["file"]).read_text(encoding="utf-8", errors="replace")
    return next((value for words, value in _SAMPLER if words in text), None)


def _cases(logs: Path) -> dict[str, dict[str, Any]]:
    """The logs to predict: ``cases.json`` beside the logs when there is one (written by hand
    before predicting: the config stem comes from expected.json's ``config``, the GPU is a
    kvlint name or a printed total memory, ``args`` override expected.json's settings, and a
    ``skip`` or a ``group`` other than the main one is reported apart), else :data:`CASES`."""
    path = logs / "cases.json"
    if not path.exists():
        return {key: {"config": config, "gpu": gpu,
                      "args": {"max_model_len": MAX_LEN[key]} if key in MAX_LEN else {}}
                for key, (config, gpu) in CASES.items()}
    facts = _facts(logs)
    cases = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items()
             if not k.startswith("_")}
    for key, case in cases.items():
        case.setdefault("config", facts[key].get("config"))
    return cases


def _setting(e: dict[str, Any], case: dict[str, Any], name: str) -> Any:
    return case.get("args", {}).get(name, e.get(name))


def predict(logs: Path, infer_version: bool = False, infer_sampler: bool = False
            ) -> dict[str, Any]:
    facts = _facts(logs)
    out: dict[str, Any] = {}
    for key, case in _cases(logs).items():
        if case.get("skip"):
            out[key] = {"skip": case["skip"]}
            continue
        e = facts[key]
        gpu = (["--gpu", case["gpu"]] if case.get("gpu")
               else ["--gpu-memory", str(case["gpu_memory"])])
        args = [sys.executable, "-m", "kvlint", "check",
                str(CONFIGS / f"{case['config']}.json"), *gpu,
                "--tp", str(_setting(e, case, "tp") or 1),
                "--pp", str(_setting(e, case, "pp") or 1),
                "--format", "json", "--no-plugins", "--isolated", "--offline"]
        # a case may say the stated version is not a release ("version": "infer": a dev
        # build's 0.1.devN), so the log's wording places it as for an unversioned log
        stated = _VERSION.match(str(e.get("vllm_version") or "")) \
            if case.get("version") != "infer" else None
        version = stated.group(0) if stated else (
            _log_version(logs, e, case.get("config")) if infer_version else None)
        if version:
            args += ["--engine-version", version]
        for name in ("max_model_len", "gpu_memory_utilization", "max_num_seqs",
                     "max_num_batched_tokens", "quantization"):
            value = _setting(e, case, name)
            if value:
                args += [f"--{name.replace('_', '-')}", str(value)]
        if case.get("args", {}).get("enable_lora"):  # vLLM's LoRA slots (kvlint.model.lora)
            args += ["--enable-lora"]
            for name in ("max_loras", "max_lora_rank"):
                if case["args"].get(name):
                    args += [f"--{name.replace('_', '-')}", str(case["args"][name])]
        dtype = _setting(e, case, "kv_cache_dtype")
        if dtype and dtype != "auto":
            args += ["--kv-cache-dtype", str(dtype)]
        env = dict(os.environ)
        env.pop("VLLM_USE_FLASHINFER_SAMPLER", None)
        sampler = _log_sampler(logs, e) if infer_sampler else None
        if sampler is not None:
            env["VLLM_USE_FLASHINFER_SAMPLER"] = sampler
        run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False,
                             env=env)
        try:
            result = json.loads(run.stdout)["results"][0]
        except (ValueError, KeyError, IndexError):
            out[key] = {"error": (run.stderr or run.stdout).strip()[:300]}
            continue
        cap = result.get("capacity") or {}
        out[key] = {"max_tokens": cap.get("max_tokens"),
                    "kv_budget_gib": round(cap["kv_budget_bytes_per_gpu"] / 2**30, 3)
                    if cap.get("kv_budget_bytes_per_gpu") is not None else None,
                    "codes": [f["code"] for f in result["findings"]],
                    "group": case.get("group", "main"),
                    "command": " ".join(args[3:])}
    return out


def compare(logs: Path, pred: dict[str, Any]) -> int:
    """Each prediction against what the log printed; the main group's share right and median
    error, then each other group's apart (skipped logs are listed, not scored)."""
    facts = _facts(logs)
    groups: dict[str, list[tuple[str, ...]]] = {}
    errors: dict[str, list[float]] = {}
    print("| log | group | printed | predicted | KV GiB printed / predicted | error | right |")
    print("|---|---|---|---|---|---|---|")
    for key, p in sorted(pred.items()):
        e = facts[key]
        if p.get("skip"):
            print(f"| {key} | skipped | | | | {p['skip']} | |")
            continue
        group = p.get("group", "main")
        printed = e["printed"]
        failed = bool(e["failed_for_memory"])
        predicted_fail = any(c in ("KV501", "KV503") for c in p.get("codes", []))
        tokens = printed.get("kv_cache_tokens") or (
            printed["gpu_blocks"] * (printed.get("block_size") or 16)
            if printed.get("gpu_blocks") else None)
        gib = f"{printed.get('available_kv_gib')} / {p.get('kv_budget_gib')}"
        if failed:
            ok = predicted_fail
            row = (key, group, "fails", "fails" if predicted_fail else
                   f"starts ({p.get('max_tokens')})", gib, "", str(ok))
        elif tokens and p.get("max_tokens"):
            err = (p["max_tokens"] - tokens) / tokens
            errors.setdefault(group, []).append(err)
            ok = abs(err) <= 0.05 and not predicted_fail
            row = (key, group, f"{tokens:,}", f"{p['max_tokens']:,}"
                   + (" (fails)" if predicted_fail else ""), gib, f"{100 * err:+.1f} %",
                   str(ok))
        else:
            ok = False
            row = (key, group, str(tokens), str(p.get("max_tokens") or p.get("error", "")),
                   gib, "no comparison", "False")
        groups.setdefault(group, []).append(row)
        print("| " + " | ".join(row) + " |")
    for group, rows in groups.items():
        right = sum(1 for r in rows if r[-1] == "True")
        errs = errors.get(group, [])
        median = f"{100 * statistics.median(abs(x) for x in errs):.1f} %" if errs else "n/a"
        print(f"\n{group}: {right} of {len(rows)} right; |error| median {median} over "
              f"{len(errs)} started logs")
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
            if printed == "total_gpu_memory_gib" and got is None and log.oom is not None:
                got = log.oom.total_gib  # the total an allocator's error prints
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
                        help="without a stated version, the oldest release whose wording the "
                             "log has (the log reader's version range, as probe uses it)")
    parser.add_argument("--infer-sampler", action="store_true",
                        help="the top-k/top-p sampler the log says it chose, passed as "
                             "VLLM_USE_FLASHINFER_SAMPLER")
    args = parser.parse_args()
    if args.step == "read":
        return read(args.logs)
    if args.step == "predict":
        found = predict(args.logs, args.infer_version, args.infer_sampler)
        text = json.dumps(found, indent=1)
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        print(text)
        return 0
    return compare(args.logs, json.loads(args.pred.read_text(encoding="utf-8")))


if __name__ == "__main__":
    raise SystemExit(main())
