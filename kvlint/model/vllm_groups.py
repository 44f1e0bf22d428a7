"""vLLM's hybrid KV cache groups: what its "GPU KV cache size: N tokens" counts for a model
whose layers cache in more than one way (full and sliding-window attention, attention and
Mamba / linear-attention state). Pure arithmetic.

From v0.9.1 (the hybrid KV cache manager; absent @v0.9.0) vLLM groups such layers by spec
(``_get_kv_cache_groups_uniform_page_size``, vllm/v1/core/kv_cache_utils.py@v0.11.0 lines
894-1002)::

    group_size = the fewest layers of any one spec (from 0.18: the most, when under 1.5 x
                 the fewest: :data:`NEAR_COUNTS_SINCE`)
    groups     = sum over specs of ceil(layers of the spec / group_size)
                 (the last group of a spec is padded: "Add N padding layers")

and every block holds one page of one layer of each group, all pages the same size (a Mamba
page is padded to the attention page, whose block size is raised until it holds one state:
``HybridAttentionMambaModelConfig``, vllm/model_executor/models/config.py@v0.11.0 lines
314-400)::

    num_blocks = available // page_bytes // group_size       (get_num_blocks, lines 813-827)
    printed    = num_blocks // groups x block_size            (lines 1076-1087)

So the printed tokens are not "bytes / bytes per token": one printed token stands for one
token in each of ``group_size x groups`` layers (padding included), the state layers counted
at the attention page. The same report is in the 0.9.1, 0.9.2, 0.10.2, 0.12.0 and 0.19.0
wheels (``_report_kv_cache_config`` from 0.12.0); later releases were not read for it
(:data:`GROUPED_REPORT_READ_UNTIL`). Not modelled: ``--disable-hybrid-kv-cache-manager``
and the cases vLLM turns the manager off itself (KV connectors, non-CUDA platforms), specs
whose attention pages differ between layers, and pipeline stages (each worker groups its own
layers).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import floor

from packaging.version import InvalidVersion, Version

from kvlint.model.geometry import AttentionGeometry, LayerKind
from kvlint.model.kv import KvDtype, layer_bytes_per_token_per_gpu
from kvlint.model.state import state_bytes_per_gpu

HYBRID_MANAGER_SINCE = Version("0.9.1")
GROUPED_REPORT_READ_UNTIL = Version("0.20.0")
"""The grouped report is read in releases up to 0.19.0; from here kvlint does not apply it."""
CONCURRENCY_REPORT_SINCE = Version("0.20.1")
"""From 0.20.1 vLLM prints "GPU KV cache size" as ``int(max_concurrency x max_model_len)``
(``_report_kv_cache_config``, kv_cache_utils.py@v0.20.1 lines 1684-1708 = @v0.21.0 lines
1696-1708: "the total tokens of context the pool can hold at peak utilization"); the
grouping, ``get_num_blocks``, ``get_max_concurrency_for_kv_cache_config``, the specs'
``max_memory_usage_bytes`` and ``_align_hybrid_block_size`` read in the 0.20.1 wheel are
0.21.0's but for NVFP4 and TurboQuant KV caches, which kvlint does not size. 0.20.0 prints the
grouped report but aligns a hybrid's block size in the platform (not read: not modelled)."""
CONCURRENCY_REPORT_READ_UNTIL = Version("0.35.0")
"""Read in the 0.21.0-0.25.0 and 0.29.0 wheels: the grouping
(``_get_kv_cache_groups_uniform_page_size``), ``get_num_blocks`` and
``get_max_concurrency_for_kv_cache_config`` are the same text in 0.21.0-0.25.0; 0.29.0 rewrites
the last two (blocks = memory // bytes per block; a request's blocks summed over groups) and
lets layers whose specs merge share a group, which gives the same figures for full attention
with state layers. The hybrid block size is ``_align_hybrid_block_size``
(platforms/interface.py@v0.21.0 = @v0.25.0): 16 x cdiv(state, 16 x attention page of one token)
without Mamba prefix caching in "all" mode. The report,
``get_max_concurrency_for_kv_cache_config`` (host groups aside), the grouping and a sliding
window's admission of the tokens in flight read the same in the 0.30.0, 0.33.0 and 0.34.0 wheels
(kv_cache_utils.py / kv_cache_planning.py, kv_cache_interface.py; bytes per block rounded to the
pages' stride alignment, 1 for these specs); there the state layers' block alignment was not
re-read, so a model with state layers is grouped only before :data:`STATE_READ_UNTIL`."""
STATE_READ_UNTIL = Version("0.30.0")
"""The last release (exclusive) whose hybrid block alignment and Mamba cache modes kvlint
read: from here only attention hybrids (full, sliding, chunked) are grouped."""
NEAR_COUNTS_SINCE = Version("0.18.0")
"""From 0.18 the group size is the largest spec's layer count when it is under 1.5 x the
smallest's (``_get_kv_cache_groups_uniform_page_size``, kv_cache_utils.py@v0.18.0 = @v0.21.0
= @v0.25.0; absent @v0.17.0), else the smallest's."""
IN_FLIGHT_SINCE = Version("0.26.0")
"""From 0.26 a window group admits ``max_in_flight_tokens`` beyond its window (0.25:
``max_num_batched_tokens``): ``max_concurrent_batches x max_num_batched_tokens``, 2 batches at
pp 1 with async scheduling (config/vllm.py@v0.26.0 = @v0.29.0 = @v0.30.0), which vLLM turns on
by default for a generation model (unless a speculative method or executor it does not support
turns it off: not modelled; kv_cache_interface.py@v0.26.0, @v0.29.0)."""
ASYNC_BATCHES = 2
WINDOW_KINDS = ("window", "chunk")
"""Spec kinds whose cache a window bounds: sliding-window and chunked local attention."""
ALIGN_STATE_PAGES = 2
"""A state group's pages per request in ``mamba_cache_mode="align"`` (``MambaSpec.
max_memory_usage_bytes``, kv_cache_interface.py@v0.21.0: 2 + speculative blocks), the mode
vLLM picks from 0.20.1 (models/config.py@v0.20.1 = @v0.21.0) when prefix caching is on (its
V1 default) for a hybrid whose class does not support Mamba prefix caching
(models/config.py@v0.21.0 lines 351-371; the vLLM 0.29 log of Qwen3.5 prints
``mamba_cache_mode="align"``)."""
MAMBA_ALL_ARCHITECTURES = frozenset({
    "BambaForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
    "JambaForCausalLM", "MambaForCausalLM", "Mamba2ForCausalLM", "NemotronHForCausalLM",
    "Zamba2ForCausalLM"})
"""The classes that support Mamba prefix caching in 0.21.0 and 0.25.0 (``"all"`` mode: a
state page per block of the request, and a block size aligned to the Mamba chunk; not
modelled, so these get no grouped figure from 0.21)."""


KERNEL_BLOCK_ALIGNMENT = 16
"""The attention block size a hybrid-state model's block is a multiple of (FlashAttention's
16; ``attn_block_size = 16 x cdiv(mamba_page, 16 x attention page of one token)``,
models/config.py@v0.11.0 lines 367-375, @v0.12.0 lines 364 and 426-430 without prefix
caching, which vLLM turns off for these models in 0.11.0: lines 295-297)."""


@dataclass(frozen=True)
class KvGroups:
    """vLLM's KV cache groups on one GPU."""

    group_size: int
    specs: tuple[tuple[str, int, int | None], ...]
    """``(kind, layers, window)`` per spec: ``full``, ``window`` (sliding), ``chunk``
    (chunked local) or ``state``."""
    layer_bytes_per_token: Fraction
    """One attention layer's bytes per token on the GPU (the page unit, per token)."""
    state_page_bytes: int = 0
    """One state layer's bytes per sequence on the GPU (0: no state layers)."""
    report: str = "blocks"
    """How vLLM prints its "GPU KV cache size": ``blocks`` (``num_blocks // groups x
    block``, to 0.19) or ``concurrency`` (``int(max_concurrency x max_model_len)``, from
    0.20.1: :data:`CONCURRENCY_REPORT_SINCE`)."""
    in_flight_tokens: int | None = None
    """The tokens a window group admits beyond its window in the concurrency report
    (:meth:`window_blocks`): ``max_num_batched_tokens``, twice it from 0.26
    (:data:`IN_FLIGHT_SINCE`)."""

    @property
    def num_groups(self) -> int:
        return sum(-(-count // self.group_size) for _, count, _ in self.specs)

    def block_size(self, default: int) -> int:
        """The attention block size: ``default``, raised for state layers until one
        attention page holds one state (:data:`KERNEL_BLOCK_ALIGNMENT`)."""
        if not self.state_page_bytes:
            return default
        unit = KERNEL_BLOCK_ALIGNMENT * self.layer_bytes_per_token
        return max(default, KERNEL_BLOCK_ALIGNMENT * int(-(-self.state_page_bytes // unit)))

    def blocks(self, memory_bytes: Fraction | int, block: int) -> int:
        """``num_blocks``: whole pages of every group's layers."""
        page = self.layer_bytes_per_token * block
        return floor(Fraction(memory_bytes) / page) // self.group_size

    def concurrency(self, num_blocks: int, max_model_len: int, block: int) -> float | None:
        """"Maximum concurrency for L tokens per request": the blocks over one request's
        blocks, a full group ``cdiv(L, block)`` and a state group one
        (``get_max_concurrency_for_kv_cache_config``, kv_cache_utils.py@v0.11.0 lines
        780-795); ``None`` where a window group's share is not known
        (:meth:`blocks_per_request`)."""
        per_request = self.blocks_per_request(max_model_len, block)
        return num_blocks / per_request if per_request else None

    def blocks_per_request(self, max_model_len: int, block: int) -> int | None:
        """The blocks one request of ``max_model_len`` tokens takes: a full group
        ``cdiv(L, block)``, a state group one (:data:`ALIGN_STATE_PAGES` in the
        concurrency report's releases), a window group :meth:`window_blocks` (``None``
        without :attr:`in_flight_tokens`, and in the blocks report)."""
        state_pages = ALIGN_STATE_PAGES if self.report == "concurrency" else 1
        per_request = 0
        for kind, count, window in self.specs:
            groups = -(-count // self.group_size)
            if kind in WINDOW_KINDS:
                blocks = self.window_blocks(kind, window, max_model_len, block)
                if blocks is None:
                    return None
                per_request += groups * blocks
                continue
            per_request += groups * (-(-max_model_len // block) if kind == "full"
                                     else state_pages)
        return per_request or None

    def window_blocks(self, kind: str, window: int | None, max_model_len: int,
                      block: int) -> int | None:
        """A window group's blocks per request, as its spec admits one in the concurrency
        report's releases (``max_admission_blocks_per_request``,
        vllm/v1/kv_cache_interface.py@v0.20.1 = @v0.21.0 = @v0.25.0): sliding
        ``cdiv(min(window - 1 + max_num_batched_tokens, L), block) + 1`` (the window need not
        start on a block),
        chunked local ``cdiv(min(chunk + max_num_batched_tokens, L), block)``; from 0.26 the
        tokens in flight replace ``max_num_batched_tokens`` (:data:`IN_FLIGHT_SINCE`)."""
        if self.report != "concurrency" or self.in_flight_tokens is None or window is None:
            return None
        if kind == "chunk":
            return -(-min(window + self.in_flight_tokens, max_model_len) // block)
        return -(-min(window - 1 + self.in_flight_tokens, max_model_len) // block) + 1

    @property
    def padded_layers(self) -> int:
        return self.group_size * self.num_groups

    @property
    def bytes_per_printed_token(self) -> Fraction:
        """KV memory / printed tokens: one token in every (padded) layer of every group."""
        return self.layer_bytes_per_token * self.padded_layers

    def bytes_per_printed_token_at(self, block: int,
                                   max_model_len: int | None = None) -> Fraction:
        """KV memory / printed tokens where the report is the concurrency one: one
        request's blocks (every group's layers) over its ``max_model_len`` tokens."""
        per_request = self.blocks_per_request(max_model_len, block) \
            if self.report == "concurrency" and max_model_len else None
        if per_request is None or max_model_len is None:
            return self.bytes_per_printed_token
        return Fraction(per_request * self.group_size * block) * \
            self.layer_bytes_per_token / max_model_len

    def printed_tokens(self, memory_bytes: Fraction | int, block: int,
                       max_model_len: int | None = None) -> int:
        """What vLLM prints as its "GPU KV cache size" for ``memory_bytes`` of KV memory
        (``max_model_len``: the request length the concurrency report multiplies by)."""
        blocks = self.blocks(memory_bytes, block)
        if self.report == "concurrency" and max_model_len:
            concurrency = self.concurrency(blocks, max_model_len, block)
            if concurrency is not None:
                return int(concurrency * max_model_len)
        return blocks // self.num_groups * block


def kv_groups(geometry: AttentionGeometry, dtype: KvDtype, tp: int, version: str | None,
              sharding: str = "replicate", batched_tokens: int | None = None
              ) -> KvGroups | None:
    """The groups of a model with more than one cache spec under the vLLM ``version`` that
    prints the grouped report (``None``: one spec, another release, or a layout the module
    does not model). ``batched_tokens``: the engine's ``max_num_batched_tokens``, which a
    window group's share of a request depends on in the concurrency report (without it such
    a model gets ``None`` there)."""
    try:
        v = Version(version) if version else None
    except InvalidVersion:
        return None
    concurrency = v is not None and CONCURRENCY_REPORT_SINCE <= v < CONCURRENCY_REPORT_READ_UNTIL
    if v is None or not (HYBRID_MANAGER_SINCE <= v < GROUPED_REPORT_READ_UNTIL or concurrency):
        return None
    if concurrency and geometry.architecture in MAMBA_ALL_ARCHITECTURES:
        return None
    if v >= STATE_READ_UNTIL and any(layer.state is not None for layer in geometry.layers):
        return None
    counts: dict[tuple[str, int | None], int] = {}
    attention: set[Fraction] = set()
    state_page = 0
    for layer in geometry.layers:
        if layer.state is not None:
            state = state_bytes_per_gpu(layer.state, tp)
            if state is None:
                return None
            state_page = max(state_page, state)
            key: tuple[str, int | None] = ("state", None)
        elif layer.holds_kv:
            per_token = layer_bytes_per_token_per_gpu(layer, dtype, tp, sharding)
            if per_token is None:
                return None
            attention.add(per_token)
            key = (("chunk" if layer.kind is LayerKind.CHUNKED else "window"), layer.window) \
                if layer.is_windowed else ("full", None)
        else:
            continue
        counts[key] = counts.get(key, 0) + 1
    if len(counts) < 2 or len(attention) != 1:
        return None
    if concurrency and batched_tokens is None and \
            any(kind in WINDOW_KINDS for kind, _ in counts):
        return None  # a window group's share of a request depends on the batch
    fewest, most = min(counts.values()), max(counts.values())
    # from 0.18: specs of nearly equal counts pad the smaller up instead of splitting the
    # larger (gpt-oss-20b + an EAGLE layer: 12 sliding + 13 full is two groups of 13)
    near = v >= NEAR_COUNTS_SINCE and most < fewest * 1.5
    return KvGroups(group_size=most if near else fewest,
                    specs=tuple((kind, count, window)
                                for (kind, window), count in counts.items()),
                    layer_bytes_per_token=attention.pop(), state_page_bytes=state_page,
                    report="concurrency" if concurrency else "blocks",
                    in_flight_tokens=None if not concurrency or batched_tokens is None else
                    batched_tokens * (ASYNC_BATCHES if v >= IN_FLIGHT_SINCE else 1))
