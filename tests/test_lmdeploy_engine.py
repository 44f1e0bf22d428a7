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
    ("0.7.3", "kimi_k2", "full"),         # deepseek_v2.py@0.7.3: deepseek_v2/v3 only
    ("0.10.1", "kimi_k2", "full"), ("0.10.2", "kimi_k2", "latent"),   # PR #4069
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
    ("0.12.0", "MistralForCausalLM", None),   # between two known releases that differ
    ("0.18.0", "LlamaForCausalLM", "turbomind"), ("0.18.0", "Gemma2ForCausalLM", "pytorch"),
    ("0.18.0", None, None),
])
def test_default_backend(version: str, architecture: str | None, backend: str | None) -> None:
    assert default_backend("lmdeploy", version, architecture) == backend
    assert default_backend("vllm", version, architecture) is None
