"""DeepSeek Sparse Attention (DSA) indexer caches: DeepSeek-V3.2 (``deepseek_v32``), GLM-5
(``glm_moe_dsa``) and any MLA config with the indexer fields (``index_topk``,
``index_head_dim``).

What vLLM 0.33.0 allocates (``vllm/model_executor/models/deepseek_v2.py``; the CUDA model in
``vllm/models/deepseek_v32/attention.py`` builds the same cache):

* ``DeepseekV2MLAAttention.__init__`` (deepseek_v2.py ~1138-1192): the model is sparse when
  its config has ``index_topk`` (``is_v32 = hasattr(config, "index_topk")``); a decoder layer
  then builds an ``Indexer`` unless the IndexCache schedule skips it:
  ``index_topk_pattern`` (``pattern[layer_id] == "S"`` skips; layers past its end keep
  theirs), else ``max(layer_id - index_skip_topk_offset + 1, 0) % index_topk_freq != 0``
  skips (defaults: freq 1, offset 2: every layer has an indexer).
* ``Indexer.__init__`` (~679-737): ``DeepseekV32IndexerCache(head_dim=index_head_dim +
  index_head_dim // 128 * 4, dtype=torch.uint8)``: per token, ``index_head_dim`` fp8 keys
  and one float32 scale per 128 of them (``quant_block_size = 128``), whatever
  ``--kv-cache-dtype`` is.
* ``DeepseekV32IndexerCache.get_kv_cache_spec`` (~658-666): ``MLAAttentionSpec(num_kv_heads=1,
  max_tp_shards=1, head_size=..., dtype=uint8)``: one entry per token, whole on every rank.

The MTP layers (``num_nextn_predict_layers``) serve only speculative decoding and are not
counted, as for the MLA latent itself. transformers' ``GlmMoeDsaConfig`` defaults
``index_topk`` (2048) and ``index_head_dim`` (128), so a ``glm_moe_dsa`` config is sparse
without the fields; vLLM maps ``deepseek_v32`` to ``DeepseekV3Config``
(``transformers_utils/config.py``), which has neither: there the fields must be present.
Not modelled: the ROCm MXFP4 indexer layout, and the ``fp8_ds_mla`` latent (656 bytes) that
the FlashMLA-sparse backend uses for a quantized ``--kv-cache-dtype``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from kvlint.errors import ConfigError
from kvlint.loaders.families._fields import head_dim, layer_count, model_type, positive_int
from kvlint.model.geometry import AttentionGeometry, ExtraCache

INDEXER: Final = "indexer"
"""Name of the indexer's :class:`ExtraCache`."""
QUANT_BLOCK: Final = 128
"""``Indexer.quant_block_size``: one float32 scale per 128 fp8 keys."""
SCALE_BYTES: Final = 4
DEFAULT_SPARSE: Final = frozenset({"glm_moe_dsa"})
"""Model types whose transformers config class defaults ``index_topk`` (sparse without the
field)."""
DEFAULT_INDEX_HEAD_DIM: Final = {"glm_moe_dsa": 128}
"""transformers ``GlmMoeDsaConfig.index_head_dim``."""


def is_sparse(config: Mapping[str, Any]) -> bool:
    """The config describes a DSA model (vLLM: ``hasattr(config, "index_topk")``)."""
    return config.get("index_topk") is not None or model_type(config) in DEFAULT_SPARSE


def indexer_cache(config: Mapping[str, Any]) -> ExtraCache:
    """The per-token indexer entry: ``index_head_dim`` fp8 keys plus their float32 scales."""
    dim = head_dim(config, "index_head_dim", DEFAULT_INDEX_HEAD_DIM.get(model_type(config)))
    return ExtraCache(name=INDEXER, elements=dim, element_bytes=1,
                      extra_bytes=dim // QUANT_BLOCK * SCALE_BYTES, replicated=True)


def indexed_layers(config: Mapping[str, Any], num_layers: int) -> list[bool]:
    """Which of the ``num_layers`` decoder layers build an indexer (IndexCache schedule)."""
    pattern = config.get("index_topk_pattern")
    if pattern is not None:
        if not isinstance(pattern, (str, Sequence)):
            raise ConfigError("field 'index_topk_pattern' must be a string such as 'FSSF...'",
                              field="index_topk_pattern")
        return [not (i < len(pattern) and pattern[i] == "S") for i in range(num_layers)]
    freq = positive_int(config, "index_topk_freq", 1)
    offset = layer_count(config, "index_skip_topk_offset", 2)
    return [max(i - offset + 1, 0) % freq == 0 for i in range(num_layers)]


def refine_sparse_indexer(config: Mapping[str, Any],
                          geometry: AttentionGeometry) -> AttentionGeometry:
    """Add the indexer cache to every MLA layer of a DSA model that builds one."""
    if not is_sparse(config) or not geometry.is_mla:
        return geometry
    cache = indexer_cache(config)
    flags = indexed_layers(config, geometry.num_layers)
    layers = tuple(
        replace(layer, extra_caches=(*layer.extra_caches, cache))
        if flag and layer.is_mla else layer
        for layer, flag in zip(geometry.layers, flags, strict=True)
    )
    return replace(geometry, layers=layers)
