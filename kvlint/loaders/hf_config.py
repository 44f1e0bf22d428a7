"""Resolve a raw Hugging Face ``config.json`` dict into an :class:`AttentionGeometry`.

docs/design.md §3: read fields by their known spellings, from the text part of multimodal configs;
when a needed field is absent, ask transformers' config class for that ``model_type``
(through :class:`ConfigDefaults`, imported lazily by the caller); a remote-code model with no
KV-head field at all is MHA, as vLLM treats it, and the geometry's notes say so. Anything that
cannot be resolved raises :class:`~kvlint.errors.ConfigError` naming the field.

This module does no I/O and never imports transformers itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from kvlint.errors import ConfigError
from kvlint.loaders.checkpoint_kv import declared_kv_dtype
from kvlint.loaders.families import refine
from kvlint.loaders.missing import MISSING as MISSING
from kvlint.loaders.missing import Missing as Missing
from kvlint.model.geometry import AttentionGeometry, LayerGeometry, LayerKind
from kvlint.model.limits import MAX_HEAD_DIM, MAX_HEADS, MAX_LAYERS, MAX_SIZE

TEXT_CONFIG_KEYS: Final = ("text_config", "llm_config", "language_config")
"""Where multimodal configs keep their language model."""

SSM_MODEL_TYPES: Final = frozenset({"mamba", "mamba2", "falcon_mamba", "rwkv", "xlstm"})
"""Architectures with no attention at all: no KV cache, only a per-sequence state."""

HEAD_DIM_IS_HIDDEN_OVER_HEADS: Final = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "phi", "phi3", "gpt2", "opt", "gptj",
    "gpt_neox", "gpt_neo", "bloom", "codegen", "starcoder2", "cohere", "falcon", "dbrx", "mpt",
    "gpt_bigcode", "stablelm", "olmo", "jamba",
})
"""Model types whose transformers config derives an absent ``head_dim`` as
``hidden_size // num_attention_heads`` (checked against transformers by the test suite),
so resolving it needs no transformers import."""

KV_HEADS_DEFAULT_TO_HEADS: Final = frozenset({
    "llama", "gpt2", "opt", "gptj", "gpt_neox", "gpt_neo", "bloom", "codegen", "phi",
})
"""Model types whose transformers config makes an absent KV-head count equal to the query
heads (or has no such field: the architecture is MHA); checked by the test suite."""

KNOWN_DEFAULTS: Final[dict[tuple[str, str], int]] = {
    ("llama4_text", "no_rope_layer_interval"): 4,
    ("llama4", "no_rope_layer_interval"): 4,
}
"""Defaults of transformers' config classes that kvlint needs often enough to keep here
(importing transformers costs over a second); the test suite checks each against
transformers."""

LAYER_TYPE_KINDS: Final = {
    "full_attention": LayerKind.FULL,
    "attention": LayerKind.FULL,
    "global": LayerKind.FULL,
    "sliding_attention": LayerKind.SLIDING,
    "sliding_window_attention": LayerKind.SLIDING,
    "local": LayerKind.SLIDING,
    "chunked_attention": LayerKind.CHUNKED,
    "compressed_sparse_attention": LayerKind.SLIDING,  # DeepSeek-V4: a window plus compressed
    "heavily_compressed_attention": LayerKind.SLIDING,  # caches (loaders/families/deepseek_v4)
    "indexed_attention": LayerKind.FULL,
    "deepseek_sparse_attention": LayerKind.FULL,
    "hybrid": LayerKind.FULL,
    "linear_attention": LayerKind.NONE,
    "mamba": LayerKind.NONE,
    "mamba2": LayerKind.NONE,
    "conv": LayerKind.NONE,
    "mlp": LayerKind.NONE,
    "moe": LayerKind.NONE,
}
"""Spellings seen in ``layer_types`` / ``layers_block_type``."""


def lookup(config: Mapping[str, Any], *names: str) -> tuple[str, Any] | None:
    """``(name, value)`` of the first of ``names`` present in ``config`` with a non-null
    value; dotted names descend into nested objects (``attn_config.kv_n_heads``)."""
    for name in names:
        value: Any = config
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None:
            return name, value
    return None




class ConfigDefaults(Protocol):
    """Answers questions about model types transformers knows (see ``transformers_defaults``)."""

    def knows(self, model_type: str) -> bool:
        """Whether transformers has a config class for ``model_type``."""
        ...

    def value(self, model_type: str, config: Mapping[str, Any], name: str) -> Any:
        """The attribute ``name`` of ``model_type``'s config class built from ``config``
        (defaults filled in), or :data:`MISSING` when the class has no such attribute."""
        ...

    def text_model_type(self, model_type: str) -> str | None:
        """The model_type of the default text config of multimodal ``model_type``."""
        ...


def note_source(defaults: ConfigDefaults, model_type: str, notes: list[str]) -> None:
    """Add the defaults' provenance note (``note(model_type)``, when they have one: the
    table-backed defaults say when a value came from the installed transformers) once."""
    note = getattr(defaults, "note", None)
    text = note(model_type) if callable(note) else None
    if isinstance(text, str) and text not in notes:
        notes.append(text)


@dataclass
class _Reader:
    """Field access on the text config with aliases, defaults and validation."""

    config: Mapping[str, Any]
    model_type: str
    defaults: ConfigDefaults | None
    notes: list[str] = field(default_factory=list)
    defaulted: dict[str, Any] = field(default_factory=dict)
    """Fields the config lacks whose value is the config class's default (noted)."""
    _known: bool | None = None

    def known(self) -> bool:
        if self._known is None:
            self._known = bool(
                self.model_type and self.defaults and self.defaults.knows(self.model_type)
            )
        return self._known

    def raw(self, *names: str) -> tuple[str, Any] | None:
        return lookup(self.config, *names)

    def from_transformers(self, name: str) -> Any:
        known = KNOWN_DEFAULTS.get((self.model_type, name))
        if known is not None:
            return known
        if not self.known():
            return MISSING
        assert self.defaults is not None
        value = self.defaults.value(self.model_type, self.config, name)
        if value is not MISSING:
            note_source(self.defaults, self.model_type, self.notes)
        return value

    def int(self, *names: str, required: bool = True, minimum: int = 1) -> int | None:
        """A positive integer field: from the config, else transformers' default."""
        found = self.raw(*names)
        if found is None:
            value = self.from_transformers(names[0])
            if value is MISSING or value is None:
                if required:
                    raise ConfigError(
                        f"missing field {spellings(names)}: cannot determine it"
                        + (f" (transformers' {self.model_type!r} config has no default)"
                           if self.known() else ""),
                        field=names[0],
                    )
                return None
            found = (f"{names[0]} (transformers default)", value)
            self.defaulted.setdefault(names[0], value)
        return as_int(found[0], found[1], minimum)

    def flag(self, name: str) -> bool | None:
        value = self.config.get(name)
        return value if isinstance(value, bool) else None


def spellings(names: Sequence[str]) -> str:
    """``'a' / 'b'``: the spellings of a field, for messages."""
    return " / ".join(f"'{n}'" for n in names)


_LIMITED: Final = (
    (MAX_LAYERS, ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "attention_types",
                  "num_nextn_predict_layers")),
    (MAX_HEADS, ("num_attention_heads", "n_head", "n_heads", "num_heads", "num_key_value_heads",
                 "n_head_kv", "num_kv_heads", "multi_query_group_num", "kv_n_heads",
                 "n_heads_in_group", "swa_num_attention_heads", "swa_num_key_value_heads",
                 "n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts",
                 "num_experts_per_tok", "experts_per_token", "moe_top_k",
                 "num_experts_per_token", "n_shared_experts", "num_shared_experts",
                 "linear_num_key_heads", "linear_num_value_heads", "mamba_num_heads",
                 "n_groups", "mamba_n_groups")),
    (MAX_HEAD_DIM, ("head_dim", "kv_channels", "d_head", "v_head_dim", "kv_lora_rank",
                    "qk_rope_head_dim", "qk_nope_head_dim", "swa_head_dim",
                    "swa_v_head_dim", "linear_key_head_dim", "linear_value_head_dim",
                    "mamba_head_dim", "mamba_d_state", "state_size", "ssm_state_size",
                    "mamba_d_conv", "conv_kernel", "linear_conv_kernel_dim")),
)
FIELD_LIMITS: Final[dict[str, int]] = {
    name: limit for limit, names in _LIMITED for name in names
}
"""The largest value kvlint accepts for a field (by its last dotted part, without
``[i]``); every other integer field is bounded by ``MAX_SIZE`` (see kvlint.model.limits)."""


def field_limit(field: str) -> int:
    """The largest value accepted for ``field`` (``block_configs[3].attention.n_heads_in_group``
    is bounded as ``n_heads_in_group``)."""
    return FIELD_LIMITS.get(field.rsplit(".", 1)[-1].split("[", 1)[0], MAX_SIZE)


def shown(value: Any) -> str:
    """``value`` for a one-line message: huge integers by their size, not 4,000 digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def as_int(name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int in ``minimum..maximum`` (default: the field's bound, see
    :func:`field_limit`), else a ConfigError naming the field (``name`` may carry a suffix
    such as ``(transformers default)``)."""
    field = name.split(" ")[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(
            f"field '{name}' must be an integer, got {shown(value)} ({type(value).__name__})",
            field=field,
        )
    if isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"field '{name}' must be an integer, got {value!r}", field=field)
    if value < minimum:
        raise ConfigError(f"field '{name}' must be at least {minimum}, got {shown(value)}",
                          field=field)
    limit = field_limit(field) if maximum is None else maximum
    if value > limit:
        raise ConfigError(f"field '{name}' must be at most {limit:,} (no real model comes "
                          f"close), got {shown(value)}", field=field)
    return int(value)


def under_key(err: ConfigError, key: str | None) -> ConfigError:
    """``err`` with its field prefixed by the text-config key it was read under."""
    if key and err.field and not err.field.startswith(f"{key}."):
        return ConfigError(err.detail.replace(f"'{err.field}'", f"'{key}.{err.field}'"),
                           field=f"{key}.{err.field}")
    return err


def text_part(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """The language-model part of ``config`` and the key it sits under (None: top level)."""
    for key in TEXT_CONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            return sub, key
    return config, None


def resolve_geometry(
    config: Any, *, defaults: ConfigDefaults | None = None
) -> AttentionGeometry:
    """Turn a raw ``config.json`` value into an exact :class:`AttentionGeometry`."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"expected a JSON object, got {type(config).__name__}")
    text, key = text_part(config)
    outer_type = _str(config.get("model_type"))
    if key is None:
        model_type = outer_type
    else:
        model_type = _str(text.get("model_type"))
        if not model_type and outer_type and defaults and defaults.knows(outer_type):
            model_type = defaults.text_model_type(outer_type) or ""
    dtype = config_dtype(config) or config_dtype(text)
    reader = _Reader(text, model_type, defaults)
    try:
        geometry = refine(text, _resolve(reader, dtype))
    except ConfigError as err:
        raise under_key(err, key) from None
    if reader.defaulted:
        listed = ", ".join(f"{k}={v}" for k, v in reader.defaulted.items())
        geometry = replace(geometry, notes=(*geometry.notes, (
            f"not in the config, so transformers' {model_type!r} defaults were used: "
            f"{listed}")))
    architecture = _architecture(config)
    if architecture:
        geometry = replace(geometry, architecture=architecture)
    declared = declared_kv_dtype(config)
    if declared is not None and geometry.default_kv_dtype is None:
        dtype, where = declared
        note = (f"the checkpoint declares an {dtype} KV cache ({where}): vLLM's "
                "--kv-cache-dtype auto uses it")
        geometry = replace(geometry, default_kv_dtype=dtype, notes=(*geometry.notes, note))
    return geometry


def _architecture(config: Mapping[str, Any]) -> str | None:
    """``architectures[0]`` when the config names one."""
    names = config.get("architectures")
    if (isinstance(names, list) and names and isinstance(names[0], str)
            and 0 < len(names[0]) <= 200):
        return names[0]
    return None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def config_dtype(config: Mapping[str, Any]) -> str | None:
    """The dtype a config declares (``torch_dtype`` or ``dtype``)."""
    for name in ("torch_dtype", "dtype"):
        value = config.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _resolve(r: _Reader, dtype: str | None) -> AttentionGeometry:
    num_layers = r.int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    assert num_layers is not None
    if r.model_type in SSM_MODEL_TYPES:
        no_kv = (LayerGeometry(LayerKind.NONE),) * num_layers
        return AttentionGeometry(r.model_type, no_kv, 0, dtype, tuple(r.notes))

    heads = r.int("num_attention_heads", "n_head", "n_heads", "num_heads")
    assert heads is not None
    kinds = _schedule(r, num_layers)
    if r.raw("kv_lora_rank") is not None:
        full = _mla_layer(r, heads)
    else:
        full = _standard_layer(r, heads, kv_per_layer="block_configs" in r.config)
    window = _window(r) if any(k in (LayerKind.SLIDING, LayerKind.CHUNKED) for k, _ in kinds) \
        else None
    layers: list[LayerGeometry] = []
    for kind, override in kinds:
        if kind is LayerKind.NONE:
            layers.append(LayerGeometry(LayerKind.NONE))
            continue
        base = override(full) if override else full
        layers.append(_with_kind(base, kind, window))
    return AttentionGeometry(r.model_type, tuple(layers), heads, dtype, tuple(r.notes))


def _with_kind(layer: LayerGeometry, kind: LayerKind, window: int | None) -> LayerGeometry:
    return replace(layer, kind=kind,
                   window=None if kind is LayerKind.FULL else layer.window or window)


def _window(r: _Reader) -> int:
    for names in (("sliding_window", "sliding_window_size", "window_size"),
                  ("attention_chunk_size",)):
        found = r.raw(*names)
        if found is not None:
            return as_int(found[0], found[1])
    value = r.from_transformers("sliding_window")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        r.defaulted.setdefault("sliding_window", value)
        return value
    raise ConfigError("windowed layers but no 'sliding_window' / 'attention_chunk_size'",
                      field="sliding_window")


# --- per-layer head geometry ----------------------------------------------------------


def _head_dim(r: _Reader, heads: int) -> int:
    found = r.raw("head_dim", "kv_channels", "attn_config.d_head")
    if found is not None:
        return as_int(found[0], found[1])
    if r.model_type not in HEAD_DIM_IS_HIDDEN_OVER_HEADS:
        value = r.from_transformers("head_dim")
        if value is not MISSING and value is not None:
            if r.raw("hidden_size", "n_embd", "d_model", "model_dim") is None or \
                    "num_attention_heads" in r.defaulted:  # not hidden / heads of the config
                r.defaulted.setdefault("head_dim", value)
            return as_int("head_dim (transformers default)", value)
    hidden = r.int("hidden_size", "n_embd", "d_model", "model_dim")
    assert hidden is not None
    if hidden % heads:
        raise ConfigError(
            f"hidden size {hidden} is not divisible by {heads} attention heads and no "
            "'head_dim' is given",
            field="head_dim",
        )
    return as_int("head_dim (hidden_size / num_attention_heads)", hidden // heads)


def _kv_heads(r: _Reader, heads: int) -> int:
    """KV heads of the standard-attention layers, by every spelling configs use."""
    found = r.raw("num_key_value_heads", "n_head_kv")
    if found is not None:
        return as_int(*found)
    if r.model_type == "falcon" and not r.flag("new_decoder_architecture"):
        return 1 if r.config.get("multi_query", True) else heads
    found = r.raw("num_kv_heads")
    if found is not None:
        return as_int(*found)
    if r.config.get("multi_query_attention"):
        found = r.raw("multi_query_group_num")
        if found is not None:
            return as_int(*found)
    attn_type = r.raw("attn_config.attn_type")
    if attn_type is not None and attn_type[1] == "multihead_attention":
        return heads
    if attn_type is not None and attn_type[1] == "multiquery_attention":
        return 1
    found = r.raw("attn_config.kv_n_heads")
    if found is not None:
        return as_int(*found)
    multi_query = r.flag("multi_query")
    if multi_query is not None:
        return 1 if multi_query else heads
    if r.model_type in KV_HEADS_DEFAULT_TO_HEADS:
        return heads
    if r.known():
        value = r.from_transformers("num_key_value_heads")
        if value is MISSING or value is None:
            return heads
        if value != heads or "num_attention_heads" in r.defaulted:  # not just "= heads"
            r.defaulted.setdefault("num_key_value_heads", value)
        return as_int("num_key_value_heads (transformers default)", value)
    r.notes.append(
        f"no KV-head field and model_type {r.model_type or '(none)'!r} is not known to "
        f"transformers: assumed MHA ({heads} KV heads), as vLLM does"
    )
    return heads


def _check_group(heads: int, kv: int, kv_field: str) -> None:
    if kv > heads:
        raise ConfigError(
            f"{kv_field} ({kv}) exceeds num_attention_heads ({heads})", field=kv_field
        )
    if heads % kv:
        raise ConfigError(
            f"num_attention_heads ({heads}) is not a multiple of {kv_field} ({kv})",
            field=kv_field,
        )


def _standard_layer(r: _Reader, heads: int, *, kv_per_layer: bool = False) -> LayerGeometry:
    """The common shape of the standard-attention layers; with ``kv_per_layer`` the KV
    heads come from each layer's own block (set by the schedule)."""
    kv = heads if kv_per_layer else _kv_heads(r, heads)
    _check_group(heads, kv, "num_key_value_heads")
    k_dim = _head_dim(r, heads)
    v_found = r.raw("v_head_dim")
    v_dim = as_int(*v_found) if v_found else k_dim
    return LayerGeometry(LayerKind.FULL, heads, kv, k_dim, v_dim)


def _mla_layer(r: _Reader, heads: int) -> LayerGeometry:
    rank = r.int("kv_lora_rank")
    rope = r.int("qk_rope_head_dim")
    nope = r.int("qk_nope_head_dim")
    assert rank is not None and rope is not None and nope is not None
    kv_found = r.raw("num_key_value_heads")
    kv = as_int(*kv_found) if kv_found else heads
    _check_group(heads, kv, "num_key_value_heads")
    v_found = r.raw("v_head_dim")
    if v_found is not None:
        v_dim = as_int(*v_found)
    else:
        value = r.from_transformers("v_head_dim")
        if value is not MISSING and value is not None:
            v_dim = as_int("v_head_dim (transformers default)", value)
        else:
            hidden = r.int("hidden_size")
            assert hidden is not None
            v_dim = as_int("v_head_dim (hidden_size / num_attention_heads)", hidden // heads)
            r.notes.append(
                f"no 'v_head_dim': assumed hidden_size / num_attention_heads = {v_dim}"
            )
    return LayerGeometry(LayerKind.FULL, heads, kv, nope + rope, v_dim, None, rank, rope,
                         generic_head_dim=_generic_head_dim(r, heads))


def _generic_head_dim(r: _Reader, heads: int) -> int | None:
    """What a generic builder takes as the head dim of an MLA config: its ``head_dim``, else
    ``hidden_size // num_attention_heads`` (lmdeploy/pytorch/configurations/default.py@0.7.3
    and @0.18.0). ``None`` when the config has neither."""
    found = r.raw("head_dim")
    if found is not None:
        return as_int(*found)
    hidden = r.raw("hidden_size")
    return as_int(*hidden) // heads if hidden is not None else None


# --- layer schedules ------------------------------------------------------------------

Override = Callable[[LayerGeometry], LayerGeometry]
Schedule = list[tuple[LayerKind, Override | None]]


def _schedule(r: _Reader, num_layers: int) -> Schedule:
    """Each layer's kind (and head override) from whichever schedule the config uses."""
    for build in (_block_configs, _hybrid_override_pattern, _hybrid_layer_pattern,
                  _layer_types, _linear_attn_layers, _attn_layer_period, _full_attention_interval,
                  _sliding_window_pattern, _gemma2, _chunked, _uniform_window):
        schedule = build(r, num_layers)
        if schedule is not None:
            if len(schedule) != num_layers:
                raise ConfigError(
                    f"the layer schedule describes {len(schedule)} layers but the config has "
                    f"{num_layers}",
                    field=build.__name__.strip("_"),
                )
            return schedule
    return [(LayerKind.FULL, None)] * num_layers


def _list(r: _Reader, name: str) -> list[Any] | None:
    value = r.config.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigError(f"field '{name}' must be a list, got {type(value).__name__}",
                          field=name)
    return value


def _layer_list(name: str, values: Sized) -> None:
    """A per-layer schedule longer than any real model is refused before it is walked."""
    if len(values) > MAX_LAYERS:
        raise ConfigError(f"field '{name}' describes {len(values):,} layers; at most "
                          f"{MAX_LAYERS:,} are accepted (no real model comes close)",
                          field=name)


def _block_configs(r: _Reader, num_layers: int) -> Schedule | None:
    """Nemotron-NAS: per-layer ``attention`` blocks with ``n_heads_in_group`` or ``no_op``."""
    blocks = _list(r, "block_configs")
    if blocks is None:
        return None
    _layer_list("block_configs", blocks)
    schedule: Schedule = []
    for i, block in enumerate(blocks):
        attention = block.get("attention") if isinstance(block, Mapping) else None
        if not isinstance(attention, Mapping):
            raise ConfigError(f"block_configs[{i}] has no 'attention' object",
                              field=f"block_configs[{i}].attention")
        if attention.get("no_op") or attention.get("replace_with_linear"):
            schedule.append((LayerKind.NONE, None))
            continue
        name = f"block_configs[{i}].attention.n_heads_in_group"
        group = as_int(name, attention.get("n_heads_in_group"))

        def per_layer(layer: LayerGeometry, group: int = group, name: str = name) -> LayerGeometry:
            if layer.num_attention_heads % group:
                raise ConfigError(
                    f"{layer.num_attention_heads} attention heads do not split into groups "
                    f"of {group}", field=name)
            return replace(layer, num_kv_heads=layer.num_attention_heads // group)

        schedule.append((LayerKind.FULL, per_layer))
    return schedule


def _hybrid_override_pattern(r: _Reader, num_layers: int) -> Schedule | None:
    """Nemotron-H: one character per layer, ``*`` = attention, ``M`` Mamba, ``-``/``E`` MLP/MoE."""
    pattern = r.config.get("hybrid_override_pattern")
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise ConfigError("field 'hybrid_override_pattern' must be a string",
                          field="hybrid_override_pattern")
    _layer_list("hybrid_override_pattern", pattern)
    return [(LayerKind.FULL if c == "*" else LayerKind.NONE, None) for c in pattern]


def _hybrid_layer_pattern(r: _Reader, num_layers: int) -> Schedule | None:
    """MiMo-V2: ``hybrid_layer_pattern`` 0 = full attention, 1 = sliding window with the
    ``swa_*`` head counts and dims."""
    pattern = _list(r, "hybrid_layer_pattern")
    if pattern is None:
        return None
    _layer_list("hybrid_layer_pattern", pattern)
    swa = _swa_override(r)
    schedule: Schedule = []
    for i, value in enumerate(pattern):
        if value not in (0, 1):
            raise ConfigError(f"hybrid_layer_pattern[{i}] must be 0 or 1, got {value!r}",
                              field="hybrid_layer_pattern")
        schedule.append((LayerKind.SLIDING, swa) if value == 1 else (LayerKind.FULL, None))
    return schedule


def _swa_override(r: _Reader) -> Override | None:
    names = ("swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim",
             "swa_v_head_dim")
    if all(r.config.get(n) is None for n in names):
        return None
    values = {n: (as_int(n, r.config[n]) if r.config.get(n) is not None else None)
              for n in names}

    def swa(layer: LayerGeometry) -> LayerGeometry:
        heads = values["swa_num_attention_heads"] or layer.num_attention_heads
        kv = values["swa_num_key_value_heads"] or layer.num_kv_heads
        _check_group(heads, kv, "swa_num_key_value_heads")
        k_dim = values["swa_head_dim"] or layer.k_head_dim
        v_dim = values["swa_v_head_dim"] or (values["swa_head_dim"] or layer.v_head_dim)
        return replace(layer, num_attention_heads=heads, num_kv_heads=kv, k_head_dim=k_dim,
                       v_head_dim=v_dim)

    return swa


def _kinds_from_names(r: _Reader, name: str, values: list[Any]) -> Schedule:
    _layer_list(name, values)
    schedule: Schedule = []
    for i, value in enumerate(values):
        kind = LAYER_TYPE_KINDS.get(value) if isinstance(value, str) else None
        if kind is None:
            raise ConfigError(
                f"{name}[{i}] is {value!r}; expected one of "
                f"{', '.join(sorted(LAYER_TYPE_KINDS))}", field=name)
        schedule.append((kind, None))
    return schedule


def _layer_types(r: _Reader, num_layers: int) -> Schedule | None:
    for name in ("layer_types", "layers_block_type", "attention_layers"):
        values = _list(r, name)
        if values is not None:
            return _kinds_from_names(r, name, values)
    return _attention_types(r)


def _attention_types(r: _Reader) -> Schedule | None:
    """GPT-Neo: ``attention_types`` = [[["global", "local"], 12]] repeats a pattern."""
    spec = _list(r, "attention_types")
    if spec is None:
        return None
    names: list[Any] = []
    for i, item in enumerate(spec):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)):
            raise ConfigError(f"attention_types[{i}] must be [[kinds...], repeat]",
                              field="attention_types")
        repeat = as_int(f"attention_types[{i}][1]", item[1])
        if len(names) + len(item[0]) * repeat > MAX_LAYERS:
            _layer_list("attention_types", range(len(names) + len(item[0]) * repeat))
        names.extend(item[0] * repeat)
    return _kinds_from_names(r, "attention_types", names)


def _linear_attn_layers(r: _Reader, num_layers: int) -> Schedule | None:
    """Kimi-Linear: ``linear_attn_config.kda_layers`` lists the 1-based indices of the
    Kimi-Delta-Attention layers (a per-sequence state, no KV cache); every other layer is
    full attention. vLLM 0.33.0 transformers_utils/configs/kimi_linear.py ``is_kda_layer``:
    ``(layer_idx + 1) in linear_attn_config["kda_layers"]``; an empty list is no linear
    attention at all (``is_linear_attn``)."""
    config = r.config.get("linear_attn_config")
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise ConfigError("field 'linear_attn_config' must be an object",
                          field="linear_attn_config")
    name = "linear_attn_config.kda_layers"
    kda = config.get("kda_layers")
    if not isinstance(kda, list):
        raise ConfigError(f"field '{name}' must be a list of 1-based layer indices", field=name)
    _layer_list(name, kda)
    linear: set[int] = set()
    for i, value in enumerate(kda):
        index = as_int(f"{name}[{i}]", value, maximum=num_layers)
        linear.add(index - 1)
    return [(LayerKind.NONE if i in linear else LayerKind.FULL, None) for i in range(num_layers)]


def _attn_layer_period(r: _Reader, num_layers: int) -> Schedule | None:
    """Jamba: attention on layers with ``i % attn_layer_period == attn_layer_offset``."""
    if r.config.get("attn_layer_period") is None:
        return None
    period = as_int("attn_layer_period", r.config["attn_layer_period"])
    offset = as_int("attn_layer_offset", r.config.get("attn_layer_offset", 0), minimum=0)
    return [(LayerKind.FULL if i % period == offset else LayerKind.NONE, None)
            for i in range(num_layers)]


def _full_attention_interval(r: _Reader, num_layers: int) -> Schedule | None:
    """Qwen3-Next: full attention every ``full_attention_interval`` layers, linear otherwise."""
    if r.config.get("full_attention_interval") is None:
        return None
    interval = as_int("full_attention_interval", r.config["full_attention_interval"])
    return [(LayerKind.FULL if (i + 1) % interval == 0 else LayerKind.NONE, None)
            for i in range(num_layers)]


def _sliding_window_pattern(r: _Reader, num_layers: int) -> Schedule | None:
    """Gemma 3 / Cohere 2: every ``sliding_window_pattern``-th layer is global."""
    if r.config.get("sliding_window_pattern") is None or r.config.get("sliding_window") is None:
        return None
    pattern = as_int("sliding_window_pattern", r.config["sliding_window_pattern"])
    return [(LayerKind.FULL if (i + 1) % pattern == 0 else LayerKind.SLIDING, None)
            for i in range(num_layers)]


def _gemma2(r: _Reader, num_layers: int) -> Schedule | None:
    """Gemma 2: sliding and global attention alternate, starting with sliding."""
    if r.model_type != "gemma2" or r.config.get("sliding_window") is None:
        return None
    return [(LayerKind.SLIDING if i % 2 == 0 else LayerKind.FULL, None)
            for i in range(num_layers)]


def _chunked(r: _Reader, num_layers: int) -> Schedule | None:
    """Llama 4: chunked attention on RoPE layers, global attention on the NoPE layers
    (``no_rope_layers``, else every ``no_rope_layer_interval``-th layer)."""
    if r.config.get("attention_chunk_size") is None:
        return None
    flags = _list(r, "no_rope_layers")
    if flags is not None:
        _layer_list("no_rope_layers", flags)
    if flags is None or not flags:
        interval_found = r.raw("no_rope_layer_interval")
        interval_value = interval_found[1] if interval_found else \
            r.from_transformers("no_rope_layer_interval")
        if interval_value is MISSING or interval_value is None:
            return [(LayerKind.CHUNKED, None)] * num_layers
        interval = as_int("no_rope_layer_interval", interval_value)
        flags = [int((i + 1) % interval != 0) for i in range(num_layers)]
    return [(LayerKind.CHUNKED if flag else LayerKind.FULL, None) for flag in flags]


def _uniform_window(r: _Reader, num_layers: int) -> Schedule | None:
    """Mistral/Phi-3/Starcoder2: ``sliding_window`` on every layer, unless
    ``use_sliding_window`` is false; Qwen2 applies it from ``max_window_layers`` on."""
    if r.config.get("sliding_window") is None or r.flag("use_sliding_window") is False:
        return None
    if r.flag("use_sliding_window") and r.config.get("max_window_layers") is not None:
        first = as_int("max_window_layers", r.config["max_window_layers"], minimum=0)
        return [(LayerKind.SLIDING if i >= first else LayerKind.FULL, None)
                for i in range(num_layers)]
    return [(LayerKind.SLIDING, None)] * num_layers


CONTEXT_KEYS: Final = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                       "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")
"""Where configs state the longest sequence (vLLM takes the smallest of those present)."""


def max_context_length(config: Mapping[str, Any]) -> int | None:
    """The model's own maximum sequence length, as vLLM derives ``max_model_len`` by
    default: the smallest positive integer among :data:`CONTEXT_KEYS` of the text config.
    RoPE-scaling extensions that some engines apply on top are not modelled."""
    text, _ = text_part(config)
    values = [v for k in CONTEXT_KEYS
              if isinstance(v := text.get(k), int) and not isinstance(v, bool)
              and 0 < v <= MAX_SIZE]
    return min(values) if values else None
