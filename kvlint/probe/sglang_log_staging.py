"""``kvlint probe MODEL --sglang-log FILE`` (or ``--engine-log`` on an SGLang log): what an
SGLang start-up log says its KV pool holds per token per GPU, against kvlint's SGLang theory,
and its printed ``#tokens`` next to kvlint's capacity prediction (no GPU, no server).

SGLang prints the pool's buffers in GiB with two decimals (``K size: 27.13 GB, V size: 27.13
GB``, ``KV size`` for an MLA latent) and its size in tokens (``#tokens: N``; up to 0.4.2 only
``max_total_num_tokens=N``). So

* measured bytes per token per GPU = (K + V, or KV) GiB x 2^30 / tokens, uncertain by the
  printed rounding (half the last digit of each figure); a figure printed too coarsely for
  5 % (``0.00 GB``) is not compared;
* a hybrid sliding-window pool: both sub-pools (``Full``/``SWA``, or the two unlabelled lines
  whose tokens are ``full_layer_tokens`` and ``swa_layer_tokens``, or ``SWAKVPool mem
  usage``) over the full pool's tokens: SGLang's own unit, which kvlint's SGLang figure uses;
* kvlint's capacity, when the log prints ``Load weight begin. avail mem=`` (the free memory
  SGLang sizes the pool from): the plan's GPU is that memory plus kvlint's start-up context
  estimate (kvlint/model/sglang_memory.py), so kvlint's budget starts from the same free
  memory, and ``mem_fraction_static``, ``--max-total-tokens``, the page size and the
  chunked-prefill size come from the ``server_args`` line.

The measured / theory ratio is the probe's ``cache_ratio``: KV601 flags it from 1.3x.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from kvlint.engines import behaviour as engine_behaviour
from kvlint.errors import UsageError
from kvlint.loaders.sglang_log import KvPool, SglangLog
from kvlint.model.capacity import Capacity
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import EngineStart, ServingPlan, analyze, with_pool_share
from kvlint.probe.result import ImplMeasurement, LogTerm, ProbeReport

GIB = 2**30
COARSE = Fraction(5, 100)
"""A printed pool whose rounding alone moves it this much is not compared."""
_KV_DTYPES = {"float8_e4m3fn": "fp8_e4m3", "float8_e4m3fnuz": "fp8_e4m3",
              "float8_e5m2": "fp8_e5m2", "float8_e5m2fnuz": "fp8_e5m2"}
_TORCH_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16",
                 "float32": "float32", "float": "float32"}


def _exact(raw: str) -> tuple[Fraction, Fraction]:
    """(value, half of its last printed digit) of a printed figure."""
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return Fraction(0), Fraction(0)
    exponent = value.as_tuple().exponent
    half = Fraction(1, 2) * Fraction(10) ** exponent if isinstance(exponent, int) else Fraction(0)
    return Fraction(value), half


def kv_cache_dtype(requested: str, log: SglangLog) -> str:
    """The KV dtype: the option's, else the pool's printed dtype, else ``server_args``'."""
    if requested.strip().lower() != "auto":
        return requested
    printed = next((p.dtype for p in log.pools if p.dtype), None) or log.kv_dtype
    if printed:
        return _KV_DTYPES.get(printed.removeprefix("torch."), "auto")
    given = log.server_args.get("kv_cache_dtype")
    return given if given and given not in ("auto", "None") and given.startswith("fp8") else "auto"


def model_dtype(log: SglangLog) -> str | None:
    printed = (log.dtype or "").removeprefix("torch.")
    return _TORCH_DTYPES.get(printed) or _TORCH_DTYPES.get(log.server_args.get("dtype", ""))


def layout(log: SglangLog, tp: int | None, pp: int | None, source: str) -> ParallelLayout:
    dp = log.arg_int("dp_size") or 1
    attention_dp = log.server_args.get("enable_dp_attention", "").lower() == "true"
    try:
        return ParallelLayout(tp=tp or log.tp or 1, pp=pp or log.arg_int("pp_size") or 1,
                              dp=dp if attention_dp else 1, dp_attention=attention_dp and dp > 1)
    except ValueError as err:
        raise UsageError(f"{source}: tp_size/pp_size/dp_size: {err}") from None


def _pool_total(log: SglangLog, notes: list[str]) -> tuple[str, Fraction, Fraction, int] | None:
    """(what, GiB, half-step, tokens) of the model's KV pool on one GPU, or ``None``."""
    if log.post_capture_tokens and log.post_capture_kv_gib is not None:
        value, half = _exact(log.raw.get("post_capture_kv_gib", str(log.post_capture_kv_gib)))
        return "Post-capture KV size", value, half, log.post_capture_tokens
    rank = log.pools[0].rank if log.pools else ""
    own = [p for p in log.pools if p.rank == rank]
    hybrid = log.swa_full_tokens is not None or any(p.label in ("Full", "SWA") for p in own)
    if not hybrid and not own:
        return None
    if not hybrid:
        pool = own[0]
        if len(own) > 1:
            notes.append(f"{len(own) - 1} more KV pool line(s) on {rank or 'the first rank'} "
                         "(a speculative draft model's pool): the first, the target model's, "
                         "is compared")
        total, step = _sum(pool)
        tokens = pool.tokens or log.max_total_num_tokens
        if total is None or not tokens:
            return None
        what = "KV size" if pool.kv_gib is not None else "K size + V size"
        if pool.tokens is None:
            what += " over max_total_num_tokens"
        return what, total, step, tokens
    full = next((p for p in own if p.label == "Full" or (
        not p.label and p.tokens == log.swa_full_tokens)), None)
    swa = next((p for p in own if p.label == "SWA" or (
        not p.label and p.tokens == log.swa_tokens and p is not full)), None)
    tokens = log.swa_full_tokens or (full.tokens if full else None)
    if full is not None and swa is not None and tokens:
        one, half_one = _sum(full)
        two, half_two = _sum(swa)
        if one is not None and two is not None:
            return "Full + SWA pools", one + two, half_one + half_two, tokens
    if log.swa_pool_gib is not None and tokens:
        value, half = _exact(log.raw.get("swa_pool_gib", str(log.swa_pool_gib)))
        return "SWAKVPool mem usage", value, half, tokens
    notes.append("a hybrid sliding-window pool, but the log prints only one of its sub-pools: "
                 "its bytes per full-pool token cannot be measured")
    return None


def _sum(pool: KvPool) -> tuple[Fraction | None, Fraction]:
    parts = [_exact(raw) for raw in pool.raw]
    if pool.gib is None or not parts:
        return None, Fraction(0)
    if pool.kv_gib is not None:
        return parts[-1]
    return sum((p[0] for p in parts), Fraction(0)), sum((p[1] for p in parts), Fraction(0))


def compare(log: SglangLog, geometry: AttentionGeometry, layout_: ParallelLayout, *,
            kv_cache_dtype_: str, engine_version: str | None, source: str) -> ImplMeasurement:
    """The log's KV bytes per token per GPU against kvlint's SGLang theory."""
    notes: list[str] = []
    version = engine_version
    try:
        behaviour = engine_behaviour("sglang", version, geometry.model_type,
                                     is_mla=geometry.is_mla)
    except ValueError:
        notes.append(f"SGLang {version} is not a version kvlint knows; used the newest")
        version = None
        behaviour = engine_behaviour("sglang", None, geometry.model_type, is_mla=geometry.is_mla)
    # the run's own SWA pool share, as its ServerArgs line prints it
    behaviour = with_pool_share(behaviour, EngineStart(
        swa_full_tokens_ratio=log.arg_float("swa_full_tokens_ratio")))
    try:
        analysis = analyze(geometry, ServingPlan(
            layout=layout_, kv_cache_dtype=kv_cache_dtype_, engine="sglang",
            engine_version=version, behaviour=behaviour, dtype=model_dtype(log)))
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from None
    exact = analysis.footprint.bytes_per_token_per_gpu_exact
    theory = analysis.footprint.bytes_per_token_per_gpu
    if exact is None or theory is None or not exact:
        raise UsageError(f"{source}: {behaviour.label} cannot shard this model's KV heads over "
                         f"tp={layout_.tp}")
    details: dict[str, Any] = {
        "source": source, "engine": behaviour.label, "tp": layout_.tp, "pp": layout_.pp,
        "kv_cache_dtype": analysis.dtype.name, "theory_bytes_per_token": float(exact),
        "version_range": list(log.version_range) if log.version_range else None,
        "dated": log.dated,
        "printed": {"pools": [{"rank": p.rank, "label": p.label, "tokens": p.tokens,
                               "k_gib": p.k_gib, "v_gib": p.v_gib, "kv_gib": p.kv_gib,
                               "dtype": p.dtype} for p in log.pools[:8]],
                    "max_total_num_tokens": log.max_total_num_tokens,
                    "free_start_gib": log.free_start_gib, "weights_gib": log.weights_gib,
                    "free_after_pool_gib": log.free_after_pool_gib,
                    "server_args": dict(log.server_args)},
    }
    if log.tp is not None and log.tp != layout_.tp:
        notes.append(f"the log's server ran at tp={log.tp}, the theory uses tp={layout_.tp}")
    measured: float | None = None
    found = _pool_total(log, notes)
    if found is not None:
        what, gib, half, tokens = found
        if not gib or half / gib > COARSE:
            notes.append(f"printed {what}: {float(gib):g} GiB for {tokens:,} tokens, too coarse "
                         "to compare (its rounding alone moves it more than 5 %)")
        else:
            measured = float(gib * GIB / tokens)
            predicted = float(exact * tokens / GIB)
            low, high = float((gib - half) * GIB / tokens), float((gib + half) * GIB / tokens)
            within = low <= float(exact) <= high
            details["pool"] = {"what": what, "gib": float(gib), "tokens": tokens,
                               "predicted_gib": round(predicted, 4),
                               "within_rounding": within}
            notes.append(f"printed {what}: {float(gib):g} GiB for {tokens:,} tokens per GPU = "
                         f"{measured:,.1f} B/token ({low:,.0f}..{high:,.0f} within the GiB "
                         f"rounding); kvlint {float(exact):,.1f} B/token, {predicted:.2f} GiB")
    else:
        notes.append("the log prints no KV pool size in both GiB and tokens (KV Cache is "
                     "allocated ... K size/V size/KV size): nothing to compare")
    if log.swa_disabled_arch:
        notes.append(f"SGLang disabled its hybrid SWA pool for {log.swa_disabled_arch}: every "
                     "layer keeps the full length")
    if geometry.is_mla and not analysis.cached.is_mla:
        notes.append(f"{behaviour.label} caches full per-head K/V for this MLA model")
    details["bytes_per_token"] = measured
    return ImplMeasurement(
        impl="sglang", dtype=analysis.dtype.name, theory_read_bytes=theory,
        measured_read_bytes=None, theory_cache_bytes=theory,
        measured_cache_bytes=None if measured is None else round(measured),
        details=details, notes=tuple(notes) + log.notes)


def plan(log: SglangLog, layout_: ParallelLayout, *, kv_cache_dtype_: str,
         engine_version: str | None, gpu_memory_gib: float | None, fraction: float | None,
         source: str, notes: list[str]) -> ServingPlan:
    """The plan the logged server ran: what the log printed, the options where given."""
    from kvlint.model.gpu_memory import gpu_memory_bytes
    from kvlint.model.sglang_memory import start_context_bytes

    sizing: dict[str, Any] = {}
    try:
        if gpu_memory_gib is not None:
            sizing["gpu_memory_bytes"] = gpu_memory_bytes(gpu_memory_gib)
            sizing["gpu_memory_source"] = "--gpu-memory"
        elif log.free_start_gib is not None:
            total = log.free_start_gib * GIB + start_context_bytes(layout_.tp, layout_.pp)
            sizing["gpu_memory_bytes"] = gpu_memory_bytes(total / GIB)
            sizing["gpu_memory_source"] = ("the log (Load weight begin avail mem, plus kvlint's "
                                           "start-up context estimate)")
        else:
            notes.append("the log prints no free memory at start (Load weight begin. avail "
                          "mem=): give --gpu-memory GIB for kvlint's capacity next to #tokens")
    except ValueError as err:
        raise UsageError(f"{source}: GPU memory: {err}") from None
    start = EngineStart(chunked_prefill_size=log.arg_int("chunked_prefill_size"),
                        cuda_graph_max_bs=log.arg_int("cuda_graph_max_bs"),
                        cuda_graph_off=log.server_args.get("disable_cuda_graph") == "True",
                        page_size=log.arg_int("page_size"),
                        speculative_algorithm=log.server_args.get("speculative_algorithm"),
                        swa_full_tokens_ratio=log.arg_float("swa_full_tokens_ratio"))
    cap = log.arg_int("max_total_tokens")
    try:
        return ServingPlan(layout=layout_, kv_cache_dtype=kv_cache_dtype_, engine="sglang",
                           engine_version=engine_version, dtype=model_dtype(log),
                           gpu_memory_utilization=fraction or log.arg_float("mem_fraction_static"),
                           max_model_len=log.context_len or log.arg_int("context_length"),
                           engine_start=start, kv_tokens_cap=cap,
                           kv_tokens_cap_source="the log (server_args max_total_tokens)"
                           if cap else None, **sizing)
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from None


def _gib(value: int | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


def terms(log: SglangLog, capacity: Capacity | None, context_bytes: int
          ) -> tuple[LogTerm, ...]:
    """SGLang's printed start-up memory next to kvlint's prediction, term by term."""
    pool = log.pools[0] if log.pools else None
    tokens = (pool.tokens if pool else None) or log.max_total_num_tokens
    rows = [
        LogTerm("free at start (Load weight begin avail mem)", "GiB", log.free_start_gib,
                None if capacity is None else _gib(capacity.gpu.memory_bytes - context_bytes),
                True),
        LogTerm("model weights (Load weight end mem usage)", "GiB", log.weights_gib,
                None if capacity is None else _gib(capacity.weight_bytes_per_gpu),
                estimated=capacity is not None and capacity.weights_estimated),
        LogTerm("KV pool (K size + V size / KV size)", "GiB",
                None if pool is None or pool.gib is None else round(pool.gib, 2),
                None if capacity is None else _gib(capacity.kv_budget_bytes_per_gpu), True),
        LogTerm("#tokens (max_total_num_tokens)", "tokens",
                None if tokens is None else float(tokens),
                None if capacity is None else float(capacity.max_tokens), True),
    ]
    return tuple(r for r in rows if r.printed is not None or r.predicted is not None)


def report(measurement: ImplMeasurement, *, path: str, layers: int,
           capacity_terms: tuple[LogTerm, ...], decided: str) -> ProbeReport:
    return ProbeReport(
        device="cuda", method="log", context=1, batch=1, layers=layers,
        impls=(measurement,), built="nothing built: read from an SGLang start-up log",
        notes=(f"SGLang log {path}; bytes per token per GPU", decided),
        terms=capacity_terms)
