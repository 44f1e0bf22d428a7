"""DeepSeek-V4 (``model_type`` ``deepseek_v4``): a sliding-window cache on every layer plus
compressed KV streams, a sparse-attention indexer and the compressors' rolling state.

What vLLM 0.33.0 allocates per decoder layer (``vllm/models/deepseek_v4/attention.py``,
``compressor.py``, ``v1/attention/backends/mla/sparse_swa.py``), with the default CUDA
attention (``DeepseekV4FlashMLAAttention``, ``nvidia/model.py`` ``_select_dsv4_attn_cls``:
every CUDA arch but SM12), whose ``fp8_ds_mla`` layout makes ``--kv-cache-dtype auto`` fp8
(``attention.py`` ``_resolve_dsv4_kv_cache_dtype``: ``auto`` -> ``fp8`` -> ``fp8_ds_mla``):

* the SWA cache (``DeepseekV4SWACache``, ``SlidingWindowMLASpec``): the last
  ``sliding_window`` tokens, one packed 584-byte entry per token: ``head_dim -
  qk_rope_head_dim`` (448) fp8 values, ``qk_rope_head_dim`` (64) bf16 rope values and
  ``448 / 64 + 1`` (8) UE8M0 scale bytes;
* on a layer with compress ratio ``r`` > 1 (``layer_types`` -> ``compress_rates``, or the
  legacy per-layer ``compress_ratios``; ``DeepseekV4Attention.__init__``):
  - the compressed KV stream (``DeepseekV4Attention.get_kv_cache_spec``,
    ``MLAAttentionSpec(tokens_per_state=r, state_content_bytes=584)``): one 584-byte entry
    per ``r`` tokens, for the whole context;
  - the compressor's state (``CompressorStateCache``, ``SlidingWindowMLASpec``): ``2 * coff
    * head_dim`` float32 values per token over the last ``coff * r`` tokens, ``coff = 2``
    for ``r == 4`` (overlapping windows), else 1;
* on a ratio-4 layer also the indexer (``DeepseekV4Indexer``, "only C4A uses sparse
  attention"): its key cache (``DeepseekV4IndexerCache``: ``index_head_dim`` fp8 values
  plus one float32 scale per 128, per ``r`` tokens) and its own compressor's state
  (``2 * 2 * index_head_dim`` float32 values over the last 8 tokens).

Every spec has ``max_tp_shards=1``: each cache is whole on every rank of the TP group.
The MTP layers (``num_nextn_predict_layers``) are not counted: they serve only speculative
decoding. Page alignment padding (``_apply_alignment_padding``: 576 bytes for
``fp8_ds_mla``) is not counted either; vLLM sizes the cache by ``real_page_size_bytes``.
Not modelled: the FlashInfer layouts (SM12 default, or ``FLASHINFER_MLA_SPARSE_DSV4``: plain
bf16 / fp8 rows) and the MXFP4 indexer cache (``indexer_kv_dtype mxfp4``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from kvlint.errors import ConfigError
from kvlint.loaders.families._fields import model_type
from kvlint.model.geometry import AttentionGeometry, ExtraCache, LayerGeometry, LayerKind

MODEL_TYPES: Final = frozenset({"deepseek_v4"})
"""``model_type`` values of the family (DeepSeek-V4.1, ``deepseek_v41``, shares KV between
layers and is a different layout)."""

LAYER_TYPE_RATIOS: Final = {
    "sliding_attention": 0,
    "compressed_sparse_attention": 4,
    "heavily_compressed_attention": 128,
}
"""transformers ``DeepseekV4Config``: layer type <-> default compress rate
(``_COMPRESS_RATIO_TO_LAYER_TYPE``, ``default_compress_rates``)."""

RATIO_LAYER_TYPES: Final = {v: k for k, v in LAYER_TYPE_RATIOS.items()}
SUPPORTED_RATIOS: Final = (0, 4, 128)
"""vLLM's ``CompressorStateCache`` asserts ``compress_ratio in [4, 128]`` (0: sliding only)."""

SCALE_GROUP: Final = 64
"""fp8_ds_mla: one UE8M0 scale byte per 64 fp8 values, plus one pad byte
(``compressor.py``: ``_scale_dim = nope_head_dim // 64 + 1``)."""
INDEXER_QUANT_BLOCK: Final = 128
"""Indexer fp8 cache: one float32 scale per 128 values (``DeepseekV4Indexer.quant_block_size``)."""
INDEXER_RATIO: Final = 4
"""Only ratio-4 layers have an indexer (``DeepseekV4Attention.__init__``)."""
O_GROUPS: Final = (
    "models/deepseek_v4/attention.py:226 n_local_groups = o_groups // tp_size; "
    "nvidia/flashmla.py:69 heads_per_group = n_local_heads // n_local_groups (zero groups per "
    "GPU: division by zero at the first forward)")
"""Why vLLM needs ``o_groups`` divisible by tp (the grouped output projection ``wo_a``)."""
FLOAT32: Final = 4
FP8: Final = 1
BF16: Final = 2


def _int(config: Mapping[str, Any], name: str, default: int | None = None) -> int:
    value = config.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > 1 << 40:
        raise ConfigError(f"field '{name}' must be a positive integer, got {value!r}",
                          field=name)
    return value


def _ratio_table(config: Mapping[str, Any]) -> dict[str, int]:
    """``compress_rates`` as transformers builds it: the defaults, the config's dict, then the
    legacy ``compress_rate_csa`` / ``compress_rate_hca`` overrides."""
    rates = {k: v for k, v in LAYER_TYPE_RATIOS.items() if v}
    given = config.get("compress_rates")
    if given is not None:
        if not isinstance(given, Mapping):
            raise ConfigError(f"field 'compress_rates' must be an object, got {given!r}",
                              field="compress_rates")
        rates = dict(given)
    for name, layer_type in (("compress_rate_csa", "compressed_sparse_attention"),
                             ("compress_rate_hca", "heavily_compressed_attention")):
        if config.get(name) is not None:
            rates[layer_type] = config[name]
    return rates


def _layer_types(config: Mapping[str, Any], num_layers: int) -> tuple[str, list[Any]]:
    """(the field read, each layer's type) as transformers' ``DeepseekV4Config.__post_init__``
    builds ``layer_types``: explicit ``layer_types``, else the legacy per-layer
    ``compress_ratios`` (0/4/128) mapped to types, else the V4-Pro default."""
    for field in ("layer_types", "compress_ratios"):
        values = config.get(field)
        if values is None:
            continue
        if not isinstance(values, Sequence) or isinstance(values, str):
            raise ConfigError(f"field '{field}' must be a list, got {values!r}", field=field)
        if len(values) < num_layers:
            raise ConfigError(f"field '{field}' must give all {num_layers} layers, got "
                              f"{len(values)} entries", field=field)
        if field == "layer_types":
            return field, list(values[:num_layers])
        return field, [RATIO_LAYER_TYPES.get(v) if isinstance(v, int) and not isinstance(v, bool)
                       else None for v in values[:num_layers]]
    return "num_hidden_layers", ["heavily_compressed_attention"] * min(num_layers, 2) + [
        "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
        for i in range(max(num_layers - 2, 0))]


def compress_ratios(config: Mapping[str, Any], num_layers: int) -> tuple[int, ...]:
    """Each decoder layer's compress ratio (0: sliding window only), as vLLM's
    ``DeepseekV4Attention`` reads it (``max(1, compress_rates.get(layer_type, 0))``) from the
    transformers config: the layer types (:func:`_layer_types`; MTP entries past
    ``num_hidden_layers`` dropped) through ``compress_rates``."""
    field, types = _layer_types(config, num_layers)
    rates = _ratio_table(config)
    out = []
    for i, layer_type in enumerate(types):
        if not isinstance(layer_type, str) or layer_type not in LAYER_TYPE_RATIOS:
            allowed = RATIO_LAYER_TYPES if field == "compress_ratios" else LAYER_TYPE_RATIOS
            raise ConfigError(f"field '{field}' entry {i} must be one of "
                              f"{', '.join(map(str, allowed))}; got {config[field][i]!r}",
                              field=field)
        ratio = rates.get(layer_type, 0)
        if isinstance(ratio, bool) or ratio not in SUPPORTED_RATIOS:
            name = "compress_rates"
            raise ConfigError(f"field '{name}' gives {layer_type} the compress rate {ratio!r}; "
                              "vLLM 0.33's DeepSeek-V4 compressor takes 4 or 128", field=name)
        out.append(int(ratio))
    return tuple(out)


def _compressor_state(name: str, head_dim: int, ratio: int) -> ExtraCache:
    """``CompressorStateCache``: kv + score state, ``2 * coff * head_dim`` float32 values per
    token over the last ``coff * ratio`` tokens (``coff = 2`` for the overlapping ratio 4)."""
    coff = 2 if ratio == 4 else 1
    return ExtraCache(name, elements=2 * coff * head_dim, element_bytes=FLOAT32,
                      window=coff * ratio)


def layer_caches(config: Mapping[str, Any], ratio: int) -> tuple[int, tuple[ExtraCache, ...]]:
    """(bytes per token of the packed SWA entry, the layer's extra caches) for a layer with
    compress ratio ``ratio``."""
    head_dim = _int(config, "head_dim")
    rope = _int(config, "qk_rope_head_dim", 64)
    if rope >= head_dim:
        raise ConfigError(f"field 'qk_rope_head_dim' must be below head_dim ({head_dim}), got "
                          f"{rope}", field="qk_rope_head_dim")
    nope = head_dim - rope
    packed_rest = rope * BF16 + nope // SCALE_GROUP + 1
    entry = nope * FP8 + packed_rest
    if not ratio:
        return entry, ()
    caches = [
        ExtraCache("compressed_kv", elements=nope, element_bytes=FP8, extra_bytes=packed_rest,
                   tokens_per_entry=ratio),
        _compressor_state("compressor_state", head_dim, ratio),
    ]
    if ratio == INDEXER_RATIO:
        index_dim = _int(config, "index_head_dim", 128)
        caches += [
            ExtraCache("indexer_k", elements=index_dim, element_bytes=FP8,
                       extra_bytes=index_dim // INDEXER_QUANT_BLOCK * FLOAT32,
                       tokens_per_entry=ratio),
            _compressor_state("indexer_compressor_state", index_dim, ratio),
        ]
    return entry, tuple(caches)


def refine_deepseek_v4(config: Mapping[str, Any], geometry: AttentionGeometry
                       ) -> AttentionGeometry:
    """DeepSeek-V4's per-layer caches; other configs unchanged."""
    if model_type(config) not in MODEL_TYPES:  # a list or map there is no model type
        return geometry
    window = _int(config, "sliding_window", 128)
    ratios = compress_ratios(config, geometry.num_layers)
    built: dict[int, tuple[int, tuple[ExtraCache, ...]]] = {}
    layers = []
    for layer, ratio in zip(geometry.layers, ratios, strict=True):
        if ratio not in built:
            built[ratio] = layer_caches(config, ratio)
        entry, extra = built[ratio]
        layers.append(_swa_layer(layer, window, entry, extra))
    groups = _int(config, "o_groups", 1) if config.get("o_groups") is not None else None
    divided = geometry.tp_divided + (() if groups is None else (("o_groups", groups, O_GROUPS),))
    return replace(geometry, layers=tuple(layers), default_kv_dtype="fp8", tp_divided=divided)


def _swa_layer(layer: LayerGeometry, window: int, entry: int,
               extra: tuple[ExtraCache, ...]) -> LayerGeometry:
    """One KV head whose ``head_dim`` vector serves as both key and value, in a sliding
    window; the packed entry stores it once."""
    return replace(layer, kind=LayerKind.SLIDING, window=window,
                   kv_lora_rank=None, qk_rope_head_dim=None, entry_bytes=entry,
                   extra_caches=extra)
