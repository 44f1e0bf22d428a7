"""``kvlint probe`` at the edge: load the config, pick the path (CPU, GPU, staging), run the
rules on what was measured. torch, transformers and HTTP clients are imported only here and
below, when the command runs."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from typing import TYPE_CHECKING, Any

from kvlint.errors import UsageError
from kvlint.linter import LintRun, ModelResult, lint_config
from kvlint.loaders.hf_config import config_dtype
from kvlint.loaders.vllm_log import VllmLog
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import ServingPlan
from kvlint.probe import theory
from kvlint.probe.log_common import loaded_config, log_version, target_of
from kvlint.probe.result import ImplMeasurement, ProbeReport

if TYPE_CHECKING:
    from kvlint.rules.base import Rule

DEFAULT_CPU_CONTEXTS = (512,)
DEFAULT_ITL_CONTEXTS = (1024, 2048, 4096, 8192)
INSTALL_HINT = "pip install 'kvlint[probe]' (torch's CPU build is enough for --device cpu)"


@dataclass(frozen=True)
class ProbeOptions:
    impls: tuple[str, ...]
    device: str
    contexts: tuple[int, ...]
    batch: int
    layers: int
    dtype: str | None
    sm: int
    cache: str | None = None
    """``dynamic`` | ``static`` | ``inplace``; default: dynamic on CPU (the accounting
    reports DynamicCache's append apart), inplace on CUDA (timing cannot split it off)."""
    max_cache_len: int | None = None
    ncu: bool = False


def require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise UsageError(f"{what} needs {module}: {INSTALL_HINT}")


def _dtype(requested: str | None, config: dict[str, Any]) -> str:
    if requested:
        theory.dtype_bytes(requested)  # validates
        return requested
    found = config_dtype(config)
    return found if found in theory.DTYPE_BYTES and found != "float64" else "bfloat16"


def _transformers_plan(context: int, batch: int, dtype: str) -> ServingPlan:
    try:
        version: str | None = metadata.version("transformers")
    except metadata.PackageNotFoundError:  # pragma: no cover - a runtime dependency
        version = None
    return ServingPlan(kv_cache_dtype=dtype, context=context, batch=batch,
                       engine="transformers", engine_version=version)


def probe_models(refs: Sequence[str], options: ProbeOptions, rules: Sequence[type[Rule]], *,
                 revision: str | None = None, offline: bool = False,
                 fail_on: str = "error") -> LintRun:
    """The CPU or GPU path for each model: one result per model and context."""
    require("torch", "kvlint probe")
    device = _device(options.device)
    if options.ncu and device != "cuda":
        raise UsageError("--ncu profiles CUDA kernels: it needs --device cuda (or auto on a "
                         "machine with CUDA)")
    results: list[ModelResult] = []
    for ref in refs:
        loaded, geometry = loaded_config(ref, revision, offline)
        dtype = _dtype(options.dtype, loaded.config)
        if geometry is None:
            results.append(lint_config(target_of(loaded), loaded.config,
                                       _transformers_plan(options.contexts[0] if
                                                          options.contexts else 512,
                                                          options.batch, dtype),
                                       rules, source=loaded.source))
            continue
        if options.layers > geometry.num_layers:
            raise UsageError(f"--layers {options.layers}: {loaded.ref} has "
                             f"{geometry.num_layers} layers")
        if not any(layer.holds_kv for layer in geometry.layers[:options.layers]):
            first = next((i for i, layer in enumerate(geometry.layers) if layer.holds_kv), None)
            if first is None:
                raise UsageError(f"{loaded.ref}: no layer holds a KV cache (Mamba or linear "
                                 "attention only): nothing to probe")
            raise UsageError(f"--layers {options.layers}: the first {options.layers} "
                             f"layer(s) of {loaded.ref} hold no KV cache (linear attention "
                             f"or Mamba); use --layers {first + 1}")
        reports = _run(device, loaded.config, geometry, options, dtype)
        for report in reports:
            results.append(lint_config(
                target_of(loaded), loaded.config,
                _transformers_plan(report.context, report.batch, dtype), rules,
                source=loaded.source, geometry=geometry, probe=report))
    return LintRun(tuple(results), fail_on, tuple(rules))


def _device(requested: str) -> str:
    if requested == "cpu":
        return "cpu"
    from kvlint.probe.gpu import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is None:
        return "cuda"
    if requested == "cuda":
        raise UsageError(f"--device cuda: {reason}; use --device cpu (or auto)")
    return "cpu"


def _run(device: str, config: dict[str, Any], geometry: AttentionGeometry,
         options: ProbeOptions, dtype: str) -> list[ProbeReport]:
    if device == "cpu":
        from kvlint.probe import cpu

        return cpu.probe(config, geometry, cpu.CpuOptions(
            impls=options.impls, contexts=options.contexts or DEFAULT_CPU_CONTEXTS,
            batch=options.batch, layers=options.layers, dtype=dtype, sm=options.sm,
            cache=_cache_spec(options)))
    if options.ncu:
        return [_run_ncu(config, geometry, options, dtype)]
    return [_run_gpu(config, geometry, options, dtype)]


def _cache_spec(options: ProbeOptions, device: str = "cpu") -> Any:
    from kvlint.probe.build import CacheSpec

    kind = options.cache or ("inplace" if device == "cuda" else "dynamic")
    if kind != "static":
        if options.max_cache_len is not None:
            raise UsageError("--max-cache-len applies to --cache static")
        return CacheSpec(kind)
    longest = max(options.contexts or DEFAULT_CPU_CONTEXTS)
    return CacheSpec("static", options.max_cache_len or 2 * (longest + 1))


@dataclass(frozen=True)
class _Theory:
    """Theory for the probed layers at a context, for the GPU paths."""

    geometry: AttentionGeometry
    options: ProbeOptions
    dtype: str

    def at(self, context: int) -> theory.Theory:
        return theory.decode_step(self.geometry, context=context, batch=self.options.batch,
                                  layers=self.options.layers, dtype=self.dtype)

    @property
    def bytes_per_token(self) -> int:
        return self.at(1).bytes_per_token

    def curve(self) -> theory.TheoryCurve:
        """The figures the GPU paths compare with, at any context."""
        return theory.TheoryCurve(self.bytes_per_token, lambda c: self.at(c).read_bytes,
                                  lambda c: self.at(c).cache_bytes)

    def unmeasured(self, impl: str, contexts: Sequence[int], reason: str) -> ImplMeasurement:
        longest = self.at(max(contexts))
        return ImplMeasurement.unmeasured(impl, self.dtype, longest.read_bytes,
                                          longest.cache_bytes, reason)


def _run_gpu(config: dict[str, Any], geometry: AttentionGeometry, options: ProbeOptions,
             dtype: str) -> ProbeReport:
    """The timing path: time one decode step over several contexts, fit the slope."""
    import torch

    from kvlint.probe import build as builder
    from kvlint.probe import gpu

    expected = _Theory(geometry, options, dtype)
    contexts = _gpu_contexts(expected)
    bandwidth = gpu.streaming_bandwidth(torch.device("cuda"))
    spec = _cache_spec(replace(options, contexts=tuple(contexts)), "cuda")
    impls = []
    built_description = ""
    for impl in options.impls:
        reason = _kernel_unavailable(impl)
        if reason is not None:
            impls.append(expected.unmeasured(impl, contexts, reason))
            continue
        try:
            built = builder.build(config, impl=impl, layers=options.layers, dtype=dtype,
                                  device="cuda")
        except UsageError as err:
            impls.append(expected.unmeasured(impl, contexts, str(err)))
            continue
        built_description = built.description

        def make(context: int, built: builder.BuiltModel = built) -> gpu.Harness:
            return builder.DecodeHarness(built, context, options.batch, spec)

        impls.append(gpu.measure(impl, make, contexts=contexts, batch=options.batch,
                                 theory=expected.curve(), bandwidth=bandwidth, dtype=dtype))
        del built
        torch.cuda.empty_cache()
    return ProbeReport("cuda", "timing", max(contexts), options.batch, options.layers,
                       tuple(impls), built=built_description,
                       notes=(f"contexts {', '.join(map(str, contexts))}; streaming read "
                              f"bandwidth {bandwidth / 1e9:,.0f} GB/s",))


def _gpu_contexts(expected: _Theory) -> tuple[int, ...]:
    """The contexts given, else ones whose KV working set is several times the L2 size."""
    if expected.options.contexts:
        return expected.options.contexts
    import torch

    from kvlint.probe import gpu, slope

    device = torch.device("cuda")
    memory = int(torch.cuda.get_device_properties(device).total_memory)
    return slope.plan_contexts(l2_bytes=gpu.l2_cache_bytes(device),
                               bytes_per_token=expected.bytes_per_token,
                               batch=expected.options.batch, max_bytes=memory // 16)


def _run_ncu(config: dict[str, Any], geometry: AttentionGeometry, options: ProbeOptions,
             dtype: str) -> ProbeReport:
    """Nsight Compute: DRAM bytes read by the attention kernels (NVTX ``kvlint_attn:L``) at
    each context, in a child process; the slope over contexts removes the fixed part."""
    import json
    import tempfile

    from kvlint.probe import ncu_run

    if ncu_run.ncu_available() is None:
        raise UsageError("--ncu: Nsight Compute (ncu) is not on PATH")
    expected = _Theory(geometry, options, dtype)
    contexts = _gpu_contexts(expected)
    spec = _cache_spec(replace(options, contexts=tuple(contexts)), "cuda")
    impls = []
    with tempfile.TemporaryDirectory(prefix="kvlint-ncu-") as tmp:
        path = f"{tmp}/config.json"
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        for impl in options.impls:
            reason = _kernel_unavailable(impl)
            if reason is not None:
                impls.append(expected.unmeasured(impl, contexts, reason))
                continue
            rows = ncu_run.run_ncu(path, impl, ncu_run.BenchSpec(
                contexts=contexts, batch=options.batch, layers=options.layers, dtype=dtype,
                cache_kind=spec.kind, max_cache_len=spec.max_cache_len))
            per_context = ncu_run.bytes_per_context(rows, contexts, 3,
                                                    exclude_kernels=CACHE_APPEND_KERNELS)
            impls.append(ncu_run.ncu_measurement(
                impl, per_context, batch=options.batch, dtype=dtype,
                theory_bytes_per_token=expected.bytes_per_token,
                theory_read_bytes_at=lambda c: expected.at(c).read_bytes,
                theory_cache_bytes_at=lambda c: expected.at(c).cache_bytes))
    return ProbeReport("cuda", "ncu", max(contexts), options.batch, options.layers,
                       tuple(impls), built=f"{spec.label()}, profiled in a child process",
                       notes=(f"contexts {', '.join(map(str, contexts))}; DRAM bytes read "
                              "by the kernels inside the attention modules' NVTX ranges, "
                              "DynamicCache's torch.cat kernels excluded",))


CACHE_APPEND_KERNELS = "CatArray"
"""Kernel names of ``torch.cat`` (DynamicCache's append), left out of attention reads."""


def _kernel_unavailable(impl: str) -> str | None:
    """Why an engine kernel (``flashinfer``, ``vllm``) is not timed."""
    from kvlint.probe.build import KERNEL_IMPLS

    if impl not in KERNEL_IMPLS:
        return None
    if importlib.util.find_spec(impl) is None:
        return f"{impl} is not installed"
    return (f"{impl} is installed, but kvlint has no standalone harness for its decode "
            "kernel yet; time it through transformers' implementations or an --endpoint")


@dataclass(frozen=True, kw_only=True)
class EndpointOptions:
    """What ``probe --endpoint`` is told about the running engine, and how it measures."""

    tp: int
    kv_cache_dtype: str
    engine_version: str | None
    measure_itl: bool
    contexts: Sequence[int]
    """The contexts ITL is timed at (empty: :data:`DEFAULT_ITL_CONTEXTS`)."""
    batch: int
    bandwidth: float | None
    """The GPU's achieved bandwidth in bytes/s (``None``: ``gpu_name``'s)."""
    gpu_name: str | None
    served_model: str | None
    """The name the server serves the model as (``None``: its ref)."""


def probe_endpoint(endpoint: str, ref: str, rules: Sequence[type[Rule]],
                   options: EndpointOptions, *, revision: str | None, offline: bool,
                   fail_on: str) -> LintRun:
    """The staging path: a running vLLM's ``/metrics`` (and ITL) against theory."""
    require("httpx", "kvlint probe --endpoint")
    require("prometheus_client", "kvlint probe --endpoint")
    from kvlint.probe import staging

    tp, kv_cache_dtype, engine_version = \
        options.tp, options.kv_cache_dtype, options.engine_version
    loaded, geometry = loaded_config(ref, revision, offline)
    plan = ServingPlan(layout=ParallelLayout(tp=tp), kv_cache_dtype=kv_cache_dtype,
                       engine="vllm", engine_version=engine_version)
    if geometry is None:
        return LintRun((lint_config(target_of(loaded), loaded.config, plan, rules,
                                    source=loaded.source),), fail_on, tuple(rules))
    metrics_url = endpoint.rstrip("/") + "/metrics"
    info = staging.parse_metrics(staging.fetch_metrics(endpoint), metrics_url)
    itl = per_second = None
    if options.measure_itl:
        per_second = options.bandwidth or _gpu_bandwidth(options.gpu_name)
        itl = staging.measure_itl(endpoint, model=options.served_model or loaded.ref,
                                  contexts=options.contexts or DEFAULT_ITL_CONTEXTS,
                                  batch=options.batch)
    measured = staging.allocation(info, geometry, tp=tp, kv_cache_dtype=kv_cache_dtype,
                                  engine_version=engine_version, itl=itl,
                                  bandwidth_bytes_per_s=per_second)
    report = staging.report(measured, endpoint=endpoint, layers=geometry.num_layers)
    return LintRun((lint_config(target_of(loaded), loaded.config, plan, rules,
                                source=loaded.source, geometry=geometry, probe=report),),
                   fail_on, tuple(rules))


def _gpu_bandwidth(name: str | None) -> float:
    if not name:
        raise UsageError("--measure-itl needs the GPU's bandwidth: give --gpu NAME or "
                         "--bandwidth GB/s")
    from kvlint.model.hardware import find_gpu

    try:
        bandwidth = float(find_gpu(name).bandwidth_bytes_per_s)
    except ValueError as err:
        raise UsageError(str(err).strip("'\"")) from None
    if bandwidth <= 0:  # a MIG device whose parent GPU is not named
        raise UsageError(f"the bandwidth of {name} is not known: name its GPU "
                         "(A100-80GB MIG 3g.40gb) or give --bandwidth GB/s")
    return bandwidth


@dataclass(frozen=True)
class LogPlanOptions:
    """What ``probe --vllm-log`` takes from the command line instead of the log."""

    tp: int | None = None
    pp: int | None = None
    kv_cache_dtype: str = "auto"
    engine_version: str | None = None
    gpu_memory_gib: float | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None


def _log_plan(log: VllmLog, options: LogPlanOptions, path: str,
              notes: list[str]) -> ServingPlan:
    """The plan the logged engine ran: the options where given, else what the log printed."""
    from kvlint.model.gpu_memory import gpu_memory_bytes
    from kvlint.probe import log_staging

    tp = options.tp or log.tp or 1
    pp = options.pp or log.pp or 1
    try:
        layout = ParallelLayout(tp=tp, pp=pp)
    except ValueError as err:
        raise UsageError(f"{path}: tensor_parallel_size/pipeline_parallel_size: {err}") from None
    version = log_version("vllm", options.engine_version, log.version, notes, log.version_range)
    sizing: dict[str, Any] = {}
    total = options.gpu_memory_gib or log.total_gpu_gib
    if total is not None:
        try:
            sizing["gpu_memory_bytes"] = gpu_memory_bytes(total)
        except ValueError as err:
            raise UsageError(f"{path}: total_gpu_memory: {err}") from None
        sizing["gpu_memory_source"] = "--gpu-memory" if options.gpu_memory_gib \
            else "the log (total_gpu_memory)"
    else:
        notes.append("the log prints no total GPU memory: give --gpu-memory GIB (nvidia-smi "
                     "MiB / 1024) for kvlint's memory profile next to the printed one")
    if log.kv_cache_set_gib is not None:  # the engine reserved it as given: no profile
        sizing["kv_cache_memory_bytes"] = max(1, round(log.kv_cache_set_gib * 2**30))
        sizing["kv_cache_memory_source"] = "the log (kv_cache_memory_bytes)"
    try:
        return ServingPlan(
            layout=layout, kv_cache_dtype=log_staging.served_kv_dtype(options.kv_cache_dtype, log),
            engine="vllm", engine_version=version,
            dtype=log_staging.torch_dtype(log.dtype),
            gpu_memory_utilization=options.gpu_memory_utilization
            or log.gpu_memory_utilization,
            max_model_len=options.max_model_len or log.max_model_len
            or log.concurrency_tokens,
            max_num_batched_tokens=options.max_num_batched_tokens, **sizing)
    except ValueError as err:
        raise UsageError(f"{path}: {err}") from None


def probe_log(path: str, ref: str, rules: Sequence[type[Rule]], options: LogPlanOptions, *,
              revision: str | None, offline: bool, fail_on: str,
              engine: str | None = "vllm") -> LintRun:
    """A vLLM start-up log's KV allocation per token per GPU against theory, and its memory
    profile against kvlint's, term by term (no GPU). ``engine``: the engine that wrote the
    log (``None``: recognised from its wording, kvlint/probe/engine_log.py); an SGLang log
    goes to :func:`kvlint.probe.engine_log.probe_sglang_log`."""
    from pathlib import Path

    from kvlint.loaders.vllm_log import read_log
    from kvlint.probe import log_staging
    from kvlint.probe.engine_log import SglangLogOptions, detect, probe_sglang_log
    from kvlint.probe.log_terms import log_terms

    notes: list[str] = []
    if engine != "vllm":
        engine, decided = detect(Path(path), engine)
        if engine == "sglang":
            return probe_sglang_log(path, ref, rules, SglangLogOptions(
                options.tp, options.pp, options.kv_cache_dtype, options.engine_version,
                options.gpu_memory_gib, options.gpu_memory_utilization), decided=decided,
                                    revision=revision, offline=offline, fail_on=fail_on)
        notes.append(decided)
    log = read_log(Path(path))
    if log.oom is not None:
        from kvlint.probe.engine_log import failed_start

        options = replace(options, gpu_memory_gib=failed_start(
            "vllm", log.oom, options.gpu_memory_gib, notes))
    plan = _log_plan(log, options, path, notes)
    loaded, geometry = loaded_config(ref, revision, offline)
    target = target_of(loaded)
    if geometry is None:
        return LintRun((lint_config(target, loaded.config, plan, rules,
                                    source=loaded.source, offline=offline),), fail_on,
                       tuple(rules))
    layout = plan.layout
    sized = lint_config(target, loaded.config, plan, (), source=loaded.source,
                        geometry=geometry, offline=offline)
    measured = log_staging.compare(log, geometry, tp=layout.tp, pp=layout.pp,
                                   kv_cache_dtype=options.kv_cache_dtype,
                                   engine_version=plan.engine_version, source=path)
    grouped = log_staging.grouped_terms(log, geometry, sized.capacity, tp=layout.tp,
                                        pp=layout.pp, kv_cache_dtype=options.kv_cache_dtype,
                                        engine_version=plan.engine_version)
    report = replace(log_staging.report(measured, path=path, layers=geometry.num_layers),
                     terms=log_terms(log, sized.capacity, grouped))
    report = replace(report, notes=report.notes + tuple(notes),
                     out_of_memory=log.oom.line if log.oom else None)
    return LintRun((lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                geometry=geometry, probe=report, offline=offline),),
                   fail_on, tuple(rules))
