"""SGLang's start-up memory arithmetic, release by release (pure; docs/design.md §5a).

SGLang sizes its KV pool from the memory *free* on the GPU, not from the card's size::

    free_at_start = GPU memory free after torch.distributed/NCCL start-up, before the
                    weights load (the minimum over the ranks of the TP x PP world)
    rest          = free_after_load - free_at_start x (1 - mem_fraction_static)
                  = free_at_start x mem_fraction_static - weights           (free_after_load
                    = free_at_start - weights: the load's own allocations are the weights)
    tokens        = floor(rest / cell bytes), rounded down to the page size, then the
                    smaller of it and --max-total-tokens; the minimum over pipeline stages

(``ModelRunner.profile_max_num_token`` / ``init_memory_pool`` in
``sglang/srt/model_executor/model_runner.py`` @0.4.6.post1 L690-800, @0.4.10 L949-1150,
@0.5.2 L1092-1320, @0.5.5.post3 L1280-1668; at 0.5.23 ``KVCacheConfigurator.
_profile_available_bytes`` in ``sglang/srt/mem_cache/kv_cache_configurator.py`` L2990-3060
and ``DefaultPoolConfigurator.calculate_pool_sizes`` in
``sglang/srt/model_executor/pool_configurator.py`` L637-647.)

``mem_fraction_static``, when not given, is chosen at start from the *smallest*
``nvidia-smi memory.total`` (MiB) of the machine's GPUs and the parallel layout; the rule
changed three times (:func:`default_mem_fraction_static`). ``free_at_start`` is the CUDA
runtime's total less what the CUDA context, cuBLAS and NCCL take before the load
(:data:`START_CONTEXT_BYTES`: an ESTIMATE, see there).

Releases read (``pip download --no-deps sglang==X``; server_args.py unless named):
0.3.4, 0.3.5, 0.3.6, 0.4.0, 0.4.1, 0.4.3.post4, 0.4.4, 0.4.5, 0.4.5.post3, 0.4.6,
0.4.6.post1, 0.4.10, 0.5.0rc2, 0.5.1, 0.5.2, 0.5.5.post3, 0.5.23. A release between two read
ones is modelled by the older one (the rule in force at the last release read before it).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from packaging.version import Version

MIB: Final = 1024**2
GIB: Final = 1024**3

START_CONTEXT_BYTES: Final = 380 * MIB
"""ESTIMATE, fitted to two logs (bench/sglang_logs.md, the tuned set). What the CUDA context,
cuBLAS and NCCL hold on one GPU when SGLang measures its free memory before loading the
weights, at tp 1: SGLang's docs notebook on an 80 GB card printed "Load weight begin. avail
mem=78.81 GB" (GiB), 0.37 GiB under an H100's CUDA total of 79.18 GiB (log 01)."""
START_CONTEXT_TP_BYTES: Final = 700 * MIB
"""ESTIMATE. Extra per GPU at tp x pp > 1 (NCCL communicators, custom all-reduce buffers):
2 x RTX 4090 at tp 2 printed 22.93 GiB free of 23.99 GiB, 1.06 GiB taken (log 06)."""

RULE_0_3_6: Final = Version("0.3.6")
"""tp >= 8 gets 0.82 (0.83 up to 0.3.5: server_args.py@0.3.4 L140-150, @0.3.5 L148)."""
RULE_0_4_0: Final = Version("0.4.0")
"""tp >= 8 gets 0.81 (@0.4.0 L158-170, unchanged to 0.4.5)."""
RULE_0_4_5_POST3: Final = Version("0.4.5.post3")
"""Cards over 81,920 MiB get ``(memory - 13 GiB) / memory`` (@0.4.5.post3 L225, @0.4.6.post1
L221-238; 0.4.5 has no such branch)."""
RULE_0_4_10: Final = Version("0.4.10")
RULE_0_5_2: Final = Version("0.5.2")
RULE_0_5_5: Final = Version("0.5.5")
RULE_0_5_23: Final = Version("0.5.23")

SWA_FULL_TOKENS_RATIO: Final = 0.8
"""``--swa-full-tokens-ratio`` by default (server_args.py@0.4.10 to @0.5.5.post3; 0.5.23:
``arg_groups/fields/schedule.py`` L150-162, None resolved to 0.8): the SWA pool holds this
share of the full pool's tokens."""

FALLBACK_FRACTION: Final = 0.88
"""The fraction when no GPU memory can be read (every release before 0.5.23; 0.95 from)."""


@dataclass(frozen=True)
class SglangStart:
    """What SGLang's defaults at start-up depend on."""

    version: Version | None
    """``None``: the newest rule kvlint read."""
    gpu_mem_mib: int
    """``nvidia-smi memory.total`` of the smallest GPU, MiB."""
    tp: int = 1
    pp: int = 1
    chunked_prefill_size: int | None = None
    """As given (``None``: the release's default for the GPU)."""
    cuda_graph_max_bs: int | None = None
    dp_attention: bool = False
    dp_size: int = 1
    speculative: str | None = None
    """``--speculative-algorithm`` as given (upper case)."""
    mla: bool = False
    vision: tuple[int, int] | None = None
    """``(layers, hidden size)`` of the vision tower of a multimodal model."""


def _rule(version: Version | None) -> Version:
    if version is None:
        return RULE_0_5_23
    for rule in (RULE_0_5_23, RULE_0_5_5, RULE_0_5_2, RULE_0_4_10):
        if version >= rule:
            return rule
    return RULE_0_4_5_POST3


def default_chunked_prefill_size(start: SglangStart) -> int:
    """``--chunked-prefill-size`` when not given, before the dp-attention split
    (@0.4.6.post1 L241-246; @0.4.10 L335-344; @0.5.5.post3 ``_handle_gpu_memory_settings``
    L703-786; @0.5.23 ``arg_groups/memory_hook.py`` L89-180)."""
    rule, mem = _rule(start.version), start.gpu_mem_mib
    if rule == RULE_0_4_5_POST3:
        return 2048 if mem < 25000 else 8192
    if rule < RULE_0_5_5:
        return 2048 if mem < 35 * 1024 else 8192 if mem < 160 * 1024 else 16384
    small = 4096 if rule >= RULE_0_5_23 else 2048
    if mem < 20 * 1024:
        return 2048
    if mem < 35 * 1024:
        return small
    if mem < 60 * 1024:
        return 4096
    return 8192 if mem < 160 * 1024 else 16384


def default_cuda_graph_max_bs(start: SglangStart) -> int:
    """The largest decode batch SGLang captures a CUDA graph for, when not given.

    0.5.5.post3 and later set it from the GPU's memory and tp (``_handle_gpu_memory_
    settings``; 0.5.23 ``memory_hook.py``, where a 24-35 GiB card at tp < 4 gets 48, not
    24); earlier releases capture up to 160 (256 on cards over 90 GiB, 512 over 160,000
    MiB: ``cuda_graph_runner.py@0.4.10`` L138-190), 8 or 80 on small cards."""
    rule, mem, wide = _rule(start.version), start.gpu_mem_mib, start.tp >= 4
    if rule < RULE_0_5_5:
        small = 25000 if rule == RULE_0_4_5_POST3 else 35 * 1024
        if mem < small:
            return 80 if wide else 8
        if rule == RULE_0_4_5_POST3:
            return 256 if mem > 81920 and start.dp_size == 1 else 160
        return 512 if mem > 160000 else 256 if mem > 90 * 1024 else 160
    if mem < 20 * 1024:
        return 8
    if mem < 35 * 1024:
        return 160 if wide and rule >= RULE_0_5_23 else 80 if wide else (
            48 if rule >= RULE_0_5_23 else 24)
    if mem < 60 * 1024:
        return 160 if wide else 32
    if mem < 160 * 1024:
        return 512 if wide else 256
    return 512


def prefill_capture_sizes(max_bs: int) -> list[int]:
    """0.5.23's prefill CUDA-graph token sizes up to ``max_bs``
    (``arg_groups/cuda_graph_hook.py@0.5.23`` ``generate_prefill_cuda_graph_batch_sizes``
    L480)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32),
             *range(576, 1025, 64), *range(1280, 4097, 256), *range(4608, max_bs + 1, 512)]
    return [s for s in sizes if s <= max_bs]


def _vlm_factor(vision: tuple[int, int] | None) -> float:
    """``adjust_mem_fraction_for_vlm`` (@0.4.10 L1946-1986; 0.5.23 memory_hook.py L417-462):
    a larger vision tower keeps more memory out of the static pool."""
    if vision is None:
        return 1.0
    layers, hidden = vision
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * min(max(1 - 0.1 * (ratio - 1), 0.8), 1.05)


def reserved_mib(start: SglangStart) -> float:
    """The MiB SGLang keeps out of its static pool (weights + KV) by default; see
    :func:`default_mem_fraction_static` (0.4.10 and later)."""
    rule, mem = _rule(start.version), start.gpu_mem_mib
    parallel = start.tp * start.pp
    spec = (start.speculative or "").upper() or None
    if rule < RULE_0_5_5:  # @0.4.10 L283-332, @0.5.2 L449-505
        if mem < 35 * 1024:
            reserved = (2.8 + parallel / 10) * 1024
        elif mem < 90 * 1024:
            reserved = (9.5 + parallel / 2) * 1024
        elif mem < 160 * 1024:
            reserved = (12 + parallel / 2) * 1024
        else:
            reserved = 32 * 1024
        if spec is not None:
            reserved += 6 * 1024 if rule >= RULE_0_5_2 and spec == "STANDALONE" else 2 * 1024
        if start.dp_attention:
            reserved += 4 * 1024
        return reserved
    chunk = start.chunked_prefill_size or default_chunked_prefill_size(start)
    activation = max(chunk if chunk > 0 else 16384, 2048)
    graph_bs = start.cuda_graph_max_bs or default_cuda_graph_max_bs(start)
    reserved = 512 + activation * 1.5 + parallel / 8 * 1024 + graph_bs * 2
    if start.dp_attention:
        reserved += graph_bs * start.dp_size * 3
        if graph_bs > 300:
            reserved += graph_bs * start.dp_size * 1.5
    if rule >= RULE_0_5_23 and chunk > 0:  # prefill CUDA graphs, on by default on CUDA
        reserved += 1536 if start.mla else 8 * len(prefill_capture_sizes(
            min(8192, chunk) if start.mla else chunk))
    if mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if rule < RULE_0_5_23 and spec is not None:  # 0.5.23 counts the draft in the cell
        if spec == "STANDALONE":
            reserved += 6 * 1024
        elif spec != "NGRAM":
            reserved += 2 * 1024
    return reserved


def default_mem_fraction_static(start: SglangStart) -> float:
    """SGLang's ``mem_fraction_static`` when ``--mem-fraction-static`` is not given.

    - before 0.4.10: by tp (0.88 at tp 1, 0.87 at 2, 0.85 at 4, 0.81 at 8 (0.83 to 0.3.5,
      0.82 in 0.3.6), 0.79 at 16 and more); from 0.4.5.post3, on cards over 81,920 MiB,
      ``(memory - 13 GiB) / memory``, unrounded, instead;
    - from 0.4.10: ``round((memory - reserved) / memory, 3)`` with :func:`reserved_mib`,
      then the vision-tower factor for multimodal models (not at 0.4.6.post1)."""
    rule, mem = _rule(start.version), start.gpu_mem_mib
    if rule < RULE_0_4_10:
        if mem <= 81920 or (start.version is not None and start.version < RULE_0_4_5_POST3):
            tp, version = start.tp, start.version
            eight = (0.83 if version is not None and version < RULE_0_3_6 else
                     0.82 if version is not None and version < RULE_0_4_0 else 0.81)
            return 0.79 if tp >= 16 else eight if tp >= 8 else 0.85 if tp >= 4 else \
                0.87 if tp >= 2 else 0.88
        return (mem - 13 * 1024) / mem
    fraction = round((mem - reserved_mib(start)) / mem, 3)
    return fraction * _vlm_factor(start.vision)


def start_context_bytes(tp: int, pp: int = 1) -> int:
    """ESTIMATE of the memory taken before SGLang measures free memory (see
    :data:`START_CONTEXT_BYTES`)."""
    return START_CONTEXT_BYTES + (START_CONTEXT_TP_BYTES if tp * pp > 1 else 0)


def pool_budget_bytes(cuda_total_bytes: int, fraction: float, weight_bytes: int,
                      tp: int, pp: int = 1) -> tuple[int, int]:
    """``(KV budget, free memory at start)`` per GPU: ``free x fraction - weights``."""
    free = cuda_total_bytes - start_context_bytes(tp, pp)
    return int(free * fraction) - weight_bytes, free


def pool_tokens(budget: int, cell_bytes: int, page_size: int = 1,
                cap: int | None = None) -> int:
    """The tokens of the pool: the budget in whole cells, down to the page size, then the
    smaller of it and ``--max-total-tokens`` (rounded down to the page as well)."""
    if budget <= 0 or cell_bytes <= 0:
        return 0
    tokens = budget // cell_bytes
    if cap is not None and cap < tokens:
        tokens = cap
    return tokens // page_size * page_size



MAMBA_FULL_MEMORY_RATIO: Final = 0.9
"""``--mamba-full-memory-ratio`` by default (server_args.py@0.5.5.post3 L430; 0.5.23
``arg_groups/fields/schedule.py`` L220-227, None resolved to 0.9): the recurrent-state pool
takes ``ratio / (1 + ratio)`` of the budget."""
MAMBA_SLOTS_BEFORE_RATIO: Final = 512
"""0.5.2 (Qwen3-Next only): ``--max-mamba-cache-size`` by default, ``max_running_requests``
or 512 (model_runner.py@0.5.2 L308-326)."""


def state_split(budget: int, state_bytes: int, version: Version | None) -> tuple[int, int]:
    """``(KV budget, state slots)`` of a model with recurrent (Mamba / linear-attention)
    state: SGLang first gives the state pool its share, then sizes the KV pool from the rest
    (``handle_max_mamba_cache``, model_runner.py@0.5.5.post3 L1363-1411; 0.5.23
    ``_handle_max_mamba_cache``, kv_cache_configurator.py L3229-3409: the same split):

    - from 0.5.5: ``slots = floor(budget x r / (1 + r) / state)`` with the radix cache on
      (the default), ``r`` = :data:`MAMBA_FULL_MEMORY_RATIO`;
    - 0.5.2: :data:`MAMBA_SLOTS_BEFORE_RATIO` slots;

    the KV pool gets ``budget - slots x state``. Not modelled: speculative decoding's extra
    state per slot, 0.5.23's padding slot and pipeline-stage share."""
    if budget <= 0 or state_bytes <= 0:
        return budget, 0
    if version is not None and version < RULE_0_5_5:
        slots = MAMBA_SLOTS_BEFORE_RATIO
    else:
        ratio = Fraction(MAMBA_FULL_MEMORY_RATIO).limit_denominator(1000)
        slots = int(budget * ratio / (1 + ratio) // state_bytes)
    return budget - slots * state_bytes, slots


REQUEST_TABLE_EXTRA: Final = 4
"""``ReqToTokenPool(size=max_num_reqs + 1, max_context_len=context_len + 4)``: the table has
one int32 per request slot and position (model_runner.py@0.4.6.post1 L795-800; from 0.5.2
``context_len + extra_max_context_len``, 4 without speculative decoding)."""


def request_table(max_total_tokens: int, context_len: int,
                  max_running_requests: int | None) -> tuple[int, int]:
    """``(request slots, bytes)`` of SGLang's request-to-token table, allocated after the KV
    pool from the memory the fraction leaves: ``--max-running-requests`` when given, else
    ``min(max(int(max_total_tokens / context_len x 512), 2048), 4096)`` (model_runner.py
    @0.4.6.post1 L737-745, @0.4.10 L1094-1102, @0.5.2 L1253-1261, @0.5.5.post3 L1593-1601;
    0.5.23 ``pool_configurator.py`` L1565-1573 also caps it at half the pool's tokens)."""
    if max_running_requests is not None and max_running_requests > 0:
        slots = max_running_requests
    else:
        slots = min(max(int(max_total_tokens / max(context_len, 1) * 512), 2048), 4096)
    return slots, (slots + 1) * (context_len + REQUEST_TABLE_EXTRA) * 4


def headroom_bytes(cuda_total_bytes: int, fraction: float, tp: int, pp: int = 1) -> int:
    """What SGLang leaves outside its static pools: ``free_at_start x (1 -
    mem_fraction_static)`` (:func:`pool_budget_bytes`'s complement), from which the request
    table, the CUDA graphs and the activations come."""
    free = cuda_total_bytes - start_context_bytes(tp, pp)
    return int(free * (1 - fraction))


def cuda_graph_state_bytes(max_bs: int, context_len: int, page_size: int = 1,
                           local_chunk: int | None = None) -> int:
    """Bytes of the page indices SGLang's attention backend allocates for CUDA-graph decode,
    from the memory the fraction leaves, after the request table: ``max_bs`` rows of the
    context's pages, int32 (flashinfer and triton: ``max_num_tokens x max_context_len``,
    flashinfer_backend.py@0.4.6.post1 L260, @0.5.5.post3 L506, @0.5.23 L1108; FlashAttention-3:
    ``page_table`` of ``max_bs x ceil(context / page_size)``, flashattention_backend.py
    @0.4.6.post1 L1140, @0.5.5.post3 L1256, @0.5.23 L2443). ``local_chunk``: FlashAttention-3's
    chunked local attention (Llama-4) adds ``max_bs x ceil(context / chunk)`` virtual batches
    of ``ceil(chunk / page_size)`` pages (@0.5.5.post3 L1273-1292; absent from 0.4.6.post1's
    graph state). Draft-decode and sliding-window copies are not counted: a lower bound."""
    page = max(page_size, 1)
    pages = -(-context_len // page)
    total = max_bs * pages * 4
    if local_chunk:
        virtual = max_bs * -(-context_len // local_chunk)
        total += virtual * -(-local_chunk // page) * 4
    return total
