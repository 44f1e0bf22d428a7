"""``kvlint probe MODEL --lmdeploy-log FILE`` (or ``--engine-log`` on an LMDeploy log): what an
LMDeploy start-up log says its KV cache holds per token per GPU, against kvlint's LMDeploy
theory, and its tokens next to kvlint's capacity (no GPU, no server).

* TurboMind prints one block's bytes on one GPU, ``[BlockManager] block_size = X MB`` (to
  0.14): measured bytes per token = X MiB / ``cache_block_seq_len`` (from the
  ``backend_config`` line, the ``turbomind model config`` JSON or TurboMind's default
  warning; 64, LMDeploy's default, when none prints it), uncertain by the printed rounding
  (whole MiB rounded down up to 0.7: X to X + 1 MiB);
* the PyTorch engine prints no block bytes at INFO; with ``--log-level DEBUG`` it prints the
  free memory after the weights and its runtime reserve (``minimal free gpu memory: F mb``,
  ``estimated max runtime memory: R mb``, both ``>> 20``), and ``num_gpu_blocks = int((F - R)
  x cache_max_entry_count / block bytes)``: a block's bytes lie between budget / (N + 1) and
  budget / N, so bytes per token = that over ``block_size`` (the ``CacheConfig`` line), with
  those bounds and the MiB truncation. Linear-attention / SSM state, reserved first from
  0.11, is not in that budget: such a model's figure is noted, not trusted;
* tokens = blocks x tokens per block (``max cached tokens`` where TurboMind prints it);
  kvlint's capacity next to them when the log prints the free memory after the weights (the
  PyTorch DEBUG line): the plan's GPU is then that free memory plus kvlint's weights and
  start-up context, so kvlint's budget starts from the same free memory; or from
  ``--gpu-memory``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kvlint.errors import UsageError
from kvlint.loaders.lmdeploy_log import LmdeployLog
from kvlint.model.capacity import Capacity
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import EngineStart, ServingPlan
from kvlint.probe.log_measure import (
    FAILED_START,
    MIB,
    Printed,
    exact,
    gib,
    measurement,
    theory,
    tokens_term,
)
from kvlint.probe.result import ImplMeasurement, LogTerm

ENGINE = "lmdeploy"
DISPLAY = "LMDeploy"
DEFAULT_BLOCK_SEQ_LEN = 64
"""``--cache-block-seq-len`` / ``block_size`` by default (kvlint/model/lmdeploy_memory.py)."""
_QUANT_POLICY = {16: "fp8", 17: "fp8_e5m2"}
"""LMDeploy ``quant_policy`` -> kvlint's ``--kv-cache-dtype`` (messages.py ``QuantPolicy``;
4 and 8, int4/int8 KV, have no kvlint dtype)."""


def kv_cache_dtype(requested: str, log: LmdeployLog) -> str:
    """The KV dtype: the option's, else the printed ``quant_policy``'s (0: the model's)."""
    if requested.strip().lower() != "auto":
        return requested
    return _QUANT_POLICY.get(log.quant_policy or 0, "auto")


def layout(log: LmdeployLog, tp: int | None, source: str) -> ParallelLayout:
    try:
        return ParallelLayout(tp=tp or log.tp or 1)
    except ValueError as err:
        raise UsageError(f"{source}: tp: {err}") from None


def _block_tokens(log: LmdeployLog, notes: list[str]) -> int:
    tokens = log.block_tokens
    if tokens and tokens > 0:
        return tokens
    notes.append(f"the log prints no tokens per block: LMDeploy's default "
                 f"{DEFAULT_BLOCK_SEQ_LEN} used")
    return DEFAULT_BLOCK_SEQ_LEN


def printed(log: LmdeployLog, notes: list[str]) -> Printed | None:
    """Bytes per token per GPU from the block size (TurboMind) or the budget over the blocks
    (PyTorch engine, DEBUG lines), with their bounds."""
    if log.backend == "turbomind" and log.block_mib_raw is not None:
        block = _block_tokens(log, notes)
        value, half = exact(log.block_mib_raw)
        low, high = (value, value + 1) if log.block_mib_whole else (value - half, value + half)
        mid = (low + high) / 2 if log.block_mib_whole else value
        blocks = log.gpu_blocks or 0
        return Printed(f"TurboMind block_size = {log.block_mib_raw} MB over {block} tokens",
                       mid * MIB / block, low * MIB / block, high * MIB / block,
                       log.kv_tokens or blocks * block)
    count, ratio = log.gpu_blocks, log.cache_max_entry_count
    if log.backend == "pytorch" and log.free_mib is not None and log.runtime_mib is not None \
            and count and ratio:
        blocks = count
        block = _block_tokens(log, notes)
        free, runtime = Fraction(log.free_mib), Fraction(log.runtime_mib)
        share = Fraction(ratio)
        budget = (free - runtime) * share * MIB
        low_budget, high_budget = (free - runtime - 1) * share * MIB, (free + 1 - runtime) * \
            share * MIB
        if budget <= 0 or low_budget <= 0:
            return None
        return Printed(f"(free {log.free_mib:g} - runtime {log.runtime_mib:g} MiB) x {ratio:g} "
                       f"over {blocks:,} blocks of {block} tokens",
                       budget / (blocks * block), low_budget / ((blocks + 1) * block),
                       high_budget / (blocks * block), blocks * block)
    return None


def compare(log: LmdeployLog, geometry: AttentionGeometry, layout_: ParallelLayout, *,
            kv_cache_dtype_: str, engine_version: str | None, source: str) -> ImplMeasurement:
    """The log's KV bytes per token per GPU against kvlint's LMDeploy theory."""
    notes: list[str] = []
    analysis, behaviour, _ = theory(ENGINE, engine_version, geometry, layout_,
                                    kv_cache_dtype=kv_cache_dtype_, source=source,
                                    notes=notes, backend=log.backend)
    details: dict[str, Any] = {
        "backend": log.backend,
        "version_range": list(log.version_range) if log.version_range else None,
        "dated": log.dated,
        "printed": {"block_mib": log.block_mib, "gpu_blocks": log.gpu_blocks,
                    "block_tokens": log.block_tokens, "kv_tokens": log.kv_tokens,
                    "free_mib": log.free_mib, "runtime_mib": log.runtime_mib,
                    "cache_max_entry_count": log.cache_max_entry_count,
                    "backend_config": dict(log.backend_args),
                    "cache_config": dict(log.cache_config)}}
    if log.quant_policy in (4, 8):
        notes.append(f"quant_policy={log.quant_policy} (int{log.quant_policy} KV cache): kvlint "
                     "has no such KV dtype, its theory is the model dtype's")
    if log.out_of_memory:
        notes.append(f"LMDeploy failed at start: {log.out_of_memory}")
    if analysis.state_bytes_per_sequence_per_gpu and log.backend == "pytorch":
        notes.append("this model keeps a recurrent state, which LMDeploy reserves before the "
                     "KV blocks: the budget over the blocks overstates a block's bytes")
    missing = ("the log prints no block size in bytes: TurboMind's '[BlockManager] block_size "
               "= X MB' (up to 0.14), or the PyTorch engine's DEBUG lines 'minimal free gpu "
               "memory' and 'estimated max runtime memory' with its CacheConfig (run "
               "lmdeploy serve with --log-level DEBUG): nothing to compare")
    return measurement(ENGINE, analysis, behaviour, printed(log, notes), source=source,
                       details=details, notes=notes + list(log.notes),
                       missing=FAILED_START if log.oom is not None else missing)


def plan(log: LmdeployLog, layout_: ParallelLayout, *, kv_cache_dtype_: str,
         engine_version: str | None, gpu_memory_bytes_: int | None, fraction: float | None,
         source: str) -> ServingPlan:
    """The plan the logged server ran (``gpu_memory_bytes_``: the GPU kvlint sizes, from
    the printed free memory or the option)."""
    sizing: dict[str, Any] = {}
    if gpu_memory_bytes_ is not None:
        sizing["gpu_memory_bytes"] = gpu_memory_bytes_
        sizing["gpu_memory_source"] = "the log (free gpu memory after the weights, plus " \
            "kvlint's weights and start-up context)" if log.free_mib is not None \
            else "--gpu-memory"
    try:
        return ServingPlan(layout=layout_, kv_cache_dtype=kv_cache_dtype_, engine=ENGINE,
                           engine_version=engine_version,
                           gpu_memory_utilization=fraction or log.cache_max_entry_count,
                           engine_start=EngineStart(backend=log.backend), **sizing)
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from None


def terms(log: LmdeployLog, capacity: Capacity | None, context_bytes: int
          ) -> tuple[LogTerm, ...]:
    """LMDeploy's printed start-up memory next to kvlint's prediction, term by term."""
    free = None
    if capacity is not None:
        free = capacity.gpu.memory_bytes - context_bytes - capacity.weight_bytes_per_gpu
    return (
        LogTerm("free gpu memory after the weights", "GiB",
                None if log.free_mib is None else round(log.free_mib / 1024, 2), gib(free),
                True),
        LogTerm("KV budget (free - runtime) x cache_max_entry_count", "GiB",
                None if log.free_mib is None or log.runtime_mib is None
                or not log.cache_max_entry_count
                else round((log.free_mib - log.runtime_mib) * log.cache_max_entry_count
                           / 1024, 2),
                None if capacity is None else gib(capacity.kv_budget_bytes_per_gpu), True),
        tokens_term("KV cache tokens (blocks x block tokens)", log.kv_tokens,
                    None if capacity is None else capacity.max_tokens),
    )
