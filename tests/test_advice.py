"""Machine-readable advice (``suggestion``) and the wrong-advice cases of issue 16."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from kvlint.linter import Target, lint_config
from kvlint.model import kv
from kvlint.model.advice import apply_suggestion
from kvlint.model.serving import ServingPlan
from kvlint.plugins import get_plugin_manager
from kvlint.registry import Registry
from kvlint.report import Report
from kvlint.units import fmt_tokens

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "fixtures" / "configs"
SARIF_SCHEMA = ROOT / "fixtures" / "schemas" / "sarif-schema-2.1.0.json"


def kvlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "kvlint", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120, check=False)


def check_json(*args: str) -> dict[str, Any]:
    proc = kvlint("check", *args, "--offline", "--format", "json", "--fail-on", "never")
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    Report.model_validate(report)
    return report


def findings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in report["results"][0]["findings"]}


def _rules() -> list[Any]:
    return list(Registry.from_plugins(get_plugin_manager(load_entry_points=False)).rules)


def test_kv503_for_an_fp8_checkpoint_proposes_a_valid_layout_and_no_fp8() -> None:
    config = CONFIGS / "deepseek-ai--DeepSeek-V3.json"
    report = check_json(str(config), "--gpu", "H100", "--tp", "8")
    kv503 = findings(report)["KV503"]
    assert "(fp8)" not in kv503["message"]
    assert "4-bit" in kv503["message"] and "fp8 already" in kv503["message"]
    serving = kv503["suggestion"]["serving"]
    assert set(serving) == {"tp", "pp"}
    geometry = report["results"][0]["geometry"]
    assert geometry["num_attention_heads"] == 128
    assert 128 % serving["tp"] == 0  # never tp=9 for 128 heads
    assert kv503["data"]["gpus_needed"] == serving["tp"] * serving["pp"]
    assert f"{serving['tp'] * serving['pp']} such GPUs" in kv503["message"]
    after = check_json(str(config), "--gpu", "H100", "--tp", str(serving["tp"]),
                       "--pp", str(serving["pp"]))
    assert "KV503" not in findings(after) and "KV203" not in findings(after)


def test_kv503_for_bf16_weights_proposes_fp8() -> None:
    report = check_json(str(CONFIGS / "meta-llama--Meta-Llama-3.1-70B.json"), "--gpu", "L4")
    kv503 = findings(report)["KV503"]
    assert "quantize the weights (fp8)" in kv503["message"]
    assert kv503["suggestion"]["serving"]["tp"] in (1, 2, 4, 8, 16, 32, 64)


def test_the_suggested_layout_is_the_smallest_valid_one() -> None:
    """No layout on fewer GPUs with a tp the engine accepts holds the weights and one
    full-length sequence."""
    path = CONFIGS / "deepseek-ai--DeepSeek-V3.json"
    config = json.loads(path.read_text())
    rules = _rules()
    plan = ServingPlan(layout=kv.ParallelLayout(tp=8), gpu="H100")
    result = lint_config(Target(str(path), path=str(path)), config, plan, rules,
                         offline=True)
    kv503 = next(f for f in result.findings if f.code == "KV503")
    assert kv503.suggestion is not None
    best = kv503.suggestion.serving["tp"] * kv503.suggestion.serving["pp"]
    for tp in (1, 2, 4, 8):
        for pp in range(1, best // tp + 1):
            if tp * pp >= best:
                continue
            again = lint_config(Target(str(path), path=str(path)), config,
                                apply_suggestion(plan, {"tp": tp, "pp": pp}), rules,
                                offline=True)
            assert {"KV503", "KV501"} & {f.code for f in again.findings}, (tp, pp)


def test_crossover_below_one_sequence_is_no_batch_size() -> None:
    proc = kvlint("check", str(CONFIGS / "meta-llama--Meta-Llama-3-8B.json"), "--context",
                  "1000000", "--gpu", "H100", "--offline")
    assert "above batch 0" not in proc.stdout
    assert "KV reads of one 1,000,000-token sequence are 8.7x the weight reads" in proc.stdout


def test_kv303_quotes_the_plans_length() -> None:
    config = str(CONFIGS / "google--gemma-2-9b.json")
    old = ("--engine", "vllm", "--engine-version", "0.8.3", "--select", "KV303")
    # a 4,096-token max_model_len fits inside gemma-2's 4,096 window: nothing is wasted
    assert "KV303" not in findings(check_json(config, *old, "--max-model-len", "4096"))
    kv303 = findings(check_json(config, *old, "--max-model-len", "6000"))["KV303"]
    assert kv303["data"]["context"] == 6000
    assert f"one {fmt_tokens(6000)}-token sequence" in kv303["message"]
    assert kv303["suggestion"]["serving"]["engine"] == "vllm"


def test_an_engine_version_newer_than_kvlint_knows_is_noted() -> None:
    from kvlint.engines import load_engines

    newest = str(load_engines()["vllm"].latest)
    config = str(CONFIGS / "meta-llama--Meta-Llama-3-8B.json")
    kv306 = findings(check_json(config, "--engine", "vllm", "--engine-version", "99.0",
                                "--select", "KV306"))["KV306"]
    assert kv306["severity"] == "info"
    assert f"the newest is {newest}" in kv306["message"]
    assert kv306["suggestion"]["serving"] == {"engine": "vllm", "engine_version": newest}
    assert not findings(check_json(config, "--engine", "vllm", "--engine-version", newest,
                                   "--select", "KV306"))


def test_values_not_read_from_the_config_are_marked(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama"}')
    note = ("not in the config, so transformers' 'llama' defaults were used: "
            "num_hidden_layers=32, num_attention_heads=32, hidden_size=4096")
    report = check_json(str(path))
    assert report["results"][0]["geometry"]["notes"] == [note]
    text = kvlint("check", str(path), "--offline", "--fail-on", "never").stdout
    assert "num_attention_heads=32" in " ".join(text.split())
    # a config that names its fields has no such note
    full = check_json(str(CONFIGS / "meta-llama--Meta-Llama-3-8B.json"))
    assert full["results"][0]["geometry"]["notes"] == []


def test_suggestions_in_json_and_sarif(tmp_path: Path) -> None:
    config = str(CONFIGS / "microsoft--phi-4.json")
    report = check_json(config, "--tp", "16", "--gpu", "H100")
    kv = findings(report)
    assert kv["KV203"]["suggestion"]["serving"]["tp"] in (1, 2, 4, 5, 8, 10, 20, 40)
    proc = kvlint("check", config, "--tp", "16", "--gpu", "H100", "--offline", "--format",
                  "sarif", "--fail-on", "never", cwd=tmp_path)
    sarif = json.loads(proc.stdout)
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text()))
    props = [r["properties"] for r in sarif["runs"][0]["results"]]
    assert any(p.get("suggestion", {}).get("serving", {}).get("tp") for p in props)
    assert all("fixes" not in r for r in sarif["runs"][0]["results"])
