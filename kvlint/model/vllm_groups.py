"""vLLM's hybrid KV cache groups: what its "GPU KV cache size: N tokens" counts for a model
whose layers cache in more than one way (full and sliding-window attention, attention and
Mamba / linear-attention state). Pure arithmetic.

From v0.9.1 (the hybrid KV cache manager; absent @v0.9.0) vLLM groups such layers by spec
(``_get_kv_cache_groups_uniform_page_size``, vllm/v1/core/kv_cache_utils.py@v0.11.0 lines
894-1002)::

    group_size = the fewest layers of any one spec
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

from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import KvDtype, layer_bytes_per_token_per_gpu
from kvlint.model.state import state_bytes_per_gpu

HYBRID_MANAGER_SINCE = Version("0.9.1")
GROUPED_REPORT_READ_UNTIL = Version("0.20.0")
"""The grouped report is read in releases up to 0.19.0; from here kvlint does not apply it."""


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
    """``(kind, layers, window)`` per spec: ``full``, ``window`` or ``state``."""
    layer_bytes_per_token: Fraction
    """One attention layer's bytes per token on the GPU (the page unit, per token)."""
    state_page_bytes: int = 0
    """One state layer's bytes per sequence on the GPU (0: no state layers)."""

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
        780-795); ``None`` with windowed groups (their share depends on the batch)."""
        per_request = 0
        for kind, count, _ in self.specs:
            groups = -(-count // self.group_size)
            if kind == "window":
                return None
            per_request += groups * (-(-max_model_len // block) if kind == "full" else 1)
        return num_blocks / per_request if per_request else None

    @property
    def padded_layers(self) -> int:
        return self.group_size * self.num_groups

    @property
    def bytes_per_printed_token(self) -> Fraction:
        """KV memory / printed tokens: one token in every (padded) layer of every group."""
        return self.layer_bytes_per_token * self.padded_layers

    def printed_tokens(self, memory_bytes: Fraction | int, block: int) -> int:
        """What vLLM prints as its "GPU KV cache size" for ``memory_bytes`` of KV memory."""
        return self.blocks(memory_bytes, block) // self.num_groups * block


def kv_groups(geometry: AttentionGeometry, dtype: KvDtype, tp: int, version: str | None,
              sharding: str = "replicate") -> KvGroups | None:
    """The groups of a model with more than one cache spec under the vLLM ``version`` that
    prints the grouped report (``None``: one spec, another release, or a layout the module
    does not model)."""
    try:
        v = Version(version) if version else None
    except InvalidVersion:
        return None
    if v is None or not HYBRID_MANAGER_SINCE <= v < GROUPED_REPORT_READ_UNTIL:
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
            key = ("window", layer.window) if layer.is_windowed else ("full", None)
        else:
            continue
        counts[key] = counts.get(key, 0) + 1
    if len(counts) < 2 or len(attention) != 1:
        return None
    return KvGroups(group_size=min(counts.values()),
                    specs=tuple((kind, count, window)
                                for (kind, window), count in counts.items()),
                    layer_bytes_per_token=attention.pop(), state_page_bytes=state_page)
