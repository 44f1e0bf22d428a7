"""The CPU path of ``kvlint probe`` (method ``dispatch``): build the model under test, run one
decode step under :class:`~kvlint.probe.accounting.KvAccounting`, compare with theory.

Logical bytes do not depend on the device or on timing, so the figures are exact and
deterministic for the installed transformers and torch; they grow linearly with the context.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvlint.errors import UsageError
from kvlint.model.geometry import AttentionGeometry, LayerGeometry
from kvlint.probe import theory
from kvlint.probe.result import (
    CACHE_CAUSE,
    STATIC_CACHE,
    ImplMeasurement,
    Materialization,
    ProbeReport,
    SdpaCall,
)
from kvlint.probe.sdpa_oracle import DEFAULT_SM, choose_backend

if TYPE_CHECKING:
    from kvlint.probe.build import CacheSpec


@dataclass(frozen=True, kw_only=True)
class CpuOptions:
    """What the CPU path measures: each implementation at each context, over ``layers``
    layers of ``batch`` sequences in ``dtype``; ``sm``: the GPU whose SDPA backend choice is
    reported; ``cache``: the KV cache pre-filled (``None``: a DynamicCache)."""

    impls: Sequence[str]
    contexts: Sequence[int]
    batch: int
    layers: int
    dtype: str
    sm: int = DEFAULT_SM
    cache: CacheSpec | None = None


def probe(raw: Mapping[str, Any], geometry: AttentionGeometry,
          options: CpuOptions) -> list[ProbeReport]:
    """One report per context, each with every implementation."""
    import torch

    from kvlint.probe import build as builder

    torch.set_grad_enabled(False)
    impls, contexts = options.impls, options.contexts
    batch, layers, dtype = options.batch, options.layers, options.dtype
    spec = options.cache or builder.DYNAMIC
    per_context: dict[int, list[ImplMeasurement]] = {c: [] for c in contexts}
    built_description = ""
    for impl in impls:
        skipped = _unavailable(impl)
        built = None
        if skipped is None:
            try:
                built = builder.build(raw, impl=impl, layers=layers, dtype=dtype)
                built_description = built.description
            except UsageError as err:
                skipped = str(err)
        for context in contexts:
            expected = theory.decode_step(geometry, context=context, batch=batch,
                                          layers=layers, dtype=dtype)
            if built is None:
                per_context[context].append(ImplMeasurement.unmeasured(
                    impl, dtype, expected.read_bytes, expected.cache_bytes,
                    skipped or "not built"))
                continue
            per_context[context].append(
                _measure(built, geometry, expected, context=context, options=options,
                         spec=spec))
    built_description += f"; {spec.label()} pre-filled with random K/V" if built_description \
        else ""
    return [ProbeReport("cpu", "dispatch", context, batch, layers,
                        tuple(per_context[context]), built=built_description)
            for context in contexts]


def _unavailable(impl: str) -> str | None:
    from kvlint.probe.build import KERNEL_IMPLS, NATIVE_IMPLS

    if impl in KERNEL_IMPLS:
        return f"{impl} kernels run on CUDA only; use --device cuda"
    if impl == "flash_attention_2":
        return "flash_attention_2 runs on CUDA only; use --device cuda"
    if impl == "flex_attention":
        return ("flex_attention runs as a torch.compile'd kernel, which the CPU byte "
                "accounting cannot follow; use --device cuda")
    if impl not in NATIVE_IMPLS:
        return f"unknown implementation {impl!r}"
    return None


def _measure(built: Any, geometry: AttentionGeometry, expected: theory.Theory, *,
             context: int, options: CpuOptions, spec: CacheSpec) -> ImplMeasurement:
    """``built``'s decode step at ``context`` (``spec``: its cache, resolved)."""
    from kvlint.probe import build as builder
    from kvlint.probe.accounting import KvAccounting, SdpaRecorder

    batch, layers, dtype, sm = options.batch, options.layers, options.dtype, options.sm

    shapes = builder.layer_shapes(built, batch)
    cache = builder.prefilled_cache(built, shapes, context, spec=spec)
    accounting = KvAccounting(builder.cache_tensors(cache))
    hooks = builder.ModuleNames(built.model, accounting.module_stack)
    recorder = SdpaRecorder(accounting)
    started = time.perf_counter()
    try:
        with recorder, accounting:
            builder.decode_step(built, cache, context, batch)
    except RuntimeError as err:
        return ImplMeasurement.unmeasured(
            built.impl, dtype, expected.read_bytes, expected.cache_bytes,
            f"the decode step failed: {err}".splitlines()[0])
    finally:
        hooks.remove()
    seconds = time.perf_counter() - started
    traffic = accounting.summarise(builder.cache_tensors(cache))
    held = builder.held_bytes(cache) or traffic.cache_bytes
    sdpa = _sdpa_calls(recorder.calls, sm)
    materialisations = tuple(
        Materialization(m.op + (f" in {m.where}" if m.where else ""), m.amplification,
                        m.bytes, m.calls, m.module)
        for m in traffic.materialisations)
    positions = spec.max_cache_len if spec.kind == "static" and spec.max_cache_len else \
        context + 1
    notes = [*_cache_notes(geometry, layers, expected, held, batch, dtype,
                           positions),
             *(f"on sm{sm}, SDPA would run {c.reason}" for c in sdpa if c.materializes)]
    if spec.kind == "static":
        notes.append(f"{STATIC_CACHE} max_cache_len={spec.max_cache_len:,} positions per "
                     f"layer and attention reads all of them (masked), not the {context + 1:,} "
                     "live tokens; its mask also keeps SDPA off the enable_gqa path")
    if traffic.cache_read_bytes:
        notes.append(f"cache management moved {traffic.cache_read_bytes:,} B in and "
                     f"{traffic.cache_write_bytes:,} B out (the cache's append copies its "
                     "history each step); counted apart from attention reads")
    return ImplMeasurement(
        built.impl, dtype, expected.read_bytes, traffic.attention_read_bytes,
        expected.cache_bytes, held, materialisations,
        traffic.cache_read_bytes, traffic.cache_write_bytes, sdpa, seconds,
        details={"attention_write_bytes": traffic.attention_write_bytes,
                 "kv_ops": len(traffic.ops)},
        notes=tuple(notes))


def _sdpa_calls(calls: Sequence[Any], sm: int) -> tuple[SdpaCall, ...]:
    grouped: dict[Any, int] = {}
    for call in calls:
        grouped[call] = grouped.get(call, 0) + 1
    found = []
    for call, count in grouped.items():
        choice = choose_backend(
            query_heads=call.query_shape[-3] if len(call.query_shape) >= 3 else 1,
            kv_heads=call.key_shape[-3] if len(call.key_shape) >= 3 else 1,
            head_dim=call.key_shape[-1], v_head_dim=call.value_shape[-1], dtype=call.dtype,
            enable_gqa=call.enable_gqa, has_mask=call.has_mask, sm=sm)
        found.append(SdpaCall(call, choice.backend, choice.materializes, choice.reason, count))
    return tuple(found)


def _cache_notes(geometry: AttentionGeometry, layers: int, expected: theory.Theory,
                 cache_bytes: int, batch: int, dtype: str, positions: int) -> list[str]:
    """Name the cause when the cache holds more per position than theory needs per token:
    full per-head K/V of an MLA model, K/V expanded to the query heads, or a full-length
    cache of a windowed layer. (A static cache's extra positions have their own note.)"""
    element = theory.dtype_bytes(dtype)
    chosen = theory.probed_layers(geometry, layers)
    need, tokens = expected.cache_bytes, expected.tokens
    if cache_bytes <= need * 1.05:
        return []
    per_token = cache_bytes / (positions * batch)
    if positions != tokens and per_token <= need / (tokens * batch) * 1.05:
        return []  # only the static cache's extra positions
    candidates = {
        "per-head K/V of the MLA latent (the latent is not what is cached)":
            sum(_per_head(la) for la in chosen) * element,
        "K/V copied to every query head (the GQA saving is lost in the cache)":
            sum((la.k_head_dim + la.v_head_dim) * la.num_attention_heads for la in chosen
                if not la.is_mla) * element,
        "every token of the windowed layers (no window applied to the cache)":
            sum(theory.layer_bytes_per_token(la, element) for la in chosen),
    }
    for cause, size in candidates.items():
        if size and abs(per_token - size) <= 0.02 * size:
            return [f"{CACHE_CAUSE} {per_token:,.0f} B per token over {len(chosen)} "
                    f"layer(s) where {need / (tokens * batch):,.0f} B would do: {cause}"]
    return [f"{CACHE_CAUSE} {cache_bytes / need:.2f}x the bytes theory needs"]


def _per_head(layer: LayerGeometry) -> int:
    if not layer.is_mla:
        return 0
    return (layer.k_head_dim + layer.v_head_dim) * layer.num_kv_heads
