"""Run the rules: load each model, resolve its geometry, analyse it under the plan."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from math import ceil
from typing import TYPE_CHECKING, Any, Literal

from kvlint.diagnostics import Finding, Severity, fails
from kvlint.engine_sizing import (
    ENGINE_SIZING,
    sglang_sizing,
    sglang_state_split,
    sm90_or_later,
    trtllm_pools,
)
from kvlint.engines import UNKNOWN_VERSION, load_engines
from kvlint.engines import behaviour as engine_behaviour
from kvlint.engines.quant_refusals import checkpoint_quant_method, declared_quantization
from kvlint.errors import ConfigError, UsageError
from kvlint.loaders.hf_config import (
    ConfigDefaults,
    config_dtype,
    max_context_length,
    resolve_geometry,
    text_part,
)
from kvlint.loaders.models import LoadedConfig, load_config
from kvlint.model.capacity import (
    DEFAULT_OVERHEAD_BYTES,
    Capacity,
    GpuSpec,
    GpuWeights,
    Sizing,
    capacity,
)
from kvlint.model.context_limit import ContextLimit, LimitPolicy, derive
from kvlint.model.engine_args import EngineArgProblem
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.overrides import apply_config_overrides, on_the_fly_quantization

if TYPE_CHECKING:
    from kvlint.loaders.weight_size import PlanWeights
    from kvlint.lock.files import ModelLock
    from kvlint.model.advice import LayoutSizer
    from kvlint.model.lora import LoraBytes
    from kvlint.model.memory import MemoryTerms, ModelDims
    from kvlint.model.weights import WeightSplit
    from kvlint.probe.result import ProbeReport  # its dataclasses cost ~8 ms to import
from kvlint.model.serving import KvAnalysis, ServingPlan, analyze, with_pool_share
from kvlint.model.sglang_dsa import with_dsa_start
from kvlint.model.sglang_dsv4 import with_dsv4_start
from kvlint.rules.base import Rule, RuleContext

TargetKind = Literal["model", "manifest", "source"]
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""When neither the command line nor the engine table gives one (vLLM's historical default)."""


@dataclass(frozen=True)
class Target:
    """What a result is about (docs/design.md §7 ``target``)."""

    ref: str
    kind: TargetKind = "model"
    revision: str | None = None
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class ModelResult:
    target: Target
    plan: ServingPlan
    analysis: KvAnalysis | None
    findings: tuple[Finding, ...]
    config_error: str | None = None
    """Why the geometry could not be resolved (a KV900 finding says so too)."""
    capacity: Capacity | None = None
    notes: tuple[str, ...] = ()
    """What the manifest parser noticed (flags a chart drops, ambiguous GPU counts...)."""
    probe: ProbeReport | None = None
    """What ``kvlint probe`` measured for this model (docs/design.md §7 ``probe``)."""
    unsettled: bool = False
    """A finding depends on a checkpoint file outside the config (KV702's ``--quantization``
    looked for the format's own file): ``kvlint lint`` does not cache the result."""


@dataclass(frozen=True)
class LintRun:
    results: tuple[ModelResult, ...]
    fail_on: str = "error"
    rules: tuple[type[Rule], ...] = field(default=())
    unavailable: tuple[str, ...] = ()
    """Models the Hub could not be asked about (network, deadline, auth, offline without a
    cached copy): nothing was checked for them, so the run exits 2. Their results carry the
    reason as ``config_error``."""

    def count(self, severity: Severity) -> int:
        return sum(1 for r in self.results for f in r.findings if f.severity is severity)

    @property
    def has_config_errors(self) -> bool:
        return any(r.config_error for r in self.results)

    def unavailable_line(self) -> str | None:
        """One line naming every model the Hub could not be asked about, with the first
        reason (None when there is none)."""
        if not self.unavailable:
            return None
        reason = next(r.config_error for r in self.results
                      if r.target.ref == self.unavailable[0] and r.config_error)
        count = len(self.unavailable)
        return (f"{count} model{'s' if count != 1 else ''} could not be fetched from the "
                f"Hugging Face Hub: {', '.join(self.unavailable)}; first error: {reason}")

    @property
    def exit_code(self) -> int:
        """docs/design.md §7: 2 when a config could not be resolved (or the Hub could not be asked
        about a model), 1 for findings at or above ``fail_on``, else 0."""
        if self.has_config_errors:
            return 2
        failing = any(fails(f.severity, self.fail_on) for r in self.results for f in r.findings)
        return 1 if failing else 0


def default_config_defaults() -> ConfigDefaults:
    """kvlint's generated table of transformers' config defaults (the installed
    transformers answers only for model types the table lacks)."""
    from kvlint.loaders.config_defaults import TableDefaults

    return TableDefaults()


def lint_config(target: Target, config: dict[str, Any] | None, plan: ServingPlan,
                rules: Sequence[type[Rule]], **options: Any) -> ModelResult:
    """Resolve one raw config (``None`` when the model is unknown: ``model_problem`` says
    why), size it under ``plan`` and run ``rules`` on it (:func:`_lint_config_at`).

    An engine whose version is unknown (``plan.engine_version`` ``"unknown"``: an image tag
    that names none) is never taken for the newest: the config is judged at every version
    whose engine facts differ (``Engine.judging_versions``), and only the findings (by code)
    that every one of them gives are reported, in the newest version's words."""
    if config is None or plan.engine is None or plan.engine_version != UNKNOWN_VERSION or \
            plan.engine not in load_engines():
        return _lint_config_at(target, config, plan, rules, ConfigOptions(**options))
    versions = load_engines()[plan.engine].judging_versions()
    results = [_lint_config_at(target, config, replace(plan, engine_version=v), rules,
                               ConfigOptions(**options)) for v in versions]
    newest = results[-1]
    if newest.analysis is None:
        return newest
    common = set.intersection(*({f.code for f in r.findings} for r in results))
    behaviour = replace(newest.plan.behaviour, version=UNKNOWN_VERSION, pinned=False,
                        unknown=True, judged_by=versions)
    unknown_plan = replace(newest.plan, engine_version=UNKNOWN_VERSION, behaviour=behaviour)
    kept = tuple(f for f in newest.findings if f.code in common and f.code != "KV304")
    note = next((f for rule in rules if rule.code == "KV304"
                 for f in rule().check(_context_of(newest, unknown_plan))), None)
    return replace(newest, plan=unknown_plan,
                   findings=kept + ((note,) if note is not None else ()))


def _context_of(result: ModelResult, plan: ServingPlan) -> RuleContext:
    """A rule context that holds what KV304 reads: the plan and that there is an analysis."""
    return RuleContext(result.target.ref, plan, result.analysis, None, None, None)


@dataclass(frozen=True)
class ConfigOptions:
    """What one config's lint may be told besides its target, config, plan and rules (the
    keywords of :func:`lint_config`)."""

    source: str | None = None
    defaults: ConfigDefaults | None = None
    offline: bool = False
    model_problem: str | None = None
    gpus_requested: int | None = None
    gpus_source: str | None = None
    manifest_problem: tuple[str, str] | None = None
    geometry: AttentionGeometry | None = None
    probe: ProbeReport | None = None
    lock: ModelLock | None = None
    weights_of: Target | None = None
    """The checkpoint sized: a manifest's model as loaded (else the target's)."""
    engine_problems: tuple[EngineArgProblem, ...] = ()


def _lint_config_at(target: Target, config: dict[str, Any] | None, plan: ServingPlan,
                    rules: Sequence[type[Rule]], options: ConfigOptions) -> ModelResult:
    """Resolve one raw config (``None`` when the model is unknown: ``model_problem`` says
    why), size it under ``plan`` and run ``rules`` on it. The checkpoint sized is
    ``weights_of``'s (a manifest's model as loaded), else the target's; ``lock`` holds the
    sizes of locked models."""
    o = options
    source, defaults, offline, geometry, lock = (o.source, o.defaults, o.offline, o.geometry,
                                                 o.lock)
    analysis: KvAnalysis | None = None
    cap: Capacity | None = None
    sizer: LayoutSizer | None = None
    problem = problem_field = None
    limit: ContextLimit | None = None
    policy: LimitPolicy | None = None
    given_max_len = plan.max_model_len
    if config is not None and plan.config_overrides:
        # the config the engine builds the model from: its own geometry, limits and weights
        config = apply_config_overrides(config, plan.config_overrides, plan.engine,
                                        plan.engine_version)
        geometry = None
    if config is not None:
        defaults = defaults or default_config_defaults()
        try:
            geometry = geometry or resolve_geometry(config, defaults=defaults)
            try:
                plan = replace(
                    plan,
                    behaviour=with_pool_share(engine_behaviour(
                        plan.engine, plan.engine_version, geometry.model_type,
                        is_mla=geometry.is_mla, architecture=geometry.architecture),
                        plan.engine_start),
                    max_model_len=plan.max_model_len or (
                        max_context_length(config) if plan.sizes_gpu else None))
                plan, started = with_dsa_start(plan, geometry.architecture, config)
                if started:  # shown with the model's notes: what the engine changed
                    geometry = replace(geometry, notes=(*geometry.notes, started))
                plan, priced = with_dsv4_start(plan, config)
                if priced:
                    geometry = replace(geometry, notes=(*geometry.notes, priced))
                if plan.config_overrides:  # the source names the fields they set
                    geometry = replace(geometry, notes=(
                        *geometry.notes, "config as the engine builds it: "
                        f"{plan.config_overrides_source or 'overrides'}"))
                analysis = _analyze(geometry, plan)
            except ValueError as err:
                raise UsageError(f"{target.ref}: {err}") from None
            if given_max_len is not None:  # the model's own default is never over it
                policy = limit_policy(plan)
                limit = context_limit(config, policy)
            if plan.sizes_gpu:
                cap, sizer = _capacity(o.weights_of or target, config, analysis, defaults,
                                       offline, lock)
                if cap is not None and cap.memory is not None and _vision_tower(config):
                    analysis = replace(analysis, geometry=replace(
                        analysis.geometry, notes=(*analysis.geometry.notes, VISION_PROFILE)))
        except ConfigError as err:
            err.source = err.source or source
            problem, problem_field = str(err), err.field
            analysis = cap = None
    facts = _config_facts(config)
    if facts.get("checkpoint_quant", "") is None:
        facts.update(_format_files(o.weights_of or target, plan, offline))
    ctx = RuleContext(target.ref, plan, analysis, problem, problem_field, cap,
                      model_problem=o.model_problem, gpus_requested=o.gpus_requested,
                      gpus_source=o.gpus_source,
                      manifest_problem=o.manifest_problem, probe=o.probe, context_limit=limit,
                      limit_policy=policy, engine_problems=o.engine_problems,
                      sizer=sizer, **facts)
    findings = tuple(
        finding
        for rule in rules
        if analysis is not None or not rule.needs_geometry
        for finding in rule().check(ctx)
    )
    return ModelResult(target, plan, analysis, findings, problem, cap, probe=o.probe,
                       unsettled="format_files" in facts)


def _offloaded(weights: PlanWeights, plan: ServingPlan) -> PlanWeights:
    """The weights left on each GPU with ``--cpu-offload-gb`` (:mod:`kvlint.model.offload`);
    with pipeline parallelism each stage offloads its own layers, which kvlint does not
    split, so the weights stay as they are and the source says so."""
    from kvlint.model.offload import offloaded_bytes, resident_bytes

    gib = plan.cpu_offload_gb or 0.0
    if plan.layout.pp > 1:
        return replace(weights, source=f"{weights.source}; {plan.cpu_offload_source} "
                       f"{gib:g} GiB not counted (pipeline parallelism)")
    moved = offloaded_bytes(gib, weights.per_gpu_bytes,
                            resident_bytes(weights.split, plan.layout.tp))
    return replace(weights, per_gpu_bytes=weights.per_gpu_bytes - moved,
                   source=f"{weights.source}; - {moved / 2**30:.2f} GiB kept in CPU memory "
                          f"({plan.cpu_offload_source} {gib:g}: decoder layers' parameters, "
                          "the embeddings and LM head stay)")


VISION_PROFILE = (
    "vLLM's start-up profile also runs the vision encoder on the largest dummy image or video "
    "its processor allows (profile_run, v1/worker/gpu_model_runner.py@v0.11.0); kvlint does "
    "not size that peak, so the KV budget may be smaller than shown (by 1 to 4 GiB in "
    "held-out Qwen3-VL start-ups)")
"""The note of a multimodal model's vLLM capacity: an estimated term kvlint leaves out."""


def _vision_tower(config: dict[str, Any]) -> bool:
    """Whether the config describes a vision encoder vLLM profiles at start-up."""
    return any(isinstance(config.get(key), dict) for key in ("vision_config", "img_processor"))


def _config_facts(config: dict[str, Any] | None) -> dict[str, Any]:
    """What the rules read of a config beside its geometry: ``architectures``, top-level
    ``model_type`` and whether ``auto_map`` names remote ``AutoModel*`` code (KV305, KV702's
    float16 refusal) or an ``AutoConfig`` (KV308), the quantization format it declares and
    its settings (KV702's ``--quantization``, KV708), and its dtype (KV702's bfloat16)."""
    if not isinstance(config, dict):
        return {}
    archs = config.get("architectures")
    auto_map = config.get("auto_map")
    model_type = config.get("model_type")
    return {
        "architectures": tuple(a for a in archs if isinstance(a, str))
        if isinstance(archs, list) else (),
        "config_model_type": model_type if isinstance(model_type, str) else None,
        "remote_code": isinstance(auto_map, dict) and any(
            isinstance(k, str) and k.startswith("AutoModel") for k in auto_map),
        "remote_config": isinstance(auto_map, dict) and "AutoConfig" in auto_map,
        "config_read": True,
        "checkpoint_quant": checkpoint_quant_method(config),
        "quant_config": declared_quantization(config),
        "config_dtype": config_dtype(config) or config_dtype(text_part(config)[0]),
    }


def _format_files(checkpoint: Target, plan: ServingPlan, offline: bool
                  ) -> dict[str, bool | None]:
    """``{"format_files": ...}`` for a ``--quantization`` of a pre-quantized format that the
    engine reads from the checkpoint's own settings file when config.json names none
    (``--quantization awq``): whether that file is there
    (kvlint.loaders.checkpoint.format_files_present; ``None``: not known); ``{}`` for any
    other command, which makes no lookup."""
    from kvlint.engines.quant_refusals import quantization_refusal

    refusal = quantization_refusal(plan.behaviour.engine, plan.quantization, None)
    if refusal is None or refusal.kind != "no-config":
        return {}
    if checkpoint.kind != "model":
        return {"format_files": None}
    from kvlint.loaders.checkpoint import format_files_present

    return {"format_files": format_files_present(
        checkpoint.ref, refusal.files, path=checkpoint.path, revision=checkpoint.revision,
        offline=offline)}


def limit_policy(plan: ServingPlan) -> LimitPolicy | None:
    """How ``plan``'s engine version derives a model's length limit (engines.toml
    ``context_limit``); ``None`` for engines kvlint has no such data for."""
    from packaging.version import InvalidVersion, Version

    behaviour = plan.behaviour
    engine = load_engines().get(behaviour.engine)
    if engine is None:
        return None
    try:
        version = Version(behaviour.version) if behaviour.version else engine.latest
    except InvalidVersion:
        version = engine.latest
    fact = engine.context_limit_at(version)
    if fact is None or not fact.values.get("refuses", True):
        return None  # no data, or the engine starts anyway (TGI caps, llama.cpp warns)
    v = fact.values
    return LimitPolicy(
        engine=f"{engine.display} {version}", derivation=str(v.get("derivation", "vllm")),
        keys=tuple(v.get("keys", ())), unscaled_rope_types=tuple(v.get("unscaled_rope_types",
                                                                         ())),
        yarn_from_original=bool(v.get("yarn_from_original", False)),
        refuses=bool(v.get("refuses", True)), override_env=v.get("override_env"),
        override_values=tuple(v.get("override_values", ())), source=fact.source)


def process_env() -> tuple[tuple[str, str | None], ...]:
    """The variables of kvlint's own environment that an engine would read to accept what
    it otherwise refuses (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``): ``kvlint check`` honours them
    as the engine started in this environment would."""
    import os

    from kvlint.model.memory import SAMPLER_ENV

    names = {str(f.values["override_env"]) for e in load_engines().values()
             for f in e.context_limit if f.values.get("override_env")} | {SAMPLER_ENV}
    return tuple(sorted((n, os.environ[n]) for n in names if n in os.environ))


def context_limit(config: dict[str, Any], policy: LimitPolicy | None) -> ContextLimit | None:
    """The model's own maximum sequence length as ``policy``'s engine derives it."""
    if policy is None or not isinstance(config, dict):
        return None
    text, key = text_part(config)
    model_type = text.get("model_type") if key is not None else config.get("model_type")
    return derive(text, model_type if isinstance(model_type, str) else "", policy)


_ANALYSES: dict[tuple[int, ServingPlan], tuple[AttentionGeometry, KvAnalysis]] = {}


def _analyze(geometry: AttentionGeometry, plan: ServingPlan) -> KvAnalysis:
    """``analyze``, once per geometry object and plan: a tree of manifests serves the same
    model under the same plan many times."""
    key = (id(geometry), plan)
    hit = _ANALYSES.get(key)
    if hit is not None and hit[0] is geometry:
        return hit[1]
    analysis = analyze(geometry, plan)
    _ANALYSES[key] = (geometry, analysis)
    return analysis


_WEIGHTS: dict[tuple[object, ...], PlanWeights] = {}
"""Weight sizes per (model, revision, tp, pp, batch) for this process."""


def _capacity(target: Target, config: dict[str, Any], analysis: KvAnalysis,
              defaults: ConfigDefaults, offline: bool,
              lock: ModelLock | None = None
              ) -> tuple[Capacity | None, LayoutSizer | None]:
    from kvlint.loaders.weight_size import (  # sizing only when a GPU is given
        CheckpointRef,
        plan_weights,
    )
    from kvlint.model.memory import (
        EngineLimits,
        default_block_size,
        default_utilization,
        kv_cache_memory_bytes_option,
        memory_terms,
        model_dims,
    )

    plan = analysis.plan
    spec = _gpu_spec(plan)
    engine = load_engines()[plan.behaviour.engine]
    # A manifest's path is not the model's: only a checked config sits beside its weights.
    path = target.path if target.kind == "model" else None
    quantized = on_the_fly_quantization(plan.behaviour.engine, plan.quantization, config)
    # vLLM's MXFP4 MoE layout (gpt-oss) is Marlin's, padded per rank, on the GPUs where it is
    # vLLM's default backend (compute capability below 9.0); elsewhere sized as stored
    loader = "vllm" if plan.behaviour.engine == "vllm" and \
        _marlin_mxfp4(spec.name, plan.behaviour.version) else None
    attention_tp = plan.layout.attention_tp if plan.layout.dp_attention else None
    key = (target.ref, path, target.revision, offline, lock, plan.layout.tp, plan.layout.pp,
           plan.batch, plan.config_overrides, plan.engine if quantized else None,
           plan.quantization if quantized else None, loader, attention_tp)
    weights = _WEIGHTS.get(key)
    if weights is None:  # a tree of manifests sizes the same model many times
        weights = _WEIGHTS[key] = plan_weights(
            config, CheckpointRef(target.ref, path, target.revision, offline, lock),
            tp=plan.layout.tp, pp=plan.layout.pp, batch=plan.batch, defaults=defaults,
            quantized=(quantized, plan.quantization_source or "--quantization")
            if quantized else None, engine=loader, attention_tp=attention_tp)
    # the version's own default (vLLM: 0.9 to 0.19, 0.92 from 0.20, 1.0 with 0.34's
    # extensible KV cache): engines.toml gpu_memory_utilization_by_version
    table = engine.gpu_memory_utilization_at(plan.behaviour.version)
    utilization = plan.gpu_memory_utilization or table or DEFAULT_GPU_MEMORY_UTILIZATION
    memory = None
    dims = model_dims(config)
    given = None
    # vLLM's LoRA buffers, allocated with the weights ("Model loading took"), per stage
    lora = _lora_stages(plan, config, defaults, dims.dtype_bytes if dims else 2)
    lora_bytes = max(lora.per_stage) if lora is not None else 0
    if lora is not None and plan.lora is not None:
        weights = replace(
            weights, per_gpu_bytes=weights.per_gpu_bytes + lora_bytes,
            source=f"{weights.source}; + {lora_bytes / 2**30:.2f} GiB of LoRA buffers "
                   f"({plan.lora_source}: {plan.lora.max_loras} adapter(s) of rank "
                   f"{plan.lora.max_lora_rank}" + "".join(f"; {n}" for n in lora.notes) + ")")
    if plan.cpu_offload_gb and plan.behaviour.engine in ("vllm", "sglang"):
        weights = _offloaded(weights, plan)
    if plan.kv_cache_memory_bytes is not None and plan.behaviour.engine == "vllm" and \
            kv_cache_memory_bytes_option(plan.behaviour.version):
        # vLLM reserves exactly that, without its memory profile (KV_CACHE_MEMORY_BYTES_SINCE)
        given = (plan.kv_cache_memory_bytes,
                 plan.kv_cache_memory_source or "--kv-cache-memory-bytes",
                 default_block_size(plan.behaviour.version))
    elif plan.overhead_bytes is None and plan.behaviour.engine == "vllm" and dims is not None:
        # vLLM >= 0.34 defaults to 1.0 with its extensible KV cache, whose margin the
        # profile below then deducts (kvlint/model/memory.py EXTENSIBLE_KV_CACHE_SINCE)
        utilization = (plan.gpu_memory_utilization
                       or default_utilization(plan.behaviour.version, plan.extensible_kv_cache)
                       # the extensible KV cache switched off: 0.34's fixed default, 0.92
                       or ((engine.gpu_memory_utilization or utilization) if table == 1.0
                           else utilization))
        memory = memory_terms(  # vLLM's own start-up profile, term by term
            gpu_memory_bytes=spec.memory_bytes, gpu_name=spec.name,
            utilization=utilization, weight_bytes=weights.per_gpu_bytes, dims=dims,
            tp=plan.layout.attention_tp, version=plan.behaviour.version,
            limits=EngineLimits(plan.max_model_len or plan.context,
                                max_num_batched_tokens=plan.max_num_batched_tokens,
                                max_num_seqs=plan.max_num_seqs,
                                moe_tp=None if plan.layout.dp_attention else plan.layout.tp,
                                extensible=plan.extensible_kv_cache,
                                flashinfer_sampler=_sampler_switch(plan)))
        memory = replace(memory, lora_bytes=lora_bytes)
    from kvlint.model.advice import LayoutSizer

    of_free = engine.memory_fraction_semantics == "free-after-weights"
    overhead = DEFAULT_OVERHEAD_BYTES if plan.overhead_bytes is None else plan.overhead_bytes
    if plan.overhead_bytes is None and plan.behaviour.engine == "sglang" and given is None:
        # SGLang's own budget: free memory at start x mem_fraction_static - weights
        # (kvlint/model/sglang_memory.py); its default fraction by release, GPU and layout
        utilization, overhead = sglang_sizing(plan, spec, config, analysis)
    # LMDeploy's own budget: (free after the weights - its runtime reserve) x
    # cache_max_entry_count (kvlint/model/lmdeploy_memory.py); TensorRT-LLM's: (total -
    # profiled peak + its temporary KV) x free_gpu_memory_fraction
    # (kvlint/model/trtllm_memory.py); both in whole blocks
    own = ENGINE_SIZING.get(plan.behaviour.engine) if plan.overhead_bytes is None else None
    engine_sized = own(plan, spec, config, analysis, weights.per_gpu_bytes, utilization) \
        if own is not None else None
    if engine_sized is not None:
        overhead = engine_sized[0]
    lmdeploy = engine_sized if plan.behaviour.engine == "lmdeploy" else None
    trtllm = engine_sized if plan.behaviour.engine == "trtllm" else None
    sizer = None if weights.split is None else LayoutSizer(
        weights.split, spec, utilization, of_free,
        memory.overhead_bytes if memory is not None else overhead, adapter_bytes=lora_bytes)
    sized = capacity(
        analysis,
        spec,
        GpuWeights(weights.per_gpu_bytes, weights.decode_read_per_gpu_bytes,
                   weights.estimated, weights.source),
        Sizing(utilization, fraction_of_free_memory=of_free, overhead_bytes=overhead,
               memory=memory, given_budget=given,
               token_cap=_token_cap(plan, engine_sized)),
    )
    if sized is not None and memory is not None and plan.layout.pp == 1:
        sized = _vllm_grouped(sized, analysis, memory.block_size, memory.profiled_tokens)
    elif sized is not None and memory is not None and weights.split is not None and \
            dims is not None:
        sized = _vllm_stages(sized, analysis, memory, weights.split, dims,
                             lora.per_stage if lora is not None else None)
    if sized is not None and lmdeploy is not None and lmdeploy[1] is not None:
        # LMDeploy holds a hybrid's linear state in a pool it sets aside first (overhead):
        # its blocks are the tokens, and a sequence needs only its KV from them
        tokens = lmdeploy[1]
        sized = replace(sized, max_tokens=tokens) if not \
            sized.state_bytes_per_sequence_per_gpu else replace(
                sized, max_tokens=tokens, max_sequences=tokens // max(sized.context, 1))
    if sized is not None and plan.behaviour.engine == "trtllm":
        sized = replace(sized, fraction_name="free_gpu_memory_fraction")
        if trtllm is not None and trtllm[1] is not None \
                and not sized.state_bytes_per_sequence_per_gpu:
            tokens, capped_by = trtllm[1], trtllm[2]
            sized = replace(sized, max_tokens=tokens, kv_tokens_capped_by=capped_by,
                            max_sequences=min(sized.max_sequences, tokens // sized.context)
                            if capped_by and sized.max_sequences is not None
                            else sized.max_sequences)
            sized = trtllm_pools(sized, plan, analysis)
    if sized is not None and plan.behaviour.engine == "sglang":
        sized = sglang_state_split(replace(sized, fraction_name="mem_fraction_static"),
                                    plan)
        page = plan.engine_start.page_size if plan.engine_start else None
        price = plan.behaviour.pool_token_bytes
        if price is not None and price > 0 and page:  # DeepSeek-V4: the engine's own pools
            # (available - what it sets aside) / its price of a token, in whole pages
            free = max(sized.kv_budget_bytes_per_gpu - plan.behaviour.pool_fixed_bytes, 0)
            tokens = int(free / price)
            cap = plan.kv_tokens_cap if plan.kv_tokens_cap and plan.kv_tokens_cap < tokens \
                else None  # --max-total-tokens first, then whole pages, as for other pools
            tokens = (cap or tokens) // page * page
            sized = replace(sized, max_tokens=tokens, max_sequences=tokens // max(
                sized.context, 1) if sized.max_sequences is not None else None,
                kv_tokens_capped_by=(plan.kv_tokens_cap_source or "--max-total-tokens")
                if cap else None)
        elif page and page > 1 and not sized.state_bytes_per_sequence_per_gpu:
            # the pool is whole pages (model_runner.py@0.4.6.post1 L774-781: tokens //
            # page_size * page_size, after --max-total-tokens)
            sized = replace(sized, max_tokens=sized.max_tokens // page * page)
    return sized, sizer


def _vllm_grouped(sized: Capacity, analysis: KvAnalysis, block: int,
                  batched_tokens: int) -> Capacity:
    """vLLM's "GPU KV cache size" for a model whose layers it groups by cache spec (full
    and sliding-window attention, attention and state: kvlint/model/vllm_groups.py), in the
    releases that print it as whole blocks per group or as concurrency x length
    (``batched_tokens``: max_num_batched_tokens, a window group's share of a request)."""
    from kvlint.model.vllm_groups import kv_groups

    plan = analysis.plan
    groups = kv_groups(analysis.cached, analysis.dtype, plan.layout.attention_tp,
                       plan.behaviour.version, plan.behaviour.kv_sharding, batched_tokens)
    if groups is None:
        return sized
    block = groups.block_size(block)
    tokens = groups.printed_tokens(max(sized.kv_budget_bytes_per_gpu, 0), block,
                                   plan.max_model_len or sized.context)
    return replace(sized, max_tokens=tokens, block_size=block)


def _lora_stages(plan: ServingPlan, config: dict[str, Any], defaults: ConfigDefaults,
                 dtype_bytes: int) -> LoraBytes | None:
    """The LoRA buffers of each pipeline stage's GPU (vLLM with ``--enable-lora`` only;
    kvlint.model.lora); ``None`` when LoRA is off or the config cannot be shaped."""
    if plan.lora is None or plan.behaviour.engine != "vllm":
        return None
    from kvlint.loaders.shape import resolve_shape
    from kvlint.model.lora import lora_bytes

    try:
        shape = resolve_shape(config, defaults=defaults)
    except ConfigError:
        return None
    names = config.get("architectures")
    architecture = names[0] if isinstance(names, list) and names and \
        isinstance(names[0], str) else None
    try:
        return lora_bytes(shape, architecture, plan.lora, tp=plan.layout.tp,
                          pp=plan.layout.pp, version=plan.behaviour.version,
                          model_dtype_bytes=dtype_bytes)
    except ValueError:  # more stages than layers: KV205 says so, and nothing is sized
        return None


def _vllm_stages(sized: Capacity, analysis: KvAnalysis, memory: MemoryTerms,
                 split: WeightSplit, dims: ModelDims,
                 lora: tuple[int, ...] | None = None) -> Capacity:
    """vLLM's KV cache under pipeline parallelism: each stage's worker profiles its own
    memory (its layers' weights, the embeddings on the first stage and the LM head on the
    last; the dummy forward pass on every stage, the sampler on the last only) and sizes
    blocks for its own layers; the engine then gives every worker the fewest blocks any has
    (V1 ``unify_kv_cache_configs``, v1/core/kv_cache_utils.py@v0.9.2; V0 the minimum of the
    workers' ``determine_num_available_blocks``, executor/ray_distributed_executor.py).
    The capacity is that stage's: its memory terms, its budget, its tokens."""
    from kvlint.model.kv import stage_token_bytes
    from kvlint.model.memory import block_tokens, forward_activation_bytes

    plan = analysis.plan
    layout = plan.layout
    per_token = stage_token_bytes(analysis.cached, analysis.dtype, layout,
                                  plan.behaviour.kv_sharding)
    if per_token is None or len(per_token) != layout.pp:
        return sized
    weights = split.per_stage(layout.tp, layout.pp, layout.attention_tp)
    forward = min(forward_activation_bytes(dims, memory.profiled_tokens, layout.attention_tp),
                  memory.activation_peak_bytes)
    best: tuple[int, MemoryTerms] | None = None
    for stage, (weight, bytes_) in enumerate(zip(weights, per_token, strict=True)):
        adapters = lora[stage] if lora is not None and len(lora) == len(weights) else 0
        terms = replace(memory, weight_bytes=weight + adapters, lora_bytes=adapters,
                        activation_peak_bytes=(
            memory.activation_peak_bytes if stage == layout.pp - 1 else forward))
        tokens = block_tokens(terms.kv_memory_bytes, ceil(bytes_), memory.block_size)
        if best is None or tokens < best[0]:
            best = (tokens, terms)
    assert best is not None
    tokens, terms = best
    return replace(sized, max_tokens=tokens, kv_budget_bytes_per_gpu=terms.kv_memory_bytes,
                   weight_bytes_per_gpu=terms.weight_bytes,
                   overhead_bytes=terms.overhead_bytes, memory=terms,
                   max_sequences=None if sized.max_sequences is None
                   else tokens // max(sized.context, 1))


def _env_switch(plan: ServingPlan, name: str) -> bool | None:
    """An engine's boolean environment variable as the plan's environment sets it (``None``:
    unset, or set to a value the manifest does not hold): vLLM's envs.py reads these as
    ``bool(int(value))``."""
    value = dict(plan.env).get(name)
    try:
        return bool(int(value)) if value is not None else None
    except ValueError:
        return None


def _token_cap(plan: ServingPlan, engine_sized: tuple[int, int | None, str | None] | None
               ) -> tuple[int, str] | None:
    """The KV pool's token cap where the generic budget sizes it: SGLang's
    ``--max-total-tokens``; TensorRT-LLM's ``kv_cache_config.max_tokens`` /
    ``max_tokens_in_paged_kv_cache`` in the TensorRT-engine workflow (the PyTorch backend's
    own sizing applies it itself), where the C++ runtime takes the smaller of it and the
    memory fraction's tokens (``docs/source/memory.md``@v0.7.1: "if both are specified ...
    the minimum"; ``executor.h`` KvCacheConfig@v0.16.0)."""
    if not plan.kv_tokens_cap:
        return None
    if plan.behaviour.engine == "sglang":
        return plan.kv_tokens_cap, plan.kv_tokens_cap_source or "--max-total-tokens"
    if plan.behaviour.engine == "trtllm" and engine_sized is None:
        return plan.kv_tokens_cap, plan.kv_tokens_cap_source or "max_tokens_in_paged_kv_cache"
    return None


def _sampler_switch(plan: ServingPlan) -> bool | None:
    """``VLLM_USE_FLASHINFER_SAMPLER`` as the plan's environment sets it, else as vLLM's own
    image behaves without it (:func:`~kvlint.model.memory.image_flashinfer_sampler`)."""
    from kvlint.model.memory import SAMPLER_ENV, image_flashinfer_sampler

    switch = _env_switch(plan, SAMPLER_ENV)
    return switch if switch is not None else image_flashinfer_sampler(
        plan.behaviour.version, plan.official_image)


TRITON_KERNELS_BUNDLED_SINCE = "0.12.0"
"""vLLM ships triton_kernels as ``vllm/third_party/triton_kernels`` from the 0.12.0 wheel (absent
from 0.11.0, 0.11.1 and 0.11.2, where ``has_triton_kernels`` looks only for the optional
``triton_kernels`` package: vllm/utils/__init__.py@v0.11.0 line 3431, and
vllm/utils/import_utils.py@v0.12.0 lines 431-438). Before it a ``pip install vllm`` runs
MXFP4 MoE with Marlin on Hopper too (quantization/mxfp4.py@v0.11.0 lines 94-99: Marlin when
``not has_triton_kernels()``; FlashInfer's MXFP4 backends need an environment variable on
SM90 and the optional FlashInfer on SM100): kvlint assumes that install, as for the sampler
(kvlint/model/memory.py FLASHINFER_SAMPLER_OPT_IN_SINCE)."""


def _marlin_mxfp4(gpu: str, version: str | None = None) -> bool:
    """Whether vLLM's default MXFP4 MoE backend on ``gpu`` is Marlin: an NVIDIA GPU below
    compute capability 9.0, or any NVIDIA GPU before triton_kernels came with vLLM
    (:data:`TRITON_KERNELS_BUNDLED_SINCE`); AMD GPUs and unnamed ones are not judged."""
    from packaging.version import InvalidVersion, Version

    if gpu.upper().startswith(("MI", "CUSTOM", "GPU ")):
        return False
    try:
        bundled = version is None or Version(version) >= Version(TRITON_KERNELS_BUNDLED_SINCE)
    except InvalidVersion:
        bundled = True
    return not bundled or not sm90_or_later(gpu)


def _gpu_spec(plan: ServingPlan) -> GpuSpec:
    """The GPU of the plan: the table's (its runtime memory, or the given memory in its
    place), or one known only by the given memory (no bandwidth)."""
    from kvlint.model.gpu_memory import custom_gpu_name
    from kvlint.model.hardware import find_gpu

    memory = plan.gpu_memory_bytes
    if plan.gpu is None:
        assert memory is not None
        return GpuSpec(custom_gpu_name(memory), memory, None)
    try:
        gpu = find_gpu(plan.gpu)
    except ValueError as err:
        raise UsageError(str(err).strip("'\"")) from None
    return GpuSpec(gpu.name, gpu.runtime_memory_bytes if memory is None else memory,
                   gpu.bandwidth_bytes_per_s)


def check_models(
    refs: Iterable[str],
    plan: ServingPlan,
    rules: Sequence[type[Rule]],
    *,
    revision: str | None = None,
    offline: bool = False,
    fail_on: str = "error",
    lock: ModelLock | None = None,
) -> LintRun:
    """``kvlint check``: one result per model reference (locked models from ``lock``)."""
    defaults = default_config_defaults()
    results = []
    for ref in refs:
        loaded: LoadedConfig = load_config(ref, revision=revision, offline=offline, lock=lock)
        target = Target(loaded.ref, "model", loaded.revision, loaded.path)
        results.append(lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                   defaults=defaults, offline=offline, lock=lock))
    return LintRun(tuple(results), fail_on, tuple(rules))
