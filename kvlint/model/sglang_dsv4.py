"""How SGLang sizes DeepSeek-V4's pools, release by release.

DeepSeek-V4 (``DeepseekV4ForCausalLM``) keeps a sliding-window cache of every layer, a
compressed cache of one entry per 4 or per 128 tokens in the layers whose
``compress_ratios`` say so, an indexer cache beside the ratio-4 ones, and the compressors'
running state. SGLang does not size these by the layer sum kvlint reports for the model:
its ``DSV4PoolConfigurator`` prices one *full token* (a position of the longest pool) as

    swa x kv x L + kv x n4 / 4 + kv x n128 / 128 + idx x n4 / 4
      + swa x (ring4 / W) x (c4_state + c4_indexer_state) x n4
      + swa x (ring128 / W) x c128_state x n128            (0.5.12 - 0.5.14 only)

with ``kv = qk_nope + 2 x qk_rope + 8`` (the FlashMLA slot: fp8 nope, bf16 rope, scales),
``idx = index_head_dim + index_head_dim / 128 x 4``, the compressors' float32 states
(``2 x 2 x head_dim x 4`` at ratio 4, ``2 x head_dim x 4`` at ratio 128, ``2 x 2 x
index_head_dim x 4`` for the indexer), rings of 8 and 128 rows per window of ``W``
(``sliding_window``) tokens, ``L = len(compress_ratios)`` (the MTP layer's entry
included), and the SWA pool's share ``swa`` = 0.1 (``swa_full_tokens_ratio``, set for V4
unless given). The pool holds ``(available - fixed) / coefficient`` full tokens in whole
pages of 256. From 0.5.15 the ratio-128 state is no longer priced per token but set aside
whole for the request slots: ``ceil((slots x 128 + 129) / 128) x 128`` rows of ``2 x
head_dim`` float32 per ratio-128 layer, ``slots = max_running_requests + 1`` (256 by
default for V4).

Sources: ``model_executor/pool_configurator.py`` ``DSV4PoolConfigurator`` @0.5.12 L309-400
and @0.5.14 (the first rule), @0.5.15 L151-250 and @0.5.20 (the second);
``mem_cache/deepseek_v4_memory_pool.py`` ``get_compress_state_ring_size`` @0.5.12 L28-41;
``arg_groups/deepseek_v4_hook.py`` @0.5.12 (page 256, ``max_running_requests`` 256, an
``auto`` KV cache as ``fp8_e4m3``, ratio 0.1; from 0.5.15 ``arg_groups/overrides.py``).
0.5.21 to 0.5.23 size the SWA pool by a request cap and pad pages per KV layout
(``_resolve_swa_cap_tokens``, ``_get_paged_kv_bytes_per_token``): kvlint applies 0.5.20's
rule to them, an ESTIMATE said so in the note. No release before 0.5.12 has DeepSeek-V4
(0.5.11's wheel has no ``deepseek_v4`` module): an earlier version (a log dated before
0.5.12, from a development build) is modelled by 0.5.12's rule.
Only CUDA's defaults are modelled (not ROCm's unified pool, HiSparse, online c128 or MTP).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Final

from packaging.version import Version

from kvlint.model.serving import EngineStart, ServingPlan
from kvlint.model.sglang_dsa import release_of

__all__ = ["DsV4Pool", "dsv4_pool", "pool_tokens", "with_dsv4_start"]

FIRST: Final = Version("0.5.12")
"""The first release that serves DeepSeek-V4."""
C128_FIXED: Final = Version("0.5.15")
"""From this release the ratio-128 state is set aside per request slot."""
CAPPED_SWA: Final = Version("0.5.21")
"""From this release the SWA pool is sized by a request cap (not modelled: estimate)."""
PAGE_SIZE: Final = 256
MAX_RUNNING_REQUESTS: Final = 256
SWA_RATIO: Final = Fraction(1, 10)
RING4: Final = 8
RING128: Final = 128
STATE_BYTES: Final = 4  # float32 (SGLANG_DSV4_COMPRESS_STATE_DTYPE's default)
ARCHITECTURE: Final = "DeepseekV4ForCausalLM"


@dataclass(frozen=True)
class DsV4Pool:
    """SGLang's pricing of a DeepSeek-V4 pool on one GPU."""

    bytes_per_full_token: Fraction
    fixed_bytes: int
    """Set aside before the tokens (the ratio-128 state of the request slots)."""
    page_size: int
    rule: str
    """The release whose rule applies, and whether it is an estimate."""
    estimate: bool


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 1 << 24 else None


def dsv4_pool(config: Mapping[str, Any], version: Version | None, *,
              max_running_requests: int | None = None, dp: int = 1) -> DsV4Pool | None:
    """The pool SGLang ``version`` (``None``: the newest kvlint read) sizes for a
    DeepSeek-V4 ``config``; ``None`` for another model or a config missing a dimension."""
    archs = config.get("architectures")
    ratios = config.get("compress_ratios")
    if not (isinstance(archs, list) and ARCHITECTURE in archs) or \
            not isinstance(ratios, list) or not ratios or len(ratios) > 1 << 12:
        return None
    early = version is not None and version < FIRST  # a development build before 0.5.12
    head, rope = _int(config.get("head_dim")), _int(config.get("qk_rope_head_dim"))
    index, window = _int(config.get("index_head_dim")), _int(config.get("sliding_window"))
    if not head or rope is None or rope > head or not index or not window:
        return None
    nope = head - rope
    layers = len(ratios)
    n4 = sum(1 for r in ratios if r == 4)
    n128 = sum(1 for r in ratios if r == 128)
    kv = nope + 2 * rope + 8
    idx = index + index // 128 * 4
    c4_state, c4_index_state = 2 * 2 * head * STATE_BYTES, 2 * 2 * index * STATE_BYTES
    c128_state = 2 * head * STATE_BYTES
    per_token = (SWA_RATIO * kv * layers + Fraction(kv * n4, 4) + Fraction(kv * n128, 128)
                 + Fraction(idx * n4, 4)
                 + SWA_RATIO * Fraction(RING4, window) * (c4_state + c4_index_state) * n4)
    newer = not early and (version is None or version >= C128_FIXED)
    fixed = 0
    if not newer:
        per_token += SWA_RATIO * Fraction(RING128, window) * c128_state * n128
    elif n128:
        slots = (max_running_requests or MAX_RUNNING_REQUESTS) // max(dp, 1) + 1
        rows = -(-(slots * RING128 + RING128 + 1) // 128) * 128
        fixed = rows * c128_state * n128
    estimate = version is None or version >= CAPPED_SWA
    rule = ("0.5.12-0.5.14" if not newer else "0.5.15-0.5.20") + (
        " (an estimate: 0.5.21 on size the SWA pool by a request cap)" if estimate else
        " (no release before 0.5.12 serves DeepSeek-V4: a development build, modelled by "
        "the first release's rule)" if early else "")
    return DsV4Pool(per_token, fixed, PAGE_SIZE, rule, estimate)


def pool_tokens(pool: DsV4Pool, available: int) -> int:
    """Full tokens of the pool ``available`` bytes hold, in whole pages."""
    tokens = int(max(available - pool.fixed_bytes, 0) / pool.bytes_per_full_token)
    return tokens // pool.page_size * pool.page_size


def with_dsv4_start(plan: ServingPlan, config: Mapping[str, Any]
                    ) -> tuple[ServingPlan, str | None]:
    """``plan`` as SGLang runs a DeepSeek-V4 model: pages of 256, 256 running requests
    unless given, and the engine's own price of a pool token (``behaviour.pool``); a note
    saying so. ``plan`` unchanged and ``None`` for another engine or model."""
    if plan.engine != "sglang":
        return plan, None
    version = release_of(plan)
    layout = plan.layout
    pool = dsv4_pool(config, version, max_running_requests=plan.max_num_seqs,
                     dp=layout.dp if layout.dp_attention else 1)
    if pool is None:
        return plan, None
    start = plan.engine_start or EngineStart()
    changed = replace(
        plan, engine_start=replace(start, page_size=PAGE_SIZE),
        max_num_seqs=plan.max_num_seqs or MAX_RUNNING_REQUESTS,
        behaviour=replace(plan.behaviour, pool_token_bytes=pool.bytes_per_full_token,
                          pool_fixed_bytes=pool.fixed_bytes))
    fixed = f", {pool.fixed_bytes:,} B set aside for the ratio-128 state of " \
        f"{changed.max_num_seqs} running requests" if pool.fixed_bytes else ""
    note = (f"SGLang {plan.behaviour.version or 'newest'} prices a DeepSeek-V4 pool token at "
            f"{float(pool.bytes_per_full_token):,.2f} B (its sliding-window, compressed, "
            f"indexer and state pools together, swa_full_tokens_ratio 0.1){fixed}, in pages "
            f"of {PAGE_SIZE} (DSV4PoolConfigurator, rule of {pool.rule}; "
            "kvlint/model/sglang_dsv4.py)")
    return changed, note
