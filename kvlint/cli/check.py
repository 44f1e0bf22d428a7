"""``kvlint check``: one or more models under a serving plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from kvlint.cli.options import (
    COUNT,
    DEGREE,
    PlanFlags,
    common_options,
    cpu_offload_gb,
    gpu_memory_plan,
    gpu_source,
    lock_options,
    lora_slots,
    pick,
    plan_options,
    serving_plan,
)
from kvlint.cli.session import RuleSelection, Session
from kvlint.engine_names import ENGINES
from kvlint.loaders.paths import exists
from kvlint.model.kv import KV_CACHE_DTYPES
from kvlint.model.serving import DEFAULT_CONTEXT


@click.command()
@click.argument("models", nargs=-1, required=True, metavar="MODEL...")
@click.option("--tp", type=DEGREE, default=None,
              help="Tensor-parallel degree [default: 1].")
@click.option("--pp", type=DEGREE, default=None,
              help="Pipeline-parallel degree [default: 1].")
@click.option("--dp", type=DEGREE, default=None,
              help="Data-parallel degree [default: 1].")
@click.option("--dp-attention", is_flag=True,
              help="Data-parallel attention: attention runs at tp/dp (SGLang "
                   "--enable-dp-attention, vLLM DP with expert parallelism).")
@click.option("--engine", type=click.Choice(ENGINES, case_sensitive=False), default=None,
              help="Serving engine whose semantics apply (default: the newest vLLM known).")
@click.option("--engine-version", default=None, metavar="VERSION",
              help="Engine version (0.6.3, v0.6.3; latest/nightly = the newest known).")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES, case_sensitive=False),
              default=None, help="KV cache element type [default: auto].")
@click.option("--context", type=COUNT, default=None,
              help=f"Sequence length for per-sequence figures [default: {DEFAULT_CONTEXT}].")
@click.option("--batch", type=COUNT, default=None,
              help="Concurrent sequences for batch figures [default: 1].")
@plan_options
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit).")
@click.option("--offline", is_flag=True, help="Read Hub configs from the local cache only.")
@lock_options
@common_options
def check(models: tuple[str, ...], tp: int | None, pp: int | None, dp: int | None,
          dp_attention: bool, engine: str | None, engine_version: str | None,
          kv_cache_dtype: str | None, context: int | None, batch: int | None,
          gpu: str | None, gpu_memory_gib: float | None,
          gpu_memory_utilization: float | None, overhead_gib: float | None,
          max_model_len: int | None, max_num_seqs: int | None,
          max_num_batched_tokens: int | None, chunked_prefill_size: int | None,
          cuda_graph_max_bs: int | None, disable_cuda_graph: bool,
          page_size: int | None, swa_full_tokens_ratio: float | None,
          max_total_tokens: int | None, kv_cache_memory_bytes: int | None,
          quantization: str | None, hf_overrides: str | None,
          revision: str | None,
          offline: bool, lock_file: str | None, locked: bool, formats: tuple[str, ...],
          outputs: tuple[str, ...], select: tuple[str, ...], extend_select: tuple[str, ...],
          ignore: tuple[str, ...], fail_on: str | None, config_file: str | None,
          isolated: bool, no_plugins: bool) -> None:
    """Check MODEL (a Hub id, id@revision, a config.json or a model directory) under a
    serving plan: KV bytes per token, per GPU and per sequence, and findings. Options
    override the settings file's serving defaults."""
    from kvlint.linter import check_models, process_env

    session = Session.start([Path(m) for m in models if exists(Path(m))], config_file,
                            isolated, no_plugins,
                            RuleSelection(select, extend_select, ignore), fail_on,
                            formats, outputs)
    d = session.settings
    plan = serving_plan(PlanFlags(
        tp=pick(tp, d.tp, 1), pp=pick(pp, d.pp, 1), dp=pick(dp, d.dp, 1),
        dp_attention=dp_attention, engine=engine or d.engine,
        engine_version=engine_version or d.engine_version,
        kv_cache_dtype=kv_cache_dtype or d.kv_cache_dtype or "auto",
        context=pick(context, d.context, DEFAULT_CONTEXT),
        batch=pick(batch, d.batch, 1), gpu=gpu or d.gpu,
        gpu_memory_utilization=gpu_memory_utilization or d.gpu_memory_utilization,
        overhead_gib=pick(overhead_gib, d.overhead, None),
        max_model_len=max_model_len or d.max_model_len,
        max_num_seqs=max_num_seqs or d.max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        quantization=quantization, chunked_prefill_size=chunked_prefill_size,
        cuda_graph_max_bs=cuda_graph_max_bs, page_size=page_size,
        max_total_tokens=max_total_tokens, disable_cuda_graph=disable_cuda_graph,
        swa_full_tokens_ratio=swa_full_tokens_ratio, hf_overrides=hf_overrides,
        lora=lora_slots(), cpu_offload_gb=cpu_offload_gb()))
    plan = replace(plan, env=process_env(), gpu_source=gpu_source(gpu, d.gpu),
                   **gpu_memory_plan(gpu_memory_gib, d.gpu_memory))
    lock = session.model_lock([Path(m) for m in models if exists(Path(m))], lock_file, locked)
    lock.require(models, revision)
    run = check_models(models, plan, session.rules, revision=revision,
                       offline=offline or bool(d.offline), fail_on=session.fail_on, lock=lock)
    session.finish(run)
