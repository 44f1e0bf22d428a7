"""Modules a quantized checkpoint keeps in 16-bit (kvlint/model/weight_exclusions.py), read
from real configs' quantization_config."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvlint.loaders.shape import resolve_shape, resolve_weight_format
from kvlint.model.weight_exclusions import kept_fractions
from kvlint.model.weight_formats import weight_bytes
from kvlint.model.weights import Part, estimate_parameters
from tests.helpers import CONFIGS


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(("entries", "layers", "kept"), [
    ({"ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                 "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]}, 61,
     {Part.LM_HEAD: 1.0, Part.ATTENTION: 1.0, Part.SHARED_EXPERTS: 1.0, Part.DENSE_MLP: 1.0}),
    ({"exclude_modules": ["model.layers.0.self_attn*", "model.layers.1.self_attn*"]}, 4,
     {Part.ATTENTION: 0.5}),  # two of four layers
    ({"modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head",
                                 "model.layers.0.post_attention_layernorm",
                                 "model.layers.3.mlp.gate"]}, 4,
     {Part.LM_HEAD: 1.0}),  # routers and norms: nothing a method quantizes
    ({"ignored_layers": ["model.embed_vision*", "re:.*\\.self_attn\\.q_proj$"]}, 10,
     {Part.ENCODER: 1.0, Part.ATTENTION: 1.0}),
    ({"llm_int8_skip_modules": ["mlp.experts"]}, 10, {Part.EXPERTS: 1.0}),
    ({}, 10, {}),
])
def test_kept_parts(entries: dict[str, Any], layers: int, kept: dict[Part, float]) -> None:
    assert kept_fractions(entries, layers)[0] == kept


def test_an_entry_kvlint_cannot_place_is_noted_not_counted() -> None:
    kept, notes = kept_fractions({"ignore": ["lm_head", "foo.bar"]}, 4)
    assert kept == {Part.LM_HEAD: 1.0}
    assert len(notes) == 1 and "'foo.bar'" in notes[0]


def test_kimi_k25_keeps_attention_shared_experts_and_dense_mlps_in_16_bit() -> None:
    """moonshotai/Kimi-K2.5's compressed-tensors config ignores self_attn, shared_experts and
    the dense MLPs: those parts weigh 2 bytes per parameter, the routed experts 4-bit."""
    data = config("moonshotai--Kimi-K2.5")
    fmt = resolve_weight_format(data)
    assert dict(fmt.kept) == {Part.ATTENTION: 1.0, Part.DENSE_MLP: 1.0,
                              Part.SHARED_EXPERTS: 1.0}
    assert fmt.bytes_per_param(Part.ATTENTION) == fmt.base_bytes == 2.0
    assert fmt.bytes_per_param(Part.EXPERTS) == fmt.quantized_bytes < 1.0
    estimate = estimate_parameters(resolve_shape(data))
    assert weight_bytes(estimate, fmt).by_part[Part.ATTENTION] == 2 * estimate.attention


def test_a_share_of_layers_weighs_in_proportion() -> None:
    data = config("nvidia--Gemma-4-31B-IT-NVFP4")
    quant = dict(data["quantization_config"])
    layers = data["text_config"]["num_hidden_layers"]
    named = [e for e in quant["ignore"] if "self_attn" in e]
    assert len(named) == layers  # every layer's attention is listed one by one
    quant["ignore"] = named[: layers // 2]
    half = resolve_weight_format({**data, "quantization_config": quant})
    (share,) = [s for p, s in half.kept if p == Part.ATTENTION]
    assert share == (layers // 2) / layers
    assert half.bytes_per_param(Part.ATTENTION) == \
        share * 2.0 + (1 - share) * half.quantized_bytes
