"""``kvlint probe MODEL --engine-log FILE``: which engine wrote a start-up log, from its
wording, and the SGLang path of the probe (the vLLM one is :func:`kvlint.probe.run.probe_log`).

Each engine's reader is built from that engine's own format strings
(kvlint/loaders/vllm_log_formats.json, sglang_log_formats.json); the engine is the one whose
table the log's lines match more entries of, and the lines that decided it are named. A log
neither reader recognises is a usage error (exit 2, one line)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.errors import UsageError
from kvlint.linter import LintRun, lint_config
from kvlint.probe.log_common import loaded_config, log_version, target_of

if TYPE_CHECKING:
    from kvlint.rules.base import Rule

ENGINES = ("vllm", "sglang")


def detect(path: Path, forced: str | None = None) -> tuple[str, str]:
    """(engine, the sentence saying what decided it) of the log at ``path``."""
    if forced is not None:
        return forced, f"read as a{'n SGLang' if forced == 'sglang' else ' vLLM'} log " \
                       f"(--{forced}-log)"
    from kvlint.loaders import sglang_log, vllm_log

    sglang = sglang_log.read_log(path)
    vllm = vllm_log.read_log(path)
    vllm_score = len(vllm.formats) + (2 if vllm.engine or vllm.version else 0)
    sglang_score = len(sglang.formats) + (2 if sglang.server_args else 0)
    if not vllm_score and not sglang_score:
        raise UsageError(f"{path}: no line of a vLLM or SGLang start-up log was recognised; "
                         "give the engine's start-up log (or --vllm-log/--sglang-log FILE)")
    if sglang_score > vllm_score:
        shown = "; ".join(repr(line.strip()[:80]) for line in sglang.evidence[:2])
        return "sglang", (f"recognised as an SGLang log ({len(sglang.formats)} SGLang "
                          f"wording(s) against {len(vllm.formats)} of vLLM), from: {shown}")
    return "vllm", (f"recognised as a vLLM log ({len(vllm.formats)} vLLM wording(s) "
                    f"against {len(sglang.formats)} of SGLang; formats "
                    f"{', '.join(vllm.formats[:3])})")


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
    layout = staging.layout(log, options.tp, options.pp, path)
    version = log_version("sglang", options.engine_version, None, notes, log.version_range)
    dtype = staging.kv_cache_dtype(options.kv_cache_dtype, log)
    plan = staging.plan(log, layout, kv_cache_dtype_=dtype, engine_version=version,
                        gpu_memory_gib=options.gpu_memory_gib,
                        fraction=options.mem_fraction_static, source=path, notes=notes)
    loaded, geometry = loaded_config(ref, revision, offline)
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
    report = replace(report, notes=report.notes + tuple(notes))
    return LintRun((lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                geometry=geometry, probe=report, offline=offline),),
                   fail_on, tuple(rules))
