"""What a probe measured, as plain frozen data (no torch): the ``probe`` block of a result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kvlint.model.probe_thresholds import CACHE_CAUSE as CACHE_CAUSE
from kvlint.model.probe_thresholds import ERROR_RATIO as ERROR_RATIO
from kvlint.model.probe_thresholds import STATIC_CACHE as STATIC_CACHE
from kvlint.model.probe_thresholds import WARNING_RATIO as WARNING_RATIO

Verdict = Literal["ok", "warning", "error"]
Method = Literal["dispatch", "timing", "ncu", "metrics", "log"]


def verdict(ratio: float | None, warning: float = WARNING_RATIO,
            error: float = ERROR_RATIO) -> Verdict:
    """``ok`` below ``warning``, ``warning`` below ``error``, else ``error``."""
    if ratio is None or ratio < warning:
        return "ok"
    return "warning" if ratio < error else "error"


def ratio(measured: int | float | None, theory: int | float | None) -> float | None:
    """``measured / theory``, or ``None`` when either is unknown (or theory is 0)."""
    if measured is None or not theory:
        return None
    return measured / theory


@dataclass(frozen=True)
class Materialization:
    """An op that wrote more KV elements than the unique KV it read (a copy that expands
    K/V heads, an up-projection of a latent...)."""

    op: str
    amplification: float
    """Output elements / unique KV elements read."""
    bytes: int
    """Bytes the op wrote, summed over its calls."""
    calls: int = 1
    module: str | None = None
    """The module it ran in (``model.layers.0.self_attn``), when known."""


@dataclass(frozen=True)
class RecordedSdpa:
    """One ``scaled_dot_product_attention`` call as the probe saw it."""

    query_shape: tuple[int, ...]
    key_shape: tuple[int, ...]
    value_shape: tuple[int, ...]
    dtype: str
    enable_gqa: bool
    has_mask: bool
    is_causal: bool


@dataclass(frozen=True)
class SdpaCall:
    """Identical SDPA calls and the CUDA kernel PyTorch would pick for them."""

    call: RecordedSdpa
    cuda_backend: str
    """``flash`` | ``efficient`` | ``math``: what PyTorch would pick on the chosen GPU."""
    materializes: bool
    """Whether that backend copies K/V to the query-head count."""
    reason: str
    calls: int = 1


@dataclass(frozen=True)
class ImplMeasurement:
    """One attention implementation probed at one context and batch."""

    impl: str
    dtype: str
    theory_read_bytes: int
    measured_read_bytes: int | None
    theory_cache_bytes: int
    measured_cache_bytes: int | None
    materializations: tuple[Materialization, ...] = ()
    cache_traffic_read_bytes: int | None = None
    """KV bytes read to manage the cache (DynamicCache's ``torch.cat`` of the whole history,
    a static cache's ``index_copy_``): real traffic, reported apart from attention reads."""
    cache_traffic_write_bytes: int | None = None
    sdpa_calls: tuple[SdpaCall, ...] = ()
    seconds: float | None = None
    """Wall time of the measured step (CPU) or of the fit's longest context (GPU)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Method-specific figures (the timing fit, the engine's metrics labels...)."""
    notes: tuple[str, ...] = ()
    skipped: str | None = None
    """Why this implementation was not measured (not installed, no CUDA...)."""

    @classmethod
    def unmeasured(cls, impl: str, dtype: str, theory_read_bytes: int,
                   theory_cache_bytes: int, reason: str) -> ImplMeasurement:
        """An implementation that was not measured, and why."""
        return cls(impl, dtype, theory_read_bytes, None, theory_cache_bytes, None,
                   skipped=reason)

    @property
    def read_ratio(self) -> float | None:
        return ratio(self.measured_read_bytes, self.theory_read_bytes)

    @property
    def cache_ratio(self) -> float | None:
        return ratio(self.measured_cache_bytes, self.theory_cache_bytes)

    @property
    def worst_ratio(self) -> float | None:
        known = [r for r in (self.read_ratio, self.cache_ratio) if r is not None]
        return max(known) if known else None

    @property
    def verdict(self) -> Verdict:
        return verdict(self.worst_ratio)


Unit = Literal["GiB", "tokens", "x"]


@dataclass(frozen=True)
class LogTerm:
    """One term of vLLM's memory profile: as the log printed it and as kvlint predicts it."""

    term: str
    """The engine's own words for it."""
    unit: Unit
    printed: float | None
    """``None``: the log does not print it."""
    predicted: float | None
    """``None``: kvlint could not predict it (no GPU memory total, no config dimensions)."""
    estimated: bool = False
    """kvlint estimates this term (vLLM measures it while profiling)."""

    @property
    def error(self) -> float | None:
        """``(predicted - printed) / printed``."""
        if self.printed is None or self.predicted is None or not self.printed:
            return None
        return (self.predicted - self.printed) / self.printed


@dataclass(frozen=True)
class ProbeReport:
    """The ``probe`` block of one result: every implementation at one context and batch."""

    device: str
    method: Method
    context: int
    batch: int
    layers: int
    impls: tuple[ImplMeasurement, ...]
    built: str = ""
    """What was built and run (layers, what was replaced), in words."""
    notes: tuple[str, ...] = ()
    terms: tuple[LogTerm, ...] = ()
    """``--vllm-log``: the log's memory profile against kvlint's, term by term."""
    out_of_memory: str | None = None
    """A start-up log's out-of-memory error, as printed: the start failed."""
