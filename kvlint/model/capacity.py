"""GPU capacity and the decode roofline (docs/design.md §5). Pure arithmetic over a KV analysis.

    budget      = gpu_memory x gpu_memory_utilization - weights_per_gpu - overhead
                  (vLLM: overhead = its start-up profile's peak activation + non-torch
                  memory + CUDA graphs (+ the extensible KV cache's margin from 0.34.0),
                  kvlint/model/memory.py, and max_tokens counts whole 16-token blocks,
                  64-token from 0.34.0)
                  (engines whose fraction applies to the memory left after weights, like
                  TensorRT-LLM's kv_cache_free_gpu_memory_fraction:
                  (gpu_memory - weights_per_gpu - overhead) x fraction)
    seq(L)      = KV of one L-token sequence on the fullest GPU (windowed layers keep their
                  window, compressed caches one entry per tokens_per_entry tokens)
                  + its recurrent state (Mamba / linear-attention layers: one state per
                  running sequence, whatever L)
    max_seqs(L) = budget // seq(L), L = max_model_len
    max_tokens  = budget // bytes_per_token_per_gpu (the exact per-token figure: a fraction
                  for compressed caches), for models without recurrent state;
                  with recurrent state: floor(budget x L / seq(L)), the tokens that
                  max_seqs(L) (unrounded) full-length sequences hold. That is vLLM's own
                  "KV cache size: N tokens" = max concurrency x max_model_len
                  (v1/core/kv_cache_utils.py ``get_kv_cache_capacity``, vLLM 0.33.0);
                  budget // bytes per token would count memory the states take as tokens.
    decode step = weights read + batch x sequence bytes, per GPU of the TP group, over all
                  pipeline stages; TPOT floor = step bytes / HBM bandwidth
    crossover   = weights read / sequence bytes: the batch above which KV reads exceed
                  weight reads

vLLM 0.33 takes attention pages and Mamba state pages from one pool of equal-size blocks
(``get_max_concurrency_for_kv_cache_config``: a request at max_model_len needs its attention
blocks plus one state page per Mamba layer group). Not modelled: the page unification that
pads each Mamba page to the attention page size (``Platform._align_hybrid_block_size``: at
most one kernel block of attention tokens per Mamba layer), the rounding of L up to the
enlarged block size, and the extra state pages vLLM charges per request with prefix caching
on (``MambaSpec.max_memory_usage_bytes`` in ``align`` mode: 2 + checkpoint + speculative
pages) or speculative decoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import floor

from kvlint.model import kv
from kvlint.model.memory import MemoryTerms
from kvlint.model.serving import KvAnalysis
from kvlint.model.serving import sequence_bytes_per_gpu as serving_sequence_bytes

GIB = 1024**3
DEFAULT_OVERHEAD_BYTES = 2 * GIB
"""Per-GPU memory kvlint reserves for activations, CUDA graphs, the CUDA context and
communication buffers when no ``--overhead`` is given and the engine's profile is not
modelled (vLLM's is: kvlint/model/memory.py)."""


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_bytes: int
    bandwidth_bytes_per_s: float | None
    """``None``: unknown (a GPU given only by its memory): no decode roofline."""


@dataclass(frozen=True)
class KvPool:
    """One of an engine's KV pools on one GPU (TensorRT-LLM: one per attention window)."""

    window: int
    """The tokens a sequence keeps in it (max_seq_len for full attention)."""
    layers: int
    bytes_per_token: int
    """Its layers' bytes per token, together."""
    blocks: int
    tokens: int


@dataclass(frozen=True)
class KvPoolSet:
    """The KV pools an engine builds on one GPU under one setting."""

    setting: str
    """What the pools follow (``kv_cache_config.max_attention_window: [...]``)."""
    assumed: bool
    """Whether kvlint sizes this one (``max_tokens``/``max_sequences``); else the other
    setting's pools, for comparison."""
    note: str
    pools: tuple[KvPool, ...]
    tokens: int
    """What the engine prints as its tokens: every pool's, summed."""
    max_sequences: int
    """Sequences of ``max_seq_len`` that fit every pool at once."""
    max_seq_len: int
    tokens_per_block: int


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
    """See the module docstring: with recurrent state, the tokens ``max_sequences`` full-length
    sequences hold."""
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
    bytes_per_sequence_per_gpu: int = 0
    """One ``context``-token sequence on the fullest GPU, recurrent state included."""
    state_bytes_per_sequence_per_gpu: int = 0
    """The recurrent-state part of it (0 without recurrent layers)."""
    memory: MemoryTerms | None = None
    """vLLM's start-up profile term by term (kvlint/model/memory.py) when the overhead was
    modelled rather than given (``--overhead``); ``overhead_bytes`` is then its sum."""
    kv_tokens_capped_by: str | None = None
    """Where a cap on the KV pool's tokens that binds was set (SGLang ``--max-total-tokens``:
    ``max_tokens`` is that cap, below what the budget holds)."""
    kv_budget_source: str | None = None
    """Set when the KV budget is given rather than derived (vLLM ``--kv-cache-memory-bytes``:
    the engine reserves exactly that, without a memory profile or gpu_memory_utilization):
    where it was given."""
    fraction_name: str = "gpu_memory_utilization"
    """What the engine calls ``gpu_memory_utilization`` (SGLang: ``mem_fraction_static``, a
    fraction of the memory free at start)."""
    block_size: int | None = None
    """The KV block in tokens where the engine allocates and checks whole blocks (vLLM:
    ``max_memory_usage_bytes`` counts ``cdiv(max_model_len, block_size)`` pages,
    v1/core/kv_cache_utils.py@v0.11.0 lines 633-723); ``None``: counted per token."""
    kv_pools: tuple[KvPoolSet, ...] = ()
    """An engine with one pool per attention window (TensorRT-LLM, a model with sliding
    windows): the pools kvlint sizes first, then those of the other setting."""

    def sequence_tokens(self, length: int) -> int:
        """The tokens a ``length``-token sequence is allocated: whole blocks."""
        block = self.block_size
        return -(-length // block) * block if block else length

    @property
    def kv_overflow_bytes(self) -> int:
        """A given KV budget's excess over the GPU beside the weights (0 when it fits or
        when the budget is derived)."""
        if self.kv_budget_source is None:
            return 0
        return max(0, self.weight_bytes_per_gpu + self.kv_budget_bytes_per_gpu
                   - self.gpu.memory_bytes)

    @property
    def max_concurrency(self) -> float | None:
        """vLLM's "Maximum concurrency for L tokens per request": tokens over ``context``."""
        if not self.context or self.kv_budget_bytes_per_gpu <= 0:
            return None
        if self.state_bytes_per_sequence_per_gpu and self.bytes_per_sequence_per_gpu:
            return self.kv_budget_bytes_per_gpu / self.bytes_per_sequence_per_gpu
        return self.max_tokens / self.context

    @property
    def kv_bytes_per_sequence_per_gpu(self) -> int:
        """The KV part of :attr:`bytes_per_sequence_per_gpu`."""
        return self.bytes_per_sequence_per_gpu - self.state_bytes_per_sequence_per_gpu

    @property
    def usable_bytes(self) -> int:
        """The memory the weights must fit in: the fraction of it where the engine's fraction
        is of the whole GPU (vLLM, SGLang), the whole GPU where it is of the memory the
        weights leave (TensorRT-LLM, LMDeploy)."""
        return usable_bytes(self.gpu, self.gpu_memory_utilization,
                            self.fraction_of_free_memory)

    @property
    def weights_fit(self) -> bool:
        return self.weight_bytes_per_gpu <= self.usable_bytes


def usable_bytes(gpu: GpuSpec, utilization: float, fraction_of_free_memory: bool) -> int:
    """See :attr:`Capacity.usable_bytes`."""
    return gpu.memory_bytes if fraction_of_free_memory else int(gpu.memory_bytes * utilization)


def kv_budget(gpu: GpuSpec, utilization: float, weights: int, overhead: int,
              fraction_of_free_memory: bool = False) -> int:
    if fraction_of_free_memory:
        return int((gpu.memory_bytes - weights - overhead) * utilization)
    return int(gpu.memory_bytes * utilization) - weights - overhead


def fit(budget: int, *, per_token: Fraction | int, kv_sequence_bytes: int, state_bytes: int,
        context: int) -> tuple[int, int | None]:
    """``(max_tokens, max_sequences)`` for a per-GPU ``budget`` (negative: none).

    ``per_token``: KV bytes per token per GPU (exact); ``kv_sequence_bytes``: the KV of one
    ``context``-token sequence; ``state_bytes``: its recurrent state (one per running
    sequence). ``max_sequences`` is ``None`` when a sequence costs nothing."""
    usable = max(budget, 0)
    sequence = kv_sequence_bytes + state_bytes
    sequences = usable // sequence if sequence else None
    if state_bytes:
        return usable * context // sequence, sequences
    return (floor(usable / Fraction(per_token)) if per_token else 0), sequences


def sequence_bytes_per_gpu(a: KvAnalysis, context: int) -> int | None:
    """One ``context``-token sequence on the fullest GPU under the analysis' plan, its
    recurrent state included."""
    return serving_sequence_bytes(a.cached, a.dtype, a.plan, a.plan.layout, context)


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


@dataclass(frozen=True)
class GpuWeights:
    """The weights one GPU of the plan holds."""

    bytes_per_gpu: int
    decode_bytes_per_gpu: int
    """What one decode step reads (MoE: the active experts)."""
    estimated: bool
    source: str


@dataclass(frozen=True)
class Sizing:
    """How the engine sizes its KV budget on one GPU."""

    gpu_memory_utilization: float
    fraction_of_free_memory: bool = False
    overhead_bytes: int = DEFAULT_OVERHEAD_BYTES
    memory: MemoryTerms | None = None
    """vLLM's start-up profile (kvlint/model/memory.py): its terms replace
    ``overhead_bytes``, and tokens count whole blocks of the version's default size."""
    given_budget: tuple[int, str, int] | None = None
    """``(bytes, where given, block size)`` of a KV budget set by hand (vLLM
    ``--kv-cache-memory-bytes``), which replaces the derived one."""
    token_cap: tuple[int, str] | None = None
    """``(tokens, where given)`` of a cap on the pool's tokens (SGLang
    ``--max-total-tokens``: the pool holds the smaller of it and what the budget holds; not
    applied to models with recurrent state, whose pools SGLang splits otherwise)."""


def capacity(a: KvAnalysis, gpu: GpuSpec, weights: GpuWeights, sizing: Sizing
             ) -> Capacity | None:
    """Capacity of one GPU of the plan; ``None`` when the engine refuses the tp
    (:class:`Sizing` says how the budget is derived)."""
    weight_bytes_per_gpu = weights.bytes_per_gpu
    gpu_memory_utilization = sizing.gpu_memory_utilization
    fraction_of_free_memory = sizing.fraction_of_free_memory
    overhead_bytes = sizing.overhead_bytes
    memory, given_budget, token_cap = sizing.memory, sizing.given_budget, sizing.token_cap
    per_token = a.footprint.bytes_per_token_per_gpu_exact
    context = a.plan.max_model_len or a.plan.context
    per_seq = sequence_bytes_per_gpu(a, context)
    state = a.state_bytes_per_sequence_per_gpu
    if per_token is None or per_seq is None or state is None:
        return None
    if memory is not None:
        overhead_bytes = memory.overhead_bytes
    budget = kv_budget(gpu, gpu_memory_utilization, weight_bytes_per_gpu, overhead_bytes,
                       fraction_of_free_memory)
    block = memory.block_size if memory is not None else None
    if given_budget is not None:
        budget, _, block = given_budget
    max_tokens, max_sequences = fit(budget, per_token=per_token,
                                    kv_sequence_bytes=per_seq - state, state_bytes=state,
                                    context=context)
    if block is not None and not state:
        max_tokens = max_tokens // block * block
    capped_by = None
    if token_cap is not None and not state and token_cap[0] < max_tokens:
        max_tokens, capped_by = token_cap
        if max_sequences is not None:
            max_sequences = min(max_sequences, max_tokens // context)
    tp = a.plan.layout.attention_tp
    cluster_seq = kv.bytes_per_sequence_cluster(
        a.cached, a.dtype, a.plan.layout, a.plan.context,
        windowed=a.plan.windowed_sliding_cache, sharding=a.plan.behaviour.kv_sharding)
    seq_rank = (cluster_seq or 0) // tp
    stages = a.plan.layout.pp
    step_weights = weights.decode_bytes_per_gpu * stages
    step = step_weights + a.plan.batch * seq_rank
    bandwidth = gpu.bandwidth_bytes_per_s
    return Capacity(
        gpu=gpu,
        gpu_memory_utilization=gpu_memory_utilization,
        fraction_of_free_memory=fraction_of_free_memory,
        weight_bytes_per_gpu=weight_bytes_per_gpu,
        weights_estimated=weights.estimated,
        weights_source=weights.source,
        overhead_bytes=overhead_bytes,
        kv_budget_bytes_per_gpu=budget,
        max_tokens=max_tokens,
        context=context,
        max_sequences=max_sequences,
        decode_weight_bytes_per_gpu=weights.decode_bytes_per_gpu,
        batch=a.plan.batch,
        decode_context=a.plan.context,
        sequence_bytes_per_rank=seq_rank,
        tpot_floor_ms=step / bandwidth * 1000 if bandwidth else None,
        crossover_batch=step_weights / seq_rank if seq_rank else None,
        bytes_per_sequence_per_gpu=per_seq,
        state_bytes_per_sequence_per_gpu=state,
        memory=memory,
        kv_budget_source=given_budget[1] if given_budget is not None else None,
        kv_tokens_capped_by=capped_by,
        block_size=block,
    )
