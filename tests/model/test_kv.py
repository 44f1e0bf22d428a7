"""KV arithmetic, hand-computed from the fixture configs (DESIGN §3)."""

from __future__ import annotations

import pytest

from kvlint.model import kv
from kvlint.model.geometry import AttentionKind, LayerKind
from kvlint.model.serving import ServingPlan, analyze
from tests.helpers import geometry


def _fp(name: str, dtype: str = "auto", **layout: int | bool) -> kv.KvFootprint:
    g = geometry(name)
    return kv.footprint(g, kv.resolve_kv_dtype(dtype, g), kv.ParallelLayout(**layout))  # type: ignore[arg-type]


def test_llama2_70b_is_gqa8() -> None:
    # 80 layers x 2 (K,V) x 8 KV heads x 128 dims x 2 bytes
    g = geometry("meta-llama--Llama-2-70b-hf")
    assert (g.attention, g.num_kv_heads, g.head_dim) == (AttentionKind.GQA, 8, 128)
    assert _fp("meta-llama--Llama-2-70b-hf").bytes_per_token == 80 * 2 * 8 * 128 * 2 == 327_680


def test_deepseek_v3_latent() -> None:
    # 61 layers x (512 latent + 64 rope) x 2 bytes, one latent (no x2 for K and V)
    assert _fp("deepseek-ai--DeepSeek-V3").bytes_per_token == 61 * 576 * 2 == 70_272


def test_deepseek_v3_fp8_variants() -> None:
    assert _fp("deepseek-ai--DeepSeek-V3", "fp8").bytes_per_token == 61 * 576
    assert _fp("deepseek-ai--DeepSeek-V3", "fp8_ds_mla").bytes_per_token == 61 * 656 == 40_016


def test_fp8_ds_mla_needs_a_512_plus_64_latent() -> None:
    with pytest.raises(ValueError, match="kv_lora_rank 512"):
        kv.resolve_kv_dtype("fp8_ds_mla", geometry("meta-llama--Meta-Llama-3.1-8B"))
    with pytest.raises(ValueError, match="kv_lora_rank 512"):
        kv.resolve_kv_dtype("fp8_ds_mla", geometry("openbmb--MiniCPM3-4B"))  # 256 + 32


def test_unknown_kv_dtype() -> None:
    with pytest.raises(ValueError, match="expected one of auto"):
        kv.resolve_kv_dtype("int3", geometry("meta-llama--Meta-Llama-3.1-8B"))


def test_auto_dtype_serves_float32_configs_in_16_bit() -> None:
    g = geometry("state-spaces--mamba-2.8b-hf")
    assert g.dtype == "float32"
    assert kv.resolve_kv_dtype("auto", g) == kv.KvDtype("16-bit", 2)
    assert kv.resolve_kv_dtype("auto", geometry("openai--gpt-oss-20b")).bytes_per_element == 2
    assert kv.resolve_kv_dtype("auto", geometry("facebook--opt-125m")).name == "float16"


def test_gpt_oss_20b_sequence_honours_128_token_windows() -> None:
    g = geometry("openai--gpt-oss-20b")
    assert (g.num_sliding_layers, g.sliding_window) == (12, 128)
    per_layer = 2 * 8 * 64 * 2  # K+V, 8 KV heads, head dim 64, bf16 = 2,048 B/token
    want = 12 * 128 * per_layer + 12 * 8192 * per_layer
    assert want == 204_472_320
    dtype = kv.resolve_kv_dtype("auto", g)
    assert kv.bytes_per_sequence(g, dtype, 8192) == want
    assert kv.bytes_per_sequence(g, dtype, 8192, windowed=False) == 24 * 8192 * per_layer
    assert kv.bytes_per_sequence(g, dtype, 100) == 24 * 100 * per_layer  # shorter than windows


def test_gpt_oss_20b_sequence_per_gpu_at_tp8() -> None:
    a = analyze(geometry("openai--gpt-oss-20b"),
                ServingPlan(layout=kv.ParallelLayout(tp=8), context=8192))
    per_layer_gpu = 2 * 1 * 64 * 2
    assert a.bytes_per_sequence_per_gpu == 12 * 128 * per_layer_gpu + 12 * 8192 * per_layer_gpu


def test_qwen3_next_12_of_48_layers_hold_kv() -> None:
    g = geometry("Qwen--Qwen3-Next-80B-A3B-Thinking")
    assert g.num_layers == 48
    assert [i for i, layer in enumerate(g.layers) if layer.holds_kv] == list(range(3, 48, 4))
    assert _fp("Qwen--Qwen3-Next-80B-A3B-Thinking").bytes_per_token == 12 * 2 * 2 * 256 * 2


def test_mimo_v2_flash_windowed_layers_have_8_kv_heads() -> None:
    g = geometry("XiaomiMiMo--MiMo-V2-Flash")
    full = [la for la in g.layers if la.kind is LayerKind.FULL]
    swa = [la for la in g.layers if la.kind is LayerKind.SLIDING]
    assert (len(full), len(swa)) == (9, 39)
    assert {(la.num_kv_heads, la.k_head_dim, la.v_head_dim) for la in full} == {(4, 192, 128)}
    assert {(la.num_kv_heads, la.window) for la in swa} == {(8, 128)}
    assert g.num_kv_heads == 4  # the full-attention layers represent the model
    # (192 + 128) x heads x 2 bytes per layer
    assert _fp("XiaomiMiMo--MiMo-V2-Flash").bytes_per_token == 9 * 320 * 4 * 2 + 39 * 320 * 8 * 2


def test_mimo_replication_is_byte_weighted() -> None:
    # tp=8: the 9 full layers (4 KV heads) are replicated twice, the 39 SWA layers are not.
    fp = _fp("XiaomiMiMo--MiMo-V2-Flash", tp=8)
    assert fp.bytes_per_token_per_gpu == 48 * 320 * 1 * 2
    assert fp.bytes_per_token_cluster == 8 * 48 * 640
    assert fp.replication_factor == pytest.approx(8 * 30_720 / 222_720)


def test_explicit_head_dim_wins_over_hidden_over_heads() -> None:
    g = geometry("google--gemma-7b")  # hidden 3072 / 16 heads = 192, but head_dim is 256
    assert g.head_dim == 256
    assert _fp("google--gemma-7b").bytes_per_token == 28 * 2 * 16 * 256 * 2


def test_nested_text_config_uses_transformers_defaults() -> None:
    g = geometry("llava-hf--llava-1.5-7b-hf")  # sparse text_config: LlamaConfig defaults
    assert (g.model_type, g.num_layers, g.num_attention_heads, g.head_dim) == \
        ("llama", 32, 32, 128)


def test_tp_above_kv_heads_replicates() -> None:
    fp = _fp("meta-llama--Meta-Llama-3.1-8B", tp=16)
    assert fp.bytes_per_token == 131_072
    assert fp.kv_heads_per_gpu == 1
    assert fp.bytes_per_token_per_gpu == 32 * 2 * 128 * 2 == 16_384
    assert fp.bytes_per_token_cluster == 262_144
    assert fp.duplicate_bytes_per_token == 131_072
    assert fp.replication_factor == 2.0


def test_refused_tp_has_no_per_gpu_figure() -> None:
    fp = _fp("microsoft--phi-4", tp=8)
    assert (fp.kv_ok, fp.bytes_per_token_per_gpu, fp.replication_factor) == (False, None, None)
    assert kv.valid_tp_degrees(geometry("microsoft--phi-4")) == (1, 2, 5, 10, 20, 40)


def test_mla_latent_replicated_on_every_rank() -> None:
    fp = _fp("deepseek-ai--DeepSeek-V2.5", tp=16)
    assert (fp.bytes_per_token_per_gpu, fp.kv_heads_per_gpu) == (69_120, None)
    assert fp.replication_factor == 16.0
    assert fp.duplicate_bytes_per_token == 15 * 69_120 == 1_036_800


@pytest.mark.parametrize(("tp", "dp", "replication"), [(8, 8, 1.0), (16, 4, 4.0), (8, 2, 4.0)])
def test_dp_attention_runs_attention_at_tp_over_dp(tp: int, dp: int, replication: float) -> None:
    fp = _fp("deepseek-ai--DeepSeek-V3", tp=tp, dp=dp, dp_attention=True)
    assert fp.bytes_per_token_per_gpu == 70_272
    assert fp.replication_factor == replication


def test_dp_attention_needs_tp_divisible_by_dp() -> None:
    with pytest.raises(ValueError, match="divisible by dp"):
        kv.ParallelLayout(tp=8, dp=3, dp_attention=True)


@pytest.mark.parametrize(("layers", "pp", "stages"), [
    (61, 4, (15, 15, 16, 15)),  # vLLM's documented example
    (61, 2, (31, 30)),
    (20, 4, (5, 5, 5, 5)),
    (7, 4, (2, 2, 2, 1)),  # the last stage never takes an extra layer
    (3, 1, (3,)),
])
def test_pipeline_stages_follow_vllm(layers: int, pp: int, stages: tuple[int, ...]) -> None:
    assert kv.pipeline_stages(layers, pp) == stages


def test_pp_per_gpu_is_the_fullest_stage_of_a_hybrid() -> None:
    # Nemotron-H: 118 layers, attention at 7, 18, ..., 106. pp=4 splits 29/30/30/29, so the
    # middle stages hold 3 attention layers each; 1 KV head x 128 x 2 x 2 B = 512 B per layer.
    fp = _fp("nvidia--Nemotron-H-56B-Base-8K", tp=8, pp=4)
    assert fp.stages == (29, 30, 30, 29)
    assert fp.bytes_per_token_per_gpu == 3 * 512
    assert fp.bytes_per_token_cluster == 8 * 10 * 512


def test_mamba_has_no_kv() -> None:
    fp = _fp("state-spaces--mamba-2.8b-hf", tp=4)
    assert (fp.bytes_per_token, fp.bytes_per_token_per_gpu, fp.replication_factor) == (0, 0, 1.0)
    assert geometry("state-spaces--mamba-2.8b-hf").attention is AttentionKind.NONE


def test_layout_rejects_zero() -> None:
    with pytest.raises(ValueError, match="tp must be a positive integer"):
        kv.ParallelLayout(tp=0)
