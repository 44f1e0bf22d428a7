"""Every suggestion kvlint makes, applied, clears its finding and causes no refusal.

For each real fixture config at tp 1..16 on three GPUs, every finding that carries a
``suggestion`` is re-checked in process with the suggested serving settings: the finding's
code must be gone, and no KV202/KV203/KV503/KV207 (a tp the engine refuses, weights that do
not fit) the plan did not already have may appear. A deterministic sample keeps the runtime bounded.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from kvlint.linter import ModelResult, Target, lint_config
from kvlint.model.advice import SUGGESTION_KEYS, apply_suggestion
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import ServingPlan
from kvlint.plugins import get_plugin_manager
from kvlint.registry import Registry

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(p for p in (ROOT / "fixtures" / "configs").glob("*.json")
                 if p.name != "expected.json")
GPUS = ("H100-80GB", "A100-40GB", "L4")
TPS = range(1, 17)
FORBIDDEN = {"KV202", "KV203", "KV503", "KV207"}
SAMPLE = 500
"""Cases checked (of the full product), drawn with a fixed seed."""


@pytest.fixture(scope="module")
def rules() -> list[Any]:
    return list(Registry.from_plugins(get_plugin_manager(load_entry_points=False)).rules)


def _check(path: Path, config: dict[str, Any], plan: ServingPlan,
           rules: list[Any]) -> ModelResult:
    return lint_config(Target(str(path), path=str(path)), config, plan, rules,
                       source=str(path), offline=True)


def cases() -> list[tuple[Path, int, str]]:
    full = [(path, tp, gpu) for path in CONFIGS for tp in TPS for gpu in GPUS]
    return sorted(random.Random(16).sample(full, min(SAMPLE, len(full))),
                  key=lambda c: (c[0].name, c[1], c[2]))


def test_suggestions_clear_their_findings(rules: list[Any]) -> None:
    started = time.monotonic()
    configs = {p: json.loads(p.read_text()) for p in CONFIGS}
    applied: dict[str, int] = {}
    failures: list[str] = []
    checked = 0
    for path, tp, gpu in cases():
        plan = ServingPlan(layout=ParallelLayout(tp=tp), gpu=gpu)
        result = _check(path, configs[path], plan, rules)
        if result.config_error:
            continue
        checked += 1
        for finding in result.findings:
            if finding.suggestion is None:
                continue
            serving = dict(finding.suggestion.serving)
            assert serving and set(serving) <= set(SUGGESTION_KEYS), finding
            assert finding.suggestion.message
            again = _check(path, configs[path], apply_suggestion(result.plan, serving), rules)
            before = {f.code for f in result.findings}
            codes = {f.code for f in again.findings}
            bad = ({finding.code} | (FORBIDDEN - before)) & codes
            applied[finding.code] = applied.get(finding.code, 0) + 1
            if bad:
                failures.append(f"{path.name} tp={tp} {gpu}: {finding.code} suggests "
                                f"{serving}; then {sorted(bad)}")
    elapsed = time.monotonic() - started
    print(f"\n{checked} (config, tp, gpu) cases, {sum(applied.values())} suggestions "
          f"applied {dict(sorted(applied.items()))}, {elapsed:.1f} s")
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} in all)"
    assert checked > 0.9 * min(SAMPLE, len(CONFIGS) * len(TPS) * len(GPUS))
    assert {"KV201", "KV202", "KV203", "KV501", "KV503"} <= set(applied)


ENGINE_PLANS = (
    {"engine": "vllm", "engine_version": "0.6.3", "tp": 8, "pp": 3, "kv_cache_dtype": "fp8",
     "max_num_seqs": 1024},
    {"engine": "vllm", "engine_version": "0.8.3", "tp": 4, "pp": 5},
    {"engine": "vllm", "engine_version": "99.0", "tp": 2},
    {"engine": "sglang", "tp": 16},
)


def test_engine_and_pipeline_suggestions_clear_their_findings(rules: list[Any]) -> None:
    """The same property for engine versions, pipeline stages, KV dtypes and batch sizes
    (KV205, KV301-KV306, KV502, KV703): a fixed sample of configs under four plans."""
    sample = random.Random(305).sample(CONFIGS, 12)
    # an MLA model always (KV301 under vLLM 0.6.3), whatever the sample draws from a folder
    # that grows
    sample += [p for p in CONFIGS if p.name == "deepseek-ai--DeepSeek-V2-Lite.json"
               and p not in sample]
    applied: dict[str, int] = {}
    failures: list[str] = []
    for path in sample:
        config = json.loads(path.read_text())
        for settings in ENGINE_PLANS:
            plan = apply_suggestion(ServingPlan(gpu="H100-80GB"), settings)
            try:
                result = _check(path, config, plan, rules)
            except Exception as err:  # a plan the engine refuses outright (pp > layers)
                if "pp=" in str(err):
                    continue
                raise
            before = {f.code for f in result.findings}
            for finding in result.findings:
                if finding.suggestion is None:
                    continue
                again = _check(path, config,
                               apply_suggestion(result.plan, finding.suggestion.serving), rules)
                codes = {f.code for f in again.findings}
                applied[finding.code] = applied.get(finding.code, 0) + 1
                bad = ({finding.code} | (FORBIDDEN - before)) & codes
                if bad:
                    failures.append(f"{path.name} {settings}: {finding.code} suggests "
                                    f"{dict(finding.suggestion.serving)}; then {sorted(bad)}")
    print(f"\nsuggestions applied {dict(sorted(applied.items()))}")
    assert not failures, "\n".join(failures[:20])
    assert {"KV205", "KV301", "KV304", "KV305", "KV306", "KV502"} <= set(applied)
