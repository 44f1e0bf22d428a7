"""Recurrent state of Mamba / linear-attention layers (:class:`RecurrentState`).

Which layers keep a state, and its dimensions, read from the config fields the engine's
``get_mamba_state_shape_from_config`` reads (vLLM 0.33.0 ``model_executor/models/*.py``):

* every layer of a pure SSM (``model_type`` ``mamba``, ``falcon_mamba``: Mamba-1;
  ``mamba2``: Mamba-2) and of Falcon-H1, whose layers run attention and Mamba-2 in parallel;
* ``hybrid_override_pattern`` ``M`` layers (Nemotron-H, Nemotron-3): Mamba-2;
* ``layer_types`` / ``layers_block_type`` entries ``mamba``/``mamba2`` (Granite-4 hybrid,
  Zamba2 also ``hybrid``), ``linear_attention`` (Qwen3-Next, Qwen3.5, Olmo-Hybrid: gated delta
  net; configs with Mamba heads, as transformers 5 writes Granite-4 hybrid: Mamba-2;
  Kimi-style configs: KDA) and ``conv`` (LFM2: short conv);
* the non-attention layers of Jamba (``attn_layer_period``: Mamba-1) and of Qwen3-Next
  without ``layer_types`` (``full_attention_interval``: gated delta net);
* ``linear_attn_config.kda_layers`` (Kimi-Linear, Kimi-K3; 1-based layer numbers, as
  vLLM's ``KimiLinearConfig.is_kda_layer``): Kimi delta attention, no KV cache.

The SSM state dtype is set where the engine reads it from the config: Nemotron-H's
``mamba_ssm_cache_dtype`` (vLLM's default for the family ``float32``,
``model_executor/models/config.py`` ``NemotronHForCausalLMConfig``) and Qwen3.5's
``mamba_ssm_dtype`` (``Qwen3_5ForConditionalGenerationConfig``). A state dimension the config
does not give leaves that layer without a state, with a note.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from kvlint.errors import ConfigError
from kvlint.model.geometry import AttentionGeometry, LayerGeometry, LayerKind, RecurrentState

PURE_SSM: Final = {"mamba": "mamba1", "falcon_mamba": "mamba1", "mamba2": "mamba2"}
PARALLEL_HYBRID: Final = {"falcon_h1": "mamba2"}
"""Model types whose every layer runs a Mamba mixer next to its attention."""

MAMBA2_HEAD_FIELDS: Final = ("mamba_num_heads", "mamba_n_heads", "n_mamba_heads")
"""Fields that mark a hybrid's Mamba layers as Mamba-2 (Mamba-1 has no heads)."""

SSM_DTYPE_FIELDS: Final = {
    "nemotron_h": ("mamba_ssm_cache_dtype", "float32"),
    "qwen3_5": ("mamba_ssm_dtype", None),
    "qwen3_5_text": ("mamba_ssm_dtype", None),
    "qwen3_5_moe": ("mamba_ssm_dtype", None),
    "qwen3_5_moe_text": ("mamba_ssm_dtype", None),
}
"""model_type -> (config field vLLM 0.33.0 takes the SSM state dtype from, its default)."""

_NAMED: Final = {"mamba": "mamba", "mamba2": "mamba", "hybrid": "mamba",
                 "linear_attention": "linear", "conv": "short_conv"}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


class _Missing(Exception):
    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


def _int(config: Mapping[str, Any], *names: str) -> int:
    for name in names:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 1 <= value <= 1 << 40 or value != int(value):
            raise ConfigError(f"field '{name}' must be a positive integer, got {_shown(value)}",
                              field=name)
        return int(value)
    raise _Missing(" / ".join(names))


def _expanded(config: Mapping[str, Any], name: str) -> int:
    """``int(expand * hidden_size)`` as the model code computes it."""
    expand = config.get(name)
    if isinstance(expand, bool) or not isinstance(expand, (int, float)) \
            or not 0 < expand <= 1 << 20:
        raise ConfigError(f"field '{name}' must be a positive number, got {_shown(expand)}",
                          field=name)
    return int(expand * _int(config, "hidden_size"))


MAMBA2_CLASSES: Final = {
    "zamba2": ("n_mamba_heads", "mamba_expand", "mamba_headdim"),
}
"""Model types whose transformers config class derives the Mamba-2 head count rather than
reading it (transformers configuration_zamba2.py: ``n_mamba_heads = mamba_expand *
hidden_size // mamba_headdim``): (heads field, expand field, head-dim field)."""

CLASS_DEFAULT_FIELDS: Final = ("mamba_d_state", "mamba_d_conv", "mamba_expand", "hidden_size")
"""State fields a config may leave to its class's default (read from kvlint's table of
transformers' config defaults, as the engine's transformers config would fill them)."""


def _with_class_defaults(config: Mapping[str, Any], model_type: str) -> Mapping[str, Any]:
    """``config`` with the class defaults of the state fields it omits, and the Mamba-2 head
    count its class derives."""
    from kvlint.loaders.config_defaults import TableDefaults
    from kvlint.loaders.missing import MISSING

    table = TableDefaults(fallback=False)
    if not table.knows(model_type):
        return config
    filled = dict(config)
    for name in CLASS_DEFAULT_FIELDS:
        if filled.get(name) is None:
            value = table.value(model_type, config, name)
            if value is not MISSING and value is not None:
                filled[name] = value
    derived = MAMBA2_CLASSES.get(model_type)
    if derived is not None and filled.get(derived[0]) is None:
        heads, expand, head_dim = derived
        with contextlib.suppress(_Missing):
            filled[heads] = _expanded(filled, expand) // _int(filled, head_dim)
    return filled


def _mamba_kind(config: Mapping[str, Any], model_type: str) -> str:
    if model_type in PURE_SSM:
        return PURE_SSM[model_type]
    if any(config.get(f) is not None for f in MAMBA2_HEAD_FIELDS):
        return "mamba2"
    return "mamba1"


def _linear_kind(config: Mapping[str, Any], model_type: str) -> str:
    """``linear_attention`` layers: gated delta net (``linear_num_value_heads``), Mamba where
    the config has Mamba heads (transformers 5 names Granite-4's and Zamba2's Mamba layers
    ``linear_attention``), else Kimi delta attention."""
    if config.get("linear_num_value_heads") is not None:
        return "gdn"
    if any(config.get(f) is not None for f in MAMBA2_HEAD_FIELDS):
        return _mamba_kind(config, model_type)
    return "kda"


def _dims(kind: str, c: Mapping[str, Any], model_type: str) -> tuple[tuple[str, int], ...]:
    """The state dimensions, by the field spellings of each family's vLLM model file."""
    if kind == "mamba1":
        # jamba.py: mamba_expand * hidden_size; mamba.py: intermediate_size
        inner = _expanded(c, "mamba_expand") if c.get("mamba_expand") is not None \
            else _int(c, "intermediate_size")
        return (("intermediate_size", inner),
                ("state_size", _int(c, "mamba_d_state", "state_size")),
                ("conv_kernel", _int(c, "mamba_d_conv", "conv_kernel")))
    if kind == "mamba2":
        heads = _int(c, *MAMBA2_HEAD_FIELDS, "num_heads")
        head_dim = _int(c, "mamba_head_dim", "mamba_d_head", "mamba_headdim", "head_dim")
        if model_type == "nemotron_h":  # nemotron_h.py: mamba_num_heads * mamba_head_dim
            inner = heads * head_dim
        elif c.get("mamba_d_ssm") is not None:  # falcon_h1.py
            inner = _int(c, "mamba_d_ssm")
        elif c.get("mamba_expand") is not None:  # falcon_h1, granitemoehybrid, zamba2
            inner = _expanded(c, "mamba_expand")
        elif c.get("expand") is not None:  # mamba2.py
            inner = _expanded(c, "expand")
        else:
            inner = heads * head_dim
        groups = _int(c, "n_groups", "mamba_n_groups", "mamba_ngroups") \
            if any(c.get(f) is not None for f in ("n_groups", "mamba_n_groups", "mamba_ngroups")) \
            else 1
        return (("intermediate_size", inner), ("n_groups", groups), ("num_heads", heads),
                ("head_dim", head_dim),
                ("state_size", _int(c, "ssm_state_size", "mamba_d_state", "state_size")),
                ("conv_kernel", _int(c, "conv_kernel", "mamba_d_conv")))
    if kind == "gdn":  # qwen3_next.py / qwen3_5.py / olmo_hybrid.py
        return (("num_k_heads", _int(c, "linear_num_key_heads")),
                ("num_v_heads", _int(c, "linear_num_value_heads")),
                ("head_k_dim", _int(c, "linear_key_head_dim")),
                ("head_v_dim", _int(c, "linear_value_head_dim")),
                ("conv_kernel", _int(c, "linear_conv_kernel_dim")))
    if kind == "kda":
        la = c.get("linear_attn_config")
        if isinstance(la, Mapping):  # kimi_k3 KimiLinearForCausalLM
            return (("num_heads", _int(la, "num_heads")), ("head_dim", _int(la, "head_dim")),
                    ("conv_kernel", _int(la, "short_conv_kernel_size")))
        # alice_ai.py (linear_num_key_heads / linear_key_head_dim), glm5next (linear_num_heads)
        return (("num_heads", _int(c, "linear_num_heads", "linear_num_key_heads")),
                ("head_dim", _int(c, "linear_head_dim", "linear_key_head_dim")),
                ("conv_kernel", _int(c, "linear_conv_kernel_dim")))
    # short_conv: lfm2.py conv_dim, lfm2_moe.py hidden_size; conv_L_cache
    return (("conv_dim", _int(c, "conv_dim", "hidden_size")),
            ("conv_kernel", _int(c, "conv_L_cache")))


def _kda_layers(config: Mapping[str, Any], n: int) -> set[int] | None:
    la = config.get("linear_attn_config")
    if not isinstance(la, Mapping) or la.get("kda_layers") is None:
        return None
    numbers = la["kda_layers"]
    if not isinstance(numbers, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= n for x in numbers):
        raise ConfigError(f"field 'linear_attn_config.kda_layers' must be a list of layer "
                          f"numbers 1..{n}", field="linear_attn_config.kda_layers")
    return {x - 1 for x in numbers}


def _names(config: Mapping[str, Any]) -> Sequence[Any] | None:
    for name in ("layer_types", "layers_block_type"):
        value = config.get(name)
        if isinstance(value, list):
            return value
    return None


def _schedule(config: Mapping[str, Any], geometry: AttentionGeometry) -> list[str | None]:
    """Each layer's state family (``mamba``, ``linear``, ``short_conv``, ``kda``) or None."""
    n = geometry.num_layers
    mt = geometry.model_type
    if mt in PURE_SSM or mt in PARALLEL_HYBRID:
        return ["mamba"] * n
    kda = _kda_layers(config, n)
    if kda is not None:
        return ["kda" if i in kda else None for i in range(n)]
    pattern = config.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return ["mamba" if i < len(pattern) and pattern[i] == "M" else None for i in range(n)]
    names = _names(config)
    if names is not None:
        return [_NAMED.get(v) if isinstance(v, str) and i < len(names) else None
                for i, v in enumerate(list(names)[:n])] + [None] * max(0, n - len(names))
    if config.get("attn_layer_period") is not None:
        return [None if layer.attends else "mamba" for layer in geometry.layers]
    if config.get("full_attention_interval") is not None:
        return [None if layer.attends else "linear" for layer in geometry.layers]
    return [None] * n


def refine_recurrent(config: Mapping[str, Any], geometry: AttentionGeometry) -> AttentionGeometry:
    """Attach each recurrent layer's :class:`RecurrentState`."""
    schedule = _schedule(config, geometry)
    if not any(schedule):
        return geometry
    mt = geometry.model_type
    config = _with_class_defaults(config, mt)
    field, default = SSM_DTYPE_FIELDS.get(mt, (None, None))
    dtype = config.get(field) if field else None
    dtype = dtype if isinstance(dtype, str) and dtype and dtype != "auto" else default
    states: dict[str, RecurrentState] = {}
    missing: dict[str, str] = {}
    for family in sorted({f for f in schedule if f}):
        kind = {"mamba": _mamba_kind(config, mt), "linear": _linear_kind(config, mt)}.get(
            family, family)
        try:
            states[family] = RecurrentState(kind, _dims(kind, config, mt), dtype)
        except _Missing as err:
            missing[family] = err.field
    layers: list[LayerGeometry] = []
    for layer, label in zip(geometry.layers, schedule, strict=True):
        state = states.get(label) if label else None
        if state is None:
            layers.append(layer)
        elif label == "kda":
            layers.append(LayerGeometry(LayerKind.NONE, state=state))
        else:
            layers.append(replace(layer, state=state))
    notes = tuple(f"recurrent state of the {family} layers not counted: missing field {name}"
                  for family, name in sorted(missing.items()))
    return replace(geometry, layers=tuple(layers), notes=geometry.notes + notes)
