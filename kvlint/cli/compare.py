"""``kvlint compare``: models ranked by KV cost under one plan."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kvlint.cli.options import (
    COUNT,
    DEGREE,
    PlanFlags,
    cpu_offload_gb,
    gpu_memory_plan,
    lock_options,
    lora_slots,
    plan_options,
    serving_plan,
)
from kvlint.cli.output import echo_config_errors, emit
from kvlint.cli.session import model_lock
from kvlint.engine_names import ENGINES
from kvlint.loaders.paths import exists
from kvlint.model.kv import KV_CACHE_DTYPES
from kvlint.model.serving import DEFAULT_CONTEXT

if TYPE_CHECKING:
    from kvlint.lock.files import ModelLock


@click.command()
@click.argument("models", nargs=-1, required=True, metavar="MODEL...")
@click.option("--tp", type=DEGREE, default=1, show_default=True)
@click.option("--pp", type=DEGREE, default=1, show_default=True)
@click.option("--engine", type=click.Choice(ENGINES, case_sensitive=False), default=None)
@click.option("--engine-version", default=None, metavar="VERSION")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES, case_sensitive=False),
              default="auto", show_default=True)
@click.option("--context", type=COUNT, default=DEFAULT_CONTEXT,
              show_default=True, help="Sequence length the models are compared at.")
@click.option("--batch", type=COUNT, default=1, show_default=True)
@plan_options
@click.option("--revision", default=None, help="Hub revision (applies to every model).")
@click.option("--offline", is_flag=True, help="Read Hub configs from the local cache only.")
@lock_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None)
def compare(models: tuple[str, ...], tp: int, pp: int, engine: str | None,
            engine_version: str | None, kv_cache_dtype: str, context: int, batch: int,
            gpu: str | None, gpu_memory_gib: float | None,
            gpu_memory_utilization: float | None, overhead_gib: float | None,
            max_model_len: int | None, max_num_seqs: int | None,
            max_num_batched_tokens: int | None, chunked_prefill_size: int | None,
            cuda_graph_max_bs: int | None, disable_cuda_graph: bool,
            page_size: int | None, swa_full_tokens_ratio: float | None,
            max_total_tokens: int | None, kv_cache_memory_bytes: int | None,
            quantization: str | None, hf_overrides: str | None,
            revision: str | None,
            offline: bool, lock_file: str | None, locked: bool, fmt: str,
            output: str | None) -> None:
    """Rank models by KV cost: bytes of one --context-token sequence per GPU, or with --gpu,
    concurrent max_model_len-token sequences beside the weights (max_model_len: --context
    unless --max-model-len is given). Models that cannot be sized are listed with the reason
    (exit 2 when a config did not resolve or the Hub could not be asked)."""
    from kvlint import compare as ranking
    from kvlint.outputs import check_outputs

    if output:
        check_outputs([output], models)
    plan = serving_plan(PlanFlags(
        tp=tp, pp=pp, dp=1, dp_attention=False, engine=engine,
        engine_version=engine_version, kv_cache_dtype=kv_cache_dtype,
        context=context, batch=batch, gpu=gpu,
        gpu_memory_utilization=gpu_memory_utilization, overhead_gib=overhead_gib,
        max_model_len=max_model_len or (
            context if gpu or gpu_memory_gib is not None else None),
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        quantization=quantization, chunked_prefill_size=chunked_prefill_size,
        cuda_graph_max_bs=cuda_graph_max_bs, page_size=page_size,
        max_total_tokens=max_total_tokens, disable_cuda_graph=disable_cuda_graph,
        swa_full_tokens_ratio=swa_full_tokens_ratio, hf_overrides=hf_overrides,
        lora=lora_slots(), cpu_offload_gb=cpu_offload_gb()))
    plan = replace(plan, **gpu_memory_plan(gpu_memory_gib, None))
    lock = _compare_lock(models, lock_file, locked)
    lock.require(models, revision)
    run = ranking.compare_models(models, plan, revision=revision, offline=offline, lock=lock)
    result = ranking.rank(run, plan)
    from kvlint.reporters.escape import printable

    if fmt == "json":
        text = ranking.render_json(result)
    else:
        text = printable(ranking.render_table(result, "github" if fmt == "markdown" else "plain"),
                         keep="\n")
    emit(text, output)
    echo_config_errors(run)
    sys.exit(run.exit_code)


def _compare_lock(models: Sequence[str], lock_file: str | None, locked: bool) -> ModelLock:
    """``compare`` takes no serving settings, but its lock is found as the others' are."""
    from kvlint import settings as settings_module

    starts = [Path(m) for m in models if exists(Path(m))]
    loaded = settings_module.load(starts)
    return model_lock(starts, loaded.path, lock_file, locked or bool(loaded.settings.locked))
