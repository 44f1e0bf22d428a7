"""What the TensorRT-LLM and LMDeploy log probes share (:mod:`.trtllm_log_staging`,
:mod:`.lmdeploy_log_staging`): a printed KV size per token with the bounds its rounding
allows, kvlint's theory for the engine, and the measurement and report built from them.

The measured bytes per token per GPU is compared with kvlint's theory for that engine and
release: the probe's ``cache_ratio`` is measured / theory, and KV601 flags it from 1.3x (the
cache holds clearly more than theory), as for vLLM and SGLang. A figure whose bounds are more
than 10 % apart (a printed ``0.00 GiB``, a handful of blocks) is not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from kvlint.engines import behaviour as engine_behaviour
from kvlint.errors import UsageError
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import EngineBehaviour, EngineStart, KvAnalysis, ServingPlan, analyze
from kvlint.probe.result import ImplMeasurement, LogTerm, ProbeReport

GIB = 2**30
MIB = 2**20
COARSE = Fraction(5, 100)
"""Half the spread of a measured figure's bounds, relative to it, above which it is not
compared."""


def exact(raw: str) -> tuple[Fraction, Fraction]:
    """(value, half of its last printed digit) of a printed figure (``0, 0``: not one)."""
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return Fraction(0), Fraction(0)
    if not value.is_finite():
        return Fraction(0), Fraction(0)
    exponent = value.as_tuple().exponent
    half = Fraction(1, 2) * Fraction(10) ** exponent if isinstance(exponent, int) else Fraction(0)
    return Fraction(value), half


@dataclass(frozen=True)
class Printed:
    """A KV size per token per GPU measured from a log, with the bounds the printed figures
    allow (rounding, whole blocks)."""

    what: str
    value: Fraction
    low: Fraction
    high: Fraction
    tokens: int
    pool_bytes: Fraction | None = None

    @property
    def coarse(self) -> bool:
        return not self.value or (self.high - self.low) / 2 / self.value > COARSE


def theory(engine: str, version: str | None, geometry: AttentionGeometry,
           layout: ParallelLayout, *, kv_cache_dtype: str, source: str, notes: list[str],
           backend: str | None = None
           ) -> tuple[KvAnalysis, EngineBehaviour, str | None]:
    """kvlint's KV analysis of the model on ``engine`` at ``version`` (an unknown version:
    the newest, noted)."""
    try:
        behaviour = engine_behaviour(engine, version, geometry.model_type,
                                     is_mla=geometry.is_mla, architecture=geometry.architecture)
    except ValueError:
        notes.append(f"{engine} {version} is not a version kvlint knows; used the newest")
        version = None
        behaviour = engine_behaviour(engine, None, geometry.model_type, is_mla=geometry.is_mla,
                                     architecture=geometry.architecture)
    try:
        analysis = analyze(geometry, ServingPlan(
            layout=layout, kv_cache_dtype=kv_cache_dtype, engine=engine, engine_version=version,
            behaviour=behaviour, engine_start=EngineStart(backend=backend)))
    except ValueError as err:
        raise UsageError(f"{source}: {err}") from None
    return analysis, behaviour, version


FAILED_START = "the start failed for memory before the KV pool was allocated: no pool to compare"
"""The note of a log that ends in an out-of-memory error and prints no pool."""


def measurement(impl: str, analysis: KvAnalysis, behaviour: EngineBehaviour,
                printed: Printed | None, *, source: str, details: dict[str, Any],
                notes: list[str], missing: str) -> ImplMeasurement:
    """The measurement of ``printed`` against ``analysis``; ``missing``: the note when the
    log prints nothing to measure."""
    exact_bytes = analysis.footprint.bytes_per_token_per_gpu_exact
    theory_bytes = analysis.footprint.bytes_per_token_per_gpu
    if exact_bytes is None or theory_bytes is None or not exact_bytes:
        raise UsageError(f"{source}: {behaviour.label} cannot shard this model's KV heads over "
                         f"tp={analysis.plan.layout.tp}")
    details.update({"source": source, "engine": behaviour.label,
                    "tp": analysis.plan.layout.tp, "pp": analysis.plan.layout.pp,
                    "kv_cache_dtype": analysis.dtype.name,
                    "theory_bytes_per_token": float(exact_bytes)})
    measured: float | None = None
    if printed is None:
        notes.append(missing)
    elif printed.coarse:
        notes.append(f"{printed.what}: {float(printed.low):,.0f}..{float(printed.high):,.0f} "
                     f"B/token for {printed.tokens:,} tokens, too coarse to compare (its "
                     "rounding alone moves it more than 5 %)")
    else:
        measured = float(printed.value)
        within = printed.low <= Fraction(exact_bytes) <= printed.high
        details["pool"] = {"what": printed.what, "tokens": printed.tokens,
                           "bytes_per_token_low": float(printed.low),
                           "bytes_per_token_high": float(printed.high),
                           "within_rounding": within}
        if printed.pool_bytes is not None:
            details["pool"]["gib"] = round(float(printed.pool_bytes) / GIB, 4)
            details["pool"]["predicted_gib"] = round(float(exact_bytes) * printed.tokens / GIB, 4)
        notes.append(f"{printed.what}: {measured:,.1f} B/token per GPU "
                     f"({float(printed.low):,.0f}..{float(printed.high):,.0f} within the "
                     f"printed rounding) for {printed.tokens:,} tokens; kvlint "
                     f"{float(exact_bytes):,.1f} B/token")
    if analysis.geometry.is_mla and not analysis.cached.is_mla:
        notes.append(f"{behaviour.label} caches full per-head K/V for this MLA model")
    details["bytes_per_token"] = measured
    return ImplMeasurement(
        impl=impl, dtype=analysis.dtype.name, theory_read_bytes=theory_bytes,
        measured_read_bytes=None, theory_cache_bytes=theory_bytes,
        measured_cache_bytes=None if measured is None else round(measured),
        details=details, notes=tuple(notes))


def gib(value: int | float | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


def tokens_term(term: str, printed: int | None, predicted: int | None) -> LogTerm:
    return LogTerm(term, "tokens", None if printed is None else float(printed),
                   None if predicted is None else float(predicted), True)


def report(measured: ImplMeasurement, *, engine: str, path: str, layers: int,
           terms: tuple[LogTerm, ...], decided: str, notes: tuple[str, ...] = (),
           out_of_memory: str | None = None) -> ProbeReport:
    return ProbeReport(out_of_memory=out_of_memory,
        device="cuda", method="log", context=1, batch=1, layers=layers, impls=(measured,),
        built=f"nothing built: read from {'an' if engine[:1] in 'AEIL' else 'a'} {engine} "
              "start-up log",
        notes=(f"{engine} log {path}; bytes per token per GPU", decided, *notes),
        terms=tuple(t for t in terms if t.printed is not None or t.predicted is not None))
