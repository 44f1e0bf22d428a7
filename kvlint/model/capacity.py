"""GPU capacity and the decode roofline (DESIGN §3). Pure arithmetic over a KV analysis.

    budget      = gpu_memory x gpu_memory_utilization - weights_per_gpu - overhead
                  (engines whose fraction applies to the memory left after weights, like
                  TensorRT-LLM's kv_cache_free_gpu_memory_fraction:
                  (gpu_memory - weights_per_gpu - overhead) x fraction)
    max_tokens  = budget // bytes_per_token_per_gpu
    max_seqs(L) = budget // bytes of one L-token sequence on the fullest GPU
                  (equal to max_tokens // L without windowed layers; windows make it larger)
    decode step = weights read + batch x sequence bytes, per GPU of the TP group, over all
                  pipeline stages; TPOT floor = step bytes / HBM bandwidth
    crossover   = weights read / sequence bytes: the batch above which KV reads exceed
                  weight reads
"""

from __future__ import annotations

from dataclasses import dataclass

from kvlint.model import kv
from kvlint.model.serving import KvAnalysis

GIB = 1024**3
DEFAULT_OVERHEAD_BYTES = 2 * GIB
"""Per-GPU memory kvlint reserves for activations, CUDA graphs, the CUDA context and
communication buffers when no ``--overhead`` is given (vLLM profiles it at start-up; 2 GiB
is typical for 7B-70B models at the default batch limits)."""


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_bytes: int
    bandwidth_bytes_per_s: float


@dataclass(frozen=True)
class Capacity:
    """Whether weights and KV fit, and how fast decode can be, on one GPU of the plan."""

    gpu: GpuSpec
    gpu_memory_utilization: float
    fraction_of_free_memory: bool
    weight_bytes_per_gpu: int
    weights_estimated: bool
    weights_source: str
    overhead_bytes: int
    kv_budget_bytes_per_gpu: int
    """May be negative: the weights (and overhead) alone exceed the usable memory."""
    max_tokens: int
    context: int
    max_sequences: int | None
    decode_weight_bytes_per_gpu: int
    """Weights one decode step reads on one GPU at ``batch`` (MoE: the experts touched)."""
    batch: int
    decode_context: int
    """The sequence length of the decode roofline (``plan.context``)."""
    sequence_bytes_per_rank: int
    """One ``decode_context``-token sequence on one TP rank, over all pipeline stages."""
    tpot_floor_ms: float | None
    crossover_batch: float | None

    @property
    def usable_bytes(self) -> int:
        return int(self.gpu.memory_bytes * self.gpu_memory_utilization)

    @property
    def weights_fit(self) -> bool:
        return self.weight_bytes_per_gpu <= self.usable_bytes


def kv_budget(gpu: GpuSpec, utilization: float, weights: int, overhead: int,
              fraction_of_free_memory: bool = False) -> int:
    if fraction_of_free_memory:
        return int((gpu.memory_bytes - weights - overhead) * utilization)
    return int(gpu.memory_bytes * utilization) - weights - overhead


def sequence_bytes_per_gpu(a: KvAnalysis, context: int) -> int | None:
    """One ``context``-token sequence on the fullest GPU under the analysis' plan."""
    return kv.bytes_per_sequence_per_gpu(
        a.cached, a.dtype, a.plan.layout, context, windowed=a.plan.windowed_sliding_cache,
        sharding=a.plan.behaviour.kv_sharding)


def longest_fitting_context(a: KvAnalysis, budget: int, upper: int) -> int:
    """The largest context ``L <= upper`` whose sequence fits ``budget`` on the fullest GPU
    (0 when not even one token fits)."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        need = sequence_bytes_per_gpu(a, mid)
        if need is not None and need <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def capacity(
    a: KvAnalysis,
    gpu: GpuSpec,
    *,
    weight_bytes_per_gpu: int,
    decode_weight_bytes_per_gpu: int,
    weights_estimated: bool,
    weights_source: str,
    gpu_memory_utilization: float,
    fraction_of_free_memory: bool = False,
    overhead_bytes: int = DEFAULT_OVERHEAD_BYTES,
) -> Capacity | None:
    """Capacity of one GPU of the plan; ``None`` when the engine refuses the tp."""
    per_token = a.footprint.bytes_per_token_per_gpu
    context = a.plan.max_model_len or a.plan.context
    per_seq = sequence_bytes_per_gpu(a, context)
    if per_token is None or per_seq is None:
        return None
    budget = kv_budget(gpu, gpu_memory_utilization, weight_bytes_per_gpu, overhead_bytes,
                       fraction_of_free_memory)
    usable = max(budget, 0)
    tp = a.plan.layout.attention_tp
    cluster_seq = kv.bytes_per_sequence_cluster(
        a.cached, a.dtype, a.plan.layout, a.plan.context,
        windowed=a.plan.windowed_sliding_cache, sharding=a.plan.behaviour.kv_sharding)
    seq_rank = (cluster_seq or 0) // tp
    stages = a.plan.layout.pp
    step_weights = decode_weight_bytes_per_gpu * stages
    step = step_weights + a.plan.batch * seq_rank
    bandwidth = gpu.bandwidth_bytes_per_s
    return Capacity(
        gpu=gpu,
        gpu_memory_utilization=gpu_memory_utilization,
        fraction_of_free_memory=fraction_of_free_memory,
        weight_bytes_per_gpu=weight_bytes_per_gpu,
        weights_estimated=weights_estimated,
        weights_source=weights_source,
        overhead_bytes=overhead_bytes,
        kv_budget_bytes_per_gpu=budget,
        max_tokens=usable // per_token if per_token else 0,
        context=context,
        max_sequences=usable // per_seq if per_seq else None,
        decode_weight_bytes_per_gpu=decode_weight_bytes_per_gpu,
        batch=a.plan.batch,
        decode_context=a.plan.context,
        sequence_bytes_per_rank=seq_rank,
        tpot_floor_ms=step / bandwidth * 1000 if bandwidth else None,
        crossover_batch=step_weights / seq_rank if seq_rank else None,
    )
