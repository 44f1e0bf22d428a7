"""Field spellings and layer schedules added for vLLM 0.33.0's registry coverage (issue 14),
each checked on a real fixture config with values worked out by hand."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.loaders.shape import resolve_shape
from kvlint.model import kv
from kvlint.model.geometry import LayerKind
from tests.helpers import fixture_config, geometry

KIMI_K3 = "moonshotai--Kimi-K3"


def test_kimi_linear_kda_layers_hold_no_kv() -> None:
    """vLLM 0.33.0 transformers_utils/configs/kimi_linear.py: ``is_kda_layer(i)`` is
    ``(i + 1) in linear_attn_config["kda_layers"]`` (1-based); the other layers are MLA.
    Kimi-K3 lists 69 KDA layers of 93, so 24 layers (1-based 4, 8, ..., 92 and 93) hold a
    latent of kv_lora_rank 512 + qk_rope_head_dim 64: 24 * 576 * 2 B = 27,648 B/token."""
    g = geometry(KIMI_K3)
    assert g.model_type == "kimi_linear"
    assert g.num_layers == 93 and g.num_kv_layers == 24
    full = [i + 1 for i, layer in enumerate(g.layers) if layer.kind is LayerKind.FULL]
    assert full == [*range(4, 93, 4), 93]
    assert all(layer.kind is LayerKind.NONE for i, layer in enumerate(g.layers)
               if i + 1 not in full)
    assert g.is_mla and (g.kv_lora_rank, g.qk_rope_head_dim) == (512, 64)
    assert kv.bytes_per_token(g, kv.resolve_kv_dtype("auto", g)) == 27_648


def _kimi_text() -> dict[str, Any]:
    config = copy.deepcopy(fixture_config(KIMI_K3))
    text: dict[str, Any] = config["text_config"]
    return text


def test_empty_kda_layers_is_all_attention() -> None:
    """``is_linear_attn`` is false for an empty kda_layers list: every layer is MLA."""
    text = _kimi_text()
    text["linear_attn_config"]["kda_layers"] = []
    g = resolve_geometry(text)
    assert g.num_kv_layers == g.num_layers == 93


@pytest.mark.parametrize(("value", "field", "words"), [
    ("3", "linear_attn_config", "must be an object"),
    ({"kda_layers": None}, "linear_attn_config.kda_layers", "list of 1-based"),
    ({"kda_layers": [0]}, "linear_attn_config.kda_layers[0]", "at least 1"),
    ({"kda_layers": [94]}, "linear_attn_config.kda_layers[0]", "at most 93"),
    ({"kda_layers": [2.5]}, "linear_attn_config.kda_layers[0]", "must be an integer"),
])
def test_bad_kda_layers_name_the_field(value: Any, field: str, words: str) -> None:
    text = _kimi_text()
    text["linear_attn_config"] = value
    with pytest.raises(ConfigError) as info:
        resolve_geometry(text)
    assert info.value.field == field
    assert words in str(info.value)


def test_gemma4_top_k_experts_spelling() -> None:
    """Gemma 4 names its router fan-out ``top_k_experts`` (vLLM 0.33.0 gemma4.py reads
    ``config.top_k_experts``); gemma-4-26B-A4B routes each token to 8 of 128 experts."""
    shape = resolve_shape(fixture_config("google--gemma-4-26B-A4B"))
    assert (shape.num_experts, shape.num_experts_per_tok) == (128, 8)
