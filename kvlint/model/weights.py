"""Model weights: parameter counts, bytes, bytes per GPU and bytes read per decode step.

Pure arithmetic over a :class:`ModelShape` (built from a ``config.json`` by
``kvlint.loaders.shape``); exact sizes, when a checkpoint is at hand, come from
``kvlint.loaders.checkpoint``. Everything here is an *estimate* from the config's dimensions:

* counted: token (and learned position) embeddings, the LM head unless tied, every layer's
  token mixer (standard attention, MLA, Mamba-1/2, Gated DeltaNet linear attention, or a plain
  linear block), dense MLPs, routed experts, shared experts, MoE routers, and norms;
* norms are approximated as one ``hidden_size`` vector per sub-block (two per layer for a
  layer with a mixer and an MLP) plus the final norm, and MLA's two latent norms; projection
  biases, QK-norms, attention sinks and Gemma's extra post-norms are ignored. Each of these is
  below 0.1 % of the total for every model kvlint ships a fixture for (< 0.5 % in any case);
* multi-token-prediction modules (DeepSeek-V3/R1 and GLM-4.5 ``num_nextn_predict_layers``) are
  **not** counted: engines load them only for speculative decoding, so they are not part of
  the serving weights (DeepSeek-V3: 671B counted, its ~14B MTP module not);
* vision/audio encoders of multimodal models are an ESTIMATE from their configs (``Part.
  ENCODER``, ``kvlint.loaders.shape._encoder_params``: a transformer encoder's layers, patch
  embedding and a projector; within 1 % of the published totals of llava-1.5-7b,
  Qwen2.5-VL-7B and Qwen3-VL-30B-A3B), held whole on the first pipeline stage and read by no
  decode step;
* the count is that of the tensors the engine keeps, so checkpoint-only tensors (fp8 scales)
  live in the bytes per parameter of :class:`~kvlint.model.weight_formats.WeightFormat`.

MoE: ``active_per_token`` counts everything but the routed experts, plus ``num_experts_per_tok``
routed experts per MoE layer. ``decode_read_params(batch)`` assumes tokens are routed
uniformly and independently, so a MoE layer touches ``E · (1 - (1 - k/E)^B)`` distinct experts
for a batch of ``B`` tokens (real routers are skewed, which touches fewer experts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Final


# --------------------------------------------------------------------------- model shape
class Mixer(str, Enum):
    """What mixes tokens in a layer."""

    ATTENTION = "attention"
    """Softmax attention: standard (MHA/GQA/MQA) or MLA when the model has ``kv_lora_rank``."""
    MAMBA = "mamba"
    """Mamba-1 selective SSM (Mamba, Falcon-Mamba, Jamba's Mamba layers)."""
    MAMBA2 = "mamba2"
    """Mamba-2 SSM (Nemotron-H, Mamba-2)."""
    LINEAR_ATTENTION = "linear_attention"
    """Gated DeltaNet linear attention (Qwen3-Next)."""
    LINEAR = "linear"
    """A single ``hidden x hidden`` matrix (Nemotron-NAS ``replace_with_linear``)."""
    NONE = "none"
    """No mixer: a no-op attention block, or an MLP-only layer (Nemotron-H ``-``)."""


class Mlp(str, Enum):
    """The feed-forward part of a layer."""

    DENSE = "dense"
    MOE = "moe"
    LINEAR = "linear"
    """A single ``hidden x hidden`` matrix (Nemotron-NAS ``replace_with_linear``)."""
    NONE = "none"


@dataclass(frozen=True)
class LayerShape:
    """One layer; ``None`` fields take the model-wide value from :class:`ModelShape`."""

    mixer: Mixer = Mixer.ATTENTION
    mlp: Mlp = Mlp.DENSE
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    v_head_dim: int | None = None
    intermediate_size: int | None = None
    """Dense MLP width of this layer (Nemotron-NAS ``ffn_mult``)."""


@dataclass(frozen=True)
class MambaShape:
    """The SSM dimensions of Mamba layers (``version`` 1 or 2)."""

    version: int
    d_inner: int
    d_state: int
    d_conv: int
    dt_rank: int = 0
    """Mamba-1 only: rank of the time-step projection."""
    num_heads: int = 0
    """Mamba-2 only."""
    n_groups: int = 1
    """Mamba-2 only: groups sharing B and C."""
    conv_bias: bool = True
    proj_bias: bool = False


@dataclass(frozen=True)
class LinearAttentionShape:
    """Gated DeltaNet (Qwen3-Next ``linear_*`` fields)."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4


@dataclass(frozen=True)
class ModelShape:
    """The dimensions that decide a decoder-only model's parameter count.

    The attention fields describe the reference (full-attention) layer; ``layers``, when not
    empty, gives every layer's mixer, MLP kind and per-layer overrides. With ``layers`` empty,
    every layer is attention plus a MoE block (``num_experts > 0``) or a dense MLP.
    """

    model_type: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    intermediate_size: int = 0
    """Dense MLP width (0: the model has no dense MLP)."""
    num_attention_heads: int = 0
    num_kv_heads: int = 0
    head_dim: int = 0
    """Query/key head dim (MLA: ``qk_nope_head_dim + qk_rope_head_dim``)."""
    v_head_dim: int | None = None
    """Value head dim; ``None``: ``head_dim``."""
    tie_word_embeddings: bool = False
    gated_mlp: bool = True
    """Three matrices (gate, up, down: Llama family) or two (up, down: GPT-2, OPT, Falcon...)."""
    position_embeddings: int = 0
    """Rows of a learned absolute position table (GPT-2, OPT...); 0 for RoPE/ALiBi models."""
    attention_output_gate: bool = False
    """Qwen3-Next: ``q_proj`` also produces a per-head output gate (twice the query width)."""
    # MLA (DeepSeek-V2/V3, Kimi K2, MiniCPM3)
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    # MoE
    num_experts: int = 0
    """Routed experts per MoE layer (``n_routed_experts`` / ``num_local_experts`` / ...)."""
    num_experts_per_tok: int = 0
    moe_intermediate_size: int | None = None
    """Width of one routed expert; ``None``: ``intermediate_size``."""
    shared_expert_intermediate_size: int = 0
    """Total width of the shared experts of a MoE layer (``n_shared_experts x width``)."""
    # per-layer detail and other mixers
    layers: tuple[LayerShape, ...] = ()
    mamba: MambaShape | None = None
    linear_attention: LinearAttentionShape | None = None
    mtp_layers: int = 0
    """Multi-token-prediction layers in the checkpoint; never counted (see the module doc)."""
    encoder_params: int = 0
    """Parameters of a multimodal checkpoint's vision/audio encoders and projectors."""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("hidden_size", "num_layers", "vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.layers and len(self.layers) != self.num_layers:
            raise ValueError(
                f"{len(self.layers)} layer shapes for a model of {self.num_layers} layers"
            )
        if self.num_experts and not 0 < self.num_experts_per_tok <= self.num_experts:
            raise ValueError(
                f"num_experts_per_tok ({self.num_experts_per_tok}) must be in 1..num_experts "
                f"({self.num_experts})"
            )

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0 and any(la.mlp is Mlp.MOE for la in self.layer_plan)

    @property
    def expert_intermediate_size(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def layer_plan(self) -> tuple[LayerShape, ...]:
        """Every layer's shape (the uniform default when ``layers`` is empty)."""
        if self.layers:
            return self.layers
        mlp = Mlp.MOE if self.num_experts else Mlp.DENSE
        return (LayerShape(Mixer.ATTENTION, mlp),) * self.num_layers

    @property
    def num_moe_layers(self) -> int:
        return sum(1 for layer in self.layer_plan if layer.mlp is Mlp.MOE)


# ------------------------------------------------------------------------------ estimates
class Part(str, Enum):
    """Buckets of a parameter count (and the unit bytes per parameter apply to)."""

    EMBEDDINGS = "embeddings"
    LM_HEAD = "lm_head"
    ATTENTION = "attention"
    MIXER = "mixer"
    """Non-attention token mixers: Mamba, linear attention, plain linear blocks."""
    DENSE_MLP = "dense_mlp"
    EXPERTS = "experts"
    """All routed experts of all MoE layers."""
    SHARED_EXPERTS = "shared_experts"
    ROUTER = "router"
    NORMS = "norms"
    ENCODER = "encoder"
    """A multimodal checkpoint's vision/audio encoder and its projector."""


LINEAR_PARTS: Final = frozenset({
    Part.ATTENTION, Part.MIXER, Part.DENSE_MLP, Part.EXPERTS, Part.SHARED_EXPERTS,
})
"""The projection matrices that weight quantization methods convert."""


@dataclass(frozen=True)
class ParameterEstimate:
    """A model's parameters by :class:`Part`, with what MoE and decode arithmetic needs."""

    embeddings: int
    lm_head: int
    attention: int
    mixer: int
    dense_mlp: int
    experts: int
    shared_experts: int
    router: int
    norms: int
    hidden_size: int
    vocab_size: int
    position_embeddings: int = 0
    tied: bool = False
    moe_layers: int = 0
    num_experts: int = 0
    experts_per_token: int = 0
    params_per_expert: int = 0
    replicated_attention: int = 0
    """MLA's latent down-projections and their norms (``q_a_proj``, ``kv_a_proj_with_mqa``),
    which vLLM keeps whole on every TP rank (counted in ``attention``)."""
    encoder: int = 0
    """A multimodal checkpoint's encoders (an ESTIMATE from their configs: see
    ``kvlint.loaders.shape``); loaded with the language model, read by no decode step."""
    notes: tuple[str, ...] = ()

    def parts(self) -> dict[Part, int]:
        return {part: getattr(self, part.value) for part in Part}

    @property
    def total(self) -> int:
        return sum(self.parts().values())

    @property
    def replicated(self) -> int:
        """Parameters every TP rank holds whole: norms, routers, MLA down-projections."""
        return self.norms + self.router + self.replicated_attention

    @property
    def dense(self) -> int:
        """Everything but the routed experts and the encoders (what every token uses)."""
        return self.total - self.experts - self.encoder

    @property
    def active_per_token(self) -> int:
        """Parameters one token uses: dense part + ``num_experts_per_tok`` routed experts
        per MoE layer (embeddings and LM head included, as model cards count them)."""
        return self.dense + self.moe_layers * self.experts_per_token * self.params_per_expert

    def expected_experts_touched(self, batch: int) -> float:
        """Distinct routed experts a MoE layer reads for ``batch`` tokens, under uniform
        independent routing: ``E · (1 - (1 - k/E)^B)``."""
        if batch < 0:
            raise ValueError(f"batch must be >= 0, got {batch}")
        if not self.num_experts:
            return 0.0
        e, k = self.num_experts, self.experts_per_token
        return e * (1.0 - (1.0 - k / e) ** batch)

    def decode_read_parts(self, batch: int) -> dict[Part, float]:
        """Parameters one decode step reads for ``batch`` sequences, by part.

        Every dense weight is read once; routed experts as
        :meth:`expected_experts_touched`; of an untied embedding table only the ``batch``
        rows looked up (a tied table is read whole by the LM head matmul).
        """
        parts: dict[Part, float] = {part: float(n) for part, n in self.parts().items()}
        rows = min(batch, self.position_embeddings) * self.hidden_size
        if self.tied:
            parts[Part.EMBEDDINGS] = float(self.vocab_size * self.hidden_size + rows)
        else:
            parts[Part.EMBEDDINGS] = float(min(batch, self.vocab_size) * self.hidden_size + rows)
        parts[Part.EXPERTS] = (
            self.moe_layers * self.params_per_expert * self.expected_experts_touched(batch)
        )
        parts[Part.ENCODER] = 0.0  # images are encoded at prefill, not at each decode step
        return parts

    def decode_read_params(self, batch: int) -> int:
        """Parameters one decode step reads for ``batch`` sequences (see
        :meth:`decode_read_parts`; uniform routing assumed for MoE)."""
        return round(sum(self.decode_read_parts(batch).values()))


def _mlp_params(hidden: int, width: int, gated: bool) -> int:
    return (3 if gated else 2) * hidden * width


def _attention_params(shape: ModelShape, layer: LayerShape) -> tuple[int, int]:
    """(parameters, of which replicated across TP) of one attention layer."""
    h = shape.hidden_size
    heads = layer.num_attention_heads or shape.num_attention_heads
    if shape.is_mla:
        rank = shape.kv_lora_rank or 0
        rope = shape.qk_rope_head_dim or 0
        nope = shape.qk_nope_head_dim if shape.qk_nope_head_dim is not None else \
            (layer.head_dim or shape.head_dim) - rope
        v_dim = layer.v_head_dim or shape.v_head_dim or nope
        q_out = heads * (nope + rope)
        if shape.q_lora_rank:
            q_down = h * shape.q_lora_rank + shape.q_lora_rank  # q_a_proj + q_a_layernorm
            q = q_down + shape.q_lora_rank * q_out
        else:
            q_down = 0
            q = h * q_out
        kv_down = h * (rank + rope) + rank  # kv_a_proj_with_mqa + kv_a_layernorm
        kv_up = rank * heads * (nope + v_dim)
        out = heads * v_dim * h
        return q + kv_down + kv_up + out, q_down + kv_down
    kv = layer.num_kv_heads or shape.num_kv_heads or heads
    k_dim = layer.head_dim or shape.head_dim or h // max(heads, 1)
    v_dim = layer.v_head_dim or (shape.v_head_dim if layer.head_dim is None else None) or k_dim
    q = h * heads * k_dim * (2 if shape.attention_output_gate else 1)
    return q + h * kv * (k_dim + v_dim) + heads * v_dim * h, 0


def _mamba_params(shape: ModelShape) -> int:
    m = shape.mamba
    if m is None:
        raise ValueError(f"{shape.model_type}: Mamba layers but no Mamba dimensions")
    h, di = shape.hidden_size, m.d_inner
    if m.version == 1:
        in_proj = h * 2 * di + (2 * di if m.proj_bias else 0)
        conv = di * m.d_conv + (di if m.conv_bias else 0)
        x_proj = di * (m.dt_rank + 2 * m.d_state)
        dt_proj = m.dt_rank * di + di
        ssm = di * m.d_state + di  # A_log, D
        out = di * h + (h if m.proj_bias else 0)
        return in_proj + conv + x_proj + dt_proj + ssm + out
    bc = 2 * m.n_groups * m.d_state
    in_proj = h * (2 * di + bc + m.num_heads)
    conv = (di + bc) * m.d_conv + ((di + bc) if m.conv_bias else 0)
    ssm = 3 * m.num_heads + di  # dt_bias, A_log, D, gated norm
    return in_proj + conv + ssm + di * h


def _linear_attention_params(shape: ModelShape) -> int:
    la = shape.linear_attention
    if la is None:
        raise ValueError(f"{shape.model_type}: linear-attention layers but no dimensions")
    h = shape.hidden_size
    key_dim = la.num_key_heads * la.key_head_dim
    value_dim = la.num_value_heads * la.value_head_dim
    in_proj = h * (2 * key_dim + 2 * value_dim) + h * 2 * la.num_value_heads  # qkvz, ba
    conv = (2 * key_dim + value_dim) * la.conv_kernel
    return in_proj + conv + 2 * la.num_value_heads + la.value_head_dim + value_dim * h


def estimate_parameters(shape: ModelShape) -> ParameterEstimate:
    """Count ``shape``'s parameters by part (see the module doc for what is approximated)."""
    h = shape.hidden_size
    attention = mixer = dense = experts = shared = router = replicated = 0
    norms = h  # final norm
    per_expert = _mlp_params(h, shape.expert_intermediate_size, shape.gated_mlp)
    moe_layers = 0
    for layer in shape.layer_plan:
        blocks = 0
        if layer.mixer is Mixer.ATTENTION:
            params, rep = _attention_params(shape, layer)
            attention += params
            replicated += rep
        elif layer.mixer is Mixer.MAMBA or layer.mixer is Mixer.MAMBA2:
            mixer += _mamba_params(shape)
        elif layer.mixer is Mixer.LINEAR_ATTENTION:
            mixer += _linear_attention_params(shape)
        elif layer.mixer is Mixer.LINEAR:
            mixer += h * h
        blocks += layer.mixer is not Mixer.NONE
        if layer.mlp is Mlp.DENSE:
            width = layer.intermediate_size or shape.intermediate_size
            if width <= 0:
                raise ValueError(f"{shape.model_type}: a dense MLP layer without a width")
            dense += _mlp_params(h, width, shape.gated_mlp)
        elif layer.mlp is Mlp.MOE:
            moe_layers += 1
            experts += shape.num_experts * per_expert
            router += h * shape.num_experts
            if shape.shared_expert_intermediate_size:
                shared += _mlp_params(h, shape.shared_expert_intermediate_size, shape.gated_mlp)
        elif layer.mlp is Mlp.LINEAR:
            dense += h * h
        blocks += layer.mlp is not Mlp.NONE
        norms += blocks * h
    embeddings = (shape.vocab_size + shape.position_embeddings) * h
    lm_head = 0 if shape.tie_word_embeddings else shape.vocab_size * h
    return ParameterEstimate(
        embeddings=embeddings,
        lm_head=lm_head,
        attention=attention,
        mixer=mixer,
        dense_mlp=dense,
        experts=experts,
        shared_experts=shared,
        router=router,
        norms=norms,
        hidden_size=h,
        vocab_size=shape.vocab_size,
        position_embeddings=shape.position_embeddings,
        tied=shape.tie_word_embeddings,
        moe_layers=moe_layers,
        num_experts=shape.num_experts if moe_layers else 0,
        experts_per_token=shape.num_experts_per_tok if moe_layers else 0,
        params_per_expert=per_expert if moe_layers else 0,
        replicated_attention=replicated,
        encoder=shape.encoder_params,
        notes=shape.notes,
    )


@dataclass(frozen=True)
class WeightSplit:
    """What sizes a checkpoint under any tp x pp: its total and replicated bytes, and the
    format its large tensors are stored in (advice: a smaller quantisation than this)."""

    total_bytes: int
    replicated_bytes: int
    format_name: str
    quantized_bytes: float
    """Bytes per parameter of the checkpoint's quantized (or, unquantized, all) tensors."""

    layers: int = 0
    first_stage_bytes: int = 0
    """The embeddings (pipeline stage 0)."""
    last_stage_bytes: int = 0
    """The LM head (the last pipeline stage)."""
    tied: bool = False
    attention_bytes: int = 0
    """The attention projections split over tp (MLA's whole down-projections excluded):
    under attention data parallelism they are split over the attention TP group only."""

    def per_gpu(self, tp: int, pp: int, attention_tp: int | None = None) -> int:
        """Bytes on one GPU (the fullest pipeline stage's); ``attention_tp`` below ``tp``:
        attention data parallelism, each GPU then holding ``tp / attention_tp`` times its
        share of the attention."""
        return max(self.per_stage(tp, pp, attention_tp))

    def per_stage(self, tp: int, pp: int, attention_tp: int | None = None) -> list[int]:
        """Bytes on one GPU of each pipeline stage (:func:`stages_bytes_per_gpu`), the
        attention data-parallel share of :meth:`per_gpu` added to each."""
        extra = 0
        if attention_tp is not None and 0 < attention_tp < tp:
            extra = int(self.attention_bytes / pp / attention_tp
                        - self.attention_bytes / pp / tp)
        return [b + extra for b in stages_bytes_per_gpu(
            self.total_bytes, tp, pp, replicated_bytes=self.replicated_bytes,
            layers=self.layers, first_stage_bytes=self.first_stage_bytes,
            last_stage_bytes=self.last_stage_bytes, tied=self.tied)]


def pipeline_stage_layers(layers: int, pp: int) -> list[int]:
    """Decoder layers per pipeline stage as vLLM assigns them (``get_pp_indices``,
    vllm/distributed/utils.py: ``layers // pp`` each, the remainder one by one to the stages
    before the last, from the second-to-last backwards, so the last stage, which also holds the
    LM head, is not the fuller; ``VLLM_PP_LAYER_PARTITION`` overrides it). Read in the vLLM
    0.33.0 wheel: vllm/distributed/utils.py ``get_pp_indices`` (lines 198-241); the same
    default split in the 0.34.0 wheel (lines 211-256, which only add a ValueError for negative
    ``VLLM_PP_LAYER_PARTITION`` counts)."""
    if pp < 1 or layers < pp:
        raise ValueError(f"cannot split {layers} layers over {pp} stages")
    stages = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        stages[-i] += 1
    return stages


def weight_bytes_per_gpu(
    total_bytes: int, tp: int = 1, pp: int = 1, *, replicated_bytes: int = 0,
    layers: int = 0, first_stage_bytes: int = 0, last_stage_bytes: int = 0,
    tied: bool = False,
) -> int:
    """Weight bytes on the most loaded GPU, approximately: ``(total - replicated) / (tp·pp)
    + replicated / pp``.

    Approximations: every TP-sharded weight, embeddings and LM head included (vLLM's
    ``VocabParallelEmbedding`` / ``ParallelLMHead`` shard the vocabulary by tp), divides
    evenly by ``tp``; ``replicated_bytes`` (norms, routers, MLA latent down-projections, which
    every TP rank holds whole) divide by ``pp`` only. KV heads replicated when ``n_kv < tp``
    and DP attention's replicated attention weights are not added. Expert parallelism shards
    experts over the same GPUs, so it does not change the total per GPU.

    Pipeline stages: with ``layers`` given (and ``pp`` > 1) the fullest stage's share, with
    the layers split as :func:`pipeline_stage_layers` does, ``first_stage_bytes`` (the
    embeddings) on the first stage and ``last_stage_bytes`` (the LM head) on the last; the
    rest divides by layer. ``tied``: the LM head is the embedding table, counted once in
    ``total_bytes`` but held by both end stages (vLLM's Llama-family models build the table on
    the last rank too when ``tie_word_embeddings`` and tie the LM head to it: vLLM 0.33.0
    wheel, vllm/model_executor/models/llama.py lines 377-388 and 502-510).
    Without ``layers``, stages are taken as equal.
    """
    if tp < 1 or pp < 1:
        raise ValueError(f"tp and pp must be >= 1, got tp={tp} pp={pp}")
    if not 0 <= replicated_bytes <= total_bytes:
        raise ValueError("replicated_bytes must be between 0 and total_bytes")
    return max(stages_bytes_per_gpu(
        total_bytes, tp, pp, replicated_bytes=replicated_bytes, layers=layers,
        first_stage_bytes=first_stage_bytes, last_stage_bytes=last_stage_bytes, tied=tied))


def stages_bytes_per_gpu(
    total_bytes: int, tp: int, pp: int, *, replicated_bytes: int = 0, layers: int = 0,
    first_stage_bytes: int = 0, last_stage_bytes: int = 0, tied: bool = False,
) -> list[int]:
    """Weight bytes on one GPU of each pipeline stage, shared as
    :func:`weight_bytes_per_gpu` describes (the stages equal without ``layers``)."""
    sharded = total_bytes - replicated_bytes
    last = first_stage_bytes if tied else last_stage_bytes
    edges = first_stage_bytes + (0 if tied else last)
    if pp == 1 or layers < pp or not 0 <= edges <= total_bytes or total_bytes == 0:
        return [math.ceil(sharded / (tp * pp) + replicated_bytes / pp)] * pp
    per_layer = (total_bytes - edges) / layers
    shares = [(n * per_layer + (first_stage_bytes if i == 0 else 0)
               + (last if i == pp - 1 else 0)) / total_bytes
              for i, n in enumerate(pipeline_stage_layers(layers, pp))]
    return [math.ceil(sharded * share / tp + replicated_bytes * share) for share in shares]
