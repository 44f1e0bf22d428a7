"""Parameter counts and weight bytes (kvlint.model.weights) from the real fixture configs
(through kvlint.loaders.shape), checked against the sizes the model publishers state."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.shape import (
    TIED_BY_DEFAULT,
    UNTIED_BY_DEFAULT,
    resolve_shape,
    resolve_weight_format,
)
from kvlint.model.weight_formats import MXFP4_BYTES, decode_read_bytes, weight_bytes, weight_format
from kvlint.model.weights import (
    LayerShape,
    Mixer,
    Mlp,
    ModelShape,
    ParameterEstimate,
    Part,
    estimate_parameters,
    pipeline_stage_layers,
    weight_bytes_per_gpu,
)
from tests.helpers import ROOT, fixture_config


def shape(name: str) -> ModelShape:
    return resolve_shape(fixture_config(name))


def estimate(name: str) -> ParameterEstimate:
    return estimate_parameters(shape(name))


def rel_error(value: float, target: float) -> float:
    return abs(value - target) / target


# Totals as the publishers state them (model cards / papers), language model only.
TOTALS = [
    ("meta-llama--Meta-Llama-3.1-8B", 8.03e9),
    ("meta-llama--Meta-Llama-3.1-70B", 70.6e9),
    ("meta-llama--Meta-Llama-3.1-405B", 405e9),
    ("meta-llama--Llama-2-70b-hf", 69e9),
    ("meta-llama--Llama-3.2-1B-Instruct", 1.24e9),
    ("mistralai--Mixtral-8x7B-v0.1", 46.7e9),
    ("mistralai--Mixtral-8x22B-v0.1", 141e9),
    ("deepseek-ai--DeepSeek-V3", 671e9),  # without the 14B multi-token-prediction module
    ("deepseek-ai--DeepSeek-V2-Lite", 15.7e9),
    ("deepseek-ai--DeepSeek-V2.5", 236e9),
    ("Qwen--Qwen3-30B-A3B", 30.5e9),
    ("Qwen--Qwen3-235B-A22B", 235e9),
    ("Qwen--Qwen2.5-7B", 7.62e9),
    ("google--gemma-2-9b", 9.24e9),
    ("microsoft--phi-4", 14.7e9),
    ("microsoft--phi-2", 2.78e9),
    ("openai-community--gpt2", 124e6),
    ("facebook--opt-125m", 125e6),
    ("EleutherAI--pythia-1b", 1.01e9),
    ("EleutherAI--gpt-j-6b", 6.05e9),
    ("openai--gpt-oss-120b", 116.8e9),
    ("openai--gpt-oss-20b", 20.9e9),
    ("ai21labs--AI21-Jamba-1.5-Mini", 52e9),
    ("mlx-community--dbrx-instruct-4bit", 132e9),
    ("state-spaces--mamba-2.8b-hf", 2.77e9),
]

ACTIVE = [
    ("mistralai--Mixtral-8x7B-v0.1", 12.9e9),
    ("deepseek-ai--DeepSeek-V3", 37e9),
    ("Qwen--Qwen3-30B-A3B", 3.3e9),
    ("Qwen--Qwen3-235B-A22B", 22e9),
    ("mistralai--Mixtral-8x22B-v0.1", 39e9),
    ("ai21labs--AI21-Jamba-1.5-Mini", 12e9),
    ("mlx-community--dbrx-instruct-4bit", 36e9),
]


@pytest.mark.parametrize(("name", "target"), TOTALS)
def test_total_parameters_within_2_percent(name: str, target: float) -> None:
    total = estimate(name).total
    assert rel_error(total, target) < 0.02, f"{name}: {total / 1e9:.3f}B vs {target / 1e9}B"


@pytest.mark.parametrize(("name", "target"), ACTIVE)
def test_active_parameters_within_5_percent(name: str, target: float) -> None:
    active = estimate(name).active_per_token
    assert rel_error(active, target) < 0.05, f"{name}: {active / 1e9:.3f}B vs {target / 1e9}B"


NEEDS_TRANSFORMERS = {
    "gghfez--Llama-3.3-90B-Vision-merged.json": "sparse text_config: MllamaTextConfig defaults",
    "google--gemma-4-26B-A4B.json": "Gemma 4 MoE top_k_experts is counted on branch collect",
}
"""Fixtures without the width fields a parameter count needs (see fixtures/configs/SOURCES.md)."""

NOT_COUNTED = ("Zyphra--Zamba2-2.7B-Instruct-v2.json", "Zyphra--Zamba2-7B.json")
"""Shared-block hybrids the count does not model (sized from their checkpoints instead:
tests/loaders/test_weight_size.py)."""


@pytest.mark.parametrize("name", NOT_COUNTED)
def test_shared_block_hybrids_are_refused_not_miscounted(name: str) -> None:
    with pytest.raises(ConfigError, match="attention and MLP blocks are shared by many layers"):
        shape(name)

AWAITING_GEOMETRY: frozenset[str] = frozenset()
"""Real configs whose layer schedule kvlint does not resolve yet (none today)."""


def test_every_fixture_resolves_without_transformers() -> None:
    """Every fixture but the sparse llava text_config (which needs transformers' Llama
    defaults) gives a positive count whose parts add up."""
    from tests.helpers import CONFIGS

    for file in sorted(CONFIGS.glob("*.json")):
        if file.name in ("expected.json", *NEEDS_TRANSFORMERS, *NOT_COUNTED) or \
                file.name.startswith("llava-hf--"):
            continue
        try:
            shape = resolve_shape(fixture_config(file.name))
        except ConfigError:
            if file.name in AWAITING_GEOMETRY:
                continue
            raise
        est = estimate_parameters(shape)
        assert est.total == sum(est.parts().values()) > 0, file.name
        assert 0 < est.active_per_token <= est.total, file.name


def test_sparse_text_config_uses_transformers_defaults() -> None:
    from kvlint.loaders.config_defaults import TableDefaults

    config = fixture_config("llava-hf--llava-1.5-7b-hf")
    with pytest.raises(ConfigError) as info:
        resolve_shape(config)
    assert info.value.field is not None and info.value.field.startswith("text_config.")
    got = resolve_shape(config, defaults=TableDefaults())
    assert (got.hidden_size, got.num_layers, got.intermediate_size) == (4096, 32, 11008)
    assert got.vocab_size == 32064
    assert any("vision" in note for note in got.notes)
    est = estimate_parameters(got)
    # the language model's 6.74B and CLIP ViT-L/14-336's ~0.30B (24 x (4 x 1024^2 + 2 x 1024
    # x 4096) + 3 x 14^2 x 1024 + 1024 x 4096 = 305,510,400): llava-1.5-7b's 7.06B
    assert est.encoder == 24 * (4 * 1024**2 + 2 * 1024 * 4096) + 3 * 14**2 * 1024 + 1024 * 4096
    assert rel_error(est.total - est.encoder, 6.74e9) < 0.02
    assert rel_error(est.total, 7.06e9) < 0.02
    assert est.decode_read_parts(1)[Part.ENCODER] == 0 and est.dense == est.total - est.encoder


# ------------------------------------------------------------------------ breakdown details
def test_llama_breakdown() -> None:
    est = estimate("meta-llama--Meta-Llama-3.1-8B")
    h, vocab, layers = 4096, 128256, 32
    assert est.embeddings == est.lm_head == vocab * h
    assert est.attention == layers * h * (4096 + 1024 + 1024 + 4096)
    assert est.dense_mlp == layers * 3 * h * 14336
    assert est.experts == est.shared_experts == est.router == est.mixer == 0
    assert est.norms == (2 * layers + 1) * h
    assert est.active_per_token == est.total


def test_tied_embeddings_have_no_lm_head() -> None:
    est = estimate("Qwen--Qwen2.5-1.5B")
    assert est.lm_head == 0 and est.tied
    assert estimate("google--gemma-2-9b").lm_head == 0  # gemma2 ties by default


def test_gpt2_two_matrix_mlp_and_learned_positions() -> None:
    s = shape("openai-community--gpt2")
    assert not s.gated_mlp and s.intermediate_size == 4 * 768  # n_inner: null
    assert s.position_embeddings == 1024 and s.tie_word_embeddings
    est = estimate_parameters(s)
    assert est.embeddings == (50257 + 1024) * 768
    assert est.dense_mlp == 12 * 2 * 768 * 3072


def test_opt_positions_have_offset_two() -> None:
    assert shape("facebook--opt-125m").position_embeddings == 2048 + 2


def test_mixtral_moe_counts() -> None:
    est = estimate("mistralai--Mixtral-8x7B-v0.1")
    per_expert = 3 * 4096 * 14336
    assert (est.moe_layers, est.num_experts, est.experts_per_token) == (32, 8, 2)
    assert est.params_per_expert == per_expert
    assert est.experts == 32 * 8 * per_expert
    assert est.router == 32 * 4096 * 8
    assert est.dense_mlp == est.shared_experts == 0
    assert est.active_per_token == est.dense + 32 * 2 * per_expert


def test_deepseek_v3_layout_and_mtp_not_counted() -> None:
    s = shape("deepseek-ai--DeepSeek-V3")
    assert s.is_mla and s.q_lora_rank == 1536 and s.kv_lora_rank == 512
    assert (s.qk_nope_head_dim, s.qk_rope_head_dim, s.v_head_dim) == (128, 64, 128)
    assert s.num_moe_layers == 58  # first_k_dense_replace = 3
    assert s.shared_expert_intermediate_size == 2048
    assert s.mtp_layers == 1 and any("multi-token" in n for n in s.notes)
    est = estimate_parameters(s)
    config = fixture_config("deepseek-ai--DeepSeek-V3")
    without_mtp = estimate_parameters(resolve_shape({**config, "num_nextn_predict_layers": 0}))
    assert without_mtp.total == est.total  # the MTP module is never part of the count
    assert est.total < 680e9  # 671B, not 685B with the MTP module
    assert est.replicated_attention == 61 * (7168 * 1536 + 1536 + 7168 * 576 + 512)


def test_moe_schedules() -> None:
    assert shape("zai-org--GLM-4.5").num_moe_layers == 92 - 3
    assert shape("moonshotai--Kimi-K2-Instruct").num_moe_layers == 61 - 1
    assert shape("Qwen--Qwen3-30B-A3B").num_moe_layers == 48
    maverick = shape("meta-llama--Llama-4-Maverick-17B-128E-Instruct")
    assert [la.mlp for la in maverick.layer_plan[:4]] == [Mlp.DENSE, Mlp.MOE] * 2
    assert maverick.intermediate_size == 16384 and maverick.expert_intermediate_size == 8192
    assert maverick.shared_expert_intermediate_size == 8192
    mimo = shape("XiaomiMiMo--MiMo-V2-Flash")
    assert mimo.num_moe_layers == 47 and mimo.layer_plan[0].mlp is Mlp.DENSE
    assert mimo.shared_expert_intermediate_size == 0


def test_hybrid_layers() -> None:
    jamba = shape("ai21labs--AI21-Jamba-1.5-Mini")
    mixers = [la.mixer for la in jamba.layer_plan]
    assert mixers.count(Mixer.ATTENTION) == 4 and mixers.count(Mixer.MAMBA) == 28
    assert jamba.num_moe_layers == 16 and jamba.mamba is not None
    assert (jamba.mamba.d_inner, jamba.mamba.dt_rank) == (8192, 256)

    nemotron = shape("nvidia--Nemotron-H-56B-Base-8K")
    kinds = [(la.mixer, la.mlp) for la in nemotron.layer_plan]
    assert set(kinds) == {(Mixer.MAMBA2, Mlp.NONE), (Mixer.NONE, Mlp.DENSE),
                          (Mixer.ATTENTION, Mlp.NONE)}
    assert not nemotron.gated_mlp
    assert rel_error(estimate_parameters(nemotron).total, 56e9) < 0.02

    qwen_next = shape("Qwen--Qwen3-Next-80B-A3B-Thinking")
    mixers = [la.mixer for la in qwen_next.layer_plan]
    assert mixers.count(Mixer.LINEAR_ATTENTION) == 36 and qwen_next.attention_output_gate
    assert rel_error(estimate_parameters(qwen_next).total, 80e9) < 0.02

    nas = shape("nvidia--Llama-3_3-Nemotron-Super-49B-v1")
    assert sum(la.mixer is Mixer.NONE for la in nas.layer_plan) == 31  # no-op attention
    assert nas.layer_plan[0].intermediate_size == 14336  # ffn_mult 2.625 at hidden 8192
    assert rel_error(estimate_parameters(nas).total, 49.9e9) < 0.02


def test_qwen3_next_shared_expert() -> None:
    est = estimate("Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert est.shared_experts == 48 * 3 * 2048 * 512


# ------------------------------------------------------------------------------ decode reads
def test_expected_experts_touched_uniform_routing() -> None:
    est = estimate("mistralai--Mixtral-8x7B-v0.1")
    assert est.expected_experts_touched(0) == 0
    assert est.expected_experts_touched(1) == pytest.approx(2.0)
    assert est.expected_experts_touched(2) == pytest.approx(8 * (1 - 0.75**2))
    assert est.expected_experts_touched(10_000) == pytest.approx(8.0)
    with pytest.raises(ValueError):
        est.expected_experts_touched(-1)


def test_decode_read_params() -> None:
    dense = estimate("meta-llama--Meta-Llama-3.1-8B")
    # one sequence: everything but the embedding table, of which one row is read
    assert dense.decode_read_params(1) == dense.total - dense.embeddings + 4096
    moe = estimate("deepseek-ai--DeepSeek-V3")
    one = moe.decode_read_params(1)
    assert one == pytest.approx(moe.active_per_token - moe.embeddings + 7168, rel=1e-9)
    assert moe.decode_read_params(1) < moe.decode_read_params(16) < moe.decode_read_params(256)
    big = moe.decode_read_params(100_000)
    assert big == pytest.approx(moe.total - moe.embeddings + 100_000 * 7168, rel=1e-6)
    tied = estimate("Qwen--Qwen2.5-1.5B")  # a tied table is read whole by the LM head
    assert tied.decode_read_params(1) == tied.total


def test_decode_read_bytes_uses_part_formats() -> None:
    est = estimate("openai--gpt-oss-120b")
    fmt = resolve_weight_format(fixture_config("openai--gpt-oss-120b"))
    parts = est.decode_read_parts(4)
    expected = sum(n * fmt.bytes_per_param(p) for p, n in parts.items())
    assert decode_read_bytes(est, fmt, 4) == math.ceil(expected)


# ------------------------------------------------------------------------------- bytes
def test_bf16_bytes_are_two_per_parameter() -> None:
    est = estimate("meta-llama--Meta-Llama-3.1-8B")
    fmt = resolve_weight_format(fixture_config("meta-llama--Meta-Llama-3.1-8B"))
    assert fmt.name == "bfloat16" and fmt.exact
    assert weight_bytes(est, fmt).total == 2 * est.total


def test_float32_and_missing_dtype_are_served_in_16_bit() -> None:
    fmt = resolve_weight_format(fixture_config("state-spaces--mamba-2.8b-hf"))  # float32
    assert fmt.bytes_per_param(Part.ATTENTION) == 2.0
    assert any("float32" in note for note in fmt.notes)
    fmt = resolve_weight_format(fixture_config("openai-community--gpt2"))  # no dtype
    assert fmt.bytes_per_param(Part.DENSE_MLP) == 2.0 and fmt.notes


def test_fp8_block_quantization() -> None:
    fmt = resolve_weight_format(fixture_config("deepseek-ai--DeepSeek-V3"))
    assert not fmt.exact
    assert fmt.bytes_per_param(Part.EXPERTS) == pytest.approx(1 + 4 / (128 * 128))
    assert fmt.bytes_per_param(Part.EMBEDDINGS) == fmt.bytes_per_param(Part.NORMS) == 2.0
    total = weight_bytes(estimate("deepseek-ai--DeepSeek-V3"), fmt).total
    assert 670e9 < total < 680e9  # ~1 byte per parameter, 16-bit embeddings and LM head


def test_mxfp4_quantizes_experts_only() -> None:
    est = estimate("openai--gpt-oss-120b")
    fmt = resolve_weight_format(fixture_config("openai--gpt-oss-120b"))
    assert fmt.bytes_per_param(Part.EXPERTS) == MXFP4_BYTES == 0.53125
    assert fmt.bytes_per_param(Part.ATTENTION) == 2.0
    got = weight_bytes(est, fmt).total
    assert got == math.ceil(est.experts * MXFP4_BYTES) + 2 * (est.total - est.experts)
    assert 60e9 < got < 70e9  # the published checkpoint is ~65 GB


def test_mlx_4bit() -> None:
    fmt = resolve_weight_format(fixture_config("mlx-community--dbrx-instruct-4bit"))
    assert fmt.bytes_per_param(Part.EXPERTS) == pytest.approx(0.5 + 4 / 64)
    assert fmt.bytes_per_param(Part.EMBEDDINGS) == pytest.approx(0.5 + 4 / 64)
    assert fmt.bytes_per_param(Part.NORMS) == 2.0 and not fmt.exact
    unnamed = weight_format("bfloat16", {"group_size": 32, "bits": 8})  # newer mlx-lm
    assert unnamed.bytes_per_param(Part.DENSE_MLP) == pytest.approx(1 + 4 / 32)


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, 0.5 + 2.5 / 128),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, 0.5 + 2.5 / 128),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, 1.0),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 0.5 + 4 / 64),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 1.0),
        ({"quant_method": "fp8"}, 1.0),
        ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
            "weights": {"num_bits": 4, "strategy": "group", "group_size": 128,
                        "symmetric": True}}}}, 0.5 + 2 / 128),
    ],
)
def test_quantization_methods(quant: dict[str, Any], expected: float) -> None:
    fmt = weight_format("bfloat16", quant)
    assert fmt.bytes_per_param(Part.DENSE_MLP) == pytest.approx(expected)
    assert fmt.bytes_per_param(Part.LM_HEAD) == 2.0
    assert not fmt.exact


def test_unknown_quantization_is_an_upper_bound() -> None:
    fmt = weight_format("bfloat16", {"quant_method": "something-new"})
    assert fmt.bytes_per_param(Part.DENSE_MLP) == 2.0 and not fmt.exact
    assert any("something-new" in note for note in fmt.notes)


def test_pipeline_stages_split_layers_like_vllm() -> None:
    assert pipeline_stage_layers(32, 4) == [8, 8, 8, 8]
    # 30 // 4 = 7 each; the remainder 2 to the stages before the last, backwards
    assert pipeline_stage_layers(30, 4) == [7, 8, 8, 7]
    assert pipeline_stage_layers(5, 2) == [3, 2]
    with pytest.raises(ValueError):
        pipeline_stage_layers(2, 4)


def test_weight_bytes_per_gpu_fullest_pipeline_stage() -> None:
    # 4 layers of 20 B, embeddings 10 B on stage 0, LM head 30 B on the last: stages 50 / 70
    assert weight_bytes_per_gpu(120, 1, 2, layers=4, first_stage_bytes=10,
                                last_stage_bytes=30) == 70
    assert weight_bytes_per_gpu(120, 2, 2, layers=4, first_stage_bytes=10,
                                last_stage_bytes=30) == 35
    # tied: the 10 B table is counted once in the total but held by both end stages:
    # (110 - 10) / 4 = 25 B a layer, stages 2 x 25 + 10 = 60 each
    assert weight_bytes_per_gpu(110, 1, 2, layers=4, first_stage_bytes=10, tied=True) == 60
    # without layers (or pp 1) the old even split
    assert weight_bytes_per_gpu(120, 1, 2) == 60
    assert weight_bytes_per_gpu(120, 1, 1, layers=4, first_stage_bytes=10,
                                last_stage_bytes=30) == 120


def test_weight_bytes_per_gpu() -> None:
    assert weight_bytes_per_gpu(800, 8) == 100
    assert weight_bytes_per_gpu(800, 4, 2) == 100
    assert weight_bytes_per_gpu(800, 8, replicated_bytes=80) == 90 + 80
    assert weight_bytes_per_gpu(801, 2) == 401  # rounded up
    with pytest.raises(ValueError):
        weight_bytes_per_gpu(800, 0)
    with pytest.raises(ValueError):
        weight_bytes_per_gpu(800, 2, replicated_bytes=900)
    est = estimate("deepseek-ai--DeepSeek-V3")
    fmt = resolve_weight_format(fixture_config("deepseek-ai--DeepSeek-V3"))
    wb = weight_bytes(est, fmt)
    per_gpu = weight_bytes_per_gpu(wb.total, 8, replicated_bytes=wb.replicated)
    assert wb.total / 8 < per_gpu < wb.total / 8 * 1.02


# ------------------------------------------------------------------------- shape validation
def test_model_shape_validation() -> None:
    base = ModelShape("llama", 64, 2, 100, 128, 4, 4, 16)
    with pytest.raises(ValueError):
        replace(base, hidden_size=0)
    with pytest.raises(ValueError):
        replace(base, layers=(LayerShape(),))
    with pytest.raises(ValueError):
        replace(base, num_experts=4, num_experts_per_tok=5)
    assert estimate_parameters(base).total == (
        2 * 100 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 128) + 5 * 64
    )


def test_missing_fields_raise_config_error() -> None:
    config = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 4, "hidden_size": 64, "intermediate_size": 128}
    with pytest.raises(ConfigError) as info:
        resolve_shape(config)
    assert info.value.field == "vocab_size"
    with pytest.raises(ConfigError) as info:
        resolve_shape({"model_type": "llava", "text_config": config})
    assert info.value.field == "text_config.vocab_size"
    moe = {**config, "vocab_size": 10, "num_local_experts": 4}
    with pytest.raises(ConfigError) as info:
        resolve_shape(moe)
    assert info.value.field == "num_experts_per_tok"


def test_tie_defaults_match_transformers() -> None:
    transformers = pytest.importorskip("transformers")
    for model_type in sorted(TIED_BY_DEFAULT | UNTIED_BY_DEFAULT):
        if model_type not in transformers.CONFIG_MAPPING:
            continue
        tied = transformers.CONFIG_MAPPING[model_type]().tie_word_embeddings
        assert tied == (model_type in TIED_BY_DEFAULT), model_type


def test_imports_stay_light() -> None:
    code = (
        "import sys, kvlint.loaders.shape, kvlint.loaders.checkpoint\n"
        "bad = {'torch', 'transformers', 'huggingface_hub'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
    pure = (
        "import sys, kvlint.model.weights\n"
        "extra = {m for m in sys.modules if m.startswith('kvlint')}\n"
        "extra -= {'kvlint', 'kvlint.model', 'kvlint.model.weights'}\n"
        "assert not extra, extra\n"
    )
    subprocess.run([sys.executable, "-c", pure], cwd=ROOT, check=True, timeout=60)
