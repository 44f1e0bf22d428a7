"""LMDeploy's engine facts (kvlint/engines/engines.toml ``[engines.lmdeploy]``), pinned to the
wheels they were read from (lmdeploy 0.7.3 and 0.18.0) and to ../shared/oracle/lmdeploy_oracle.py,
which runs LMDeploy's own PyTorch-engine config builders and cache sizing on CPU."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.engines import behaviour, default_backend, load_engines, refused_kv_cache_dtype
from tests.helpers import CONFIGS


def check(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["check", *args, "--format", "json", "--no-plugins"])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)["results"][0]
    return data


def codes(result: dict[str, Any]) -> list[str]:
    return [f["code"] for f in result["findings"]]


# --- MLA: per release, per model type -----------------------------------------------------

@pytest.mark.parametrize(("version", "model_type", "cache"), [
    ("0.7.3", "deepseek_v2", "latent"), ("0.7.3", "deepseek_v3", "latent"),
    ("0.6.4", "deepseek_v3", "full"),     # deepseek_v3 joined the builder in v0.7.0 (#2967)
    ("0.7.3", "kimi_k2", "generic"),      # deepseek_v2.py@0.7.3: deepseek_v2/v3 only
    ("0.10.1", "kimi_k2", "generic"), ("0.10.2", "kimi_k2", "latent"),   # PR #4069
    ("0.18.0", "kimi_k2", "latent"),      # kimi_k2.py@0.18.0
    ("0.18.0", "glm4_moe_lite", "latent"), ("0.12.0", "glm4_moe_lite", "full"),  # PR #4320
    ("0.18.0", "minicpm3", "full-padded-v"),
])
def test_mla_cache_by_release(version: str, model_type: str, cache: str) -> None:
    assert behaviour("lmdeploy", version, model_type, is_mla=True).mla_cache == cache


def test_kimi_k2_on_0_7_3_is_not_the_latent() -> None:
    result = check(str(CONFIGS / "moonshotai--Kimi-K2-Instruct.json"), "--engine", "lmdeploy",
                   "--engine-version", "0.7.3")
    assert "KV301" in codes(result)
    message = next(f["message"] for f in result["findings"] if f["code"] == "KV301")
    assert "latent MLA caching needs LMDeploy ≥ 0.10.2" in message
    assert "per-head K and V 112 wide" in message


@pytest.mark.parametrize(("tp", "per_gpu"), [
    # the 0.7.3 oracle (configurations/default.py: K and V of 7168 // 64 = 112, 64 KV heads):
    # 2 x 61 layers x 64/tp heads x 112 x 2 B
    (1, 1_748_992), (2, 874_496), (8, 218_624), (16, 109_312),
])
def test_kimi_k2_on_0_7_3_caches_the_generic_builders_k_and_v(tp: int, per_gpu: int) -> None:
    result = check(str(CONFIGS / "moonshotai--Kimi-K2-Instruct.json"), "--engine", "lmdeploy",
                   "--engine-version", "0.7.3", "--tp", str(tp))
    assert result["kv"]["bytes_per_token"] == 1_748_992
    assert result["kv"]["bytes_per_token_per_gpu"] == per_gpu


@pytest.mark.parametrize(("name", "tp", "per_gpu"), [
    # the 0.18.0 oracle: 47 layers x 576 x 2 B, replicated (one latent head per GPU)
    ("zai-org--GLM-4.7-Flash", 1, 54_144), ("zai-org--GLM-4.7-Flash", 4, 54_144),
    ("moonshotai--Kimi-K2-Instruct", 8, 70_272),
])
def test_latent_figures_agree_with_lmdeploy_0_18(name: str, tp: int, per_gpu: int) -> None:
    result = check(str(CONFIGS / f"{name}.json"), "--engine", "lmdeploy", "--engine-version",
                   "0.18.0", "--tp", str(tp))
    assert result["kv"]["bytes_per_token_per_gpu"] == per_gpu
    assert "KV301" not in codes(result)


# --- sliding windows ---------------------------------------------------------------------

@pytest.mark.parametrize(("version", "model_type", "architecture", "windowed"), [
    # PyTorch engine: DefaultModelConfigBuilder keeps config.sliding_window (gemma.py keeps
    # it for gemma2 / gemma3_text), WindowBlockManager frees blocks beyond it
    ("0.18.0", "gemma2", "Gemma2ForCausalLM", True),
    ("0.7.3", "gemma2", "Gemma2ForCausalLM", True),
    ("0.18.0", "gemma3_text", "Gemma3ForCausalLM", True),
    # GemmaVLModelConfigBuilder sets sliding_window = -1 from v0.10.0 (PR #3772)
    ("0.18.0", "gemma3_text", "Gemma3ForConditionalGeneration", False),
    ("0.7.3", "gemma3_text", "Gemma3ForConditionalGeneration", True),
    ("0.18.0", "gemma3_text", None, False),   # architecture unknown: the vision model's answer
    ("0.18.0", "gpt_oss", "GptOssForCausalLM", False),   # gpt_oss.py: -1
    ("0.18.0", "llama4_text", "Llama4ForConditionalGeneration", False),
    ("0.18.0", "phi3", "Phi3ForCausalLM", True),
    # Mistral: TurboMind (no windowed pool) by default up to 0.13; PyTorch engine from 0.14
    ("0.7.3", "mistral", "MistralForCausalLM", False),
    ("0.18.0", "mistral", "MistralForCausalLM", True),
    ("0.2.4", "gemma2", "Gemma2ForCausalLM", False),
])
def test_sliding_window_by_release(version: str, model_type: str, architecture: str | None,
                                   windowed: bool) -> None:
    b = behaviour("lmdeploy", version, model_type, is_mla=False, architecture=architecture)
    assert b.windowed_sliding_cache is windowed


def test_gemma2_has_no_kv303_on_lmdeploy() -> None:
    result = check(str(CONFIGS / "google--gemma-2-9b.json"), "--engine", "lmdeploy",
                   "--engine-version", "0.18.0", "--context", "8192")
    assert "KV303" not in codes(result)


def test_architecture_changes_no_other_engine() -> None:
    for key in ("vllm", "sglang", "tgi", "trtllm", "llamacpp"):
        for model_type in ("gemma3_text", "gemma2", "gpt_oss", "mistral"):
            plain = behaviour(key, None, model_type, is_mla=False)
            named = behaviour(key, None, model_type, is_mla=False,
                              architecture="Gemma3ForCausalLM")
            assert plain == named


# --- fp8 KV by release and backend ------------------------------------------------------

@pytest.mark.parametrize(("version", "backend", "dtype", "refused"), [
    ("0.7.3", None, "fp8", True), ("0.7.3", "pytorch", "fp8_e5m2", True),   # quant_policy 0/4/8
    ("0.13.0", "pytorch", "fp8", True),
    ("0.14.0", "pytorch", "fp8", False), ("0.18.0", "pytorch", "fp8_e5m2", False),  # PR #4563
    ("0.18.0", "turbomind", "fp8", True),    # TurbomindEngineConfig asserts
    ("0.18.0", None, "fp8", False),          # backend unknown: not judged
    ("0.18.0", "pytorch", "fp8_inc", True),  # no such QuantPolicy
    ("0.7.3", None, "auto", False), ("0.18.0", "turbomind", "auto", False),
])
def test_fp8_kv_refusals(version: str, backend: str | None, dtype: str, refused: bool) -> None:
    fact = refused_kv_cache_dtype("lmdeploy", version, dtype, backend=backend)
    assert (fact is not None) is refused
    if fact is not None:
        assert fact.evidence == "V" and "@0." in fact.source


def test_no_other_engine_has_kv_dtype_refusals() -> None:
    for key, engine in load_engines().items():
        assert bool(engine.kv_cache_dtype) is (key == "lmdeploy")
        if key != "lmdeploy":
            assert refused_kv_cache_dtype(key, None, "fp8") is None


@pytest.mark.parametrize(("version", "architecture", "backend"), [
    ("0.7.3", "MistralForCausalLM", "turbomind"), ("0.18.0", "MistralForCausalLM", "pytorch"),
    ("0.12.3", "MistralForCausalLM", "turbomind"),  # left TurboMind's list in 0.14.0
    ("0.13.0", "MistralForCausalLM", None),   # between two known releases that differ
    ("0.12.3", "Qwen3_5ForConditionalGeneration", "turbomind"),
    ("0.18.0", "LlamaForCausalLM", "turbomind"), ("0.18.0", "Gemma2ForCausalLM", "pytorch"),
    ("0.18.0", None, None),
])
def test_default_backend(version: str, architecture: str | None, backend: str | None) -> None:
    assert default_backend("lmdeploy", version, architecture) == backend
    assert default_backend("vllm", version, architecture) is None


def test_a_hybrids_linear_state_pool_is_set_aside_before_the_kv_blocks() -> None:
    """Qwen3.5-27B (48 gated-delta-net layers: 16 key / 48 value heads of 128, conv kernel
    4): LMDeploy keeps one slot per sequence of conv (48, 10,240, 4) and recurrent (48, 48,
    128, 128) in 16 bits = 75.75 MiB, the whole kernel rather than vLLM's K - 1. The PyTorch
    engine (0.12) sets aside max_batch_size + 8 slots from the free memory; TurboMind takes
    max_batch_size slots from the fraction's bytes and refuses a budget they fill."""
    from kvlint.model.lmdeploy_memory import CacheSettings, kv_budget, linear_state_slot_bytes

    dims = {"num_k_heads": 16, "num_v_heads": 48, "head_k_dim": 128, "head_v_dim": 128,
            "conv_kernel": 4}
    slot = linear_state_slot_bytes(48, dims, 1)
    assert slot == 48 * (10_240 * 4 * 2 + 48 * 128 * 128 * 2) == 79_429_632
    assert linear_state_slot_bytes(48, dims, 2) == 48 * (5_120 * 4 * 2 + 24 * 128 * 128 * 2)
    gib = 2**30
    tm = kv_budget("0.18.0", "turbomind", 14 * gib, 4 * 2**20,
                   CacheSettings(cache_max_entry_count=0.8, state_cache_bytes=128 * slot))
    assert tm.budget_bytes == int(14 * gib * 0.8) - 128 * slot and tm.error is None
    full = kv_budget("0.18.0", "turbomind", 10 * gib, 4 * 2**20,
                     CacheSettings(cache_max_entry_count=0.8, state_cache_bytes=128 * slot))
    assert full.num_gpu_blocks == 0 and full.error is not None
    assert "max_batch_size" in full.error
