"""Zamba2 (``zamba2``): a Mamba2 backbone with shared transformer blocks applied at the
``hybrid`` layers of ``layers_block_type``.

vLLM 0.33.0 ``model_executor/models/zamba2.py``: the ``num_mem_blocks`` shared blocks hold
the attention *weights*, but ``Zamba2Attention.__init__`` (~181-206) builds one ``Attention``
per hybrid layer it serves ("KV cache is unique for every attention layer"), so every
``hybrid`` layer owns a cache: ``Attention(num_attention_heads // tp, attention_head_dim)``
with no ``num_kv_heads`` (= the query heads: MHA). transformers 5.20's
``Zamba2Config.__post_init__`` sets ``attention_head_dim = 2 * hidden_size //
num_attention_heads`` whatever the file says (the block attends over the concatenation of
the hidden state and the input embedding, ``attention_hidden_size = 2 * hidden_size``), and
``kv_channels`` / ``num_query_groups`` / ``num_key_value_heads`` are not read by vLLM.
Mamba layers (``mamba`` / ``linear_attention``) stay :attr:`LayerKind.NONE`; hybrid layers
also run a Mamba mixer (``Zamba2HybridLayer.mamba_decoder``), whose state is not modelled
here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kvlint.errors import ConfigError
from kvlint.loaders.families._fields import head_count, model_type, positive_int
from kvlint.model.geometry import AttentionGeometry


def refine_zamba2(config: Mapping[str, Any], geometry: AttentionGeometry) -> AttentionGeometry:
    """Hybrid layers: MHA over ``num_attention_heads`` heads of ``2 * hidden_size / heads``."""
    if model_type(config) != "zamba2":
        return geometry
    heads = head_count(config, "num_attention_heads")
    hidden = positive_int(config, "hidden_size")
    if (2 * hidden) % heads:
        raise ConfigError(f"2 x hidden_size ({2 * hidden}) is not divisible by "
                          f"num_attention_heads ({heads})", field="hidden_size")
    dim = 2 * hidden // heads
    layers = tuple(
        replace(layer, num_attention_heads=heads, num_kv_heads=heads, k_head_dim=dim,
                v_head_dim=dim)
        if layer.attends else layer
        for layer in geometry.layers
    )
    return replace(geometry, layers=layers, num_attention_heads=heads)
