"""``kvlint probe MODEL --trtllm-log FILE`` (or ``--engine-log`` on a TensorRT-LLM log): what a
TensorRT-LLM start-up log says its KV pool holds per token per GPU, against kvlint's
TensorRT-LLM theory, and its tokens next to kvlint's capacity (no GPU, no server).

* measured bytes per token per GPU = ``[MemUsageChange] Allocated X GiB for max tokens in
  paged KV cache (N)``: X x 2^30 / N (every primary pool over the primary blocks' tokens),
  uncertain by half the printed 0.01 GiB. Not ``kv size is N`` of the PyTorch backend's
  ``Peak memory`` line: that is TensorRT-LLM's own estimate, ``head_dim x kv // tp``, smaller
  than the pool's ``ceil(kv / tp)`` heads when tp does not divide the KV heads (it is shown
  next to kvlint's estimate of it, :func:`kvlint.model.trtllm_memory.estimate_bytes_per_token`);
* the PyTorch backend builds a small cache to profile with first: the pool compared is the
  first ``Allocated`` line after ``Peak memory``, else the last one printed;
* kvlint's capacity, when the log prints the GPU's total (``device total memory`` or the C++
  ``total:``): the plan's GPU is that total, ``free_gpu_memory_fraction`` the printed
  ``fraction is set`` (else TensorRT-LLM's 0.9), and kvlint's pool tokens (§5b of
  docs/design.md) stand next to the printed ones, with the weights, activations and the
  memory outside torch the PyTorch backend printed next to kvlint's estimates.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kvlint.errors import UsageError
from kvlint.loaders.trtllm_log import TrtllmLog
from kvlint.model.capacity import Capacity
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import ServingPlan
from kvlint.probe.log_measure import (
    FAILED_START,
    GIB,
    Printed,
    exact,
    gib,
    measurement,
    theory,
    tokens_term,
)
from kvlint.probe.result import ImplMeasurement, LogTerm

ENGINE = "trtllm"
DISPLAY = "TensorRT-LLM"


def layout(tp: int | None, pp: int | None, source: str) -> ParallelLayout:
    """TensorRT-LLM's start-up log prints no parallel layout: the options', else 1."""
    try:
        return ParallelLayout(tp=tp or 1, pp=pp or 1)
    except ValueError as err:
        raise UsageError(f"{source}: --tp/--pp: {err}") from None


def printed(log: TrtllmLog) -> Printed | None:
    """The pool's bytes per token from its ``Allocated`` line, with the rounding bounds."""
    pool = log.pool
    if pool is None or pool.tokens <= 0:
        return None
    value, half = exact(pool.raw)
    if not value:
        return Printed("Allocated X GiB for max tokens in paged KV cache", Fraction(0),
                       Fraction(0), Fraction(0), pool.tokens)
    tokens = pool.tokens
    return Printed("Allocated X GiB for max tokens in paged KV cache (N)",
                   value * GIB / tokens, (value - half) * GIB / tokens,
                   (value + half) * GIB / tokens, tokens, value * GIB)


def compare(log: TrtllmLog, geometry: AttentionGeometry, layout_: ParallelLayout, *,
            kv_cache_dtype: str, engine_version: str | None, source: str) -> ImplMeasurement:
    """The log's KV bytes per token per GPU against kvlint's TensorRT-LLM theory."""
    from kvlint.model import trtllm_memory as trt

    notes: list[str] = []
    analysis, behaviour, _ = theory(ENGINE, engine_version, geometry, layout_,
                                    kv_cache_dtype=kv_cache_dtype, source=source,
                                    notes=notes)
    details: dict[str, Any] = {
        "version_range": list(log.version_range) if log.version_range else None,
        "dated": log.dated,
        "printed": {"version": log.version,
                    "allocations": [{"gib": a.gib, "tokens": a.tokens,
                                     "after_profile": a.after_profile}
                                    for a in log.allocations[:8]],
                    "tokens_per_block": log.tokens_per_block,
                    "kv_size_estimate": log.kv_size_estimate, "fraction": log.fraction,
                    "total_gib": log.total_memory_gib}}
    pool_bytes = analysis.footprint.bytes_per_token_per_gpu
    layers = analysis.cached.kv_layers
    shapes = {(layer.num_kv_heads, layer.k_head_dim) for layer in layers}
    if log.kv_size_estimate is not None and pool_bytes and len(shapes) == 1:
        kv_heads, head_dim = shapes.pop()
        estimate = trt.estimate_bytes_per_token(pool_bytes, kv_heads, head_dim,
                                                layout_.attention_tp,
                                                mla=analysis.cached.is_mla)
        details["kv_size_estimate_kvlint"] = estimate
        notes.append(f"'kv size is {log.kv_size_estimate:,}' is TensorRT-LLM's own per-token "
                     f"estimate (kvlint's figure for it: {estimate:,}), not the pool's bytes: "
                     "the pool is measured from the Allocated line")
    if len(log.allocations) > 1 and log.pool is not None and log.pool.after_profile:
        notes.append("the first Allocated line(s) are the PyTorch backend's temporary cache "
                     "for its memory profile: the pool after 'Peak memory' is compared")
    return measurement(ENGINE, analysis, behaviour, printed(log), source=source,
                       details=details, notes=notes + list(log.notes),
                       missing=FAILED_START if log.oom is not None else
                       "the log prints no '[MemUsageChange] Allocated X GiB for max tokens in "
                       "paged KV cache (N)' line: nothing to compare")


def plan(log: TrtllmLog, layout_: ParallelLayout, *, kv_cache_dtype: str,
         engine_version: str | None, gpu_memory_gib: float | None, fraction: float | None,
         source: str, notes: list[str]) -> ServingPlan:
    """The plan the logged server ran: the printed total and fraction, the options where
    given."""
    from kvlint.model.gpu_memory import gpu_memory_bytes

    sizing: dict[str, Any] = {}
    total = gpu_memory_gib or log.total_memory_gib
    try:
        if total is not None:
            sizing["gpu_memory_bytes"] = gpu_memory_bytes(total)
            sizing["gpu_memory_source"] = "--gpu-memory" if gpu_memory_gib else \
                "the log (device total memory)"
        else:
            notes.append("the log prints no GPU total (device total memory / total:): give "
                         "--gpu-memory GIB for kvlint's capacity next to the printed tokens")
        return ServingPlan(layout=layout_, kv_cache_dtype=kv_cache_dtype, engine=ENGINE,
                           engine_version=engine_version,
                           gpu_memory_utilization=fraction or log.fraction
                           or log.config_fraction, **sizing)
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from None


def terms(log: TrtllmLog, capacity: Capacity | None) -> tuple[LogTerm, ...]:
    """TensorRT-LLM's printed start-up memory next to kvlint's prediction, term by term."""
    pool = log.pool
    return (
        LogTerm("device total memory", "GiB", log.total_memory_gib,
                None if capacity is None else gib(capacity.gpu.memory_bytes), True),
        LogTerm("model weights (inside torch)", "GiB", log.weights_gib,
                None if capacity is None else gib(capacity.weight_bytes_per_gpu),
                estimated=capacity is not None and capacity.weights_estimated),
        LogTerm("available KV cache memory", "GiB", log.profiled_available_gib,
                None if capacity is None else gib(capacity.kv_budget_bytes_per_gpu), True),
        LogTerm("KV pool (Allocated ... paged KV cache)", "GiB",
                None if pool is None else pool.gib, None),
        tokens_term("max tokens in paged KV cache", None if pool is None else pool.tokens,
                    None if capacity is None else capacity.max_tokens),
    )
