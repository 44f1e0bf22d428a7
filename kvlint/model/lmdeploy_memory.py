"""LMDeploy's start-up KV budget arithmetic, release by release (pure).

LMDeploy sizes its KV cache from the memory *free* on the GPU once the weights are loaded,
with ``--cache-max-entry-count`` (default 0.8) as the fraction of it. The two backends differ:

PyTorch engine (``ExecutorBase.update_configs`` in ``lmdeploy/pytorch/engine/executor/base.py``)::

    free     = torch.cuda free memory after the model is built (``ModelAgent.get_free_mem``:
               empty_cache, then ``get_gpu_memory()`` free), the minimum over the ranks
    free    -= state cache (linear-attention / SSM models, 0.11+; per sequence slot)
    runtime  = vocab-sized logits buffers (:func:`runtime_buffer_bytes`), with
               max_prefill_token_num halved until at least 16 KV blocks fit
    budget   = (free - runtime) x cache_max_entry_count
    blocks   = floor(budget / block bytes)

TurboMind (``BlockManager::GetBlockCount`` in ``src/turbomind/models/llama/BlockManager.cc``
@v0.7.3; ``TurboMind::Impl::CreateEngine`` in ``src/turbomind/turbomind.cc`` @1263d5cd)::

    blocks   = floor(free x cache_max_entry_count) // block bytes      (free: min over ranks)

Blocks hold ``--cache-block-seq-len`` tokens (64 by default); the PyTorch engine lowers it to
32 for a K head dim of 512 or more unless FlashMLA runs (:func:`block_size`).

Read from the wheels ``pip download --no-deps lmdeploy==0.7.3`` and ``==0.18.0`` (file@0.7.3,
file@0.18.0) and, for the releases between, LMDeploy's git tags (file@vX.Y.Z; the mirror ends
at 1263d5cd, v0.16.0 + 5 commits). A release between two read ones follows the rule of the
older one. The TurboMind C++ is not in the wheels; it was read at the git tags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from packaging.version import Version

MIB: Final = 1024**2

Backend = Literal["pytorch", "turbomind"]

CACHE_MAX_ENTRY_COUNT: Final = 0.8
"""``--cache-max-entry-count`` by default: lmdeploy/cli/utils.py@0.7.3 and @0.18.0
``ArgumentHelper.cache_max_entry_count`` (default=0.8); messages.py@0.7.3 lines 221 and 295,
@0.18.0 ``TurbomindEngineConfig`` / ``PytorchEngineConfig`` ``cache_max_entry_count: float =
0.8``. Both configs assert ``0 < cache_max_entry_count < 1`` (messages.py@0.7.3 lines 239,
316)."""

MAX_PREFILL_TOKEN_NUM: Final = 8192
"""``--max-prefill-token-num`` of ``lmdeploy serve api_server`` by default: cli/utils.py@0.7.3
line 456 and @0.18.0 line 655 (default=8192). The Python API's ``PytorchEngineConfig`` had
4096 up to 0.12 (messages.py@0.7.3 line 301) and 8192 from 0.13.0 (PR #4546; messages.py@0.18.0
line 562): see :func:`default_max_prefill_token_num`."""

BLOCK_SIZE: Final = 64
"""``--cache-block-seq-len`` by default: cli/utils.py@0.7.3 line 421, @0.18.0 line 573
(default=64); ``PytorchEngineConfig.block_size = 64`` (messages.py@0.7.3 line 297, @0.18.0
line 557)."""
LARGE_HEAD_DIM: Final = 512
LARGE_HEAD_BLOCK_SIZE: Final = 32
"""``ExecutorBase._adjust_block_size`` (executor/base.py@0.7.3 lines 102-113, @0.18.0 lines
242-272; model_agent.py@v0.5.0 line 86 before it moved): ``k_head_dim >= 512 and block_size >
32`` sets block_size = 32, skipped when ``use_flash_mla`` (which then demands 64)."""
FLASH_MLA_SINCE: Final = Version("0.7.2")
"""PR #3218 'Add flash mla' (v0.7.2): DeepSeek-V2-style builders set ``use_flash_mla`` when the
GPU is sm90+ and the ``flash_mla`` package imports (pytorch/configurations/utils.py@0.18.0
``flash_mla_available``)."""

MIN_RUNTIME_BLOCKS: Final = 16
"""``_get_runtime_size`` halves max_prefill_token_num until at least this many blocks fit
(executor/base.py@0.7.3 line 97, @0.18.0 line 237)."""
MIN_BLOCKS_0_14: Final = 3
"""From 0.14.0 fewer than 3 blocks raise 'No enough gpu memory for kv cache.'
(``_get_num_gpu_blocks``, executor/base.py@0.18.0 line 191 and line 404: ``<= 2``); before,
0 blocks (executor/base.py@0.7.3 line 139: ``<= 0``)."""

RUNTIME_0_9_2: Final = Version("0.9.2")
"""PR #3745 (commit 238d4e76, first in v0.9.2; executor/base.py@v0.9.1 still has the old line):
the runtime reserve becomes ``(max_prefill_token_num + 2 x max_batches) x vocab x 2`` B."""
RUNTIME_BYTES_PER_TOKEN_0_7: Final = 7
"""executor/base.py@0.7.3 line 95: ``max_prefill_token_num * vocal_size * 7``, 'lm_head
output(2) + to float(4) + estimated misc(1) = 7'."""
RUNTIME_BYTES_PER_TOKEN_0_9_2: Final = 2
"""executor/base.py@0.18.0 line 232: ``(max_prefill_token_num + max_batches * 2) * vocab_size
* 2``."""
DSA_SINCE: Final = Version("0.18.0")
"""executor/base.py@0.18.0 lines 213-217 and 233: models with an indexer (``mla_index_topk``:
DeepSeek-V3.2, GLM-5) add ``LMDEPLOY_DSA_INDEXER_MAX_LOGITS_MB`` MiB (default 512,
pytorch/envs.py@0.18.0 line 238) to the runtime reserve; absent at 1263d5cd (v0.16.0+5)."""
DSA_SCORE_WORKSPACE_BYTES: Final = 512 * MIB
INTEGER_BLOCKS_0_14: Final = Version("0.14.0")
"""From 0.14.0 the budget is an integer before the division and the block count is the
minimum over ranks of ``int((free - runtime) x ratio) // block bytes``
(``_update_num_gpu_blocks``, executor/base.py@0.18.0 lines 391-407; @v0.14.0 line 346);
before, ``int(free x ratio / block bytes)`` on the minimum free memory (executor/base.py@0.7.3
lines 135-138)."""

MAX_BATCH_SIZE_0_10: Final = Version("0.10.0")
"""PR #3921 'adjust default values of max_batch_size' (commit 1f33bf59, first in v0.10.0)."""
_MAX_BATCH_SIZE_0_7: Final = (("a100", 256), ("a800", 256), ("h100", 512), ("h800", 512))
"""lmdeploy/utils.py@0.7.3 ``get_max_batch_size`` lines 335-344 (cuda; 128 otherwise)."""
_MAX_BATCH_SIZE_0_10: Final = (("a100", 384), ("a800", 384), ("h100", 1024), ("h800", 1024),
                               ("l20y", 1024), ("h200", 1024))
"""lmdeploy/utils.py@0.18.0 ``get_max_batch_size`` lines 412-421 (cuda; 128 otherwise)."""
OTHER_GPU_MAX_BATCH_SIZE: Final = 128


def _v(version: Version | str | None) -> Version | None:
    return Version(str(version)) if version is not None else None


def default_max_batch_size(version: Version | str | None, gpu_name: str) -> int:
    """``--max-batch-size`` when not given (``max_batches`` of the cache config): by the
    CUDA device name (``torch.cuda.get_device_name(0)``, lower-cased, first substring that
    matches), 128 for any other GPU. ``version`` ``None``: the newest rule read."""
    parsed = _v(version)
    table = _MAX_BATCH_SIZE_0_7 if parsed is not None and parsed < MAX_BATCH_SIZE_0_10 \
        else _MAX_BATCH_SIZE_0_10
    name = gpu_name.lower()
    return next((size for key, size in table if key in name), OTHER_GPU_MAX_BATCH_SIZE)


def default_max_prefill_token_num(version: Version | str | None, *, cli: bool = True) -> int:
    """``max_prefill_token_num`` when not given: 8192 for ``lmdeploy serve`` (``cli``), and
    for the Python API's ``PytorchEngineConfig`` 4096 before 0.13.0 (PR #4546), 8192 from."""
    parsed = _v(version)
    if cli or parsed is None or parsed >= Version("0.13.0"):
        return MAX_PREFILL_TOKEN_NUM
    return 4096


def runtime_buffer_bytes(version: Version | str | None, vocab_size: int, *,
                         max_prefill_token_num: int = MAX_PREFILL_TOKEN_NUM,
                         max_batches: int = OTHER_GPU_MAX_BATCH_SIZE,
                         dsa: bool = False) -> int:
    """The PyTorch engine's non-KV runtime reserve for logits (and the DSA indexer's score
    workspace), set aside from the free memory before the cache fraction applies:
    before 0.9.2 ``max_prefill_token_num x vocab x 7``; from 0.9.2 ``(max_prefill_token_num +
    2 x max_batches) x vocab x 2``; from 0.18.0 plus 512 MiB for DSA models. ``max_batches``
    matters only from 0.9.2 (:func:`default_max_batch_size`)."""
    parsed = _v(version)
    if parsed is not None and parsed < RUNTIME_0_9_2:
        return int(max_prefill_token_num * vocab_size * RUNTIME_BYTES_PER_TOKEN_0_7)
    size = int((max_prefill_token_num + max_batches * 2) * vocab_size
               * RUNTIME_BYTES_PER_TOKEN_0_9_2)
    if dsa and (parsed is None or parsed >= DSA_SINCE):
        size += DSA_SCORE_WORKSPACE_BYTES
    return size


def state_cache_slots(version: Version | str | None, max_batches: int,
                      prefix_cache_state_budget: int = 0) -> int:
    """Sequence slots of the PyTorch engine's state cache (linear attention / SSM state,
    Qwen3-Next, Qwen3.5), reserved from the free memory before the runtime reserve: none
    before 0.11.0 (PR #4039 'Qwen3 next'); ``max_batches + 8`` at 0.11-0.12
    (executor/base.py@v0.11.0 line 173), ``+ 1`` at 0.13 (@v0.13.0 line 231), ``+ 2 +
    prefix_cache_state_budget`` from 0.14.0 (@v0.14.0 line 264, @0.18.0 line 289)."""
    parsed = _v(version)
    if parsed is not None and parsed < Version("0.11.0"):
        return 0
    if parsed is not None and parsed < Version("0.13.0"):
        return max_batches + 8
    if parsed is not None and parsed < Version("0.14.0"):
        return max_batches + 1
    return max_batches + 2 + prefix_cache_state_budget


def linear_state_slot_bytes(layers: int, dims: Mapping[str, int], tp: int,
                            dtype_bytes: int = 2, state_dtype_bytes: int = 2) -> int:
    """One sequence's gated-delta-net state slot on a ``tp`` rank, the same layout in both
    backends: conv ``(layers, conv_dim, d_conv)`` in the model dtype and recurrent ``(layers,
    v_heads / tp, head_v_dim, head_k_dim)`` in the state dtype (the model's unless
    ``LMDEPLOY_FP32_MAMBA_SSM_DTYPE=1``), ``conv_dim = 2 x k_heads / tp x head_k_dim +
    v_heads / tp x head_v_dim``; the whole conv kernel is kept, not ``d_conv - 1``
    (pytorch/configurations/qwen3_5.py@0.18.0 lines 58-80; TurboMind:
    src/turbomind/models/llama/SequenceManager.cc@0397f350, ``pooled_conv_states`` and
    ``pooled_recurrent_states``). ``dims``: ``num_k_heads``, ``num_v_heads``,
    ``head_k_dim``, ``head_v_dim``, ``conv_kernel``."""
    k_heads, v_heads = dims["num_k_heads"] // tp, dims["num_v_heads"] // tp
    conv_dim = 2 * k_heads * dims["head_k_dim"] + v_heads * dims["head_v_dim"]
    conv = conv_dim * dims["conv_kernel"] * dtype_bytes
    recurrent = v_heads * dims["head_v_dim"] * dims["head_k_dim"] * state_dtype_bytes
    return layers * (conv + recurrent)


def block_size(version: Version | str | None, head_dim: int, flash_mla: bool = False,
               requested: int = BLOCK_SIZE) -> int:
    """Tokens per KV block of the PyTorch engine: ``requested`` (``--cache-block-seq-len``,
    64 by default), lowered to 32 when the K head dim is 512 or more (the MLA latent: 576)
    unless FlashMLA runs (0.7.2+, sm90 with ``flash_mla`` installed). Raises ``ValueError``
    for FlashMLA with a block size other than 64, as LMDeploy does."""
    parsed = _v(version)
    if flash_mla and (parsed is None or parsed >= FLASH_MLA_SINCE):
        if requested != BLOCK_SIZE:
            raise ValueError("Please set block_size to 64 for flash_mla.")
        return requested
    if head_dim >= LARGE_HEAD_DIM and requested > LARGE_HEAD_BLOCK_SIZE:
        return LARGE_HEAD_BLOCK_SIZE
    return requested


@dataclass(frozen=True)
class LmdeployBudget:
    """The KV cache LMDeploy would build on the tightest GPU."""

    budget_bytes: int
    """Bytes the cache fraction allows for KV blocks."""
    num_gpu_blocks: int
    runtime_bytes: int = 0
    """The PyTorch engine's runtime reserve (:func:`runtime_buffer_bytes`) at the
    ``max_prefill_token_num`` it settled on."""
    max_prefill_token_num: int | None = None
    """The PyTorch engine's prefill token budget after halving (``None``: TurboMind)."""
    error: str | None = None
    """LMDeploy's own start-up error when it refuses (the numbers are then what it had)."""


def _least(free: int | Sequence[int]) -> int:
    return min(free) if isinstance(free, Sequence) else free


def runtime_reserve(version: Version | str | None, free_bytes: int, block_bytes: int,
                    vocab_size: int, *, cache_max_entry_count: float = CACHE_MAX_ENTRY_COUNT,
                    max_prefill_token_num: int = MAX_PREFILL_TOKEN_NUM,
                    max_batches: int = OTHER_GPU_MAX_BATCH_SIZE,
                    dsa: bool = False) -> tuple[int, int]:
    """``(runtime bytes, max_prefill_token_num)`` as ``_get_runtime_size`` settles them:
    max_prefill_token_num is halved until ``(free - runtime) x ratio`` holds 16 blocks.
    A token count of 0 means LMDeploy fails at start (:func:`kv_budget` says which error)."""
    runtime, tokens, _ = _runtime(version, free_bytes, block_bytes, vocab_size,
                                  cache_max_entry_count, max_prefill_token_num, max_batches,
                                  dsa)
    return runtime, tokens


def _runtime(version: Version | str | None, free_bytes: int, block_bytes: int,
             vocab_size: int, ratio: float, max_prefill_token_num: int, max_batches: int,
             dsa: bool) -> tuple[int, int, str | None]:
    """The halving loop with LMDeploy's error: 'No enough gpu memory for runtime.' when no
    halving leaves 16 blocks; from 0.14.0 the loop's block count itself raises 'No enough gpu
    memory for kv cache.' at 2 blocks or fewer (``_get_num_gpu_blocks`` inside
    ``_get_min_num_gpu_blocks``, executor/base.py@v0.14.0 lines 166-176, @0.18.0 lines
    183-193), so halving helps only from 3 to 15 blocks."""
    parsed = _v(version)
    strict = parsed is None or parsed >= INTEGER_BLOCKS_0_14
    runtime = 0
    tokens = max_prefill_token_num
    while tokens > 0:
        runtime = runtime_buffer_bytes(parsed, vocab_size, max_prefill_token_num=tokens,
                                       max_batches=max_batches, dsa=dsa)
        blocks = int((free_bytes - runtime) * ratio) // block_bytes
        if strict and blocks < MIN_BLOCKS_0_14:
            return runtime, 0, "No enough gpu memory for kv cache."
        if blocks >= MIN_RUNTIME_BLOCKS:
            return runtime, tokens, None
        tokens //= 2
    return runtime, tokens, "No enough gpu memory for runtime."


@dataclass(frozen=True)
class CacheSettings:
    """What the PyTorch engine's budget depends on besides the free memory and block size
    (TurboMind reads the fraction only)."""

    vocab_size: int = 0
    cache_max_entry_count: float = CACHE_MAX_ENTRY_COUNT
    max_prefill_token_num: int = MAX_PREFILL_TOKEN_NUM
    max_batches: int = OTHER_GPU_MAX_BATCH_SIZE
    state_cache_bytes: int = 0
    """The linear-attention state pool: the PyTorch engine's state cache, taken from the free
    memory; TurboMind's ``max_batch_size`` slots, taken from the fraction's bytes."""
    dsa: bool = False


def kv_budget(version: Version | str | None, backend: Backend,
              free_after_weights: int | Sequence[int], block_bytes: int,
              settings: CacheSettings = CacheSettings()) -> LmdeployBudget:
    """The KV budget and block count of ``backend`` at ``version``.

    ``free_after_weights``: the GPU memory free once the weights are loaded, per rank (the
    minimum decides) or one figure; ``block_bytes``: one block of every layer's K and V on a
    rank (tokens per block x per-token bytes per GPU); ``state_cache_bytes``: the PyTorch
    engine's state cache (:func:`state_cache_slots` x the slot size), 0 for attention-only
    models. ``vocab_size`` sizes the PyTorch engine's runtime reserve; TurboMind ignores it.
    """
    c = settings
    if block_bytes <= 0:
        raise ValueError("block_bytes must be positive")
    free = _least(free_after_weights)
    if backend == "turbomind":
        # the linear-state pool (max_batch_size slots) comes out of the fraction's bytes,
        # and a budget it fills is refused (SequenceManager.cc@0397f350: "Linear-state
        # memory ... >= cache budget ... Please decrease max_batch_size")
        budget = int(free * c.cache_max_entry_count) - c.state_cache_bytes
        if c.state_cache_bytes and budget <= 0:
            return LmdeployBudget(0, 0, error="Linear-state memory >= cache budget: please "
                                  "decrease max_batch_size or increase cache_max_entry_count")
        blocks = max(budget, 0) // block_bytes
        return LmdeployBudget(budget, blocks,
                              error=None if blocks > 0 else "TurboMind has no KV blocks")
    parsed = _v(version)
    free -= c.state_cache_bytes
    if free <= 0:
        return LmdeployBudget(0, 0, error="No enough gpu memory for state cache. "
                              "Please reduce max_batch_size.")
    runtime, tokens, error = _runtime(parsed, free, block_bytes, c.vocab_size,
                                      c.cache_max_entry_count, c.max_prefill_token_num,
                                      c.max_batches, c.dsa)
    if error is not None:
        return LmdeployBudget(0, 0, runtime, tokens, error)
    rest = free - runtime
    if parsed is not None and parsed < INTEGER_BLOCKS_0_14:
        available = rest * c.cache_max_entry_count
        budget = int(available)
        blocks = int(available / block_bytes)
        least = 1
    else:
        budget = int(rest * c.cache_max_entry_count)
        blocks = budget // block_bytes
        least = MIN_BLOCKS_0_14
    error = None if blocks >= least else "No enough gpu memory for kv cache."
    return LmdeployBudget(budget, blocks, runtime, tokens, error)


def kv_budget_bytes(version: Version | str | None, backend: Backend,
                    free_after_weights: int | Sequence[int], block_bytes: int,
                    settings: CacheSettings = CacheSettings()) -> int:
    """The bytes LMDeploy gives the KV cache on the tightest GPU (:func:`kv_budget`'s
    ``budget_bytes``): ``(free - state - runtime) x ratio`` on the PyTorch engine,
    ``free x ratio`` on TurboMind."""
    return kv_budget(version, backend, free_after_weights, block_bytes, settings).budget_bytes


def kv_tokens(budget: LmdeployBudget, tokens_per_block: int) -> int:
    """Tokens the cache holds: whole blocks x tokens per block."""
    return budget.num_gpu_blocks * tokens_per_block
