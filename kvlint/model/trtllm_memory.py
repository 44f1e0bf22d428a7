"""TensorRT-LLM's start-up KV budget arithmetic, PyTorch backend (pure; docs/design.md §5a).

``trtllm-serve`` / the LLM API size the KV cache in two steps after the weights load
(``KvCacheCreator.configure_kv_cache_capacity`` and ``_cal_max_memory`` in
``tensorrt_llm/_torch/pyexecutor/_util.py``; ``KVCacheManager.calculate_max_num_blocks`` in
``tensorrt_llm/_torch/pyexecutor/resource_manager.py``)::

    profile    a dummy run of context requests holding max_num_tokens tokens (default 8192),
               with a small temporary KV cache; then
               peak      = torch peak (weights + activations + the temporary KV)
                           + non-torch memory (NCCL, CUDA graphs)
               available = (total - peak + temporary KV) x free_gpu_memory_fraction
               memory    = min(available, user max_tokens x estimate)
               max_tokens = memory // estimate                (kv_cache_config.max_tokens)
    final      tokens = min(max_tokens, fraction x free now / pool bytes per token),
               blocks = that / tokens_per_block, rounded up (1.1 and before) or down (1.2),
               the minimum over the ranks

``estimate`` is ``KVCacheManager.get_cache_size_per_token`` (printed as "kv size is N"):
``kv_factor x layers x (head_dim x kv_heads // tp)`` x dtype bytes, the floor of the product
(MLA: the latent, no tp division); the *pool* bytes per token (``get_cache_bytes_per_token``)
use ``ceil(kv_heads / tp)`` heads per GPU, kvlint's per-GPU figure for ``trtllm``. The two
differ when tp does not divide the KV heads (:func:`estimate_bytes_per_token`). Under
``enable_attention_dp`` the KV manager's tp is 1 on both sides.

The weights are kvlint's weights estimate (or the checkpoint's size), the KV arithmetic is
exact; the activation and non-torch terms are ESTIMATES (TensorRT-LLM measures them), taken
from kvlint's vLLM start-up model (kvlint/model/memory.py) where the physics is the same
(:func:`activation_bytes`, :func:`non_torch_bytes`). The temporary KV of the profiling run is
in the peak and added back, so it cancels: ``available = (total - weights - activations -
non-torch) x fraction``.

Read (TRT-LLM wheels are not installable here; ../shared/oracle/TRTLLM.md): ``_util.py`` in
the index copy aspctu/TensorRT-LLM@2cc1200b (1.1 era: ``_cal_max_memory``,
``configure_kv_cache_capacity``, ``_create_dummy_context_requests``), the same arithmetic in
NVIDIA/TensorRT-LLM ``_util.py@d8ae02ca`` (earlier: the temporary KV added back as
``alloc_kv_tokens x kv_size_per_token``) and ``_util.py@00043967`` (2026: ``CacheCost.
tokens_for_budget``); ``resource_manager.py@001541ba`` (``calculate_max_num_blocks``,
``get_cache_size_per_token``, ``KVCacheManager.__init__``) and a 1.1-era index copy of it.
Neither the 1.2.1 tag nor its Triton-backend pin is in the index: a release between two read
copies follows the rule of the copy whose features it has (see :data:`ROUND_DOWN_SINCE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from packaging.version import Version

from kvlint.model import memory
from kvlint.model.memory import ModelDims

FREE_GPU_MEMORY_FRACTION: Final = 0.9
"""``KvCacheConfig.free_gpu_memory_fraction`` by default (llmapi/llm_args.py: ``Field(default=
0.9)`` in the 1.x copies read; ``calculate_max_num_blocks`` falls back to 0.9 when it is
``None``, resource_manager.py@001541ba); ``trtllm-serve --kv_cache_free_gpu_memory_fraction``
0.9 (commands/serve.py@00209af1)."""

MAX_NUM_TOKENS: Final = 8192
"""``--max_num_tokens`` / ``max_num_tokens`` by default: ``BuildConfig.max_num_tokens``
(``Field(default=8192)``; ``trtllm-serve`` and Dynamo take ``BuildConfig.model_fields
["max_num_tokens"].default``). The profiling run's dummy requests hold this many tokens
(``_create_dummy_context_requests``, _util.py@2cc1200b)."""

TOKENS_PER_BLOCK: Final = 32
"""``KvCacheConfig.tokens_per_block`` by default in the PyTorch backend (llm_args.py:
``tokens_per_block: int = Field(default=32)``)."""

ROUND_DOWN_SINCE: Final = Version("1.2.0")
"""``calculate_max_num_blocks`` rounds the pool's blocks up, ``math.ceil(max_tokens /
tokens_per_block)``, in the 1.1-era copy (``torch_comm`` / ``mpi_comm`` allreduce) and down,
``int(max_tokens // tokens_per_block)``, at resource_manager.py@001541ba and every later copy
read. INFERRED boundary: @001541ba carries the DeepSeek-V3.2 indexer K cache
(``get_indexer_k_cache_pool_data``), a 1.2 feature; the commit that changed the rounding was
not found."""

PYTORCH_DEFAULT_SINCE: Final = Version("1.0.0")
"""``trtllm-serve --backend`` defaults to ``pytorch`` from 1.0 (the TensorRT-engine workflow
before it sizes its cache in C++, not modelled here)."""


def _v(version: Version | str | None) -> Version | None:
    return Version(str(version)) if version is not None else None


def applies(version: Version | str | None, backend: str | None = None) -> bool:
    """Whether this arithmetic describes the release and backend: the PyTorch backend,
    given (``--backend pytorch``) or by default (1.0 and later; ``None``: the newest)."""
    if backend is not None:
        return backend == "pytorch"
    parsed = _v(version)
    return parsed is None or parsed >= PYTORCH_DEFAULT_SINCE


def rounds_down(version: Version | str | None) -> bool:
    """Whether the release rounds the pool's blocks down (:data:`ROUND_DOWN_SINCE`)."""
    parsed = _v(version)
    return parsed is None or parsed >= ROUND_DOWN_SINCE


def estimate_bytes_per_token(pool_bytes: int, num_kv_heads: int, head_dim: int, tp: int,
                             *, mla: bool = False) -> int:
    """``KVCacheManager.get_cache_size_per_token`` from the pool's bytes per token per GPU of
    a model whose attention layers share ``num_kv_heads`` and ``head_dim``: the pool holds
    ``ceil(kv / tp) x head_dim`` elements per layer and K/V, the estimate ``head_dim x kv //
    tp`` (resource_manager.py@001541ba). MLA (and tp 1, or attention DP: ``tp`` 1) are the
    same on both sides."""
    if mla or tp <= 1 or num_kv_heads <= 0 or head_dim <= 0:
        return pool_bytes
    per_gpu = -(-num_kv_heads // tp) * head_dim
    return pool_bytes * (head_dim * num_kv_heads // tp) // per_gpu


def dummy_requests(max_num_tokens: int, max_seq_len: int) -> int:
    """Dummy context requests of the profiling run: ``max_num_tokens`` tokens cut into
    requests of at most ``max_seq_len - 1`` (``_create_dummy_context_requests`` with
    ``input_seq_len = max(1, net_max_seq_len - 1)``, _util.py@2cc1200b)."""
    size = min(max_num_tokens, max(1, max_seq_len - 1))
    return -(-max_num_tokens // size) if max_num_tokens > 0 else 0


def activation_bytes(dims: ModelDims, max_num_tokens: int, tp: int, requests: int = 1) -> int:
    """ESTIMATE of the profiling run's torch peak above the weights and the temporary KV:
    kvlint's vLLM estimate (:func:`kvlint.model.memory.activation_peak_bytes`) for a forward
    pass of ``max_num_tokens`` tokens, whose logits are one row per dummy request (each asks
    for one new token), the same MLP and residual buffers."""
    return memory.activation_peak_bytes(dims, max_num_tokens, requests, tp)


def non_torch_bytes(tp: int) -> int:
    """ESTIMATE of the memory outside torch that the peak counts ("Memory used outside torch
    (e.g., NCCL and CUDA graphs)"): kvlint's vLLM estimates of the CUDA context and NCCL
    buffers (:func:`kvlint.model.memory.non_torch_bytes`) plus its CUDA-graph pool
    (:data:`kvlint.model.memory.CUDA_GRAPH_BYTES`; the PyTorch backend captures CUDA graphs
    by default, their size depends on the capture batch sizes)."""
    return memory.non_torch_bytes(tp) + memory.CUDA_GRAPH_BYTES


@dataclass(frozen=True)
class TrtllmCacheConfig:
    """The ``kv_cache_config`` fields that shape the pool (``None``: not set)."""

    free_gpu_memory_fraction: float = FREE_GPU_MEMORY_FRACTION
    max_tokens: int | None = None
    """``kv_cache_config.max_tokens``: at most this many tokens."""
    max_gpu_total_bytes: int | None = None
    """``kv_cache_config.max_gpu_total_bytes``: caps the memory ``configure_kv_cache_capacity``
    hands on, after ``max_tokens`` is derived, so the standard KV manager's tokens ignore it
    (only the VSWA manager sizes its pools from that memory: kvlint/model/trtllm_windows.py)."""
    tokens_per_block: int = TOKENS_PER_BLOCK


@dataclass(frozen=True)
class TrtllmBudget:
    """The KV pool TensorRT-LLM would build on one GPU (the fullest rank)."""

    peak_bytes: int
    """The profiled peak: weights + activations + non-torch + the temporary KV."""
    available_bytes: int
    """``_cal_max_memory``: ``int((total - peak + temporary KV) x fraction)``."""
    memory_bytes: int
    """``kv_cache_config.max_gpu_total_bytes`` after the estimation: ``available`` capped by
    ``max_tokens x estimate`` and the user's ``max_gpu_total_bytes``."""
    estimated_max_tokens: int
    """``kv_cache_config.max_tokens`` after the estimation: ``min(available, max_tokens x
    estimate) // estimate``."""
    blocks: int
    tokens: int
    """Whole blocks x tokens per block: the pool's tokens."""
    capped_by_max_tokens: bool = False
    """The user's ``max_tokens`` decided the pool."""


def available_kv_bytes(total_bytes: int, peak_bytes: int, temporary_kv_bytes: int,
                       fraction: float = FREE_GPU_MEMORY_FRACTION) -> int:
    """``KvCacheCreator._cal_max_memory``: ``int((total - peak + temporary KV) x fraction)``."""
    return int((total_bytes - peak_bytes + temporary_kv_bytes) * fraction)


def kv_budget(version: Version | str | None, *, total_bytes: int, weight_bytes: int,
              activation_bytes: int, non_torch_bytes: int, pool_bytes_per_token: int,
              estimate_bytes_per_token: int | None = None,
              cache: TrtllmCacheConfig = TrtllmCacheConfig(),
              temporary_kv_bytes: int = 0) -> TrtllmBudget:
    """The KV pool of one GPU at ``version`` (``None``: the newest rule read).

    ``total_bytes``: the CUDA total (``torch.cuda.mem_get_info``); ``pool_bytes_per_token``:
    the pool's bytes per token on this GPU; ``estimate_bytes_per_token``: TRT-LLM's own
    estimate (:func:`estimate_bytes_per_token`; ``None``: the pool's). The final step's free
    memory is taken as ``total - weights - non-torch`` (the activations and the temporary
    KV released): it binds only where the estimate is below the pool's figure."""
    if pool_bytes_per_token <= 0 or cache.tokens_per_block <= 0:
        raise ValueError("pool bytes per token and tokens_per_block must be positive")
    estimate = estimate_bytes_per_token or pool_bytes_per_token
    fraction = cache.free_gpu_memory_fraction
    peak = weight_bytes + activation_bytes + non_torch_bytes + temporary_kv_bytes
    available = available_kv_bytes(total_bytes, peak, temporary_kv_bytes, fraction)
    budget = max(available, 0)
    user = cache.max_tokens
    if user is not None:
        budget = min(budget, user * estimate)
    max_tokens = budget // estimate
    memory_bytes = budget
    if cache.max_gpu_total_bytes:
        memory_bytes = min(memory_bytes, cache.max_gpu_total_bytes)
    free_now = max(total_bytes - weight_bytes - non_torch_bytes, 0)
    tokens = min(max_tokens, fraction * free_now / pool_bytes_per_token)
    per_block = cache.tokens_per_block
    # int(max_tokens // tokens_per_block) from 1.2, math.ceil(max_tokens / tokens_per_block)
    blocks = int(tokens // per_block) if rounds_down(version) else math.ceil(tokens / per_block)
    capped = user is not None and user * estimate < max(available, 0) and tokens == max_tokens
    return TrtllmBudget(peak, available, memory_bytes, max_tokens, blocks,
                        blocks * per_block, capped)
