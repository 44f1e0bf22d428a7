"""Zamba2: one MHA cache per ``hybrid`` layer, hand-derived from the config and vLLM 0.33.0.

``model_executor/models/zamba2.py`` ``Zamba2Attention.__init__`` (~181-206) builds one
``Attention(num_attention_heads // tp, attention_head_dim)`` per hybrid layer of each shared
block ("KV cache is unique for every attention layer"); no ``num_kv_heads``: MHA.
transformers 5.20 ``Zamba2Config.__post_init__`` sets ``attention_head_dim = 2 * hidden_size
// num_attention_heads`` = 2 * 2560 / 32 = 160 (``kv_channels`` 80 is not what vLLM reads).
Zamba2-2.7B: 9 hybrid layers (6, 12, ..., 51) of 54; per hybrid layer per token, bf16:
2 (K, V) * 32 heads * 160 * 2 bytes = 20,480 at tp 1.
"""

from __future__ import annotations

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.loaders.transformers_defaults import TransformersDefaults
from kvlint.model import kv
from kvlint.model.geometry import AttentionKind, LayerKind
from tests.helpers import fixture_config, geometry

NAME = "Zyphra--Zamba2-2.7B-Instruct-v2"


def test_hybrid_layers_own_the_attention_caches() -> None:
    g = geometry(NAME)
    assert [i for i, layer in enumerate(g.layers) if layer.holds_kv] == \
        [6, 12, 18, 24, 30, 36, 42, 47, 51]
    assert all(layer.kind is LayerKind.NONE for layer in g.layers if not layer.holds_kv)
    layer = g.layers[6]
    assert (layer.num_kv_heads, layer.k_head_dim, layer.v_head_dim) == (32, 160, 160)
    assert g.attention is AttentionKind.MHA


@pytest.mark.parametrize(("tp", "per_layer"), [(1, 20_480), (2, 10_240), (4, 5_120),
                                                (8, 2_560), (16, 1_280)])
def test_bytes_per_gpu(tp: int, per_layer: int) -> None:
    g = geometry(NAME)
    dtype = kv.resolve_kv_dtype("auto", g)
    assert kv.layer_bytes_per_token_per_gpu(g.layers[6], dtype, tp) == per_layer
    fp = kv.footprint(g, dtype, kv.ParallelLayout(tp=tp))
    assert fp.heads_ok and fp.kv_ok
    assert fp.bytes_per_token_per_gpu == 9 * per_layer


def test_legacy_mamba_spelling_and_refusals() -> None:
    config = fixture_config(NAME)
    legacy = {**config, "layers_block_type": ["linear_attention" if t == "mamba" else t
                                              for t in config["layers_block_type"]]}
    defaults = TransformersDefaults()
    assert resolve_geometry(legacy, defaults=defaults).num_kv_layers == 9
    with pytest.raises(ConfigError, match="hidden_size"):
        resolve_geometry({**config, "num_attention_heads": 48, "num_key_value_heads": 48},
                         defaults=defaults)


def test_zamba2_7b_two_shared_blocks_thirteen_caches() -> None:
    """Zamba2-7B: 81 layers, 13 hybrid, 32 heads of 2 * 3584 / 32 = 224: 13 * 2 * 32 * 224 *
    2 = 372,736 bytes per token at tp 1 (two shared blocks, still one cache per hybrid
    layer). vLLM 0.33 refuses tp >= 4 for this config in its Mamba mixer (n_groups 2, 8
    Mamba heads): a recurrent-state constraint, not modelled here."""
    g = geometry("Zyphra--Zamba2-7B")
    assert g.num_kv_layers == 13
    dtype = kv.resolve_kv_dtype("auto", g)
    assert kv.footprint(g, dtype, kv.ParallelLayout(tp=1)).bytes_per_token_per_gpu == 372_736
    assert kv.footprint(g, dtype, kv.ParallelLayout(tp=2)).bytes_per_token_per_gpu == 186_368
