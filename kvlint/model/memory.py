"""vLLM's start-up memory profile, term by term (pure arithmetic; issue 15).

vLLM sizes its KV cache from a profile it takes at start-up (``Worker.determine_available_memory``,
vllm/v1/worker/gpu_worker.py@v0.33.0; ``memory_profiling``, vllm/utils/mem_utils.py@v0.33.0)::

    KV memory = total x gpu_memory_utilization
                - weights                (``model_memory_usage``: "Model loading took")
                - activation peak        (torch peak of ``profile_run``: a dummy forward pass of
                                          max_num_batched_tokens tokens, then a dummy sampler
                                          pass of min(tokens, max_num_seqs) rows)
                - non-torch increase     (CUDA context, NCCL and custom all-reduce buffers)
                - CUDA graph estimate    (``profile_cudagraph_memory``; deducted up front
                                          since v0.20.0, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS)
    blocks    = KV memory // (page bytes x layers)   (v1/core/kv_cache_utils.py@v0.33.0)
    tokens    = blocks x block_size                  ("GPU KV cache size: N tokens")

From v0.34.0 the extensible KV cache (on by default on CUDA and ROCm) measures the same
terms after warmup and CUDA graph capture instead (``measure_kv_cache_bytes``,
vllm/v1/worker/extensible_kv_cache.py@v0.34.0 lines 592-618); the budget becomes
min(total x gpu_memory_utilization, total - margin), gpu_memory_utilization defaults to 1.0
and the block size to 64 (vllm/config/cache.py@v0.34.0): ``EXTENSIBLE_KV_CACHE_SINCE``.

Weights are kvlint's weights estimate (or the checkpoint's size); the KV-page arithmetic is
exact. The activation peak, non-torch and CUDA-graph terms are ESTIMATES kvlint cannot take
from a config exactly (vLLM measures them): their constants come from the profile lines of
real start-up logs (fixtures/vllm_logs, each cited below; bench/README.md, "Capacity vs vLLM
start-up logs"). Pipeline parallelism enters through the weights (the fullest stage's,
kvlint.model.weights.weight_bytes_per_gpu) and the KV bytes per token (the fullest stage's
layers): the budget is the smallest stage's, as vLLM sizes every stage's cache to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

GIB = 1024**3
MIB = 1024**2

BLOCK_SIZE = 16
"""vLLM's default KV block size in tokens through v0.33.0 (vllm/config/cache.py@v0.33.0:
``block_size`` defaults to 16 on CUDA for attention-only models; hybrid models use larger
pages)."""

BLOCK_SIZE_0_34 = 64
BLOCK_SIZE_64_SINCE = Version("0.34.0")
"""The default from v0.34.0: ``CacheConfig.DEFAULT_BLOCK_SIZE = 64`` (vllm/config/cache.py
@v0.34.0 line 185; 16 @v0.33.0), kept unless an attention backend prefers another size
(``Platform.update_block_size_for_backend``, vllm/platforms/interface.py@v0.34.0 lines
759-790)."""

EXTENSIBLE_KV_CACHE_SINCE = Version("0.34.0")
"""v0.34.0 sizes an extensible KV cache from the memory measured after warmup and CUDA graph
capture (``enable_extensible_kv_cache``, default on CUDA and ROCm: vllm/config/vllm.py@v0.34.0
lines 3200-3254; absent @v0.33.0). ``gpu_memory_utilization`` then defaults to 1.0
(``CacheConfig.resolved_gpu_memory_utilization``, vllm/config/cache.py@v0.34.0 lines
494-501; 0.92 without the extensible cache) and ``measure_kv_cache_bytes``
(vllm/v1/worker/extensible_kv_cache.py@v0.34.0 lines 592-618) keeps
``available = min(requested - non-KV use, free + committed - margin) - transient peak``:
the budget is capped at the memory free at start-up less the margin. kvlint takes the
GPU's memory for the memory free at start-up (an empty GPU). ``--kv-cache-memory-bytes``
turns it off and sets the budget (``KV_CACHE_MEMORY_BYTES_SINCE``);
``--no-enable-extensible-kv-cache`` turns it off (0.92 and no margin, as before); not
modelled: the other switches that do (--num-gpu-blocks-override, some KV connectors)."""

KV_CACHE_MEMORY_BYTES_SINCE = Version("0.10.2")
"""``--kv-cache-memory-bytes`` (``CacheConfig.kv_cache_memory_bytes``): the KV cache's bytes
per GPU, given. ``determine_available_memory`` then runs the profile forward pass only to
compile and returns the given bytes ("skipped memory profiling": no weights, activation,
non-torch or CUDA-graph terms, no gpu_memory_utilization; vllm/v1/worker/gpu_worker.py
@v0.10.2 lines 235-252, @v0.11.0 lines 235-252, @v0.34.0 lines 688-713, where multimodal
models keep their IPC buffers out of it, which kvlint does not model). The option is
absent @v0.10.1.1 (and in kvlint's 0.8.5 option table). From v0.34.0 it also turns the
extensible KV cache off (vllm/config/vllm.py@v0.34.0 lines 3203-3207). Parsed as
``human_readable_int`` (``20G`` = 20 GiB, ``20g`` = 20e9)."""

KV_MARGIN_FLOOR_BYTES = GIB
KV_MARGIN_FRACTION = 0.75
"""``KV_CACHE_MARGIN_FLOOR_BYTES = 1 << 30`` (3 << 30 on ROCm) and
``KV_CACHE_MARGIN_FRACTION = 0.75`` (vllm/v1/worker/extensible_kv_cache.py@v0.34.0 lines
64-65): the margin is max(floor, 0.75 x transient peak), the peak being the profiled
activation peak (``reserved_headroom_bytes = peak_activation_memory``,
vllm/v1/worker/gpu_worker.py@v0.34.0 lines 946-948; ``record_transient_peak`` may raise it
to warmup's peak). kvlint models CUDA."""

NON_TORCH_BYTES = 300 * MIB
"""ESTIMATE. Non-torch memory of one worker at tp=1 (CUDA context growth, cuBLAS workspaces).
Logged values: 0.35 GiB (RTX 3090, vLLM 0.6.4, vllm-project/vllm#10517), 0.25 GiB per rank
(2 x RTX 4090, tp=2, vllm-project/vllm#13061)."""

NON_TORCH_V1_BYTES = 100 * MIB
"""ESTIMATE. Non-torch memory of one tp=1 worker on V1 before 0.18.0, whose profile window
holds only the forward pass and the sampler (lazily loaded kernels and library workspaces
grow it a little). Printed by the engine ("non_torch_memory takes"): 0.09 GiB (A100-80GB,
0.8.2), 0.08 and 0.02 GiB (RTX 4090, RTX 4070 Laptop); the held-out start-ups of 0.9.2-0.17.1
(A100-40/80GB, L4, RTX 3090, H200; bench/vllm_logs_heldout.md) leave 0.0-0.12 GiB once
weights, KV and the sampler are taken from the budget. From 0.18.0 the CUDA-graph memory
profile runs inside the same window (``profile_cudagraph_memory`` within ``memory_profiling``,
vllm/v1/worker/gpu_worker.py@v0.18.0 lines 384-399; absent @v0.17.1), and the printed figure
is 0.24-0.27 GiB (0.19.0 on H100, fixtures/vllm_logs/llmd-*.log): :data:`NON_TORCH_BYTES`."""

NON_TORCH_GRAPH_PROFILE_SINCE = Version("0.18.0")
"""The first release that profiles CUDA-graph memory inside the non-torch window (above)."""

NON_TORCH_TP_BYTES = 1843 * MIB
"""ESTIMATE (1.8 GiB). Extra non-torch memory per worker at tp > 1: NCCL communicators and the
all-reduce buffers (custom all-reduce IPC buffers, vllm/distributed/device_communicators/
custom_all_reduce.py; vLLM 0.19 also logs "Enabled custom fusions: allreduce_rms", whose
workspace is allocated in the first forward pass). Engine data: vLLM 0.19.0 on H100 80GB
("non-torch forward increase memory", fixtures/vllm_logs/llmd-*.log, llm-d-planner accuracy
runs): 2.06-2.09 GiB at tp 2 (Llama-3.1-8B, Qwen2.5-7B, Mixtral-8x7B, Qwen2.5-72B), 2.13-2.21
GiB at tp 4 (Llama-3.1-8B, Qwen2.5-7B), against 0.24-0.27 GiB at tp 1 and 0.07 GiB per
pipeline stage; vLLM ~0.6.5 on H100 (vllm-project/vllm#10511): 3.58 GiB at tp 2 against 1.79
GiB at tp 1, the same +1.8 GiB. All of these are NVLink (SXM) GPUs; PCIe cards do not take it
(:func:`non_torch_bytes`)."""

CUDA_GRAPH_BYTES = 512 * MIB
"""ESTIMATE. The CUDA-graph pool vLLM deducts up front since v0.20.0 (gpu_worker.py@v0.33.0
logs "CUDA graph memory profiling is enabled (default since v0.21.0)"); logged pools run
0.1-1.5 GiB depending on model and capture sizes."""

CUDA_GRAPH_DEDUCTED_SINCE = Version("0.20.0")
"""gpu_worker.py@v0.33.0: ``cudagraph_memory_estimate_applied`` is taken from the KV memory when
VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is set. Its comment says "the default as of v0.21.0",
but the 0.20.0 wheel already defaults it to "1" (envs.py@0.20.0 lines 1720-1726; "0" in
envs.py@0.19.0 lines 1654-1656); @v0.11.0 the KV memory is ``requested_memory -
non_kv_cache_memory`` with no CUDA-graph term."""

V1_SINCE = Version("0.8.0")
"""V1 engine by default (chunked prefill always on, max_num_batched_tokens from a per-GPU
tier table; vllm/v1/worker/gpu_worker.py@v0.8.5: KV = total x utilization - torch peak -
non-torch, the same terms). Before it V0 without chunked prefill profiles
``max(max_model_len, 2048)`` tokens (``SchedulerConfig``, vllm/config.py@v0.5.3..v0.7.3), and
``EngineArgs.create_engine_config`` turns chunked prefill on by itself above 32,768 tokens of
context on CUDA (``use_long_context``, vllm/engine/arg_utils.py@v0.5.3..v0.7.3, absent
@v0.5.0; not for multimodal, sliding-window, LoRA or speculative models, which kvlint does
not tell apart here). All read in the wheels; it matches the V0 logs of
vllm-project/vllm#10517, whose torch peak grows with max_model_len."""

V0_CHUNKED_2048_SINCE = Version("0.6.5")
"""V0 chunked prefill's default max_num_batched_tokens: 512 through v0.6.4 ("the best balance
between ITL and TTFT on A100", vllm/config.py@v0.5.3, @v0.6.0, @v0.6.4), 2048 from v0.6.5
(@v0.6.5, @v0.6.6, @v0.7.3; read in the wheels)."""

V0_LONG_CONTEXT_CHUNKED_SINCE = Version("0.5.3")
"""The first release read with ``use_long_context`` (absent @v0.5.0; 0.5.1 and 0.5.2 not read)."""

A100_EXCEPTION_SINCE = Version("0.9.0")
"""``EngineArgs._set_default_args``: GPUs of >= 70 GiB get max_num_batched_tokens 8192 for
the API server and max_num_seqs 1024, others 2048 and 256 (vllm/engine/arg_utils.py@v0.8.5,
@v0.9.0, @v0.11.0, @v0.12.0, @v0.33.0, read in the wheels). From @v0.9.0 A100s are excluded
from the large tier (PR #17885: ``"a100" not in device_name``); @v0.8.5 does not exclude them
(the only release in between is 0.8.5.post1)."""

HUGE_TIER_SINCE = Version("0.28.0")
""">= 160 GiB GPUs (B200, B300) get 16384 tokens for the API server (``device_memory >= 160 *
GiB_bytes`` in vllm/engine/arg_utils.py@v0.28.0 and @v0.33.0; absent @v0.12.0, @v0.17.0,
@v0.22.0, @v0.25.0, @v0.25.1, @v0.26.0, @v0.27.0 and @v0.27.1, read in the wheels)."""

ACTIVATION_HIDDEN_COPIES = 3
ACTIVATION_INTERMEDIATE_COPIES = 3
"""ESTIMATE. Torch peak per profiled token = dtype x (3 x intermediate / tp + 3 x hidden):
the MLP's gate_up output (2 x intermediate), its activation (1 x intermediate) and the
residual, hidden and normed streams. Calibrated on vllm-project/vllm#10517 (Llama-3.1-8B,
peak grew 2.07 GiB at 20,000 profiled tokens and 2.99 GiB at 29,000: 110.9 KB/token; the
formula gives 110,592 B)."""

SAMPLER_BYTES_PER_LOGIT = 16
"""ESTIMATE. The dummy sampler pass (gpu_model_runner.py@v0.33.0 ``_dummy_sampler_run``: one
row per sequence up to max_num_seqs, temperature, top-k and top-p all on) holds the logits,
their float32 copy, the probabilities and top-k/top-p's sorted values and indices per row and
vocabulary entry. Engine data: the "torch peak memory increase" of vLLM 0.19.0 on H100 where
the sampler dominates (1,024 rows; fixtures/vllm_logs/llmd-*.log): 1.89 GiB for a 128,256
vocabulary (Llama-3.1-8B: 15.5 B per logit), 2.21 GiB for 152,064 (Qwen2.5-7B: 15.2 B), 2.21
GiB for 151,936 (Qwen3-8B: 15.3 B), 1.52 GiB for 100,352 (phi-4: 15.9 B), 2.29 GiB for
152,064 (Qwen2.5-72B, tp 2: 15.8 B); 16 B rounds them up. The peak is the larger of this and
the forward pass's. This is the cost of a top-k/top-p kernel that does not sort the vocabulary
(0.19's Triton kernel; FlashInfer's sampler): see :func:`sampler_bytes_per_logit` for the
releases that sort instead."""

SORTING_SAMPLER_BYTES_PER_LOGIT = 38
"""The dummy sampler pass when top-k/top-p sorts the vocabulary (``apply_top_k_top_p``,
vllm/v1/sample/ops/topk_topp_sampler.py@v0.11.0 lines 164-204, @v0.12.0 lines 239-278: the
profile sets top_k = vocab - 1 and top_p = 0.9, so the sort always runs), counted tensor by
tensor per row and vocabulary entry: the model's bf16 logits (2 B, held by the caller), their
float32 copy (4), then ``logits.sort``'s sorted values (4) and int64 indices (8) while the
sort runs on an int64 iota of the indices (8) and CUDA's segmented radix sort's alternate
key/value buffers (4 + 8): 38 B at the sort; afterwards the top-k mask (1), the top-p
probabilities (4, cumsum in place), the top-p mask (1) and the scatter's output (4) bring the
live set to 28 B. Derived from the code, not fitted; the caching allocator's rounding is not
counted. (Two held-out logs of gpt-oss-120b on H100, vllm-project/vllm#23278 and #27508, were
seen before this was derived: their measured non-KV memory implies ~37.6 B per logit, so they
no longer count as held out.)"""

SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
"""The variable that switches vLLM's FlashInfer top-k/top-p sampler on (1) or off (0)."""

TRITON_TOP_K_TOP_P_SINCE = Version("0.17.0")
"""``apply_top_k_top_p`` runs a Triton kernel without a sort for 8 rows or more
(``apply_top_k_top_p_triton``: vllm/v1/sample/ops/topk_topp_sampler.py@v0.19.0 lines 245-255;
first in the 0.17.0 wheel, absent from 0.13.0 to 0.16.0)."""

FLASHINFER_SAMPLER_OPT_IN_SINCE = Version("0.11.2")
"""V1 samples with FlashInfer's top-k/top-p kernel whenever FlashInfer is importable unless
``VLLM_USE_FLASHINFER_SAMPLER=0`` (topk_topp_sampler.py@v0.11.0 lines 36-74) through 0.11.1;
from 0.11.2 only with ``VLLM_USE_FLASHINFER_SAMPLER=1`` (@v0.11.2 line 34, @v0.12.0 line 35).
Before 0.11.2 FlashInfer is an optional extra of the wheel (``flashinfer-python; extra ==
"flashinfer"`` in vllm-0.11.0's METADATA; a requirement from 0.11.2): kvlint assumes a
``pip install vllm`` without it (the sorting sampler) unless the plan's environment sets
``VLLM_USE_FLASHINFER_SAMPLER=1``, or a manifest runs the project's own image, which ships
FlashInfer (:func:`image_flashinfer_sampler`). For ``check`` of a deployment from that image
this ASSUMPTION overstates the sampler's peak."""


FLASHINFER_SAMPLER_BY_DEFAULT_FROM = Version("0.10.0")
"""The first release read in which V1 samples with FlashInfer whenever it is importable:
topk_topp_sampler.py@v0.10.1.1 lines 34-48 (FlashInfer >= 0.2.3 required, then on unless
``VLLM_USE_FLASHINFER_SAMPLER=0``); @v0.8.5 lines 32-49 instead switch it off for FlashInfer
>= 0.2.3 and use it below (:data:`IMAGE_FLASHINFER_BELOW_0_2_3`: the image of 0.8.x ships
0.2.1.post2). 0.9.x was not read: 0.10.0 is the conservative bound."""


IMAGE_FLASHINFER_BELOW_0_2_3 = (Version("0.8.0"), Version("0.9.0"))
"""Releases whose own image ships a FlashInfer older than 0.2.3, which their sampler uses:
topk_topp_sampler.py@v0.8.0 and @v0.8.5 (wheels) turn FlashInfer's top-k/top-p sampler off
only for FlashInfer >= 0.2.3 and on otherwise (V1, ``VLLM_USE_FLASHINFER_SAMPLER`` unset).
The image's FlashInfer: a revision of vLLM's docker/Dockerfile of that time (the
``requirements/cuda.txt`` layout, torch 2.6), read through the code index rather than at the
v0.8.x tags, installs the x86-64 wheel of FlashInfer v0.2.1.post2 in the ``vllm-base`` stage;
vllm-project/vllm#15777, which adapted the sampler to FlashInfer 0.2.3's API and raised the
Dockerfile's wheel, was merged after 0.8.5 (whose sampler still turns 0.2.3 off). V1 is the
default from 0.8.0; 0.9.x's image was not read and stays unjudged."""


def image_flashinfer_sampler(version: str | None, official_image: bool) -> bool | None:
    """``VLLM_USE_FLASHINFER_SAMPLER`` as the engine behaves without it in vLLM's own image,
    which installs FlashInfer on x86-64 (docker/Dockerfile@0000977e, the ``vllm-base`` stage:
    ``uv pip install ... ${FLASHINFER_WHEEL}`` unless ``linux/arm64``): on from
    :data:`FLASHINFER_SAMPLER_BY_DEFAULT_FROM` to :data:`FLASHINFER_SAMPLER_OPT_IN_SINCE`,
    and in :data:`IMAGE_FLASHINFER_BELOW_0_2_3` (``True``), else ``None`` (the release's
    default, :func:`sampler_bytes_per_logit`)."""
    v = release_version(version)
    if not official_image or v is None:
        return None
    low, high = IMAGE_FLASHINFER_BELOW_0_2_3
    return True if FLASHINFER_SAMPLER_BY_DEFAULT_FROM <= v < FLASHINFER_SAMPLER_OPT_IN_SINCE \
        or low <= v < high else None


@dataclass(frozen=True)
class ModelDims:
    """What the profile run's size depends on."""

    hidden_size: int
    intermediate_size: int
    """Dense MLP width; for MoE the width the routed tokens occupy (experts per token x
    expert width), whichever is larger."""
    vocab_size: int
    dtype_bytes: int = 2
    moe_topk: int = 0
    """Experts per token of a mixture-of-experts model (0: dense)."""
    expert_width: int = 0
    """One routed expert's intermediate width (``moe_intermediate_size``; Mixtral's
    ``intermediate_size``)."""
    dense_width: int = 0
    """The intermediate width of a MoE model's dense layers (0: every layer routes)."""
    quantized: bool = False
    """The checkpoint names a quantization (its experts run another kernel)."""


@dataclass(frozen=True)
class MemoryTerms:
    """Every term of vLLM's KV memory on one GPU, in the engine's own words."""

    requested_bytes: int
    """total x gpu_memory_utilization."""
    weight_bytes: int
    activation_peak_bytes: int
    """ESTIMATE: "peak activation"."""
    non_torch_bytes: int
    """ESTIMATE: "non-torch memory"."""
    cuda_graph_bytes: int
    """ESTIMATE: "CUDA graph memory" deducted up front (0 before v0.20.0)."""
    profiled_tokens: int
    """max_num_batched_tokens the dummy forward pass runs."""
    sampler_rows: int
    engine_version: str
    kv_margin_bytes: int = 0
    """From v0.34.0: what the extensible KV cache's margin takes beyond the memory that
    ``gpu_memory_utilization`` already leaves free (0 before, and when it leaves enough)."""
    block_size: int = BLOCK_SIZE
    """The default KV block size in tokens (16 through v0.33.0, 64 from v0.34.0)."""
    lora_bytes: int = 0
    """Of :attr:`weight_bytes`: the LoRA adapters' buffers, allocated with the weights
    (``--enable-lora``; kvlint.model.lora)."""

    @property
    def overhead_bytes(self) -> int:
        """Everything besides weights and KV."""
        return (self.activation_peak_bytes + self.non_torch_bytes + self.cuda_graph_bytes
                + self.kv_margin_bytes)

    @property
    def kv_memory_bytes(self) -> int:
        """"Available KV cache memory" (negative: nothing is left)."""
        return self.requested_bytes - self.weight_bytes - self.overhead_bytes


def release_version(version: str | None) -> Version | None:
    """``version`` as a release (``None``: not given, or not a version string)."""
    try:
        return Version(version) if version else None
    except InvalidVersion:
        return None


def extensible_kv_cache(version: str | None, switch: bool | None = None) -> bool:
    """Whether the version sizes its KV cache as an extensible one (the newest known when
    ``None``): by default from v0.34.0, unless ``switch`` (``--[no-]enable-extensible-kv-cache``,
    an option of those versions only) turns it off."""
    v = release_version(version)
    return (v is None or v >= EXTENSIBLE_KV_CACHE_SINCE) and switch is not False


def default_utilization(version: str | None, switch: bool | None = None) -> float | None:
    """vLLM's ``gpu_memory_utilization`` when none is given, where it differs from the engine
    table's 0.92: 1.0 with the extensible KV cache (v0.34.0,
    ``CacheConfig.resolved_gpu_memory_utilization``, vllm/config/cache.py@v0.34.0 lines
    495-501); ``None`` otherwise."""
    return 1.0 if extensible_kv_cache(version, switch) else None


def kv_cache_memory_bytes_option(version: str | None) -> bool:
    """Whether the version reads ``--kv-cache-memory-bytes`` (the newest known when
    ``None``)."""
    v = release_version(version)
    return v is None or v >= KV_CACHE_MEMORY_BYTES_SINCE


def default_block_size(version: str | None) -> int:
    """vLLM's default KV block size in tokens for ``version`` (the newest known when
    ``None``)."""
    v = release_version(version)
    return BLOCK_SIZE_0_34 if v is None or v >= BLOCK_SIZE_64_SINCE else BLOCK_SIZE


def kv_margin_bytes(version: str | None, gpu_memory_bytes: int, requested_bytes: int,
                    activation_peak: int, switch: bool | None = None) -> int:
    """The extensible KV cache's margin beyond what the requested budget leaves free."""
    if not extensible_kv_cache(version, switch):
        return 0
    margin = max(KV_MARGIN_FLOOR_BYTES, int(activation_peak * KV_MARGIN_FRACTION))
    return max(0, margin - (gpu_memory_bytes - requested_bytes))


V0_FALLBACK_BEFORE = Version("0.10.2")
"""From v0.8.0 to v0.10.1.1, V1 falls back to the V0 engine on GPUs of compute capability
below 8.0 (``_is_v1_supported_oracle``: "Compute Capability < 8.0", vllm/engine/arg_utils.py
@v0.8.5 lines 1346-1356 and @v0.10.1.1 lines 1396-1404; absent @v0.10.2, where V1 runs them)."""

PRE_AMPERE_CAPABILITY = {"T4": "7.5", "RTX-2080": "7.5", "V100": "7.0", "P100": "6.0",
                         "P40": "6.1"}
"""GPUs of kvlint's table below compute capability 8.0 (Turing, Volta, Pascal), by name
prefix, with their compute capability."""
PRE_AMPERE_GPUS = tuple(PRE_AMPERE_CAPABILITY)


def pre_ampere_capability(gpu_name: str) -> tuple[str, str] | None:
    """``(table name, compute capability)`` of ``gpu_name`` (kvlint's table name, or any
    spelling the table knows: ``Tesla-T4``) when it is below compute capability 8.0;
    ``None`` otherwise."""
    from kvlint.model.hardware import find_gpu

    try:
        name = find_gpu(gpu_name).name
    except (KeyError, ValueError):
        name = gpu_name
    return next(((name, capability) for prefix, capability in PRE_AMPERE_CAPABILITY.items()
                 if name.upper().startswith(prefix)), None)


def pre_ampere(gpu_name: str) -> bool:
    """Whether ``gpu_name`` is below compute capability 8.0 (:func:`pre_ampere_capability`)."""
    return pre_ampere_capability(gpu_name) is not None


def runs_v0(version: str | None, gpu_name: str = "") -> bool:
    """Whether ``vllm serve`` runs the V0 engine: every release before 0.8.0, and pre-Ampere
    GPUs until 0.10.2 (:data:`V0_FALLBACK_BEFORE`). A GPU known only by its memory is taken
    as Ampere or later."""
    v = release_version(version)
    if v is None:
        return False
    return v < V1_SINCE or (v < V0_FALLBACK_BEFORE
                            and pre_ampere(gpu_name))


def default_batch_limits(version: str | None, gpu_memory_bytes: int, gpu_name: str,
                         max_model_len: int) -> tuple[int, int]:
    """vLLM's default ``(max_num_batched_tokens, max_num_seqs)`` for ``vllm serve``."""
    v = release_version(version)
    if v is not None and runs_v0(version, gpu_name):
        if max_model_len > 32768 and v >= V0_LONG_CONTEXT_CHUNKED_SINCE:
            # chunked prefill turns itself on for long contexts (V0)
            return (2048 if v >= V0_CHUNKED_2048_SINCE else 512), 256
        return max(max_model_len, 2048), 256
    if gpu_memory_bytes >= 160 * GIB and (v is None or v >= HUGE_TIER_SINCE):
        return 16384, 1024
    a100 = "a100" in gpu_name.lower() and (v is None or v >= A100_EXCEPTION_SINCE)
    if gpu_memory_bytes >= 70 * GIB and not a100:
        return 8192, 1024
    return 2048, 256


def sampler_bytes_per_logit(version: str | None, rows: int,
                            flashinfer_sampler: bool | None = None) -> int:
    """Bytes per row and vocabulary entry of the profile's dummy sampler pass on CUDA:
    :data:`SORTING_SAMPLER_BYTES_PER_LOGIT` where top-k/top-p sorts the vocabulary (V0; V1
    before 0.17.0 without FlashInfer's sampler; fewer than 8 rows from 0.17.0), else
    :data:`SAMPLER_BYTES_PER_LOGIT`. ``flashinfer_sampler``: ``VLLM_USE_FLASHINFER_SAMPLER``
    as the plan's environment sets it (``None``: unset)."""
    v = release_version(version)
    if v is None or v >= TRITON_TOP_K_TOP_P_SINCE:
        sorts = rows < 8 and not flashinfer_sampler
    else:  # V0 and V1 to 0.16.x sort unless FlashInfer's sampler is on (and installed)
        sorts = not flashinfer_sampler
    return SORTING_SAMPLER_BYTES_PER_LOGIT if sorts else SAMPLER_BYTES_PER_LOGIT


def forward_activation_bytes(dims: ModelDims, tokens: int, tp: int) -> int:
    """ESTIMATE of the dummy forward pass's part of the peak (every pipeline stage runs
    one; the sampler runs on the last only)."""
    per_token = dims.dtype_bytes * (ACTIVATION_INTERMEDIATE_COPIES * dims.intermediate_size // tp
                                    + ACTIVATION_HIDDEN_COPIES * dims.hidden_size)
    return tokens * per_token


def activation_peak_bytes(dims: ModelDims, tokens: int, sampler_rows: int, tp: int,
                          sampler_bytes: int = SAMPLER_BYTES_PER_LOGIT,
                          moe_workspace: int = 0) -> int:
    """ESTIMATE of the torch peak above the weights during ``profile_run`` (the last
    pipeline stage's: the forward pass or the sampler after it). ``moe_workspace``: the fused
    MoE kernels' workspace the release keeps from the forward pass on
    (:func:`moe_workspace_bytes`), which holds the experts' activations, so the forward pass
    counts only the dense layers and the hidden streams beside it, and the sampler runs on
    top of it."""
    sampler = sampler_rows * dims.vocab_size * sampler_bytes
    if moe_workspace:
        streams = forward_activation_bytes(
            ModelDims(dims.hidden_size, dims.dense_width, dims.vocab_size, dims.dtype_bytes),
            tokens, tp)
        return moe_workspace + max(streams, sampler)
    return max(forward_activation_bytes(dims, tokens, tp), sampler)


MOE_WORKSPACE_SINCE = Version("0.14.0")
"""From this release an unquantized MoE model on CUDA runs its experts through the modular
kernel (``FusedMoEModularKernel(MoEPrepareAndFinalizeNoEP(), TritonExperts(...))``,
vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py@v0.14.0 lines 280-285;
``make_unquantized_moe_kernel`` @v0.17.1, @v0.19.0, @v0.34.0), whose buffers come from the
worker's ``WorkspaceManager`` (vllm/v1/worker/workspace.py, first in @v0.13.0): one buffer per
micro-batch that grows to the largest request and is kept, so the profile's forward pass
leaves it allocated under the sampler run. @v0.13.0 still calls ``fused_experts`` with
buffers freed after each layer (the estimate before it covers them)."""
MOE_CHUNK_SIZE = 16 * 1024
"""``VLLM_FUSED_MOE_CHUNK_SIZE``'s default (vllm/envs.py@v0.13.0 to @v0.17.1): the modular
kernel's chunk of tokens (``_chunk_info``); @v0.18.0 on, no chunking (the whole batch)."""
MOE_UNCHUNKED_SINCE = Version("0.18.0")
WORKSPACE_ALIGNMENT = 256
"""``WorkspaceManager.get_simultaneous`` rounds each view up to 256 bytes."""


def moe_workspace_bytes(dims: ModelDims, tokens: int, tp: int | None,
                        version: str | None) -> int:
    """The fused-MoE workspace vLLM keeps after its profile's forward pass of ``tokens``
    tokens, on one GPU (0 where kvlint does not size it; from the source, not calibrated).

    ``TritonExperts.workspace_shapes`` (vllm/model_executor/layers/fused_moe/fused_moe.py
    @v0.14.0 line 2336, @v0.19.0 line 1988, experts/triton_moe.py@v0.34.0 line 187):
    ``workspace1 = (M, topk, max(N // 2, K))`` and ``workspace2 = (M, topk, max(N, K))`` in the
    activation dtype, ``N`` the local experts' gate-and-up rows (2 x expert width / tp), ``K``
    the hidden size; the output ``(M, K)`` shares workspace1 (``_allocate_buffers``,
    modular_kernel.py@v0.14.0 and @v0.19.0 line 1061), except through 0.17.1 when the batch
    spans several chunks of :data:`MOE_CHUNK_SIZE`, where ``M`` is the chunk and the output
    is a third view of the whole batch. Only an unquantized checkpoint's Triton experts
    under plain tensor parallelism (``tp``; ``None``: attention DP, not sized) are sized:
    quantized experts (FP8, MXFP4, NVFP4, AWQ...), FlashInfer or AITER kernels, expert
    parallelism and micro-batching allocate other shapes. The activation is taken as gated
    (SiLU-and-mul: ``N // 2``), as in every MoE model kvlint ships a config for."""
    v = release_version(version)
    if not dims.moe_topk or not dims.expert_width or dims.quantized or not tp or \
            tokens <= 0 or (v is not None and v < MOE_WORKSPACE_SINCE):
        return 0
    n, k, b = 2 * dims.expert_width // tp, dims.hidden_size, dims.dtype_bytes
    chunked = v is not None and v < MOE_UNCHUNKED_SINCE and tokens > MOE_CHUNK_SIZE
    m = MOE_CHUNK_SIZE if chunked else tokens
    views = [m * dims.moe_topk * max(n // 2, k) * b, m * dims.moe_topk * max(n, k) * b]
    if chunked:
        views.append(tokens * k * b)
    return sum(-(-view // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT for view in views)


def interconnect_of(gpu_name: str) -> str | None:
    """How the GPU table says ``gpu_name``'s servers link their GPUs (``None``: a GPU known
    only by its memory, or one the table does not record)."""
    from kvlint.model.hardware import find_gpu

    try:
        return find_gpu(gpu_name).interconnect
    except ValueError:
        return None


V1_SMALL_TP_UNTIL = Version("0.11.0")
"""V1 releases before this take no tp-only buffer into their memory profile (see
:func:`non_torch_bytes`)."""


def non_torch_bytes(tp: int, interconnect: str | None = None,
                    version: str | None = None, gpu_name: str = "") -> int:
    """ESTIMATE of the non-torch memory of one worker: :data:`NON_TORCH_BYTES`, plus
    :data:`NON_TORCH_TP_BYTES` at tp > 1 where vLLM's memory profile takes large tp-only
    buffers in (release by release, from the wheels and the logs):

    * V1 before 0.11.0: none. vLLM forces ``NCCL_CUMEM_ENABLE=0`` (env_override.py@0.10.1.1
      lines 16-32), and its non-torch increase at tp > 1 is the tp=1 figure: 2 x A100-80GB and
      4 x A100-80GB at 0.10.1.1, 4 x 22 GB cards at 0.8.5 and 4 x 80 GB at 0.8.2 all print an
      "Available KV cache memory" within 0.1 GiB of the tp=1 arithmetic;
    * V1 from 0.11.0, which drops that override: NCCL's lazily allocated buffers, and on
      Hopper/Blackwell from 0.17.0 FlashInfer's all-reduce + RMSNorm fusion workspace (on by
      default at tp > 1 on compute capability 9.0/10.0, allocated at the first compile inside
      ``profile_run``), land inside the profile: +1.8 to 1.95 GiB per worker on H100 at 0.19.0
      (fixtures/vllm_logs/llmd-*.log) and the same on 4 x A100-80GB at 0.22 (held-out log);
    * V0 (before 0.8.0): +1.8 GiB on H100 at ~0.6.5 (vllm-project/vllm#10511).

    PCIe cards (``interconnect`` ``"pcie"``) never take it: vLLM's custom all-reduce stays off
    beyond two PCIe-only GPUs (device_communicators/custom_all_reduce.py@v0.11.0 lines 141-147)
    and 2 x RTX 4090 measured 0.25 GiB per rank at tp 2 (vllm-project/vllm#13061). A version
    kvlint cannot read takes the larger figure (fewer tokens, never more). A tp=1 worker of
    V1 before 0.18.0 takes :data:`NON_TORCH_V1_BYTES` instead (its profile does not capture
    CUDA graphs); with ``--enforce-eager`` from 0.18.0 kvlint keeps the larger figure."""
    v = release_version(version)
    if tp <= 1 and v is not None and v < NON_TORCH_GRAPH_PROFILE_SINCE \
            and not runs_v0(version, gpu_name):
        return NON_TORCH_V1_BYTES
    if tp <= 1 or interconnect == "pcie":
        return NON_TORCH_BYTES
    if v is not None and V1_SINCE <= v < V1_SMALL_TP_UNTIL:
        return NON_TORCH_BYTES
    return NON_TORCH_BYTES + NON_TORCH_TP_BYTES


def cuda_graph_bytes(version: str | None) -> int:
    """ESTIMATE of the CUDA-graph memory the version deducts before sizing the KV cache."""
    v = release_version(version)
    return CUDA_GRAPH_BYTES if v is None or v >= CUDA_GRAPH_DEDUCTED_SINCE else 0


@dataclass(frozen=True)
class EngineLimits:
    """The vLLM options that shape its start-up profile."""

    max_model_len: int
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    moe_tp: int | None = None
    """The tensor-parallel degree the experts are split over (``None``: not plain tensor
    parallelism, so the MoE workspace is not sized)."""
    extensible: bool | None = None
    """0.34's extensible KV cache switched on or off (``None``: the version's default)."""
    flashinfer_sampler: bool | None = None
    """``VLLM_USE_FLASHINFER_SAMPLER`` in the engine's environment (``None``: unset)."""


def memory_terms(*, gpu_memory_bytes: int, gpu_name: str, utilization: float,
                 weight_bytes: int, dims: ModelDims, tp: int, version: str | None,
                 limits: EngineLimits) -> MemoryTerms:
    """vLLM's memory profile of one GPU (the fullest rank)."""
    tokens, seqs = default_batch_limits(version, gpu_memory_bytes, gpu_name,
                                        limits.max_model_len)
    tokens = limits.max_num_batched_tokens or tokens
    seqs = limits.max_num_seqs or seqs
    extensible = limits.extensible
    rows = min(tokens, seqs)
    requested = int(gpu_memory_bytes * utilization)
    peak = activation_peak_bytes(
        dims, tokens, rows, tp, sampler_bytes_per_logit(version, rows, limits.flashinfer_sampler),
        moe_workspace=moe_workspace_bytes(dims, tokens, limits.moe_tp, version))
    return MemoryTerms(
        requested_bytes=requested,
        weight_bytes=weight_bytes,
        activation_peak_bytes=peak,
        non_torch_bytes=non_torch_bytes(tp, interconnect_of(gpu_name), version, gpu_name),
        cuda_graph_bytes=cuda_graph_bytes(version),
        profiled_tokens=tokens,
        sampler_rows=rows,
        engine_version=version or "?",
        kv_margin_bytes=kv_margin_bytes(version, gpu_memory_bytes, requested, peak,
                                        extensible),
        block_size=default_block_size(version),
    )


def block_tokens(budget: int, bytes_per_token: int, block_size: int = BLOCK_SIZE) -> int:
    """Tokens of the whole blocks ``budget`` holds (``get_num_blocks`` x block_size,
    kv_cache_utils.py@v0.33.0)."""
    page = bytes_per_token * block_size
    return max(budget, 0) // page * block_size if page else 0


def _int(config: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def model_dims(config: Mapping[str, Any]) -> ModelDims | None:
    """The dimensions of a config.json (its ``text_config`` for multimodal models);
    ``None`` when it does not give them."""
    outer = config
    text = config.get("text_config")
    if isinstance(text, Mapping) and _int(config, "hidden_size") is None:
        config = text
    hidden = _int(config, "hidden_size", "d_model", "n_embd")
    vocab = _int(config, "vocab_size")
    if hidden is None or vocab is None:
        return None
    dense = _int(config, "intermediate_size", "ffn_hidden_size", "n_inner") or 4 * hidden
    expert = _int(config, "moe_intermediate_size", "expert_intermediate_size")
    topk = _int(config, "num_experts_per_tok", "moe_topk", "num_experts_per_token")
    if expert is None and (_int(config, "num_local_experts", "num_experts") or 0) > 1:
        expert = dense  # Mixtral-style: every expert is intermediate_size wide
    routed = expert * topk if expert and topk else 0
    dtype = config.get("torch_dtype") or config.get("dtype")
    has_dense = bool(_int(config, "first_k_dense_replace")) or bool(
        config.get("mlp_only_layers")) or (_int(config, "decoder_sparse_step") or 1) > 1
    quantized = bool(outer.get("quantization_config") or outer.get("compression_config")
                     or config.get("quantization_config"))
    return ModelDims(hidden_size=hidden, intermediate_size=max(dense, routed),
                     vocab_size=vocab, dtype_bytes=4 if dtype == "float32" else 2,
                     moe_topk=(topk or 0) if routed else 0,
                     expert_width=(expert or 0) if routed else 0,
                     dense_width=dense if routed and has_dense else 0,
                     quantized=quantized)
