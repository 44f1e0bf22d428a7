"""Attention geometry: what each layer of a model stores in its KV cache.

Pure data, no I/O. A geometry is built by ``kvlint.loaders.hf_config`` from a ``config.json``
and consumed by the KV arithmetic (``kvlint.model.kv``) and the rules.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum
from functools import cached_property


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

    @property
    def holds_kv(self) -> bool:
        return self.kind is not LayerKind.NONE

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
