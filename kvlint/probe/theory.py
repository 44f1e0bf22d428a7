"""What one decode step must read, and what the cache must hold, per the geometry (pure).

A decode step at context ``L`` appends token ``L`` and attends over ``L + 1`` tokens, so the
theory counts ``L + 1`` tokens (a windowed layer: at most its window). MLA counts the latent
(``kv_lora_rank + qk_rope_head_dim``): an absorbed kernel reads nothing else, and the latent is
all a cache needs. The probe compares measured bytes with these figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvlint.model.geometry import AttentionGeometry, LayerGeometry
from kvlint.model.kv import tokens_held

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a torch dtype name (``bfloat16`` -> 2)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unsupported probe dtype {dtype!r}: expected one of "
                         f"{', '.join(DTYPE_BYTES)}") from None


def probed_layers(geometry: AttentionGeometry, layers: int) -> tuple[LayerGeometry, ...]:
    """The first ``layers`` decoder layers (those the probe builds)."""
    if layers < 1:
        raise ValueError("--layers must be at least 1")
    return geometry.layers[:layers]


def layer_bytes_per_token(layer: LayerGeometry, element_bytes: int) -> int:
    """Bytes one token needs in ``layer``: K+V of its KV heads, or the MLA latent."""
    return layer.elements_per_token * element_bytes


@dataclass(frozen=True)
class Theory:
    """The theory of one decode step over the probed layers."""

    read_bytes: int
    """KV bytes attention must read: every held token of every probed layer, per sequence."""
    cache_bytes: int
    """KV bytes the cache must hold after the step (the same tokens)."""
    bytes_per_token: int
    """Bytes per token over the probed layers (no window applied)."""
    tokens: int
    """Tokens attended by a full-attention layer (context + 1)."""


@dataclass(frozen=True)
class TheoryCurve:
    """The theory the GPU paths compare with, over the contexts they measure at."""

    bytes_per_token: int
    """Bytes per token over the probed layers (what a slope is compared with)."""
    read_bytes_at: Callable[[int], int]
    """:attr:`Theory.read_bytes` at a context."""
    cache_bytes_at: Callable[[int], int]
    """:attr:`Theory.cache_bytes` at a context."""


def decode_step(geometry: AttentionGeometry, *, context: int, batch: int, layers: int,
                dtype: str) -> Theory:
    """Theory for one decode step at ``context`` cached tokens and ``batch`` sequences."""
    if context < 1 or batch < 1:
        raise ValueError("context and batch must be at least 1")
    element = dtype_bytes(dtype)
    chosen = probed_layers(geometry, layers)
    tokens = context + 1
    held = sum(tokens_held(layer, tokens) * layer_bytes_per_token(layer, element)
               for layer in chosen)
    per_token = sum(layer_bytes_per_token(layer, element) for layer in chosen)
    return Theory(read_bytes=held * batch, cache_bytes=held * batch,
                  bytes_per_token=per_token, tokens=tokens)
