"""The options the commands share, the types that bound them, and how they become a
serving plan (the command line wins over the settings file, which wins over defaults)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kvlint.diagnostics import FAIL_ON_CHOICES
from kvlint.errors import UsageError
from kvlint.loaders.paths import exists
from kvlint.model.gpu_memory import MAX_GPU_MEMORY_GIB, gpu_memory_bytes
from kvlint.model.kv import ParallelLayout
from kvlint.model.limits import MAX_GIB, MAX_PARALLEL, MAX_SIZE
from kvlint.model.lora import MAX_LORA_RANK, MAX_LORAS, LoraSlots
from kvlint.model.overrides import canonical_overrides
from kvlint.model.serving import EngineStart, ServingPlan

MAX_CPU_OFFLOAD_GB = 65_536.0
"""The most GiB ``--cpu-offload-gb`` takes (64 TiB of host memory)."""

F = TypeVar("F", bound=Callable[..., Any])
OFFLINE_ENV = "HF_HUB_OFFLINE"


def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The output options of common_options (--statistics, -q, -v, --show-settings) are kept
    in the click context's ``meta`` and read by :class:`Session`, so the commands'
    signatures do not carry them."""
    ctx.meta[f"kvlint.{param.name}"] = value
    return value


def output_flag(name: str) -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx.meta.get(f"kvlint.{name}")) if ctx is not None else False


def common_options(func: F) -> F:
    """The output and selection options every linting command shares."""
    decorators = [
        click.option("--format", "formats", multiple=True, metavar="FORMAT",
                     help="Output format: text (default; github under GitHub Actions, concise "
                          "under pre-commit), concise, json, sarif, github, markdown, junit; "
                          "plugins may add more. Repeatable."),
        click.option("--output", "-o", "outputs", multiple=True,
                     type=click.Path(dir_okay=False),
                     help="Write a report to FILE. Outputs pair with the last formats: "
                          "--format text --format sarif -o r.sarif prints text, writes SARIF."),
        click.option("--select", multiple=True, metavar="CODES",
                     help="Only these rules (codes, prefixes like KV2, or names); repeatable."),
        click.option("--extend-select", multiple=True, metavar="CODES",
                     help="Rules to add to the selection (of the settings file or --select)."),
        click.option("--ignore", multiple=True, metavar="CODES",
                     help="Skip these rules (codes, prefixes or names); repeatable. The most "
                          "specific of --select/--ignore decides each rule."),
        click.option("--fail-on", type=click.Choice(FAIL_ON_CHOICES), default=None,
                     help="Exit 1 when a finding is at least this severe [default: error]."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     default=None, help="Settings file (else the nearest pyproject.toml "
                                        "[tool.kvlint], .kvlint.toml or kvlint.toml)."),
        click.option("--isolated", is_flag=True, help="Ignore every settings file."),
        click.option("--no-plugins", is_flag=True,
                     help="Do not load third-party plugins (entry-point group 'kvlint')."),
        click.option("--statistics", is_flag=True, expose_value=False, callback=remember,
                     help="Print a count per rule code instead of the findings."),
        click.option("--quiet", "-q", is_flag=True, expose_value=False, callback=remember,
                     help="Print the findings only: no model tables, no summary lines."),
        click.option("--verbose", "-v", is_flag=True, expose_value=False, callback=remember,
                     help="Show every info (by default they are counted in one line unless "
                          "--select or --extend-select names them)."),
        click.option("--show-settings", is_flag=True, expose_value=False, callback=remember,
                     help="Print the resolved settings (file, serving defaults, rule "
                          "selection) and exit."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def plan_options(func: F) -> F:
    """The GPU and capacity options of ``check`` and ``compare``."""
    decorators = [
        click.option("--gpu", default=None, metavar="NAME",
                     help="GPU model (H100-80GB, H200, L4, MI300X...): adds weights, KV budget, "
                          "max sequences and the decode roofline."),
        click.option("--gpu-memory", "gpu_memory_gib", type=GPU_MEMORY, default=None,
                     metavar="GIB", help=GPU_MEMORY_HELP),
        click.option("--gpu-memory-utilization", "--mem-fraction-static",
                     "gpu_memory_utilization", type=FiniteFloat(0, 1, min_open=True),
                     default=None, help="Fraction of GPU memory the engine may use "
                                        "(default: the engine's own default; SGLang's "
                                        "spelling is accepted)."),
        click.option("--overhead", "overhead_gib", type=FiniteFloat(0, MAX_GIB), default=None,
                     metavar="GIB", help="Per-GPU memory for activations, CUDA graphs and "
                                         "buffers, in GiB (default: vLLM's start-up profile, "
                                         "estimated; 2 for other engines)."),
        click.option("--max-model-len", "--context-length", "max_model_len", type=COUNT,
                     default=None, help="Longest sequence the engine admits (default: the "
                                        "model's own; SGLang's spelling is accepted)."),
        click.option("--max-num-seqs", "--max-running-requests", "max_num_seqs", type=COUNT,
                     default=None, help="Most sequences the engine runs at once (SGLang's "
                                        "spelling is accepted)."),
        click.option("--max-num-batched-tokens", type=COUNT, default=None,
                     help="Most tokens the engine runs in one step: the size of vLLM's "
                          "start-up profile run, whose activation peak is taken from the KV "
                          "memory (default: vLLM's per-GPU default)."),
        click.option("--quantization", default=None, metavar="METHOD",
                     help="On-the-fly weight quantization the engine applies while loading "
                          "(vLLM/SGLang --quantization fp8, bitsandbytes...; TGI --quantize "
                          "bitsandbytes-nf4...): sizes the weights; a checkpoint that is "
                          "already quantized keeps its own format. awq, gptq, mxfp4 on a "
                          "config that names no quantization: sized as that "
                          "checkpoint's usual form (4-bit AWQ/GPTQ in groups of 128...). "
                          "gguf:TYPE (gguf:Q4_K_M): a GGUF file of that llama.cpp type."),
        click.option("--chunked-prefill-size", type=click.IntRange(-1, 2**31), default=None,
                     help="SGLang: tokens per prefill chunk (-1: none); feeds its default "
                          "mem_fraction_static (default: the release's, by GPU memory)."),
        click.option("--cuda-graph-max-bs", type=COUNT, default=None,
                     help="SGLang: the largest CUDA-graph batch; feeds its default "
                          "mem_fraction_static."),
        click.option("--disable-cuda-graph", is_flag=True, default=False,
                     help="SGLang: no CUDA graphs, so no graph state beside the request "
                          "table (KV504)."),
        click.option("--page-size", type=COUNT, default=None,
                     help="SGLang: tokens per KV page (the pool is whole pages)."),
        click.option("--swa-full-tokens-ratio", type=click.FloatRange(0, 1, min_open=True),
                     default=None,
                     help="SGLang: the sliding-window pool's tokens as a share of the full "
                          "pool's (default: the release's, 0.8)."),
        click.option("--max-total-tokens", type=COUNT, default=None,
                     help="SGLang: a cap on the KV pool's tokens (TensorRT-LLM: "
                          "kv_cache_config.max_tokens / max_tokens_in_paged_kv_cache)."),
        click.option("--hf-overrides", "--json-model-override-args", "hf_overrides",
                     default=None, metavar="JSON",
                     help="Changes to the model's config.json as the engine loads it (vLLM "
                          "--hf-overrides, SGLang --json-model-override-args): a JSON "
                          "object, e.g. '{\"rope_scaling\": {\"rope_type\": \"yarn\", "
                          "\"factor\": 4.0, \"original_max_position_embeddings\": 32768}, "
                          "\"max_position_embeddings\": 131072}'; the context limit, "
                          "geometry and weights follow the changed config."),
        click.option("--kv-cache-memory-bytes", type=KV_BYTES, default=None, metavar="BYTES",
                     help="vLLM >= 0.10.2: the KV cache's bytes per GPU, set by hand (as vLLM "
                          "reads it: 20G = 20 GiB, 20g = 20e9); it replaces the memory profile "
                          "and gpu_memory_utilization."),
        # options that change the weights on each GPU (vLLM's LoRA slots, vLLM's and
        # SGLang's CPU offload), spelt as the engines spell them; kept on the click context
        # (read by lora_slots and cpu_offload_gb) rather than as five more parameters of
        # every command
        click.option("--enable-lora", is_flag=True, default=False, expose_value=False,
                     callback=_keep_weight_option,
                     help="vLLM: LoRA adapters on; their buffers (max_loras adapters of "
                          "max_lora_rank) are allocated with the weights."),
        click.option("--max-loras", type=click.IntRange(1, MAX_LORAS), default=None,
                     expose_value=False, callback=_keep_weight_option,
                     help="vLLM: adapters in one batch [default: 1]."),
        click.option("--max-lora-rank", type=click.IntRange(1, MAX_LORA_RANK), default=None,
                     expose_value=False, callback=_keep_weight_option,
                     help="vLLM: the largest adapter rank [default: 16]."),
        click.option("--fully-sharded-loras", is_flag=True, default=False, expose_value=False,
                     callback=_keep_weight_option, help="vLLM: shard the LoRA computation fully."),
        click.option("--cpu-offload-gb", type=click.FloatRange(0, MAX_CPU_OFFLOAD_GB),
                     default=None, expose_value=False, callback=_keep_weight_option, metavar="GIB",
                     help="vLLM/SGLang: GiB of each GPU's weights kept in CPU memory (the "
                          "decoder layers' parameters, in order, until that much is "
                          "offloaded)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


_WEIGHT_OPTIONS_KEY = "kvlint.weight-options"
"""Where the weight-changing options wait on the click context until the plan is built."""


def _keep_weight_option(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.name is not None:
        ctx.meta.setdefault(_WEIGHT_OPTIONS_KEY, {})[param.name] = value
    return value


def cpu_offload_gb() -> float | None:
    """``--cpu-offload-gb`` of the current command (``None``: not given, or 0)."""
    ctx = click.get_current_context(silent=True)
    value = ctx.meta.get(_WEIGHT_OPTIONS_KEY, {}).get("cpu_offload_gb") if ctx is not None else None
    return float(value) if value else None


def lora_slots() -> LoraSlots | None:
    """The LoRA options of the current command (``None`` without ``--enable-lora``; vLLM
    ignores ``--max-loras`` and the rest then)."""
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(_WEIGHT_OPTIONS_KEY, {}) if ctx is not None else {}
    if not given.get("enable_lora"):
        return None
    return LoraSlots.given(given.get("max_loras"), given.get("max_lora_rank"),
                           bool(given.get("fully_sharded_loras")))


def manifest_options(func: F) -> F:
    """How the commands that read manifests (``lint``, ``lock``) find them and their models."""
    decorators = [
        click.option("--include", multiple=True, metavar="GLOB",
                     help="File names to read under directories (default *.yaml, *.yml, "
                          "*.json, config.pbtxt)."),
        click.option("--exclude", multiple=True, metavar="GLOB",
                     help="Paths or names to skip."),
        click.option("--model-map", multiple=True, metavar="NAME=REF",
                     help="Resolve a manifest's local path or placeholder to a Hub id or "
                          "config."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def parse_model_map(items: Sequence[str]) -> dict[str, str]:
    """``--model-map NAME=REF`` values as a mapping (UsageError for a malformed one)."""
    mapping: dict[str, str] = {}
    for item in items:
        name, sep, ref = item.partition("=")
        if not sep or not name or not ref:
            raise UsageError(f"--model-map {item!r}: expected NAME=REF")
        mapping[name] = ref
    return mapping


def lock_options(func: F) -> F:
    """The model-lock options of the commands that read models."""
    decorators = [
        click.option("--lock", "lock_file", type=click.Path(dir_okay=False), default=None,
                     metavar="FILE", help="Model lock to read Hub models from [default: "
                                          "kvlint.lock next to the settings file, else the "
                                          "nearest one above the inputs or here]."),
        click.option("--locked", is_flag=True, default=False,
                     help="Read Hub models from the lock only: a model it lacks is an error "
                          "(exit 2; also `locked = true`)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


T = TypeVar("T")


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses ``inf`` and ``nan`` (which FloatRange lets through)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if not math.isfinite(result):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return result


GPU_MEMORY = FiniteFloat(0, MAX_GPU_MEMORY_GIB, min_open=True)
"""--gpu-memory: GiB of one GPU (kvlint.model.gpu_memory)."""
GPU_MEMORY_HELP = ("Total memory of one GPU in GiB, as the driver reports it (nvidia-smi MiB "
                   "/ 1024): replaces the --gpu table's memory (its bandwidth stays); alone, "
                   "sizes any GPU, without the decode roofline.")

DEGREE = click.IntRange(min=1, max=MAX_PARALLEL)
"""tp, pp, dp: no model replica spans more GPUs (kvlint.model.limits)."""
COUNT = click.IntRange(min=1, max=MAX_SIZE)
"""Tokens and sequences: bounded so the byte arithmetic stays finite."""


if TYPE_CHECKING:  # generic in click's stubs and from 8.2; 8.1's cannot be subscripted
    _IntParam = click.ParamType[int]
else:
    _IntParam = click.ParamType


class KvBytes(_IntParam):
    """A byte count as vLLM's ``human_readable_int`` reads it (``20G`` = 20 GiB, ``20g`` =
    20e9, ``21474836480``), positive and below a bound no GPU reaches."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number: int | None = value
        else:
            from kvlint.manifests.engine_integers import integer_value

            number = integer_value("vllm", "kv_cache_memory_bytes", str(value).strip())
        from kvlint.model.serving import MAX_KV_CACHE_MEMORY_BYTES

        if number is None or not 0 < number <= MAX_KV_CACHE_MEMORY_BYTES:
            self.fail(f"{value!r} is not a byte count vLLM accepts (a positive integer, or "
                      "with k/m/g/t = powers of 1000, K/M/G/T = powers of 1024)", param, ctx)
        return number


KV_BYTES = KvBytes()


def pick(cli: T | None, setting: T | None, default: T) -> T:
    """The command line wins over the settings file, which wins over the default."""
    if cli is not None:
        return cli
    return setting if setting is not None else default


@dataclass(frozen=True, kw_only=True)
class PlanFlags:
    """The serving plan's values as the command line (and the settings) give them, not yet
    validated: :func:`serving_plan` makes the plan."""

    tp: int
    pp: int
    dp: int
    dp_attention: bool
    engine: str | None
    engine_version: str | None
    kv_cache_dtype: str
    context: int
    batch: int
    gpu: str | None
    gpu_memory_utilization: float | None
    overhead_gib: float | None
    max_model_len: int | None
    max_num_seqs: int | None
    max_num_batched_tokens: int | None = None
    kv_cache_memory_bytes: int | None = None
    quantization: str | None = None
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    page_size: int | None = None
    max_total_tokens: int | None = None
    disable_cuda_graph: bool = False
    swa_full_tokens_ratio: float | None = None
    hf_overrides: str | None = None
    lora: LoraSlots | None = None
    cpu_offload_gb: float | None = None


def _overrides(text: str | None) -> tuple[str | None, str | None]:
    """``--hf-overrides``' JSON object in canonical form and its source naming the fields it
    sets (``(None, None)`` without the option; UsageError on anything but a JSON object)."""
    if text is None:
        return None, None
    try:
        value = json.loads(text)
    except ValueError as err:
        raise UsageError(f"--hf-overrides: {text[:60]!r} is not JSON ({err}); expected a "
                         "JSON object of config.json fields") from None
    if not isinstance(value, dict):
        raise UsageError(f"--hf-overrides: expected a JSON object of config.json fields, "
                         f"got {type(value).__name__}")
    keys = ", ".join(sorted(value)) or "nothing"
    return canonical_overrides(value), f"--hf-overrides (overrides {keys})"


def serving_plan(flags: PlanFlags) -> ServingPlan:
    """The serving plan of the command line, validated (UsageError on nonsense)."""
    from kvlint.engines import load_engines, parse_version

    f = flags
    overrides, overrides_source = _overrides(f.hf_overrides)
    try:
        if f.engine_version is not None:
            parse_version(load_engines()[(f.engine or "vllm").lower()], f.engine_version)
        return ServingPlan(
            layout=ParallelLayout(tp=f.tp, pp=f.pp, dp=f.dp, dp_attention=f.dp_attention),
            kv_cache_dtype=f.kv_cache_dtype.lower(), context=f.context, batch=f.batch,
            engine=f.engine.lower() if f.engine else None, engine_version=f.engine_version,
            gpu=f.gpu, gpu_memory_utilization=f.gpu_memory_utilization,
            overhead_bytes=None if f.overhead_gib is None else int(f.overhead_gib * 1024**3),
            max_model_len=f.max_model_len, max_num_seqs=f.max_num_seqs,
            max_num_batched_tokens=f.max_num_batched_tokens,
            kv_cache_memory_bytes=f.kv_cache_memory_bytes,
            kv_cache_memory_source=None if f.kv_cache_memory_bytes is None
            else "--kv-cache-memory-bytes",
            quantization=f.quantization.strip().lower() if f.quantization else None,
            quantization_source="--quantization" if f.quantization else None,
            engine_start=EngineStart(chunked_prefill_size=f.chunked_prefill_size,
                                     cuda_graph_max_bs=f.cuda_graph_max_bs,
                                     cuda_graph_off=f.disable_cuda_graph,
                                     page_size=f.page_size,
                                     swa_full_tokens_ratio=f.swa_full_tokens_ratio)
            if (f.chunked_prefill_size, f.cuda_graph_max_bs, f.page_size,
                f.swa_full_tokens_ratio) != (None,) * 4 or f.disable_cuda_graph else None,
            kv_tokens_cap=f.max_total_tokens,
            kv_tokens_cap_source="--max-total-tokens" if f.max_total_tokens else None,
            config_overrides=overrides, config_overrides_source=overrides_source,
            lora=f.lora, lora_source="--enable-lora" if f.lora else None,
            cpu_offload_gb=f.cpu_offload_gb,
            cpu_offload_source="--cpu-offload-gb" if f.cpu_offload_gb else None)
    except ValueError as err:
        raise UsageError(str(err)) from None


def gpu_memory_plan(option: float | None, setting: float | None) -> dict[str, Any]:
    """``gpu_memory_bytes`` and its source for a plan (the option wins over the settings)."""
    if option is not None:
        return {"gpu_memory_bytes": gpu_memory_bytes(option), "gpu_memory_source": "--gpu-memory"}
    if setting is not None:
        return {"gpu_memory_bytes": gpu_memory_bytes(setting),
                "gpu_memory_source": "settings (gpu-memory)"}
    return {}


def gpu_source(option: str | None, setting: str | None) -> str | None:
    """Where the command's GPU comes from (manifests that name a GPU override it)."""
    return "--gpu" if option else ("settings (gpu)" if setting else None)


def local_ref(ref: str, root: Path) -> str:
    """A models-map value relative to the settings file, when it names a local file."""
    candidate = root / ref
    return str(candidate) if not Path(ref).is_absolute() and exists(candidate) else ref


def use_result_cache(no_cache: bool, setting: bool | None, *, from_stdin: bool = False
                     ) -> bool:
    """Whether ``lint`` or ``scan`` reuses and stores results: not with ``--no-cache``,
    ``KVLINT_NO_CACHE`` or ``cache = false`` in the settings, and not for a file read from
    stdin."""
    from kvlint.cache import result_cache_disabled

    return not (no_cache or from_stdin or setting is False or result_cache_disabled())


def env_offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
