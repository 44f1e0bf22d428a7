"""KV-cache arithmetic (docs/design.md §4). Pure functions over an :class:`AttentionGeometry`.

Per layer that holds KV, per token, in bytes, with ``b`` bytes per element:

* standard attention: ``(d_k + d_v) * n_kv * b``;
* MLA with a latent cache: ``(kv_lora_rank + qk_rope_head_dim) * b`` (one latent, no x2);
  vLLM's ``fp8_ds_mla`` layout is 656 bytes per token per layer;
* layers without KV, and layers that reuse another layer's cache (``kv_shared``): 0;
* extra caches (a sparse-attention indexer, a compressed stream): ``entry_bytes /
  tokens_per_entry`` each, whole on every TP rank unless the engine splits them;
* recurrent layers keep a fixed state per sequence instead (:mod:`kvlint.model.state`).

Per-token figures with compressed caches can be fractions of a byte: the ``*_exact`` fields
carry the exact value (a :class:`~fractions.Fraction`), the ``int`` fields round it up.

Tensor parallelism follows the engine's KV-head sharding (``KV_SHARDINGS``; vLLM by default):
query heads must divide by tp; vLLM/SGLang/LMDeploy (``replicate``) need ``n_kv % tp == 0`` when
``n_kv >= tp`` (``n_kv / tp`` heads per GPU) and ``tp % n_kv == 0`` otherwise (one head per GPU,
replicated ``tp / n_kv`` times); TensorRT-LLM (``ceil``) holds ``ceil(n_kv / tp)``; MLC-LLM
(``refuse``) and TGI (``refuse-except-mqa``) need ``n_kv % tp == 0`` and ``n_kv >= tp``;
llama.cpp (``layers``) splits layers, not heads, over its GPUs. MLA latents are replicated on
every rank of the attention TP group (``tp / dp`` with DP attention).
Pipeline parallelism splits layers as vLLM's ``get_pp_indices`` does: the remainder goes one
layer each to the stages before the last, starting from the second-to-last.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import ceil
from typing import TypeVar

from kvlint.model.geometry import AttentionGeometry, ExtraCache, LayerGeometry
from kvlint.model.limits import MAX_PARALLEL
from kvlint.model.state import state_bytes_per_gpu

FP8_DS_MLA_BYTES_PER_LAYER = 656
"""vLLM ``fp8_ds_mla``: 512 fp8 latent values, 4 float32 scales, 64 bf16 rope values."""
FP8_DS_MLA_LATENT = (512, 64)

_N = TypeVar("_N", int, Fraction)

SIXTEEN_BIT = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16",
               "fp16": "float16", "half": "float16"}
FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
FLOAT32 = frozenset({"float32", "float", "fp32"})
"""Engine ``--dtype`` spellings of 32-bit serving (vLLM/SGLang ``float``/``float32``)."""
KV_CACHE_DTYPES: tuple[str, ...] = ("auto", "bfloat16", "float16", *FP8, "fp8_ds_mla")
"""Values accepted for ``--kv-cache-dtype``."""


@dataclass(frozen=True)
class KvDtype:
    """The element type of the KV cache."""

    name: str
    """What is stored: ``bfloat16``, ``float16``, ``16-bit`` (engine's choice), ``fp8...``."""
    bytes_per_element: int
    requested: str = "auto"
    ds_mla: bool = False
    """vLLM's packed ``fp8_ds_mla`` layout (656 B per token per MLA layer)."""

    def layer_bytes_per_token(self, layer: LayerGeometry) -> int:
        """Bytes one token occupies in ``layer``'s main K/V or latent cache (one logical
        copy; extra caches not included)."""
        if not layer.holds_kv:
            return 0
        if layer.entry_bytes is not None:
            return layer.entry_bytes
        if self.ds_mla and layer.is_mla:
            return FP8_DS_MLA_BYTES_PER_LAYER
        return layer.elements_per_token * self.bytes_per_element

    def extra_entry_bytes(self, cache: ExtraCache) -> int:
        return cache.entry_bytes(self.bytes_per_element)

    @property
    def effective_bytes_per_element(self) -> float:
        """Bytes per element as stored, counting the fp8_ds_mla scales and bf16 rope part."""
        if self.ds_mla:
            return FP8_DS_MLA_BYTES_PER_LAYER / sum(FP8_DS_MLA_LATENT)
        return float(self.bytes_per_element)


def resolve_kv_dtype(requested: str, geometry: AttentionGeometry,
                     model_dtype: str | None = None) -> KvDtype:
    """Resolve ``--kv-cache-dtype`` against the model.

    ``auto`` is the dtype the engine serves: the engine's own ``--dtype`` (``model_dtype``:
    ``float32``/``float`` is 4 bytes, ``half``/``float16``/``bfloat16`` 2) when one is given,
    else bf16/fp16 as the config says; float32 or unspecified configs are served in 16-bit
    (2 bytes). Raises ``ValueError`` for a value outside :data:`KV_CACHE_DTYPES` or
    ``fp8_ds_mla`` on a model without a 512+64 latent.
    """
    value = requested.strip().lower()
    served = (model_dtype or "auto").strip().lower()
    if value == "auto" and geometry.default_kv_dtype in FP8:
        return KvDtype(geometry.default_kv_dtype, 1, requested="auto")
    if value == "auto" and served in FLOAT32:
        return KvDtype("float32", 4, requested="auto")
    if value == "auto" and served in SIXTEEN_BIT:
        return KvDtype(SIXTEEN_BIT[served], 2, requested="auto")
    if value == "auto":
        config_dtype = SIXTEEN_BIT.get((geometry.dtype or "").lower())
        return KvDtype(config_dtype or "16-bit", 2, requested="auto")
    if value in SIXTEEN_BIT:
        return KvDtype(SIXTEEN_BIT[value], 2, requested=value)
    if value in FP8:
        return KvDtype(value, 1, requested=value)
    if value == "fp8_ds_mla" and geometry.default_kv_dtype in FP8 and geometry.kv_layers \
            and all(layer.entry_bytes is not None for layer in geometry.kv_layers):
        return KvDtype("fp8_ds_mla", 1, requested=value)  # DeepSeek-V4: its packed layout
    if value == "fp8_ds_mla":
        latent = (geometry.kv_lora_rank, geometry.qk_rope_head_dim)
        if latent != FP8_DS_MLA_LATENT:
            raise ValueError(
                "fp8_ds_mla needs an MLA model with kv_lora_rank 512 and qk_rope_head_dim 64 "
                f"(this model: {'not MLA' if geometry.kv_lora_rank is None else latent})"
            )
        return KvDtype("fp8_ds_mla", 1, requested=value, ds_mla=True)
    raise ValueError(
        f"unknown KV cache dtype {requested!r}; expected one of {', '.join(KV_CACHE_DTYPES)}"
    )


def _count(value: int) -> str:
    """An integer for a message: ``1,000,000,000``, or its size when it is huge."""
    if value.bit_length() <= 64:
        return f"{value:,}"
    return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"


@dataclass(frozen=True)
class ParallelLayout:
    """How the model is split over GPUs."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    dp_attention: bool = False

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
            if getattr(self, name) > MAX_PARALLEL:
                raise ValueError(f"{name} must be at most {MAX_PARALLEL:,}, got "
                                 f"{_count(getattr(self, name))}")
        if self.tp * self.pp > MAX_PARALLEL:
            raise ValueError(f"tp x pp must be at most {MAX_PARALLEL:,} GPUs per model replica, "
                             f"got {self.tp:,} x {self.pp:,}")
        if self.dp_attention and self.tp % self.dp:
            raise ValueError(f"DP attention needs tp divisible by dp (tp={self.tp}, dp={self.dp})")

    @property
    def attention_tp(self) -> int:
        """The TP degree attention runs at: ``tp / dp`` with DP attention, else ``tp``."""
        return self.tp // self.dp if self.dp_attention else self.tp

    @property
    def gpus(self) -> int:
        """GPUs one deployment needs: tp x pp, times dp unless DP attention reuses the TP group."""
        return self.tp * self.pp * (1 if self.dp_attention else self.dp)


KV_SHARDINGS = ("replicate", "ceil", "refuse", "refuse-except-mqa", "layers")
"""How engines split KV heads over tensor-parallel GPUs (docs/design.md §4)."""


def kv_heads_per_gpu(num_kv_heads: int, tp: int, sharding: str = "replicate") -> int | None:
    """KV heads one GPU holds, ``None`` when the engine refuses the tp."""
    if sharding == "layers" or tp == 1:
        return num_kv_heads
    if sharding == "ceil":
        return -(-num_kv_heads // tp)
    if num_kv_heads >= tp:
        return num_kv_heads // tp if num_kv_heads % tp == 0 else None
    if sharding == "replicate" or (sharding == "refuse-except-mqa" and num_kv_heads == 1):
        return 1 if tp % num_kv_heads == 0 else None
    return None


def valid_tp_degrees(geometry: AttentionGeometry, limit: int = 64,
                     sharding: str = "replicate") -> tuple[int, ...]:
    """TP degrees up to ``limit`` that the engine accepts for this model's heads."""
    return tuple(
        tp for tp in range(1, limit + 1)
        if heads_fit(geometry, tp, sharding) and kv_heads_fit(geometry, tp, sharding)
    )


def heads_fit(geometry: AttentionGeometry, tp: int, sharding: str = "replicate") -> bool:
    """Every head-sharding engine needs the query heads divisible by tp."""
    if sharding == "layers":
        return True
    counts = {geometry.num_attention_heads} | {
        layer.num_attention_heads for layer in geometry.kv_layers
    }
    return all(n % tp == 0 for n in counts)


def kv_heads_fit(geometry: AttentionGeometry, tp: int, sharding: str = "replicate") -> bool:
    return all(kv_heads_per_gpu(n, tp, sharding) is not None
               for n in geometry.distinct_kv_head_counts)


def layer_bytes_per_token_per_gpu(layer: LayerGeometry, dtype: KvDtype, tp: int,
                                  sharding: str = "replicate") -> Fraction | None:
    """Bytes one token occupies in ``layer`` on one GPU of the attention TP group (main cache
    plus extra caches; a fraction when a cache keeps one entry per several tokens)."""
    if not layer.holds_kv:
        return Fraction(0)
    if layer.is_mla or layer.entry_bytes is not None:
        main = dtype.layer_bytes_per_token(layer)
    else:
        heads = kv_heads_per_gpu(layer.num_kv_heads, tp, sharding)
        if heads is None:
            return None
        main = (layer.k_head_dim + layer.v_head_dim) * heads * dtype.bytes_per_element
    return main + sum((_extra_per_token(cache, dtype, tp) for cache in layer.extra_caches),
                      Fraction(0))


def _extra_per_token(cache: ExtraCache, dtype: KvDtype, tp: int) -> Fraction:
    share = 1 if cache.replicated else tp
    return Fraction(dtype.extra_entry_bytes(cache), cache.tokens_per_entry * share)


def layer_bytes_per_sequence_per_gpu(layer: LayerGeometry, dtype: KvDtype, tp: int,
                                     context: int, *, windowed: bool = True,
                                     sharding: str = "replicate") -> int | None:
    """Bytes a ``context``-token sequence occupies in ``layer`` on one GPU: windowed caches
    keep their window, compressed caches one entry per ``tokens_per_entry`` tokens."""
    per_token = layer_bytes_per_token_per_gpu(layer, dtype, tp, sharding)
    if per_token is None:
        return None
    if not layer.holds_kv:
        return 0
    main = per_token - sum((_extra_per_token(cache, dtype, tp) for cache in layer.extra_caches),
                           Fraction(0))
    total = main * tokens_held(layer, context, windowed)
    for cache in layer.extra_caches:
        share = 1 if cache.replicated else tp
        total += Fraction(dtype.extra_entry_bytes(cache) * cache.entries_held(context, windowed),
                          share)
    return ceil(total)


MLA_CACHES = ("latent", "latent-aligned-256", "full", "full-padded-v", "full-padded-256",
              "generic")
"""What an engine caches for an MLA layer: the latent (``latent-aligned-256``: each token's
entry padded to a multiple of 256 bytes of the 16-bit model dtype, 128 elements, as vLLM
0.7.2-0.7.3's V0 cache engine allocates it on CUDA), or the up-projected per-head K/V (with
V padded to the K head dim by engines that need equal dims, or K and V both padded to 256
per head, ``full-padded-256``, as vLLM before 0.7.0 ran DeepSeek's attention), or
(``generic``) per-head K and V of the width a generic builder reads from the config
(:attr:`LayerGeometry.generic_head_dim`), when an engine release has no builder for the
type."""

ALIGNED_ELEMENTS = 128
"""``align_to_256bytes`` (vllm/utils.py@v0.7.3): 256 bytes of the model dtype; DeepSeek's
MLA models are 16-bit, so 128 elements (576 -> 640)."""


def is_latent(mla_cache: str) -> bool:
    """Whether an engine's MLA cache layout (:data:`MLA_CACHES`) holds the latent."""
    return mla_cache.startswith("latent")


def as_cached(geometry: AttentionGeometry, mla_cache: str = "latent",
              shared_kv_allocated: bool = False) -> AttentionGeometry:
    """The geometry as the engine caches it: MLA layers become per-head K/V layers when the
    engine does not cache the latent; with ``shared_kv_allocated``, layers that reuse
    another layer's cache get one of their own (an engine that sizes its pool for every
    layer)."""
    if shared_kv_allocated and any(layer.kv_shared for layer in geometry.layers):
        geometry = replace(geometry, layers=tuple(
            replace(layer, kv_shared=False) if layer.kv_shared else layer
            for layer in geometry.layers))
    if mla_cache == "latent-aligned-256" and geometry.is_mla:
        return replace(geometry, layers=tuple(
            _aligned(layer) if layer.is_mla else layer for layer in geometry.layers))
    if is_latent(mla_cache) or not geometry.is_mla:
        return geometry
    return replace(geometry, layers=tuple(
        _per_head(layer, mla_cache) if layer.is_mla else layer for layer in geometry.layers))


def _aligned(layer: LayerGeometry) -> LayerGeometry:
    """An MLA layer whose latent entry is padded to :data:`ALIGNED_ELEMENTS` (the padding
    counted in the rank: the entry's bytes are what is allocated)."""
    rank, rope = layer.kv_lora_rank or 0, layer.qk_rope_head_dim or 0
    pad = -(rank + rope) % ALIGNED_ELEMENTS
    return replace(layer, kv_lora_rank=rank + pad) if pad else layer


def _per_head(layer: LayerGeometry, mla_cache: str) -> LayerGeometry:
    """An MLA layer as per-head K/V of the ``mla_cache`` layout."""
    k_dim, v_dim = layer.k_head_dim, layer.v_head_dim
    if mla_cache == "full-padded-v":
        v_dim = max(v_dim, k_dim)
    elif mla_cache == "full-padded-256":
        k_dim, v_dim = max(k_dim, 256), max(v_dim, 256)
    elif mla_cache == "generic" and layer.generic_head_dim is not None:
        k_dim = v_dim = layer.generic_head_dim
    return replace(layer, kv_lora_rank=None, qk_rope_head_dim=None,
                   k_head_dim=k_dim, v_head_dim=v_dim)


def pipeline_stages(num_layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage, as vLLM's ``get_pp_indices`` splits them (stages beyond
    the layer count get none)."""
    stages = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        stages[-i] += 1
    return tuple(stages)


def tokens_held(layer: LayerGeometry, context: int, windowed: bool = True) -> int:
    """Tokens of a ``context``-long sequence that ``layer`` keeps in its cache."""
    if windowed and layer.is_windowed and layer.window is not None:
        return min(context, layer.window)
    return context


@dataclass(frozen=True)
class KvFootprint:
    """What the KV cache costs under a parallel layout (docs/design.md §4, §7 ``kv``).

    The ``int`` byte figures are rounded up to whole bytes; ``*_exact`` hold the exact values
    (they differ only when a cache keeps one entry per several tokens)."""

    dtype: KvDtype
    layout: ParallelLayout
    bytes_per_token: int
    heads_ok: bool
    kv_ok: bool
    kv_heads_per_gpu: int | None
    bytes_per_token_per_gpu: int | None
    bytes_per_token_cluster: int | None
    replication_factor: float | None
    stages: tuple[int, ...]
    bytes_per_token_exact: Fraction = Fraction(0)
    bytes_per_token_per_gpu_exact: Fraction | None = None
    bytes_per_token_cluster_exact: Fraction | None = None

    @property
    def duplicate_bytes_per_token(self) -> int | None:
        """Bytes per token stored more than once across the attention TP group."""
        if self.bytes_per_token_cluster_exact is None:
            return None
        return ceil(self.bytes_per_token_cluster_exact - self.bytes_per_token_exact)


def exact_number(value: Fraction) -> int | float:
    """A byte figure for output: an ``int`` when whole, else a ``float``."""
    return int(value) if value.denominator == 1 else float(value)


def bytes_per_token_exact(geometry: AttentionGeometry, dtype: KvDtype) -> Fraction:
    """One logical copy, all layers, every layer as if the context fits its window."""
    return sum((layer_bytes_per_token_per_gpu(layer, dtype, 1) or Fraction(0)
                for layer in geometry.layers), Fraction(0))


def bytes_per_token(geometry: AttentionGeometry, dtype: KvDtype) -> int:
    """:func:`bytes_per_token_exact`, rounded up to whole bytes."""
    return ceil(bytes_per_token_exact(geometry, dtype))


def _split(layout: ParallelLayout, sharding: str) -> tuple[int, int]:
    """(GPUs that share each layer's heads, layer stages). llama.cpp's layer split spreads
    layers, not heads, over its tensor-parallel GPUs."""
    if sharding == "layers":
        return 1, layout.attention_tp * layout.pp
    return layout.attention_tp, layout.pp


def _per_gpu_token_bytes(geometry: AttentionGeometry, dtype: KvDtype, tp: int,
                         sharding: str) -> list[Fraction] | None:
    """Each layer's per-token bytes on one GPU of the attention TP group; ``None`` when the
    engine refuses the tp."""
    sizes = []
    for layer in geometry.layers:
        per_token = layer_bytes_per_token_per_gpu(layer, dtype, tp, sharding)
        if per_token is None:
            return None
        sizes.append(per_token)
    return sizes


def stage_token_bytes(geometry: AttentionGeometry, dtype: KvDtype, layout: ParallelLayout,
                      sharding: str = "replicate") -> tuple[Fraction, ...] | None:
    """KV bytes per token on one GPU of each pipeline stage (the layers split as vLLM's
    ``get_pp_indices`` does); ``None`` for a model whose stages do not hold plain per-token
    KV (windowed or recurrent layers: sized by their groups) or a tp the engine refuses."""
    if any(layer.is_windowed or layer.state is not None for layer in geometry.layers):
        return None
    tp, stages = _split(layout, sharding)
    sizes = _per_gpu_token_bytes(geometry, dtype, tp, sharding)
    if sizes is None or stages > len(sizes):
        return None
    out: list[Fraction] = []
    start = 0
    for size in pipeline_stages(len(sizes), stages):
        out.append(sum(sizes[start:start + size], Fraction(0)))
        start += size
    return tuple(out)


def _per_gpu_sequence_bytes(
    geometry: AttentionGeometry, dtype: KvDtype, tp: int, sharding: str, context: int,
    windowed: bool, with_state: bool,
) -> list[int] | None:
    """Each layer's bytes for one ``context``-token sequence on one GPU (recurrent state
    included when ``with_state``); ``None`` when the engine refuses the tp."""
    sizes = []
    for layer in geometry.layers:
        held = layer_bytes_per_sequence_per_gpu(layer, dtype, tp, context, windowed=windowed,
                                                sharding=sharding)
        if held is None:
            return None
        if with_state and layer.state is not None:
            state = state_bytes_per_gpu(layer.state, tp)
            if state is None:
                return None
            held += state
        sizes.append(held)
    return sizes


def _fullest_stage(sizes: list[_N], pp: int) -> _N:
    """The largest per-stage sum of per-layer ``sizes`` under vLLM's pipeline split."""
    best: _N | None = None
    start = 0
    for size in pipeline_stages(len(sizes), pp):
        total = sum(sizes[start : start + size], sizes[0] * 0)
        best = total if best is None or total > best else best
        start += size
    assert best is not None
    return best


def footprint(geometry: AttentionGeometry, dtype: KvDtype, layout: ParallelLayout,
              sharding: str = "replicate", windowed_share: Fraction | None = None
              ) -> KvFootprint:
    """KV bytes per token: logical, per GPU (fullest pipeline stage) and across the group.
    Raises ``ValueError`` for a pp above the layer count.

    ``windowed_share``: the engine keeps its windowed layers in a pool of that share of the
    full pool's tokens (SGLang's hybrid sliding-window pool, ``swa_full_tokens_ratio``), so
    one token of its pool costs the full layers plus that share of the windowed ones (per
    GPU and across the group; the logical figure stays the model's). Not applied to a
    model whose every KV layer is windowed (it has no full pool)."""
    if layout.pp > geometry.num_layers:
        raise ValueError(f"pp={layout.pp:,} is more pipeline stages than the model's "
                         f"{geometry.num_layers} layers: a stage would hold no layer")
    tp, stages = _split(layout, sharding)
    logical = bytes_per_token_exact(geometry, dtype)
    sizes = _per_gpu_token_bytes(geometry, dtype, tp, sharding)
    if sizes is not None and windowed_share is not None and any(
            layer.holds_kv and not layer.is_windowed for layer in geometry.layers):
        sizes = [size * windowed_share if layer.is_windowed else size
                 for size, layer in zip(sizes, geometry.layers, strict=True)]
    ref = geometry.reference_layer
    heads_per_gpu = (
        kv_heads_per_gpu(ref.num_kv_heads, tp, sharding)
        if sizes is not None and ref is not None and not ref.is_mla else None
    )
    cluster = None if sizes is None else tp * sum(sizes, Fraction(0))
    per_gpu = None if sizes is None else _fullest_stage(sizes, stages)
    return KvFootprint(
        dtype=dtype,
        layout=layout,
        bytes_per_token=ceil(logical),
        heads_ok=heads_fit(geometry, layout.attention_tp, sharding),
        kv_ok=sizes is not None and state_fits(geometry, tp),
        kv_heads_per_gpu=heads_per_gpu,
        bytes_per_token_per_gpu=None if per_gpu is None else ceil(per_gpu),
        bytes_per_token_cluster=None if cluster is None else ceil(cluster),
        replication_factor=None if cluster is None else (
            float(cluster / logical) if logical else 1.0),
        stages=pipeline_stages(geometry.num_layers, stages),
        bytes_per_token_exact=logical,
        bytes_per_token_per_gpu_exact=per_gpu,
        bytes_per_token_cluster_exact=cluster,
    )


def state_fits(geometry: AttentionGeometry, tp: int) -> bool:
    """Every recurrent layer's state can be split over ``tp`` GPUs (the engine refuses
    the tp otherwise)."""
    return all(state_bytes_per_gpu(layer.state, tp) is not None
               for layer in geometry.state_layers if layer.state is not None)


def state_bytes_per_sequence(geometry: AttentionGeometry) -> int:
    """Recurrent state of one sequence, one logical copy (all layers, tp 1)."""
    return sum(state_bytes_per_gpu(layer.state, 1) or 0
               for layer in geometry.state_layers if layer.state is not None)


def state_bytes_per_sequence_per_gpu(geometry: AttentionGeometry, layout: ParallelLayout,
                                     sharding: str = "replicate") -> int | None:
    """Recurrent state of one sequence on the fullest pipeline stage's GPU; ``None`` when
    the tp does not split the state."""
    tp, stages = _split(layout, sharding)
    sizes = []
    for layer in geometry.layers:
        state = 0 if layer.state is None else state_bytes_per_gpu(layer.state, tp)
        if state is None:
            return None
        sizes.append(state)
    return _fullest_stage(sizes, stages) if sizes else 0


def bytes_per_sequence(
    geometry: AttentionGeometry, dtype: KvDtype, context: int, *, windowed: bool = True,
    with_state: bool = True,
) -> int:
    """One logical copy of a ``context``-token sequence; windowed layers keep at most their
    window when the engine allocates windowed caches (``windowed``); recurrent state
    included (``with_state``)."""
    sizes = _per_gpu_sequence_bytes(geometry, dtype, 1, "replicate", context, windowed,
                                    with_state)
    return sum(sizes) if sizes is not None else 0


def bytes_per_sequence_per_gpu(
    geometry: AttentionGeometry, dtype: KvDtype, layout: ParallelLayout, context: int,
    *, windowed: bool = True, sharding: str = "replicate", with_state: bool = True,
) -> int | None:
    """A ``context``-token sequence on the fullest GPU; ``None`` when the tp is refused."""
    tp, stages = _split(layout, sharding)
    sizes = _per_gpu_sequence_bytes(geometry, dtype, tp, sharding, context, windowed,
                                    with_state)
    return None if sizes is None else _fullest_stage(sizes, stages)


def bytes_per_sequence_cluster(
    geometry: AttentionGeometry, dtype: KvDtype, layout: ParallelLayout, context: int,
    *, windowed: bool = True, sharding: str = "replicate", with_state: bool = True,
) -> int | None:
    """A ``context``-token sequence summed over its attention TP group and all stages."""
    tp, _ = _split(layout, sharding)
    sizes = _per_gpu_sequence_bytes(geometry, dtype, tp, sharding, context, windowed,
                                    with_state)
    return None if sizes is None else tp * sum(sizes)
