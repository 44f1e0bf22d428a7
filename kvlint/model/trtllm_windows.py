"""TensorRT-LLM's KV pools for models with mixed attention windows (VSWA), PyTorch backend
(pure; docs/design.md §5b).

Which windows. ``KVCacheManager.__init__`` (tensorrt_llm/_torch/pyexecutor/resource_manager.py
@001541ba, the same in an index copy of the ``calculate_max_num_blocks_from_cpp`` era) takes
``kv_cache_config.max_attention_window``
or, when it is unset, ``[max_seq_len]`` for every layer; each entry is clamped to
``max_seq_len`` (PR #6481, 2025-07) and the list repeats over the layers (``layer %
len``: ``_get_window_size_to_layers``). Several distinct values make it VSWA: one pool per
window size. Nothing in the 1.x standard manager reads the model's ``sliding_window`` /
``layer_types`` (``llmapi`` PR #5722 that would have filled ``max_attention_window`` from the
config was closed unmerged; PR #18767, 2026-09, derives it for the V2 manager only), so by
default every layer of Gemma-2/3 or gpt-oss is cached at full length in one pool
(:func:`layer_windows` with ``None``).

How the memory is split. ``memory`` is ``kv_cache_config.max_gpu_total_bytes`` as
``KvCacheCreator.configure_kv_cache_capacity`` hands it on (the profiled budget, capped by the
user's ``max_tokens x estimate``: _util.py@2cc1200b; kvlint's ``TrtllmBudget.memory_bytes``).
``calculate_max_num_blocks_from_cpp`` first shrinks the windows when one sequence of every
window does not fit (:func:`adjust_windows`, PR #5880), then each window ``w`` gets ``share_w``
of the memory and ``tokens_w = memory x share_w / bytes_w`` (``bytes_w``: its layers' bytes
per token on this GPU), in whole blocks, the minimum over the ranks:

    until 1.0    share_w ~ w x bytes_w (``BlockManager::calculateWindowSizeToShare``, used by
                 ``BaseKVCacheManager::calculateMaxNumBlocks``; every pool then holds the same
                 number of full windows), float32 shares, blocks rounded up
    1.1 - 1.2    share_w = 1 / windows (calculateMaxNumBlocks: "NOTE: Righteously, blocks
                 allocated should be proportional with regard to window size. Currently, we
                 are first allocating identical number of blocks for all layers",
                 kvCacheManager.cpp@b35ac1b6; ``TRTLLM_WINDOW_SIZE_SHARES`` overrides it, not
                 modelled), float32, rounded up; ``kv_cache_config.max_tokens`` is "not
                 effective in VSWA scheme"
    1.3 on       the same equal shares in Python (``calculate_max_num_blocks_for_vswa``,
                 resource_manager.py@001541ba), float64, ``int(tokens // tokens_per_block)``

Then ``_validate_and_adjust_attention_windows`` lowers a window above its pool's tokens to
them and ``max_seq_len`` to the largest window left. TensorRT-LLM prints "[MemUsageChange]
Allocated X GiB for max tokens in paged KV cache (N)" with ``N = sum of every pool's blocks x
tokens_per_block`` (``KVCacheManager::allocatePools``, ``BlockManager::getNumPrimaryBlocks``
sums the windows): :attr:`VswaPools.printed_tokens`. A sequence of ``L`` tokens takes
``ceil(min(L, w) / tokens_per_block)`` blocks of each pool, one more when ``L > w`` from 1.1
(``kSWAExtraBlock``, ``calculateMaxBlockRequirementsPerBeam`` @b35ac1b6, absent @002ba6a7),
and the pool that runs out first bounds the batch (``getMaxCapacityBatchSize``):
:meth:`VswaPools.sequences`.

Releases. The index holds no copy at a release tag: a copy's rule is tied to a release by the
dates of the PRs that changed it. INFERRED: proportional shares until 1.0 (NVIDIA
kvCacheManager.cpp@002ba6a7 still weighs ``w x layers x bytes_w``, the extra ``layers``
removed by PR #6481 of 2025-07-30; kvlint follows the copy after it); equal shares from 1.1
(PR #6768, merged 2025-09-05, dropped the call to ``calculateWindowSizeToShare``, as PR #8396's
review notes); the Python split from 1.3 (PR #10798,
2026-02; release/1.2.1 lacks the 2026-01 PR #10875, PR #12768, and the cherry-pick of #10798,
PR #11754, was closed). Uncertain for 1.0: whether it has PR #5933 (2025-08), which hands
the profiled budget on as ``max_gpu_total_bytes``; without it the pools would be sized from
``free memory x fraction`` at the manager's creation. Not modelled: pipeline parallelism (the
pattern restarts at each stage's first layer), the V2 manager, NVFP4 KV scales, sink tokens
and beam search.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from packaging.version import Version

EQUAL_SHARES_SINCE: Final = Version("1.1.0")
"""Equal memory shares per window (kvCacheManager.cpp@b35ac1b6); before: proportional to
``window x bytes``. INFERRED boundary (PR #6768, 2025-09-05)."""

PYTHON_SPLIT_SINCE: Final = Version("1.3.0")
"""``calculate_max_num_blocks_for_vswa`` in Python, blocks rounded down
(resource_manager.py@001541ba); before: C++, rounded up. INFERRED boundary (PR #10798)."""

SWA_EXTRA_BLOCK_SINCE: Final = Version("1.1.0")
"""``kSWAExtraBlock``: a sequence longer than a window takes one more block of its pool
(@b35ac1b6; absent @002ba6a7). INFERRED boundary, with the equal shares."""


def _v(version: Version | str | None) -> Version | None:
    return Version(str(version)) if version is not None else None


def _since(version: Version | str | None, boundary: Version) -> bool:
    parsed = _v(version)
    return parsed is None or parsed >= boundary


def equal_shares(version: Version | str | None) -> bool:
    """Whether the release gives every window the same share of the memory."""
    return _since(version, EQUAL_SHARES_SINCE)


def split_rounds_down(version: Version | str | None) -> bool:
    """Whether the release's per-window split rounds the blocks down (Python) or up (C++)."""
    return _since(version, PYTHON_SPLIT_SINCE)


def f32(value: float) -> float:
    """``value`` rounded to a C++ ``float`` (IEEE single precision)."""
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


def layer_windows(max_attention_window: Sequence[int] | None, num_layers: int,
                  max_seq_len: int) -> tuple[int, ...]:
    """Each layer's window as the KV manager takes it: ``max_attention_window`` clamped to
    ``max_seq_len`` and repeated over the layers; ``None``: ``max_seq_len`` everywhere."""
    pattern = [max_seq_len] if not max_attention_window else \
        [min(max_seq_len, w) for w in max_attention_window]
    return tuple(pattern[i % len(pattern)] for i in range(num_layers))


def window_pattern(windows: Sequence[int]) -> tuple[int, ...]:
    """The shortest ``max_attention_window`` list that TensorRT-LLM repeats into ``windows``."""
    for size in range(1, len(windows) + 1):
        if all(w == windows[i % size] for i, w in enumerate(windows)):
            return tuple(windows[:size])
    return tuple(windows)


@dataclass(frozen=True)
class WindowGroup:
    """The layers that share one window size, on one GPU."""

    window: int
    layers: int
    bytes_per_token: int
    """Their bytes per token together (``calculateCacheSizePerTokenForSingleWindowSize``)."""


def window_groups(windows: Sequence[int], layer_bytes: Sequence[int]) -> tuple[WindowGroup, ...]:
    """Layers grouped by window, smallest window first (``groupLayersByWindowSize``)."""
    if len(windows) != len(layer_bytes):
        raise ValueError("one window per layer")
    found: dict[int, tuple[int, int]] = {}
    for window, size in zip(windows, layer_bytes, strict=True):
        layers, total = found.get(window, (0, 0))
        found[window] = (layers + 1, total + size)
    return tuple(WindowGroup(w, n, b) for w, (n, b) in sorted(found.items()))


def adjust_windows(groups: Sequence[WindowGroup], memory_bytes: int,
                   max_tokens: int | None = None) -> tuple[WindowGroup, ...]:
    """``adjust_window_sizes_for_vswa``: unchanged when one sequence of every window fits
    the memory (``sum(w x bytes_w) < memory``); else, smallest window first, each window
    gets the tokens the memory left holds for the layers not yet served, at most
    ``w - previous w``, and the windows become those running totals (``max_tokens``: the
    ``kv_cache_config.max_tokens`` it also clamps to)."""
    ordered = sorted(groups, key=lambda g: g.window)
    if sum(g.window * g.bytes_per_token for g in ordered) < memory_bytes:
        return tuple(ordered)
    remaining = memory_bytes
    left = {g.window: g for g in ordered}
    accum = previous = 0
    adjusted: dict[int, tuple[int, int]] = {}
    for group in ordered:
        if remaining > 0 and left:
            per_token = sum(g.bytes_per_token for g in left.values())
            fits = min(remaining // per_token, group.window - previous)
            remaining -= fits * per_token
            accum += fits
            if accum < group.window:
                remaining = 0  # the larger windows keep the same tokens
            if max_tokens is not None:
                accum = min(max_tokens, accum)
                if accum == max_tokens:
                    remaining = 0
        layers, size = adjusted.get(accum, (0, 0))
        adjusted[accum] = (layers + group.layers, size + group.bytes_per_token)
        del left[group.window]
        previous = group.window
    return tuple(WindowGroup(w, n, b) for w, (n, b) in sorted(adjusted.items()))


def shares(version: Version | str | None, groups: Sequence[WindowGroup]) -> tuple[float, ...]:
    """Each window's share of the memory at ``version`` (module docstring), in the precision
    the release computes it."""
    if len(groups) == 1:
        return (1.0,)
    if _since(version, PYTHON_SPLIT_SINCE):
        return tuple(1.0 / len(groups) for _ in groups)
    if _since(version, EQUAL_SHARES_SINCE):
        return tuple(f32(1.0 / len(groups)) for _ in groups)  # 1.0f / windowSizeToLayers.size()
    # calculateWindowSizeToShare: float(bytes_w) / sum(bytes) x w, over their double sum
    total = sum(g.bytes_per_token for g in groups)
    weights = [f32(f32(f32(g.bytes_per_token) / f32(total)) * f32(g.window)) for g in groups]
    weight_sum = sum(weights)
    return tuple(f32(w / weight_sum) for w in weights)


@dataclass(frozen=True)
class WindowPool:
    """One window's pool on one GPU."""

    window: int
    """The window the pool serves (lowered to the pool's tokens when above them)."""
    layers: int
    bytes_per_token: int
    share: float
    blocks: int
    tokens: int
    """``blocks x tokens_per_block``."""


@dataclass(frozen=True)
class VswaPools:
    """The pools TensorRT-LLM builds for one set of windows on one GPU."""

    pools: tuple[WindowPool, ...]
    memory_bytes: int
    tokens_per_block: int
    max_seq_len: int
    """After ``_validate_and_adjust_attention_windows``: the largest window left."""
    extra_block: bool
    """Whether a sequence longer than a window takes one more block (``kSWAExtraBlock``)."""

    @property
    def printed_tokens(self) -> int:
        """"max tokens in paged KV cache (N)": every pool's tokens, summed."""
        return sum(p.tokens for p in self.pools)

    def blocks_per_sequence(self, pool: WindowPool, length: int) -> int:
        """Blocks a ``length``-token sequence takes in ``pool``."""
        need = -(-min(length, pool.window) // self.tokens_per_block)
        return max(1, need + (1 if self.extra_block and length > pool.window else 0))

    def sequences(self, length: int | None = None) -> int:
        """Sequences of ``length`` tokens (``max_seq_len``) that fit every pool at once."""
        length = self.max_seq_len if length is None else length
        return min((p.blocks // self.blocks_per_sequence(p, length) for p in self.pools),
                   default=0)


def pool_tokens(version: Version | str | None, memory_bytes: int, share: float,
                bytes_per_token: int) -> float | int:
    """The tokens a window's share of the memory holds, as the release computes them."""
    if _since(version, PYTHON_SPLIT_SINCE):
        return memory_bytes * share / bytes_per_token  # primary_tokens, a Python float
    # static_cast<uint64_t>(allottedPrimaryMemBytes * windowSizeShare / double(bytes)):
    # uint64 x float is a float product
    return int(f32(f32(memory_bytes) * share) / bytes_per_token)


def vswa_pools(version: Version | str | None, groups: Sequence[WindowGroup], memory_bytes: int,
               *, tokens_per_block: int, max_seq_len: int,
               max_tokens: int | None = None) -> VswaPools:
    """The per-window pools of one GPU at ``version`` (``None``: the newest rule read) for
    ``memory_bytes`` of KV memory (``max_gpu_total_bytes``); ``max_tokens``: the
    ``kv_cache_config.max_tokens`` that :func:`adjust_windows` clamps to (the pools ignore
    it)."""
    if memory_bytes <= 0 or tokens_per_block <= 0 or not groups or \
            any(g.bytes_per_token <= 0 for g in groups):
        raise ValueError("memory, tokens_per_block and every window's bytes must be positive")
    adjusted = adjust_windows(groups, memory_bytes, max_tokens)
    python = _since(version, PYTHON_SPLIT_SINCE)
    blocks = []
    for group, share in zip(adjusted, shares(version, adjusted), strict=True):
        tokens = pool_tokens(version, memory_bytes, share, group.bytes_per_token)
        blocks.append(int(tokens // tokens_per_block) if python
                      else -(-int(tokens) // tokens_per_block))  # tc::ceilDiv
    return _validated(version, adjusted, shares(version, adjusted), blocks,
                      memory_bytes=memory_bytes, tokens_per_block=tokens_per_block,
                      max_seq_len=max_seq_len)


def single_pool(version: Version | str | None, group: WindowGroup, blocks: int, *,
                memory_bytes: int, tokens_per_block: int, max_seq_len: int) -> VswaPools:
    """One window size: the standard manager's one pool of ``blocks`` blocks
    (``calculate_max_num_blocks``, kvlint/model/trtllm_memory.py ``kv_budget``)."""
    return _validated(version, (group,), (1.0,), [blocks], memory_bytes=memory_bytes,
                      tokens_per_block=tokens_per_block, max_seq_len=max_seq_len)


def _validated(version: Version | str | None, groups: Sequence[WindowGroup],
               split: Sequence[float], blocks: Sequence[int], *, memory_bytes: int,
               tokens_per_block: int, max_seq_len: int) -> VswaPools:
    """``_validate_and_adjust_attention_windows``: a window above its pool's tokens is
    lowered to them, and ``max_seq_len`` to the largest window left."""
    pools = tuple(WindowPool(min(g.window, n * tokens_per_block), g.layers, g.bytes_per_token,
                             share, n, n * tokens_per_block)
                  for g, share, n in zip(groups, split, blocks, strict=True))
    lowered = any(p.window < g.window for p, g in zip(pools, groups, strict=True))
    return VswaPools(pools, memory_bytes, tokens_per_block,
                     max(p.window for p in pools) if lowered else max_seq_len,
                     _since(version, SWA_EXTRA_BLOCK_SINCE))
