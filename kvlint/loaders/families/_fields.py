"""Field readers shared by the family refiners of this branch (sparse indexer, Gemma, Zamba2):
one-line :class:`~kvlint.errors.ConfigError` messages naming the field, as the generic
resolver writes them. Kept apart from :mod:`kvlint.loaders.hf_config`, which imports the
refiners (importing it back would be circular)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvlint.errors import ConfigError
from kvlint.model.limits import MAX_HEAD_DIM, MAX_HEADS, MAX_LAYERS, MAX_SIZE


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def positive_int(config: Mapping[str, Any], name: str, default: int | None = None, *,
                 minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    """``config[name]`` as an int in ``minimum..maximum`` (``default`` when absent or null),
    else a ConfigError naming the field."""
    value = config.get(name)
    if value is None:
        if default is None:
            raise ConfigError(f"missing field '{name}'", field=name)
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"field '{name}' must be an integer, got {_shown(value)}",
                          field=name)
    if not minimum <= value <= maximum:
        raise ConfigError(f"field '{name}' must be between {minimum} and {maximum:,}, got "
                          f"{_shown(value)}", field=name)
    return int(value)


def head_dim(config: Mapping[str, Any], name: str, default: int | None = None) -> int:
    return positive_int(config, name, default, maximum=MAX_HEAD_DIM)


def head_count(config: Mapping[str, Any], name: str, default: int | None = None) -> int:
    return positive_int(config, name, default, maximum=MAX_HEADS)


def layer_count(config: Mapping[str, Any], name: str, default: int | None = None) -> int:
    return positive_int(config, name, default, minimum=0, maximum=MAX_LAYERS)


def model_type(config: Mapping[str, Any]) -> str:
    value = config.get("model_type")
    return value if isinstance(value, str) else ""
