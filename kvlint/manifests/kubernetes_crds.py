"""Engine CRDs: KServe (InferenceService, ServingRuntime, ClusterServingRuntime,
LLMInferenceService), NVIDIA Dynamo DynamoGraphDeployment, the vLLM production-stack
operator's VLLMRuntime and KubeRay's RayService. The pod machinery is
:mod:`.kubernetes_containers`'s (commands, env, ConfigMap-mounted engine configs) and
:mod:`.kubernetes`'s (GPUs, the served model)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from kvlint.manifests.base import (
    DocumentContext,
    Located,
    ManifestParser,
    ServedModel,
    Unresolved,
    named,
    refuse_object,
)
from kvlint.manifests.engine_command import EngineArgs, parse_engine_args
from kvlint.manifests.engine_env import with_env
from kvlint.manifests.engine_launch import Hardware, Origin, Pin, settle_version
from kvlint.manifests.flat_configs import config_args
from kvlint.manifests.images import engine_from_image, engine_from_pip
from kvlint.manifests.kubernetes import (
    build,
    gpu_type_of,
    group_gpus,
    int_at,
    pod_gpus,
    replicas_notes,
)
from kvlint.manifests.kubernetes_containers import (
    HF_SERVER_FLAGS,
    Run,
    container_env,
    container_run,
    embedded_yaml,
    flat_words,
    follow_config,
    image_of,
    no_column,
    rename_flags,
)
from kvlint.manifests.node_memory import gpu_memory_of
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word, split_script
from kvlint.manifests.yaml_values import (
    TEMPLATE,
    get_list,
    get_map,
    get_str,
    is_object,
    item_line,
    key_line,
    loc_float,
    loc_int,
    node_line,
    object_name,
    to_bool,
    to_int,
    value_line,
)

__all__ = ["DynamoParser", "KServeParser", "RayServiceParser", "VllmRuntimeParser"]


def _words_of_string(text: Any) -> list[Word]:
    if not isinstance(text, str) or not text.strip():
        return []
    try:
        commands = split_script(text)
    except (ValueError, IndexError):
        return [Word(part, node_line(text)) for part in str(text).split()]
    return [w for command in commands for w in command]


# ============================================================================================
# KServe
# ============================================================================================

KSERVE_KINDS = ("InferenceService", "ServingRuntime", "ClusterServingRuntime",
                "LLMInferenceService")
LLM_FORMATS = ("huggingface", "vllm")


def storage_model(uri: str, line: int | None, column: int | None,
                  source: str) -> tuple[Located[str] | Unresolved, list[str]]:
    """A model storage URI: ``hf://org/name`` is the Hub id; anything else (``s3://``,
    ``gs://``, ``pvc://``, a path) is where weights are copied from, not a model id."""
    text = uri.strip()
    scheme, sep, rest = text.partition("://")
    if sep and scheme == "hf" and rest.count("/") >= 1:
        return Located(rest.strip("/"), line, column, f"{source} (hf://)"), []
    notes = []
    last = text.rstrip("/").rsplit("/", 1)[-1]
    if "--" in last:
        hint = last.replace("--", "/", 1)
        notes.append(f"the storage path ends in {last}, which suggests the Hub model {hint} "
                     "('--' for '/'); map it with [tool.kvlint.models] if so")
    reason = ("the weights are read from a storage URI with an unset variable" if "${" in text
              else "the weights are read from a storage URI, not a Hub id")
    return Unresolved(reason, line, column, text), notes


PREDICTOR_IMPLEMENTATIONS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch",
                             "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle")
"""The v1beta1 predictor's implementations besides a custom ``containers`` list
(pkg/apis/serving/v1beta1/predictor.go@0217bdab, PredictorSpec)."""


class KServeParser(ManifestParser):
    """KServe ``serving.kserve.io``: InferenceService (v1beta1 predictor ``model`` with the
    Hugging Face runtime's vLLM backend, or custom ``containers``), ServingRuntime and
    ClusterServingRuntime (templates: the model comes from an InferenceService), and
    LLMInferenceService (v1alpha1/2: vLLM, ``spec.model``, ``spec.parallelism``, engine
    flags in env ``VLLM_ADDITIONAL_ARGS``; ``spec.template`` decodes, ``spec.prefill``
    prefills)."""

    name = "kserve"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("serving.kserve.io/",), KSERVE_KINDS)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        kind = document.get("kind")
        spec = get_map(document, "spec") or {}
        if kind == "InferenceService":
            return self._isvc(document, spec, ctx)
        if kind == "LLMInferenceService":
            return self._llmisvc(document, spec, ctx)
        return self._runtime(document, spec, ctx)

    # --- InferenceService ---------------------------------------------------------------

    def _isvc(self, document: dict[str, Any], spec: dict[str, Any],
              ctx: DocumentContext) -> list[ServedModel]:
        predictor = get_map(spec, "predictor") or {}
        name = object_name(document)
        notes = [f"predictor {k} {predictor[k]}" for k in ("minReplicas", "maxReplicas")
                 if predictor.get(k) is not None]
        out: list[ServedModel] = []
        containers = get_list(predictor, "containers") or []
        single = get_map(predictor, "container")
        if single is not None and not containers and not any(
                k in predictor for k in PREDICTOR_IMPLEMENTATIONS):
            self._refuse_single_container(document, predictor, ctx)
            notes.append("linted as the custom predictor predictor.containers: [that "
                         "container] would be")
            containers = [single]
        for container in containers:
            if not isinstance(container, dict):
                continue
            run = container_run(container, ctx)
            if run is not None:
                out.append(self._finish(ctx, run, predictor, container, name, notes))
        model = get_map(predictor, "model")
        if model is None or out:
            return out
        run = container_run(model, ctx) if model.get("command") else None
        runtime = get_str(model, "runtime")
        template = self._runtime_container(runtime, ctx) \
            if run is None and runtime else None
        image = image_of(template) if template is not None else None
        if image is not None and "huggingfaceserver" in image.value:
            template = None  # KServe's Hugging Face server: its own flags (_model_format)
        if template is not None:
            # KServe runs the runtime's container with the predictor's model spec merged in:
            # its args after the runtime's, its env beside, its resources in place
            model = {**template,
                     "resources": model.get("resources") or template.get("resources"),
                     "args": [*(get_list(template, "args") or []),
                              *(get_list(model, "args") or [])],
                     "env": [*(get_list(template, "env") or []),
                             *(get_list(model, "env") or [])],
                     "storageUri": model.get("storageUri")}
            run = container_run(model, ctx)
            notes.append(f"the container of ServingRuntime {runtime} (in this file), with "
                         "the predictor's args, env and resources")
        if run is None:
            run = self._model_format(get_map(predictor, "model") or {}, ctx)
        if run is None:
            return []
        uri = model.get("storageUri")
        more: list[str] = []
        if isinstance(uri, str) and (run.args.model is None or
                                     _is_model_mount(run.args.model)):
            # no model in the command, or the directory the storage initializer fills from
            # storageUri (the runtime's --model=/mnt/models): the model is storageUri's
            found, more = storage_model(uri, value_line(model, "storageUri"), None,
                                        "predictor.model.storageUri")
            run.overrides["model"] = found
        return [self._finish(ctx, run, predictor, model, name, [*notes, *more])]

    @staticmethod
    def _refuse_single_container(document: dict[str, Any], predictor: dict[str, Any],
                                 ctx: DocumentContext) -> None:
        """KV903 for ``predictor.container``: v1beta1's PredictorSpec has no such field
        (pkg/apis/serving/v1beta1/predictor.go@0217bdab: one implementation of ``model``,
        the framework specs, or the inline PodSpec's ``containers`` list), so the API
        server's strict field validation refuses the object and nothing is deployed."""
        if str(document.get("apiVersion", "")).endswith("/v1beta1"):
            refuse_object(
                ctx, key_line(predictor, "container"),
                f"InferenceService {object_name(document) or ''} puts its server under "
                "spec.predictor.container, but the v1beta1 predictor has no container field "
                "(a custom predictor is a containers list): kubectl's strict field "
                "validation refuses it (unknown field \"spec.predictor.container\") and "
                "nothing is deployed; write containers: [- name: kserve-container ...]")

    def _finish(self, ctx: DocumentContext, run: Run, predictor: dict[str, Any],
                container: dict[str, Any], name: str, notes: list[str]) -> ServedModel:
        args, overrides, more = follow_config(run, predictor, ctx)
        gpus, gpu_notes = pod_gpus(predictor, [container])
        worker = get_map(predictor, "workerSpec")
        if worker is not None:
            more.append("multi-node (predictor.workerSpec): GPUs are those of the head pod")
        return build(Origin(ctx, self.name, name=name), run, args=args,
                     hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(predictor),
                                       gpu_memory=gpu_memory_of(predictor)),
                     notes=[*notes, *gpu_notes, *more], overrides=overrides)

    @staticmethod
    def _model_format(model: dict[str, Any], ctx: DocumentContext) -> Run | None:
        """A predictor ``model`` without a command: the runtime of its ``modelFormat``."""
        fmt = get_str(get_map(model, "modelFormat"), "name") or ""
        if fmt.lower() not in LLM_FORMATS:
            return None
        words = [Word(w.text, w.line) for w in flat_words(model.get("args"))]
        backend = next((w.text.split("=", 1)[1] for w in words
                        if w.text.startswith("--backend=")), None)
        engine_key = "transformers" if backend == "huggingface" else "vllm"
        env = Env(container_env(model, ctx))
        args = with_env(parse_engine_args("vllm", rename_flags(words, HF_SERVER_FLAGS), env),
                        env)
        line = key_line(get_map(model, "modelFormat"), "name") or key_line(model, "modelFormat")
        engine = Located(engine_key, line, None,
                         f"modelFormat {fmt}: KServe's Hugging Face runtime "
                         f"({'transformers' if engine_key == 'transformers' else 'vLLM'} "
                         "backend)")
        image = image_of(model)
        runtime = get_str(model, "runtime")
        if image is None and runtime:
            image = KServeParser._runtime_image(runtime, ctx)
        version, notes = settle_version(engine_key, image)
        if image is None:
            notes.append("the image comes from the ServingRuntime"
                         + (f" {runtime}" if runtime else "")
                         + ", which is not in this file: the engine version is unknown")
        return Run(engine, args, line, model, image, version, [*notes, *args.notes])

    @staticmethod
    def _runtime_container(name: str, ctx: DocumentContext) -> dict[str, Any] | None:
        """The first container of a ServingRuntime/ClusterServingRuntime of this file named
        ``name``."""
        for doc in named(ctx.documents, name):
            if is_object(doc, ("serving.kserve.io/",), ("ServingRuntime",
                                                         "ClusterServingRuntime")) and \
                    object_name(doc) == name:
                for container in get_list(get_map(doc, "spec"), "containers") or []:
                    if isinstance(container, dict):
                        return container
        return None

    @staticmethod
    def _runtime_image(name: str, ctx: DocumentContext) -> Located[str] | None:
        """The image of a ServingRuntime/ClusterServingRuntime of this file named ``name``."""
        container = KServeParser._runtime_container(name, ctx)
        image = image_of(container) if container is not None else None
        return Located(image.value, image.line, image.column,
                       f"image of ServingRuntime {name}") if image is not None else None

    @staticmethod
    def _used_here(name: str, ctx: DocumentContext) -> bool:
        """Whether an InferenceService of this file names the runtime ``name``: it reports
        the model the runtime serves (the runtime is only its template)."""
        return any(is_object(doc, ("serving.kserve.io/",), ("InferenceService",)) and
                   get_str(get_map(get_map(get_map(doc, "spec"), "predictor"), "model"),
                           "runtime") == name
                   for doc in ctx.documents)

    # --- ServingRuntime -----------------------------------------------------------------

    def _runtime(self, document: dict[str, Any], spec: dict[str, Any],
                 ctx: DocumentContext) -> list[ServedModel]:
        if self._used_here(object_name(document), ctx):
            return []
        out = []
        notes = ["a serving runtime is a template: the model and the values the controller "
                 "injects come from the InferenceService that uses it"]
        worker = get_map(spec, "workerSpec")
        if worker is not None:
            defaults = ", ".join(f"{k} {worker[k]}" for k in ("tensorParallelSize",
                                                                "pipelineParallelSize")
                                 if worker.get(k) is not None)
            notes.append("multi-node runtime (workerSpec" + (f": {defaults}" if defaults
                                                             else "") + ")")
        for container in get_list(spec, "containers") or []:
            if not isinstance(container, dict):
                continue
            run = container_run(container, ctx)
            if run is None:
                continue
            args, overrides, more = follow_config(run, spec, ctx)
            model = args.model
            if not isinstance(model, Located) or TEMPLATE.search(model.value):
                text = model.text if isinstance(model, Unresolved) else (
                    model.value if isinstance(model, Located) else "${MODEL_ID}")
                why = f" ({model.reason})" if isinstance(model, Unresolved) else ""
                overrides["model"] = Unresolved(
                    "a serving runtime template: the model comes from the InferenceService"
                    + why, model.line if model is not None else run.line, None, text)
            served = args.served_name
            if isinstance(served, Located) and TEMPLATE.search(str(served.value)):
                overrides["served_name"] = None
                more.append(f"served name {served.value} is a KServe template")
            gpus, gpu_notes = pod_gpus(spec, [container])
            out.append(build(Origin(ctx, self.name, name=object_name(document)), run, args=args,
                             hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(spec),
                                               gpu_memory=gpu_memory_of(spec)),
                             notes=[*notes, *gpu_notes, *more], overrides=overrides))
        return out

    # --- LLMInferenceService ------------------------------------------------------------

    def _llmisvc(self, document: dict[str, Any], spec: dict[str, Any],
                 ctx: DocumentContext) -> list[ServedModel]:
        prefill = get_map(spec, "prefill")
        roles: list[tuple[str | None, dict[str, Any], str]] = [
            ("decode" if prefill is not None else None, spec, "spec")]
        if prefill is not None:
            roles.append(("prefill", prefill, "spec.prefill"))
        out = []
        for role, workload, where in roles:
            found = self._llm_role(document, spec, workload, where, role, ctx)
            if found is not None:
                out.append(found)
        return out

    def _llm_role(self, document: dict[str, Any], spec: dict[str, Any],
                  workload: dict[str, Any], where: str, role: str | None,
                  ctx: DocumentContext) -> ServedModel | None:
        pod = get_map(workload, "template")
        if pod is None:
            return None
        containers = [c for c in get_list(pod, "containers") or [] if isinstance(c, dict)]
        main = next((c for c in containers if get_str(c, "name") == "main"),
                    containers[0] if containers else {})
        notes = replicas_notes(workload, what=f"{role or 'server'} replicas")
        par = get_map(workload, "parallelism") or {}
        words: list[Word] = []
        for key, flag in (("tensor", "--tensor-parallel-size"),
                          ("pipeline", "--pipeline-parallel-size"),
                          ("data", "--data-parallel-size"),
                          ("dataLocal", "--data-parallel-size-local")):
            if par.get(key) is not None:
                words += [Word(flag, key_line(par, key)), Word(str(par[key]), key_line(par, key))]
        if to_bool(par.get("expert")):
            words.append(Word("--enable-expert-parallel", key_line(par, "expert")))
        env_values = container_env(main, ctx)
        extra = env_values.get("VLLM_ADDITIONAL_ARGS")
        words += _words_of_string(extra)
        run = container_run(main, ctx) if main.get("command") else None
        if run is None:
            args = with_env(parse_engine_args("vllm", words, Env(env_values)), Env(env_values))
            model_spec = get_map(spec, "model") or {}
            line = key_line(spec, "model") or node_line(pod)
            engine = Located("vllm", line, None, "LLMInferenceService (vLLM)")
            image = image_of(main)
            version, more = settle_version("vllm", image)
            if image is None:
                more.append("the image comes from the LLMInferenceServiceConfig: the vLLM "
                            "version is unknown")
            run = Run(engine, args, line, main, image, version, [*more, *args.notes])
            self._model(model_spec, run)
        elif _is_model_mount(run.args.model):
            # the command serves the directory KServe's storage initializer fills from
            # spec.model.uri: the model is that one
            self._model(get_map(spec, "model") or {}, run, mounted=True)
        if isinstance(extra, str):
            notes.append(f"engine flags from env VLLM_ADDITIONAL_ARGS (line {node_line(extra)})")
        args, overrides, more = follow_config(run, pod, ctx)
        per_pod, gpu_notes = pod_gpus(pod, containers)
        pods = 1
        if get_map(workload, "worker") is not None:
            data, local = to_int(par.get("data")), to_int(par.get("dataLocal"))
            if data and local and data % local == 0:
                pods = data // local
            else:
                more.append(f"{where}.worker: multi-node, but the pod count does not follow "
                            "from parallelism; GPUs are per pod")
        gpus = group_gpus(per_pod, pods, f"{pods} pods (parallelism data / dataLocal)")
        return build(Origin(ctx, self.name, name=object_name(document), role=role), run, args=args,
                     hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(pod),
                                       gpu_memory=gpu_memory_of(pod)),
                     notes=[*notes, *gpu_notes, *more], overrides=overrides)

    @staticmethod
    def _model(model_spec: dict[str, Any], run: Run, mounted: bool = False) -> None:
        """The served model from ``spec.model`` (``mounted``: the command names the mount
        path the weights are copied to, ``/mnt/models``; it is replaced when the URI names
        the model)."""
        uri = get_str(model_spec, "uri")
        name = get_str(model_spec, "name")
        if uri is None and name is None:
            return
        found: Located[str] | Unresolved | None = None
        if uri is not None:
            found, notes = storage_model(uri, value_line(model_spec, "uri"), None,
                                         "spec.model.uri")
            run.notes.extend(notes)
        if not isinstance(found, Located) and name:
            shown = f" (weights from {uri})" if uri else ""
            found = Located(name, value_line(model_spec, "name"), None,
                            f"spec.model.name{shown}")
            if uri:
                run.notes.append(f"the weights come from {uri}; spec.model.name {name} is "
                                 "taken as the model")
        if isinstance(found, Located) and name and name != found.value:
            run.overrides["served_name"] = name
        if run.args.model is None or (mounted and isinstance(found, Located)):
            run.overrides["model"] = found


KSERVE_MODEL_MOUNT = "/mnt/models"
"""Where KServe's storage initializer puts the weights of ``storageUri`` / ``spec.model.uri``
(kserve/kserve pkg/constants: DefaultModelLocalMountPath)."""


def _is_model_mount(model: object) -> bool:
    return isinstance(model, Located) and isinstance(model.value, str) and \
        model.value.rstrip("/") == KSERVE_MODEL_MOUNT


# ============================================================================================
# NVIDIA Dynamo
# ============================================================================================


class DynamoParser(ManifestParser):
    """NVIDIA Dynamo ``DynamoGraphDeployment``: one ServedModel per service whose main
    container runs ``python3 -m dynamo.vllm|sglang|trtllm``; GPUs ``resources.limits.gpu``
    x ``multinode.nodeCount``; the role from ``subComponentType`` or
    ``--disaggregation-mode``."""

    name = "dynamo"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("nvidia.com/",), ("DynamoGraphDeployment",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        services = get_map(spec, "services") or {}
        shared = get_list(spec, "envs") or []
        out = []
        for service_name, service in services.items():
            if not isinstance(service, dict):
                continue
            pod = get_map(service, "extraPodSpec") or {}
            main = get_map(pod, "mainContainer")
            if main is None:
                continue
            extra = container_env({"env": [*shared, *(get_list(service, "envs") or [])]}, ctx)
            run = container_run(main, ctx, extra_env=extra)
            if run is None:
                continue
            out.append(self._one(ctx, document, str(service_name), service, pod, main, run))
        return out

    def _one(self, ctx: DocumentContext, document: Any, service_name: str,
             service: dict[str, Any], pod: dict[str, Any], main: dict[str, Any],
             run: Run) -> ServedModel:
        notes = replicas_notes(service, what=f"{service_name} replicas")
        framework = get_str(get_map(document, "spec"), "backendFramework")
        if framework and framework != run.engine.value:
            notes.append(f"backendFramework {framework} differs from the engine the command "
                         f"starts ({run.engine.value})")
        role = get_str(service, "subComponentType")
        if role is None:
            words = flat_words(main.get("command")) + flat_words(main.get("args"))
            texts = [w.text for w in words]
            for i, text in enumerate(texts):
                if text == "--disaggregation-mode" and i + 1 < len(texts):
                    role = texts[i + 1]
                elif text.startswith("--disaggregation-mode="):
                    role = text.split("=", 1)[1]
            if role is None and service_name.lower() in ("prefill", "decode"):
                role = service_name.lower()
        resources = get_map(service, "resources") or {}
        per_pod: Located[int] | Unresolved | None = None
        for part in ("limits", "requests"):
            per_pod = int_at(get_map(resources, part), "gpu", f"resources.{part}.gpu")
            if per_pod is not None:
                break
        gpu_notes: list[str] = []
        if per_pod is None:
            per_pod, gpu_notes = pod_gpus(pod, [main])
        nodes_v = int_at(get_map(service, "multinode"), "nodeCount", "multinode.nodeCount")
        nodes = nodes_v.value if isinstance(nodes_v, Located) and nodes_v.value > 0 else 1
        gpus = group_gpus(per_pod, nodes, f"multinode.nodeCount {nodes}")
        args, overrides, more = follow_config(run, pod, ctx)
        return build(Origin(ctx, self.name, name=service_name, role=role), run, args=args,
                     hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(pod),
                                       gpu_memory=gpu_memory_of(pod)),
                     notes=[*notes, *gpu_notes, *more], overrides=overrides)


# ============================================================================================
# vLLM production-stack operator
# ============================================================================================


class VllmRuntimeParser(ManifestParser):
    """The production-stack operator's ``VLLMRuntime``: ``spec.model`` (modelURL,
    maxModelLen, maxNumSeqs), ``spec.vllmConfig`` (tensorParallelSize..., ``extraArgs``
    rendered after them), ``deploymentConfig`` (resources.gpu, image registry + name,
    replicas)."""

    name = "vllm-runtime"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("production-stack.vllm.ai/",), ("VLLMRuntime",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        model_spec = get_map(spec, "model") or {}
        vc = get_map(spec, "vllmConfig") or {}
        deploy = get_map(spec, "deploymentConfig") or {}
        url = get_str(model_spec, "modelURL")
        model = Located(url, value_line(model_spec, "modelURL"), None, "spec.model.modelURL") \
            if url else None

        def num(obj: dict[str, Any], key: str, where: str) -> Located[int] | Unresolved | None:
            return loc_int(obj, key, f"{where}.{key}")

        chart = EngineArgs(
            engine="vllm", model=model,
            tp=num(vc, "tensorParallelSize", "vllmConfig"),
            pp=num(vc, "pipelineParallelSize", "vllmConfig"),
            dp=num(vc, "dataParallelSize", "vllmConfig"),
            max_model_len=num(model_spec, "maxModelLen", "model") or num(vc, "maxModelLen",
                                                                         "vllmConfig"),
            max_num_seqs=num(model_spec, "maxNumSeqs", "model") or num(vc, "maxNumSeqs",
                                                                       "vllmConfig"),
            gpu_memory_utilization=loc_float(vc, "gpuMemoryUtilization",
                                             "vllmConfig.gpuMemoryUtilization"),
        )
        kv = vc.get("kvCacheDtype") or model_spec.get("kvCacheDtype")
        if isinstance(kv, str):
            holder = vc if "kvCacheDtype" in vc else model_spec
            chart = replace(chart, kv_cache_dtype=Located(
                kv, key_line(holder, "kvCacheDtype"), None, "kvCacheDtype"))
        args = chart
        extra = get_list(vc, "extraArgs")
        env = Env(container_env({"env": get_list(vc, "env") or []}, ctx))
        if extra:
            flags = parse_engine_args("vllm", flat_words(extra), env)
            values = {k: getattr(flags, k) if getattr(flags, k) is not None
                      else getattr(chart, k) for k in ("model", "tp", "pp", "dp",
                                                        "kv_cache_dtype", "max_model_len",
                                                        "max_num_seqs",
                                                        "gpu_memory_utilization",
                                                        "served_name", "expert_parallel")}
            args = EngineArgs(engine="vllm", notes=flags.notes, **values)
        args = with_env(args, env)
        image = self._image(get_map(deploy, "image"))
        version, notes = settle_version("vllm", image)
        engine = Located("vllm", key_line(model_spec, "modelURL") or node_line(spec), None,
                         "VLLMRuntime (vllm serve modelURL)")
        run = Run(engine, args, engine.line, {}, image, version, notes)
        resources = get_map(deploy, "resources") or {}
        gpus = loc_int(resources, "gpu", "deploymentConfig.resources.gpu")
        kind = get_str(resources, "gpuType")
        more = replicas_notes(deploy, what="VLLMRuntime replicas")
        if kind:
            more.append(f"GPU resource {kind}")
        if get_map(deploy, "sidecarConfig") is not None:
            more.append("the sidecar container is not an engine")
        return [build(Origin(ctx, self.name, name=object_name(document)), run,
                      hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(deploy),
                                        gpu_memory=gpu_memory_of(deploy)), notes=more)]

    @staticmethod
    def _image(spec: dict[str, Any] | None) -> Located[str] | None:
        name = get_str(spec, "name")
        if not name:
            return None
        registry = get_str(spec, "registry")
        text = f"{registry.rstrip('/')}/{name}" if registry and not name.startswith(registry) \
            else name
        return Located(text, value_line(spec, "name"), None,
                       "deploymentConfig.image registry + name")


# ============================================================================================
# KubeRay RayService
# ============================================================================================

APP_ENV = (("model", ("MODEL_ID", "MODEL_NAME", "MODEL")),
           ("tp", ("TENSOR_PARALLELISM", "TENSOR_PARALLEL_SIZE", "TP_SIZE")),
           ("pp", ("PIPELINE_PARALLELISM", "PIPELINE_PARALLEL_SIZE", "PP_SIZE")),
           ("max_model_len", ("MAX_MODEL_LEN",)),
           ("max_num_seqs", ("MAX_NUM_SEQS",)))


_CLI_MODEL_KEYS = frozenset({"model", "model-path", "model_path", "model-id", "model_id"})
"""Keys of a custom Serve app's ``args`` that name the model as an engine option does."""


class RayServiceParser(ManifestParser):
    """KubeRay ``RayService``: ``serveConfigV2`` is a Ray Serve config in a string. An
    application serves an engine when ``runtime_env.pip`` installs one (the pin is its
    version) or it builds a ``ray.serve.llm`` app; the model and parallelism come from
    ``llm_configs`` or, for custom apps, from ``runtime_env.env_vars`` whose names say what
    they are (``MODEL_ID``, ``TENSOR_PARALLELISM``...: app-specific, so said in ``source``).
    GPUs are those of one worker pod of the GPU worker group."""

    name = "ray-service"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("ray.io/",), ("RayService",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        text = spec.get("serveConfigV2")
        config, _problem = embedded_yaml(text, ctx.path)
        if config is None:
            return []
        cluster = get_map(spec, "rayClusterConfig") or {}
        gpus, gpu_type, image, notes = self._workers(cluster)
        out: list[ServedModel] = []
        for app in get_list(config, "applications") or []:
            if isinstance(app, dict):
                llm = self._llm_configs(ctx, app, gpu_type, image)
                if llm:
                    out.extend(llm)
                    continue
                found = self._app(ctx, document, app, gpus, gpu_type, image, notes)
                if found is not None:
                    out.append(found)
        return out

    def _llm_configs(self, ctx: DocumentContext, app: dict[str, Any],
                     gpu_type: Located[str] | None, image: Located[str] | None
                     ) -> list[ServedModel]:
        """Each inline LLMConfig of a ``ray.serve.llm`` app, read as a Ray Serve config's
        (model_source over model_id, a replica's GPUs from its own parallel sizes); the
        worker image dates vLLM when no pip pin does, the worker pods' GPU type is the
        default."""
        from kvlint.manifests.ray_serve import llm_config_model

        import_path = get_str(app, "import_path") or ""
        app_args = get_map(app, "args") or {}
        configs = [c for c in get_list(app_args, "llm_configs") or [] if isinstance(c, dict)]
        if isinstance(get_map(app_args, "llm_config"), dict):
            configs.append(get_map(app_args, "llm_config") or {})
        out = []
        for conf in configs:
            served = llm_config_model(conf, ctx, app, import_path)
            if served.engine_version is None:
                version, more = settle_version("vllm", image, self._pins(
                    get_map(app, "runtime_env") or {}))
                served = replace(served, engine_version=version, image=image,
                                 notes=(*served.notes, *more))
            if served.gpu_type is None and gpu_type is not None:
                served = replace(served, gpu_type=gpu_type)
            out.append(served)
        return out

    @staticmethod
    def _workers(cluster: dict[str, Any]) -> tuple[Located[int] | Unresolved | None,
                                                   Located[str] | None, Located[str] | None,
                                                   list[str]]:
        notes: list[str] = []
        for group in get_list(cluster, "workerGroupSpecs") or []:
            pod = get_map(get_map(group, "template"), "spec")
            gpus, _ = pod_gpus(pod)
            if gpus is None:
                continue
            name = get_str(group, "groupName") or "workers"
            counts = ", ".join(f"{k} {group[k]}" for k in ("replicas", "minReplicas",
                                                          "maxReplicas")
                               if group.get(k) is not None)
            notes.append(f"GPUs are those of one pod of worker group {name}" +
                         (f" ({counts})" if counts else ""))
            containers = get_list(pod, "containers") or [{}]
            if isinstance(gpus, Located):
                gpus = Located(gpus.value, gpus.line, gpus.column,
                               f"workerGroupSpecs[{name}] {gpus.source}")
            return gpus, gpu_type_of(pod), image_of(containers[0]), notes
        head = get_map(get_map(get_map(cluster, "headGroupSpec"), "template"), "spec")
        gpus, _ = pod_gpus(head)
        containers = get_list(head, "containers") or [{}]
        return gpus, gpu_type_of(head), image_of(containers[0]), notes

    def _app(self, ctx: DocumentContext, document: Any, app: dict[str, Any],
             gpus: Located[int] | Unresolved | None, gpu_type: Located[str] | None,
             image: Located[str] | None, notes: list[str]) -> ServedModel | None:
        runtime = get_map(app, "runtime_env") or {}
        pins = self._pins(runtime)
        import_path = get_str(app, "import_path") or ""
        app_args = get_map(app, "args") or {}
        llm_configs = [c for c in get_list(app_args, "llm_configs") or [] if isinstance(c, dict)]
        if isinstance(get_map(app_args, "llm_config"), dict):
            llm_configs.append(get_map(app_args, "llm_config") or {})
        engine_key: str | None = pins[0].engine if pins else None
        line = pins[0].line if pins else None
        source = f"runtime_env.pip {pins[0].spec}" if pins else ""
        if engine_key is None and ("ray.serve.llm" in import_path or llm_configs or
                                   re.search(r"(?<![a-z0-9])vllm(?![a-z0-9])",
                                             import_path.lower())):
            engine_key, line = "vllm", key_line(app, "import_path")
            source = f"import_path {import_path} (vLLM)"
        cli_args = _CLI_MODEL_KEYS & set(map(str, app_args))
        if engine_key is None and image is not None and cli_args:
            # a custom app (vLLM's Ray Serve example: build_app(cli_args) parses its args
            # as the server's options) on an engine's image
            engine_key = engine_from_image(image.value)[0]
            line, source = key_line(app, "import_path"), f"the workers' image {image.value}"
        if engine_key is None:
            return None
        engine = Located(engine_key, line, None, source)
        version, more = settle_version(engine_key, image, pins)
        env_vars = get_map(runtime, "env_vars") or {}
        fields: dict[str, Any] = {}
        for key, names in APP_ENV:
            for var in names:
                if env_vars.get(var) is None:
                    continue
                where = f"runtime_env.env_vars.{var} (read by the app's own code)"
                if key == "model":
                    fields[key] = Located(str(env_vars[var]), value_line(env_vars, var), None,
                                          where)
                else:
                    fields[key] = no_column(loc_int(env_vars, var, where))
                break
        args = EngineArgs(engine=engine_key)
        app_notes = [*notes, *more]
        if cli_args and not llm_configs:
            # the app's args named as the engine's options (model, tensor-parallel-size...)
            args = config_args(engine_key, app_args, "the app's args.")
            app_notes.append("the app's args are read as the engine's options, as vLLM's "
                             "Ray Serve example (build_app(cli_args)) passes them")
        if llm_configs:
            conf = llm_configs[0]
            loading = get_map(conf, "model_loading_config") or {}
            kwargs = get_map(conf, "engine_kwargs") or {}
            args = config_args("vllm", kwargs, "llm_config engine_kwargs.")
            model_id = get_str(loading, "model_id")
            if model_id:
                fields["model"] = Located(model_id, value_line(loading, "model_id"), None,
                                          "llm_config model_loading_config.model_id")
            accel = get_str(conf, "accelerator_type")
            if accel:
                gpu_type = Located(accel, value_line(conf, "accelerator_type"), None,
                                   "llm_config accelerator_type")
            if len(llm_configs) > 1:
                app_notes.append(f"{len(llm_configs)} llm_configs; the first is reported")
        if import_path and not llm_configs:
            app_notes.append(f"custom Serve app {import_path}: its code is not in the manifest"
                             "; the env var names are read for what they say")
        run = Run(engine, args, line, app, image, version, [])
        return build(Origin(ctx, self.name, name=get_str(app, "name") or object_name(document)),
                     run, hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=app_notes,
                     overrides={k: no_column(v) for k, v in fields.items()})

    @staticmethod
    def _pins(runtime: dict[str, Any]) -> list[Pin]:
        pip = runtime.get("pip")
        if isinstance(pip, dict):
            pip = pip.get("packages")
        pins: list[Pin] = []
        for i, spec in enumerate(pip if isinstance(pip, list) else []):
            if not isinstance(spec, str):
                continue
            found = engine_from_pip(spec)
            if found is not None:
                pins.append(Pin(found[0], found[1], spec, item_line(pip, i)))
        return pins
