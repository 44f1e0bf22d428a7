"""Which CUDA kernel PyTorch's ``scaled_dot_product_attention`` would pick for a call (pure).

The CPU probe records each SDPA call (shapes, ``enable_gqa``, mask) and asks this oracle what
the same call does on a GPU, because the CPU kernels differ from the CUDA ones. The rules are
PyTorch's backend priority for CUDA, flash > memory-efficient > math, reduced to what decides
KV traffic (cuDNN attention is not modelled):

- flash needs sm80 or newer, fp16/bf16, a head dim of at most 256 and no explicit mask; it
  accepts fewer KV heads than query heads (``enable_gqa``) without copying them;
- memory-efficient accepts masks and fp32 but not ``enable_gqa`` with fewer KV heads;
- math accepts everything and, with ``enable_gqa``, copies K/V to the query-head count
  (``repeat_interleave``), which is a materialisation.

Sources: PyTorch ``aten/src/ATen/native/transformers/cuda/sdp_utils.cpp``; transformers#46960
(head dim > 256 falls back to math), transformers#48633 (pre-sm80 GPUs fall back to math with
GQA). ``use_gqa_in_sdpa`` in transformers passes ``enable_gqa`` only when the mask is None for
this reason.
"""

from __future__ import annotations

from dataclasses import dataclass

FLASH_MAX_HEAD_DIM = 256
FLASH_MIN_SM = 80
HALF_DTYPES = ("float16", "bfloat16")
DEFAULT_SM = 90
"""The GPU the oracle answers for unless told otherwise: sm90 (H100/H200)."""


@dataclass(frozen=True)
class BackendChoice:
    backend: str
    """``flash`` | ``efficient`` | ``math``."""
    materializes: bool
    """Whether the chosen backend copies K/V heads to the query-head count."""
    reason: str


def choose_backend(*, query_heads: int, kv_heads: int, head_dim: int, v_head_dim: int,
                   dtype: str, enable_gqa: bool, has_mask: bool,
                   sm: int = DEFAULT_SM) -> BackendChoice:
    """The backend PyTorch would choose on an ``sm`` GPU for one SDPA call."""
    grouped = enable_gqa and kv_heads != query_heads
    flash_blockers = []
    if sm < FLASH_MIN_SM:
        flash_blockers.append(f"sm{sm} is older than sm{FLASH_MIN_SM}")
    if dtype not in HALF_DTYPES:
        flash_blockers.append(f"{dtype} is not fp16/bf16")
    if max(head_dim, v_head_dim) > FLASH_MAX_HEAD_DIM:
        flash_blockers.append(f"head dim {max(head_dim, v_head_dim)} > {FLASH_MAX_HEAD_DIM}")
    if head_dim != v_head_dim:
        flash_blockers.append(f"K head dim {head_dim} != V head dim {v_head_dim}")
    if has_mask:
        flash_blockers.append("an explicit attention mask")
    if not flash_blockers:
        how = f"reads {kv_heads} KV heads for {query_heads} query heads" if grouped else \
            "no copy"
        return BackendChoice("flash", False, f"flash: {how}")
    efficient_blockers = ["enable_gqa with fewer KV heads"] if grouped else []
    if not efficient_blockers:
        return BackendChoice("efficient", False,
                             f"memory-efficient (flash excluded: {'; '.join(flash_blockers)})")
    return BackendChoice(
        "math", grouped,
        f"math, which copies K/V {query_heads // max(kv_heads, 1)}x to the query heads "
        f"(flash excluded: {'; '.join(flash_blockers)}; memory-efficient excluded: "
        f"{'; '.join(efficient_blockers)})")
