"""A serving plan (how a model is deployed) and the KV analysis of a model under it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from math import ceil

from packaging.version import InvalidVersion, Version

from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.gpu_memory import MAX_GPU_MEMORY_GIB
from kvlint.model.limits import MAX_SIZE
from kvlint.model.lora import LoraSlots

DEFAULT_CONTEXT = 8192
"""Sequence length for per-sequence figures when none is given."""

KvSharding = str
"""``replicate`` | ``ceil`` | ``refuse`` | ``refuse-except-mqa`` | ``layers`` (see kv.py)."""


@dataclass(frozen=True)
class EngineBehaviour:
    """What the chosen engine and version do with this model's KV cache.

    Resolved from the engine table (``kvlint.engines``) at the edge; the defaults are the
    newest vLLM kvlint knows. ``sources`` maps each behaviour to where the fact comes from.
    """

    engine: str = "vllm"
    display: str = "vLLM"
    version: str | None = None
    """The version the behaviour was resolved for (the newest known when not pinned)."""
    pinned: bool = False
    """Whether the user named a version (else the newest known was assumed)."""
    named: bool = False
    """Whether the user named the engine at all (else vLLM was assumed)."""
    unknown: bool = False
    """Whether the engine's version is unknown (an image tag that names none): the findings
    are those every version kvlint knows gives (kvlint.linter.lint_config)."""
    judged_by: tuple[str, ...] = ()
    """With :attr:`unknown`: the versions the findings were judged by."""
    kv_sharding: KvSharding = "replicate"
    mla_cache: str = "latent"
    """``latent`` | ``full`` | ``full-padded-v`` for MLA models."""
    mla_latent_versions: str | None = None
    """Versions in which this engine caches this model's MLA latent (for messages)."""
    mla_alternatives: tuple[str, ...] = ()
    """Engines (``vLLM ≥ 0.7.1``) whose newest version caches this model's latent."""
    fp8_mla: bool | None = None
    """Whether an fp8 KV cache works with MLA here (``None``: unknown)."""
    fp8_mla_versions: str | None = None
    windowed_sliding_cache: bool = True
    windowed_pool_share: Fraction | None = None
    """The engine keeps windowed layers in a pool of this share of the full pool's tokens
    (SGLang's ``swa_full_tokens_ratio``): a pool token costs the full layers plus this share
    of the windowed ones (``None``: one pool, every layer per token)."""
    pool_token_bytes: Fraction | None = None
    """The engine's own price of one pool token on a GPU, where it does not size the pool
    by the layer sum (SGLang's DeepSeek-V4 pools: kvlint/model/sglang_dsv4.py); a sequence
    of ``n`` tokens then costs ``n`` such tokens."""
    pool_fixed_bytes: int = 0
    """What that engine sets aside per GPU before its pool tokens."""
    allocates_shared_kv_layers: bool = False
    """The engine sizes its pool for every layer, those that reuse another layer's cache
    (``num_kv_shared_layers``) included (SGLang)."""
    pipeline_parallel: bool = True
    """Whether the engine has pipeline parallelism (a layout with pp > 1 is one it can run;
    TGI and LMDeploy have none: engines.toml ``pipeline_parallel``)."""
    windowed_versions: str | None = None
    unverified: tuple[str, ...] = ()
    """Behaviours that rest on facts the engine table marks as unverified."""
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """``vLLM 0.6.3`` or ``vLLM 0.11.0 (newest known)``."""
        version = self.version or "?"
        return f"{self.display} {version}" + ("" if self.pinned else " (newest known)")


@dataclass(frozen=True)
class EngineStart:
    """Start-up options that shape an engine's memory beyond the plan's own fields: SGLang's
    that feed its default ``mem_fraction_static`` or round its pool, LMDeploy's backend
    (``None``: the release's default)."""

    chunked_prefill_size: int | None = None
    """``--chunked-prefill-size``; -1: no chunking."""
    cuda_graph_max_bs: int | None = None
    cuda_graph_off: bool = False
    """SGLang ``--disable-cuda-graph``: no graphs are captured, so no graph state."""
    page_size: int | None = None
    attention_windows: tuple[int, ...] | None = None
    """TensorRT-LLM ``kv_cache_config.max_attention_window`` (``None``: unset, every layer at
    ``max_seq_len``)."""
    speculative_algorithm: str | None = None
    backend: str | None = None
    """LMDeploy ``--backend`` (``None``: the one ``lmdeploy serve`` picks)."""
    swa_full_tokens_ratio: float | None = None
    """SGLang ``--swa-full-tokens-ratio``: the sliding-window pool's share of the full
    pool's tokens (``None``: the release's default, ``windowed_pool_share``)."""


@dataclass(frozen=True)
class ServingPlan:
    """Engine, parallelism, KV dtype and the workload the numbers are computed for."""

    layout: kv.ParallelLayout = field(default_factory=kv.ParallelLayout)
    kv_cache_dtype: str = "auto"
    context: int = DEFAULT_CONTEXT
    batch: int = 1
    engine: str | None = None
    engine_version: str | None = None
    gpu: str | None = None
    gpu_memory_utilization: float | None = None
    """``None``: the engine's default (engines.toml)."""
    overhead_bytes: int | None = None
    """Per-GPU memory reserved besides weights and KV; ``None``: kvlint's default."""
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    """Tokens of one engine step (vLLM: the start-up profile's dummy forward pass);
    ``None``: the engine's default (kvlint.model.memory.default_batch_limits)."""
    kv_cache_memory_bytes: int | None = None
    """vLLM ``--kv-cache-memory-bytes``: the KV cache's bytes per GPU, set by hand; the
    engine then sizes it so, without the memory profile or ``gpu_memory_utilization``."""
    kv_cache_memory_source: str | None = None
    """Where :attr:`kv_cache_memory_bytes` comes from (the manifest's key and line)."""
    extensible_kv_cache: bool | None = None
    """vLLM 0.34's ``--[no-]enable-extensible-kv-cache``; ``None``: the version's default (on
    from 0.34.0, kvlint.model.memory.EXTENSIBLE_KV_CACHE_SINCE)."""
    engine_start: EngineStart | None = None
    """Start-up options that shape an engine's memory beyond the plan's own fields (SGLang:
    chunked prefill, CUDA-graph batch, page size, speculative decoding)."""
    kv_tokens_cap: int | None = None
    """SGLang ``--max-total-tokens``: its KV pool holds at most this many tokens (the
    profiled size when smaller)."""
    kv_tokens_cap_source: str | None = None
    """Where :attr:`kv_tokens_cap` comes from (the manifest's key and line)."""
    behaviour: EngineBehaviour = field(default_factory=EngineBehaviour)
    env: tuple[tuple[str, str | None], ...] = ()
    """Variables of the engine process's environment that change what it accepts
    (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``), as ``(name, value)`` pairs; ``None``: set, but the
    manifest does not hold the value (a secret reference)."""
    official_image: bool = False
    """The engine runs from its project's own container image (a manifest's
    ``vllm/vllm-openai``), which carries the optional packages a ``pip install`` lacks."""
    dtype: str | None = None
    """The engine's model dtype (``--dtype``: auto, half, bfloat16, float32...); an ``auto``
    KV cache follows it. ``None``: the config's."""
    gpu_source: str | None = None
    """Where :attr:`gpu` comes from (``resources.gpu (line 8)`` in a manifest, ``--gpu``,
    ``settings (gpu)``)."""
    gpu_memory_bytes: int | None = None
    """Total memory of one GPU as its driver reports it (``--gpu-memory``, ``gpu-memory`` in the
    settings, a manifest's node label): it replaces the GPU table's figure, and sizes a GPU
    the table does not know when :attr:`gpu` is ``None`` (kvlint.model.gpu_memory)."""
    gpu_memory_source: str | None = None
    """Where :attr:`gpu_memory_bytes` comes from (``--gpu-memory``, ``settings (gpu-memory)``,
    a manifest's key and line)."""
    config_overrides: str | None = None
    """Fields of the model's config the engine command overrides (vLLM ``--hf-overrides``,
    ``--rope-scaling``, ``--rope-theta``; SGLang ``--json-model-override-args``), as the
    canonical JSON text of an object (kvlint.model.overrides); applied before any rule."""
    config_overrides_source: str | None = None
    """Where :attr:`config_overrides` comes from (the manifest's options and line)."""
    quantization: str | None = None
    """The quantization method the engine command asks for (vLLM/SGLang ``--quantization``,
    TGI ``--quantize``): a method that quantizes a 16-bit checkpoint while loading it changes
    the weight bytes (kvlint.model.overrides.on_the_fly_quantization)."""
    quantization_source: str | None = None
    """Where :attr:`quantization` comes from (the manifest's option and line)."""
    trust_remote_code: bool | None = None
    """Whether the engine command passes ``--trust-remote-code``; ``None`` where kvlint read
    no complete engine command (``kvlint check``, an operator's resource, words it cannot
    expand)."""
    lora: LoraSlots | None = None
    """vLLM ``--enable-lora`` and its slots (``--max-loras``, ``--max-lora-rank``,
    ``--fully-sharded-loras``): the adapters' buffers are allocated with the weights
    (kvlint.model.lora). ``None``: LoRA off."""
    lora_source: str | None = None
    """Where :attr:`lora` comes from (the manifest's option and line)."""
    cpu_offload_gb: float | None = None
    """vLLM and SGLang ``--cpu-offload-gb``: GiB of each GPU's weights kept in CPU memory
    (kvlint.model.offload)."""
    cpu_offload_source: str | None = None
    """Where :attr:`cpu_offload_gb` comes from (the manifest's option and line)."""

    @property
    def sizes_gpu(self) -> bool:
        """Whether capacity is computed: a GPU is named, or its memory given."""
        return bool(self.gpu) or self.gpu_memory_bytes is not None

    @property
    def windowed_sliding_cache(self) -> bool:
        """Whether the engine allocates windowed caches for sliding/chunked layers."""
        return self.behaviour.windowed_sliding_cache

    def __post_init__(self) -> None:
        if self.context < 1:
            raise ValueError(f"context must be a positive number of tokens, got {self.context}")
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1, got {self.batch}")
        for name in ("context", "batch", "max_model_len", "max_num_seqs",
                     "max_num_batched_tokens", "kv_tokens_cap"):
            value = getattr(self, name)
            if value is not None and value > MAX_SIZE:
                raise ValueError(f"{name} must be at most {MAX_SIZE:,} (no engine admits more), "
                                 f"got {'a larger number' if value > 10**30 else value}")
        kv_bytes = self.kv_cache_memory_bytes
        if kv_bytes is not None and not 0 < kv_bytes <= MAX_KV_CACHE_MEMORY_BYTES:
            raise ValueError(f"kv cache memory must be in (0, {MAX_KV_CACHE_MEMORY_BYTES:,}] "
                             f"bytes, got {'a larger number' if kv_bytes > 10**30 else kv_bytes}")
        offload = self.cpu_offload_gb
        if offload is not None and not 0 <= offload <= MAX_GPU_MEMORY_GIB * 64:
            raise ValueError(f"cpu offload must be in [0, {MAX_GPU_MEMORY_GIB * 64}] GiB, "
                             f"got {offload}")
        util = self.gpu_memory_utilization
        if util is not None and not 0 < util <= 1:
            raise ValueError(f"gpu memory utilization must be in (0, 1], got {util}")
        memory = self.gpu_memory_bytes
        if memory is not None and not 0 < memory <= MAX_GPU_MEMORY_GIB * 2**30:
            raise ValueError(f"gpu memory must be in (0, {MAX_GPU_MEMORY_GIB}] GiB, "
                             f"got {memory} bytes")


MAX_KV_CACHE_MEMORY_BYTES = 2**60
"""A KV cache size no GPU holds (1 EiB): kept exact, and reported as too large for the GPU."""


@dataclass(frozen=True)
class KvAnalysis:
    """Every KV figure kvlint reports for one model under one plan.

    ``geometry`` is the model's; ``cached`` is what the engine stores (they differ for MLA
    models on engines that cache the up-projected per-head K/V instead of the latent). All
    byte figures are of ``cached``.
    """

    geometry: AttentionGeometry
    cached: AttentionGeometry
    plan: ServingPlan
    dtype: kv.KvDtype
    footprint: kv.KvFootprint
    bytes_per_sequence: int
    """One logical copy of a ``plan.context``-token sequence."""
    bytes_per_sequence_per_gpu: int | None
    """The same sequence on the fullest GPU (``None`` when the engine refuses the tp).
    Both sequence figures include the recurrent state of hybrid models."""
    state_bytes_per_sequence_per_gpu: int | None = None
    """The recurrent-state part of ``bytes_per_sequence_per_gpu`` (0 without recurrent
    layers)."""

    @property
    def latent_bytes_per_token(self) -> int:
        """Bytes per token of the model's own geometry (the MLA latent where it has one)."""
        return kv.bytes_per_token(self.geometry, self.dtype)

    @property
    def bytes_per_sequence_cluster(self) -> int | None:
        """The sequence summed over the GPUs of its attention TP group, all stages."""
        return kv.bytes_per_sequence_cluster(
            self.cached, self.dtype, self.plan.layout, self.plan.context,
            windowed=self.plan.windowed_sliding_cache, sharding=self.plan.behaviour.kv_sharding)

    @property
    def duplicate_bytes_per_sequence(self) -> int | None:
        cluster = self.bytes_per_sequence_cluster
        return None if cluster is None else cluster - self.bytes_per_sequence


def release_of(plan: ServingPlan) -> Version | None:
    """The plan's engine release as a ``Version`` (``None``: the newest kvlint read, or a
    version that is not a release number)."""
    try:
        return Version(plan.behaviour.version) if plan.behaviour.version else None
    except InvalidVersion:
        return None


def with_pool_share(behaviour: EngineBehaviour, start: EngineStart | None) -> EngineBehaviour:
    """``behaviour`` with the operator's SGLang ``--swa-full-tokens-ratio`` as the windowed
    pool's share, where the engine keeps such a pool (server_args.py@0.5.23: the option
    sets ``swa_full_tokens_ratio``, which sizes the SWA pool against the full one)."""
    ratio = start.swa_full_tokens_ratio if start is not None else None
    if ratio is None or behaviour.windowed_pool_share is None:
        return behaviour
    return replace(behaviour, windowed_pool_share=Fraction(str(ratio)))


def sequence_bytes_per_gpu(cached: AttentionGeometry, dtype: kv.KvDtype, plan: ServingPlan,
                           layout: kv.ParallelLayout, context: int) -> int | None:
    """One ``context``-token sequence on the fullest GPU of ``layout``, its recurrent state
    included; in the engine's own unit where it prices its pool tokens itself
    (``behaviour.pool_token_bytes``: ``n`` tokens cost ``n`` pool tokens)."""
    own = plan.behaviour.pool_token_bytes
    if own is not None:
        return ceil(own * context)
    return kv.bytes_per_sequence_per_gpu(cached, dtype, layout, context,
                                         windowed=plan.windowed_sliding_cache,
                                         sharding=plan.behaviour.kv_sharding)


def analyze(geometry: AttentionGeometry, plan: ServingPlan) -> KvAnalysis:
    """Resolve the KV dtype and compute the footprint under the plan's engine behaviour.
    Raises ``ValueError`` for a KV dtype the model cannot use, or a pp above its layers."""
    dtype = kv.resolve_kv_dtype(plan.kv_cache_dtype, geometry, plan.dtype)
    behaviour = plan.behaviour
    cached = kv.as_cached(geometry, behaviour.mla_cache,
                          shared_kv_allocated=behaviour.allocates_shared_kv_layers)
    windowed = plan.windowed_sliding_cache
    footprint = kv.footprint(cached, dtype, plan.layout, behaviour.kv_sharding,
                             behaviour.windowed_pool_share if windowed else None)
    own = behaviour.pool_token_bytes
    if own is not None:  # the engine's own unit: every GPU of the group holds the same
        footprint = replace(
            footprint, bytes_per_token=ceil(own), bytes_per_token_exact=own,
            bytes_per_token_per_gpu=ceil(own), bytes_per_token_per_gpu_exact=own,
            bytes_per_token_cluster=ceil(own * plan.layout.attention_tp),
            bytes_per_token_cluster_exact=own * plan.layout.attention_tp,
            replication_factor=float(plan.layout.attention_tp))
    return KvAnalysis(
        geometry=geometry,
        cached=cached,
        plan=plan,
        dtype=dtype,
        footprint=footprint,
        bytes_per_sequence=kv.bytes_per_sequence(cached, dtype, plan.context,
                                                 windowed=windowed)
        if own is None else ceil(own * plan.context),
        bytes_per_sequence_per_gpu=sequence_bytes_per_gpu(cached, dtype, plan, plan.layout,
                                                          plan.context),
        state_bytes_per_sequence_per_gpu=kv.state_bytes_per_sequence_per_gpu(
            cached, plan.layout, behaviour.kv_sharding),
    )
