"""DeepSeek-V4 caches, exact against vLLM 0.33.0 (kvlint.loaders.families.deepseek_v4).

Every number below is derived by hand from the fixture configs and vLLM 0.33.0's source
(paths under the wheel's ``vllm/``), and was confirmed by running vLLM's own
``get_kv_cache_spec`` (../shared/oracle/vllm_oracle.py; sum of ``real_page_size_bytes /
block_size`` over the specs) at tp 1, 2, 4, 8, 16:

* SWA cache, every layer (``v1/attention/backends/mla/sparse_swa.py:85-86,120-135``):
  ``SlidingWindowMLASpec(sliding_window=config.sliding_window)``, 584 B per token: 448 fp8
  NoPE values + 64 bf16 RoPE values (128 B) + 448/64 + 1 = 8 UE8M0 scale bytes
  (``models/deepseek_v4/attention.py:880-882``);
* compressed KV, ratio-r layers (``attention.py:860-883``): ``MLAAttentionSpec
  (tokens_per_state=r, state_content_bytes=584)``: 584 / r B per token (block 256:
  ``256 // r`` entries of 584 B per page, ``v1/kv_cache_interface.py:272,593``);
* compressor state (``models/deepseek_v4/compressor.py:159-160,179-193,283``):
  ``2 * coff * 512`` float32 per token, window ``coff * r`` (coff 2 for r 4, else 1):
  8192 B over 8 tokens (r 4), 4096 B over 128 tokens (r 128);
* indexer, ratio-4 layers only (``attention.py:302``): key cache 128 fp8 + 128/128 * 4 B
  scale = 132 B per 4 tokens (``attention.py:1007,1027-1029``, ``:911-924``) and its
  compressor's state 2 * 2 * 128 float32 = 2048 B over 8 tokens;
* ``max_tp_shards=1`` on every spec: whole on every rank; ``--kv-cache-dtype auto`` is fp8
  (``attention.py:94-110``: auto -> fp8 -> fp8_ds_mla).

Per layer per token: ratio 0: 584; ratio 4: 584 + 146 + 8192 + 33 + 2048 = 11003;
ratio 128: 584 + 73/16 + 4096 = 74953/16.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from math import ceil
from typing import Any

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.families.deepseek_v4 import compress_ratios
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry, LayerKind
from tests.helpers import CONFIGS, fixture_config, geometry

FLASH = "deepseek-ai--DeepSeek-V4-Flash"
PRO = "deepseek-ai--DeepSeek-V4-Pro"
REDHAT = "RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8"

# Flash: compress_ratios [0, 0, 4, 128, 4, ..., 128, 4, 0]: 44 entries for 43 layers + 1 MTP.
FLASH_RATIOS = (0, 0) + (4, 128) * 20 + (4,)
# Pro: [128, 128, 4, 128, ..., 4, 0]: 62 entries for 61 layers + 1 MTP.
PRO_RATIOS = (128, 128) + (4, 128) * 29 + (4,)

PER_TOKEN = {0: Fraction(584), 4: Fraction(11003), 128: Fraction(74953, 16)}
FLASH_PER_TOKEN = Fraction(1303689, 4)  # 2 x 584 + 21 x 11003 + 20 x 74953/16 = 325922.25
PRO_PER_TOKEN = Fraction(7604983, 16)  # 30 x 11003 + 31 x 74953/16 = 475311.4375


def _layer_sequence(ratio: int, context: int) -> int:
    """One layer's bytes for a ``context``-token sequence, from the list above."""
    swa = 584 * min(context, 128)
    if ratio == 0:
        return swa
    coff = 2 if ratio == 4 else 1
    held = 584 * ceil(context / ratio) + 2 * coff * 512 * 4 * min(context, coff * ratio)
    if ratio == 4:
        held += 132 * ceil(context / 4) + 2 * 2 * 128 * 4 * min(context, 8)
    return swa + held


def _fp8(g: AttentionGeometry) -> kv.KvDtype:
    return kv.resolve_kv_dtype("auto", g)


# --------------------------------------------------------------------------- layer schedule


@pytest.mark.parametrize(("name", "ratios"), [(FLASH, FLASH_RATIOS), (PRO, PRO_RATIOS),
                                              (REDHAT, FLASH_RATIOS)])
def test_every_layer_is_a_window_with_its_ratios_caches(name: str,
                                                        ratios: tuple[int, ...]) -> None:
    g = geometry(name)
    assert g.num_layers == len(ratios)
    assert compress_ratios(fixture_config(name), g.num_layers) == ratios
    assert g.default_kv_dtype == "fp8"
    for layer, ratio in zip(g.layers, ratios, strict=True):
        assert (layer.kind, layer.window, layer.entry_bytes) == (LayerKind.SLIDING, 128, 584)
        assert (layer.num_kv_heads, layer.k_head_dim, layer.kv_lora_rank) == (1, 512, None)
        names = [c.name for c in layer.extra_caches]
        assert names == {0: [], 128: ["compressed_kv", "compressor_state"],
                         4: ["compressed_kv", "compressor_state", "indexer_k",
                             "indexer_compressor_state"]}[ratio]
        assert all(c.replicated for c in layer.extra_caches)


def test_extra_cache_entries() -> None:
    by_ratio = {r: geometry(FLASH).layers[i] for r, i in ((0, 0), (4, 2), (128, 3))}
    got = {r: [(c.name, c.entry_bytes(1), c.tokens_per_entry, c.window)
               for c in layer.extra_caches] for r, layer in by_ratio.items()}
    assert got == {
        0: [],
        4: [("compressed_kv", 584, 4, None), ("compressor_state", 8192, 1, 8),
            ("indexer_k", 132, 4, None), ("indexer_compressor_state", 2048, 1, 8)],
        128: [("compressed_kv", 584, 128, None), ("compressor_state", 4096, 1, 128)],
    }


def test_auto_kv_dtype_is_fp8() -> None:
    dtype = _fp8(geometry(FLASH))
    assert (dtype.name, dtype.bytes_per_element, dtype.requested) == ("fp8", 1, "auto")


@pytest.mark.parametrize("requested", ["fp8", "fp8_e4m3", "fp8_ds_mla"])
def test_fp8_spellings_vllm_accepts_give_the_same_layout(requested: str) -> None:
    # attention.py:94-125: any fp8* value becomes fp8_ds_mla (the packed 584 B layout).
    g = geometry(FLASH)
    assert kv.bytes_per_token_exact(g, kv.resolve_kv_dtype(requested, g)) == FLASH_PER_TOKEN


# ------------------------------------------------------------------------------- per token


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_per_layer_bytes_per_token_per_gpu(tp: int) -> None:
    g = geometry(FLASH)
    for layer, ratio in zip(g.layers, FLASH_RATIOS, strict=True):
        assert kv.layer_bytes_per_token_per_gpu(layer, _fp8(g), tp) == PER_TOKEN[ratio]


@pytest.mark.parametrize(("name", "want", "tps"), [
    (FLASH, FLASH_PER_TOKEN, (1, 2, 4, 8)),
    (REDHAT, FLASH_PER_TOKEN, (1, 2, 4, 8)),
    (PRO, PRO_PER_TOKEN, (1, 2, 4, 8, 16)),
])
def test_bytes_per_token_per_gpu_is_replicated(name: str, want: Fraction,
                                               tps: tuple[int, ...]) -> None:
    g = geometry(name)
    assert kv.bytes_per_token_exact(g, _fp8(g)) == want
    for tp in tps:
        fp = kv.footprint(g, _fp8(g), kv.ParallelLayout(tp=tp))
        assert fp.bytes_per_token_per_gpu_exact == want
        assert fp.bytes_per_token_per_gpu == ceil(want)
        assert fp.bytes_per_token_cluster_exact == tp * want
        assert fp.replication_factor == tp
        assert fp.heads_ok and fp.kv_ok


def test_o_groups_are_recorded_for_the_tp_check() -> None:
    # attention.py:226 n_local_groups = o_groups // tp; flashmla.py:69 divides by it. vLLM
    # cannot serve Flash (o_groups 8) at tp 16; the oracle's build fails there.
    for name, groups in ((FLASH, 8), (PRO, 16)):
        divided = geometry(name).tp_divided
        assert [(field, count) for field, count, _ in divided] == [("o_groups", groups)]


# ---------------------------------------------------------------------------- per sequence

CONTEXTS = (1, 127, 128, 129, 4096, 1 << 20)
FLASH_SEQUENCE = {
    # 43 x 584 x min(c,128) + 21 x (716 x ceil(c/4) + 10240 x min(c,8))
    #                       + 20 x (584 x ceil(c/128) + 4096 x min(c,128))
    1: 348_788,
    127: 15_806_216,
    128: 15_913_248,
    129: 15_939_964,
    4096: 31_191_040,
    1 << 20: 4_052_700_160,
}


@pytest.mark.parametrize("context", CONTEXTS)
def test_flash_bytes_per_sequence(context: int) -> None:
    g = geometry(FLASH)
    assert sum(_layer_sequence(r, context) for r in FLASH_RATIOS) == FLASH_SEQUENCE[context]
    for tp in (1, 2, 4, 8):
        layout = kv.ParallelLayout(tp=tp)
        assert kv.bytes_per_sequence_per_gpu(g, _fp8(g), layout, context) \
            == FLASH_SEQUENCE[context]
        assert kv.bytes_per_sequence_cluster(g, _fp8(g), layout, context) \
            == tp * FLASH_SEQUENCE[context]
    for layer, ratio in zip(g.layers, FLASH_RATIOS, strict=True):
        assert kv.layer_bytes_per_sequence_per_gpu(layer, _fp8(g), 8, context) \
            == _layer_sequence(ratio, context)


@pytest.mark.parametrize("context", CONTEXTS)
def test_pro_bytes_per_sequence(context: int) -> None:
    g = geometry(PRO)
    want = sum(_layer_sequence(r, context) for r in PRO_RATIOS)
    assert want == {1: 509_384, 127: 23_813_264, 128: 23_975_864, 129: 24_015_448,
                    4096: 45_845_248, 1 << 20: 5_802_431_488}[context]
    for tp in (1, 16):
        assert kv.bytes_per_sequence_per_gpu(g, _fp8(g), kv.ParallelLayout(tp=tp), context) \
            == want


def test_pipeline_stage_holds_its_layers_caches() -> None:
    # pp 2 over 43 layers: 22 + 21 (vLLM get_pp_indices); stage 0 = layers 0-21:
    # 2 sliding-only, 10 ratio-4, 10 ratio-128; stage 1 = layers 22-42: 11 ratio-4, 10
    # ratio-128, the fuller one.
    g = geometry(FLASH)
    fp = kv.footprint(g, _fp8(g), kv.ParallelLayout(tp=1, pp=2))
    stage0 = 2 * PER_TOKEN[0] + 10 * PER_TOKEN[4] + 10 * PER_TOKEN[128]
    stage1 = 11 * PER_TOKEN[4] + 10 * PER_TOKEN[128]
    assert fp.stages == (22, 21)
    assert fp.bytes_per_token_per_gpu_exact == max(stage0, stage1) == stage1


# ------------------------------------------------------------------- other spellings / input


def _flash_with(**changes: Any) -> dict[str, Any]:
    config = fixture_config(FLASH)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def test_transformers_layer_types_spelling_matches_compress_ratios() -> None:
    names = {0: "sliding_attention", 4: "compressed_sparse_attention",
             128: "heavily_compressed_attention"}
    config = _flash_with(compress_ratios=None,
                         layer_types=[names[r] for r in FLASH_RATIOS],
                         compress_rates={"compressed_sparse_attention": 4,
                                         "heavily_compressed_attention": 128})
    assert resolve_geometry(config).layers == geometry(FLASH).layers


def test_layer_types_win_over_legacy_ratios_and_rates_override() -> None:
    # transformers DeepseekV4Config.__post_init__: explicit layer_types first; the legacy
    # compress_rate_hca folds into compress_rates.
    config = _flash_with(layer_types=["heavily_compressed_attention"] * 43,
                         compress_rate_hca=4)
    assert compress_ratios(config, 43) == (4,) * 43


def test_legacy_ratios_go_through_the_rate_table() -> None:
    # transformers maps compress_ratios to layer types, then compress_rates gives the rate.
    config = _flash_with(compress_rate_hca=4)
    assert compress_ratios(config, 43) == tuple(4 if r else 0 for r in FLASH_RATIOS)


def test_without_a_schedule_the_pro_default_applies() -> None:
    config = _flash_with(compress_ratios=None)
    assert compress_ratios(config, 43) == (128, 128) + (128, 4) * 20 + (128,)


def test_other_deepseek_models_are_untouched() -> None:
    g = geometry("deepseek-ai--DeepSeek-V3")
    assert g.is_mla and g.default_kv_dtype is None
    assert not g.has_extra_caches and g.tp_divided == ()


@pytest.mark.parametrize(("changes", "field"), [
    ({"compress_ratios": [0, 8] + [4] * 42}, "compress_ratios"),
    ({"compress_ratios": [0, 4]}, "compress_ratios"),
    ({"compress_ratios": "0,4"}, "compress_ratios"),
    ({"compress_ratios": [True] * 44}, "compress_ratios"),
    ({"layer_types": ["full_attention"] * 43}, "layer_types"),
    ({"layer_types": [["sliding_attention"]] * 43}, "layer_types"),
    ({"compress_ratios": [{"r": 4}] * 44}, "compress_ratios"),
    ({"compress_rate_csa": 8}, "compress_rates"),
    ({"compress_rates": {"compressed_sparse_attention": [4]},
      "layer_types": ["compressed_sparse_attention"] * 43}, "compress_rates"),
    ({"compress_rates": [4, 128], "layer_types": ["sliding_attention"] * 43}, "compress_rates"),
    ({"sliding_window": 0}, "sliding_window"),
    ({"qk_rope_head_dim": 512}, "qk_rope_head_dim"),
    ({"index_head_dim": "128"}, "index_head_dim"),
])
def test_bad_fields_are_config_errors(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_geometry(_flash_with(**changes))
    assert info.value.field == field


def test_cli_json_prints_exact_fractional_bytes() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kvlint", "check", str(CONFIGS / f"{FLASH}.json"), "--tp", "8",
         "--context", "129", "--format", "json"],
        capture_output=True, text=True, check=False)
    result = json.loads(out.stdout)["results"][0]
    assert result["kv"]["dtype"] == "fp8"
    assert result["kv"]["bytes_per_token_per_gpu"] == 325922.25
    assert result["kv"]["bytes_per_sequence"] == 15_939_964
    groups = result["geometry"]["layer_groups"]
    assert sum(g["count"] for g in groups) == 43
    assert {g["entry_bytes"] for g in groups} == {584}


def test_bad_field_on_the_cli_is_one_line_exit_2(tmp_path: Any) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps(_flash_with(compress_ratios=[0, 3] + [4] * 42)))
    out = subprocess.run([sys.executable, "-m", "kvlint", "check", str(bad)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "compress_ratios" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("expert_dtype", "expert_bytes"), [("fp4", 0.5 + 1 / 32), ("fp8", None)])
def test_fp4_experts_beside_fp8_projections(expert_dtype: str, expert_bytes: float | None) -> None:
    """DeepSeek-V4's ``expert_dtype: fp4`` (V4-Flash, V4-Pro): routed experts in MXFP4 (4.25
    bits), the other projections FP8 block (``DeepseekV4FP8Config``,
    vllm/models/deepseek_v41/quant_config.py@v0.34.0); ``fp8`` (Flash-Base): FP8 experts.
    A held-out vLLM 0.23.0 log of V4-Flash at tp 2 (logs29i 406) printed 74.08 GiB of weights
    per GPU, where experts at FP8 had given 136 GiB."""
    from kvlint.loaders.shape import resolve_weight_format
    from kvlint.model.weights import Part

    config = {**fixture_config("deepseek-ai--DeepSeek-V4-Flash"), "expert_dtype": expert_dtype}
    fmt = resolve_weight_format(config)
    fp8 = 1 + 4 / (128 * 128)
    assert fmt.bytes_per_param(Part.EXPERTS) == (expert_bytes or fp8)
    assert fmt.bytes_per_param(Part.ATTENTION) == fp8
