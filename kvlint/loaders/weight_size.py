"""Weight bytes per GPU for a serving plan: from the checkpoint when it can be read, else
estimated from the config (and labelled as an estimate)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvlint.errors import ConfigError, HubError, HubNotCachedError, InputError
from kvlint.loaders.checkpoint import (
    INDEX_NAME,
    CheckpointSize,
    checkpoint_size,
    local_checkpoint_size,
)
from kvlint.loaders.hf_config import ConfigDefaults
from kvlint.loaders.shape import resolve_shape, resolve_weight_format
from kvlint.model.loaded_weights import (
    mxfp4_moe_checkpoint_bytes,
    vllm_marlin_mxfp4_layout,
    vllm_mxfp4_moe_bytes_per_gpu,
)
from kvlint.model.weight_formats import WeightBytes, decode_read_bytes, weight_bytes
from kvlint.model.weights import (
    ModelShape,
    Part,
    WeightSplit,
    estimate_parameters,
    weight_bytes_per_gpu,
)

if TYPE_CHECKING:
    from kvlint.lock.files import ModelLock
    from kvlint.model.overrides import OnTheFly


@dataclass(frozen=True)
class PlanWeights:
    total_bytes: int
    per_gpu_bytes: int
    decode_read_per_gpu_bytes: int
    """Weights one decode step reads on one GPU of one stage (MoE: the experts touched)."""
    estimated: bool
    source: str
    split: WeightSplit | None = None
    """Total and replicated bytes: sizes other layouts (advice)."""


def _checkpoint(ref: str, path: str | None, revision: str | None, offline: bool,
                lock: ModelLock | None = None) -> tuple[CheckpointSize | None, str | None]:
    """The checkpoint's size, or why it is unavailable. A Hub model the lock holds is sized
    from the lock, as its safetensors index would size it."""
    try:
        if path is not None:
            return local_checkpoint_size(Path(path).parent), None
        if lock is not None:
            from kvlint.loaders.paths import hub_reference

            found = hub_reference(ref)
            locked = lock.find(found[0], found[1] or revision) if found else None
            if locked is not None:
                if locked.checkpoint_bytes is None:
                    return None, None  # the repo has no index: as the Hub would say
                shown = found[1] or revision or locked.commit  # type: ignore[index]
                return CheckpointSize(locked.checkpoint_bytes,
                                      f"{locked.repo_id}@{shown}/{INDEX_NAME}"), None
            if found is not None and lock.required:  # a locked run never asks the Hub
                return None, f"{ref} is not in the lock"
        return checkpoint_size(ref, revision=revision, offline=offline), None
    except HubNotCachedError:
        # Offline with only config.json cached is the common case: a short parenthetical,
        # not the whole error (the run says so on stderr for configs it lacks).
        return None, "not cached"
    except (HubError, InputError) as err:
        return None, _short(ref, str(err))


def checkpoint_lookup(ref: str, path: str | None, revision: str | None, offline: bool,
                      lock: ModelLock | None = None
                      ) -> tuple[CheckpointSize | None, str | None]:
    """The checkpoint size :func:`plan_weights` sizes ``ref`` from, or why it has none
    (``"not cached"``: offline without the index cached); what the lint cache keys on."""
    return _checkpoint(ref, path, revision, offline, lock)


def _short(ref: str, reason: str) -> str:
    """An error's first clause without the model's name (which the report already shows)."""
    clause = reason.removeprefix(f"{ref}: ").split("; ")[0]
    return clause.strip() or reason


@dataclass(frozen=True)
class CheckpointRef:
    """Where a model's checkpoint is found: a Hub reference (and revision), a local config's
    path, whether the Hub may be asked, and the lock that may size it instead."""

    ref: str
    path: str | None = None
    revision: str | None = None
    offline: bool = False
    lock: ModelLock | None = None


def plan_weights(
    config: dict[str, Any], checkpoint: CheckpointRef, *, tp: int, pp: int, batch: int,
    defaults: ConfigDefaults | None, quantized: tuple[OnTheFly, str] | None = None,
    engine: str | None = None, attention_tp: int | None = None,
) -> PlanWeights:
    """Weights per GPU of ``ref`` under tp x pp. Raises ``ConfigError`` when the config
    cannot be sized at all: its parameters cannot be counted and its checkpoint's size is
    not known either (with the checkpoint's size, :func:`_checkpoint_only`).

    ``quantized``: the engine quantizes the 16-bit checkpoint while loading it (the method,
    and the option that asks for it): the weights are counted in that format, and a known
    checkpoint size is scaled by the ratio of the two formats' counts.

    ``attention_tp``: with attention data parallelism (SGLang ``--enable-dp-attention``,
    TensorRT-LLM ``enable_attention_dp``) the attention layers are split over this many
    ranks only, not over ``tp``: each GPU holds ``tp / attention_tp`` times its share of them
    (SGLang: ``attn_tp_size = get_attention_tp_size()``, ``tp_size // dp_size``, shards the
    attention projections: models/deepseek_v2.py@0.5.5.post3 L1126-1217; the MoE and dense
    layers stay split over ``tp``).

    ``engine``: the engine that loads the weights (``None``, the default: sized as stored).
    ``"vllm"`` sizes an MXFP4 MoE's (gpt-oss) routed experts as vLLM allocates them for its
    Marlin backend, padded per TP rank (:func:`_vllm_mxfp4_experts`)."""
    try:
        shape = resolve_shape(config, defaults=defaults)
    except ConfigError as err:
        if quantized is not None:
            raise ConfigError(f"{err.detail}; its parameters cannot be counted, so the "
                              f"weights {quantized[1]} quantizes cannot be sized",
                              field=err.field, source=err.source) from None
        return _checkpoint_only(err, config, checkpoint, tp=tp, pp=pp)
    estimate = estimate_parameters(shape)
    fmt = resolve_weight_format(config)
    estimated = weight_bytes(estimate, fmt)
    on_disk = estimated.total
    if quantized is not None:
        fmt = resolve_weight_format({**config, "quantization_config": quantized[0].config})
        estimated = weight_bytes(estimate, fmt)
    read = decode_read_bytes(estimate, fmt, batch)
    c = checkpoint
    found, why = _checkpoint(c.ref, c.path, c.revision, c.offline, c.lock)
    if found is not None and found.total_bytes > 0:
        total, source, is_estimate = found.total_bytes, f"checkpoint: {found.source}", False
        if quantized is not None and on_disk:
            total = math.ceil(found.total_bytes * estimated.total / on_disk)
            how = f"as {quantized[0].source}" if quantized[0].assumed else "while loading"
            source = (f"checkpoint: {found.source}, quantized to {fmt.name} {how} "
                      f"({quantized[1]}): x {estimated.total / on_disk:.4f}, the ratio of "
                      "the two formats' parameter counts")
            is_estimate = True
    elif quantized is not None and quantized[0].assumed:
        total, is_estimate = estimated.total, True
        source = (f"estimate: {estimate.total:,} parameters x {fmt.name}, sized as "
                  f"{quantized[0].source} from {quantized[1]}: this config names no "
                  "quantization, and the checkpoint deployed, quantized beforehand, decides "
                  "by its own quantization_config")
    elif quantized is not None:
        total, is_estimate = estimated.total, True
        source = (f"estimate: {estimate.total:,} parameters x {fmt.name}, quantized while "
                  f"loading ({quantized[1]})")
    else:
        total, is_estimate = estimated.total, True
        source = f"estimate: {estimate.total:,} parameters x {fmt.name}" + (
            f"; checkpoint {why}" if why == "not cached" else
            f"; checkpoint unavailable: {why}" if why else "")
    scale = total / estimated.total if estimated.total else 1.0
    replicated = int(estimated.replicated * scale)
    if engine == "vllm" and quantized is None:  # quantized while loading: not MXFP4
        loaded = _vllm_mxfp4_experts(
            config, shape, tp, estimated,
            checkpoint=found is not None and found.total_bytes > 0)
        if loaded is not None:
            total, source = total + loaded[0], f"{source}; {loaded[1]}"
    attention = estimated.by_part.get(Part.ATTENTION, 0) * scale
    if estimate.attention:  # MLA's down-projections are whole on every rank already
        attention *= 1 - estimate.replicated_attention / estimate.attention
    split = WeightSplit(total, replicated, fmt.name,
                        fmt.quantized_bytes if fmt.quantized_parts else fmt.base_bytes,
                        *_stage_edges(estimated, shape.num_layers, shape.tie_word_embeddings,
                                      scale), attention_bytes=int(attention))
    per_gpu = split.per_gpu(tp, pp, attention_tp)
    if per_gpu != split.per_gpu(tp, pp):
        source += (f"; attention split over {attention_tp} rank(s) only (DP attention): "
                   f"{(per_gpu - split.per_gpu(tp, pp)) / 2**30:+.2f} GiB per GPU")
    return PlanWeights(
        total_bytes=total,
        per_gpu_bytes=per_gpu,
        decode_read_per_gpu_bytes=weight_bytes_per_gpu(int(read * scale), tp, pp,
                                                       replicated_bytes=replicated),
        estimated=is_estimate,
        source=source,
        split=split,
    )


def _vllm_mxfp4_experts(config: dict[str, Any], shape: ModelShape, tp: int,
                        estimated: WeightBytes, *, checkpoint: bool) -> tuple[int, str] | None:
    """(bytes to add to the total, why) for an MXFP4 MoE (gpt-oss) loaded by vLLM: its
    routed experts as vLLM's Marlin MXFP4 MoE backend allocates them on each of the ``tp``
    ranks (:func:`~kvlint.model.loaded_weights.vllm_mxfp4_moe_bytes_per_gpu`) in place of their
    stored bytes (the checkpoint's, by its tensor shapes, when ``checkpoint``; else the
    estimate's). ``None`` when the model is not an MXFP4 MoE or TP does not divide its
    experts' width (vLLM refuses that layout).

    Marlin is the backend vLLM 0.10.1 to 0.34.0 picks on SM 8.x, and on SM 9.0 when the
    ``triton_kernels`` package is missing (0.10.x/0.11.0 also: torch < 2.8) or with
    ``VLLM_MXFP4_USE_MARLIN=1``. Its other MXFP4 backends (triton_kernels on SM 9.0 by
    default, FlashInfer, AITER) pad differently, and triton_kernels' swizzled layout is
    not in vLLM's source, so they are not modelled."""
    quantization = config.get("quantization_config")
    if not isinstance(quantization, dict) or str(quantization.get("quant_method", "")
                                                 ).lower() != "mxfp4":
        return None
    if not shape.is_moe or shape.num_moe_layers < 1:
        return None
    hidden, width = shape.hidden_size, shape.expert_intermediate_size
    experts, layers = shape.num_experts, shape.num_moe_layers
    if width < 1 or width % tp:
        return None
    stored = (mxfp4_moe_checkpoint_bytes(hidden, width, experts, layers) if checkpoint
              else estimated.by_part.get(Part.EXPERTS, 0))
    per_gpu = vllm_mxfp4_moe_bytes_per_gpu(hidden, width, experts, layers, tp)
    layout = vllm_marlin_mxfp4_layout(hidden, width, tp)
    added = tp * per_gpu - stored
    return added, (f"vLLM (Marlin MXFP4 MoE) loads the experts padded to hidden "
                   f"{layout.hidden_size} x width {layout.intermediate_size} per rank, with "
                   f"bf16 biases on every rank: {per_gpu / 2**30:.2f} GiB of experts per GPU "
                   f"at tp {tp}, {added / 2**30:+.2f} GiB in all")


def _checkpoint_only(err: ConfigError, config: dict[str, Any], checkpoint: CheckpointRef, *,
                     tp: int, pp: int) -> PlanWeights:
    """The weights of a model whose parameters kvlint cannot count from its config (a field
    missing, or a layout the count does not model) but whose checkpoint's size is known:
    that size, every byte taken as split over tp x pp and read at each decode step (no
    replicated norms, no experts left unread: an upper bound per GPU for a MoE). Without a
    checkpoint size, ``err`` extended with why there is none."""
    c = checkpoint
    found, why = _checkpoint(c.ref, c.path, c.revision, c.offline, c.lock)
    if found is None or found.total_bytes <= 0:
        missing = why or ("no safetensors index or weights beside the config" if c.path
                          else "the repository has no safetensors index")
        raise ConfigError(f"{err.detail}; nor is its checkpoint's size known ({missing}), "
                          "so its weights cannot be sized", field=err.field,
                          source=err.source) from None
    fmt = resolve_weight_format(config)
    split = WeightSplit(found.total_bytes, 0, fmt.name,
                        fmt.quantized_bytes if fmt.quantized_parts else fmt.base_bytes)
    per_gpu = split.per_gpu(tp, pp)
    return PlanWeights(
        total_bytes=found.total_bytes, per_gpu_bytes=per_gpu,
        decode_read_per_gpu_bytes=per_gpu, estimated=False,
        source=f"checkpoint: {found.source} (split evenly over tp x pp: {err})",
        split=split)


def _stage_edges(estimated: WeightBytes, layers: int, tied: bool,
                 scale: float) -> tuple[int, int, int, bool]:
    """(layers, first-stage bytes, last-stage bytes, tied) for per-stage pipeline weights."""
    # the first stage also holds a multimodal checkpoint's encoders (they run before layer 0)
    first = int((estimated.by_part.get(Part.EMBEDDINGS, 0)
                 + estimated.by_part.get(Part.ENCODER, 0)) * scale)
    last = int(estimated.by_part.get(Part.LM_HEAD, 0) * scale)
    return layers, first, last, tied

