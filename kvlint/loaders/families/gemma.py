"""Gemma-4 per-layer head shapes and Gemma-3n / Gemma-4 shared-KV layers.

**Gemma-4** (``gemma4_text``, the text part of ``gemma4``). transformers 5.20's
``Gemma4TextConfig.__post_init__`` (the config class vLLM 0.33.0 builds the model from) gives
every ``full_attention`` layer its own ``per_layer_config``: ``head_dim = global_head_dim``
(default 512) and, when ``attention_k_eq_v`` is true and ``num_global_key_value_heads`` is
set, ``num_key_value_heads = num_global_key_value_heads``. It also forces the last layer to
``full_attention``, derives absent ``layer_types`` as five sliding layers then one global,
and halves the window (``sliding_window // 2 + 1``) under ``use_bidirectional_attention:
"all"``. vLLM 0.33.0 ``model_executor/models/gemma4.py`` ``Gemma4DecoderLayer.__init__``
(~578-590) reads ``config.per_layer_config[layer_idx]``; ``Gemma4Attention`` caches K and V
with that head size and KV-head count. ``attention_k_eq_v`` layers load the K projection
into both the K and the V slots (``_gemma4_layer_weights_mapper``, ~86-126): V is still
cached.

**Shared-KV layers** (``num_kv_shared_layers`` N > 0): the last N layers attend over an
earlier layer's cache (``kv_sharing_target_layer_name``), and vLLM's ``get_kv_cache_spec``
allocates nothing for them. The target is, in Gemma-4 (``gemma4.py`` ~471-492), the last
non-shared layer of the same ``layer_types`` entry; in Gemma-3n (``gemma3n.py`` ~355-382),
the layer 2 (sliding) or 1 (full) before the first shared one, and a layer whose target
index is negative keeps its own cache. Shared layers keep their kind and shape here, for
description, with ``kv_shared=True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from kvlint.errors import ConfigError
from kvlint.loaders.families._fields import (
    head_count,
    head_dim,
    layer_count,
    model_type,
    positive_int,
)
from kvlint.model.geometry import AttentionGeometry, LayerGeometry, LayerKind

GEMMA4_GLOBAL_HEAD_DIM: Final = 512
"""transformers ``Gemma4TextConfig``: ``kwargs.pop("global_head_dim", 512)``."""
GEMMA4_PATTERN: Final = 6
"""transformers ``Gemma4TextConfig``: absent ``layer_types`` -> ``sliding_window_pattern = 6``."""


def _is_gemma4(config: Mapping[str, Any]) -> bool:
    return model_type(config).startswith("gemma4")


def refine_gemma4(config: Mapping[str, Any], geometry: AttentionGeometry) -> AttentionGeometry:
    """Global layers' head size and KV heads, the forced global last layer, the default
    schedule and the bidirectional window of Gemma-4."""
    if not _is_gemma4(config):
        return geometry
    layers = list(geometry.layers)
    sliding = next((la for la in layers if la.kind is LayerKind.SLIDING), None)
    full = next((la for la in layers if la.kind is LayerKind.FULL), None)
    window = sliding.window if sliding else None
    if config.get("use_bidirectional_attention") == "all" and window is not None:
        window = window // 2 + 1
    base = full or sliding
    if base is None:
        return geometry
    if config.get("layer_types") is None:
        kinds = [LayerKind.FULL if (i + 1) % GEMMA4_PATTERN == 0 else LayerKind.SLIDING
                 for i in range(len(layers))]
        if window is None and LayerKind.SLIDING in kinds:
            window = positive_int(config, "sliding_window", 512)
    else:
        kinds = [la.kind for la in layers]
    if kinds and kinds[-1] is LayerKind.SLIDING:
        kinds[-1] = LayerKind.FULL
    global_dim = head_dim(config, "global_head_dim", GEMMA4_GLOBAL_HEAD_DIM)
    global_kv = base.num_kv_heads
    if config.get("attention_k_eq_v") is True and \
            config.get("num_global_key_value_heads") is not None:
        global_kv = head_count(config, "num_global_key_value_heads")
        if global_kv > base.num_attention_heads or base.num_attention_heads % global_kv:
            raise ConfigError(
                f"num_attention_heads ({base.num_attention_heads}) is not a multiple of "
                f"num_global_key_value_heads ({global_kv})",
                field="num_global_key_value_heads")
    local = sliding or base
    out = []
    for kind in kinds:
        if kind is LayerKind.FULL:
            out.append(replace(base, kind=kind, window=None, num_kv_heads=global_kv,
                               k_head_dim=global_dim, v_head_dim=global_dim))
        elif kind is LayerKind.SLIDING:
            out.append(replace(local, kind=kind, window=window))
        else:
            out.append(LayerGeometry(kind))
    return replace(geometry, layers=tuple(out))


def _gemma3n_targets(kinds: list[LayerKind], first_shared: int) -> list[int | None]:
    """Gemma-3n: the target of each shared layer (``None``: it keeps its own cache)."""
    targets: list[int | None] = []
    for kind in kinds[first_shared:]:
        index = first_shared - (2 if kind is LayerKind.SLIDING else 1)
        targets.append(index if index >= 0 else None)
    return targets


def _same_kind_targets(kinds: list[LayerKind], first_shared: int) -> list[int | None]:
    """Gemma-4: the last non-shared layer of the same kind."""
    targets: list[int | None] = []
    for i, kind in enumerate(kinds[first_shared:], start=first_shared):
        earlier = [j for j in range(first_shared) if kinds[j] is kind]
        if not earlier:
            raise ConfigError(
                f"layer {i} shares KV (num_kv_shared_layers) but no earlier layer has its "
                f"type ({kind.value}) to share with", field="num_kv_shared_layers")
        targets.append(earlier[-1])
    return targets


def refine_shared_kv(config: Mapping[str, Any],
                     geometry: AttentionGeometry) -> AttentionGeometry:
    """Mark the last ``num_kv_shared_layers`` layers as reusing an earlier layer's cache."""
    shared = layer_count(config, "num_kv_shared_layers", 0)
    if shared == 0:
        return geometry
    num_layers = geometry.num_layers
    if shared > num_layers:
        raise ConfigError(f"num_kv_shared_layers ({shared}) exceeds the {num_layers} layers",
                          field="num_kv_shared_layers")
    first = num_layers - shared
    kinds = [layer.kind for layer in geometry.layers]
    if model_type(config).startswith("gemma3n"):
        targets = _gemma3n_targets(kinds, first)
    else:
        targets = _same_kind_targets(kinds, first)
    layers = list(geometry.layers)
    for offset, target in enumerate(targets):
        layer = layers[first + offset]
        if target is not None and layer.attends:
            layers[first + offset] = replace(layer, kv_shared=True)
    return replace(geometry, layers=tuple(layers))
