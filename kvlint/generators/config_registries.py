"""Rebuild ``config_registries.json``: which model types an engine version reads without the
model's own configuration code, generated from the engines' and transformers' wheels, read
with ``ast`` and never imported.

Usage (every argument is a wheel or an unpacked directory)::

    python -m kvlint.generators.config_registries -o kvlint/engines/config_registries.json \\
        --vllm vllm-0.4.1-*.whl vllm-0.5.0-*.whl vllm-0.7.3-*.whl ... vllm-0.34.0-*.whl \\
        --transformers transformers-4.40.0-*.whl transformers-4.57.6-*.whl \\
            transformers-5.24.0-*.whl

What is read:

- vLLM ``vllm/transformers_utils/config.py``: the keys of ``_CONFIG_REGISTRY`` (a dict
  literal, or ``LazyConfigDict(model_type="ConfigClass", ...)`` from 0.11), whether
  ``get_config`` consults it *before* ``AutoConfig.from_pretrained`` (from 0.7.3 among the
  wheels read: a registered type is then read with vLLM's own class and never asks for remote
  code; before, vLLM calls ``AutoConfig`` first, with the user's ``trust_remote_code``, and
  looks at its registry only afterwards), and ``_ARCHITECTURE_TO_MODEL_TYPE`` (0.34: the type
  it gives a config that names none).
- transformers ``models/auto/configuration_auto.py`` (and ``auto_mappings.py`` in 5.x): the
  keys of ``CONFIG_MAPPING_NAMES`` and of its ``update`` calls,
  the model types transformers reads with its own classes. kvlint keeps their union over
  the releases read: a type any of them knows is not judged (the engine's pinned
  transformers may be that one).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kvlint.generators.architectures import Source, _assigned, _str_dict, dumps

SCHEMA = 1
VLLM_CONFIG = "vllm/transformers_utils/config.py"
HF_AUTO = "transformers/models/auto/configuration_auto.py"
HF_AUTO_MAPPINGS = "transformers/models/auto/auto_mappings.py"


def _keys(node: ast.AST | None) -> list[str]:
    """String keys of a dict literal or the keyword names of a call (``LazyConfigDict``)."""
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call):
        out = [kw.arg for kw in node.keywords if kw.arg is not None]
        for arg in node.args:
            out.extend(_keys(arg))
        return out
    return []


def _registry_first(tree: ast.Module) -> bool:
    """Whether the first ``... in _CONFIG_REGISTRY`` test comes before the first
    ``AutoConfig.from_pretrained(`` call in the module's source order."""
    tests = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Compare)
             and any(isinstance(op, ast.In) for op in n.ops)
             and any(isinstance(c, ast.Name) and c.id == "_CONFIG_REGISTRY"
                     for c in n.comparators)]
    calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "from_pretrained"
             and isinstance(n.func.value, ast.Name) and n.func.value.id == "AutoConfig"]
    return bool(tests) and (not calls or min(tests) < min(calls))


def vllm(source: Source) -> tuple[str, dict[str, Any]]:
    text = source.read(VLLM_CONFIG)
    if text is None:
        raise SystemExit(f"{source.name}: no {VLLM_CONFIG}")
    tree = ast.parse(text)
    values = _assigned(tree)
    version = source.version()
    entry: dict[str, Any] = {
        "source": f"{VLLM_CONFIG}@{version}",
        "registry_first": _registry_first(tree),
        "registry": sorted(set(_keys(values.get("_CONFIG_REGISTRY")))),
    }
    by_arch = _str_dict(values.get("_ARCHITECTURE_TO_MODEL_TYPE"))
    if by_arch:
        entry["architecture_to_model_type"] = dict(sorted(by_arch.items()))
    return version, entry


def _mapping_names(node: ast.AST | None) -> list[str]:
    """Model types of a ``CONFIG_MAPPING_NAMES`` value: ``OrderedDict([(type, class), ...])``,
    ``OrderedDict(**{type: class}, **CONFIG_MAPPING_NAMES)`` or a dict literal."""
    if isinstance(node, ast.Call):
        out = [n for arg in node.args for n in _mapping_names(arg)]
        for kw in node.keywords:
            out.extend([kw.arg] if kw.arg is not None else _mapping_names(kw.value))
        return out
    if isinstance(node, ast.List):
        return [e.elts[0].value for e in node.elts if isinstance(e, ast.Tuple) and e.elts
                and isinstance(e.elts[0], ast.Constant) and isinstance(e.elts[0].value, str)]
    return _keys(node)


def _updates(tree: ast.Module) -> list[str]:
    """Keys of every ``CONFIG_MAPPING_NAMES.update(...)`` call of a module."""
    return [n for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "CONFIG_MAPPING_NAMES"
            for arg in node.args for n in _mapping_names(arg)]


def transformers(source: Source) -> tuple[str, list[str]]:
    """``(cite, model types)`` of ``CONFIG_MAPPING_NAMES`` (5.x builds it in
    ``auto_mappings.py`` and adds to it in ``configuration_auto.py``)."""
    names: list[str] = []
    read: list[str] = []
    for module in (HF_AUTO_MAPPINGS, HF_AUTO):
        text = source.read(module)
        if text is None:
            continue
        tree = ast.parse(text)
        names += _mapping_names(_assigned(tree).get("CONFIG_MAPPING_NAMES")) + _updates(tree)
        read.append(module)
    if not names:
        raise SystemExit(f"{source.name}: no CONFIG_MAPPING_NAMES in {HF_AUTO}")
    return f"{' + '.join(read)}@{source.version()}", names


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def build(args: argparse.Namespace) -> dict[str, Any]:
    versions = dict(sorted((vllm(Source(p)) for p in args.vllm),
                           key=lambda item: _release_key(item[0])))
    read = sorted((transformers(Source(p)) for p in args.transformers),
                  key=lambda item: _release_key(item[0].rsplit("@", 1)[1]))
    union = sorted({name for _, names in read for name in names})
    return {
        "schema": SCHEMA,
        "generated_by": "python -m kvlint.generators.config_registries (do not edit by hand)",
        "vllm": {"versions": versions},
        "transformers": {"read": [cite for cite, _ in read], "model_types": union},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvlint.generators.config_registries",
                                     description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--vllm", nargs="+", required=True)
    parser.add_argument("--transformers", nargs="+", required=True)
    args = parser.parse_args(argv)
    Path(args.output).write_text(dumps(build(args)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
