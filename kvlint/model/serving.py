"""A serving plan (how a model is deployed) and the KV analysis of a model under it."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry

DEFAULT_CONTEXT = 8192
"""Sequence length for per-sequence figures when none is given."""


@dataclass(frozen=True)
class ServingPlan:
    """Engine, parallelism, KV dtype and the workload the numbers are computed for."""

    layout: kv.ParallelLayout = field(default_factory=kv.ParallelLayout)
    kv_cache_dtype: str = "auto"
    context: int = DEFAULT_CONTEXT
    batch: int = 1
    engine: str | None = None
    engine_version: str | None = None
    gpu: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    windowed_sliding_cache: bool = True
    """Whether the engine allocates windowed caches for sliding/chunked layers (vLLM does)."""

    def __post_init__(self) -> None:
        if self.context < 1:
            raise ValueError(f"context must be a positive number of tokens, got {self.context}")
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1, got {self.batch}")


@dataclass(frozen=True)
class KvAnalysis:
    """Every KV figure kvlint reports for one model under one plan."""

    geometry: AttentionGeometry
    plan: ServingPlan
    dtype: kv.KvDtype
    footprint: kv.KvFootprint
    bytes_per_sequence: int
    """One logical copy of a ``plan.context``-token sequence."""
    bytes_per_sequence_per_gpu: int | None
    """The same sequence on the fullest GPU (``None`` when the engine refuses the tp)."""

    @property
    def bytes_per_sequence_cluster(self) -> int | None:
        """The sequence summed over the GPUs of its attention TP group, all stages."""
        return kv.bytes_per_sequence_cluster(self.geometry, self.dtype, self.plan.layout,
                                             self.plan.context,
                                             windowed=self.plan.windowed_sliding_cache)

    @property
    def duplicate_bytes_per_sequence(self) -> int | None:
        cluster = self.bytes_per_sequence_cluster
        return None if cluster is None else cluster - self.bytes_per_sequence


def analyze(geometry: AttentionGeometry, plan: ServingPlan) -> KvAnalysis:
    """Resolve the KV dtype and compute the footprint. Raises ``ValueError`` for a KV dtype
    the model cannot use."""
    dtype = kv.resolve_kv_dtype(plan.kv_cache_dtype, geometry)
    windowed = plan.windowed_sliding_cache
    return KvAnalysis(
        geometry=geometry,
        plan=plan,
        dtype=dtype,
        footprint=kv.footprint(geometry, dtype, plan.layout),
        bytes_per_sequence=kv.bytes_per_sequence(geometry, dtype, plan.context,
                                                 windowed=windowed),
        bytes_per_sequence_per_gpu=kv.bytes_per_sequence_per_gpu(
            geometry, dtype, plan.layout, plan.context, windowed=windowed),
    )
