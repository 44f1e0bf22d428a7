"""What every rank of an attention tensor-parallel group holds whole (KV204's concern).

MLA latents have no head dimension to shard, and neither have the caches an engine keeps
next to them (a sparse-attention indexer's keys, a compressed KV stream) when it marks them
``replicated``: each of the ``tp`` ranks stores a full copy, ``tp - 1`` of them duplicates.
Pure functions over an :class:`~kvlint.model.geometry.AttentionGeometry`.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from kvlint.model.geometry import AttentionGeometry, LayerGeometry, LayerKind
from kvlint.units import fmt_int


def replicated_part(g: AttentionGeometry) -> AttentionGeometry:
    """What of ``g`` every rank of the attention TP group holds whole: MLA latents and the
    extra caches marked ``replicated`` (sparse-attention indexers, compressed streams). A
    GQA layer's own K/V (sharded by heads, KV201's concern) and recurrent state drop out."""
    layers = []
    for layer in g.layers:
        extras = tuple(cache for cache in layer.extra_caches if cache.replicated)
        if layer.is_mla:
            layers.append(replace(layer, extra_caches=extras, state=None))
        elif layer.holds_kv and extras:
            layers.append(replace(layer, entry_bytes=0, extra_caches=extras, state=None))
        else:
            layers.append(LayerGeometry(kind=LayerKind.NONE))
    return replace(g, layers=tuple(layers))


def exact_text(value: Fraction) -> str:
    """``69,120``; a fraction to two decimals (``1,234.56``)."""
    return fmt_int(int(value)) if value.denominator == 1 else f"{float(value):,.2f}"


def replicated_caches(part: AttentionGeometry) -> str:
    """``MLA latent is``, ``MLA latent and indexer caches are``, ``indexer and
    compressed caches are``."""
    names = (["MLA latent"] if part.is_mla else []) + sorted(
        {cache.name for layer in part.layers for cache in layer.extra_caches})
    if len(names) == 1:
        return f"{names[0]}{'' if part.is_mla else ' cache'} is"
    return f"{', '.join(names[:-1])} and {names[-1]} caches are"
