"""Gemma-4 global-layer shapes and Gemma-3n / Gemma-4 shared-KV layers, hand-derived.

vLLM 0.33.0 ``model_executor/models/gemma4.py``: ``Gemma4DecoderLayer.__init__`` (~578-590)
takes each layer's ``head_dim`` / ``num_key_value_heads`` from ``config.per_layer_config``,
which transformers 5.20's ``Gemma4TextConfig.__post_init__`` fills for ``full_attention``
layers with ``global_head_dim`` and (``attention_k_eq_v``) ``num_global_key_value_heads``;
``Gemma4Attention`` (~388-393) keeps ``max(1, kv // tp)`` heads per rank (``tp % kv == 0``
below kv) and caches K and V (k_eq_v loads K into both slots, ~86-126). Shared-KV layers
(``kv_sharing_target_layer_name``: gemma4.py ~471-492, gemma3n.py ~355-382) get no cache.
Per layer per token, bf16: ``2 (K, V) * heads_per_gpu * head_dim * 2 bytes``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.loaders.transformers_defaults import TransformersDefaults
from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry, LayerKind
from tests.helpers import fixture_config, geometry


def per_gpu(g: AttentionGeometry, tp: int, dtype: str = "auto") -> int | None:
    fp = kv.footprint(g, kv.resolve_kv_dtype(dtype, g), kv.ParallelLayout(tp=tp))
    return fp.bytes_per_token_per_gpu if fp.heads_ok and fp.kv_ok else None


def layer_bytes(g: AttentionGeometry, index: int, tp: int) -> int:
    value = kv.layer_bytes_per_token_per_gpu(g.layers[index], kv.resolve_kv_dtype("auto", g), tp)
    assert value is not None and value.denominator == 1
    return int(value)


def resolve(config: dict[str, Any]) -> AttentionGeometry:
    return resolve_geometry(config, defaults=TransformersDefaults())


def test_gemma4_26b_global_layers() -> None:
    """25 sliding layers (8 KV heads x 256) and 5 global (2 KV heads x 512)."""
    g = geometry("google--gemma-4-26B-A4B")
    kinds = [layer.kind for layer in g.layers]
    assert kinds == ([LayerKind.SLIDING] * 5 + [LayerKind.FULL]) * 5
    glob, local = g.layers[5], g.layers[0]
    assert (glob.num_kv_heads, glob.k_head_dim, glob.v_head_dim) == (2, 512, 512)
    assert (local.num_kv_heads, local.k_head_dim, local.window) == (8, 256, 1024)
    # sliding 2*8*256*2 = 8192, global 2*2*512*2 = 4096; at tp 4 the 2 global heads are
    # replicated to 1 per rank (2048) while the 8 local split to 2 (2048).
    assert [layer_bytes(g, 0, tp) for tp in (1, 2, 4, 8, 16)] == [8192, 4096, 2048, 1024, 1024]
    assert [layer_bytes(g, 5, tp) for tp in (1, 2, 4, 8, 16)] == [4096, 2048, 2048, 2048, 2048]
    assert [per_gpu(g, tp) for tp in (1, 2, 4, 8, 16)] == \
        [225_280, 112_640, 61_440, 35_840, 35_840]


def test_gemma4_31b_global_layers() -> None:
    """50 sliding (16 KV x 256: 16384 B) + 10 global (4 KV x 512: 8192 B) at tp 1, in bf16
    (the oracle ran this config with its quantization_config removed). As shipped, the
    checkpoint declares an fp8 KV cache (modelopt kv_cache_scheme), so vLLM's ``auto`` is
    fp8_e4m3: half of each figure."""
    g = geometry("nvidia--Gemma-4-31B-IT-NVFP4")
    assert g.distinct_kv_head_counts == (4, 16)
    bf16 = [901_120, 450_560, 225_280, 122_880, 71_680]
    assert [per_gpu(g, tp, "bfloat16") for tp in (1, 2, 4, 8, 16)] == bf16
    assert [per_gpu(g, tp) for tp in (1, 2, 4, 8, 16)] == [b // 2 for b in bf16]


@pytest.mark.parametrize(("name", "own", "shared", "by_tp"), [
    # E2B: 35 layers, last 20 shared -> 12 sliding (1 x 256: 1024 B) + 3 global (1 x 512:
    # 2048 B) own a cache = 18,432 B on every rank (one KV head, replicated); 8 query heads.
    ("google--gemma-4-E2B-it", 15, 20, [18_432, 18_432, 18_432, 18_432, None]),
    # E4B: 42 layers, last 18 shared -> 20 sliding (2 x 256) + 4 global (2 x 512): 57,344 B.
    ("google--gemma-4-E4B-it", 24, 18, [57_344, 28_672, 28_672, 28_672, None]),
    # Gemma-3n E4B: 35 layers, last 15 shared -> 16 sliding + 4 full, all 2 x 256: 40,960 B.
    ("google--gemma-3n-E4B", 20, 15, [40_960, 20_480, 20_480, 20_480, None]),
])
def test_shared_kv_layers_hold_no_cache(name: str, own: int, shared: int,
                                        by_tp: list[int | None]) -> None:
    g = geometry(name)
    assert g.num_kv_layers == own
    assert g.num_shared_kv_layers == shared
    assert all(layer.kv_shared for layer in g.layers[own:])
    assert not any(layer.kv_shared for layer in g.layers[:own])
    assert all(layer_bytes(g, i, 1) == 0 for i in range(own, g.num_layers))
    assert [per_gpu(g, tp) for tp in (1, 2, 4, 8, 16)] == by_tp


def test_shared_layers_keep_their_shape_for_description() -> None:
    g = geometry("google--gemma-4-E4B-it")
    last = g.layers[-1]
    assert (last.kind, last.k_head_dim, last.kv_shared, last.holds_kv) == \
        (LayerKind.FULL, 512, True, False)


def test_gemma4_without_k_eq_v_keeps_the_local_kv_heads() -> None:
    """``num_global_key_value_heads`` only applies with ``attention_k_eq_v``."""
    config = fixture_config("google--gemma-4-26B-A4B")
    config["text_config"] = {**config["text_config"], "attention_k_eq_v": False}
    g = resolve(config)
    assert (g.layers[5].num_kv_heads, g.layers[5].k_head_dim) == (8, 512)
    assert per_gpu(g, 1) == 25 * 8192 + 5 * 16384


def test_gemma4_forces_a_global_last_layer_and_default_schedule() -> None:
    config = fixture_config("google--gemma-4-26B-A4B")
    text = dict(config["text_config"])
    text["layer_types"] = [*text["layer_types"][:-1], "sliding_attention"]
    assert resolve({**config, "text_config": text}).layers[-1].kind is LayerKind.FULL
    del text["layer_types"]
    kinds = [layer.kind for layer in resolve({**config, "text_config": text}).layers]
    assert kinds == ([LayerKind.SLIDING] * 5 + [LayerKind.FULL]) * 5


def test_gemma4_bidirectional_all_halves_the_window() -> None:
    config = fixture_config("google--gemma-4-26B-A4B")
    text = {**config["text_config"], "use_bidirectional_attention": "all"}
    assert resolve({**config, "text_config": text}).sliding_window == 1024 // 2 + 1


def test_gemma3n_targets_two_and_one_layers_back() -> None:
    """gemma3n.py: a shared layer's target is first_shared - 2 (sliding) or - 1 (full);
    with one non-shared layer a sliding layer's target is negative and it keeps its cache."""
    config = {**fixture_config("google--gemma-3n-E4B"), "num_kv_shared_layers": 34}
    g = resolve(config)
    # layer 0 is its own; layers 1..34: sliding ones target -1 (own cache), full ones 0.
    owning = [i for i, layer in enumerate(g.layers) if layer.holds_kv]
    assert owning == [0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 20, 21, 22, 23,
                      25, 26, 27, 28, 30, 31, 32, 33]


def test_bad_shared_counts_are_config_errors() -> None:
    config = fixture_config("google--gemma-4-E2B-it")
    for bad in (36, -1, "20"):
        text = {**config["text_config"], "num_kv_shared_layers": bad}
        with pytest.raises(ConfigError, match="num_kv_shared_layers"):
            resolve({**config, "text_config": text})
    text = {**config["text_config"], "num_kv_shared_layers": 31,
            "layer_types": ["full_attention"] * 4 + ["sliding_attention"] * 31}
    with pytest.raises(ConfigError, match="no earlier layer"):
        resolve({**config, "text_config": text})
