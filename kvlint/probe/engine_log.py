"""``kvlint probe MODEL --engine-log FILE``: which engine wrote a start-up log, from its
wording, and the SGLang, TensorRT-LLM and LMDeploy paths of the probe (the vLLM one is
:func:`kvlint.probe.run.probe_log`).

Each engine's reader is built from that engine's own format strings
(kvlint/loaders/{vllm,sglang,trtllm,lmdeploy}_log_formats.json); the engine is the one whose
table the log's lines match the most entries of (ties: vLLM, SGLang, TensorRT-LLM, LMDeploy,
in that order), and the lines that decided it are named. A log no reader recognises is a
usage error (exit 2, one line)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.errors import UsageError
from kvlint.linter import LintRun, lint_config
from kvlint.probe.log_common import loaded_config, log_version, target_of

if TYPE_CHECKING:
    from kvlint.loaders.log_formats import EngineLog
    from kvlint.loaders.start_failures import OutOfMemory
    from kvlint.model.geometry import AttentionGeometry
    from kvlint.model.serving import ServingPlan
    from kvlint.probe.result import ImplMeasurement, LogTerm
    from kvlint.rules.base import Rule

ENGINES = ("vllm", "sglang", "trtllm", "lmdeploy")
DISPLAY = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "lmdeploy": "LMDeploy"}
_ARTICLE = {"vllm": "a", "sglang": "an", "trtllm": "a", "lmdeploy": "an"}


def _scores(path: Path) -> dict[str, tuple[int, int, tuple[str, ...]]]:
    """engine -> (score, table entries matched, the lines read first) of the log."""
    from kvlint.loaders import lmdeploy_log, sglang_log, trtllm_log, vllm_log

    vllm = vllm_log.read_log(path)
    sglang = sglang_log.read_log(path)
    trtllm = trtllm_log.read_log(path)
    lmdeploy = lmdeploy_log.read_log(path)
    def own(log: EngineLog, engine: str) -> tuple[int, tuple[str, ...]]:
        """An out-of-memory error in the engine's own wording counts as one line read."""
        if log.oom is not None and log.oom.engine == engine:
            return 1, (*log.evidence, log.oom.line)
        return 0, log.evidence

    trt, trt_lines = own(trtllm, "trtllm")
    lmd, lmd_lines = own(lmdeploy, "lmdeploy")
    return {
        "vllm": (len(vllm.formats) + (2 if vllm.engine or vllm.version else 0),
                 len(vllm.formats), tuple(f"format {f}" for f in vllm.formats[:3])),
        "sglang": (len(sglang.formats) + (2 if sglang.server_args else 0),
                   len(sglang.formats), sglang.evidence),
        "trtllm": (len(trtllm.formats) + trt + (2 if trtllm.version else 0),
                   len(trtllm.formats) + trt, trt_lines),
        "lmdeploy": (len(lmdeploy.formats) + lmd + (2 if lmdeploy.backend_args else 0),
                     len(lmdeploy.formats) + lmd, lmd_lines),
    }


def detect(path: Path, forced: str | None = None) -> tuple[str, str]:
    """(engine, the sentence saying what decided it) of the log at ``path``: the engine
    whose table the most lines match (its printed options and version count 2)."""
    if forced is not None:
        return forced, f"read as {_ARTICLE[forced]} {DISPLAY[forced]} log (--{forced}-log)"
    scores = _scores(path)
    engine = max(ENGINES, key=lambda e: (scores[e][0], -ENGINES.index(e)))
    if not scores[engine][0]:
        named = _lmdeploy_logger(path)
        if named is not None:
            return "lmdeploy", (f"recognised as an LMDeploy log by its logger's name "
                                f"({named!r}), though none of its lines is a KV figure")
        from kvlint.loaders.trtllm_log import read_log

        oom = read_log(path).oom
        if oom is not None:
            raise UsageError(f"{path}: the log ends in PyTorch's out-of-memory error "
                             f"({oom.line[:80]!r}) but no line names the engine that ran it; "
                             "give --vllm-log, --sglang-log, --trtllm-log or --lmdeploy-log")
        raise UsageError(f"{path}: no line of a vLLM or SGLang start-up log (nor of "
                         "TensorRT-LLM or LMDeploy) was recognised; give the engine's start-up "
                         "log (or --vllm-log/--sglang-log/--trtllm-log/--lmdeploy-log FILE)")
    others = ", ".join(f"{scores[e][1]} of {DISPLAY[e]}" for e in ENGINES if e != engine)
    shown = "; ".join(repr(line.strip()[:80]) for line in scores[engine][2][:2])
    return engine, (f"recognised as {_ARTICLE[engine]} {DISPLAY[engine]} log "
                    f"({scores[engine][1]} {DISPLAY[engine]} wording(s) against {others}), "
                    f"from: {shown}")


_LMDEPLOY_LOGGER = re.compile(
    r"^[^\n]{0,40}? - (?:lmdeploy|turbomind) - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - ",
    re.MULTILINE)
"""LMDeploy's own log records (``2024-08-05 05:40:52,191 - lmdeploy - WARNING - ...``,
``01/19 15:19:51 - turbomind - WARNING - ...``): its loggers' names, whatever the message."""


def _lmdeploy_logger(path: Path) -> str | None:
    """The first record of LMDeploy's own loggers in the log's first 4 MiB, if any."""
    from kvlint.loaders.files import UnreadableFile, read_text

    try:
        text = read_text(str(path), 4 * 2**20)
    except (OSError, UnreadableFile):
        return None
    found = _LMDEPLOY_LOGGER.search(text)
    return found.group(0).strip()[:80] if found else None


@dataclass(frozen=True)
class SglangLogOptions:
    """What the command line gives instead of the log (``None``: the log's)."""

    tp: int | None = None
    pp: int | None = None
    kv_cache_dtype: str = "auto"
    engine_version: str | None = None
    gpu_memory_gib: float | None = None
    mem_fraction_static: float | None = None


def probe_sglang_log(path: str, ref: str, rules: Sequence[type[Rule]],
                     options: SglangLogOptions, *, decided: str, revision: str | None,
                     offline: bool, fail_on: str) -> LintRun:
    """An SGLang start-up log's KV pool per token per GPU against theory, and its #tokens
    against kvlint's capacity (no GPU)."""
    from kvlint.loaders.sglang_log import read_log
    from kvlint.model.sglang_memory import start_context_bytes
    from kvlint.probe import sglang_log_staging as staging

    log = read_log(Path(path))
    notes: list[str] = []
    options = replace(options, gpu_memory_gib=failed_start(
        "sglang", log.oom, options.gpu_memory_gib, notes))
    layout = staging.layout(log, options.tp, options.pp, path)
    loaded, geometry = loaded_config(ref, revision, offline)
    version = log_version("sglang", options.engine_version, None, notes, log.version_range,
                          log.dated, loaded.config)
    dtype = staging.kv_cache_dtype(options.kv_cache_dtype, log)
    plan = staging.plan(log, layout, kv_cache_dtype_=dtype, engine_version=version,
                        gpu_memory_gib=options.gpu_memory_gib,
                        fraction=options.mem_fraction_static, source=path, notes=notes)
    target = target_of(loaded)
    if geometry is None:
        return LintRun((lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                    offline=offline),), fail_on, tuple(rules))
    sized = lint_config(target, loaded.config, plan, (), source=loaded.source,
                        geometry=geometry, offline=offline)
    measured = staging.compare(log, geometry, layout, kv_cache_dtype_=dtype,
                               engine_version=version, source=path)
    terms = staging.terms(log, sized.capacity if plan.gpu_memory_bytes else None,
                          start_context_bytes(layout.tp, layout.pp))
    report = staging.report(measured, path=path, layers=geometry.num_layers,
                            capacity_terms=terms, decided=decided)
    report = replace(report, notes=report.notes + tuple(notes),
                     out_of_memory=log.oom.line if log.oom else None)
    return LintRun((lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                geometry=geometry, probe=report, offline=offline),),
                   fail_on, tuple(rules))


@dataclass(frozen=True)
class EngineLogOptions:
    """What the command line gives instead of a TensorRT-LLM or LMDeploy log (``None``: the
    log's)."""

    tp: int | None = None
    pp: int | None = None
    kv_cache_dtype: str = "auto"
    engine_version: str | None = None
    gpu_memory_gib: float | None = None
    fraction: float | None = None
    """TensorRT-LLM ``free_gpu_memory_fraction`` / LMDeploy ``cache_max_entry_count``
    (``--gpu-memory-utilization``)."""


@dataclass(frozen=True)
class _LogProbe:
    """One TensorRT-LLM or LMDeploy log probe: the model, the log and how it is compared."""

    ref: str
    revision: str | None
    offline: bool
    fail_on: str
    engine: str
    path: str
    decided: str
    measure: Callable[[AttentionGeometry], ImplMeasurement]
    terms: Callable[[ServingPlan, AttentionGeometry], tuple[LogTerm, ...]]
    oom: OutOfMemory | None = None


REFUSALS = frozenset({"vllm.no_cache_memory", "sglang.pool"})
"""The engines' own refusals (kvlint.loaders.start_failures): no allocation failed, the KV
cache's share came out empty."""


def failed_start(engine: str, oom: OutOfMemory | None, gpu_memory_gib: float | None,
                  notes: list[str]) -> float | None:
    """A start that ran out of memory, in the notes; the GPU memory to size with: the
    command line's, else the total the error printed."""
    if oom is None:
        return gpu_memory_gib
    what = ("stopped at start: its sizing left no memory for the KV cache"
            if oom.wording in REFUSALS else "ran out of GPU memory at start")
    notes.append(f"{DISPLAY[engine]} {what}: {oom.said()} (the wording of {oom.source})")
    if gpu_memory_gib is None and oom.total_gib is not None:
        notes.append(f"GPU memory: {oom.total_gib:.2f} GiB, the total the error printed")
        return oom.total_gib
    return gpu_memory_gib


def _run(job: _LogProbe, rules: Sequence[type[Rule]], plan: ServingPlan,
         notes: list[str]) -> LintRun:
    from kvlint.probe.log_measure import report

    loaded, geometry = loaded_config(job.ref, job.revision, job.offline)
    target = target_of(loaded)
    if geometry is None:
        return LintRun((lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                    offline=job.offline),), job.fail_on, tuple(rules))
    measured = job.measure(geometry)
    probe = report(measured, engine=DISPLAY[job.engine], path=job.path,
                   layers=geometry.num_layers, terms=job.terms(plan, geometry),
                   decided=job.decided, notes=tuple(notes),
                   out_of_memory=job.oom.line if job.oom else None)
    return LintRun((lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                geometry=geometry, probe=probe, offline=job.offline),),
                   job.fail_on, tuple(rules))


def probe_trtllm_log(path: str, ref: str, rules: Sequence[type[Rule]],
                     options: EngineLogOptions, *, decided: str, revision: str | None,
                     offline: bool, fail_on: str) -> LintRun:
    """A TensorRT-LLM start-up log's KV pool per token per GPU (Allocated GiB over its
    tokens) against theory, and its tokens against kvlint's capacity from the printed
    total (no GPU)."""
    from kvlint.loaders.trtllm_log import read_log
    from kvlint.probe import trtllm_log_staging as staging

    log = read_log(Path(path))
    notes: list[str] = []
    options = replace(options, gpu_memory_gib=failed_start(
        "trtllm", log.oom, options.gpu_memory_gib, notes))
    layout = staging.layout(options.tp, options.pp, path)
    version = log_version("trtllm", options.engine_version, log.version, notes,
                          log.version_range)
    if log.version is None and log.version_range is not None:
        notes.append("TensorRT-LLM releases whose log wording kvlint read: "
                     "0.7.1 and 1.2.0rc2, with lines of the closed-source 0.8 and 0.10 "
                     "taken from public logs (kvlint/loaders/trtllm_log_formats.json)")
    dtype = options.kv_cache_dtype
    plan = staging.plan(log, layout, kv_cache_dtype=dtype, engine_version=version,
                        gpu_memory_gib=options.gpu_memory_gib, fraction=options.fraction,
                        source=path, notes=notes)

    def terms(plan_: ServingPlan, geometry: AttentionGeometry) -> tuple[LogTerm, ...]:
        loaded, _ = loaded_config(ref, revision, offline)
        sized = lint_config(target_of(loaded), loaded.config, plan_, (), source=loaded.source,
                            geometry=geometry, offline=offline)
        return staging.terms(log, sized.capacity if plan_.gpu_memory_bytes else None)

    return _run(_LogProbe(ref, revision, offline, fail_on, "trtllm", path, decided,
                          lambda g: staging.compare(log, g, layout, kv_cache_dtype=dtype,
                                                    engine_version=version, source=path),
                          terms, log.oom), rules, plan, notes)


def probe_lmdeploy_log(path: str, ref: str, rules: Sequence[type[Rule]],
                       options: EngineLogOptions, *, decided: str, revision: str | None,
                       offline: bool, fail_on: str) -> LintRun:
    """An LMDeploy start-up log's KV cache per token per GPU (TurboMind's block size, or the
    PyTorch engine's budget over its blocks) against theory, and its tokens against
    kvlint's capacity from the printed free memory (no GPU)."""
    from kvlint.loaders.lmdeploy_log import read_log
    from kvlint.model.gpu_memory import gpu_memory_bytes
    from kvlint.model.sglang_memory import start_context_bytes
    from kvlint.probe import lmdeploy_log_staging as staging

    log = read_log(Path(path))
    notes: list[str] = []
    options = replace(options, gpu_memory_gib=failed_start(
        "lmdeploy", log.oom, options.gpu_memory_gib, notes))
    layout = staging.layout(log, options.tp, path)
    version = log_version("lmdeploy", options.engine_version, None, notes, log.version_range,
                          log.dated)
    dtype = staging.kv_cache_dtype(options.kv_cache_dtype, log)
    context = start_context_bytes(layout.tp, layout.pp)
    try:
        given = gpu_memory_bytes(options.gpu_memory_gib) \
            if options.gpu_memory_gib is not None else None
    except ValueError as err:
        raise UsageError(f"{path}: GPU memory: {err}") from None
    plan = staging.plan(log, layout, kv_cache_dtype_=dtype, engine_version=version,
                        gpu_memory_bytes_=given, fraction=options.fraction, source=path)
    if given is None and log.free_mib is None:
        notes.append("the log prints no free memory after the weights (the PyTorch engine's "
                     "DEBUG 'minimal free gpu memory'): give --gpu-memory GIB for kvlint's "
                     "capacity next to the printed tokens")

    def terms(plan_: ServingPlan, geometry: AttentionGeometry) -> tuple[LogTerm, ...]:
        loaded, _ = loaded_config(ref, revision, offline)
        target = target_of(loaded)
        if given is None and log.free_mib is not None:
            first = lint_config(target, loaded.config, replace(
                plan_, gpu_memory_bytes=gpu_memory_bytes(80.0), gpu_memory_source="probe"),
                (), source=loaded.source, geometry=geometry, offline=offline).capacity
            if first is None:
                return staging.terms(log, None, context)
            total = int(log.free_mib * 2**20) + context + first.weight_bytes_per_gpu
            try:
                plan_ = replace(plan_, gpu_memory_bytes=gpu_memory_bytes(total / 2**30),
                                gpu_memory_source="the log (minimal free gpu memory, plus "
                                                  "kvlint's weights and start-up context)")
            except ValueError:
                return staging.terms(log, None, context)
        if not plan_.gpu_memory_bytes:
            return staging.terms(log, None, context)
        sized = lint_config(target, loaded.config, plan_, (), source=loaded.source,
                            geometry=geometry, offline=offline)
        return staging.terms(log, sized.capacity, context)

    return _run(_LogProbe(ref, revision, offline, fail_on, "lmdeploy", path, decided,
                          lambda g: staging.compare(log, g, layout, kv_cache_dtype_=dtype,
                                                    engine_version=version, source=path),
                          terms, log.oom), rules, plan, notes)
