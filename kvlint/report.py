"""The JSON output contract (docs/design.md §7, ``schema_version`` 2) as pydantic models.

``kvlint schema`` prints :func:`json_schema`. The JSON reporter builds plain dicts (pydantic's
import and model construction cost ~130 ms of start-up); the test suite validates its output
against these models and this schema, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Literal[2] = 2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetOut(_Strict):
    kind: Literal["model", "manifest", "source"]
    ref: str
    revision: str | None
    path: str | None
    line: int | None


class ServingOut(_Strict):
    engine: str | None
    engine_version: str | None
    tp: int
    pp: int
    dp: int
    dp_attention: bool
    kv_cache_dtype: str
    gpu: str | None
    max_model_len: int | None
    max_num_seqs: int | None


class GeometryOut(_Strict):
    model_type: str
    attention: Literal["mha", "gqa", "mqa", "mla", "none"]
    num_layers: int
    num_kv_layers: int
    num_sliding_layers: int
    sliding_window: int | None
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int = Field(description="Key head dim (MLA: qk_nope + qk_rope).")
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    dtype: str
    architecture: str | None = Field(description="architectures[0] of the config.")
    num_shared_kv_layers: int = Field(
        description="Attention layers that reuse another layer's cache and allocate none.")
    num_state_layers: int = Field(
        description="Recurrent / linear-attention layers that keep a per-sequence state.")
    layer_groups: list[LayerGroupOut] = Field(
        description="Runs of identical layers, in order: what each layer caches.")
    notes: list[str] = Field(
        default_factory=list,
        description="What kvlint assumed while reading the config: values it did not read "
                    "from it (transformers' config-class defaults, an assumed MHA...).")


class ExtraCacheOut(_Strict):
    name: str
    elements: int
    element_bytes: int | None = Field(description="Null: the KV cache dtype's bytes.")
    extra_bytes: int
    tokens_per_entry: int
    window: int | None
    replicated: bool


class StateOut(_Strict):
    kind: str
    dims: dict[str, int]
    dtype: str | None


class LayerGroupOut(_Strict):
    count: int
    kind: Literal["full", "sliding", "chunked", "none"]
    num_kv_heads: int | None = None
    k_head_dim: int | None = None
    v_head_dim: int | None = None
    window: int | None = None
    kv_lora_rank: int | None = None
    kv_shared: bool | None = None
    entry_bytes: int | None = None
    extra_caches: list[ExtraCacheOut] | None = None
    state: StateOut | None = None


class KvOut(_Strict):
    dtype: str
    bytes_per_element: float
    bytes_per_token: int | float = Field(
        description="One logical copy, all layers, bytes per token once past the windows "
                    "(a fraction when a cache keeps one entry per several tokens).")
    bytes_per_token_per_gpu: int | float
    kv_heads_per_gpu: int | None
    replication_factor: float
    bytes_per_token_cluster: int | float
    context: int | None
    bytes_per_sequence: int | None = Field(
        description="One logical copy of a context-token sequence: windowed and compressed "
                    "caches as held, plus the recurrent state of hybrid models.")
    state_bytes_per_sequence_per_gpu: int | None = Field(
        description="The recurrent-state part of one sequence on the fullest GPU (0 without "
                    "recurrent layers).")


class CapacityOut(_Strict):
    gpu: str = Field(
        description="The GPU table's name, or 'custom (80 GiB)' for a GPU given only by its "
                    "memory (--gpu-memory without --gpu: no bandwidth, so tpot_floor_ms is "
                    "null).")
    gpu_memory_bytes: int = Field(
        description="Memory of one GPU as sized: the table's runtime figure, or the given "
                    "--gpu-memory / gpu-memory (GiB x 2**30) in its place.")
    gpu_memory_source: str = Field(
        description="Where gpu_memory_bytes comes from: 'gpus.toml', '--gpu-memory', "
                    "'settings (gpu-memory)', or the manifest's key and line.")
    gpu_source: str | None = Field(
        description="Where the GPU comes from: the manifest's key and line (it wins), --gpu, "
                    "or the settings file.")
    gpu_memory_utilization: float = Field(
        description="The memory fraction sized: the manifest's or command line's, else the "
                    "engine's default.")
    weight_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    max_tokens: int = Field(
        description="KV budget // bytes per token per GPU; for models with recurrent state, "
                    "the tokens max_sequences full-length sequences hold (vLLM's 'KV cache "
                    "size': max concurrency x max_model_len).")
    max_sequences: int | None = Field(
        description="KV budget // bytes_per_sequence_per_gpu.")
    crossover_batch: float | None
    tpot_floor_ms: float | None
    context: int = Field(description="The sequence length sized: max_model_len.")
    bytes_per_sequence_per_gpu: int = Field(
        description="One context-token sequence on the fullest GPU: its KV (windowed and "
                    "compressed caches as held) plus its recurrent state.")
    state_bytes_per_sequence_per_gpu: int = Field(
        description="The recurrent-state part of bytes_per_sequence_per_gpu (one state per "
                    "running sequence, from the same memory as the KV cache).")
    overhead_bytes_per_gpu: int = Field(
        description="Memory besides weights and KV: --overhead, or the sum of the modelled "
                    "memory_profile terms.")
    max_concurrency: float | None = Field(
        description="vLLM's 'Maximum concurrency for context tokens per request'.")
    memory_profile: MemoryProfileOut | None = Field(
        description="vLLM's start-up memory profile term by term (vLLM without --overhead).")
    kv_tokens_capped_by: str | None = Field(
        default=None,
        description="Where a cap on the KV pool's tokens that binds was set (SGLang "
                    "--max-total-tokens, the manifest's key and line): max_tokens is that "
                    "cap, below what kv_budget_bytes_per_gpu holds.")
    kv_budget_source: str | None = Field(
        default=None,
        description="Where a KV budget set by hand comes from (vLLM --kv-cache-memory-bytes "
                    ">= 0.10.2, the manifest's key and line): kv_budget_bytes_per_gpu is then "
                    "that value, without a memory profile or gpu_memory_utilization.")
    kv_pools: list[KvPoolSetOut] = Field(
        default_factory=list,
        description="An engine with one KV pool per attention window size (TensorRT-LLM, a "
                    "model with sliding windows): the pools sized, then the other setting's.")


class KvPoolOut(_Strict):
    window: int = Field(description="The tokens a sequence keeps in the pool (max_seq_len "
                                    "for full attention).")
    layers: int
    bytes_per_token: int = Field(description="The pool's layers' bytes per token on one GPU.")
    blocks: int
    tokens: int


class KvPoolSetOut(_Strict):
    setting: str = Field(description="What the pools follow (TensorRT-LLM: "
                                     "kv_cache_config.max_attention_window).")
    assumed: bool = Field(description="Whether max_tokens and max_sequences are this set's; "
                                      "else the other setting's pools, for comparison.")
    note: str
    tokens: int = Field(description="What the engine prints as its tokens: every pool's, "
                                    "summed.")
    max_sequences: int = Field(description="Sequences of max_seq_len that fit every pool.")
    max_seq_len: int
    tokens_per_block: int
    pools: list[KvPoolOut]


class MemoryProfileOut(_Strict):
    engine_version: str
    requested_bytes: int = Field(description="GPU memory x gpu_memory_utilization.")
    weight_bytes: int = Field(description="'Model loading took'.")
    lora_bytes: int = Field(
        default=0, description="Of weight_bytes: the LoRA adapters' buffers (vLLM "
                               "--enable-lora: max_loras x max_lora_rank slots per layer).")
    activation_peak_bytes: int = Field(
        description="Estimate of the profile run's torch peak ('peak activation').")
    non_torch_bytes: int = Field(description="Estimate of the non-torch memory.")
    cuda_graph_bytes: int = Field(
        description="Estimate of the CUDA-graph memory deducted up front (vLLM >= 0.21.0).")
    kv_memory_bytes: int = Field(description="'Available KV cache memory'.")
    profiled_tokens: int = Field(description="max_num_batched_tokens of the profile run.")
    sampler_rows: int
    kv_margin_bytes: int = Field(
        description="vLLM >= 0.34.0: what the extensible KV cache's margin (max(1 GiB, "
                    "0.75 x peak activation)) takes beyond the memory gpu_memory_utilization "
                    "leaves free.")
    block_size: int = Field(description="vLLM's default KV block size in tokens (16, 64 "
                                        "from 0.34.0).")
    estimated: list[str] = Field(description="The terms kvlint estimates (vLLM measures them).")


class SuggestionOut(_Strict):
    message: str = Field(description="The proposed change in words.")
    serving: dict[str, Any] = Field(
        description="The serving settings it proposes, keyed as in the result's `serving` "
                    "(tp, pp, dp, dp_attention, kv_cache_dtype, max_model_len, max_num_seqs, "
                    "engine, engine_version, gpu); re-checking with them clears the finding.")


class FindingOut(_Strict):
    code: str
    name: str
    severity: Literal["error", "warning", "info"]
    message: str
    path: str | None
    line: int | None
    column: int | None
    end_line: int | None = Field(
        default=None, description="Last line of the finding's span when it spans several "
        "(a flag's value written on the next line).")
    data: dict[str, Any]
    suggestion: SuggestionOut | None = Field(
        default=None, description="Absent when the finding proposes no change kvlint can "
        "state as serving settings.")


class MaterializationOut(_Strict):
    op: str = Field(description="The op, and the Python function that ran it.")
    amplification: float = Field(description="Elements written / unique KV elements read.")
    bytes: int = Field(description="Bytes written per step, over all calls.")
    calls: int
    module: str | None


class SdpaCallOut(_Strict):
    query_shape: list[int]
    key_shape: list[int]
    value_shape: list[int]
    dtype: str
    enable_gqa: bool
    has_mask: bool
    is_causal: bool
    cuda_backend: Literal["flash", "efficient", "math"]
    materializes: bool
    reason: str
    calls: int


class ProbeImplOut(_Strict):
    impl: str
    dtype: str
    theory_read_bytes: int
    measured_read_bytes: int | None = Field(
        description="Null when not measured (skipped, or the engine's metrics give "
                    "allocation only).")
    read_ratio: float | None
    theory_cache_bytes: int
    measured_cache_bytes: int | None
    cache_ratio: float | None
    cache_traffic_read_bytes: int | None
    cache_traffic_write_bytes: int | None
    materializations: list[MaterializationOut]
    sdpa_calls: list[SdpaCallOut]
    verdict: Literal["ok", "warning", "error"]
    seconds: float | None
    skipped: str | None
    notes: list[str]
    details: dict[str, Any]


class ProbeTermOut(_Strict):
    term: str = Field(description="The engine's own words for the term.")
    unit: Literal["GiB", "tokens", "x"]
    printed: float | None = Field(description="As the log printed it; null: not printed.")
    predicted: float | None = Field(
        description="kvlint's memory profile; null: not predictable (no GPU memory total).")
    estimated: bool = Field(description="kvlint estimates the term (vLLM measures it).")
    error: float | None = Field(description="(predicted - printed) / printed.")


class ProbeOut(_Strict):
    device: Literal["cpu", "cuda"]
    method: Literal["dispatch", "timing", "ncu", "metrics", "log"] = Field(
        description="dispatch: CPU byte accounting; timing: CUDA decode-time slope; ncu: "
                    "Nsight Compute DRAM bytes; metrics: a running vLLM's /metrics; log: a "
                    "vLLM start-up log (--vllm-log), its printed KV memory over its printed "
                    "KV tokens per GPU.")
    context: int
    batch: int
    layers: int
    built: str
    notes: list[str]
    out_of_memory: str | None = Field(
        default=None,
        description="An engine start-up log's out-of-memory error, as printed: the logged "
                    "start failed (KV602).")
    impls: list[ProbeImplOut]
    terms: list[ProbeTermOut] = Field(
        default_factory=list,
        description="--vllm-log: the log's memory profile against kvlint's, term by term.")


class ResultOut(_Strict):
    target: TargetOut
    serving: ServingOut
    geometry: GeometryOut | None
    kv: KvOut | None
    capacity: CapacityOut | None
    findings: list[FindingOut]
    probe: ProbeOut | None = Field(default=None, description="kvlint probe only.")
    unavailable: str | None = Field(
        default=None,
        description="Why the model's config could not be fetched from the Hugging Face Hub "
                    "(network, deadline, auth, offline without a cached copy): nothing was "
                    "checked for it, and the run exits 2.")


class Summary(_Strict):
    error: int
    warning: int
    info: int


class Report(_Strict):
    schema_version: Literal[2]
    kvlint_version: str
    results: list[ResultOut]
    summary: Summary


def json_schema() -> dict[str, Any]:
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kvlint report"
    return schema
