"""Architecture families whose caches the generic resolver cannot describe alone.

The generic resolver (:mod:`kvlint.loaders.hf_config`) reads heads, head sizes, MLA latents
and the layer schedule. Each module here then *refines* that geometry from the fields its
family adds (an indexer cache, per-layer head shapes, shared-KV layers, compressed caches,
recurrent state), keyed on config fields rather than model names wherever a field says it.

A refiner takes the text part of the config and the resolved geometry and returns the
geometry unchanged when the config is not of its family. Refiners run in the order of
:data:`REFINERS`; each raises :class:`~kvlint.errors.ConfigError` for a field it needs and
cannot read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kvlint.model.geometry import AttentionGeometry

Refiner = Callable[[Mapping[str, Any], AttentionGeometry], AttentionGeometry]


def _refiners() -> tuple[Refiner, ...]:
    from kvlint.loaders.families.deepseek_v4 import refine_deepseek_v4
    from kvlint.loaders.families.gemma import refine_gemma4, refine_shared_kv
    from kvlint.loaders.families.recurrent import refine_recurrent
    from kvlint.loaders.families.sparse_indexer import refine_sparse_indexer
    from kvlint.loaders.families.zamba2 import refine_zamba2

    return (refine_sparse_indexer, refine_gemma4, refine_shared_kv, refine_zamba2,
            refine_deepseek_v4, refine_recurrent)


REFINERS: tuple[Refiner, ...] = _refiners()


def refine(config: Mapping[str, Any], geometry: AttentionGeometry) -> AttentionGeometry:
    """Apply every family refiner to ``geometry``."""
    for refiner in REFINERS:
        geometry = refiner(config, geometry)
    return geometry
