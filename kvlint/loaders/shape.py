"""Resolve a raw ``config.json`` dict into a :class:`~kvlint.model.weights.ModelShape`.

The attention part (per-layer heads, head dims, MLA, which layers hold no attention) comes
from :func:`kvlint.loaders.hf_config.resolve_geometry`, so both agree on every layer; this
module adds what a parameter count needs on top: vocabulary, MLP widths, MoE layout, Mamba
and linear-attention dimensions, tied embeddings. Fields are read by the spellings configs
use (``n_embd``, ``d_model``, ``ffn_hidden_size``, ``n_inner``, ``ffn_dim``,
``ffn_config.*``...), from the text part of multimodal configs; an absent field takes
transformers' default for the ``model_type`` (through :class:`ConfigDefaults`); what cannot be
resolved raises :class:`~kvlint.errors.ConfigError` naming the field.

No I/O; transformers is never imported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from kvlint.errors import ConfigError
from kvlint.loaders.hf_config import (
    MISSING,
    SSM_MODEL_TYPES,
    ConfigDefaults,
    as_int,
    config_dtype,
    lookup,
    note_source,
    resolve_geometry,
    shown,
    spellings,
    text_part,
    under_key,
)
from kvlint.model.geometry import AttentionGeometry, LayerGeometry
from kvlint.model.limits import MAX_HEADS
from kvlint.model.weight_exclusions import kept_fractions
from kvlint.model.weight_formats import FormatError, WeightFormat, weight_format, with_fp4_experts
from kvlint.model.weights import (
    LayerShape,
    LinearAttentionShape,
    MambaShape,
    Mixer,
    Mlp,
    ModelShape,
)

__all__ = ["resolve_shape", "resolve_weight_format"]

TWO_MATRIX_MLP: Final = frozenset({
    "gpt2", "opt", "gptj", "gpt_neox", "gpt_neo", "bloom", "phi", "falcon", "RefinedWeb",
    "RefinedWebModel", "mpt", "gpt_bigcode", "starcoder2", "codegen", "nemotron", "nemotron_h",
    "biogpt", "xglm",
})
"""Model types whose MLP is ``up -> activation -> down`` (two matrices); every other model
type is taken as gated (gate, up, down: Llama, Mistral, Qwen, Gemma, DeepSeek, ChatGLM's
SwiGLU ``dense_h_to_4h``, Phi-3-small's GeGELU...)."""

FFN_DEFAULTS_TO_4X: Final = frozenset({
    "gpt2", "gptj", "gpt_bigcode", "gpt_neo", "falcon", "RefinedWeb", "RefinedWebModel",
    "bloom", "codegen",
})
"""Model types whose absent or null MLP width means ``4 * hidden_size`` (``n_inner: null``)."""

TIED_BY_DEFAULT: Final = frozenset({
    "gpt2", "opt", "gpt_neo", "bloom", "falcon", "RefinedWeb", "RefinedWebModel", "mpt",
    "starcoder2", "gpt_bigcode", "cohere", "cohere2", "gemma", "gemma2", "gemma3_text",
    "mamba", "falcon_mamba",
})
UNTIED_BY_DEFAULT: Final = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next",
    "gptj", "gpt_neox", "phi", "phi3", "dbrx", "deepseek_v2", "deepseek_v3", "glm4_moe", "jamba",
    "nemotron_h", "llama4_text", "gpt_oss", "olmo", "stablelm", "mamba2",
})
"""Where transformers' config class puts ``tie_word_embeddings`` when a config omits it
(checked against transformers by the test suite); other types ask transformers."""

LEARNED_POSITIONS: Final = {
    "gpt2": ("n_positions", 0),
    "gpt_bigcode": ("n_positions", 0),
    "gpt_neo": ("max_position_embeddings", 0),
    "opt": ("max_position_embeddings", 2),  # OPT's learned positions have an offset of 2
}
"""Model types with a learned absolute position table: (field with its rows, extra rows)."""

SHARED_EXPERT_OF_EXPERT_SIZE: Final = frozenset({"llama4_text", "llama4"})
"""Llama 4: every MoE layer has one shared expert as wide as a routed one."""

NAS_FFN_MULTIPLE: Final = 256
"""Nemotron-NAS: MLP width = ``2 · ffn_mult · hidden / 3`` rounded up to a multiple of 256."""


EXPERT_COUNT_FIELDS: Final = ("n_routed_experts", "num_local_experts", "num_experts",
                               "moe_num_experts")
MOE_FIELDS: Final = frozenset({
    *EXPERT_COUNT_FIELDS, "num_nextn_predict_layers", "intermediate_size_mlp",
    "interleave_moe_layer_step", "decoder_sparse_step", "expert_layer_period",
    "first_k_dense_replace", "moe_layer_freq", "moe_intermediate_size",
    "expert_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
    "num_shared_experts",
})
"""Fields of MoE/MTP models: not asked of transformers for configs without experts."""


@dataclass
class _Fields:
    """Field access on the text config, with aliases and transformers' defaults."""

    config: Mapping[str, Any]
    model_type: str
    defaults: ConfigDefaults | None
    notes: list[str] = field(default_factory=list)

    def raw(self, *names: str) -> tuple[str, Any] | None:
        return lookup(self.config, *names)

    def default(self, *names: str) -> tuple[str, Any] | None:
        """transformers' value for the first of ``names`` its config class has.

        MoE and MTP fields are only looked up for configs that declare experts: a dense
        config without them is dense, and importing transformers to learn so costs a second.
        A key present with an explicit null is never replaced by a default.
        """
        if not (self.model_type and self.defaults and self.defaults.knows(self.model_type)):
            return None
        if any(name in self.config for name in names):
            return None
        if all(name.rsplit(".", 1)[-1] in MOE_FIELDS for name in names) and \
                not any(self.config.get(n) for n in EXPERT_COUNT_FIELDS):
            return None
        for name in names:
            if "." in name:
                continue
            value = self.defaults.value(self.model_type, self.config, name)
            if value is not MISSING and value is not None:
                note_source(self.defaults, self.model_type, self.notes)
                return f"{name} (transformers default)", value
        return None

    def required(self, *names: str, minimum: int = 1) -> int:
        found = self.raw(*names) or self.default(*names)
        if found is None:
            raise ConfigError(
                f"missing field {spellings(names)}: cannot count the model's parameters",
                field=names[0],
            )
        return as_int(found[0], found[1], minimum)

    def optional(self, *names: str, minimum: int = 0) -> int | None:
        found = self.raw(*names) or self.default(*names)
        return None if found is None else as_int(found[0], found[1], minimum)

    def list(self, name: str) -> list[Any] | None:
        value = self.config.get(name)
        if value is None:
            return None
        if not isinstance(value, list):
            raise ConfigError(f"field '{name}' must be a list, got {type(value).__name__}",
                              field=name)
        return value


def resolve_shape(config: Any, *, defaults: ConfigDefaults | None = None) -> ModelShape:
    """Turn a raw ``config.json`` value into the :class:`ModelShape` a parameter count needs."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"expected a JSON object, got {type(config).__name__}")
    geometry = resolve_geometry(config, defaults=defaults)
    text, key = text_part(config)
    fields = _Fields(text, geometry.model_type, defaults, list(geometry.notes))
    try:
        return _resolve(fields, config, geometry)
    except ConfigError as err:
        raise under_key(err, key) from None


def resolve_weight_format(config: Any) -> WeightFormat:
    """The :class:`WeightFormat` of a raw config: its dtype and quantization settings."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"expected a JSON object, got {type(config).__name__}")
    text, _ = text_part(config)
    dtype = config_dtype(config) or config_dtype(text)
    quant = config.get("quantization_config") or text.get("quantization_config")
    mlx = config.get("quantization")
    if quant is not None and not isinstance(quant, Mapping):
        raise ConfigError("field 'quantization_config' must be an object",
                          field="quantization_config")
    if mlx is not None and not isinstance(mlx, Mapping):
        raise ConfigError("field 'quantization' must be an object", field="quantization")
    try:
        fmt = weight_format(dtype, quant, mlx_quantization=mlx)
    except FormatError as err:
        raise ConfigError(str(err), field=err.field) from None
    fmt = with_fp4_experts(fmt, config.get("expert_dtype", text.get("expert_dtype")))
    if not fmt.quantized_parts or quant is None:
        return fmt
    layers = text.get("num_hidden_layers", config.get("num_hidden_layers"))
    kept, notes = kept_fractions(quant, layers if isinstance(layers, int) and
                                 not isinstance(layers, bool) and layers > 0 else None)
    kept = {part: share for part, share in kept.items() if part in fmt.quantized_parts}
    if not kept:
        return replace(fmt, notes=(*fmt.notes, *notes))
    said = ", ".join(f"{part.value} {share:.0%}" for part, share in sorted(
        kept.items(), key=lambda item: item[0].value))
    return replace(fmt, kept=tuple(sorted(kept.items(), key=lambda item: item[0].value)),
                   notes=(*fmt.notes, *notes, f"kept in 16-bit by the quantization config's "
                          f"excluded modules: {said}"))



# ------------------------------------------------------------------------------ resolution
SHARED_BLOCK_MODEL_TYPES: Final = frozenset({"zamba", "zamba2"})
"""Hybrids whose every layer is a Mamba layer and whose few attention + MLP blocks serve many
of them (transformers modeling_zamba.py / modeling_zamba2.py: ``num_mem_blocks`` shared
blocks, a linear and LoRA adapters per hybrid layer), which the per-layer count does not
model. Their weights are sized from the checkpoint (kvlint.loaders.weight_size)."""


def _resolve(f: _Fields, outer: Mapping[str, Any], geometry: AttentionGeometry) -> ModelShape:
    mt = f.model_type
    if mt in SSM_MODEL_TYPES and mt not in ("mamba", "falcon_mamba", "mamba2"):
        raise ConfigError(f"counting the parameters of {mt!r} models is not supported",
                          field="model_type")
    if mt in SHARED_BLOCK_MODEL_TYPES:
        raise ConfigError(f"counting the parameters of {mt!r} models is not supported: their "
                          "attention and MLP blocks are shared by many layers",
                          field="model_type")
    hidden = f.required("hidden_size", "n_embd", "d_model", "model_dim")
    padded = f.raw("padded_vocab_size")  # ChatGLM: the embedding's real row count
    vocab = as_int(*padded) if padded else f.required("vocab_size", "n_vocab")
    mixers = _mixers(f, geometry)
    num_experts = f.optional("n_routed_experts", "num_local_experts", "num_experts",
                            "moe_num_experts", "ffn_config.moe_num_experts") or 0
    mlps = _mlps(f, len(mixers), hidden, num_experts)
    needs_dense = any(m is Mlp.DENSE and width is None for m, width in mlps)
    dense_width, expert_width = _widths(f, hidden, num_experts, needs_dense)
    top_k = 0
    shared = 0
    if any(m is Mlp.MOE for m, _ in mlps):
        top_k = f.required("num_experts_per_tok", "experts_per_token", "moe_top_k",
                      "ffn_config.moe_top_k", "num_experts_per_token",
                      "top_k_experts")  # Gemma 4 (vLLM 0.33.0 gemma4.py)
        if top_k > num_experts:
            raise ConfigError(
                f"field 'num_experts_per_tok' ({top_k}) exceeds the number of routed experts "
                f"({num_experts}): a token cannot be routed to more experts than there are",
                field="num_experts_per_tok")
        shared = _shared_width(f, expert_width)
    ref = geometry.reference_layer
    layers = tuple(
        _layer(mixer, mlp, width, geometry.layers[i], ref)
        for i, (mixer, (mlp, width)) in enumerate(zip(mixers, mlps, strict=True))
    )
    mla = ref is not None and ref.is_mla
    rope = ref.qk_rope_head_dim if ref is not None and mla else None
    mtp = f.optional("num_nextn_predict_layers") or 0
    if mtp:
        f.notes.append(
            f"{mtp} multi-token-prediction layer(s) (num_nextn_predict_layers) not counted: "
            "engines load them only for speculative decoding"
        )
    encoder = _encoder_params(outer, hidden)
    if encoder:
        f.notes.append(f"vision/audio encoder ~{encoder / 1e9:.2f}B parameters, an estimate "
                       "from its config (layers x (4 x hidden^2 + MLP) + patch embedding + "
                       "projector)")
    elif any(isinstance(outer.get(k), Mapping) for k in ("vision_config", "audio_config")):
        f.notes.append("vision/audio encoder not counted (its config gives no sizes): "
                       "language model only")
    return ModelShape(
        model_type=mt,
        hidden_size=hidden,
        num_layers=len(layers),
        vocab_size=vocab,
        intermediate_size=dense_width or 0,
        num_attention_heads=geometry.num_attention_heads,
        num_kv_heads=ref.num_kv_heads if ref else 0,
        head_dim=ref.k_head_dim if ref else 0,
        v_head_dim=ref.v_head_dim if ref else None,
        tie_word_embeddings=_tied(f, outer),
        gated_mlp=_gated(f),
        position_embeddings=_positions(f),
        attention_output_gate=mt == "qwen3_next",
        q_lora_rank=(f.optional("q_lora_rank") or None) if mla else None,
        kv_lora_rank=ref.kv_lora_rank if ref is not None and mla else None,
        qk_nope_head_dim=(ref.k_head_dim - (rope or 0)) if ref is not None and mla else None,
        qk_rope_head_dim=rope,
        num_experts=num_experts if top_k else 0,
        num_experts_per_tok=top_k,
        moe_intermediate_size=expert_width if top_k else None,
        shared_expert_intermediate_size=shared,
        layers=layers,
        mamba=_mamba(f, hidden) if any(m in (Mixer.MAMBA, Mixer.MAMBA2) for m in mixers)
        else None,
        linear_attention=_linear_attention(f)
        if Mixer.LINEAR_ATTENTION in mixers else None,
        mtp_layers=mtp,
        encoder_params=encoder,
        notes=tuple(f.notes),
    )


def _layer(mixer: Mixer, mlp: Mlp, width: int | None, geo: LayerGeometry,
           ref: LayerGeometry | None) -> LayerShape:
    """A layer; attention overrides only where it differs from the reference layer."""
    if mixer is not Mixer.ATTENTION or ref is None or geo == ref or not geo.holds_kv:
        return LayerShape(mixer, mlp, intermediate_size=width)
    return LayerShape(
        mixer, mlp,
        num_attention_heads=geo.num_attention_heads,
        num_kv_heads=geo.num_kv_heads,
        head_dim=geo.k_head_dim,
        v_head_dim=geo.v_head_dim,
        intermediate_size=width,
    )


# ----------------------------------------------------------------------------- token mixers
_MIXER_NAMES: Final = {
    "mamba": Mixer.MAMBA,
    "mamba2": Mixer.MAMBA2,
    "linear_attention": Mixer.LINEAR_ATTENTION,
}


def _mixers(f: _Fields, geometry: AttentionGeometry) -> list[Mixer]:
    """Each layer's token mixer: attention where the geometry holds KV, else by schedule."""
    n = geometry.num_layers
    if f.model_type in ("mamba", "falcon_mamba"):
        return [Mixer.MAMBA] * n
    if f.model_type == "mamba2":
        return [Mixer.MAMBA2] * n
    pattern = f.config.get("hybrid_override_pattern")
    blocks = f.list("block_configs")
    names: list[Any] | None = None
    for name in ("layer_types", "layers_block_type"):
        names = f.list(name)
        if names is not None:
            break
    mixers: list[Mixer] = []
    unknown: list[int] = []
    for i, layer in enumerate(geometry.layers):
        if layer.holds_kv:
            mixers.append(Mixer.ATTENTION)
            continue
        mixer = Mixer.NONE
        if isinstance(pattern, str) and i < len(pattern):
            mixer = Mixer.MAMBA2 if pattern[i] == "M" else Mixer.NONE
        elif blocks is not None:
            attention = blocks[i].get("attention") if isinstance(blocks[i], Mapping) else None
            if isinstance(attention, Mapping) and attention.get("replace_with_linear"):
                mixer = Mixer.LINEAR
        elif names is not None and i < len(names) and isinstance(names[i], str) \
                and names[i] in _MIXER_NAMES:
            mixer = _MIXER_NAMES[names[i]]
        elif f.config.get("attn_layer_period") is not None:  # Jamba
            mixer = Mixer.MAMBA
        elif f.config.get("full_attention_interval") is not None:  # Qwen3-Next
            mixer = Mixer.LINEAR_ATTENTION
        else:
            unknown.append(i)
        mixers.append(mixer)
    if unknown:
        f.notes.append(
            f"{len(unknown)} layer(s) without attention and of no known mixer type: their "
            "token mixer is not counted"
        )
    return mixers


def _mamba(f: _Fields, hidden: int) -> MambaShape:
    if f.model_type in ("mamba", "falcon_mamba", "jamba"):
        expand = f.optional("mamba_expand", "expand", minimum=1) or 2
        d_inner = (f.optional("intermediate_size", minimum=1) if f.model_type != "jamba"
                   else None) or expand * hidden
        rank_found = f.raw("mamba_dt_rank", "time_step_rank") or f.default(
            "mamba_dt_rank", "time_step_rank")
        if rank_found is None or rank_found[1] == "auto":
            dt_rank = math.ceil(hidden / 16)
        else:
            dt_rank = as_int(rank_found[0], rank_found[1])
        return MambaShape(
            version=1,
            d_inner=d_inner,
            d_state=f.required("mamba_d_state", "state_size"),
            d_conv=f.required("mamba_d_conv", "conv_kernel"),
            dt_rank=dt_rank,
            conv_bias=_flag(f, "mamba_conv_bias", "use_conv_bias", default=True),
            proj_bias=_flag(f, "mamba_proj_bias", "use_bias", default=False),
        )
    heads = f.required("mamba_num_heads", "num_heads")
    head_dim = f.required("mamba_head_dim", "head_dim")
    return MambaShape(
        version=2,
        d_inner=heads * head_dim,
        d_state=f.required("ssm_state_size", "state_size", "mamba_d_state"),
        d_conv=f.required("conv_kernel", "mamba_d_conv"),
        num_heads=heads,
        n_groups=f.optional("n_groups", "mamba_n_groups", minimum=1) or 1,
        conv_bias=_flag(f, "use_conv_bias", "mamba_conv_bias", default=True),
        proj_bias=_flag(f, "mamba_proj_bias", "use_bias", default=False),
    )


def _linear_attention(f: _Fields) -> LinearAttentionShape:
    return LinearAttentionShape(
        num_key_heads=f.required("linear_num_key_heads"),
        num_value_heads=f.required("linear_num_value_heads"),
        key_head_dim=f.required("linear_key_head_dim"),
        value_head_dim=f.required("linear_value_head_dim"),
        conv_kernel=f.optional("linear_conv_kernel_dim", minimum=1) or 4,
    )


def _flag(f: _Fields, *names: str, default: bool) -> bool:
    found = f.raw(*names) or f.default(*names)
    return bool(found[1]) if found is not None else default


# ------------------------------------------------------------------------------------ MLPs
def _mlps(f: _Fields, n: int, hidden: int, num_experts: int) -> list[tuple[Mlp, int | None]]:
    """Each layer's MLP kind and, where the layer sets its own, its width."""
    if f.model_type in ("mamba", "falcon_mamba", "mamba2"):
        return [(Mlp.NONE, None)] * n
    pattern = f.config.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        kinds = {"-": Mlp.DENSE, "E": Mlp.MOE}
        return [(kinds.get(c, Mlp.NONE), None) for c in pattern]
    blocks = f.list("block_configs")
    if blocks is not None:
        return [_nas_mlp(block, i, hidden) for i, block in enumerate(blocks)]
    if not num_experts:
        return [(Mlp.DENSE, None)] * n
    return [(Mlp.MOE if moe else Mlp.DENSE, None) for moe in _moe_layers(f, n)]


def _nas_mlp(block: Any, i: int, hidden: int) -> tuple[Mlp, int | None]:
    """Nemotron-NAS ``block_configs[i].ffn``: no-op, a linear, or an MLP of ``ffn_mult``."""
    ffn = block.get("ffn") if isinstance(block, Mapping) else None
    name = f"block_configs[{i}].ffn"
    if not isinstance(ffn, Mapping):
        raise ConfigError(f"{name} is not an object", field=name)
    if ffn.get("no_op"):
        return Mlp.NONE, None
    if ffn.get("replace_with_linear"):
        return Mlp.LINEAR, None
    if ffn.get("intermediate_size") is not None:
        return Mlp.DENSE, as_int(f"{name}.intermediate_size", ffn["intermediate_size"])
    mult = ffn.get("ffn_mult")
    if isinstance(mult, bool) or not isinstance(mult, (int, float)) or \
            not 0 < mult <= MAX_HEADS:
        raise ConfigError(f"{name}.ffn_mult must be a number in (0, {MAX_HEADS:,}], got "
                          f"{shown(mult)}", field=f"{name}.ffn_mult")
    width = int(2 * mult * hidden / 3)
    return Mlp.DENSE, -(-width // NAS_FFN_MULTIPLE) * NAS_FFN_MULTIPLE


def _moe_layers(f: _Fields, n: int) -> list[bool]:
    """Which layers are MoE, by whichever schedule the config uses."""
    explicit = f.list("moe_layers")
    if explicit is not None:  # Llama 4 (resolved form)
        chosen = {as_int("moe_layers[]", i, minimum=0) for i in explicit}
        return [i in chosen for i in range(n)]
    freq = f.config.get("moe_layer_freq")
    if isinstance(freq, list):  # MiMo-V2: one 0/1 flag per layer
        if len(freq) != n:
            raise ConfigError(f"moe_layer_freq lists {len(freq)} layers, the model has {n}",
                              field="moe_layer_freq")
        return [bool(v) for v in freq]
    step = f.optional("interleave_moe_layer_step", minimum=1)
    if step is not None:  # Llama 4: every step-th layer, the last of each group
        return [i % step == step - 1 for i in range(n)]
    sparse_step = f.optional("decoder_sparse_step", minimum=1)
    if sparse_step is not None:  # Qwen2/3-MoE, Qwen3-Next
        dense_only = {as_int("mlp_only_layers[]", i, minimum=0)
                      for i in f.list("mlp_only_layers") or []}
        return [i not in dense_only and (i + 1) % sparse_step == 0 for i in range(n)]
    period = f.optional("expert_layer_period", minimum=1)
    if period is not None:  # Jamba
        offset = f.optional("expert_layer_offset") or 0
        return [i % period == offset for i in range(n)]
    first_dense = f.optional("first_k_dense_replace") or 0  # DeepSeek, GLM-4.5, Kimi K2
    every = f.optional("moe_layer_freq", minimum=1) or 1
    return [i >= first_dense and i % every == 0 for i in range(n)]


def _widths(f: _Fields, hidden: int, num_experts: int, needs_dense: bool
            ) -> tuple[int | None, int]:
    """(dense MLP width, routed expert width)."""
    expert = f.optional("moe_intermediate_size", "ffn_config.ffn_hidden_size",
                       "expert_intermediate_size", minimum=1) if num_experts else None
    mlp_width = f.optional("intermediate_size_mlp", minimum=1)  # Llama 4's dense layers
    base = _dense_width(f, hidden, required=(needs_dense and mlp_width is None)
                        or (bool(num_experts) and expert is None))
    if not num_experts:
        return mlp_width or base, 0
    expert = expert or base
    assert expert is not None  # required above
    return mlp_width or base, expert


def _dense_width(f: _Fields, hidden: int, *, required: bool) -> int | None:
    found = f.raw("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim",
                  "ff_intermediate_size", "d_ff", "inner_hidden_size")
    if found is not None:
        return as_int(*found)
    if f.model_type == "mpt":
        return (f.optional("expansion_ratio", minimum=1) or 4) * hidden
    if f.model_type in FFN_DEFAULTS_TO_4X:
        return 4 * hidden
    found = f.default("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")
    if found is not None:
        return as_int(*found)
    if required:
        raise ConfigError(
            "missing field 'intermediate_size' / 'ffn_hidden_size' / 'n_inner' / 'ffn_dim': "
            "cannot size the MLP", field="intermediate_size")
    return None


def _shared_width(f: _Fields, expert_width: int) -> int:
    total = f.optional("shared_expert_intermediate_size")
    if total:
        return total
    count = f.optional("n_shared_experts", "num_shared_experts")
    if count:
        return count * expert_width
    if f.model_type in SHARED_EXPERT_OF_EXPERT_SIZE:
        return expert_width
    return 0


def _gated(f: _Fields) -> bool:
    if f.model_type == "mpt":
        ffn_type = f.raw("ffn_config.ffn_type")
        return ffn_type is not None and ffn_type[1] == "mptglu"
    return f.model_type not in TWO_MATRIX_MLP


def _positions(f: _Fields) -> int:
    entry = LEARNED_POSITIONS.get(f.model_type)
    if entry is None:
        return 0
    name, extra = entry
    return f.required(name) + extra


_GATED_ACTIVATIONS: Final = frozenset({"silu", "swish", "swiglu"})


def _size(config: Mapping[str, Any], *names: str) -> int:
    for name in names:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 20:
            return value
    return 0


def _encoder_params(outer: Mapping[str, Any], text_hidden: int) -> int:
    """ESTIMATE of a multimodal checkpoint's encoder parameters from ``vision_config`` /
    ``audio_config`` (a transformer encoder as ViT/SigLIP/Whisper build it): per layer
    ``4 h^2`` of attention and an MLP of 2 matrices (3 with a SiLU/SwiGLU activation) of
    ``intermediate_size`` (else ``mlp_ratio x h``, 4 by default), a patch embedding of
    ``channels x patch^2 x temporal_patch`` x h, and a projector ``h x`` the language
    model's width (``out_hidden_size`` where given). Norms, biases and position tables are
    left out. 0 when a config gives no layer count or width."""
    total = 0
    for key in ("vision_config", "audio_config"):
        config = outer.get(key)
        if not isinstance(config, Mapping):
            continue
        h = _size(config, "hidden_size", "embed_dim", "width", "d_model")
        layers = _size(config, "num_hidden_layers", "depth", "num_layers", "encoder_layers")
        if not h or not layers:
            continue
        mlp_ratio = config.get("mlp_ratio")
        ratio = mlp_ratio if isinstance(mlp_ratio, (int, float)) and \
            not isinstance(mlp_ratio, bool) and 0 < mlp_ratio < 64 else 4
        width = _size(config, "intermediate_size", "encoder_ffn_dim") or int(ratio * h)
        act = str(config.get("hidden_act") or config.get("hidden_activation") or "")
        matrices = 3 if act.lower() in _GATED_ACTIVATIONS else 2
        patch = _size(config, "patch_size")
        channels = _size(config, "num_channels", "in_channels", "in_chans") or 3
        temporal = _size(config, "temporal_patch_size") or 1
        out = _size(config, "out_hidden_size") or text_hidden
        total += layers * (4 * h * h + matrices * h * width) + \
            channels * patch * patch * temporal * h + h * out
    return total


def _tied(f: _Fields, outer: Mapping[str, Any]) -> bool:
    for config in (f.config, outer):
        value = config.get("tie_word_embeddings")
        if isinstance(value, bool):
            return value
    if f.model_type in TIED_BY_DEFAULT:
        return True
    if f.model_type in UNTIED_BY_DEFAULT:
        return False
    found = f.default("tie_word_embeddings")
    if found is not None and isinstance(found[1], bool):
        return found[1]
    f.notes.append(
        "no 'tie_word_embeddings' and model_type "
        f"{f.model_type or '(none)'!r} is not known to transformers: embeddings assumed tied "
        "(the PretrainedConfig default remote-code configs inherit)"
    )
    return True
