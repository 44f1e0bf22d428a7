"""KV207 tp-refused-by-model through the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kvlint.cli import main
from tests.helpers import CONFIGS

NEMOTRON_H = str(CONFIGS / "nvidia--Nemotron-H-56B-Base-8K.json")
GPT_OSS = str(CONFIGS / "openai--gpt-oss-120b.json")


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["check", *args, "--format", "json", "--no-plugins",
                                       "--isolated"])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, data["results"][0]


def kv207(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in result["findings"] if f["code"] == "KV207"]


def test_nemotron_h_tp16_is_refused_for_its_mamba_groups() -> None:
    code, result = check(NEMOTRON_H, "--tp", "16")
    assert code == 1
    [finding] = kv207(result)
    assert finding["severity"] == "error"
    assert finding["name"] == "tp-refused-by-model"
    message = finding["message"]
    assert "mamba n_groups (8) is neither 1 nor divisible by tp=16" in message
    assert "mamba_mixer2.py:320" in message
    assert "Use tp \u2208 {1, 2, 4, 8}" in message
    assert finding["data"]["valid_tp"] == [1, 2, 4, 8]
    # the KV heads split (8 heads, replicated twice): KV202 stays silent
    assert "KV202" not in {f["code"] for f in result["findings"]}


def test_gpt_oss_120b_tp16_is_refused_by_its_model_class() -> None:
    code, result = check(GPT_OSS, "--tp", "16")
    assert code == 1
    [finding] = kv207(result)
    assert "KV heads (8) are fewer than tp=16" in finding["message"]
    assert "GptOssForCausalLM gives each GPU 8 // 16 = 0 KV heads" in finding["message"]
    assert "gpt_oss.py:156" in finding["message"]
    assert finding["data"]["valid_tp"] == [1, 2, 4, 8]
    # no replication warning for a tp the engine cannot build
    assert "KV201" not in {f["code"] for f in result["findings"]}


def test_valid_tp_does_not_fire() -> None:
    for config in (NEMOTRON_H, GPT_OSS):
        code, result = check(config, "--tp", "8")
        assert code == 0
        assert kv207(result) == []


def test_state_in_json_per_sequence() -> None:
    _, result = check(NEMOTRON_H, "--tp", "8")
    # 54 Mamba-2 layers x 2,112,512 B at tp=8 (see tests/model/test_state.py)
    assert result["kv"]["state_bytes_per_sequence_per_gpu"] == 114_075_648


def test_ricursive_of_vllm_0_34_splits_kv_heads_evenly(tmp_path: Path) -> None:
    # vllm/model_executor/models/ricursive.py@v0.34.0 line 97: ValueError unless the KV
    # heads divide by tp (no replication); the class is new in 0.34.0
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "architectures": ["RicursiveForCausalLM"], "model_type": "ricursive",
        "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4,
        "head_dim": 128, "num_hidden_layers": 24, "intermediate_size": 8192,
        "vocab_size": 32000, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}))
    code, result = check(str(config), "--tp", "8")
    assert code == 1
    [finding] = kv207(result)
    assert "KV heads (4) are not divisible by tp=8" in finding["message"]
    assert "(vLLM 0.34.0 model_executor/models/ricursive.py:97)" in finding["message"]
    assert finding["data"]["valid_tp"] == [1, 2, 4]
    code, result = check(str(config), "--tp", "4")
    assert kv207(result) == []
