"""Generated data: ``kvlint/loaders/config_defaults.json``, the defaults of transformers'
config classes for the fields kvlint's loaders read, so ``kvlint check`` needs no transformers.

``python -m kvlint.generators.defaults [ROOT]`` rewrites the file from the installed
transformers; ``python -m kvlint.generators.defaults --check`` regenerates it in memory and
exits 1 when the shipped file differs (CI's non-blocking job runs it against the newest
transformers, to say when a regeneration is due). The sync test does the same at the
transformers version the test environment pins (``requirements/dev-constraints.txt``), the
one the table records.

What is recorded, per model type transformers has a config class for (and per text
sub-config model type of a multimodal class, which may not be registered on its own):

* ``values``: a field whose default does not depend on other arguments (the attribute of
  the default-built object equals the ``__init__`` argument's default);
* ``derived``: a field the class computes from other arguments, as one of the forms the
  generator verified by building the class with changed inputs (``copy`` of an input,
  ``div``/``prod`` of two inputs, ``ceil_div``/``mul`` of one by a constant, ``flag``: one
  value per state of a boolean), each input with its own default; ``{"unknown": ...}`` when
  no form reproduced transformers;
* ``aliases``: transformers' ``attribute_map`` (an attribute name -> the argument it stores);
* ``text``: the model type of the default text sub-config of a multimodal class.

The fields are the ones kvlint's loaders ask defaults for, read from the source of
:mod:`kvlint.loaders.hf_config` and :mod:`kvlint.loaders.shape` (the names given to
``from_transformers``, ``int``, ``default``, ``required``, ``optional`` and ``_flag``).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).parents[1] / "loaders" / "config_defaults.json"
_LOADERS = Path(__file__).parents[1] / "loaders"
_CALLS = {"from_transformers", "default", "required", "optional", "_flag"}


def asked_fields() -> tuple[str, ...]:
    """Every field name kvlint's loaders ask transformers' defaults for (sorted)."""
    from kvlint.loaders.shape import LEARNED_POSITIONS

    names: set[str] = {name for name, _ in LEARNED_POSITIONS.values()}
    for module in ("hf_config.py", "shape.py"):
        tree = ast.parse((_LOADERS / module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else \
                func.id if isinstance(func, ast.Name) else ""
            literals = [a.value for a in node.args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if called == "int" and isinstance(func, ast.Attribute) and literals:
                names.add(literals[0])  # _Reader.int asks defaults for its first name only
            elif called in _CALLS:
                names.update(literals)
    return tuple(sorted(n for n in names if "." not in n))


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    if hasattr(value, "to_dict"):  # a nested sub-config
        return _jsonable(value.to_dict())
    raise TypeError(f"not JSON-able: {type(value).__name__}")


_ABSENT = object()


def _get(obj: Any, name: str) -> Any:
    """``obj.name``, or ``_ABSENT`` when the object has none (or refuses to give one, as
    transformers' per-layer heterogeneous configs do)."""
    try:
        return getattr(obj, name)
    except Exception:
        return _ABSENT


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Class:
    """One config class: its argument defaults, its default object, builds with changes."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls
        try:
            self.params = {
                name: p.default for name, p in inspect.signature(cls).parameters.items()
                if p.default is not inspect.Parameter.empty
            }
        except (TypeError, ValueError):
            self.params = {}
        self.aliases: dict[str, str] = dict(getattr(cls, "attribute_map", None) or {})
        self.base = cls()

    def argument(self, name: str) -> str:
        return self.aliases.get(name, name)

    def build(self, **changes: Any) -> Any:
        try:
            return self.cls(**changes)
        except Exception:
            return None

    def int_inputs(self) -> Iterator[tuple[str, int]]:
        for name in self.params:
            value = _get(self.base, name)
            if _is_int(value) and value > 0:
                yield name, value

    def bool_inputs(self) -> Iterator[tuple[str, bool]]:
        for name in self.params:
            value = _get(self.base, name)
            if isinstance(value, bool):
                yield name, value


def _candidates(c: _Class, field: str, v0: int) -> Iterator[tuple[dict[str, Any], dict[str, int],
                                                                  int]]:
    """(form, inputs to change, expected value) for each form that explains ``v0``."""
    ints = [(n, v) for n, v in c.int_inputs() if n != c.argument(field)]
    for name, value in ints:
        if value == v0:
            yield {"copy": [name, value]}, {name: value * 2}, v0 * 2
    for a, av in ints:
        for b, bv in ints:
            if a != b and bv > 1 and av // bv == v0 and av % bv == 0:
                yield {"div": [[a, av], [b, bv]]}, {a: av * 4, b: bv * 2}, (av * 4) // (bv * 2)
    for a, av in ints:
        for b, bv in ints:
            if a < b and av * bv == v0:
                yield {"prod": [[a, av], [b, bv]]}, {a: av * 2, b: bv * 3}, v0 * 6
    for name, value in ints:
        if v0 > 0 and value > v0:
            k = round(value / v0)
            if k > 1 and math.ceil(value / k) == v0:
                changed = value * 2 + 1
                yield {"ceil_div": [[name, value], k]}, {name: changed}, math.ceil(changed / k)
        if v0 > value and v0 % value == 0:
            k = v0 // value
            yield {"mul": [[name, value], k]}, {name: value * 2}, value * 2 * k


def _derivation(c: _Class, field: str, v0: Any) -> dict[str, Any]:
    """The verified form of a derived default, else ``{"unknown": ...}``."""
    if _is_int(v0):
        for form, changes, expected in _candidates(c, field, v0):
            built = c.build(**changes)
            if built is not None and _get(built, field) == expected:
                return form
    for name, state in c.bool_inputs():
        if name == c.argument(field):
            continue
        built = c.build(**{name: not state})
        if built is None:
            continue
        other = _get(built, field)
        if other is not _ABSENT and other != v0:
            try:
                return {"flag": [name, state, _jsonable(v0), _jsonable(other)]}
            except TypeError:
                break
    return {"unknown": _jsonable(v0) if _is_int(v0) or v0 is None else None}


def _entry(c: _Class, fields: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    derived: dict[str, Any] = {}
    for field in fields:
        v0 = _get(c.base, field)
        if v0 is _ABSENT:
            continue
        argument = c.argument(field)
        stored = argument in c.params and c.params[argument] == v0 and \
            type(c.params[argument]) is type(v0)
        try:
            if stored:
                values[field] = _jsonable(v0)
                continue
        except TypeError:
            pass
        derived[field] = _derivation(c, field, v0)
    entry: dict[str, Any] = {"values": values}
    if derived:
        entry["derived"] = derived
    if c.aliases:
        entry["aliases"] = c.aliases
    return entry


def generate() -> dict[str, Any]:
    """The table, from the installed transformers (imported here)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    import logging
    import warnings

    import transformers
    from transformers import CONFIG_MAPPING

    logging.getLogger("transformers").setLevel(logging.ERROR)
    fields = asked_fields()
    types: dict[str, Any] = {}
    texts: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type in sorted(CONFIG_MAPPING):
            try:
                c = _Class(CONFIG_MAPPING[model_type])
            except Exception:
                continue  # a class that cannot build its own defaults has none to give
            entry = _entry(c, fields)
            try:
                text = c.base.get_text_config()
            except Exception:
                text = c.base
            text_type = getattr(text, "model_type", None)
            if text is not c.base and isinstance(text_type, str) and text_type != model_type:
                entry["text"] = text_type
                if text_type not in CONFIG_MAPPING and text_type not in texts:
                    with contextlib.suppress(Exception):
                        texts[text_type] = _entry(_Class(type(text)), fields)
            types[model_type] = entry
    for text_type, entry in texts.items():
        types.setdefault(text_type, entry)
    return {"generator": "python -m kvlint.generators.defaults",
            "transformers": transformers.__version__,
            "fields": list(fields),
            "types": dict(sorted(types.items()))}


def render(table: dict[str, Any]) -> str:
    """Compact JSON with one model type per line (reviewable diffs)."""
    def dump(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)

    head = ",\n".join(f"{dump(k)}:{dump(v)}" for k, v in table.items() if k != "types")
    rows = ",\n".join(f"{dump(k)}:{dump(v)}" for k, v in table["types"].items())
    return f"{{{head},\n\"types\":{{\n{rows}\n}}}}\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--check"]:
        import transformers

        shipped = json.loads(DATA_FILE.read_text(encoding="utf-8"))["transformers"]
        if DATA_FILE.read_text(encoding="utf-8") == render(generate()):
            print(f"{DATA_FILE.name} is in sync with transformers {transformers.__version__}")
            return 0
        print(f"{DATA_FILE.name} (from transformers {shipped}) differs from what transformers "
              f"{transformers.__version__} gives: pin the new version in "
              "requirements/dev-constraints.txt and run `python -m kvlint.generators.defaults .`")
        return 1
    root = Path((args or ["."])[0])
    target = root / "kvlint" / "loaders" / DATA_FILE.name
    target.write_text(render(generate()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
