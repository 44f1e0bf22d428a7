"""DSA indexer caches (DeepSeek-V3.2, GLM-5), hand-derived from the configs and vLLM 0.33.0.

Per layer, per token (vLLM 0.33.0 ``model_executor/models/deepseek_v2.py``):
* MLA latent: ``(kv_lora_rank + qk_rope_head_dim) * 2`` = (512 + 64) * 2 = 1152 bytes
  (bf16, ``MLAAttentionSpec`` with ``max_tp_shards=1``: whole on every rank);
* indexer: ``DeepseekV32IndexerCache(head_dim=index_head_dim + index_head_dim // 128 * 4,
  dtype=torch.uint8)`` (``Indexer.__init__``, ~731-737) = 128 + 4 = 132 bytes, whole on every
  rank (``get_kv_cache_spec``, ~658-666, ``max_tp_shards=1``), uint8 whatever
  ``--kv-cache-dtype`` says;
* the indexer exists on every layer unless the IndexCache schedule skips it
  (``DeepseekV2MLAAttention.__init__``, ~1138-1192).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kvlint.loaders.families.sparse_indexer import INDEXER, indexed_layers
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.loaders.transformers_defaults import TransformersDefaults
from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry
from tests.helpers import fixture_config, geometry

TPS = (1, 2, 4, 8, 16)


def per_gpu(g: AttentionGeometry, tp: int, dtype: str = "auto") -> int | None:
    fp = kv.footprint(g, kv.resolve_kv_dtype(dtype, g), kv.ParallelLayout(tp=tp))
    return fp.bytes_per_token_per_gpu


def resolve(config: dict[str, Any]) -> AttentionGeometry:
    return resolve_geometry(config, defaults=TransformersDefaults())


@pytest.mark.parametrize(("name", "layers"), [
    ("deepseek-ai--DeepSeek-V3.2", 61),
    ("zai-org--GLM-5", 78),
])
def test_every_layer_keeps_latent_and_indexer(name: str, layers: int) -> None:
    g = geometry(name)
    bf16 = kv.resolve_kv_dtype("auto", g)
    assert g.num_kv_layers == layers
    for layer in g.layers:
        (cache,) = layer.extra_caches
        assert (cache.name, cache.elements, cache.element_bytes, cache.extra_bytes) == \
            (INDEXER, 128, 1, 4)
        assert cache.replicated
        for tp in TPS:
            assert kv.layer_bytes_per_token_per_gpu(layer, bf16, tp) == 1152 + 132
    for tp in TPS:  # 61 x 1284 = 78,324; 78 x 1284 = 100,152 (the oracle's figures)
        assert per_gpu(g, tp) == layers * 1284


def test_indexer_stays_uint8_under_an_fp8_kv_cache() -> None:
    g = geometry("deepseek-ai--DeepSeek-V3.2")
    fp8 = kv.resolve_kv_dtype("fp8", g)
    layer = g.layers[0]
    assert fp8.extra_entry_bytes(layer.extra_caches[0]) == 132
    assert kv.layer_bytes_per_token_per_gpu(layer, fp8, 8) == 576 + 132
    assert per_gpu(g, 8, "fp8") == 61 * 708


def test_index_topk_freq_skips_layers() -> None:
    """freq 4, offset 2: ``max(i - 1, 0) % 4 == 0`` keeps i = 0, 1, 5, 9, ..., 77: 21 of 78."""
    config = {**fixture_config("zai-org--GLM-5"), "index_topk_freq": 4}
    g = resolve(config)
    kept = [i for i, layer in enumerate(g.layers) if layer.extra_caches]
    assert kept == [0, 1, *range(5, 78, 4)]
    assert per_gpu(g, 4) == 78 * 1152 + 21 * 132 == 92_628


def test_index_topk_pattern_skips_the_s_layers() -> None:
    """``pattern[i] == "S"`` skips; layers past the pattern's end keep their indexer."""
    assert indexed_layers({"index_topk_pattern": "FSSF"}, 6) == \
        [True, False, False, True, True, True]
    assert indexed_layers({"index_topk_freq": 2, "index_skip_topk_offset": 0}, 4) == \
        [False, True, False, True]


def test_glm_moe_dsa_is_sparse_without_the_fields() -> None:
    """transformers' GlmMoeDsaConfig defaults index_topk 2048 and index_head_dim 128."""
    config = {k: v for k, v in fixture_config("zai-org--GLM-5").items()
              if not k.startswith("index")}
    assert per_gpu(resolve(config), 1) == 78 * 1284


def test_dense_mla_models_get_no_indexer() -> None:
    g = geometry("deepseek-ai--DeepSeek-V3")
    assert not g.has_extra_caches
    assert per_gpu(g, 8) == 61 * 1152


def test_layer_types_spellings_of_sparse_layers() -> None:
    config = {**fixture_config("zai-org--GLM-5"),
              "layer_types": ["deepseek_sparse_attention"] * 39 + ["indexed_attention"] * 39}
    assert per_gpu(resolve(config), 2) == 78 * 1284


def test_bad_schedule_fields_are_config_errors() -> None:
    from kvlint.errors import ConfigError

    for bad in ({"index_topk_freq": 0}, {"index_head_dim": "128"}, {"index_topk_pattern": 3}):
        with pytest.raises(ConfigError):
            resolve({**fixture_config("zai-org--GLM-5"), **bad})


def test_exact_sequence_bytes() -> None:
    g = geometry("zai-org--GLM-5")
    bf16 = kv.resolve_kv_dtype("auto", g)
    assert kv.bytes_per_token_exact(g, bf16) == Fraction(100_152)
    assert kv.bytes_per_sequence(g, bf16, 1000) == 100_152_000
