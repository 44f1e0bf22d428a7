"""``kvlint probe``: measured KV bytes against theory (local, a running engine, or its log)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kvlint.cli.options import (
    COUNT,
    DEGREE,
    GPU_MEMORY,
    FiniteFloat,
    common_options,
    env_offline,
)
from kvlint.cli.session import RuleSelection, Session
from kvlint.errors import InputError, UsageError
from kvlint.loaders.paths import exists
from kvlint.model.kv import KV_CACHE_DTYPES
from kvlint.model.limits import MAX_LAYERS, MAX_SIZE

if TYPE_CHECKING:
    from kvlint.linter import LintRun
    from kvlint.rules.base import Rule


def _ints(option: str, value: str | None) -> tuple[int, ...]:
    """``--context 512,1024`` -> ``(512, 1024)``."""
    if not value:
        return ()
    try:
        found = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{option} {value!r}: expected positive integers, comma-separated"
                         ) from None
    if not found or min(found) < 1:
        raise UsageError(f"{option} {value!r}: expected positive integers, comma-separated")
    return tuple(sorted(set(found)))


@click.command()
@click.argument("models", nargs=-1, metavar="MODEL...")
@click.option("--model", "model_option", default=None, metavar="MODEL",
              help="The model (same as MODEL; with --endpoint, the served model's config).")
@click.option("--impl", default="eager,sdpa", show_default=True, metavar="IMPL[,IMPL...]",
              help="Attention implementations: eager, sdpa, flash_attention_2, "
                   "flex_attention (transformers), flashinfer, vllm (CUDA kernels).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="cpu: logical byte accounting (runs in CI); cuda: "
                                      "timing slope against measured bandwidth.")
@click.option("--context", "contexts", default=None, metavar="L[,L...]",
              help="Cached tokens before the step [default: cpu 512; cuda: planned from "
                   "the L2 size; --measure-itl 1024,2048,4096,8192].")
@click.option("--batch", type=COUNT, default=1, show_default=True)
@click.option("--layers", type=click.IntRange(min=1, max=MAX_LAYERS), default=1, show_default=True,
              help="Decoder layers to build (the first N of the config).")
@click.option("--dtype", type=click.Choice(["bfloat16", "float16", "float32"]), default=None,
              help="Weights and cache dtype [default: the config's, else bfloat16].")
@click.option("--cache", "cache_kind", type=click.Choice(["dynamic", "static", "inplace"]),
              default=None,
              help="dynamic: transformers' DynamicCache (appends with torch.cat, reported "
                   "apart on CPU); static: StaticCache (attends over all --max-cache-len "
                   "positions); inplace: a DynamicCache appending into spare room, as "
                   "engines do [default: dynamic on cpu, inplace on cuda].")
@click.option("--max-cache-len", type=click.IntRange(min=2, max=MAX_SIZE), default=None,
              help="StaticCache positions [default: 2 x (longest context + 1)].")
@click.option("--cuda-sm", "sm", type=click.IntRange(min=30), default=90, show_default=True,
              help="GPU compute capability the SDPA kernel oracle answers for (80 = A100, "
                   "90 = H100/H200, 75 = T4).")
@click.option("--ncu", is_flag=True,
              help="With --device cuda: measure DRAM bytes of the attention kernels with "
                   "Nsight Compute (ncu on PATH, profiling permissions) instead of timing.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Plot measured KV reads per step against theory by context (PNG/SVG; "
                   "needs matplotlib).")
@click.option("--endpoint", default=None, metavar="URL",
              help="Staging: a running vLLM (its /metrics) instead of a local probe.")
@click.option("--vllm-log", "vllm_log", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="Staging without a server: a vLLM start-up log; its printed KV memory "
                   "and tokens per GPU against theory (tp, pp, dtypes from the log unless "
                   "given).")
@click.option("--engine-log", "engine_log", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="Staging without a server: an engine's start-up log, its engine (vLLM, "
                   "SGLang, TensorRT-LLM or LMDeploy) recognised from its wording (--vllm-log, "
                   "--sglang-log, --trtllm-log, --lmdeploy-log: force one).")
@click.option("--sglang-log", "sglang_log", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="An SGLang start-up log: its KV pool per token per GPU against theory and "
                   "its #tokens against kvlint's capacity (tp, dtypes from server_args).")
@click.option("--trtllm-log", "trtllm_log", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="A TensorRT-LLM start-up log: its KV pool per token per GPU (Allocated GiB "
                   "over its tokens) against theory and its tokens against kvlint's capacity "
                   "(--tp/--pp: the server's; the log prints no layout).")
@click.option("--lmdeploy-log", "lmdeploy_log", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="An LMDeploy start-up log: its KV cache per token per GPU (TurboMind's block "
                   "size, or the PyTorch engine's DEBUG budget over its blocks) against theory "
                   "and its tokens against kvlint's capacity (tp from backend_config).")
@click.option("--served-model-name", default=None,
              help="With --measure-itl: the model name the server answers to.")
@click.option("--tp", type=DEGREE, default=None,
              help="With --endpoint or --vllm-log: the server's tensor-parallel degree "
                   "[default: the log's, else 1].")
@click.option("--pp", type=DEGREE, default=None,
              help="With --vllm-log: the pipeline-parallel degree [default: the log's, else 1].")
@click.option("--engine-version", default=None, metavar="VERSION",
              help="With --endpoint or --vllm-log: the vLLM version [default: the log's, "
                   "else the newest known].")
@click.option("--gpu-memory", "gpu_memory_gib", type=GPU_MEMORY, default=None, metavar="GIB",
              help="With --vllm-log: total memory of one GPU in GiB, as the driver reports "
                   "it [default: the log's total_gpu_memory]; gives kvlint's memory profile "
                   "next to the printed one.")
@click.option("--gpu-memory-utilization", type=FiniteFloat(0, 1, min_open=True), default=None,
              help="With --vllm-log: the engine's [default: the log's, else vLLM's 0.9].")
@click.option("--max-model-len", type=COUNT, default=None,
              help="With --vllm-log: the engine's [default: the log's, else the model's].")
@click.option("--max-num-batched-tokens", type=COUNT, default=None,
              help="With --vllm-log: tokens of the start-up profile run [default: vLLM's "
                   "for the version and GPU].")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES, case_sensitive=False),
              default="auto", show_default=True, help="With --endpoint: the server's.")
@click.option("--measure-itl", is_flag=True,
              help="With --endpoint: time streaming requests at several contexts and fit "
                   "the inter-token-latency slope (sends len(contexts) x batch requests).")
@click.option("--gpu", default=None, metavar="NAME",
              help="With --measure-itl: the server's GPU (for its bandwidth).")
@click.option("--bandwidth", type=FiniteFloat(min=0, min_open=True), default=None,
              metavar="GB/S", help="With --measure-itl: achieved bandwidth per GPU in GB/s.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit).")
@click.option("--offline", is_flag=True, help="Read Hub configs from the local cache only.")
@common_options
def probe(models: tuple[str, ...], model_option: str | None, impl: str, device: str,
          contexts: str | None, batch: int, layers: int, dtype: str | None,
          cache_kind: str | None, max_cache_len: int | None, sm: int, ncu: bool,
          plot: str | None,
          endpoint: str | None, vllm_log: str | None, engine_log: str | None,
          sglang_log: str | None, trtllm_log: str | None, lmdeploy_log: str | None,
          served_model_name: str | None,
          tp: int | None, pp: int | None,
          engine_version: str | None, gpu_memory_gib: float | None,
          gpu_memory_utilization: float | None, max_model_len: int | None,
          max_num_batched_tokens: int | None, kv_cache_dtype: str, measure_itl: bool,
          gpu: str | None, bandwidth: float | None, revision: str | None, offline: bool,
          formats: tuple[str, ...], outputs: tuple[str, ...], select: tuple[str, ...],
          extend_select: tuple[str, ...], ignore: tuple[str, ...], fail_on: str | None,
          config_file: str | None, isolated: bool, no_plugins: bool) -> None:
    """Measure the KV bytes a decode step reads, and the cache holds, against theory: N
    random-weight layers of MODEL's config (no weights downloaded, no remote code) with a
    pre-filled cache and one decode step, per attention implementation. KV601 flags 1.3x
    (warning) and 2x (error). Needs `pip install 'kvlint[probe]'`."""
    from kvlint.probe import run as probing

    refs = models + ((model_option,) if model_option else ())
    if not refs:
        raise UsageError("give MODEL (a Hub id, a config.json or a directory) or --model")
    session = Session.start([Path(m) for m in refs if exists(Path(m))], config_file,
                            isolated, no_plugins,
                            RuleSelection(select, extend_select, ignore), fail_on,
                            formats, outputs)
    rules = session.rules
    if not (select or session.settings.select or extend_select):
        rules = tuple(r for r in rules if r.code.startswith(("KV6", "KV900")))
    points = _ints("--context", contexts)
    log_only = {"--gpu-memory": gpu_memory_gib,
                "--gpu-memory-utilization": gpu_memory_utilization,
                "--max-model-len": max_model_len,
                "--max-num-batched-tokens": max_num_batched_tokens}
    given_log_only = [name for name, value in log_only.items() if value is not None]
    logs = [(name, value) for name, value in (("--engine-log", engine_log),
                                              ("--vllm-log", vllm_log),
                                              ("--sglang-log", sglang_log),
                                              ("--trtllm-log", trtllm_log),
                                              ("--lmdeploy-log", lmdeploy_log)) if value]
    if len(logs) > 1:
        raise UsageError(f"{', '.join(n for n, _ in logs)}: give one start-up log")
    forced = {"--vllm-log": "vllm", "--sglang-log": "sglang", "--trtllm-log": "trtllm",
              "--lmdeploy-log": "lmdeploy"}.get(logs[0][0]) if logs else None
    vllm_log = logs[0][1] if logs else None
    if given_log_only and not vllm_log:
        raise UsageError(f"{', '.join(given_log_only)} appl"
                         f"{'y' if len(given_log_only) > 1 else 'ies'} to --vllm-log FILE")
    if endpoint and vllm_log:
        raise UsageError("--endpoint and --vllm-log are two staging sources: give one")
    if vllm_log:
        if len(refs) != 1:
            raise UsageError("--vllm-log probes one served model: give one MODEL")
        given = [name for name, value in {"--measure-itl": measure_itl, "--gpu": gpu,
                                          "--bandwidth": bandwidth,
                                          "--served-model-name": served_model_name}.items()
                 if value]
        if given:
            raise UsageError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to "
                             "a running engine (--endpoint), not to a log")
        engine_run = _other_engine_log(
            vllm_log, refs[0], rules, forced, (tp, pp, kv_cache_dtype.lower(), engine_version,
                                               gpu_memory_gib, gpu_memory_utilization),
            revision=revision, offline=offline or env_offline(), fail_on=session.fail_on)
        run = engine_run or probing.probe_log(
            vllm_log, refs[0], rules, probing.LogPlanOptions(
                tp=tp, pp=pp, kv_cache_dtype=kv_cache_dtype.lower(),
                engine_version=engine_version, gpu_memory_gib=gpu_memory_gib,
                gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                max_num_batched_tokens=max_num_batched_tokens),
            revision=revision, offline=offline or env_offline(), fail_on=session.fail_on,
            engine=forced)
        _refuse_incomparable(run, vllm_log)
    elif endpoint:
        if len(refs) != 1:
            raise UsageError("--endpoint probes one served model: give one MODEL")
        if pp not in (None, 1):
            raise UsageError("--pp applies to --vllm-log (the /metrics path reads tp only)")
        run = probing.probe_endpoint(
            endpoint, refs[0], rules, probing.EndpointOptions(
                tp=tp or 1, kv_cache_dtype=kv_cache_dtype.lower(),
                engine_version=engine_version, measure_itl=measure_itl, contexts=points,
                batch=batch, bandwidth=bandwidth * 1e9 if bandwidth else None, gpu_name=gpu,
                served_model=served_model_name),
            revision=revision, offline=offline or env_offline(), fail_on=session.fail_on)
    else:
        staging_only = {"--measure-itl": measure_itl, "--gpu": gpu, "--bandwidth": bandwidth,
                        "--served-model-name": served_model_name,
                        "--tp": tp not in (None, 1), "--pp": pp not in (None, 1),
                        "--engine-version": engine_version,
                        "--kv-cache-dtype": kv_cache_dtype.lower() != "auto"}
        given = [name for name, value in staging_only.items() if value]
        if given:
            raise UsageError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to "
                             "a running engine: add --endpoint URL or --vllm-log FILE")
        impls = tuple(dict.fromkeys(p.strip() for p in impl.split(",") if p.strip()))
        if not impls:
            raise UsageError("--impl: name at least one implementation")
        options = probing.ProbeOptions(impls, device, points, batch, layers, dtype, sm,
                                       cache_kind, max_cache_len, ncu)
        run = probing.probe_models(refs, options, rules, revision=revision,
                                   offline=offline or env_offline(), fail_on=session.fail_on)
    if plot:
        from kvlint.probe.plot import plot_reads

        plot_reads(run, plot)
    session.finish(run)


_LogFlags = tuple[int | None, int | None, str, str | None, float | None, float | None]
"""--tp, --pp, --kv-cache-dtype, --engine-version, --gpu-memory, --gpu-memory-utilization."""


def _other_engine_log(path: str, ref: str, rules: tuple[type[Rule], ...], forced: str | None,
                      flags: _LogFlags, *, revision: str | None, offline: bool,
                      fail_on: str) -> LintRun | None:
    """A TensorRT-LLM or LMDeploy log's probe (forced, or recognised by
    :func:`kvlint.probe.engine_log.detect`); ``None`` for a vLLM or SGLang log, which
    :func:`kvlint.probe.run.probe_log` reads."""
    if forced in ("vllm", "sglang"):
        return None
    from kvlint.probe import engine_log

    engine, decided = engine_log.detect(Path(path), forced)
    if engine not in ("trtllm", "lmdeploy"):
        return None
    if engine == "lmdeploy" and flags[1] not in (None, 1):
        raise UsageError("--pp: LMDeploy has no pipeline parallelism")
    options = engine_log.EngineLogOptions(*flags)
    probe_engine = engine_log.probe_trtllm_log if engine == "trtllm" \
        else engine_log.probe_lmdeploy_log
    return probe_engine(path, ref, rules, options, decided=decided, revision=revision,
                        offline=offline, fail_on=fail_on)


_LOG_ENGINES = ("SGLang", "TensorRT-LLM", "LMDeploy")


def _refuse_incomparable(run: LintRun, log: str) -> None:
    """A log from which nothing could be compared with theory (empty, another program's, a
    request log) is never verdict "ok" with exit 0: one line, exit 2. A result without a
    probe (the model's config failed) is left to its own error."""
    for result in run.results:
        report = result.probe
        if report is None or report.out_of_memory is not None:
            continue  # a failed start: KV602 compares it with kvlint's capacity
        if any(impl.worst_ratio is not None and not impl.skipped for impl in report.impls):
            continue
        named = next((e for e in _LOG_ENGINES if f"a {e} " in report.built
                      or f"an {e} " in report.built), None)
        if named and any(t.printed is not None and t.predicted is not None
                         for t in report.terms if t.unit == "tokens"):
            continue  # the printed tokens against kvlint's capacity
        why = next((n for impl in report.impls for n in impl.notes
                    if named and ("too coarse" in n or "cannot be" in n)), None)
        if why is not None:
            raise InputError(f"{log}: nothing comparable: {why}")
        engine = {"SGLang": "an SGLang", "TensorRT-LLM": "a TensorRT-LLM",
                  "LMDeploy": "an LMDeploy"}.get(named or "", "a vLLM")
        raise InputError(f"{log}: nothing comparable: no KV cache figure of {engine} start-up "
                         "log was found in it (is it the engine's start-up log?)")
