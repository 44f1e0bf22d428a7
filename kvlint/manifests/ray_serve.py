"""Ray Serve LLM configuration files: ``serve run`` configs whose applications build
``ray.serve.llm`` apps, and standalone ``LLMConfig`` YAML (the engine is vLLM).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvlint.loaders.files import read_referenced
from kvlint.manifests.base import (
    DocumentContext,
    Documents,
    Located,
    ManifestParser,
    ManifestProblem,
    ServedModel,
    Unresolved,
)
from kvlint.manifests.engine_launch import Hardware, Origin, Pin, served_model, settle_version
from kvlint.manifests.flat_configs import config_args
from kvlint.manifests.images import engine_from_pip
from kvlint.manifests.yaml_marks import load_documents
from kvlint.manifests.yaml_values import (
    doc_line,
    get_list,
    get_map,
    get_str,
    item_line,
    key_line,
    loc_int,
    loc_str,
    model_value,
    plain_map,
    value_line,
)


def _is_llm_config(obj: object) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("model_loading_config"), dict) and \
        any(k in obj["model_loading_config"] for k in ("model_id", "model_source"))


def _is_serve_config(obj: object) -> bool:
    apps = get_list(obj, "applications")
    if not apps:
        return False
    for app in apps:
        if not isinstance(app, dict):
            continue
        path = get_str(app, "import_path") or ""
        args = get_map(app, "args") or {}
        if "ray.serve.llm" in path or "llm_configs" in args or "llm_config" in args or \
                any(_is_llm_config(args.get(k)) for k in ("prefill_config", "decode_config")):
            return True
    return False


def _runtime_pins(holder: Any) -> list[Pin]:
    """Engine pins in a Ray ``runtime_env.pip`` (a list, or ``{packages: [...]}``)."""
    pip = (get_map(holder, "runtime_env") or {}).get("pip")
    if isinstance(pip, dict):
        pip = pip.get("packages")
    pins: list[Pin] = []
    for i, spec in enumerate(pip if isinstance(pip, list) else []):
        if isinstance(spec, str):
            found = engine_from_pip(spec)
            if found is not None:
                pins.append(Pin(found[0], found[1], spec, item_line(pip, i)))
    return pins


@dataclass
class _Ref:
    """An LLMConfig and the file it was read from."""

    config: Any
    path: str
    line: int | None
    role: str | None = None
    problem: str | None = None


class RayServeParser(ManifestParser):
    """Ray Serve LLM: a ``serve run`` config whose applications build ``ray.serve.llm`` apps
    (``llm_configs`` inline or as relative paths, ``llm_config``, ``prefill_config``/
    ``decode_config``), or a standalone ``LLMConfig`` YAML. The engine is vLLM."""

    name = "ray-serve"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document):
            return False
        return _is_serve_config(document) or _is_llm_config(document)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        if _is_llm_config(document):
            return [self._one(_Ref(document, ctx.path, doc_line(document)), ctx, None, "")]
        out: list[ServedModel] = []
        for app in get_list(document, "applications") or []:
            if not isinstance(app, dict):
                continue
            import_path = get_str(app, "import_path") or ""
            args = get_map(app, "args") or {}
            for ref in self._refs(args, ctx):
                out.append(self._one(ref, ctx, app, import_path))
        return out

    def _refs(self, args: dict[str, Any], ctx: DocumentContext) -> list[_Ref]:
        refs: list[_Ref] = []
        configs = get_list(args, "llm_configs") or []
        for i, item in enumerate(configs):
            if isinstance(item, dict):
                refs.append(_Ref(item, ctx.path, item_line(configs, i)))
            elif isinstance(item, str):
                refs.append(self._read(item, ctx, item_line(configs, i)))
        for key, role in (("llm_config", None), ("prefill_config", "prefill"),
                          ("decode_config", "decode")):
            value = args.get(key)
            if isinstance(value, dict):
                refs.append(_Ref(value, ctx.path, value_line(args, key), role))
            elif isinstance(value, str):
                ref = self._read(value, ctx, value_line(args, key))
                ref.role = role
                refs.append(ref)
        return refs

    @staticmethod
    def _read(reference: str, ctx: DocumentContext, line: int | None) -> _Ref:
        """An LLMConfig file referenced by a path relative to the serve config's directory."""
        if "://" in reference or os.path.isabs(reference) or reference.startswith("~"):
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is not a "
                        "relative path: it is not read")
        if not reference.lower().endswith((".yaml", ".yml", ".json")):
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is not a "
                        "YAML or JSON file: it is not read")
        target = str(Path(ctx.path).parent / reference)
        read = read_referenced(target, ctx.path)
        if isinstance(ctx.documents, Documents):
            ctx.documents.note_read(target, read.state)  # results depend on another file
        if read.outside:
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is outside the "
                        "linted tree (a link or ..): it is not read")
        if read.text is None:
            return _Ref(None, ctx.path, line, problem=f"llm config {reference}: {read.problem}")
        docs = load_documents(read.text, target)
        if isinstance(docs, ManifestProblem):
            return _Ref(None, ctx.path, line, problem=f"llm config {reference}: {docs.message}")
        config = next((d for d in docs if isinstance(d, dict)), None)
        if config is None:
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is empty")
        return _Ref(config, os.path.normpath(target), doc_line(config))

    def _one(self, ref: _Ref, ctx: DocumentContext, app: dict[str, Any] | None,
             import_path: str) -> ServedModel:
        app_name = (get_str(app, "name") or "") if app else ""
        source_file = "" if ref.path == ctx.path else f" in {ctx.path}"
        engine = Located("vllm", key_line(app, "import_path") if app and not source_file
                         else None, None,
                         f"{import_path or 'ray.serve.llm LLMConfig'}{source_file} (vLLM)")
        if ref.config is None:
            missing = Unresolved(ref.problem or "llm config not read", ref.line)
            return served_model(Origin(ctx, self.name, name=app_name, role=ref.role, line=ref.line),
                                engine=engine, model=missing, notes=[ref.problem or ""])
        conf = ref.config
        notes: list[str] = []
        if ref.path != ctx.path:
            notes.append(f"LLM config read from {ref.path}, referenced by {ctx.path}")
        loading = get_map(conf, "model_loading_config") or {}
        model_id = get_str(loading, "model_id")
        model_source = loading.get("model_source")
        served_name = model_id
        model: Located[str] | Unresolved | None = None
        if isinstance(model_source, str) and "://" in model_source:
            model = Unresolved("the weights are loaded from a bucket",
                               value_line(loading, "model_source"), None,
                               model_id or model_source)
            notes.append(f"model_source is a bucket ({model_source})")
        elif isinstance(model_source, str):
            model = model_value(model_source, value_line(loading, "model_source"),
                                "model_loading_config.model_source")
        elif isinstance(model_source, dict):
            uri = get_str(model_source, "bucket_uri") or ""
            model = Unresolved("the weights are loaded from a bucket",
                               value_line(loading, "model_source"), None,
                               model_id or uri)
            notes.append(f"model_source is a bucket ({uri or 'unknown uri'})")
        elif model_id is not None:
            model = model_value(model_id, value_line(loading, "model_id"),
                                "model_loading_config.model_id")
            served_name = None
        engine_kw = get_map(conf, "engine_kwargs") or {}
        args = config_args("vllm", engine_kw, "engine_kwargs.")
        args = replace(args, model=None, served_name=None)
        llm_engine = get_str(conf, "llm_engine")
        if llm_engine and llm_engine.lower() != "vllm":
            notes.append(f"llm_engine {llm_engine}: only vLLM is modelled")
        if app is not None and "build_dp_openai_app" in import_path:
            notes.append("build_dp_openai_app: each Serve replica is one data-parallel rank")
        gpu_type = loc_str(conf, "accelerator_type", "accelerator_type")
        deployment = get_map(conf, "deployment_config") or {}
        replicas = loc_int(deployment, "num_replicas", "deployment_config.num_replicas")
        dp = args.dp
        tp_n = args.tp.value if isinstance(args.tp, Located) else 1
        pp_n = args.pp.value if isinstance(args.pp, Located) else 1
        dp_n = dp.value if isinstance(dp, Located) else 1
        gpus = Located(tp_n * pp_n * dp_n, args.tp.line if isinstance(args.tp, Located) else
                       None, None, "engine_kwargs tensor_parallel_size x pipeline_parallel_size"
                       + (" x data_parallel_size" if dp_n > 1 else ""))
        if isinstance(replicas, Located):
            if dp_n > 1:
                notes.append(
                    f"deployment_config.num_replicas {replicas.value} with data_parallel_size "
                    f"{dp_n}: Ray releases differ on whether this means {replicas.value} "
                    f"groups of {dp_n} ranks ({replicas.value * tp_n * pp_n * dp_n} GPUs) or "
                    f"{replicas.value} ranks in all; GPUs are reported for one DP group")
            elif replicas.value != 1:
                notes.append(f"deployment_config.num_replicas {replicas.value}: "
                             f"{replicas.value} replicas, each with the GPUs reported")
        autoscaling = get_map(deployment, "autoscaling_config")
        if autoscaling is not None:
            bounds = {k: autoscaling.get(k) for k in ("min_replicas", "max_replicas")
                      if autoscaling.get(k) is not None}
            if bounds:
                notes.append("autoscaling " + ", ".join(f"{k} {v}" for k, v in bounds.items()))
        pins = _runtime_pins(conf) + (_runtime_pins(app) if app and not source_file else [])
        version, more = settle_version("vllm", None, pins)
        notes.extend(more)
        line = model.line if isinstance(model, Located | Unresolved) and model.line else \
            ref.line
        return served_model(Origin(ctx, self.name, name=app_name or (model_id or ""), role=ref.role,
                                   line=line, path=ref.path), engine=engine, args=args,
                            hardware=Hardware(gpus=gpus, gpu_type=gpu_type), version=version,
                            notes=notes, served_name=served_name, model=model)


def llm_config_model(conf: dict[str, Any], ctx: DocumentContext, app: dict[str, Any] | None,
                     import_path: str) -> ServedModel:
    """The served model of one inline LLMConfig (a KubeRay RayService's ``serveConfigV2``
    holds the same applications): read as a Ray Serve config's."""
    return RayServeParser()._one(_Ref(conf, ctx.path, doc_line(conf)), ctx, app, import_path)
