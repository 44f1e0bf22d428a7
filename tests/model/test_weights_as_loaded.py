"""Issue 29: an MXFP4 MoE's (gpt-oss) routed experts as vLLM loads them (Marlin backend).

The byte counts below are worked by hand from vLLM's source (wheels 0.10.1, 0.10.2, 0.11.0,
0.20.0, 0.34.0; the citations are in ``kvlint.model.loaded_weights.vllm_marlin_mxfp4_layout``):

* per TP rank ``I_tp = intermediate_size // tp`` (fused_moe/layer.py@0.10.1 l.804,
  fused_moe/config.py@0.34.0 l.1398), padded for Marlin to ``I_p = round_up(I_tp, 128)``
  and ``H_p = round_up(hidden_size, 256)`` (quantization/mxfp4.py@0.10.1 l.165-167,
  fused_moe/oracle/mxfp4.py@0.34.0 l.850-855);
* per expert (quantization/mxfp4.py@0.10.1 l.190-260 ``create_weights``; the Marlin
  repack keeps each size: _custom_ops.py@0.34.0 l.1083-1096,
  marlin_utils_fp4.py@0.10.1 l.59-69 and 283-297):
  w13_weight 2·I_p·H_p/2, w13_scale 2·I_p·H_p/32, w13_bias 2·I_p·2 (bf16),
  w2_weight H_p·I_p/2, w2_scale H_p·I_p/32, w2_bias H_p·2 (bf16, on every rank).

gpt-oss-120b: hidden 2880, intermediate 2880, 128 experts, 36 layers (4608 expert-layers);
gpt-oss-20b: hidden 2880, intermediate 2880, 32 experts, 24 layers (768 expert-layers).
H_p = round_up(2880, 256) = 3072 (H_p/32 = 96) at every tp.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from kvlint.loaders.checkpoint import INDEX_NAME
from kvlint.loaders.weight_size import CheckpointRef, plan_weights
from kvlint.model.loaded_weights import (
    mxfp4_moe_checkpoint_bytes,
    vllm_marlin_mxfp4_layout,
    vllm_mxfp4_moe_bytes_per_gpu,
)
from tests.helpers import CONFIGS

GPT_OSS_120B = json.loads((CONFIGS / "openai--gpt-oss-120b.json").read_text(encoding="utf-8"))
GPT_OSS_20B = json.loads((CONFIGS / "openai--gpt-oss-20b.json").read_text(encoding="utf-8"))

# tp 1: I_p = round_up(2880, 128) = 2944 (I_p/32 = 92)
#   w13_weight 2·2944·3072/2 = 9,043,968   w13_scale 2·2944·96 = 565,248   w13_bias 11,776
#   w2_weight  3072·2944/2   = 4,521,984   w2_scale  3072·92   = 282,624   w2_bias   6,144
#   per expert 14,431,744
# tp 2: I_tp = 1440, I_p = 1536 (I_p/32 = 48)
#   w13_weight 2·1536·1536 = 4,718,592   w13_scale 2·1536·96 = 294,912   w13_bias 6,144
#   w2_weight  3072·768    = 2,359,296   w2_scale  3072·48   = 147,456   w2_bias  6,144
#   per expert 7,532,544
# tp 4: I_tp = 720, I_p = 768 (I_p/32 = 24)
#   w13_weight 2·768·1536 = 2,359,296   w13_scale 2·768·96 = 147,456   w13_bias 3,072
#   w2_weight  3072·384   = 1,179,648   w2_scale  3072·24  = 73,728    w2_bias  6,144
#   per expert 3,769,344
PER_EXPERT = {1: 14_431_744, 2: 7_532_544, 4: 3_769_344}
PADDED_WIDTH = {1: 2944, 2: 1536, 4: 768}


@pytest.mark.parametrize(("tp", "expected"), [
    (1, 66_501_476_352),  # 14,431,744 x 4608 (61.93 GiB)
    (2, 34_709_962_752),  # 7,532,544 x 4608
    (4, 17_369_137_152),  # 3,769,344 x 4608
])
def test_gpt_oss_120b_experts_per_gpu(tp: int, expected: int) -> None:
    assert PER_EXPERT[tp] * 128 * 36 == expected
    assert vllm_mxfp4_moe_bytes_per_gpu(2880, 2880, 128, 36, tp) == expected


@pytest.mark.parametrize(("tp", "expected"), [
    (1, 11_083_579_392),  # 14,431,744 x 768
    (2, 5_784_993_792),   # 7,532,544 x 768
    (4, 2_894_856_192),   # 3,769,344 x 768
])
def test_gpt_oss_20b_experts_per_gpu(tp: int, expected: int) -> None:
    assert PER_EXPERT[tp] * 32 * 24 == expected
    assert vllm_mxfp4_moe_bytes_per_gpu(2880, 2880, 32, 24, tp) == expected


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_layout_tensor_by_tensor(tp: int) -> None:
    layout = vllm_marlin_mxfp4_layout(2880, 2880, tp)
    i_p = PADDED_WIDTH[tp]
    assert (layout.hidden_size, layout.intermediate_size) == (3072, i_p)
    assert layout.w13_weight == 2 * i_p * 3072 // 2
    assert layout.w13_scale == 2 * i_p * 96
    assert layout.w13_bias == 2 * i_p * 2
    assert layout.w2_weight == 3072 * i_p // 2
    assert layout.w2_scale == 3072 * (i_p // 32)
    assert layout.w2_bias == 3072 * 2
    assert layout.total == PER_EXPERT[tp]


def test_checkpoint_experts() -> None:
    # unpadded, stored once: w13 2880·2880 + 2·2880·90 + 2·2880·2 = 8,824,320 (2880/32 = 90)
    #                        w2  2880·1440 + 2880·90   + 2880·2   = 4,412,160
    # 13,236,480 an expert: 120b x 4608 = 60,993,699,840 (56.80 GiB); 20b x 768
    assert mxfp4_moe_checkpoint_bytes(2880, 2880, 128, 36) == 60_993_699_840
    assert mxfp4_moe_checkpoint_bytes(2880, 2880, 32, 24) == 10_165_616_640


def test_padding_depends_on_tp() -> None:
    # the total over the ranks grows with tp (each rank pads its own share; w2_bias whole)
    totals = [tp * vllm_mxfp4_moe_bytes_per_gpu(2880, 2880, 128, 36, tp) for tp in (1, 2, 4)]
    assert totals == [66_501_476_352, 69_419_925_504, 69_476_548_608]
    with pytest.raises(ValueError, match="not divisible"):
        vllm_marlin_mxfp4_layout(2880, 2880, 7)


def model_dir(tmp_path: Path, config: dict[str, Any], total: int | None) -> str:
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if total is not None:
        (directory / INDEX_NAME).write_text(
            json.dumps({"metadata": {"total_size": total}, "weight_map": {}}),
            encoding="utf-8")
    return str(directory / "config.json")


def sized(config: dict[str, Any], path: str, tp: int, engine: str | None) -> Any:
    return plan_weights(config, CheckpointRef(path, path, offline=True), tp=tp, pp=1,
                        batch=1, defaults=None, engine=engine)


CHECKPOINT_120B = 65_248_815_744  # any size: the experts' stored bytes are replaced exactly


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_plan_weights_vllm_from_checkpoint(tmp_path: Path, tp: int) -> None:
    path = model_dir(tmp_path, GPT_OSS_120B, CHECKPOINT_120B)
    before = sized(GPT_OSS_120B, path, tp, None)
    after = sized(GPT_OSS_120B, path, tp, "vllm")
    assert before.total_bytes == CHECKPOINT_120B
    per_gpu = vllm_mxfp4_moe_bytes_per_gpu(2880, 2880, 128, 36, tp)
    assert after.total_bytes == CHECKPOINT_120B - 60_993_699_840 + tp * per_gpu
    # the rest of the checkpoint still splits as before; the experts are per_gpu on each rank
    rest = CHECKPOINT_120B - 60_993_699_840
    replicated = before.split.replicated_bytes
    assert after.per_gpu_bytes == math.ceil((rest - replicated) / tp + replicated + per_gpu)
    assert "Marlin" in after.source
    assert after.estimated is before.estimated


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_plan_weights_vllm_estimate_20b(tmp_path: Path, tp: int) -> None:
    path = model_dir(tmp_path, GPT_OSS_20B, None)
    before = sized(GPT_OSS_20B, path, tp, None)
    after = sized(GPT_OSS_20B, path, tp, "vllm")
    experts = 32 * 24 * 3 * 2880 * 2880 * 17 // 32  # 4.25 bits a parameter, no biases
    assert after.total_bytes == before.total_bytes - experts + tp * \
        vllm_mxfp4_moe_bytes_per_gpu(2880, 2880, 32, 24, tp)


@pytest.mark.parametrize("name", [
    "meta-llama--Meta-Llama-3.1-8B.json", "mistralai--Mixtral-8x7B-v0.1.json",
    "Qwen--Qwen3-30B-A3B.json", "deepseek-ai--DeepSeek-V3.json",
])
@pytest.mark.parametrize("checkpoint", [None, 10**10])
def test_other_models_unchanged(tmp_path: Path, name: str, checkpoint: int | None) -> None:
    config = json.loads((CONFIGS / name).read_text(encoding="utf-8"))
    path = model_dir(tmp_path, config, checkpoint)
    for tp in (1, 2, 4):
        assert sized(config, path, tp, "vllm") == sized(config, path, tp, None)


def test_other_engines_unchanged(tmp_path: Path) -> None:
    path = model_dir(tmp_path, GPT_OSS_120B, CHECKPOINT_120B)
    assert sized(GPT_OSS_120B, path, 2, "sglang") == sized(GPT_OSS_120B, path, 2, None)
