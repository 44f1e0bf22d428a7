"""The GPU memory vLLM sets aside for LoRA adapters (pure arithmetic; issue 29).

With ``--enable-lora`` vLLM wraps the model's layers in LoRA layers while it loads the model,
and each wrapper allocates zeroed buffers for ``max_loras`` adapters of rank
``max_lora_rank`` up front (``create_lora_weights``). They are allocated inside the memory
measurement of the load, so they are part of "Model loading took" and come off the KV
cache like weights (``load_model`` calls ``load_lora_model`` under ``DeviceMemoryProfiler``:
vllm/v1/worker/gpu_model_runner.py@v0.10.1.1 lines 1982-2008).

Per GPU, with ``M = max_loras``, ``r = max_lora_rank``, ``t`` the tensor-parallel size and
``b`` the LoRA dtype's bytes (``lora_dtype`` "auto": the model's dtype), a linear layer's
buffers are (vllm/lora/layers.py@v0.10.1.1 ``create_lora_weights``; the same shapes in
vllm/lora/layers/base_linear.py, column_parallel_linear.py and row_parallel_linear.py
@v0.34.0)::

    column-parallel, n packed slices of per-rank widths o_i, input width h:
        A = n x M x r' x h          (r' = r, or r / t with --fully-sharded-loras)
        B = M x r x sum(o_i)
    row-parallel, input width i (split over t), output width o:
        A = M x r x i / t
        B = M x r x o'              (o' = o, or o / t with --fully-sharded-loras)
    replicated (MLA's down-projections, a MoE router), input h, output o:
        A = M x r x h,  B = M x r x o

Every ``LinearBase`` layer is a LoRA target (``get_supported_lora_modules``,
vllm/lora/utils.py@v0.10.1.1 lines 185-203), so a Llama layer has four: ``qkv_proj`` (3
slices: q, k, v; 1 for models whose checkpoint packs them, as Phi-3), ``o_proj``,
``gate_up_proj`` (2 slices; 1 for Phi-3) and ``down_proj``. The key/value slices are per-rank
widths: ``max(1, kv_heads / t)`` heads, as ``QKVParallelLinear`` replicates them.

A MoE layer's router (``gate``, replicated) is a target in every version; its routed experts
are from v0.12.0 (``FusedMoEWithLoRA``, vllm/lora/layers/fused_moe.py@v0.12.0, absent
@v0.11.0), with ``E`` local experts of per-rank width ``I/t``::

    w13: A = 2 x M x E x r' x h,  B = 2 x M x E x I/t x r
    w2:  A = M x E x r x I/t,     B = M x E x h' x r

The embeddings and the LM head are targets only for model classes that declare
``embedding_modules`` (:data:`EMBEDDING_LORA`); through v0.11 they also carry
``lora_extra_vocab_size`` = 256 extra rows per adapter (vllm/config/lora.py@v0.11.0; gone
@v0.12.0), and the LM head's B is padded to 256 rows (``lora_vocab_padding_size``)::

    embeddings: A = M x (V + x) x r,   B = M x h x r,   extra = M x x x h
    LM head:    A = M x r x h,         B = M x pad(V + x M) x r,  extra = M x x x h

and the base embeddings and (untied) LM head hold ``x M`` more rows, split over ``t``
(``lora_vocab``: vllm/model_executor/models/llama.py@v0.7.3; their padding to 64 rows is
not counted).

Mamba and linear-attention layers' projections are not counted (kvlint does not model them
as LoRA targets): the figure is a lower bound there, and the notes say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import Version

if TYPE_CHECKING:  # the plan holds LoraSlots at start-up; the arithmetic only when sizing
    from kvlint.model.weights import ModelShape

MOE_LORA_SINCE = Version("0.12.0")
"""Routed experts get LoRA buffers from v0.12.0 (``FusedMoEWithLoRA``: present in the
v0.12.0 wheel's vllm/lora/layers/fused_moe.py, absent from v0.11.0's)."""

EXTRA_VOCAB_UNTIL = Version("0.12.0")
"""``lora_extra_vocab_size`` (default 256) exists before v0.12.0 (vllm/config/lora.py@v0.11.0
line 47; absent @v0.12.0)."""
EXTRA_VOCAB = 256
VOCAB_PADDING = 256

EMBEDDING_LORA: dict[str, Version] = {
    # vllm/model_executor/models/*.py: classes whose ``embedding_modules`` name embed_tokens
    # and lm_head (read in the v0.7.3 and v0.34.0 wheels; Phi-3 inherits Llama's). Versions
    # before 0.7.3 were not read: 0.4.0, the oldest kvlint models, is an ASSUMPTION
    "LlamaForCausalLM": Version("0.4.0"), "MistralForCausalLM": Version("0.4.0"),
    "Phi3ForCausalLM": Version("0.4.0"), "MixtralForCausalLM": Version("0.4.0"),
    "GraniteForCausalLM": Version("0.4.0"), "GraniteMoeForCausalLM": Version("0.4.0"),
    "CohereForCausalLM": Version("0.4.0"), "MiniCPMForCausalLM": Version("0.4.0"),
    "NemotronForCausalLM": Version("0.4.0"), "SolarForCausalLM": Version("0.4.0"),
    "JambaForCausalLM": Version("0.4.0"), "PhiMoEForCausalLM": Version("0.4.0"),
    # qwen3.py / qwen3_moe.py: absent @v0.15.1, present @v0.16.0
    "Qwen3ForCausalLM": Version("0.16.0"), "Qwen3MoeForCausalLM": Version("0.16.0"),
}
"""Model class → the first version kvlint read with LoRA on its embeddings and LM head."""

PACKED_ONE_SLICE = frozenset({"phi3", "falcon", "gpt_neox", "gpt2", "gpt_bigcode", "bloom",
                              "chatglm", "internlm2", "qwen", "dbrx", "mpt"})
"""Model types whose checkpoint packs q, k and v (and Phi-3 gate and up) into one tensor, so
the LoRA layer has one slice, not three (``packed_modules_mapping``: phi3.py@v0.7.3)."""


MAX_LORAS = 4096
MAX_LORA_RANK = 4096
"""Bounds kvlint puts on the LoRA options (vLLM's own ranks stop at 512:
vllm/config/lora.py@v0.34.0 ``MaxLoRARanks``)."""


@dataclass(frozen=True)
class LoraSlots:
    """vLLM's LoRA options (defaults: vllm/config/lora.py@v0.34.0, the same @v0.5.0)."""

    max_loras: int = 1
    max_lora_rank: int = 16
    fully_sharded: bool = False

    def __post_init__(self) -> None:
        for name, most in (("max_loras", MAX_LORAS), ("max_lora_rank", MAX_LORA_RANK)):
            value = getattr(self, name)
            if not 1 <= value <= most:
                raise ValueError(f"{name} must be in 1..{most:,}, got "
                                 f"{'a larger number' if value > 10**30 else value}")

    @classmethod
    def given(cls, max_loras: int | None, max_lora_rank: int | None,
              fully_sharded: bool) -> LoraSlots:
        """The slots a command sets, vLLM's defaults for what it leaves out (``--lora-dtype``
        is not read: the buffers take the model's dtype, vLLM's "auto")."""
        return cls(max_loras=max_loras or cls.max_loras,
                   max_lora_rank=max_lora_rank or cls.max_lora_rank,
                   fully_sharded=fully_sharded)


@dataclass(frozen=True)
class LoraBytes:
    per_stage: tuple[int, ...]
    """Bytes per GPU of each pipeline stage."""
    notes: tuple[str, ...] = ()


def _column(m: int, r: int, r_a: int, h: int, outs: Sequence[int], slices: int) -> int:
    return slices * m * r_a * h + m * r * sum(outs)


def _row(m: int, r: int, i_per_rank: int, o: int) -> int:
    return m * r * i_per_rank + m * r * o


def _attention(shape: ModelShape, heads: int, kv: int, k_dim: int, v_dim: int,
               slots: LoraSlots, tp: int) -> int:
    m, r, h = slots.max_loras, slots.max_lora_rank, shape.hidden_size
    r_a = r // tp if slots.fully_sharded else r
    o_out = h // tp if slots.fully_sharded else h
    if shape.is_mla:
        rank = shape.kv_lora_rank or 0
        rope = shape.qk_rope_head_dim or 0
        nope = shape.qk_nope_head_dim if shape.qk_nope_head_dim is not None else k_dim - rope
        q_out = heads * (nope + rope) // tp
        total = 0
        if shape.q_lora_rank:  # q_a_proj (replicated), q_b_proj (column)
            total += m * r * h + m * r * shape.q_lora_rank
            total += _column(m, r, r_a, shape.q_lora_rank, [q_out], 1)
        else:
            total += _column(m, r, r_a, h, [q_out], 1)
        total += m * r * h + m * r * (rank + rope)  # kv_a_proj_with_mqa (replicated)
        total += _column(m, r, r_a, rank, [heads * (nope + v_dim) // tp], 1)  # kv_b_proj
        return total + _row(m, r, heads * v_dim // tp, o_out)
    kv_per_rank = max(1, kv // tp)
    q_width = heads * k_dim * (2 if shape.attention_output_gate else 1) // tp
    slices = 1 if shape.model_type in PACKED_ONE_SLICE else 3
    qkv = _column(m, r, r_a, h, [q_width, kv_per_rank * k_dim, kv_per_rank * v_dim], slices)
    return qkv + _row(m, r, heads * v_dim // tp, o_out)


def _dense_mlp(shape: ModelShape, width: int, slots: LoraSlots, tp: int) -> int:
    m, r, h = slots.max_loras, slots.max_lora_rank, shape.hidden_size
    r_a = r // tp if slots.fully_sharded else r
    o_out = h // tp if slots.fully_sharded else h
    if shape.gated_mlp:
        slices = 1 if shape.model_type in PACKED_ONE_SLICE else 2
        up = _column(m, r, r_a, h, [2 * width // tp], slices)
    else:
        up = _column(m, r, r_a, h, [width // tp], 1)
    return up + _row(m, r, width // tp, o_out)


def _moe(shape: ModelShape, slots: LoraSlots, tp: int, experts_wrapped: bool) -> int:
    m, r, h = slots.max_loras, slots.max_lora_rank, shape.hidden_size
    total = m * r * h + m * r * shape.num_experts  # the router (replicated)
    if shape.shared_expert_intermediate_size:
        total += _dense_mlp(shape, shape.shared_expert_intermediate_size, slots, tp)
    if experts_wrapped:  # every expert on every rank, split over tp (no expert parallelism)
        local, width = shape.num_experts, shape.expert_intermediate_size // tp
        r_a = r // tp if slots.fully_sharded else r
        h_out = h // tp if slots.fully_sharded else h
        total += 2 * m * local * r_a * h + 2 * m * local * width * r  # w13
        total += m * local * r * width + m * local * h_out * r  # w2
    return total


def lora_bytes(shape: ModelShape, architecture: str | None, slots: LoraSlots, *, tp: int,
               pp: int, version: str | None, model_dtype_bytes: int) -> LoraBytes:
    """The LoRA buffers of each pipeline stage's GPU, in bytes (see the module doc)."""
    from kvlint.model.memory import release_version
    from kvlint.model.weights import Mixer, Mlp, pipeline_stage_layers

    v = release_version(version)
    b = model_dtype_bytes
    notes: list[str] = []
    experts_wrapped = v is None or v >= MOE_LORA_SINCE
    per_layer: list[int] = []
    for layer in shape.layer_plan:
        elements = 0
        if layer.mixer is Mixer.ATTENTION:
            heads = layer.num_attention_heads or shape.num_attention_heads
            kv = layer.num_kv_heads or shape.num_kv_heads or heads
            k_dim = layer.head_dim or shape.head_dim or shape.hidden_size // max(heads, 1)
            v_dim = layer.v_head_dim or shape.v_head_dim or k_dim
            elements += _attention(shape, heads, kv, k_dim, v_dim, slots, tp)
        elif layer.mixer is not Mixer.NONE and "mixer" not in notes:
            notes.append("mixer")
        if layer.mlp is Mlp.DENSE:
            elements += _dense_mlp(shape, layer.intermediate_size or shape.intermediate_size,
                                   slots, tp)
        elif layer.mlp is Mlp.MOE:
            elements += _moe(shape, slots, tp, experts_wrapped)
        per_layer.append(elements * b)
    extra = EXTRA_VOCAB if v is not None and v < EXTRA_VOCAB_UNTIL else 0
    since = EMBEDDING_LORA.get(architecture or "")
    m, r, h, vocab = slots.max_loras, slots.max_lora_rank, shape.hidden_size, shape.vocab_size
    embed = head = 0
    if since is not None and (v is None or v >= since):
        embed = (m * (vocab + extra) * r + m * h * r + m * extra * h) * b
        rows = vocab + extra * m
        if extra:
            rows = -(-rows // VOCAB_PADDING) * VOCAB_PADDING
        head = (m * r * h + m * rows * r + m * extra * h) * b
        # ... and the base embeddings and LM head grow by x M rows (split over t)
        grown = extra * m * h * b // tp
        embed += grown
        head += 0 if shape.tie_word_embeddings else grown
    stages = pipeline_stage_layers(shape.num_layers, pp)
    out: list[int] = []
    start = 0
    for i, count in enumerate(stages):
        stage = sum(per_layer[start:start + count])
        start += count
        stage += embed if i == 0 else 0
        stage += head if i == pp - 1 else 0
        out.append(stage)
    text = []
    if "mixer" in notes:
        text.append("the LoRA buffers of Mamba and linear-attention layers are not counted "
                    "(a lower bound)")
    if shape.is_moe and not experts_wrapped:
        text.append(f"routed experts take no LoRA before vLLM {MOE_LORA_SINCE}")
    return LoraBytes(tuple(out), tuple(text))
