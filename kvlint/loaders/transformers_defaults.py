"""Defaults of model types transformers knows, read from its config classes.

transformers is imported here lazily, only when a config lacks a field kvlint needs; its
import costs seconds, so ``kvlint check`` on a complete config never reaches this module's
imports.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from typing import Any

from kvlint.cache import cache_dir
from kvlint.errors import ConfigError
from kvlint.loaders.missing import MISSING

_IGNORED_KEYS = frozenset({"model_type", "architectures", "auto_map", "transformers_version",
                           "_name_or_path"})


@cache
def _config_mapping() -> Mapping[str, Any] | None:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        from transformers import CONFIG_MAPPING
    except ImportError:  # pragma: no cover - transformers is a runtime dependency
        return None
    mapping: Mapping[str, Any] = CONFIG_MAPPING
    return mapping


@cache
def known_model_types() -> frozenset[str]:
    """Model types transformers has config classes for.

    Importing transformers costs about a second, so the list is kept in kvlint's cache dir,
    keyed by the installed transformers version; only the first run per version pays.
    """

    version = _version()
    if version is None:  # pragma: no cover - a runtime dependency
        return frozenset()
    file = cache_dir() / f"transformers-{version}-model-types.json"
    try:
        return frozenset(json.loads(file.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    mapping = _config_mapping()
    types = frozenset(mapping) if mapping is not None else frozenset()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(sorted(types)), encoding="utf-8")
    except OSError:
        pass
    return types


def _version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:  # pragma: no cover - a runtime dependency
        return None


_ATTRIBUTES: dict[str, frozenset[str]] = {}


def known_attributes(model_type: str) -> frozenset[str]:
    """The attributes a default ``model_type`` config object has.

    Configs are resolved against many alias spellings, most of which a given config class
    does not have; knowing the attribute names (kept in kvlint's cache dir per transformers
    version, like the model types) answers those lookups without importing transformers.
    """
    if model_type in _ATTRIBUTES:
        return _ATTRIBUTES[model_type]
    file = cache_dir() / f"transformers-{_version()}-attributes.json"
    try:
        table: dict[str, list[str]] = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        table = {}
    if model_type not in table:
        mapping = _config_mapping()
        try:
            names = sorted(n for n in dir(mapping[model_type]()) if not n.startswith("_")) \
                if mapping is not None else []
        except Exception:
            names = []
        table[model_type] = names
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps(table), encoding="utf-8")
        except OSError:
            pass
    _ATTRIBUTES[model_type] = frozenset(table[model_type])
    return _ATTRIBUTES[model_type]


class TransformersDefaults:
    """:class:`~kvlint.loaders.hf_config.ConfigDefaults` backed by transformers' config classes.

    The config object is built from the raw config (so derived defaults such as
    ``num_key_value_heads = num_attention_heads`` follow transformers' own logic); if
    transformers rejects the raw values, the class defaults are used.
    """

    def __init__(self) -> None:
        self._built: dict[tuple[str, int], Any] = {}

    def knows(self, model_type: str) -> bool:
        return model_type in known_model_types()

    def value(self, model_type: str, config: Mapping[str, Any], name: str) -> Any:
        attributes = known_attributes(model_type)
        if attributes and name not in attributes:
            return MISSING
        built = self._build(model_type, config)
        return getattr(built, name, MISSING)

    def text_model_type(self, model_type: str) -> str | None:
        mapping = _config_mapping()
        if mapping is None:  # pragma: no cover - a runtime dependency
            return None
        try:
            text = mapping[model_type]().get_text_config()
        except Exception:
            return None
        value = getattr(text, "model_type", None)
        return value if isinstance(value, str) and value != model_type else None

    def _build(self, model_type: str, config: Mapping[str, Any]) -> Any:
        key = (model_type, id(config))
        if key not in self._built:
            mapping = _config_mapping()
            assert mapping is not None
            cls = mapping[model_type]
            kwargs = {k: v for k, v in config.items() if k not in _IGNORED_KEYS}
            try:
                self._built[key] = cls(**kwargs)
            except Exception:
                try:
                    self._built[key] = cls()
                except Exception as err:
                    raise ConfigError(
                        f"transformers could not build its {model_type!r} config: {err}"
                    ) from None
        return self._built[key]
