"""How each engine with its own start-up arithmetic sizes its KV pool, behind kvlint's
common capacity (docs/design.md §5a, §5b): SGLang's default ``mem_fraction_static`` and state
split, LMDeploy's ``cache_max_entry_count`` budget, TensorRT-LLM's profiled budget and its
per-window pools. The pure arithmetic is in ``kvlint.model``; this module reads the plan, the
config and the GPU for it. Used by :func:`kvlint.linter._capacity` only."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kvlint.model.capacity import Capacity, GpuSpec
from kvlint.model.kv import is_latent
from kvlint.model.serving import KvAnalysis, ServingPlan

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = ["ENGINE_SIZING", "SM9_AND_LATER", "plan_version", "sglang_sizing",
           "sglang_state_split", "sm90_or_later", "trtllm_pools"]


def lmdeploy_sizing(plan: ServingPlan, spec: GpuSpec, config: dict[str, Any],
                     analysis: KvAnalysis, weight_bytes: int, fraction: float
                     ) -> tuple[int, int | None, str | None] | None:
    """``(overhead, tokens, None)`` of an LMDeploy plan: the start-up context (the SGLang
    estimate: the same torch/NCCL start) plus, on the PyTorch engine, its runtime reserve
    (logits buffers by release); the tokens are whole blocks of the release's block size.
    ``None`` when the per-token bytes are unknown."""
    from kvlint.engines import default_backend
    from kvlint.model.lmdeploy_memory import (
        CacheSettings,
        block_size,
        default_max_batch_size,
        kv_budget,
        state_cache_slots,
    )
    from kvlint.model.sglang_memory import start_context_bytes

    per_token = analysis.footprint.bytes_per_token_per_gpu
    if not per_token:
        return None
    b = plan.behaviour
    version = b.version
    start = plan.engine_start
    backend = (start.backend if start and start.backend in ("turbomind", "pytorch") else None) \
        or default_backend(b.engine, version, analysis.geometry.architecture) or "pytorch"
    head_dim = max((layer.k_head_dim for layer in analysis.cached.layers if layer.holds_kv),
                   default=0)
    flash_mla = analysis.cached.is_mla and sm90_or_later(spec.name)
    try:
        tokens_per_block = block_size(version, head_dim, flash_mla)
    except ValueError:
        tokens_per_block = 64
    context = start_context_bytes(plan.layout.tp, plan.layout.pp)
    free = spec.memory_bytes - context - weight_bytes
    vocab = config.get("vocab_size")
    batches = plan.max_num_seqs or default_max_batch_size(version, spec.name)
    slot = _linear_state_slot(analysis, plan.layout.attention_tp)
    pool = slot * (batches if backend == "turbomind" else state_cache_slots(version, batches))
    budget = kv_budget(version, "turbomind" if backend == "turbomind" else "pytorch", free,
                       per_token * tokens_per_block, CacheSettings(
                           vocab_size=vocab if isinstance(vocab, int) and vocab > 0 else 0,
                           cache_max_entry_count=fraction, max_batches=batches,
                           state_cache_bytes=pool))
    # TurboMind takes the pool from the fraction's bytes, the PyTorch engine from the free
    # memory before it: either way an overhead of the generic (memory - weights - overhead)
    # x fraction
    held = pool if backend != "turbomind" else int(pool / fraction) if fraction else pool
    return context + budget.runtime_bytes + held, budget.num_gpu_blocks * tokens_per_block, \
        None


def _linear_state_slot(analysis: KvAnalysis, tp: int) -> int:
    """One sequence's gated-delta-net state slot on a rank as LMDeploy lays it out (0: no
    such layers; other recurrent kinds are not modelled for LMDeploy)."""
    from kvlint.model.lmdeploy_memory import linear_state_slot_bytes

    states = [layer.state for layer in analysis.geometry.state_layers
              if layer.state is not None and layer.state.kind == "gdn"]
    if not states:
        return 0
    dims = dict(states[0].dims)
    need = ("num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim", "conv_kernel")
    if any(name not in dims for name in need) or dims["num_v_heads"] % tp or \
            dims["num_k_heads"] % tp:
        return 0
    return linear_state_slot_bytes(len(states), dims, tp)


def trtllm_sizing(plan: ServingPlan, spec: GpuSpec, config: dict[str, Any],
                   analysis: KvAnalysis, weight_bytes: int, fraction: float
                   ) -> tuple[int, int | None, str | None] | None:
    """``(overhead, tokens, capped by)`` of a TensorRT-LLM plan (PyTorch backend): the
    overhead is the profiled peak's ESTIMATED activations (``max_num_tokens`` tokens) and
    non-torch memory, so that ``(memory - weights - overhead) x fraction`` is TRT-LLM's
    ``(total - peak + temporary KV) x free_gpu_memory_fraction``; the tokens are the
    standard manager's one pool in whole blocks, ``kv_cache_config.max_tokens`` applied, every
    layer at full length (a model with sliding windows: :func:`trtllm_pools`). ``None`` when
    the release or backend is not the PyTorch backend's, or the config lacks the
    dimensions."""
    from kvlint.model import trtllm_memory as trt
    from kvlint.model.memory import model_dims

    start = plan.engine_start
    version = plan_version(plan)
    dims = model_dims(config)
    per_token = analysis.footprint.bytes_per_token_per_gpu
    if dims is None or not per_token or \
            not trt.applies(version, start.backend if start else None):
        return None
    layout = plan.layout
    tokens_in = plan.max_num_batched_tokens or trt.MAX_NUM_TOKENS
    context = plan.max_model_len or plan.context
    activations = trt.activation_bytes(dims, tokens_in, layout.attention_tp,
                                       trt.dummy_requests(tokens_in, context))
    overhead = activations + trt.non_torch_bytes(layout.tp)
    budget = trt.kv_budget(
        version, total_bytes=spec.memory_bytes, weight_bytes=weight_bytes,
        activation_bytes=activations, non_torch_bytes=trt.non_torch_bytes(layout.tp),
        pool_bytes_per_token=per_token, estimate_bytes_per_token=_trtllm_estimate(plan, analysis),
        cache=trt.TrtllmCacheConfig(free_gpu_memory_fraction=fraction,
                                    max_tokens=plan.kv_tokens_cap,
                                    tokens_per_block=_trtllm_block(plan)))
    capped = (plan.kv_tokens_cap_source or "kv_cache_config.max_tokens") \
        if budget.capped_by_max_tokens else None
    return overhead, budget.tokens, capped


def _trtllm_block(plan: ServingPlan) -> int:
    """``kv_cache_config.tokens_per_block`` of a TensorRT-LLM plan (32 by default)."""
    from kvlint.model.trtllm_memory import TOKENS_PER_BLOCK

    start = plan.engine_start
    return start.page_size if start and start.page_size else TOKENS_PER_BLOCK


def _trtllm_estimate(plan: ServingPlan, analysis: KvAnalysis) -> int | None:
    """TensorRT-LLM's own bytes per token (``get_cache_size_per_token``, every layer) where
    the attention layers share one shape; else the pool's figure (``None``: unknown)."""
    from kvlint.model import trtllm_memory as trt

    per_token = analysis.footprint.bytes_per_token_per_gpu
    layers = analysis.cached.kv_layers
    shapes = {(layer.num_kv_heads, layer.k_head_dim, layer.v_head_dim) for layer in layers}
    if per_token and len(shapes) == 1 and not analysis.cached.is_mla:
        kv_heads, k_dim, v_dim = shapes.pop()
        if k_dim == v_dim and not any(layer.extra_caches for layer in layers):
            return trt.estimate_bytes_per_token(per_token, kv_heads, k_dim,
                                                plan.layout.attention_tp)
    return per_token


def trtllm_pools(sized: Capacity, plan: ServingPlan, analysis: KvAnalysis) -> Capacity:
    """A TensorRT-LLM plan of a model with sliding-window layers: its KV pools, one per
    window size (kvlint/model/trtllm_windows.py). The windows are the model's when the
    engine table says the release windows its layers (``windowed_sliding_cache``), as if
    ``kv_cache_config.max_attention_window`` were set to them; else every layer at full
    length in one pool, the standard manager's. The other case is reported beside it.
    Pipeline stages, MLA, shared-KV and recurrent layers keep the one-pool figures."""
    from math import ceil

    from kvlint.model import trtllm_memory as trt
    from kvlint.model import trtllm_windows as win
    from kvlint.model.capacity import KvPool, KvPoolSet
    from kvlint.model.geometry import LayerKind
    from kvlint.model.kv import layer_bytes_per_token_per_gpu

    layers = analysis.cached.layers
    given = plan.engine_start.attention_windows if plan.engine_start else None
    if plan.layout.pp > 1 or analysis.cached.is_mla or sized.kv_budget_bytes_per_gpu <= 0 or \
            any(not layer.holds_kv or layer.extra_caches for layer in layers) or \
            (given is None and
             not any(layer.kind is LayerKind.SLIDING and layer.window for layer in layers)):
        return sized
    version, length, block = plan_version(plan), sized.context, _trtllm_block(plan)
    tp, sharding = plan.layout.attention_tp, plan.behaviour.kv_sharding
    sizes = [ceil(layer_bytes_per_token_per_gpu(layer, analysis.dtype, tp, sharding) or 0)
             for layer in layers]
    windows = [layer.window if layer.kind is LayerKind.SLIDING and layer.window else length
               for layer in layers]
    windows = list(win.layer_windows(given or win.window_pattern(windows), len(layers), length))
    groups = win.window_groups(windows, sizes)
    if len(groups) == 1 and groups[0].window == length:
        return sized  # every window clamped to max_seq_len: nothing is windowed
    memory = sized.kv_budget_bytes_per_gpu
    estimate = _trtllm_estimate(plan, analysis)
    if plan.kv_tokens_cap and estimate:  # max_tokens x estimate caps max_gpu_total_bytes
        memory = min(memory, plan.kv_tokens_cap * estimate)
    full = win.single_pool(version, win.WindowGroup(length, len(layers), sum(sizes)),
                           sized.max_tokens // block, memory_bytes=memory,
                           tokens_per_block=block, max_seq_len=length)
    windowed = win.vswa_pools(version, groups, memory, tokens_per_block=block,
                              max_seq_len=length, max_tokens=plan.kv_tokens_cap) \
        if len(groups) > 1 else win.single_pool(version, groups[0], full.pools[0].blocks,
                                                memory_bytes=memory, tokens_per_block=block,
                                                max_seq_len=length)
    label = f"{plan.behaviour.display} {plan.behaviour.version or ''}".strip()
    if len(groups) > 1:
        how = "one pool per window, " + ("equal memory shares" if win.equal_shares(version)
                                         else "memory shares ~ window x bytes per token")
        down = win.split_rounds_down(version)
    else:
        how, down = "one pool, the standard manager's", trt.rounds_down(version)

    def as_set(pools: win.VswaPools, setting: str, assumed: bool, note: str) -> KvPoolSet:
        return KvPoolSet(
            setting=setting, assumed=assumed, note=note,
            pools=tuple(KvPool(p.window, p.layers, p.bytes_per_token, p.blocks, p.tokens)
                        for p in pools.pools),
            tokens=pools.printed_tokens, max_sequences=pools.sequences(),
            max_seq_len=pools.max_seq_len, tokens_per_block=block)

    pattern = ", ".join(str(w) for w in win.window_pattern(windows))
    if given is not None:  # the options file sets the windows: the pools it builds, alone
        stated = ", ".join(str(w) for w in given)
        return replace(sized, kv_pools=(as_set(
            windowed, f"kv_cache_config.max_attention_window: [{stated}]", False,
            f"{how}, blocks rounded {'down' if down else 'up'} ({label}); each layer's "
            f"window as the KV manager takes it: [{pattern}] repeated over the layers"),),
            max_tokens=windowed.printed_tokens, max_sequences=windowed.sequences(length),
            kv_tokens_capped_by=None if len(groups) > 1 else sized.kv_tokens_capped_by)
    sets = (as_set(windowed, f"kv_cache_config.max_attention_window: [{pattern}]",
                   plan.windowed_sliding_cache,
                   f"{how}, blocks rounded {'down' if down else 'up'} ({label})"),
            as_set(full, "kv_cache_config.max_attention_window unset",
                   not plan.windowed_sliding_cache,
                   f"{label} reads no window from the model's config: unset, every layer "
                   "is held at full length in one pool"))
    if not plan.windowed_sliding_cache:
        sets = sets[::-1]
    built = windowed if plan.windowed_sliding_cache else full  # the other one beside it
    vswa = plan.windowed_sliding_cache and len(groups) > 1  # max_tokens only caps the memory
    return replace(sized, kv_pools=sets, max_tokens=built.printed_tokens,
                   max_sequences=built.sequences(length),  # 0 when max_seq_len was lowered
                   kv_tokens_capped_by=None if vswa else sized.kv_tokens_capped_by)


ENGINE_SIZING: dict[str, Callable[[ServingPlan, GpuSpec, dict[str, Any], KvAnalysis, int,
                                    float], tuple[int, int | None, str | None] | None]] = {
    "lmdeploy": lmdeploy_sizing, "trtllm": trtllm_sizing}
"""The engines whose budget kvlint computes by their own arithmetic: ``(overhead, tokens,
what capped the tokens)``."""


def plan_version(plan: ServingPlan) -> Version | None:
    """The plan's engine version as a ``Version`` (``None``: none, or not one)."""
    from kvlint.model.serving import release_of

    return release_of(plan)


def sglang_state_split(sized: Capacity, plan: ServingPlan) -> Capacity:
    """A hybrid-state model under SGLang: the state pool takes its share of the budget
    first, the KV pool's tokens come from the rest
    (:func:`kvlint.model.sglang_memory.state_split`)."""
    from math import floor

    from kvlint.model.sglang_memory import state_split

    state = sized.state_bytes_per_sequence_per_gpu
    per_token = sized.bytes_per_sequence_per_gpu - state
    if not state or per_token <= 0:
        return sized
    version = plan_version(plan)
    kv_budget, slots = state_split(sized.kv_budget_bytes_per_gpu, state, version)
    tokens = floor(max(kv_budget, 0) * sized.context / per_token)
    if plan.kv_tokens_cap and plan.kv_tokens_cap < tokens:
        return replace(sized, max_tokens=plan.kv_tokens_cap,
                       kv_tokens_capped_by=plan.kv_tokens_cap_source or "--max-total-tokens",
                       max_sequences=min(slots, plan.kv_tokens_cap // sized.context))
    return replace(sized, max_tokens=tokens,
                   max_sequences=min(slots, max(kv_budget, 0) // per_token))


def sglang_sizing(plan: ServingPlan, spec: GpuSpec, config: dict[str, Any],
                   analysis: KvAnalysis) -> tuple[float, int]:
    """``(mem_fraction_static, overhead)`` of an SGLang plan: the given fraction or the
    release's default (from the GPU's ``nvidia-smi`` total, tp, pp, DP attention, MLA and a
    vision tower), and the share of the start-up context that fraction covers, so that
    ``int(memory x fraction) - weights - overhead`` is SGLang's ``int((memory - context) x
    fraction) - weights``."""
    from kvlint.model.hardware import find_gpu
    from kvlint.model.serving import EngineStart
    from kvlint.model.sglang_memory import (
        MIB,
        SglangStart,
        default_mem_fraction_static,
        start_context_bytes,
    )

    smi_bytes = spec.memory_bytes
    if plan.gpu is not None and plan.gpu_memory_bytes is None:
        with contextlib.suppress(ValueError):
            smi_bytes = find_gpu(plan.gpu).memory_bytes
    version = plan_version(plan)
    layout = plan.layout
    start = plan.engine_start or EngineStart()
    fraction = plan.gpu_memory_utilization or default_mem_fraction_static(SglangStart(
        version, smi_bytes // MIB, tp=layout.tp, pp=layout.pp,
        chunked_prefill_size=start.chunked_prefill_size,
        cuda_graph_max_bs=start.cuda_graph_max_bs, speculative=start.speculative_algorithm,
        dp_attention=layout.dp_attention, dp_size=layout.dp,
        mla=analysis.cached.is_mla and is_latent(plan.behaviour.mla_cache),
        vision=_vision_tower(config)))
    context = start_context_bytes(layout.tp, layout.pp)
    total = spec.memory_bytes
    return fraction, int(total * fraction) - int((total - context) * fraction)


def _vision_tower(config: dict[str, Any]) -> tuple[int, int] | None:
    """``(layers, hidden size)`` of a multimodal config's vision tower, as SGLang's
    ``adjust_mem_fraction_for_vlm`` reads them (24 and 1024 when not given)."""
    vision = config.get("vision_config")
    if not isinstance(vision, dict):
        return None
    layers = vision.get("num_hidden_layers", vision.get("depth", 24))
    hidden = vision.get("hidden_size", vision.get("embed_dim", 1024))
    if isinstance(layers, int) and isinstance(hidden, int) and not isinstance(layers, bool) \
            and not isinstance(hidden, bool) and 0 < layers < 1 << 20 and 0 < hidden < 1 << 20:
        return layers, hidden
    return 24, 1024


SM9_AND_LATER = ("H100", "H200", "H20", "GH200", "H800", "B100", "B200", "GB200", "B300",
                  "GB300", "RTX-PRO-6000", "RTX-5090", "RTX-5080")
"""NVIDIA GPUs of compute capability 9.0 or more, by the names kvlint's GPU table gives them
(Hopper, Blackwell): vLLM runs MXFP4 MoE with triton_kernels there by default
(fused_moe/oracle/mxfp4.py@0.20.0 lines 193-212, @0.34.0 lines 421-458), and with Marlin
below 9.0 (quantization/mxfp4.py@0.10.1 lines 123-135, @0.11.0 lines 94-99)."""


def sm90_or_later(gpu: str) -> bool:
    """Whether ``gpu`` (a name of kvlint's GPU table) has compute capability 9.0 or more."""
    return gpu.upper().startswith(SM9_AND_LATER)
