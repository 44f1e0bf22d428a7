"""Serving packs: operators that turn a short model resource into a vLLM pod. Nebari's LLM
serving pack (``llm.nebari.dev`` ``LLMModel``) and revving-ai's vLLM operator
(``core.vllmoperator.org`` ``VllmDeployment``) are read here; the pod machinery is
:mod:`.platforms`' (:func:`~kvlint.manifests.platforms.serve_pod`)."""

from __future__ import annotations

from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.engine_launch import Hardware, Origin
from kvlint.manifests.kubernetes import int_at
from kvlint.manifests.platforms import ResourceModel, serve_pod
from kvlint.manifests.yaml_values import (
    get_list,
    get_map,
    get_str,
    is_object,
    key_line,
    lstr,
    node_line,
    object_name,
    value_line,
)

__all__ = ["MODEL_PATH", "NEBARI_DEFAULT_IMAGE", "NebariLLMModelParser", "VllmDeploymentParser"]

MODEL_PATH = "/model-cache"
"""Where the operator mounts the model for vLLM (``modelCachePath``, operator/internal/
controller/reconcilers/storage.go@502536264e025064eaf38143a0ed31e86ab127dc)."""
NEBARI_DEFAULT_IMAGE = "ghcr.io/llm-d/llm-d-cuda:v0.7.0"
"""The operator's ``LLM_DEFAULT_SERVING_IMAGE`` default (operator/internal/config/config.go
@502536264e025064eaf38143a0ed31e86ab127dc): an installation may set another."""
_COMMAND = ("python3", "-m", "vllm.entrypoints.openai.api_server")


class NebariLLMModelParser(ManifestParser):
    """Nebari LLM serving pack ``llm.nebari.dev`` ``LLMModel``. The operator builds one
    Deployment whose ``vllm`` container runs ``spec.serving.command`` (default ``python3 -m
    vllm.entrypoints.openai.api_server``) with ``--model /model-cache`` (where its storage
    puts the weights) ``--served-model-name <spec.model.name> --tensor-parallel-size
    <spec.serving.tensorParallelism, default spec.resources.gpu.count> --data-parallel-size
    <spec.serving.dataParallelism, default 1>``, then ``spec.serving.vllmArgs``, then
    ``spec.advanced.vllm.extraArgs``; its GPU limit is ``spec.resources.gpu.count``
    (``nvidia.com/gpu``, over ``spec.resources.limits``), its environment
    ``spec.advanced.vllm.extraEnv``, its node selector ``spec.advanced.vllm.nodeSelector``.
    The image is ``spec.serving.image``, else the installation's default (the version is then
    unresolved). The served model is ``spec.model.name`` (a Hugging Face id for ``source:
    huggingface``); ``replicas`` copies of the pod each get the GPUs reported.

    Read: nebari-dev/llm-serving-pack@502536264e025064eaf38143a0ed31e86ab127dc
    operator/api/v1alpha1/llmmodel_types.go, operator/internal/controller/reconcilers/
    modelservice.go (buildVLLMContainer, buildVLLMArgs, buildResourceLimits), storage.go
    (modelCachePath) and operator/internal/config/config.go.
    """

    name = "nebari"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("llm.nebari.dev/",), ("LLMModel",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        model_spec = get_map(spec, "model") or {}
        serving = get_map(spec, "serving") or {}
        resources = get_map(spec, "resources") or {}
        gpu = get_map(resources, "gpu") or {}
        vllm = get_map(get_map(spec, "advanced"), "vllm") or {}
        name = get_str(model_spec, "name")
        if not name:
            return []
        model_line = value_line(model_spec, "name") or node_line(model_spec)
        source = get_str(model_spec, "source") or "huggingface"
        notes: list[str] = []
        model: Located[str] | Unresolved
        if source == "huggingface":
            model = Located(name, model_line, None, "spec.model.name")
        else:
            model = Unresolved(f"spec.model.source {source}: the weights come from "
                               f"{get_str(model_spec, 'image') or 'storage'}, not a Hub id",
                               model_line, None, name)
        count = int_at(gpu, "count", "spec.resources.gpu.count")
        args: list[Any] = [lstr("--model", model_line), lstr(MODEL_PATH, model_line),
                           lstr("--served-model-name", model_line), lstr(name, model_line)]
        for flag, holder, key, default in (
                ("--tensor-parallel-size", serving, "tensorParallelism", gpu.get("count")),
                ("--data-parallel-size", serving, "dataParallelism", 1)):
            value = holder.get(key, default)
            line = value_line(holder, key) or value_line(gpu, "count") or model_line
            if value is not None:  # a missing gpu.count: the API server refuses the object
                args += [lstr(flag, line), lstr(str(value), line)]
        args += [*(get_list(serving, "vllmArgs") or []), *(get_list(vllm, "extraArgs") or [])]
        command = get_list(serving, "command") or [
            lstr(w, key_line(document, "spec")) for w in _COMMAND]
        limits = dict(get_map(resources, "limits") or {})
        if isinstance(count, Located) and count.value > 0:
            limits["nvidia.com/gpu"] = gpu["count"]
        container: dict[str, Any] = {
            "name": "vllm", "command": command, "args": args,
            "env": get_list(vllm, "extraEnv") or [],
            "resources": {"limits": limits, "requests": get_map(resources, "requests") or {}}}
        image = get_str(serving, "image")
        version: Unresolved | None = None
        if image:
            container["image"] = serving["image"]
        else:
            version = Unresolved(
                "no spec.serving.image: the image is the operator's LLM_DEFAULT_SERVING_IMAGE "
                f"(by default {NEBARI_DEFAULT_IMAGE}), not in the manifest",
                key_line(spec, "serving") or model_line, None, NEBARI_DEFAULT_IMAGE)
        pod: dict[str, Any] = {"containers": [container]}
        if get_map(vllm, "nodeSelector"):
            pod["nodeSelector"] = vllm["nodeSelector"]
        replicas = serving.get("replicas")
        if isinstance(replicas, int) and replicas != 1:
            notes.append(f"spec.serving.replicas {replicas}: each replica with the GPUs "
                         "reported")
        gpu_type = get_str(gpu, "type")
        if gpu_type and gpu_type.lower() != "nvidia":
            notes.append(f"spec.resources.gpu.type {gpu_type}: the operator still asks for "
                         "nvidia.com/gpu")
        return serve_pod(Origin(ctx, self.name, name=object_name(document)), pod,
                         hardware=Hardware(gpus=count), notes=notes,
                         resource=ResourceModel(model=model, placed=MODEL_PATH,
                                                version=version))


_VLLM_OPERATOR_FLAGS = (("gpu-memory-utilization", "--gpu-memory-utilization"),
                        ("log-level", "--uvicorn-log-level"), ("block-size", "--block-size"),
                        ("max-model-len", "--max-model-len"), ("enforce-eager", "--enforce-eager"),
                        ("port", "--port"))
"""``spec.vLLMConfig`` keys in the order the operator writes their flags (convertVllmConfigToArgs,
internal/controller/vllmdeployment_controller.go@d771480bb749fade165ca6ae2058fc9552353698)."""


def _vllm_container(containers: list[Any]) -> dict[str, Any] | None:
    """The container the operator runs (getVllmContainer): the only one, else the first named
    ``vllm``; ``None`` when there is none to pick (the controller then stops on a nil)."""
    found = [c for c in containers if isinstance(c, dict)]
    if len(found) == 1:
        return found[0]
    return next((c for c in found if c.get("name") == "vllm"), None)


class VllmDeploymentParser(ManifestParser):
    """revving-ai's vLLM operator, ``core.vllmoperator.org/v1alpha1`` ``VllmDeployment``. The
    controller builds one Deployment (``spec.replicas``, 0 or unset: 1) whose pod runs one
    container: the ``spec.containers`` entry it picks (the only one, else the one named
    ``vllm``) keeps only its name, image, pull policy and environment; its ``command`` and
    ``args`` are dropped, so the image's entrypoint runs with the operator's arguments alone:
    ``--model <spec.model.name>``, then from ``spec.vLLMConfig`` ``--gpu-memory-utilization``,
    ``--uvicorn-log-level`` (``log-level``), ``--block-size``, ``--max-model-len``,
    ``--enforce-eager`` (when true) and ``--port``, each only when set (not empty, 0 or false).
    The operator writes no tensor-parallel size and no GPU request (the container's
    ``resources`` are dropped too), so the engine runs at tp 1 on no GPU the pod asked for.

    Read: revving-ai/vLLM-k8s-operator@d771480bb749fade165ca6ae2058fc9552353698
    api/v1alpha1/vllmdeployment_types.go and internal/controller/vllmdeployment_controller.go
    (convertVllmConfigToArgs, getVllmContainer, the Deployment it builds).
    """

    name = "vllm-operator"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("core.vllmoperator.org/",), ("VllmDeployment",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        model_spec = get_map(spec, "model") or {}
        config = get_map(spec, "vLLMConfig") or {}
        name = get_str(model_spec, "name")
        if not name:
            return []
        model_line = value_line(model_spec, "name") or node_line(model_spec)
        args: list[Any] = [lstr("--model", model_line), lstr(name, model_line)]
        for key, flag in _VLLM_OPERATOR_FLAGS:
            value = config.get(key)
            if value in (None, "", 0, False):
                continue
            line = value_line(config, key) or model_line
            args.append(lstr(flag, line))
            if value is not True:
                args.append(lstr(str(value), line))
        notes: list[str] = []
        chosen = _vllm_container(get_list(spec, "containers") or [])
        container: dict[str, Any] = {"name": "vllm", "args": args}
        version: Unresolved | None = None
        if chosen is None:
            version = Unresolved("spec.containers has no container the operator can pick (one "
                                 "container, or one named vllm): it builds no pod",
                                 key_line(spec, "containers") or model_line)
        else:
            for key in ("name", "image", "imagePullPolicy", "env"):
                if key in chosen:
                    container[key] = chosen[key]
            dropped = [key for key in ("command", "args", "resources") if chosen.get(key)]
            if dropped:
                notes.append(f"the operator drops the container's {', '.join(dropped)}: only "
                             "spec.model and spec.vLLMConfig reach vLLM")
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas > 1:
            notes.append(f"spec.replicas {replicas}: each replica as reported")
        return serve_pod(Origin(ctx, self.name, name=object_name(document)),
                         {"containers": [container], **({"tolerations": spec["tolerations"]}
                                                        if get_list(spec, "tolerations") else {})},
                         hardware=Hardware(), notes=notes,
                         resource=ResourceModel(model=Located(name, model_line, None,
                                                              "spec.model.name"),
                                                placed=None, version=version))
