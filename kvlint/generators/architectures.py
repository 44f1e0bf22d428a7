"""Rebuild ``architectures.json`` (which model architectures each engine version serves) from
the engines' own artefacts, read with ``ast`` and never imported.

Usage (every argument is a wheel, an unpacked directory or a single source file)::

    python -m kvlint.generators.architectures -o kvlint/engines/architectures.json \\
        --vllm vllm-0.8.5-*.whl vllm-0.11.0-*.whl vllm-0.33.0-*.whl vllm-0.34.0-*.whl \\
        --sglang sglang-0.4.6.post1-*.whl sglang-0.5.5.post3-*.whl sglang-0.5.23-*.whl \\
        --lmdeploy lmdeploy-0.7.3-*.whl lmdeploy-0.18.0-*.whl \\
        --tgi 3.3.7=server/text_generation_server/models/__init__.py@v3.3.7 \\
        --trtllm 'main@065ff9e9=_arch_index.py' \\
        --trtllm-legacy 'main@02267d3d=models/__init__.py' \\
        --llamacpp 'llama-cpp-python 0.3.36=vendor/llama.cpp/convert_hf_to_gguf.py' \\
        --transformers 5.22.2=transformers-5.22.2-*.whl 5.20.2=.../site-packages/transformers \\
            5.19.0=...

(vLLM 0.34.0 and transformers 5.22.2 were added to the file by running ``vllm()`` and
``transformers()`` on those two wheels and merging with ``_by_version``/``_mark_judged`` and
``dumps``: the entries a full run gives; so were LMDeploy 0.9.2, 0.10.2, 0.12.3, 0.14.0 and
0.16.0, by ``lmdeploy()`` on their wheels, ``pip download --no-deps``.)

What is read:

- vLLM ``vllm/model_executor/models/registry.py``: ``_TEXT_GENERATION_MODELS`` and
  ``_MULTIMODAL_MODELS`` (served), the pooling registries (``_EMBEDDING_MODELS``,
  ``_CROSS_ENCODER_MODELS``, ``_LATE_INTERACTION_MODELS``, ``_REWARD_MODELS``,
  ``_TOKEN_CLASSIFICATION_MODELS``, ``_SEQUENCE_CLASSIFICATION_MODELS``),
  ``_TRANSFORMERS_SUPPORTED_MODELS`` (archs vLLM routes to its Transformers modeling backend)
  and ``_PREVIOUSLY_SUPPORTED_MODELS`` (arch -> last version that served it).
- SGLang ``sglang/srt/models/*.py``: the class names of each module's ``EntryClass``
  (the registry keys them by ``__name__``); whether ``sglang/srt/models/transformers.py``
  (the Transformers fallback) exists.
- LMDeploy: ``MODULE_MAP`` of ``lmdeploy/pytorch/models/module_map.py`` (PyTorch engine),
  ``SUPPORTED_ARCHS`` of ``lmdeploy/turbomind/supported_models.py`` (TurboMind) and
  ``REMOVED_MODEL_MAP`` where the version has it.
- TGI ``server/text_generation_server/models/__init__.py``: the ``type`` of every
  ``ModelType`` member (TGI dispatches on ``config.model_type``, not the architecture).
- TensorRT-LLM: ``MODEL_ARCH_TO_MODULE`` of ``tensorrt_llm/_torch/models/_arch_index.py``
  (PyTorch backend, ``architectures[0]``) and ``MODEL_MAP`` of
  ``tensorrt_llm/models/__init__.py`` (TensorRT backend).
- llama.cpp ``convert_hf_to_gguf.py``: the names of every ``@ModelBase.register(...)``.
- transformers (the version vLLM's requirement resolves to): every class exported by a
  ``models/*/modeling_*.py`` ``__all__`` whose name ends like a generative head, with vLLM's
  compatibility test (``is_backend_compatible()``, i.e. ``_supports_attention_backend``, or
  ``_can_set_attn_implementation()``: no ``*Attention*(nn.Module)`` class in the module, or
  the module calls ``ALL_ATTENTION_FUNCTIONS.get_interface(``), and the model types of
  ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` (``models/auto/modeling_auto.py``).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

SCHEMA = 1
_EMPTY = ast.Dict(keys=[], values=[])

VLLM_SERVED = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")
VLLM_POOLING = ("_EMBEDDING_MODELS", "_CROSS_ENCODER_MODELS", "_LATE_INTERACTION_MODELS",
                "_REWARD_MODELS", "_TOKEN_CLASSIFICATION_MODELS",
                "_SEQUENCE_CLASSIFICATION_MODELS")
GENERATIVE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel")


class Source:
    """A wheel, a directory or one file, read by relative path."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._zip = zipfile.ZipFile(self.path) if self.path.suffix == ".whl" else None

    @property
    def name(self) -> str:
        return self.path.name

    def version(self) -> str:
        """The version in a wheel's file name (``vllm-0.8.5-cp38-...whl`` -> ``0.8.5``)."""
        return self.path.name.split("-")[1]

    def names(self, prefix: str) -> list[str]:
        if self._zip is not None:
            return sorted(n for n in self._zip.namelist() if n.startswith(prefix))
        base = self.path
        return sorted(str(p.relative_to(base)) for p in base.rglob("*")
                      if str(p.relative_to(base)).startswith(prefix) and p.is_file())

    def requirement(self, dist: str) -> str | None:
        """The ``Requires-Dist: <dist>`` specifier of a wheel's METADATA (markers dropped)."""
        if self._zip is None:
            return None
        meta = next((n for n in self._zip.namelist() if n.endswith(".dist-info/METADATA")), None)
        text = self.read(meta) if meta else None
        for line in (text or "").splitlines():
            match = re.match(rf"Requires-Dist: {dist}\s*([^;]*)", line)
            if match:
                return match.group(1).strip().strip("()")
        return None

    def read(self, name: str | None = None) -> str | None:
        if self._zip is not None:
            try:
                return self._zip.read(str(name)).decode("utf-8-sig")
            except KeyError:
                return None
        target = self.path if name is None else self.path / name
        return target.read_text(encoding="utf-8-sig") if target.is_file() else None


def _str_keys(node: ast.AST) -> list[str]:
    """String keys of a dict literal / ``dict(k=...)`` call (``**`` spreads skipped)."""
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "dict":
        keys = [kw.arg for kw in node.keywords if kw.arg is not None]
        for arg in node.args:
            keys.extend(_str_keys(arg))
        return keys
    return []


def _assigned(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level ``NAME = value`` / ``NAME: T = value`` of a module."""
    out: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and stmt.value is not None:
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                stmt.value is not None:
            out[stmt.target.id] = stmt.value
    return out


def _str_dict(node: ast.AST | None) -> dict[str, str]:
    if not isinstance(node, ast.Dict):
        return {}
    return {k.value: v.value for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
            and isinstance(v, ast.Constant) and isinstance(v.value, str)}


REGISTRY = "vllm/model_executor/models/registry.py"


def vllm(source: Source) -> tuple[str, dict[str, Any]]:
    text = source.read(REGISTRY)
    if text is None:
        raise SystemExit(f"{source.name}: no {REGISTRY}")
    values = _assigned(ast.parse(text))
    served = sorted({k for name in VLLM_SERVED for k in _str_keys(values.get(name, _EMPTY))})
    pooling = sorted({k for name in VLLM_POOLING for k in _str_keys(values.get(name, _EMPTY))}
                     - set(served))
    routed = sorted(_str_keys(values.get("_TRANSFORMERS_SUPPORTED_MODELS", _EMPTY)))
    removed = _str_dict(values.get("_PREVIOUSLY_SUPPORTED_MODELS"))
    version = source.version()
    present = [n for n in (*VLLM_SERVED, *VLLM_POOLING, "_TRANSFORMERS_SUPPORTED_MODELS",
                           "_PREVIOUSLY_SUPPORTED_MODELS") if n in values]
    entry: dict[str, Any] = {
        "source": f"{REGISTRY}@{version} ({source.name}): {', '.join(present)}",
        "served": served,
        "pooling": pooling,
        "transformers_backend": routed,
        "removed": dict(sorted(removed.items())),
        "transformers_fallback": True,
        "transformers_requirement": source.requirement("transformers"),
        "transformers_test": "vllm",
    }
    return version, entry


def _entry_names(node: ast.AST, aliases: dict[str, str]) -> list[str]:
    if isinstance(node, ast.Name):
        return [aliases.get(node.id, node.id)]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.List | ast.Tuple):
        return [n for elt in node.elts for n in _entry_names(elt, aliases)]
    if isinstance(node, ast.BinOp):
        return _entry_names(node.left, aliases) + _entry_names(node.right, aliases)
    return []


def _entry_classes(text: str) -> list[str]:
    """The class names a module's ``EntryClass`` registers (``import X as Y`` resolved)."""
    tree = ast.parse(text)
    aliases = {a.asname: a.name for stmt in ast.walk(tree)
               if isinstance(stmt, ast.ImportFrom) for a in stmt.names if a.asname}
    names: list[str] = []
    for stmt in ast.walk(tree):
        targets = (stmt.targets if isinstance(stmt, ast.Assign) else
                   [stmt.target] if isinstance(stmt, ast.AugAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in targets):
            assert isinstance(stmt, ast.Assign | ast.AugAssign)
            names.extend(_entry_names(stmt.value, aliases))
    return names


def sglang(source: Source) -> tuple[str, dict[str, Any]]:
    prefix = "sglang/srt/models/"
    served: set[str] = set()
    files = [n for n in source.names(prefix) if n.endswith(".py")]
    for name in files:
        text = source.read(name)
        if text and "EntryClass" in text:
            served.update(_entry_classes(text))
    version = source.version()
    fallback = f"{prefix}transformers.py" in files
    return version, {
        "source": f"{prefix}*.py EntryClass@{version} ({source.name}; {len(files)} modules)",
        "served": sorted(served - {"TransformersForCausalLM"}),
        "transformers_fallback": fallback,
        "transformers_requirement": source.requirement("transformers"),
        "transformers_test": "sglang",
    }


def _map_updates(text: str, name: str) -> list[str]:
    """Keys of ``NAME = {...}``/``dict(...)`` and every ``NAME.update({...})``."""
    tree = ast.parse(text)
    keys = _str_keys(_assigned(tree).get(name, _EMPTY))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "update" and isinstance(node.func.value, ast.Name) and \
                node.func.value.id == name:
            for arg in node.args:
                keys.extend(_str_keys(arg))
            keys.extend(kw.arg for kw in node.keywords if kw.arg)
    return keys


def lmdeploy(source: Source) -> tuple[str, dict[str, Any]]:
    pytorch = "lmdeploy/pytorch/models/module_map.py"
    turbomind = "lmdeploy/turbomind/supported_models.py"
    torch_text, tm_text = source.read(pytorch), source.read(turbomind)
    if torch_text is None or tm_text is None:
        raise SystemExit(f"{source.name}: no {pytorch} or {turbomind}")
    torch_archs = set(_map_updates(torch_text, "MODULE_MAP"))
    tm_archs = set(_map_updates(tm_text, "SUPPORTED_ARCHS"))
    removed = _str_keys(_assigned(ast.parse(torch_text)).get("REMOVED_MODEL_MAP", _EMPTY))
    version = source.version()
    return version, {
        "source": f"{pytorch} MODULE_MAP + {turbomind} SUPPORTED_ARCHS@{version} "
                  f"({source.name})",
        "served": sorted(torch_archs | tm_archs),
        "turbomind": sorted(tm_archs),
        "removed_unversioned": sorted(set(removed) - torch_archs - tm_archs),
        "transformers_fallback": False,
    }


def tgi(version: str, source: Source, cite: str) -> tuple[str, dict[str, Any]]:
    text = source.read()
    if text is None:
        raise SystemExit(f"{cite}: not readable")
    types: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == "ModelType":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
                    for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
                        if isinstance(k, ast.Constant) and k.value == "type" and \
                                isinstance(v, ast.Constant) and isinstance(v.value, str):
                            types.add(v.value)
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and \
                node.left.id == "model_type":  # get_model's literal spellings ("RefinedWeb")
            for comp in node.comparators:
                elts = comp.elts if isinstance(comp, ast.List | ast.Tuple) else [comp]
                types.update(e.value for e in elts
                             if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return version, {
        "source": f"{cite}: ModelType types and the model_type literals get_model compares "
                  f"(TGI dispatches on config.model_type)",
        "model_types": sorted(types),
        "transformers_fallback": True,
    }


def trtllm(version: str, pytorch: Source, pytorch_cite: str, legacy: Source | None,
           legacy_cite: str) -> tuple[str, dict[str, Any]]:
    text = pytorch.read()
    if text is None:
        raise SystemExit(f"{pytorch_cite}: not readable")
    served = _str_keys(_assigned(ast.parse(text)).get("MODEL_ARCH_TO_MODULE", _EMPTY))
    entry: dict[str, Any] = {
        "source": f"{pytorch_cite}: MODEL_ARCH_TO_MODULE (PyTorch backend, architectures[0])",
        "served": sorted(served),
        "transformers_fallback": False,
    }
    if legacy is not None:
        legacy_text = legacy.read() or ""
        archs = _str_keys(_assigned(ast.parse(legacy_text)).get("MODEL_MAP", _EMPTY))
        entry["tensorrt_backend"] = sorted(set(archs) - set(served))
        entry["source"] += f"; {legacy_cite}: MODEL_MAP (TensorRT backend, trtllm-build)"
    return version, entry


def llamacpp(version: str, source: Source, cite: str) -> tuple[str, dict[str, Any]]:
    """``TEXT_MODEL_MAP`` of ``conversion/__init__.py`` (llama.cpp's split converter:
    ``get_model_class`` refuses a name it lacks), else the ``@ModelBase.register(...)``
    names of a single-file ``convert_hf_to_gguf.py``."""
    package = source.read("conversion/__init__.py")
    if package is not None:
        names = set(_str_keys(_assigned(ast.parse(package)).get("TEXT_MODEL_MAP", _EMPTY)))
        what = "conversion/__init__.py TEXT_MODEL_MAP (get_model_class)"
    else:
        text = source.read("convert_hf_to_gguf.py")
        if text is None:
            raise SystemExit(f"{cite}: no conversion/__init__.py or convert_hf_to_gguf.py")
        names = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) \
                            and dec.func.attr == "register":
                        names.update(a.value for a in dec.args if isinstance(a, ast.Constant)
                                     and isinstance(a.value, str))
        what = "convert_hf_to_gguf.py @ModelBase.register(...) names"
    return version, {
        "source": f"{cite}: {what}, the HF architectures convert_hf_to_gguf.py converts "
                  f"to GGUF",
        "served": sorted(names),
        "transformers_fallback": False,
    }


_ATTN_CLASS = re.compile(r"^class \w*Attention\w*\(nn\.Module\):", re.MULTILINE)


def _class_flags(tree: ast.Module) -> dict[str, tuple[list[str], bool | None]]:
    """Class -> (local base names, its own ``_supports_attention_backend`` or None)."""
    out: dict[str, tuple[list[str], bool | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            own: bool | None = None
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "_supports_attention_backend"
                        for t in stmt.targets) and isinstance(stmt.value, ast.Constant):
                    own = bool(stmt.value.value)
            out[node.name] = ([b.id for b in node.bases if isinstance(b, ast.Name)], own)
    return out


def _supports_backend(cls: str, classes: dict[str, tuple[list[str], bool | None]]) -> bool:
    seen: set[str] = set()
    todo = [cls]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in classes:
            continue
        seen.add(name)
        bases, own = classes[name]
        if own is not None:
            return own
        todo.extend(bases)
    return False


def transformers(version: str, source: Source) -> dict[str, Any]:
    compatible: set[str] = set()
    incompatible: set[str] = set()
    strict: set[str] = set()
    root = "transformers/" if source.path.suffix == ".whl" else ""
    for name in source.names(f"{root}models/"):
        if not re.fullmatch(rf"{root}models/\w+/modeling_\w+\.py", name) or \
                name.startswith(f"{root}models/auto/"):  # the Auto* factories, not models
            continue
        text = source.read(name) or ""
        tree = ast.parse(text)
        exported = _str_list(_assigned(tree).get("__all__"))
        heads = [c for c in exported if c.endswith(GENERATIVE_SUFFIXES)]
        if not heads:
            continue
        can_set = ("ALL_ATTENTION_FUNCTIONS.get_interface(" in text
                   if _ATTN_CLASS.search(text) else True)
        classes = _class_flags(tree)
        for cls in heads:
            flag = _supports_backend(cls, classes)
            (compatible if can_set or flag else incompatible).add(cls)
            if flag:
                strict.add(cls)
    auto = source.read(f"{root}models/auto/modeling_auto.py") or ""
    causal = _pairs_keys(_assigned(ast.parse(auto)).get("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"))
    return {
        "version": version,
        "source": f"transformers {version}: models/*/modeling_*.py __all__ classes ending in "
                  f"{', '.join(GENERATIVE_SUFFIXES)}; backend_compatible as vLLM 0.33.0 "
                  f"registry.py _try_resolve_transformers tests it (is_backend_compatible() or "
                  f"_can_set_attn_implementation()), supports_attention_backend as SGLang "
                  f"0.5.23 model_loader/utils.py resolve_transformers_arch does "
                  f"(is_backend_compatible() only); "
                  f"models/auto/modeling_auto.py MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
        "backend_compatible": sorted(compatible),
        "supports_attention_backend": sorted(strict),
        "backend_incompatible": sorted(incompatible),
        "causal_lm_model_types": sorted(causal),
    }


def _str_list(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.List | ast.Tuple):
        return [e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _pairs_keys(node: ast.AST | None) -> list[str]:
    """Keys of ``OrderedDict([("llama", "LlamaForCausalLM"), ...])``."""
    if isinstance(node, ast.Call):
        for arg in node.args:
            if isinstance(arg, ast.List | ast.Tuple):
                return [e.elts[0].value for e in arg.elts
                        if isinstance(e, ast.Tuple) and e.elts and
                        isinstance(e.elts[0], ast.Constant) and
                        isinstance(e.elts[0].value, str)]
    return _str_keys(node) if node is not None else []


def _labelled(value: str) -> tuple[str, str]:
    """``LABEL=PATH`` -> (label, path)."""
    label, sep, path = value.partition("=")
    if not sep:
        raise SystemExit(f"expected LABEL=PATH, got {value!r}")
    return label, path


def _by_version(items: Iterator[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    from packaging.version import Version

    entries = dict(items)
    return {v: entries[v] for v in sorted(entries, key=Version)}


RESOLUTION = {
    "vllm": (
        "vLLM 0.33.0 vllm/model_executor/models/registry.py _ModelRegistry.inspect_model_cls/"
        "resolve_model_cls with model_impl='auto': (1) when none of config.architectures is "
        "registered (and convert_type is 'none'), _try_resolve_transformers(architectures[0]): "
        "an arch in _TRANSFORMERS_SUPPORTED_MODELS routes to the Transformers modeling "
        "backend; otherwise getattr(transformers, arch), else the config's auto_map "
        "AutoModel* class (remote code, only with --trust-remote-code), is used when "
        "is_backend_compatible() or _can_set_attn_implementation(); the backend class is "
        "Transformers[MultiModal][MoE]ForCausalLM (config/model.py "
        "_get_transformers_backend_cls); (2) each arch of config.architectures in order, "
        "normalised by suffix (_normalize_arch: *ForSequenceClassification etc. convert a "
        "registered *ForCausalLM); (3) the Transformers fallback again before the runner "
        "type is resolved; (4) _raise_for_unsupported: an arch of "
        "_PREVIOUSLY_SUPPORTED_MODELS raises 'was supported in vLLM until vX', one of "
        "_OOT_SUPPORTED_MODELS names its plugin, anything else 'not supported for now'. "
        "Removed archs therefore still run when transformers has a compatible class: "
        "MllamaForConditionalGeneration (removed after 0.10.2) resolves in 0.33.0 to "
        "TransformersMultiModalForCausalLM (transformers 5.x modeling_mllama.py sets "
        "_supports_attention_backend = True; the config nests text_config), and the backend "
        "gives every text layer, cross-attention layers included, a decoder Attention with "
        "a KV cache (model_executor/models/transformers/base.py "
        "_create_attention_instances); whether generation is correct was not verified."),
    "sglang": (
        "sglang/srt/models/registry.py ModelRegistry keys EntryClass classes by __name__; "
        "sglang/srt/model_loader/utils.py get_model_architecture: an arch without an SGLang "
        "implementation falls back to the Transformers backend (model_impl auto) in versions "
        "that ship sglang/srt/models/transformers.py, else raises."),
    "lmdeploy": (
        "lmdeploy picks TurboMind when lmdeploy/turbomind/supported_models.py is_supported, "
        "else the PyTorch engine (MODULE_MAP); an arch in neither is refused."),
    "tgi": (
        "text_generation_server/models/__init__.py get_model dispatches on config.model_type; "
        "a type it lacks falls back to transformers (TransformersFlashCausalLM/CausalLM) when "
        "transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES has it or the config's auto_map has "
        "AutoModelForCausalLM with --trust-remote-code (the AutoModel path refuses sharding), "
        "else 'Unsupported model type'."),
    "trtllm": (
        "tensorrt_llm/_torch/models/modeling_auto.py AutoModelForCausalLM._resolve_class: "
        "architectures[0] must be registered, else 'Unknown architecture for "
        "AutoModelForCausalLM'; the TensorRT backend (trtllm-build) has its own MODEL_MAP."),
    "llamacpp": (
        "llama.cpp serves GGUF files; convert_hf_to_gguf.py converts an HF checkpoint only "
        "when one of its architectures is registered (ModelBase.from_model_architecture "
        "raises NotImplementedError 'Architecture X not supported')."),
}


def build(args: argparse.Namespace) -> dict[str, Any]:
    engines: dict[str, Any] = {}
    if args.vllm:
        engines["vllm"] = {"resolution": RESOLUTION["vllm"],
                           "versions": _by_version(vllm(Source(p)) for p in args.vllm)}
    if args.sglang:
        engines["sglang"] = {"resolution": RESOLUTION["sglang"],
                             "versions": _by_version(sglang(Source(p)) for p in args.sglang)}
    if args.lmdeploy:
        engines["lmdeploy"] = {
            "resolution": RESOLUTION["lmdeploy"],
            "versions": _by_version(lmdeploy(Source(p)) for p in args.lmdeploy)}
    if args.tgi:
        label, path = _labelled(args.tgi)
        version, cite = label.split("@", 1) if "@" in label else (label, path)
        engines["tgi"] = {"resolution": RESOLUTION["tgi"],
                          "single_source": True,
                          "versions": dict([tgi(version, Source(path), cite)])}
    if args.trtllm:
        label, path = _labelled(args.trtllm)
        legacy = _labelled(args.trtllm_legacy) if args.trtllm_legacy else None
        engines["trtllm"] = {
            "resolution": RESOLUTION["trtllm"], "single_source": True,
            "versions": dict([trtllm("*", Source(path), label,
                                     Source(legacy[1]) if legacy else None,
                                     legacy[0] if legacy else "")])}
    if args.llamacpp:
        label, path = _labelled(args.llamacpp)
        engines["llamacpp"] = {"resolution": RESOLUTION["llamacpp"], "single_source": True,
                               "versions": dict([llamacpp("*", Source(path), label)])}
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "generated_by": "python -m kvlint.generators.architectures (do not edit by hand)",
        "engines": engines,
    }
    hf: dict[str, Any] = {}
    for item in args.transformers:
        version, path = _labelled(item)
        hf[version] = transformers(version, Source(path))
    if hf:
        data["transformers"] = hf
        _mark_judged(engines, hf)
    return data


def _mark_judged(engines: dict[str, Any], hf: dict[str, Any]) -> None:
    """Give each engine version the transformers version that judges its fallback: one its
    requirement pins or bounds from above (an open ``>=`` names no version of the time)."""
    from packaging.specifiers import SpecifierSet

    for table in engines.values():
        for entry in table["versions"].values():
            spec = entry.get("transformers_requirement")
            if not spec or not any(s.operator in ("<", "<=", "==", "~=", "===")
                                   for s in SpecifierSet(spec)):
                continue
            fits = [v for v in hf if SpecifierSet(spec).contains(v, prereleases=True)]
            if fits:
                entry["transformers"] = max(fits, key=lambda v: tuple(map(int, v.split("."))))


def dumps(data: dict[str, Any]) -> str:
    """The file's text: objects indented, every list of names on one line."""
    def render(value: Any, depth: int) -> str:
        pad = " " * depth
        if isinstance(value, dict) and value:
            items = [f"{pad} {json.dumps(k)}: {render(v, depth + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        return json.dumps(value, ensure_ascii=False)
    return render(data, 0) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvlint.generators.architectures",
                                     description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--vllm", nargs="*", default=[])
    parser.add_argument("--sglang", nargs="*", default=[])
    parser.add_argument("--lmdeploy", nargs="*", default=[])
    parser.add_argument("--tgi", help="VERSION@CITE=FILE")
    parser.add_argument("--trtllm", help="CITE=_arch_index.py")
    parser.add_argument("--trtllm-legacy", help="CITE=tensorrt_llm/models/__init__.py")
    parser.add_argument("--llamacpp", help="CITE=convert_hf_to_gguf.py")
    parser.add_argument("--transformers", nargs="*", default=[],
                        help="VERSION=transformers package dir (several allowed)")
    args = parser.parse_args(argv)
    Path(args.output).write_text(dumps(build(args)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
