"""Helm values files of the charts that serve LLMs: vLLM production-stack (``servingEngineSpec``),
llm-d modelservice (``modelArtifacts`` + ``decode``/``prefill``), the vLLM example chart
(``image.command``), image charts such as TGI's (``image`` + ``args``/``env``), and the silogen
``env_vars`` charts.

A values file is not a manifest: what reaches the pods is what the chart's templates render.
Each parser reads the keys its chart renders and says so when a key sits where the chart never
reads it. Comments are never read. Unrendered templates (``{{ ... }}``) are not YAML at all:
``yaml_marks`` reports them before any parser runs.
"""

from __future__ import annotations

import re
from typing import Any

from kvlint.manifests.accelerators import image_family
from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_launch import (
    Hardware,
    Origin,
    Script,
    engine_args,
    first_launch,
    image_engine,
    launch_in_argv,
    merge_args,
    served_model,
    settle_version,
    walk_script,
)
from kvlint.manifests.images import entrypoint_engine
from kvlint.manifests.kubernetes import gpu_type_of
from kvlint.manifests.pod_gpus import mig_resources
from kvlint.manifests.shell_env import Env, env_from_k8s
from kvlint.manifests.shell_words import split_script
from kvlint.manifests.yaml_values import (
    env_of,
    get_list,
    get_map,
    get_str,
    key_col,
    key_line,
    loc_float,
    loc_int,
    loc_str,
    model_value,
    node_line,
    plain_map,
    to_int,
    value_line,
    values_tpl,
    words_of,
    words_of_list,
)

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "gpu.intel.com/i915",
                 "gpu.intel.com/xe", "nvidia.com/gpu.shared", "google.com/tpu")


def gpus_from_resources(resources: Any, where: str,
                        keys: tuple[str, ...] = GPU_RESOURCES
                        ) -> Located[int] | Unresolved | None:
    """GPUs in a Kubernetes ``resources`` block of a values file (limits, else requests)."""
    if not isinstance(resources, dict):
        return None
    for part in ("limits", "requests"):
        block = get_map(resources, part)
        if block is None:
            continue
        for key in keys + mig_resources(resources):  # a MIG slice is a GPU to the engine
            if block.get(key) is not None:
                return loc_int(block, key, f"{where}.{part}.{key}")
    return None


def image_of(spec: Any, where: str) -> Located[str] | None:
    """``repository`` + ``tag`` (or a plain ``image`` string) as one image reference."""
    if isinstance(spec, str):
        return Located(spec, node_line(spec), getattr(spec, "column", None), where)
    if not isinstance(spec, dict):
        return None
    repo = get_str(spec, "repository") or get_str(spec, "name")
    if not repo:
        return None
    registry = get_str(spec, "registry")
    tag = spec.get("tag")
    text = f"{registry.rstrip('/')}/{repo}" if registry and not repo.startswith(registry) \
        else repo
    if tag is not None and str(tag) and ":" not in text.rsplit("/", 1)[-1]:
        text = f"{text}:{tag}"
    key = "repository" if "repository" in spec else "name"
    return Located(text, key_line(spec, key), key_col(spec, key), f"{where}.{key}" +
                   (" + tag" if tag is not None else ""))


def replicas_note(obj: Any, key: str, what: str = "replicas") -> list[str]:
    count = to_int(obj.get(key)) if isinstance(obj, dict) else None
    if count is not None and count != 1:
        return [f"{key} {count}: {count} {what}, each with the GPUs reported"]
    return []


def _k8s_env(items: Any) -> dict[str, str | None]:
    try:
        return env_from_k8s(items) if items else {}
    except (TypeError, ValueError):
        return {}


# ============================================================================================
# vLLM production-stack
# ============================================================================================

VLLM_CONFIG_KEYS = ("tensorParallelSize", "pipelineParallelSize", "maxModelLen", "maxNumSeqs",
                    "gpuMemoryUtilization", "dtype", "extraArgs", "enablePrefixCaching",
                    "enableChunkedPrefill", "maxLoras", "v0")


def _engine_spec(document: object) -> dict[str, Any] | None:
    """``servingEngineSpec`` of production-stack values, at the top or under the key of a
    wrapper chart that uses the stack as a subchart (Helm passes a subchart the values under
    its name: ``vllm-stack: {servingEngineSpec: ...}``)."""
    if not plain_map(document) or not isinstance(document, dict):
        return None
    spec = get_map(document, "servingEngineSpec")
    if spec is not None:
        return spec
    nested = [get_map(value, "servingEngineSpec") for value in document.values()
              if isinstance(value, dict)]
    found = [n for n in nested if n is not None]
    return found[0] if len(found) == 1 else None


class ProductionStackValuesParser(ManifestParser):
    """vLLM production-stack (``vllm-stack`` chart): one engine per
    ``servingEngineSpec.modelSpec[]`` entry, rendered as ``vllm serve MODEL_URL`` plus flags
    from ``vllmConfig`` (a Deployment, or a RayCluster when ``raySpec.enabled``)."""

    name = "helm-production-stack"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        spec = _engine_spec(document)
        return spec is not None and isinstance(spec.get("modelSpec"), list)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = _engine_spec(document) or {}
        if spec.get("enableEngine") is False:
            return []
        env_all = _k8s_env(spec.get("env"))
        models = get_list(spec, "modelSpec") or []
        return [self._one(item, i, env_all, ctx) for i, item in enumerate(models)
                if isinstance(item, dict) and item.get("enabled") is not False]

    def _one(self, item: dict[str, Any], index: int, env_all: dict[str, str | None],
             ctx: DocumentContext) -> ServedModel:
        where = f"modelSpec[{index}]"
        notes: list[str] = []
        name = get_str(item, "name") or where
        url = item.get("modelURL")
        model = model_value(str(url), value_line(item, "modelURL"), "modelURL",
                            key_col(item, "modelURL")) if url is not None else None
        engine = Located("vllm", key_line(item, "modelURL") or node_line(item), None,
                         "production-stack chart: vllm serve modelURL")
        image = image_of(item, where)
        ray = get_map(item, "raySpec")
        on_ray = bool(ray and ray.get("enabled"))
        vc = get_map(item, "vllmConfig") or {}
        env = Env({**env_all, **_k8s_env(item.get("env"))})
        pp = loc_int(vc, "pipelineParallelSize", "vllmConfig.pipelineParallelSize")
        if pp is not None and not on_ray:
            where_pp = key_line(vc, "pipelineParallelSize")
            notes.append(f"vllmConfig.pipelineParallelSize (line {where_pp}) is rendered only "
                         "on the Ray path (raySpec.enabled); the Deployment template drops it,"
                         " so pipeline parallelism stays 1")
            pp = None
        chart = EngineArgs(
            engine="vllm", model=model,
            tp=loc_int(vc, "tensorParallelSize", "vllmConfig.tensorParallelSize"), pp=pp,
            max_model_len=loc_int(vc, "maxModelLen", "vllmConfig.maxModelLen"),
            max_num_seqs=loc_int(vc, "maxNumSeqs", "vllmConfig.maxNumSeqs"),
            gpu_memory_utilization=loc_float(vc, "gpuMemoryUtilization",
                                             "vllmConfig.gpuMemoryUtilization"))
        extra = get_list(vc, "extraArgs")
        args: EngineArgs | None = chart
        if extra:
            # rendered after the chart's own flags: argparse keeps the last value
            args = merge_args(engine_args("vllm", words_of_list(extra), env), chart)
        for key in VLLM_CONFIG_KEYS:
            if key in item:
                value = item[key]
                shown = " ".join(str(v) for v in value) if isinstance(value, list) else value
                notes.append(f"{key} (line {key_line(item, key)}) sits directly under "
                             f"{where}, where the chart does not read it (only "
                             f"vllmConfig.{key} is rendered): {shown} is silently dropped")
        gpus = self._gpus(item, ray if on_ray else None, where)
        if on_ray:
            notes.append("raySpec.enabled: served by a RayCluster (head + "
                         "replicaCount workers) running vllm serve with the Ray backend")
        else:
            notes.extend(replicas_note(item, "replicaCount"))
        version, more = settle_version("vllm", image)
        assert args is not None
        # the chart renders modelSpec.nodeSelectorTerms as the pod's required node affinity
        # (helm/templates/deployment-vllm-multi.yaml@010004ee; a nodeName wins over it)
        terms = item.get("nodeSelectorTerms") if not item.get("nodeName") else None
        gpu_type = gpu_type_of({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}) \
            if isinstance(terms, list) else None
        return served_model(Origin(ctx, "helm-production-stack", name=name, line=node_line(item)),
                            engine=engine, args=args, image=image, version=version,
                            hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes + more)

    @staticmethod
    def _gpus(item: dict[str, Any], ray: dict[str, Any] | None,
              where: str) -> Located[int] | Unresolved | None:
        def per_pod(spec: dict[str, Any], at: str) -> Located[int] | Unresolved | None:
            found = gpus_from_resources(spec.get("resources"), f"{at}.resources")
            if found is not None:
                return found
            kind = get_str(spec, "requestGPUType") or "nvidia.com/gpu"
            return loc_int(spec, "requestGPU", f"{at}.requestGPU ({kind})")

        workers = per_pod(item, where)
        if ray is None:
            return workers
        head = per_pod(get_map(ray, "headNode") or {}, f"{where}.raySpec.headNode")
        count = to_int(item.get("replicaCount", 1)) or 0
        if isinstance(head, Unresolved) or isinstance(workers, Unresolved):
            return head if isinstance(head, Unresolved) else workers
        head_n = head.value if head else 0
        worker_n = workers.value if workers else 0
        line = workers.line if workers else (head.line if head else None)
        return Located(head_n + worker_n * count, line, None,
                       f"raySpec.headNode.requestGPU {head_n} + requestGPU {worker_n} x "
                       f"replicaCount {count} workers")


# ============================================================================================
# llm-d modelservice
# ============================================================================================

ROLES = ("prefill", "decode")
ROLE_DEFAULT_REPLICAS = {"decode": 1, "prefill": 0}


class LlmdModelServiceValuesParser(ManifestParser):
    """llm-d ``llm-d-modelservice`` chart: ``modelArtifacts`` names the model, ``decode`` and
    ``prefill`` each render pods whose ``--tensor-parallel-size``/``--data-parallel-size``
    flags and GPU requests the chart injects from ``parallelism``."""

    name = "helm-llm-d"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        artifacts = get_map(document, "modelArtifacts") if plain_map(document) else None
        return artifacts is not None and any(k in artifacts for k in ("uri", "name")) and \
            any(isinstance(get_map(document, r), dict) for r in ROLES)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict) or document.get("enabled") is False:
            return []
        out = []
        for role in ROLES:
            spec = get_map(document, role)
            if spec is None or spec.get("create") is False:
                continue
            replicas = to_int(spec.get("replicas", ROLE_DEFAULT_REPLICAS[role]))
            if replicas == 0:
                continue
            out.append(self._role(document, role, spec, ctx))
        return out

    @staticmethod
    def _model(doc: dict[str, Any]) -> tuple[Located[str] | Unresolved | None, str | None]:
        artifacts = get_map(doc, "modelArtifacts") or {}
        uri = values_tpl(get_str(artifacts, "uri"), doc)
        name = get_str(artifacts, "name")
        line = value_line(artifacts, "uri")
        if uri is None:
            return None, name
        scheme, _, rest = uri.partition("://")
        if scheme == "hf":
            return model_value(rest, line, "modelArtifacts.uri (hf://)"), name
        if scheme == "pvc":
            path = rest.split("/", 1)[1] if "/" in rest else ""
            mount = get_str(artifacts, "mountPath") or "/model-cache"
            return Located(f"{mount.rstrip('/')}/{path}", line, None,
                           "modelArtifacts.uri (pvc://, mounted at mountPath)"), name
        if scheme == "pvc+hf":
            parts = rest.split("/")
            if len(parts) >= 2:
                return Located("/".join(parts[-2:]), line, None,
                               "modelArtifacts.uri (pvc+hf://)"), name
        return Unresolved(f"modelArtifacts.uri {scheme}:// is not resolved", line, None,
                          uri), name

    def _role(self, doc: dict[str, Any], role: str, spec: dict[str, Any],
              ctx: DocumentContext) -> ServedModel:
        notes: list[str] = []
        model, served_name = self._model(doc)
        par = get_map(spec, "parallelism") or {}
        tp_v = loc_int(par, "tensor", f"{role}.parallelism.tensor")
        data_v = loc_int(par, "data", f"{role}.parallelism.data")
        tp_n = tp_v.value if isinstance(tp_v, Located) else 1
        data_n = data_v.value if isinstance(data_v, Located) else 1
        workers = to_int(par.get("workers"))
        local = to_int(par.get("dataLocal"))
        if local is None:
            local = data_n // workers if workers and data_n % workers == 0 else data_n
        pods = workers if workers else (max(1, data_n // local) if local else 1)
        containers = get_list(spec, "containers") or []
        first = next((c for c in containers if isinstance(c, dict)), {})
        image = loc_str(first, "image", f"{role}.containers[0].image")
        command = get_str(first, "modelCommand") or "custom"
        env = Env(_k8s_env(first.get("env")))
        engine: Located[str] | None = None
        args: EngineArgs | None = None
        if command in ("vllmServe", "imageDefault"):
            engine = Located("vllm", key_line(first, "modelCommand"), None,
                             f"modelCommand {command}")
            flags = engine_args("vllm", words_of(values_tpl(first.get("args"), doc)), env)
            chart = EngineArgs(
                engine="vllm", model=model,
                tp=tp_v if tp_n > 1 else None,
                dp=data_v if data_n > 1 else None)
            args = merge_args(flags, chart)
        else:
            words = words_of(values_tpl(first.get("command"), doc)) + \
                words_of(values_tpl(first.get("args"), doc))
            launch, more = first_launch(launch_in_argv(words, env))
            notes.extend(more)
            if launch is not None:
                engine = Located(launch.engine, launch.line, None, "container command")
                args = launch.args
        found = gpus_from_resources(first.get("resources"), f"{role}.containers[0].resources")
        gpus: Located[int] | Unresolved | None
        if found is not None:
            gpus = found
        else:
            per_pod = local * tp_n
            line = tp_v.line if isinstance(tp_v, Located) else key_line(spec, "parallelism")
            source = (f"injected by the chart: parallelism dataLocal {local} x tensor {tp_n}")
            gpus = Located(per_pod * (pods if doc.get("multinode") else 1), line, None,
                           source + (f" x {pods} workers" if doc.get("multinode") else ""))
        notes.extend(replicas_note(spec, "replicas", f"{role} replicas"))
        version, more = settle_version(engine.value if engine else None, image)
        notes.extend(more)
        if args is None:
            args = EngineArgs(engine="", model=model)
        return served_model(Origin(ctx, "helm-llm-d", name=role, role=role,
                                   line=key_line(spec, "parallelism")), engine=engine, args=args,
                            image=image, version=version, hardware=Hardware(gpus=gpus), notes=notes,
                            served_name=served_name)


# ============================================================================================
# vLLM example chart and image charts (TGI)
# ============================================================================================


def _gpu_models(values: dict[str, Any]) -> tuple[Located[str] | None, list[str]]:
    models = get_list(values, "gpuModels") or []
    names = [str(m) for m in models if isinstance(m, str) and m]
    if not names:
        return None, []
    if all(re.fullmatch(r"[A-Z0-9_]+", n) and "_" in n for n in names):
        return None, [f"gpuModels {', '.join(names)} is a placeholder"]
    text = names[0] if len(names) == 1 else " | ".join(names)
    return Located(text, value_line(values, "gpuModels"), None,
                   "gpuModels (node affinity nvidia.com/gpu.product)"), []


class VllmChartValuesParser(ManifestParser):
    """The vLLM example chart (``examples/online_serving/chart-helm``): the engine command is
    ``image.command``, env ``image.env``, GPUs ``resources`` (rendered only when both requests
    and limits ask for GPUs), node affinity on ``gpuModels``."""

    name = "helm-vllm-chart"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        image = get_map(document, "image") if plain_map(document) else None
        return image is not None and isinstance(image.get("command"), list) and \
            bool(get_str(image, "repository"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        spec = get_map(document, "image") or {}
        image = image_of(spec, "image")
        env = Env(_k8s_env(spec.get("env")))
        words = words_of(spec.get("command")) + words_of(spec.get("args"))
        launch, notes = first_launch(launch_in_argv(words, env))
        engine = Located(launch.engine, launch.line, None, "image.command") if launch else None
        resources = document.get("resources")
        gpus = self._gpus(resources)
        gpu_type, more = _gpu_models(document)
        notes.extend(more)
        notes.extend(replicas_note(document, "replicaCount"))
        if launch is None:
            return []  # image.command starts no engine kvlint knows
        version, more = settle_version(engine.value if engine else None, image)
        return [served_model(Origin(ctx, self.name, name=get_str(document, "serviceName") or "",
                                    line=key_line(spec, "command")), engine=engine,
                             args=launch.args if launch else None, image=image, version=version,
                             hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes + more)]

    @staticmethod
    def _gpus(resources: Any) -> Located[int] | Unresolved | None:
        requests = get_map(resources, "requests") or {}
        limits = get_map(resources, "limits") or {}
        req = loc_int(requests, "nvidia.com/gpu", "resources.requests.nvidia.com/gpu")
        lim = loc_int(limits, "nvidia.com/gpu", "resources.limits.nvidia.com/gpu")
        if isinstance(req, Located) and isinstance(lim, Located) and req.value > 0 and \
                lim.value > 0:
            return lim
        return req if isinstance(req, Unresolved) else (lim if isinstance(lim, Unresolved)
                                                        else None)


class ImageChartValuesParser(ManifestParser):
    """Charts that run an engine image with top-level ``args``/``command``/``env`` (the TGI
    chart: ``text-generation-launcher`` + ``args``, ``env`` as a mapping)."""

    name = "helm-chart-values"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        spec = get_map(document, "image")
        if spec is None or "command" in spec or not get_str(spec, "repository"):
            return False
        image = image_of(spec, "image")
        if image is None or entrypoint_engine(image.value) is None:
            return False
        if not any(k in document for k in ("args", "command", "env", "extraArgs")):
            # only resources at the top: a map of the engine's own (vllm: {model, args})
            # is the generic keys parser's to read
            from kvlint.manifests.helm_keys import nested_engine_map

            if nested_engine_map(document):
                return False
        return any(k in document for k in ("args", "command", "env", "resources", "extraArgs"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        image = image_of(get_map(document, "image") or {}, "image")
        if image is None:
            return []
        fallback = entrypoint_engine(image.value)
        raw_env = document.get("env")
        env = Env(_k8s_env(raw_env) if isinstance(raw_env, list) else env_of(raw_env))
        command = words_of(document.get("command"))
        args = words_of(document.get("args")) or words_of(document.get("extraArgs"))
        notes: list[str] = []
        engine: Located[str] | None = None
        parsed: EngineArgs | None = None
        if command:
            launch, notes = first_launch(launch_in_argv(command + args, env))
            if launch is not None:
                engine = Located(launch.engine, launch.line, None, "command")
                parsed = launch.args
        elif fallback is not None:
            engine = Located(fallback, image.line, image.column,
                             f"entrypoint of image {image.value}")
            parsed = engine_args(fallback, args, env)
        model: dict[str, Any] = {}
        if parsed is not None and parsed.model is None:
            from kvlint.manifests.helm_keys import values_model

            # the top level's model keys, else those of a map just below it (config:
            # {modelID: ...}); the image's map names no model
            named = None
            for where, scope in [("", document)] + [
                    (str(k), v) for k, v in document.items() if isinstance(v, dict)
                    and k != "image"]:
                found, named = values_model(scope, where)
                if found:
                    break
            if named is not None:
                model["model"] = named
                where = named.source if isinstance(named, Located) else "of the model"
                notes.append(f"the model is read from the values key {where}: the "
                             "chart's templates, not in the file, pass it to the engine")
            else:
                notes.append("no model is set (args and env name none; comments are not "
                             "read)")
        gpus = gpus_from_resources(document.get("resources"), "resources")
        if gpus is None:  # the chart's GPU map (gpu: {enabled: true, count: 1})
            from kvlint.manifests.helm_keys import gpu_map_count, image_gpu_build

            gpus = image_gpu_build(gpu_map_count(document, ""),
                                   engine.value if engine else None, image)
        family = image_family(image)
        if gpus is None and family is not None and family.value == "CPU":
            # a CPU build given no device: it runs on no GPU (a chart's template that added
            # one would be for nothing this image can use)
            gpus = Located(0, key_line(document, "resources") if "resources" in document
                           else image.line, None,
                           f"no GPU requested; image {image.value} is a CPU build")
        notes.extend(replicas_note(document, "replicaCount"))
        tag = (get_map(document, "image") or {}).get("tag")
        if tag is not None and not str(tag).strip():
            version: Located[str] | Unresolved | None = None
            more = [f"image {image.value} has no tag in the values: the chart's default (its "
                    "appVersion) decides the version"]
        else:
            version, more = settle_version(engine.value if engine else None, image)
        fmt = "helm-tgi" if engine and engine.value == "tgi" else "helm-values"
        return [served_model(Origin(ctx, fmt, line=image.line), engine=engine, args=parsed,
                             image=image, version=version,
                             hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(document)),
                             notes=notes + more, **model)]


# ============================================================================================
# silogen ai-workloads (env_vars charts)
# ============================================================================================

LLAMACPP_HINT = re.compile(r"llama[.-]?cpp|llama-server", re.IGNORECASE)


class SilogenValuesParser(ManifestParser):
    """silogen ``ai-workloads`` charts: ``image`` string, ``gpus`` count, ``env_vars`` mapping
    (``MODEL``...) and an ``entrypoint`` script run by ``sh -c``. When the script is not in the
    file (a mounted ``entrypoint.sh``), the engine is only inferred from what the values say,
    never from the image: these charts build engines on top of unrelated base images."""

    name = "helm-silogen"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        env = get_map(document, "env_vars") if plain_map(document) else None
        return env is not None and isinstance(document, dict) and \
            (isinstance(document.get("image"), str) or "entrypoint" in document) and \
            any(k in document for k in ("gpus", "entrypoint"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        env_vars = get_map(document, "env_vars") or {}
        env = Env(env_of(env_vars))
        image = loc_str(document, "image", "image")
        notes: list[str] = []
        script = get_str(document, "entrypoint") or ""
        walked = walk_script(split_script(script), env) if script else Script()
        launch, more = first_launch(walked)
        notes.extend(more)
        engine: Located[str] | None = None
        args: EngineArgs | None = None
        overrides: dict[str, Any] = {}
        if launch is not None:
            engine = Located(launch.engine, launch.line, None, "entrypoint")
            args = launch.args
        else:
            hint = next(((k, v) for k, v in env_vars.items()
                         if isinstance(v, str) and LLAMACPP_HINT.search(v)), None)
            if hint is not None:
                engine = Located("llamacpp", key_line(env_vars, hint[0]), None,
                                 f"inferred: env_vars.{hint[0]} names a llama.cpp build")
                notes.append(f"engine inferred as llama.cpp from env_vars.{hint[0]} "
                             f"({hint[1]}); the entrypoint script that starts it is not in "
                             "the file")
                ctx_size = loc_int(env_vars, "CTX_SIZE", "env_vars.CTX_SIZE (passed to "
                                   "llama-server --ctx-size by the chart's entrypoint script,"
                                   " which is not in the file)")
                if ctx_size is not None:
                    overrides["max_model_len"] = ctx_size
            else:
                notes.append("engine unknown: the entrypoint script that starts it is not in "
                             "the file")
        if image is not None and engine is None:
            img_engine = image_engine(image.value)[0]
            if img_engine:
                notes.append(f"image {image.value} is a {img_engine} image used as a base: it "
                             "does not tell the engine")
        if args is None or args.model is None:
            model = env_vars.get("MODEL")
            if isinstance(model, str):
                overrides["model"] = model_value(model, value_line(env_vars, "MODEL"),
                                                 "env_vars.MODEL")
                if ":" in model and "/" in model.split(":", 1)[0]:
                    notes.append(f"model {model} uses the repo:quantization syntax")
        gpus = loc_int(document, "gpus", "gpus")
        arch = loc_str(env_vars, "ROCM_ARCH", "env_vars.ROCM_ARCH")
        gpu_type = None
        if arch is not None:
            family = " (the MI300 series)" if arch.value.lower() == "gfx942" else ""
            gpu_type = Located(arch.value, arch.line, None,
                               f"env_vars.ROCM_ARCH: an AMD GPU architecture{family}, not a "
                               "GPU model")
        version = None
        if engine is not None and image is not None:
            version, more = settle_version(engine.value, image)
            notes.extend(n for n in more if n not in notes)
        if engine is None and "model" not in overrides:
            return []
        model_line = overrides["model"].line if isinstance(overrides.get("model"),
                                                           Located | Unresolved) else None
        return [served_model(Origin(ctx, self.name, line=model_line or node_line(document)),
                             engine=engine, args=args, image=image, version=version,
                             hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes,
                             **overrides)]
