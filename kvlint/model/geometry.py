"""Attention geometry: what each layer of a model stores in its KV cache.

Pure data, no I/O. A geometry is built by ``kvlint.loaders.hf_config`` from a ``config.json``
and consumed by the KV arithmetic (``kvlint.model.kv``) and the rules.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from math import ceil


class LayerKind(str, Enum):
    """How a layer attends, and therefore how much KV it keeps per sequence."""

    FULL = "full"
    """Full (global) attention: caches every token of the sequence."""
    SLIDING = "sliding"
    """Sliding-window attention: needs only the last ``window`` tokens."""
    CHUNKED = "chunked"
    """Chunked local attention (Llama 4): needs at most ``window`` (the chunk size) tokens."""
    NONE = "none"
    """No KV cache: Mamba/SSM, linear attention, or a no-op attention block."""


class AttentionKind(str, Enum):
    """The model-level attention layout reported to users."""

    MHA = "mha"
    GQA = "gqa"
    MQA = "mqa"
    MLA = "mla"
    NONE = "none"


@dataclass(frozen=True)
class ExtraCache:
    """A cache a layer keeps next to its K/V or latent: a sparse-attention indexer's keys
    (DeepSeek-V3.2, GLM-5), a compressed KV stream (DeepSeek-V4), ...

    One *entry* covers ``tokens_per_entry`` tokens (1: one per token; 4: one per 4 tokens).
    An entry is ``elements`` values of ``element_bytes`` each (``None``: the KV cache dtype)
    plus ``extra_bytes`` (quantisation scales, padding), as the engine lays it out.
    ``replicated``: every rank of the attention TP group holds the whole cache (else it is
    split evenly over the group).
    """

    name: str
    elements: int
    element_bytes: int | None = None
    extra_bytes: int = 0
    tokens_per_entry: int = 1
    window: int | None = None
    replicated: bool = True

    def entry_bytes(self, kv_bytes_per_element: int) -> int:
        per = self.element_bytes if self.element_bytes is not None else kv_bytes_per_element
        return self.elements * per + self.extra_bytes

    def entries_held(self, context: int, windowed: bool = True) -> int:
        """Entries a ``context``-token sequence keeps in this cache."""
        tokens = min(context, self.window) if windowed and self.window is not None else context
        return ceil(tokens / self.tokens_per_entry)


@dataclass(frozen=True)
class RecurrentState:
    """The fixed-size state a recurrent or linear-attention layer keeps per sequence
    (Mamba conv + SSM state, gated-delta-net state, short-conv state, ...).

    ``kind`` names the engine's state layout and ``dims`` the config values it is built from;
    :mod:`kvlint.model.state` turns them into bytes per GPU at a tensor-parallel degree.
    ``dtype`` is the model's state dtype where the config sets one
    (``mamba_ssm_cache_dtype``), else the engine's default.
    """

    kind: str
    dims: tuple[tuple[str, int], ...]
    dtype: str | None = None

    def dim(self, name: str, default: int | None = None) -> int:
        for key, value in self.dims:
            if key == name:
                return value
        if default is None:
            raise KeyError(name)
        return default


@dataclass(frozen=True)
class LayerGeometry:
    """One decoder layer's attention, as far as the KV cache is concerned.

    For standard attention (MHA/GQA/MQA) a token costs ``(k_head_dim + v_head_dim) *
    num_kv_heads`` elements. For MLA (``kv_lora_rank`` set) it costs one latent of
    ``kv_lora_rank + qk_rope_head_dim`` elements; ``num_kv_heads``, ``k_head_dim`` and
    ``v_head_dim`` then describe the per-head K/V that the latent expands into.
    """

    kind: LayerKind
    num_attention_heads: int = 0
    num_kv_heads: int = 0
    k_head_dim: int = 0
    v_head_dim: int = 0
    window: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    kv_shared: bool = False
    """The layer attends over another layer's cache (Gemma-3n/Gemma-4 ``num_kv_shared_layers``)
    and allocates none of its own."""
    entry_bytes: int | None = None
    """Bytes per token of the main cache in an engine's packed layout, whatever the KV dtype
    (``None``: elements x the KV dtype's bytes)."""
    extra_caches: tuple[ExtraCache, ...] = ()
    state: RecurrentState | None = None
    """Per-sequence state (recurrent / linear-attention layers, which hold no KV)."""
    generic_head_dim: int | None = None
    """MLA layers: the per-head dim a generic (non-MLA) config builder reads from the same
    config, ``head_dim`` or else ``hidden_size // num_attention_heads`` (LMDeploy's
    ``DefaultModelConfigBuilder``); the ``generic`` MLA cache stores K and V of it."""

    @property
    def attends(self) -> bool:
        """The layer runs softmax attention (over its own cache or a shared one)."""
        return self.kind is not LayerKind.NONE

    @property
    def holds_kv(self) -> bool:
        """The layer allocates a per-token cache of its own."""
        return self.kind is not LayerKind.NONE and not self.kv_shared

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None and self.holds_kv

    @property
    def is_windowed(self) -> bool:
        return self.kind in (LayerKind.SLIDING, LayerKind.CHUNKED) and self.window is not None

    @property
    def latent_dim(self) -> int:
        """Elements of the MLA latent per token (0 for non-MLA layers)."""
        if not self.is_mla:
            return 0
        return (self.kv_lora_rank or 0) + (self.qk_rope_head_dim or 0)

    @property
    def elements_per_token(self) -> int:
        """KV elements one token occupies in this layer (one logical copy)."""
        if not self.holds_kv:
            return 0
        if self.is_mla:
            return self.latent_dim
        return (self.k_head_dim + self.v_head_dim) * self.num_kv_heads


@dataclass(frozen=True)
class AttentionGeometry:
    """A model's attention layout: per-layer detail plus the summary users read.

    ``notes`` records assumptions made while resolving the config (for example a
    remote-code model with no KV-head field, which is treated as MHA).
    """

    model_type: str
    layers: tuple[LayerGeometry, ...]
    num_attention_heads: int
    dtype: str | None = None
    notes: tuple[str, ...] = ()
    default_kv_dtype: str | None = None
    """The KV cache dtype the engine picks for ``auto`` when it is not the model dtype
    (DeepSeek-V4: ``fp8``)."""
    architecture: str | None = None
    """``architectures[0]`` of the config, when it names one."""
    tp_divided: tuple[tuple[str, int, str], ...] = ()
    """Counts other than heads that the engine's model code splits evenly over tensor-parallel
    GPUs, as ``(config field, count, source)``: a tp that does not divide one is refused
    (DeepSeek-V4 ``o_groups``)."""

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @cached_property
    def kv_layers(self) -> tuple[LayerGeometry, ...]:
        return tuple(layer for layer in self.layers if layer.holds_kv)

    @property
    def num_kv_layers(self) -> int:
        return len(self.kv_layers)

    @property
    def num_shared_kv_layers(self) -> int:
        """Attention layers that reuse another layer's cache and allocate none."""
        return sum(1 for layer in self.layers if layer.attends and layer.kv_shared)

    @property
    def state_layers(self) -> tuple[LayerGeometry, ...]:
        """Layers that keep a per-sequence recurrent state."""
        return tuple(layer for layer in self.layers if layer.state is not None)

    @property
    def has_extra_caches(self) -> bool:
        return any(layer.extra_caches for layer in self.layers)

    @property
    def num_sliding_layers(self) -> int:
        """Layers whose cache is bounded by a window (sliding or chunked)."""
        return sum(1 for layer in self.layers if layer.is_windowed)

    @property
    def sliding_window(self) -> int | None:
        """The window of the windowed layers (the smallest, if they differ)."""
        windows = [layer.window for layer in self.layers if layer.is_windowed]
        return min(w for w in windows if w is not None) if windows else None

    @property
    def is_mla(self) -> bool:
        return any(layer.is_mla for layer in self.layers)

    @cached_property
    def reference_layer(self) -> LayerGeometry | None:
        """The layer that represents the model in summaries.

        The most common full-attention layer shape, else the most common KV layer shape
        (sliding-only models); ``None`` when no layer holds KV.
        """
        full = [layer for layer in self.kv_layers if layer.kind is LayerKind.FULL]
        pool = full or list(self.kv_layers)
        if not pool:
            return None
        return Counter(pool).most_common(1)[0][0]

    @property
    def num_kv_heads(self) -> int:
        ref = self.reference_layer
        return ref.num_kv_heads if ref else 0

    @property
    def head_dim(self) -> int:
        """The key head dim (MLA: qk_nope + qk_rope)."""
        ref = self.reference_layer
        return ref.k_head_dim if ref else 0

    @property
    def v_head_dim(self) -> int:
        ref = self.reference_layer
        return ref.v_head_dim if ref else 0

    @property
    def kv_lora_rank(self) -> int | None:
        ref = self.reference_layer
        return ref.kv_lora_rank if ref and ref.is_mla else None

    @property
    def qk_rope_head_dim(self) -> int | None:
        ref = self.reference_layer
        return ref.qk_rope_head_dim if ref and ref.is_mla else None

    @property
    def distinct_kv_head_counts(self) -> tuple[int, ...]:
        """Every KV-head count used by a non-MLA KV layer, ascending."""
        return tuple(sorted({la.num_kv_heads for la in self.kv_layers if not la.is_mla}))

    @property
    def attention(self) -> AttentionKind:
        ref = self.reference_layer
        if ref is None:
            return AttentionKind.NONE
        if ref.is_mla:
            return AttentionKind.MLA
        if ref.num_kv_heads == 1:
            return AttentionKind.MQA
        if ref.num_kv_heads == ref.num_attention_heads:
            return AttentionKind.MHA
        return AttentionKind.GQA

    @property
    def query_heads_per_kv_head(self) -> int | None:
        """The GQA group size of the reference layer (``None`` for MLA or no attention)."""
        ref = self.reference_layer
        if ref is None or ref.is_mla or ref.num_kv_heads == 0:
            return None
        return ref.num_attention_heads // ref.num_kv_heads
