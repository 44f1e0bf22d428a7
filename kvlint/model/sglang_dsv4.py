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
From 0.5.21 (to 0.5.23, the newest read), with the prefill chunked (the default), the SWA
pool and the ratio-4 state it carries leave the coefficient: they are set aside for a cap of
slots, ``(window + 128 + 2 x page) x requests + 2 x chunk + page`` plus 4 cached prefix tails
of ``window + page`` a request (the radix cache on), in whole pages
(``_resolve_swa_cap_tokens``, ``compute_swa_request_cap``, ``SGLANG_SWA_EVICTION_INTERVAL``
128); and pages are padded to the FlashMLA V4 layout's 576 B
(``_get_paged_kv_bytes_per_token``, ``KVLayout.V4.page_bytes``). This rule was checked
against 0.5.23's own ``DSV4PoolConfigurator`` run on CPU (V4-Flash and V4-Pro, three
budgets, two request counts: equal to the token). Not modelled: ``--disable-radix-cache``
(no prefix tails), an operator's ``--swa-full-tokens-ratio``, FlashMLA's V4.1 layout
(``SGLANG_DSV4_KV_LAYOUT=v41``). No release before 0.5.12 has DeepSeek-V4 (0.5.11's wheel
has no ``deepseek_v4`` module): an earlier version (a log dated before 0.5.12, from a
development build) is modelled by 0.5.12's rule.
Only CUDA's defaults are modelled (not ROCm's unified pool, HiSparse, online c128 or MTP).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from math import ceil
from typing import Any, Final

from packaging.version import Version

from kvlint.model.serving import EngineStart, ServingPlan, release_of

__all__ = ["DsV4Pool", "dsv4_pool", "pool_tokens", "with_dsv4_start"]

FIRST: Final = Version("0.5.12")
"""The first release that serves DeepSeek-V4."""
C128_FIXED: Final = Version("0.5.15")
"""From this release the ratio-128 state is set aside per request slot."""
CAPPED_SWA: Final = Version("0.5.21")
"""From this release the SWA pool is set aside for a cap of request slots."""
PAGE_SIZE: Final = 256
MAX_RUNNING_REQUESTS: Final = 256
SWA_RATIO: Final = Fraction(1, 10)
RING4: Final = 8
RING128: Final = 128
STATE_BYTES: Final = 4  # float32 (SGLANG_DSV4_COMPRESS_STATE_DTYPE's default)
ARCHITECTURE: Final = "DeepseekV4ForCausalLM"
V4_TOKEN_BYTES: Final = 584
V4_PAGE_ALIGN: Final = 576
EVICTION_INTERVAL: Final = 128
"""``SGLANG_SWA_EVICTION_INTERVAL``'s default (environ.py@0.5.21, @0.5.23)."""
DEFAULT_CHUNK: Final = 8192
"""``--chunked-prefill-size`` on a 60-160 GiB GPU, when no GPU is named."""


@dataclass(frozen=True)
class DsV4Pool:
    """SGLang's pricing of a DeepSeek-V4 pool on one GPU."""

    bytes_per_full_token: Fraction
    fixed_bytes: int
    """Set aside before the tokens: the ratio-128 state of the request slots (0.5.15 on),
    and from 0.5.21 the capped SWA pool with its state."""
    page_size: int
    rule: str
    """The releases whose rule applies (and how it was applied)."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 1 << 24 else None


def dsv4_pool(config: Mapping[str, Any], version: Version | None, *,
              max_running_requests: int | None = None, dp: int = 1,
              chunked_prefill: int = DEFAULT_CHUNK) -> DsV4Pool | None:
    """The pool SGLang ``version`` (``None``: the newest kvlint read) sizes for a
    DeepSeek-V4 ``config``; ``None`` for another model or a config missing a dimension.
    ``dp``: the attention data-parallel ranks the running requests are divided over;
    ``chunked_prefill``: ``--chunked-prefill-size`` (-1: none), which sizes 0.5.21's cap."""
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
    reqs = max(1, (max_running_requests or MAX_RUNNING_REQUESTS) // max(dp, 1))
    rows = -(-((reqs + 1) * RING128 + RING128 + 1) // 128) * 128
    c128_fixed = rows * c128_state * n128
    if not early and (version is None or version >= CAPPED_SWA):
        return _capped(kv, idx, layers, n4, n128, window, c4_state + c4_index_state,
                       c128_fixed, reqs, chunked_prefill)
    per_token = (SWA_RATIO * kv * layers + Fraction(kv * n4, 4) + Fraction(kv * n128, 128)
                 + Fraction(idx * n4, 4)
                 + SWA_RATIO * Fraction(RING4, window) * (c4_state + c4_index_state) * n4)
    newer = not early and version is not None and version >= C128_FIXED
    fixed = 0
    if not newer:
        per_token += SWA_RATIO * Fraction(RING128, window) * c128_state * n128
    else:
        fixed = c128_fixed
    rule = ("0.5.12-0.5.14" if not newer else "0.5.15-0.5.20") + (
        " (no release before 0.5.12 serves DeepSeek-V4: a development build, modelled by "
        "the first release's rule)" if early else "")
    return DsV4Pool(per_token, fixed, PAGE_SIZE, rule)


def _paged(tokens: int) -> Fraction:
    """Bytes per token of a FlashMLA V4-layout page of ``tokens`` slots: 584 B each, the
    page padded to 576 B (``KVLayout.V4`` ``page_bytes``, kernels/ops/attention/dsv4/
    kv_layout.py@0.5.23 L84-105; ``SGLANG_DSV4_KV_LAYOUT`` defaults to ``v4``)."""
    raw = tokens * V4_TOKEN_BYTES
    return Fraction(-(-raw // V4_PAGE_ALIGN) * V4_PAGE_ALIGN, tokens)


def _capped(kv: int, idx: int, layers: int, n4: int, n128: int, window: int,
            c4_states: int, c128_fixed: int, reqs: int, chunk: int) -> DsV4Pool:
    """0.5.21 on: the SWA pool (and the ratio-4 state it carries) is set aside for a cap of
    slots, not priced per full token, when the prefill is chunked (``_resolve_swa_cap_tokens``:
    ``compute_swa_request_cap`` for the running requests, plus 4 cached prefix tails a
    request while the radix cache is on); the pages are padded by layout."""
    page = PAGE_SIZE
    swa_token = _paged(page) * layers + Fraction(RING4, page) * c4_states * n4
    per_token = (_paged(page // 4) / 4 + Fraction(idx, 4)) * n4 + \
        _paged(page // 128) / 128 * n128
    if kv != V4_TOKEN_BYTES:  # another attention width: no layout read for it
        per_token = Fraction(kv * n4, 4) + Fraction(idx * n4, 4) + Fraction(kv * n128, 128)
        swa_token = Fraction(kv * layers) + Fraction(RING4, page) * c4_states * n4
    if chunk <= 0:  # no chunked prefill: the SWA pool is the ratio's share again
        return DsV4Pool(per_token + SWA_RATIO * swa_token, c128_fixed, page,
                        "0.5.21-0.5.23, prefill not chunked")
    cap = (window + EVICTION_INTERVAL + page + page) * reqs + 2 * chunk + page
    tails = 4 * reqs * (window + page)  # the radix cache's prefix tails (on by default)
    slots = -(-(cap + tails) // page) * page
    fixed = c128_fixed + ceil(slots * swa_token)
    return DsV4Pool(per_token, fixed, page, f"0.5.21-0.5.23, SWA pool capped at {slots:,} "
                    "slots (the radix cache on)")


def pool_tokens(pool: DsV4Pool, available: int) -> int:
    """Full tokens of the pool ``available`` bytes hold, in whole pages."""
    tokens = int(max(available - pool.fixed_bytes, 0) / pool.bytes_per_full_token)
    return tokens // pool.page_size * pool.page_size


def _chunk(plan: ServingPlan, version: Version | None) -> int:
    """``--chunked-prefill-size`` as given, else the release's default for the GPU's memory
    (:func:`kvlint.model.sglang_memory.default_chunked_prefill_size`; 8192 with no GPU)."""
    from kvlint.model.hardware import find_gpu
    from kvlint.model.sglang_memory import MIB, SglangStart, default_chunked_prefill_size

    given = plan.engine_start.chunked_prefill_size if plan.engine_start else None
    if given is not None:
        return given
    memory = plan.gpu_memory_bytes
    if memory is None and plan.gpu is not None:
        try:
            memory = find_gpu(plan.gpu).memory_bytes
        except ValueError:
            memory = None
    if memory is None:
        return DEFAULT_CHUNK
    layout = plan.layout
    return default_chunked_prefill_size(SglangStart(version, memory // MIB, tp=layout.tp,
                                                    pp=layout.pp))


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
                     dp=layout.dp if layout.dp_attention else 1,
                     chunked_prefill=_chunk(plan, version))
    if pool is None:
        return plan, None
    start = plan.engine_start or EngineStart()
    changed = replace(
        plan, engine_start=replace(start, page_size=PAGE_SIZE),
        max_num_seqs=plan.max_num_seqs or MAX_RUNNING_REQUESTS,
        behaviour=replace(plan.behaviour, pool_token_bytes=pool.bytes_per_full_token,
                          pool_fixed_bytes=pool.fixed_bytes))
    capped = "capped" in pool.rule
    priced = "its compressed and indexer pools; the sliding-window pool and its state set " \
        "aside for a cap of slots" if capped else \
        "its sliding-window (swa_full_tokens_ratio 0.1), compressed, indexer and state pools"
    fixed = f", {pool.fixed_bytes:,} B set aside first" if pool.fixed_bytes else ""
    note = (f"SGLang {plan.behaviour.version or 'newest'} prices a DeepSeek-V4 pool token at "
            f"{float(pool.bytes_per_full_token):,.2f} B ({priced}){fixed}, in pages of "
            f"{PAGE_SIZE}, {changed.max_num_seqs} running requests (DSV4PoolConfigurator, rule "
            f"of {pool.rule}; kvlint/model/sglang_dsv4.py)")
    return changed, note
