"""The model-config overrides of an engine command line, read as the engine reads them.

- vLLM ``--hf-overrides`` takes a JSON object (``json.loads`` as the argument's type), or,
  from the versions whose parser reads dotted keys of JSON options (``--hf-overrides.key
  VALUE``, FlexibleArgumentParser), one field per word, a value read as JSON when it is
  JSON and as a string otherwise; several dotted words build one object;
- vLLM ``--rope-scaling`` (a JSON object) and ``--rope-theta`` (a float), until they were
  folded into ``--hf-overrides``, set ``rope_scaling`` / ``rope_theta`` of the config;
- SGLang ``--json-model-override-args`` takes a JSON object.

The result is the canonical JSON text of one object (:func:`kvlint.model.overrides.
canonical_overrides`), located at the last option that set part of it, or an
:class:`Unresolved` when a value is not known (an environment variable the manifest does not
set) or is not what the engine parses (the engine then refuses to start).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Protocol

from kvlint.manifests.base import Located, Unresolved
from kvlint.model.overrides import canonical_overrides

__all__ = ["OVERRIDE_OPTIONS", "config_overrides"]

OVERRIDE_OPTIONS = {
    "vllm": ("--hf-overrides", "--rope-scaling", "--rope-theta"),
    "sglang": ("--json-model-override-args",),
}
"""Engine -> the options (canonical spellings) that override fields of the model config."""

MAX_OVERRIDE_CHARS = 65_536
"""Longer override text is not read (no real override is near it)."""


class _Use(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def canonical(self) -> str | None: ...
    @property
    def values(self) -> tuple[str | None, ...]: ...
    @property
    def line(self) -> int | None: ...


def _json_object(text: str, what: str) -> dict[str, Any] | str:
    """``text`` as a JSON object, or why it is not one."""
    if len(text) > MAX_OVERRIDE_CHARS:
        return f"{what} is longer than {MAX_OVERRIDE_CHARS:,} characters"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return f"{what} {text[:60]!r} is not valid JSON"
    if not isinstance(value, dict):
        return f"{what} is not a JSON object"
    return value


def _leaf(text: str) -> Any:
    """A dotted key's value: JSON when it parses, else the string itself."""
    try:
        return json.loads(text) if len(text) <= MAX_OVERRIDE_CHARS else text
    except (ValueError, RecursionError):
        return text


def _set_path(target: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        nested = target.get(key)
        if not isinstance(nested, dict):
            nested = target[key] = {}
        target = nested
    target[path[-1]] = value


def _merge(target: dict[str, Any], changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


def config_overrides(engine: str, uses: Sequence[_Use]) -> Located[str] | Unresolved | None:
    """The config overrides ``uses`` (an engine command's option words, in order) make, or
    ``None`` when it makes none."""
    options = OVERRIDE_OPTIONS.get(engine)
    if not options:
        return None
    out: dict[str, Any] = {}
    spellings: list[str] = []
    line: int | None = None
    for use in uses:
        if use.canonical not in options:
            continue
        spelling = use.name.split("=", 1)[0]
        value = use.values[0] if use.values else None
        if value is None:
            return Unresolved(reason=f"{spelling} has a value kvlint cannot read, so the "
                              "model config the engine builds is not known", line=use.line,
                              text=spelling)
        dotted = spelling.split(".")[1:] if spelling.startswith("--") else []
        if use.canonical == "--rope-theta":
            try:
                theta = float(value)
            except ValueError:
                theta = math.nan
            if not math.isfinite(theta):
                return Unresolved(reason=f"{spelling} {value!r} is not a number",
                                  line=use.line, text=value)
            _merge(out, {"rope_theta": theta})
        elif dotted:
            _set_path(out, dotted, _leaf(value))
        else:
            parsed = _json_object(value, spelling)
            if isinstance(parsed, str):
                return Unresolved(reason=parsed, line=use.line, text=value[:60])
            _merge(out, {"rope_scaling": parsed} if use.canonical == "--rope-scaling"
                   else parsed)
        spellings.append(spelling)
        line = use.line
    if not spellings:
        return None
    keys = ", ".join(sorted(out)) or "nothing"
    return Located(canonical_overrides(out), line,
                   source=f"{' '.join(dict.fromkeys(spellings))} (overrides {keys})")
