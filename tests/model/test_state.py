"""Per-sequence recurrent state bytes per GPU (kvlint.model.state), hand-derived from the
fixture configs and vLLM 0.33.0's state-shape calculators
(``model_executor/layers/mamba/mamba_utils.py``: ``mamba1_state_shape`` line 170,
``mamba2_state_shape`` line 186, ``short_conv_state_shape`` line 249,
``gated_delta_net_state_shape`` line 271, ``kda_state_shape`` line 296,
``linear_attention_state_shape`` line 152) and each model's
``get_mamba_state_shape_from_config``. The same figures were checked against vLLM's own
MambaSpecs (``real_page_size_bytes``) with the oracle (/work/wt/_notes/oracle_state.txt)."""

from __future__ import annotations

import pytest

from kvlint.model import kv
from kvlint.model.geometry import RecurrentState
from kvlint.model.model_tp import model_tp_refusals
from kvlint.model.state import state_bytes_per_gpu, tp_refusals
from tests.helpers import geometry

TPS = (1, 2, 4, 8, 16)


def total(name: str, tp: int) -> int | None:
    g = geometry(name)
    sizes = [state_bytes_per_gpu(layer.state, tp) for layer in g.state_layers
             if layer.state is not None]
    return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)


# Nemotron-H-56B (nemotron_h.py:799-810): I = mamba_num_heads 256 x mamba_head_dim 64 = 16384,
# n_groups 8, ssm_state_size 256, conv_kernel 4; 54 'M' layers of hybrid_override_pattern.
# conv (3, (16384 + 2*8*256)/tp) bf16 + ssm (256/tp, 64, 256) float32 (vLLM's NemotronH
# default mamba_ssm_cache_dtype, model_executor/models/config.py:813):
#   tp=1: 3*20480*2 + 256*64*256*4 = 122,880 + 16,777,216 = 16,900,096 B/layer.
NEMOTRON_H = {1: 54 * 16_900_096, 2: 54 * 8_450_048, 4: 54 * 4_225_024, 8: 54 * 2_112_512,
              16: None}
# Jamba-1.5-Mini (jamba.py:470-483): I = mamba_expand 2 x hidden 4096 = 8192, d_state 16,
# d_conv 4; 28 Mamba layers; bf16: tp=1 3*8192*2 + 8192*16*2 = 311,296 B/layer.
JAMBA = {tp: 28 * 311_296 // tp for tp in TPS}
# Qwen3-Next-80B (qwen3_next.py:893-912): k heads 16, v heads 32, head dims 128, kernel 4;
# conv_dim 2*16*128 + 32*128 = 8192; bf16: tp=1 3*8192*2 + 32*128*128*2 = 1,097,728; 36 layers.
QWEN3_NEXT = {tp: 36 * 1_097_728 // tp for tp in TPS}
# Qwen3.5-27B (qwen3_5.py:399-418): k 16, v 48, dims 128, kernel 4; mamba_ssm_dtype float32
# (config.py Qwen3_5ForConditionalGenerationConfig): conv 3*(4096+6144)*2 = 61,440 +
# ssm 48*128*128*4 = 3,145,728 = 3,207,168 B/layer at tp=1; 48 layers.
QWEN35 = {tp: 48 * 3_207_168 // tp for tp in TPS}
# mamba-2.8b (mamba.py:234-246): intermediate_size 5120, state_size 16, conv_kernel 4, 64
# layers; 16-bit serving: 3*5120*2 + 5120*16*2 = 194,560 B/layer at tp=1.
MAMBA_28B = {tp: 64 * 194_560 // tp for tp in TPS}
# falcon-mamba-7b: intermediate_size 8192: 3*8192*2 + 8192*16*2 = 311,296 B/layer, 64 layers.
FALCON_MAMBA = {tp: 64 * 311_296 // tp for tp in TPS}
# Nemotron-3-Nano-30B: 64 heads x 64 = 4096, n_groups 8, state 128, kernel 4, 23 'M' layers;
# tp=1: 3*(4096 + 2*8*128)*2 + 64*64*128*4 = 36,864 + 2,097,152 = 2,134,016 B/layer.
NEMOTRON3_NANO = {1: 23 * 2_134_016, 2: 23 * 1_067_008, 4: 23 * 533_504, 8: 23 * 266_752,
                  16: None}
# Kimi-K3 (kimi_k3/nvidia/model.py:1506-1523): KDA, num_heads 96, head_dim 128, kernel 4,
# 69 kda_layers; conv 3*(96*128*3)*2 = 221,184 bf16 + recurrent 96*128*128*4 = 6,291,456
# (float32: kda_state_dtype) = 6,512,640 B/layer at tp=1.
KIMI_K3 = {tp: 69 * 6_512_640 // tp for tp in TPS}


@pytest.mark.parametrize(("name", "expected"), [
    ("nvidia--Nemotron-H-56B-Base-8K", NEMOTRON_H),
    ("ai21labs--AI21-Jamba-1.5-Mini", JAMBA),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking", QWEN3_NEXT),
    ("Qwen--Qwen3.5-27B", QWEN35),
    ("state-spaces--mamba-2.8b-hf", MAMBA_28B),
    ("tiiuae--falcon-mamba-7b", FALCON_MAMBA),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", NEMOTRON3_NANO),
    ("moonshotai--Kimi-K3", KIMI_K3),
])
def test_state_bytes_per_gpu_match_vllm(name: str, expected: dict[int, int | None]) -> None:
    assert {tp: total(name, tp) for tp in TPS} == expected


def test_state_layer_counts_and_kinds() -> None:
    counts = {name: (len(geometry(name).state_layers),
                     {la.state.kind for la in geometry(name).state_layers if la.state})
              for name in ("nvidia--Nemotron-H-56B-Base-8K", "ai21labs--AI21-Jamba-1.5-Mini",
                           "Qwen--Qwen3-Next-80B-A3B-Thinking", "state-spaces--mamba-2.8b-hf",
                           "moonshotai--Kimi-K3")}
    assert counts == {
        "nvidia--Nemotron-H-56B-Base-8K": (54, {"mamba2"}),
        "ai21labs--AI21-Jamba-1.5-Mini": (28, {"mamba1"}),
        "Qwen--Qwen3-Next-80B-A3B-Thinking": (36, {"gdn"}),
        "state-spaces--mamba-2.8b-hf": (64, {"mamba1"}),
        "moonshotai--Kimi-K3": (69, {"kda"}),
    }
    # Nemotron-H's MLP ('-') layers hold neither KV nor state
    g = geometry("nvidia--Nemotron-H-56B-Base-8K")
    assert g.num_kv_layers + len(g.state_layers) == 64 < g.num_layers == 118


def test_nemotron_h_issue_figure_is_the_bf16_ssm_variant() -> None:
    """The issue's ~438 MiB per sequence holds with a bf16 SSM state; vLLM 0.33's default
    for Nemotron-H is float32 (870.3 MiB)."""
    g = geometry("nvidia--Nemotron-H-56B-Base-8K")
    state = g.state_layers[0].state
    assert state is not None and state.dtype == "float32"
    bf16 = RecurrentState(state.kind, state.dims, "bfloat16")
    assert 54 * (state_bytes_per_gpu(bf16, 1) or 0) == 459_620_352  # 438.3 MiB
    assert kv.state_bytes_per_sequence(g) == 912_605_184  # 870.3 MiB


MAMBA2 = (("intermediate_size", 8192), ("n_groups", 1), ("num_heads", 128), ("head_dim", 64),
          ("state_size", 128), ("conv_kernel", 4))


def test_mamba2_single_group_is_replicated_over_head_shards() -> None:
    """extra_groups_for_head_shards (mamba_utils.py:262): n_groups 1 at tp=4 becomes 4."""
    s = RecurrentState("mamba2", MAMBA2)
    # tp=4: conv_dim (8192 + 2*4*128)/4 = 2304; 3*2304*2 + 32*64*128*2 = 13,824 + 524,288
    assert state_bytes_per_gpu(s, 4) == 538_112
    # tp=1: (8192 + 2*128) = 8448; 3*8448*2 + 128*64*128*2
    assert state_bytes_per_gpu(s, 1) == 50_688 + 2_097_152
    assert tp_refusals(s, 4) == ()


@pytest.mark.parametrize(("kind", "dims", "tp", "expected"), [
    # short_conv (lfm2.py:556-577): conv_dim 2048, conv_L_cache 3 -> (2, 2048/tp)
    ("short_conv", (("conv_dim", 2048), ("conv_kernel", 3)), 2, 2 * 1024 * 2),
    # linear attention (bailing_moe_linear.py:768-785): (heads/tp, d, d) in the model dtype
    ("linear", (("num_heads", 16), ("head_dim", 128)), 4, 4 * 128 * 128 * 2),
    # KDA with separate key heads (kda_state_shape): conv (H*D + 2*Hk*Dk)/tp
    ("kda", (("num_heads", 32), ("head_dim", 128), ("num_k_heads", 16), ("head_k_dim", 64),
             ("conv_kernel", 4)), 2, 3 * (4096 + 2048) // 2 * 2 + 16 * 128 * 128 * 4),
])
def test_other_kinds(kind: str, dims: tuple[tuple[str, int], ...], tp: int,
                     expected: int) -> None:
    assert state_bytes_per_gpu(RecurrentState(kind, dims), tp) == expected


def test_ssm_dtype_and_model_dtype() -> None:
    s = RecurrentState("mamba1", (("intermediate_size", 1024), ("state_size", 16),
                                  ("conv_kernel", 4)))
    assert state_bytes_per_gpu(s, 1) == 3 * 1024 * 2 + 1024 * 16 * 2
    assert state_bytes_per_gpu(s, 1, model_dtype_bytes=4) == 3 * 1024 * 4 + 1024 * 16 * 4
    f32 = RecurrentState("mamba1", s.dims, "float32")
    assert state_bytes_per_gpu(f32, 1) == 3 * 1024 * 2 + 1024 * 16 * 4


def test_unknown_kind_costs_nothing() -> None:
    assert state_bytes_per_gpu(RecurrentState("rwkv7", ()), 8) == 0


@pytest.mark.parametrize(("kind", "dims", "tp", "what"), [
    ("mamba2", (("intermediate_size", 8192), ("n_groups", 8), ("num_heads", 128),
                ("head_dim", 64), ("state_size", 128), ("conv_kernel", 4)), 16,
     "mamba n_groups"),
    ("mamba2", (("intermediate_size", 8192), ("n_groups", 1), ("num_heads", 24),
                ("head_dim", 64), ("state_size", 128), ("conv_kernel", 4)), 16, "mamba heads"),
    ("gdn", (("num_k_heads", 16), ("num_v_heads", 32), ("head_k_dim", 128),
             ("head_v_dim", 128), ("conv_kernel", 4)), 32, "linear-attention key heads"),
    ("kda", (("num_heads", 12), ("head_dim", 128), ("conv_kernel", 4)), 8,
     "linear-attention heads"),
    ("linear", (("num_heads", 12), ("head_dim", 128)), 8, "linear-attention heads"),
    ("mamba1", (("intermediate_size", 5120), ("state_size", 16), ("conv_kernel", 4)), 3,
     "mamba intermediate size"),
])
def test_refused_tp(kind: str, dims: tuple[tuple[str, int], ...], tp: int, what: str) -> None:
    state = RecurrentState(kind, dims)
    assert state_bytes_per_gpu(state, tp) is None
    assert what in {r.what for r in tp_refusals(state, tp)}


def test_model_tp_refusals() -> None:
    nemotron = geometry("nvidia--Nemotron-H-56B-Base-8K")
    assert [r.what for r in model_tp_refusals(nemotron, 16)] == ["mamba n_groups"]
    assert model_tp_refusals(nemotron, 8) == ()
    gpt_oss = geometry("openai--gpt-oss-120b")
    assert [(r.what, r.value) for r in model_tp_refusals(gpt_oss, 16)] == [("KV heads", 8)]
    assert model_tp_refusals(gpt_oss, 8) == ()
    assert model_tp_refusals(gpt_oss, 16, engine="sglang") == ()  # a vLLM model-class fact
    llama = geometry("meta-llama--Meta-Llama-3.1-8B")
    assert model_tp_refusals(llama, 16) == ()  # vLLM's usual max(1, n_kv // tp) replicates
