"""``kvlint probe MODEL --vllm-log FILE``: what a vLLM start-up log says it allocated, per
token per GPU, against kvlint's engine-aware theory (no GPU, no server).

vLLM sizes its KV pool as ``num_blocks = floor(available / page_bytes)`` with
``page_bytes = block_size x bytes per token per GPU`` (summed over the layers the GPU holds),
and prints the pool in GiB with two decimals (``Available KV cache memory: 6.51 GiB``) and
its size in tokens (``GPU KV cache size: 42,656 tokens``; V0 and early V1 print ``# GPU
blocks: N`` instead). So

* measured bytes per token per GPU = printed GiB x 2^30 / printed tokens;
* kvlint's reproduction of the printed tokens = ``floor(GiB x 2^30 / (block x theory)) x
  block``, with the interval the printed GiB's rounding (half its last digit) allows;
* the concurrency vLLM prints is tokens / max_model_len; kvlint's is its tokens over the same.

The measured / theory ratio is the probe's ``cache_ratio``: KV601 flags it from 1.3x (an
engine caching full per-head K/V for an MLA model lands near 9x).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from math import floor
from typing import Any

from kvlint.engines import behaviour as engine_behaviour
from kvlint.errors import UsageError
from kvlint.loaders.vllm_log import VllmLog
from kvlint.model.capacity import Capacity
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.memory import default_batch_limits
from kvlint.model.serving import EngineBehaviour, KvAnalysis, ServingPlan, analyze
from kvlint.model.vllm_groups import KvGroups, kv_groups
from kvlint.probe.result import ImplMeasurement, ProbeReport

GIB = 2**30
DEFAULT_BLOCK = 16
"""vLLM's default ``--block-size`` on CUDA (used when the log does not print one)."""
_TORCH_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16",
                 "float32": "float32", "float": "float32"}


def _half_step(raw: str | None) -> Fraction:
    """Half a unit of the last printed digit: ``"6.51"`` -> 0.005."""
    if not raw:
        return Fraction(0)
    try:
        exponent = Decimal(raw.replace(",", "")).as_tuple().exponent
    except InvalidOperation:
        return Fraction(0)
    if not isinstance(exponent, int):
        return Fraction(0)
    return Fraction(1, 2) * Fraction(10) ** exponent


def _gib(raw: str | None, value: float) -> Fraction:
    try:
        return Fraction(Decimal((raw or str(value)).replace(",", "")))
    except (InvalidOperation, ValueError):
        return Fraction(value)


def _stage_pairing(log: VllmLog, analysis: KvAnalysis, tp: int, pp: int, block: int
                   ) -> tuple[int, str, Fraction, Fraction] | None:
    """``(stage, its KV memory as printed and in GiB, its bytes per token)`` of the pipeline
    stage with the
    fewest blocks, where the log prints each rank's "Available KV cache memory" and every
    rank's stage is known (``Worker_PP1_TP0``, or ``rank=N`` as vLLM numbers ranks: ``pp_rank
    x tp + tp_rank``); ``None`` otherwise."""
    import re

    from kvlint.model.kv import stage_token_bytes

    if pp <= 1 or not log.kv_cache_gib_by_rank:
        return None
    per_stage = stage_token_bytes(analysis.cached, analysis.dtype, analysis.plan.layout,
                                  analysis.plan.behaviour.kv_sharding)
    if per_stage is None or len(per_stage) != pp:
        return None
    memory: dict[int, Fraction] = {}
    printed: dict[int, str] = {}
    for label, raw in log.kv_cache_gib_by_rank:
        named = re.search(r"\bPP(\d+)", label) or re.search(r"\brank=(\d+)", label)
        if named is None:
            return None
        stage = int(named.group(1)) if named.group(0).startswith("PP") \
            else int(named.group(1)) // max(tp, 1)
        try:
            value = Fraction(Decimal(raw.replace(",", "")))
        except (InvalidOperation, ValueError):
            return None
        if not 0 <= stage < pp:
            return None
        if stage not in memory or value < memory[stage]:
            memory[stage], printed[stage] = value, raw
    if len(memory) != pp:
        return None
    stage = min(memory, key=lambda s: _tokens(memory[s] * GIB, per_stage[s], block))
    return stage, printed[stage], memory[stage], per_stage[stage]


def _tokens(memory: Fraction, per_token: Fraction, block: int) -> int:
    return floor(memory / (per_token * block)) * block


def torch_dtype(printed: str | None) -> str | None:
    """The log's ``dtype=torch.bfloat16`` as a ``--dtype`` value (``None``: not printed)."""
    return _TORCH_DTYPES.get((printed or "").lower())


def served_kv_dtype(requested: str, log: VllmLog) -> str:
    """The requested KV dtype, or the log's when the caller left it ``auto``."""
    if requested.strip().lower() != "auto":
        return requested
    return log.kv_cache_dtype or "auto"


def _served(log: VllmLog, geometry: AttentionGeometry, *, tp: int, pp: int,
            kv_cache_dtype: str, engine_version: str | None, source: str
            ) -> tuple[KvAnalysis, EngineBehaviour, str | None, list[str]]:
    """The analysis of ``geometry`` as the log's vLLM serves it, the behaviour, the version
    used and what a reader should know."""
    version = engine_version
    notes: list[str] = []
    try:
        behaviour = engine_behaviour("vllm", version, geometry.model_type,
                                     is_mla=geometry.is_mla)
    except ValueError:
        notes.append(f"vLLM {version} is not a version kvlint knows; used the newest")
        version = None
        behaviour = engine_behaviour("vllm", None, geometry.model_type, is_mla=geometry.is_mla)
    try:
        plan = ServingPlan(layout=ParallelLayout(tp=tp, pp=pp),
                           kv_cache_dtype=served_kv_dtype(kv_cache_dtype, log), engine="vllm",
                           engine_version=version, behaviour=behaviour,
                           dtype=torch_dtype(log.dtype))
        analysis = analyze(geometry, plan)
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from None
    return analysis, behaviour, version, notes


def _grouped(analysis: KvAnalysis, behaviour: EngineBehaviour, version: str | None,
             tp: int, pp: int, block: int, printed_block: bool,
             batched_tokens: int | None = None) -> tuple[KvGroups, int] | None:
    """vLLM's KV cache groups for the served model and the block they use (``None``: one
    spec, a release without the grouped report, or pipeline stages; ``batched_tokens``:
    max_num_batched_tokens, which a window group's share of a request needs)."""
    groups = kv_groups(analysis.cached, analysis.dtype, tp, version,
                       behaviour.kv_sharding, batched_tokens) if pp == 1 else None
    if groups is None:
        return None
    return groups, block if printed_block else groups.block_size(block)


def grouped_terms(log: VllmLog, geometry: AttentionGeometry, capacity: Capacity | None, *,
                  tp: int, pp: int, kv_cache_dtype: str = "auto",
                  engine_version: str | None = None) -> tuple[int, float | None] | None:
    """kvlint's "GPU KV cache size" and "Maximum concurrency" in vLLM's grouped units, from
    its own KV budget (``None`` where vLLM reports tokens per token bytes)."""
    if capacity is None:
        return None
    analysis, behaviour, version, _ = _served(
        log, geometry, tp=tp, pp=pp, kv_cache_dtype=kv_cache_dtype,
        engine_version=engine_version, source="the log")
    batched = log.max_num_batched_tokens or default_batch_limits(
        version, capacity.gpu.memory_bytes, capacity.gpu.name,
        log.max_model_len or capacity.context)[0]
    found = _grouped(analysis, behaviour, version, tp, pp, log.block_size or DEFAULT_BLOCK,
                     log.block_size is not None, batched)
    if found is None:
        return None
    groups, block = found
    budget = max(capacity.kv_budget_bytes_per_gpu, 0)
    blocks = groups.blocks(budget, block)
    length = log.concurrency_tokens or capacity.context
    return (groups.printed_tokens(budget, block, length),
            groups.concurrency(blocks, length, block))


def compare(log: VllmLog, geometry: AttentionGeometry, *, tp: int, pp: int,
            kv_cache_dtype: str = "auto", engine_version: str | None = None,
            source: str = "the log") -> ImplMeasurement:
    """The log's KV bytes per token per GPU against kvlint's theory at ``tp`` x ``pp``
    (``engine_version``: the one the engine ran, as the caller resolved it; ``None``: the
    newest known)."""
    analysis, behaviour, version, notes = _served(
        log, geometry, tp=tp, pp=pp, kv_cache_dtype=kv_cache_dtype,
        engine_version=engine_version, source=source)
    footprint = analysis.footprint
    exact = footprint.bytes_per_token_per_gpu_exact
    theory = footprint.bytes_per_token_per_gpu
    if exact is None or theory is None or not exact:
        raise UsageError(f"{source}: {behaviour.label} cannot shard this model's KV heads "
                         f"over tp={tp}")
    block = log.block_size or DEFAULT_BLOCK
    # a model with several cache specs: vLLM prints num_blocks // groups x block tokens, one
    # printed token standing for a token in every (padded) layer of every group
    found = _grouped(analysis, behaviour, version, tp, pp, block, log.block_size is not None,
                     log.max_num_batched_tokens)
    groups = found[0] if found else None
    block = found[1] if found else block
    per_token: Fraction = exact

    length = log.concurrency_tokens or log.max_model_len  # the concurrency report's L

    def count(memory: Fraction) -> int:
        if groups is not None:
            return groups.printed_tokens(memory, block, length)
        return _tokens(memory, per_token, block)

    if groups is not None:
        exact = groups.bytes_per_printed_token_at(block, length)
        theory = round(exact)
        notes.append(f"vLLM {version} groups this model's layers into {groups.num_groups} KV "
                     f"cache groups of {groups.group_size} (v1/core/kv_cache_utils.py: one "
                     f"page per group and block, {groups.padded_layers} layers with padding), "
                     f"so one printed token stands for {float(exact):,.0f} B of KV memory")
    details: dict[str, Any] = {
        "source": source, "engine": behaviour.label, "tp": tp, "pp": pp,
        "kv_cache_dtype": analysis.dtype.name, "block_size": block,
        "block_size_printed": log.block_size is not None,
        "theory_bytes_per_token": float(exact),
        "printed": {name: getattr(log, name) for name in (
            "model", "version", "engine", "tp", "pp", "dtype", "max_model_len",
            "kv_cache_dtype", "gpu_memory_utilization", "enforce_eager", "weights_gib",
            "non_torch_gib", "activation_peak_gib", "cuda_graph_gib", "kv_cache_gib",
            "kv_in_use_gib", "gpu_blocks", "kv_tokens", "concurrency_tokens", "concurrency",
            "needed_gib", "needed_len", "max_tokens_error")},
    }
    for key, value in (("tp", log.tp), ("pp", log.pp)):
        given = tp if key == "tp" else pp
        if value is not None and value != given:
            notes.append(f"the log's engine ran at {key}={value}, the theory uses {key}={given}")

    measured: float | None = None
    memory_gib = log.kv_memory_gib
    tokens = log.capacity_tokens
    staged = _stage_pairing(log, analysis, tp, pp, block) if groups is None else None
    if staged is not None and tokens:
        # each rank's GiB with its own stage's layers; vLLM gives every worker the fewest
        # blocks (unify_kv_cache_configs), so the stage with the fewest sets the tokens
        stage, raw_text, memory, stage_bytes = staged
        predicted = _tokens(memory * GIB, stage_bytes, block)
        step = _half_step(raw_text)
        low = _tokens((memory - step) * GIB, stage_bytes, block)
        high = _tokens((memory + step) * GIB, stage_bytes, block)
        error = (tokens - predicted) / predicted if predicted else None
        measured = float(memory * GIB / tokens * exact / stage_bytes)
        details["tokens"] = {"printed": tokens, "predicted": predicted, "low": low,
                             "high": high, "within_rounding": low <= tokens <= high,
                             "error": error, "stage": stage,
                             "from": "GPU KV cache size" if log.kv_tokens is not None
                             else f"# GPU blocks x {block}"}
        shown = "" if error is None else f", {error:+.2%}"
        notes.append(f"per pipeline stage: each rank's Available KV cache memory over its own "
                     f"stage's layers; stage {stage} ({float(memory):g} GiB at "
                     f"{float(stage_bytes):,.1f} B/token) has the fewest blocks, and vLLM gives "
                     f"every worker that many: kvlint {predicted:,} tokens against "
                     f"{tokens:,} printed ({low:,}..{high:,} within the GiB rounding{shown})")
    elif memory_gib is not None and tokens:
        # the smaller of the two (pipeline stages: the last stage's pool sized the cache)
        raw = log.raw.get("kv_cache_gib" if log.kv_cache_gib == memory_gib else "kv_in_use_gib")
        memory = _gib(raw, memory_gib)
        step = _half_step(raw)
        measured = float(memory * GIB / tokens)
        predicted = count(memory * GIB)
        low = count((memory - step) * GIB)
        high = count((memory + step) * GIB)
        within = low <= tokens <= high
        error = (tokens - predicted) / predicted if predicted else None
        details["tokens"] = {"printed": tokens, "predicted": predicted, "low": low,
                             "high": high, "within_rounding": within, "error": error,
                             "from": "GPU KV cache size" if log.kv_tokens is not None
                             else f"# GPU blocks x {block}"}
        shown = "" if error is None else f", {error:+.2%}"
        if tp * pp > 1 and tokens < low:
            # every rank's pool is cut to the smallest rank's; one rank's GiB can hold more
            implied = tokens * exact / GIB
            details["tokens"]["smallest_rank_gib"] = round(float(implied), 3)
            notes.append(f"per rank: on {tp * pp} GPUs every rank prints its own Available KV "
                         "cache memory (and, before the sizes were unified, its own GPU KV "
                         "cache size), and vLLM cuts every cache to the smallest rank's "
                         f"(kv_cache_utils.unify_kv_cache_configs); {tokens:,} tokens at "
                         f"{float(exact):,.1f} B/token are {float(implied):.2f} GiB, so the "
                         "tokens line is a rank's with less KV memory than the printed "
                         f"{memory_gib:g} GiB")
        notes.append(f"printed KV cache: {memory_gib:g} GiB, {tokens:,} tokens per GPU; kvlint "
                     f"from {memory_gib:g} GiB at {float(exact):,.1f} B/token: {predicted:,} "
                     f"tokens ({low:,}..{high:,} within the GiB rounding{shown})")
        if log.concurrency is not None and log.concurrency_tokens:
            hybrid = groups.concurrency(groups.blocks(memory * GIB, block),
                                        log.concurrency_tokens, block) if groups else None
            ours = hybrid if hybrid is not None else predicted / log.concurrency_tokens
            details["concurrency"] = {"printed": log.concurrency, "predicted": round(ours, 2),
                                      "tokens_per_request": log.concurrency_tokens}
            notes.append(f"maximum concurrency for {log.concurrency_tokens:,} tokens per "
                         f"request: printed {log.concurrency:.2f}x, kvlint {ours:.2f}x")
    elif log.needed_gib is not None and log.needed_len:
        raw = log.raw.get("needed_gib")
        needed = _gib(raw, log.needed_gib)
        measured = float(needed * GIB / log.needed_len)
        needed_ours = float(exact * log.needed_len / GIB)
        details["needed"] = {"printed_gib": log.needed_gib, "predicted_gib": needed_ours,
                             "max_seq_len": log.needed_len}
        notes.append(f"printed: {log.needed_gib:g} GiB KV cache needed for {log.needed_len:,} "
                     f"tokens; kvlint: {needed_ours:.2f} GiB")
    else:
        notes.append("the log prints no KV pool size in both GiB and tokens (Available KV "
                     "cache memory + GPU KV cache size / # GPU blocks): nothing to compare")
        if log.gpu_blocks is not None and log.concurrency and log.concurrency_tokens:
            notes.append(f"{log.gpu_blocks:,} GPU blocks x {block} = "
                         f"{log.gpu_blocks * block:,} tokens per GPU")
    if geometry.is_mla and not analysis.cached.is_mla:
        notes.append(f"{behaviour.label} caches full per-head K/V for this MLA model")
    details["bytes_per_token"] = measured
    return ImplMeasurement(
        impl="vllm",
        dtype=analysis.dtype.name,
        theory_read_bytes=theory,
        measured_read_bytes=None,
        theory_cache_bytes=theory,
        measured_cache_bytes=None if measured is None else round(measured),
        details=details,
        notes=tuple(notes) + log.notes,
    )


def report(measurement: ImplMeasurement, *, path: str, layers: int) -> ProbeReport:
    """The ``probe`` block for one log: figures per token per GPU (context 1, batch 1)."""
    return ProbeReport(
        device="cuda",
        method="log",
        context=1,
        batch=1,
        layers=layers,
        impls=(measurement,),
        built="nothing built: read from a vLLM start-up log",
        notes=(f"vLLM log {path}; bytes per token per GPU",),
    )
