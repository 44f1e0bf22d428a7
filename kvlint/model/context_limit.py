"""A model's own maximum sequence length, derived from its text config the way an engine
derives it (rule KV703). Pure: the engine's derivation comes in as a :class:`LimitPolicy`
built from the engine table (``engines.toml`` ``context_limit``)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LimitPolicy:
    """How one engine version derives the limit and whether it refuses a longer
    ``max_model_len`` at start."""

    engine: str
    """The engine's display name with its version (``vLLM 0.33.0``)."""
    derivation: str
    """``vllm`` or ``sglang``."""
    keys: tuple[str, ...]
    unscaled_rope_types: tuple[str, ...] = ()
    yarn_from_original: bool = False
    refuses: bool = True
    override_env: str | None = None
    override_values: tuple[str, ...] = ()
    source: str = ""

    def overridden(self, value: str | None) -> bool:
        """Whether ``value`` of :attr:`override_env` turns the refusal off."""
        return value is not None and value.strip().lower() in self.override_values


@dataclass(frozen=True)
class ContextLimit:
    """The longest sequence an engine admits for a model without its override."""

    limit: float
    """The derived limit (a float, as the engine compares it: ``max_position_embeddings`` x
    a RoPE factor need not be whole)."""
    key: str
    """The config field the base length comes from."""
    base: int
    """That field's value (or the rope's ``original_max_position_embeddings``)."""
    rope_type: str | None = None
    """The RoPE scaling type that scaled ``base`` (``None``: not scaled)."""
    factor: float = 1.0
    model_max_length: int | None = None
    """vLLM also admits lengths up to a ``model_max_length`` of the config."""

    @property
    def admitted(self) -> float:
        """The longest max_model_len the engine accepts."""
        return max(self.limit, self.model_max_length or 0)

    def describe(self) -> str:
        """``max_position_embeddings=32768 x rope factor 4.0 (linear) = 131072``."""
        text = f"{self.key}={self.base}"
        if self.rope_type is not None and self.factor != 1:
            text += f" x rope factor {_num(self.factor)} ({self.rope_type}) = " \
                    f"{_num(self.limit)}"
        if self.model_max_length is not None and self.model_max_length > self.limit:
            text += f"; model_max_length={self.model_max_length}"
        return text


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _factor(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def rope_entries(text: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The config's RoPE parameter dicts (one per layer type when nested), from
    ``rope_parameters`` (transformers 5) or the legacy ``rope_scaling``."""
    rope = text.get("rope_parameters")
    if not isinstance(rope, Mapping) or not rope:
        rope = text.get("rope_scaling")
    if not isinstance(rope, Mapping) or not rope:
        return
    values = list(rope.values())
    if values and all(isinstance(v, Mapping) for v in values):
        yield from (v for v in values if v)
    else:
        yield rope


def _rope_type(entry: Mapping[str, Any]) -> str:
    raw = entry.get("rope_type", entry.get("type", "default"))
    kind = str(raw) if isinstance(raw, str) else "default"
    return {"su": "longrope", "mrope": "default"}.get(kind, kind)


def derive(text: Mapping[str, Any], model_type: str, policy: LimitPolicy) -> ContextLimit | None:
    """The limit ``policy``'s engine derives from ``text`` (the text config), or ``None``
    when the config states no length (the engine then takes whatever is given)."""
    if policy.derivation == "sglang":
        return _sglang(text, policy.keys)
    return _vllm(text, model_type, policy)


def _vllm(text: Mapping[str, Any], model_type: str, policy: LimitPolicy) -> ContextLimit | None:
    found = [(k, v) for k in policy.keys if (v := _positive(text.get(k))) is not None]
    if not found:
        return None
    key, base = min(found, key=lambda kv: kv[1])
    model_max = _positive(text.get("model_max_length"))
    if model_max is not None:
        key, base = "model_max_length", model_max
    factor, scaled_by = 1.0, None
    if "gemma3" not in model_type:
        for entry in rope_entries(text):
            kind = _rope_type(entry)
            if kind in policy.unscaled_rope_types:
                continue
            if "factor" in entry:
                value = entry["factor"]
                factor = 1.0 if value is None else (_factor(value) or factor)
                scaled_by = kind
            if kind == "yarn" and policy.yarn_from_original:
                original = _positive(entry.get("original_max_position_embeddings"))
                if original is not None:
                    key, base = "rope original_max_position_embeddings", original
    limit = base * factor
    return ContextLimit(limit, key, base, scaled_by if factor != 1 else None, factor,
                        model_max)


def _sglang(text: Mapping[str, Any], keys: Sequence[str]) -> ContextLimit | None:
    found = next(((k, v) for k in keys if (v := _positive(text.get(k))) is not None), None)
    if found is None:
        return None
    key, base = found
    factor, scaled_by = 1.0, None
    rope = text.get("rope_scaling")
    if not isinstance(rope, Mapping) or not rope:
        rope = text.get("rope_parameters")
    if isinstance(rope, Mapping) and rope and "original_max_position_embeddings" not in rope \
            and _rope_type(rope) != "llama3":
        value = _factor(rope.get("factor", 1))
        if value is not None and value != 1:
            factor, scaled_by = value, _rope_type(rope)
    return ContextLimit(float(int(base * factor)), key, base, scaled_by, factor)
