"""Model-serving platforms whose resources name a model and an engine and let a controller
write the pod: KubeAI ``kubeai.org/v1`` ``Model`` (substratusai/kubeai), Kthena
``workload.serving.volcano.sh`` ``ModelServing``/``ModelBooster`` (volcano-sh/kthena) and
llmaz ``llmaz.io`` ``OpenModel`` + ``inference.llmaz.io`` ``Playground``/``Service``/
``BackendRuntime`` (InftyAI/llmaz).

Each parser builds the engine container its controller builds (command, flags, env,
resources), then reads it with the pod machinery of :mod:`.kubernetes_containers` and
:mod:`.kubernetes`. What the controllers do was read from the projects' sources, cited per
parser. Values that live in the platform's installation (a Helm chart's default image, a
resource profile redefined by the operator) are not guessed: the model is the resource's own,
the version unresolved unless pinned.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from kvlint.manifests.base import (
    DocumentContext,
    Located,
    ManifestParser,
    ServedModel,
    Unresolved,
    named,
)
from kvlint.manifests.engine_launch import Hardware, Origin
from kvlint.manifests.kubernetes import (
    build,
    gpu_type_of,
    group_gpus,
    int_at,
    lead_and_workers_gpus,
    pod_gpus,
    pod_models,
    replicas_notes,
)
from kvlint.manifests.kubernetes_containers import Run, container_runs, follow_config
from kvlint.manifests.node_memory import gpu_memory_of
from kvlint.manifests.yaml_values import (
    env_items,
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

__all__ = ["KthenaParser", "KubeAIModelParser", "LlmazParser", "ResourceModel", "serve_pod"]

GPU = Located[int] | Unresolved | None
Model = Located[str] | Unresolved | None


# ============================================================================================
# shared
# ============================================================================================


def _storage_model(uri: str, line: int | None, source: str) -> tuple[Model, list[str]]:
    # not at module level: the KServe module is only imported when a document needs it
    from kvlint.manifests.kubernetes_crds import storage_model

    return storage_model(uri, line, None, source)


@dataclass(frozen=True)
class ResourceModel:
    """What a platform resource says of its model past the pod its controller builds.
    ``placed``: the model argument the controller wrote; while the engine still reads it (no
    flag of the user's replaced it) the model is ``model``, the resource's own (with no
    ``placed``, whatever the engine reads). ``version``: the engine version when the pod's
    image does not say it."""

    model: Model = None
    placed: str | None = None
    version: Located[str] | Unresolved | None = None


NO_RESOURCE_MODEL = ResourceModel()


def serve_pod(origin: Origin, pod: dict[str, Any], *, hardware: Hardware, notes: list[str],
           resource: ResourceModel = NO_RESOURCE_MODEL,
           extra_env: Mapping[str, str | None] | None = None,
           runs: list[Run] | None = None) -> list[ServedModel]:
    """One ServedModel per engine the (controller-built) ``pod`` starts, with the model and
    engine version of ``resource``; the GPU type (unless ``hardware`` gives it) and the GPU
    memory are the pod's."""
    ctx = origin.ctx
    model, placed, version = resource.model, resource.placed, resource.version
    out = []
    for run in runs if runs is not None else container_runs(pod, ctx, extra_env=extra_env):
        args, overrides, more = follow_config(run, pod, ctx)
        given = args.model
        if model is not None and (placed is None or (isinstance(given, Located)
                                                     and given.value == placed)):
            overrides["model"] = model
        if version is not None and run.version is None:
            run = replace(run, version=version)
        on_pod = replace(hardware, gpu_type=hardware.gpu_type or gpu_type_of(pod),
                         gpu_memory=hardware.gpu_memory or gpu_memory_of(pod))
        out.append(build(origin, run, args=args, hardware=on_pod, notes=[*notes, *more],
                         overrides=overrides))
    return out


def _where(obj: Any, key: str) -> int | None:
    return value_line(obj, key) if isinstance(obj, dict) and key in obj else None


# ============================================================================================
# KubeAI
# ============================================================================================

KUBEAI_PROFILES: dict[str, tuple[str | None, str | None, str]] = {
    "cpu": (None, None, "cpu"),
    "nvidia-gpu-t4": ("nvidia.com/gpu", "T4", "nvidia-gpu"),
    "nvidia-gpu-l4": ("nvidia.com/gpu", "L4", "nvidia-gpu"),
    "nvidia-gpu-l40s": ("nvidia.com/gpu", "L40S", "nvidia-gpu"),
    "nvidia-gpu-h100": ("nvidia.com/gpu", "H100", "nvidia-gpu"),
    "nvidia-gpu-gh200": ("nvidia.com/gpu", "GH200", "gh200"),
    "nvidia-gpu-a100-80gb": ("nvidia.com/gpu", "A100-80GB", "nvidia-gpu"),
    "nvidia-gpu-a100-40gb": ("nvidia.com/gpu", "A100-40GB", "nvidia-gpu"),
    "nvidia-gpu-a16": ("nvidia.com/gpu", "A16", "nvidia-gpu"),
    "nvidia-gpu-rtx4070-8gb": ("nvidia.com/gpu", "RTX-4070-8GB", "nvidia-gpu"),
    "amd-gpu-mi300x": ("amd.com/gpu", "MI300X", "amd-gpu"),
    "google-tpu-v5e-1x1": ("google.com/tpu", None, "google-tpu"),
    "google-tpu-v5e-2x2": ("google.com/tpu", None, "google-tpu"),
    "google-tpu-v5e-2x4": ("google.com/tpu", None, "google-tpu"),
}
"""KubeAI's default resource profiles -> (the device each unit requests, one of them, the GPU
the name stands for, the server image name): charts/kubeai/values.yaml@147c6558 (each GPU
profile limits 1 device) and values-gke.yaml@3c37aedb (the TPU profiles)."""

KUBEAI_VLLM_IMAGES = {
    "default": "vllm/vllm-openai:v0.8.3", "nvidia-gpu": "vllm/vllm-openai:v0.8.3",
    "cpu": "substratusai/vllm:v0.6.3.post1-cpu", "google-tpu": "substratusai/vllm:v0.6.4.post1-tpu",
    "gh200": "substratusai/vllm-gh200:v0.8.3",
    "amd-gpu": "substratusai/vllm-rocm:nightly_main_20250120",
}
"""``modelServers.VLLM.images`` of the same chart version: named in notes, never taken as the
image (the installed chart's values are not in the manifest)."""


class KubeAIModelParser(ManifestParser):
    """KubeAI ``kubeai.org/v1`` ``Model``. For ``engine: VLLM`` the controller runs one
    container ``python3 -m vllm.entrypoints.openai.api_server --model=<ref>
    --served-model-name=<metadata.name>`` (``--load-format=runai_streamer`` for ``s3://``),
    then ``spec.args``, then ``--enable-lora`` when there are adapters; ``spec.env`` is its
    environment. ``--model`` is the ``hf://`` repository, ``/model`` for a ``pvc://`` URL
    (the claim mounted there), the URL for ``s3://``, the cache directory with a
    ``cacheProfile``. The image is ``spec.image``, else the installation's
    ``modelServers.VLLM.images`` entry for the profile's ``imageName`` (its version is then
    unresolved). ``resourceProfile: NAME:N`` multiplies the profile's requests and limits
    by N; the default profiles each limit one GPU. The other engines (OLlama, Infinity,
    FasterWhisper) serve nothing kvlint lints.

    Read: substratusai/kubeai@bb5ec0f3fc1c907c239b04242435396389aac94e
    api/k8s/v1/model_types.go, @2f32ef498da629f96fd417ddfaaf22c28d40787e
    internal/modelcontroller/engine_vllm.go (vLLMPodForModel) and model_source.go
    (parseModelURL), @8324c9e160f2ebe47a29d677e2702c6a72486e01
    internal/modelcontroller/model_controller.go (getModelConfig: profile multiplier,
    lookupServerImage), @147c655832bb185bb6a4f986c9931a85adfc6ce5 charts/kubeai/values.yaml
    and charts/models/values.yaml@71573d0f2b9bb62450a520c574b35314fe194404.
    """

    name = "kubeai"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("kubeai.org/",), ("Model",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        engine = get_str(spec, "engine")
        if engine is None or engine.lower() != "vllm":
            return []
        name = object_name(document)
        url = (get_str(spec, "url") or "").strip()
        url_line = _where(spec, "url") or node_line(spec)
        notes: list[str] = []
        scheme, _, ref = url.partition("://")
        ref = ref.split("?", 1)[0]
        flag = ref
        extra: list[Any] = []
        if spec.get("cacheProfile"):
            flag = f"/models/{name}-$(UID)"
            notes.append(f"cacheProfile {spec['cacheProfile']}: vLLM reads the weights from "
                         f"the profile's shared cache (/models/{name}-<uid>)")
        elif scheme == "s3":
            flag = url
            extra.append(lstr("--load-format=runai_streamer", url_line))
        if scheme == "pvc":
            flag = "/model"
            notes.append(f"the weights are read from the claim {ref.split('/', 1)[0]}, "
                         "mounted at /model")
        model, more = _storage_model(url, url_line, "spec.url")
        notes.extend(more)
        args = [lstr(f"--model={flag}", url_line),
                lstr(f"--served-model-name={name}", key_line(get_map(document, "metadata"),
                                                             "name")),
                *extra, *(get_list(spec, "args") or [])]
        env = env_items(get_map(spec, "env"))
        if get_list(spec, "adapters"):
            args.append(lstr("--enable-lora", key_line(spec, "adapters")))
            env.insert(0, {"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"})
        engine_line = value_line(spec, "engine")
        container: dict[str, Any] = {
            "name": "server", "args": args, "env": env, "envFrom": spec.get("envFrom") or [],
            "command": [lstr(w, engine_line) for w in
                        ("python3", "-m", "vllm.entrypoints.openai.api_server")]}
        image = get_str(spec, "image")
        if image:
            container["image"] = spec["image"]
        gpus, gpu_type, image_name = self._profile(spec, notes)
        version: Unresolved | None = None
        if not image:
            default = KUBEAI_VLLM_IMAGES.get(image_name, KUBEAI_VLLM_IMAGES["default"])
            version = Unresolved(
                f"no spec.image: the vLLM image is the KubeAI installation's "
                f"modelServers.VLLM.images.{image_name} (the chart's default was {default}), "
                "which is not in the manifest", key_line(spec, "engine"), None, image_name)
        for key in ("replicas", "minReplicas", "maxReplicas"):
            if spec.get(key) is not None:
                notes.append(f"{key}: {spec[key]}, each replica with the GPUs reported")
        return serve_pod(Origin(ctx, self.name, name=name), {"containers": [container]},
                      hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes,
                      resource=ResourceModel(model=model, placed=flag, version=version))

    @staticmethod
    def _profile(spec: dict[str, Any], notes: list[str]
                 ) -> tuple[GPU, Located[str] | None, str]:
        text = get_str(spec, "resourceProfile")
        line = _where(spec, "resourceProfile")
        if not text:
            notes.append("no resourceProfile: the pod requests no GPU")
            return None, None, "default"
        profile, sep, times = text.partition(":")
        count = int(times) if sep and times.strip().isdigit() else None
        if count is None:
            return Unresolved(f"resourceProfile {text} is not NAME:COUNT", line, None,
                              text), None, "default"
        known = KUBEAI_PROFILES.get(profile)
        if known is None:
            notes.append(f"resource profile {profile} is not one of KubeAI's defaults: its "
                         "GPU type and image are the installation's")
            return Unresolved(f"resource profile {profile} is not one of KubeAI's default "
                              "profiles: what one unit requests is in the installation's "
                              "config", line, None, text), None, "default"
        device, gpu, image_name = known
        where = f"resourceProfile {text} (KubeAI default profile {profile})"
        gpu_type = Located(gpu, line, None, where) if gpu else None
        if device is None:
            notes.append(f"resource profile {profile} requests no GPU")
            return None, None, image_name
        if device == "google.com/tpu":
            notes.append(f"resource profile {profile}: {count} TPU chips; TPUs are not counted "
                         "as GPUs")
            return None, None, image_name
        notes.append("resource profiles are the installation's: KubeAI's default definition "
                     f"of {profile} is assumed")
        return Located(count, line, None, f"{where}: {count} x 1 {device}"), gpu_type, \
            image_name


# ============================================================================================
# Kthena
# ============================================================================================


def _go_text(value: Any) -> str | None:
    """A JSON config value as Kthena's ConvertVLLMArgsFromJson writes it (Go ``%v`` of the
    decoded value: numbers are float64, so 1000000 is ``1e+06``); ``None`` for a map or a
    list, which no flag takes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            number = Decimal(repr(float(value))).normalize()
        except InvalidOperation:
            return str(value)
        exponent = number.adjusted()
        if -4 <= exponent < 6:
            return format(number, "f")
        sign, digits, _ = number.as_tuple()
        mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1
                                     else "")
        return f"{'-' if sign else ''}{mantissa}e{'+' if exponent >= 0 else '-'}" \
               f"{abs(exponent):02d}"
    if isinstance(value, dict | list):
        return None
    return "" if value is None else str(value)


def _config_flags(config: Any, notes: list[str]) -> list[Any]:
    """A worker's ``config`` as vLLM flags: keys sorted, ``--`` + key with ``_`` as ``-``,
    the value after it unless empty."""
    if not isinstance(config, dict):
        return []
    out: list[Any] = []
    for key in sorted(config, key=str):
        text = _go_text(config[key])
        line = key_line(config, key)
        if text is None:
            notes.append(f"config {key} is a map or list: Kthena writes it as no valid flag")
            continue
        out.append(lstr("--" + str(key).replace("_", "-"), line))
        if text:
            out.append(lstr(text, value_line(config, key) or line))
    return out


def _cache_path(uri: str) -> str:
    _, sep, rest = uri.strip().partition("://")
    path = rest.split("?", 1)[0].strip("/") if sep else ""
    return "/" + path if path else ""


class KthenaParser(ManifestParser):
    """Kthena ``workload.serving.volcano.sh``: ``ModelServing`` (``spec.template.roles``:
    each role an entry pod plus ``workerReplicas`` worker pods; the controller injects
    ``GROUP_SIZE`` = workerReplicas + 1 and ``WORKER_INDEX``, 0 for the entry) gives one
    ServedModel per role, the role name as ``role``, the GPUs of the entry and its workers.
    ``ModelBooster`` (``spec.backend``): ``vLLM`` runs ``python3 -m
    vllm.entrypoints.openai.api_server --model <cache>/<md5 of modelURI>`` plus the first
    worker's ``config`` as flags, on ``pods`` pods of the ``server`` worker (a Ray cluster
    when more than one); ``vLLMDisaggregated`` runs a ``prefill`` and a ``decode`` pod, each
    with its own config. The model is ``modelURI`` (``hf://`` is the Hub id). Other backend
    types are refused by the controller.

    Read: volcano-sh/kthena@7a58c9b32cdb159dc38677459e8a677dcd6c4ce7
    pkg/apis/workload/v1alpha1/servinggroup_types.go (Role), model_serving_types.go
    @3cc057284c34469fcb0ed22a12dac84b1d120719, @02c61f4fbda8d5ad95e2faa5e2132b879cce375d
    model_booster_types.go, @e6e6c545060cf7e419a1e6d7a71ff3728bb05f14
    pkg/model-serving-controller/utils/utils.go (createCommonEnvVars),
    @b103d6298aed11625ca4d38abe23ffec48717d13 pkg/model-booster-controller/convert/
    model_serving.go (buildCommands, GetCachePath, GetMountPath) and its templates,
    @2dd0eee80845403162c677cebba16083a5b6ae5f pkg/model-booster-controller/utils/template.go
    (ConvertVLLMArgsFromJson), examples/model-serving/multi-node.yaml@a9ed01f7 and
    examples/model-booster/prefill-decode-disaggregation.yaml@61c059a3.
    """

    name = "kthena"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("workload.serving.volcano.sh/",),
                         ("ModelServing", "ModelBooster"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        spec = get_map(document, "spec") or {}
        if document.get("kind") == "ModelBooster":
            backends = [get_map(spec, "backend"), *(get_list(spec, "backends") or [])]
            return [m for b in backends if isinstance(b, dict)
                    for m in self._booster(ctx, document, b)]
        notes = replicas_notes(spec, what="ServingGroups")
        if get_list(spec, "plugins"):
            notes.append("spec.plugins: the plugins' changes to the pods are not applied")
        out: list[ServedModel] = []
        for role in get_list(get_map(spec, "template"), "roles") or []:
            if isinstance(role, dict):
                out.extend(self._role(ctx, document, role, notes))
        return out

    def _role(self, ctx: DocumentContext, document: Any, role: dict[str, Any],
              notes: list[str]) -> list[ServedModel]:
        name = get_str(role, "name") or ""
        entry = get_map(get_map(role, "entryTemplate"), "spec")
        if entry is None:
            return []
        more = [*notes, *replicas_notes(role, what=f"{name} replicas")]
        workers_v = int_at(role, "workerReplicas", f"{name}.workerReplicas")
        workers = workers_v.value if isinstance(workers_v, Located) and workers_v.value > 0 \
            else 0
        platform = {"GROUP_SIZE": str(workers + 1), "WORKER_INDEX": "0"}
        worker = get_map(get_map(role, "workerTemplate"), "spec")
        if workers == 0 or worker is None:
            return pod_models(Origin(ctx, self.name, name=object_name(document), role=name), entry,
                              notes=more, platform=platform, multinode=True)
        runs = container_runs(entry, ctx, platform=platform)
        used = entry
        if not runs:
            runs = container_runs(worker, ctx, platform={**platform, "WORKER_INDEX": "1"})
            used = worker
            more.append("the entry pod starts no engine; the workers' command is reported")
        lead, gpu_notes = pod_gpus(entry)
        work, _ = pod_gpus(worker)
        more.append(f"workerReplicas {workers} (line {key_line(role, 'workerReplicas')}): one "
                    f"model served by {workers + 1} pods")
        gpus = lead_and_workers_gpus(lead, work, workers,
                                     f"an entry and workerReplicas {workers}", "entry")
        return serve_pod(Origin(ctx, self.name, name=object_name(document), role=name), used,
                      hardware=Hardware(gpus=gpus), notes=[*more, *gpu_notes], runs=runs)

    def _booster(self, ctx: DocumentContext, document: Any,
                 backend: dict[str, Any]) -> list[ServedModel]:
        kind = get_str(backend, "type") or ""
        workers = [w for w in get_list(backend, "workers") or [] if isinstance(w, dict)]
        by_type = {get_str(w, "type") or "server": w for w in workers}
        uri = get_str(backend, "modelURI") or ""
        path = _cache_path(get_str(backend, "cacheURI") or "") + "/" + hashlib.md5(
            uri.encode(), usedforsecurity=False).hexdigest()
        model, notes = _storage_model(uri, _where(backend, "modelURI"), "backend.modelURI")
        notes.append(f"the weights are downloaded to {path} by Kthena's downloader")
        name = object_name(document)
        if kind == "vLLM" and "server" in by_type:
            server = by_type["server"]
            pods_v = int_at(server, "pods", "server.pods")
            pods = pods_v.value if isinstance(pods_v, Located) and pods_v.value > 1 else 1
            parts: list[tuple[dict[str, Any], Any, str | None, int]] = [
                (server, workers[0].get("config"), None, pods)]
            if pods > 1:
                notes.append(f"pods {pods} (line {pods_v.line if pods_v else None}): vLLM "
                             "over a Ray cluster of the pods (--distributed_executor_backend "
                             "ray)")
        elif kind == "vLLMDisaggregated" and {"prefill", "decode"} <= set(by_type):
            parts = [(by_type[r], by_type[r].get("config"), r, 1) for r in ("prefill", "decode")]
        else:
            return []  # the controller builds no ModelServing for it
        notes.extend(replicas_notes(backend, what="ModelServing ServingGroups"))
        out: list[ServedModel] = []
        for worker, config, role, pods in parts:
            more = [*notes, *replicas_notes(worker, what=f"{role or 'server'} replicas")]
            line = value_line(worker, "type") or node_line(worker)
            command = [lstr(w, line) for w in ("python3", "-m",
                                               "vllm.entrypoints.openai.api_server",
                                               "--model", path)]
            command += _config_flags(config, more)
            if pods > 1:
                command += [lstr("--distributed_executor_backend", line), lstr("ray", line)]
            container: dict[str, Any] = {"name": "engine", "command": command,
                                         "env": get_list(backend, "env") or [],
                                         "envFrom": get_list(backend, "envFrom") or [],
                                         "resources": get_map(worker, "resources") or {}}
            if get_str(worker, "image"):
                container["image"] = worker["image"]
            pod = {"containers": [container], "affinity": get_map(worker, "affinity") or {}}
            per_pod, gpu_notes = pod_gpus(pod)
            gpus = group_gpus(per_pod, pods, f"pods {pods}")
            out.extend(serve_pod(Origin(ctx, self.name, name=name, role=role), pod,
                              hardware=Hardware(gpus=gpus), notes=[*more, *gpu_notes],
                              resource=ResourceModel(model=model, placed=path),
                              extra_env={"VLLM_USE_V1": "1"}))
        return out


# ============================================================================================
# llmaz
# ============================================================================================

LLMAZ_MODEL_DIR = "/workspace/models/"
LLMAZ_RUNTIMES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str, str]] = {
    "vllm": (("python3", "-m", "vllm.entrypoints.openai.api_server"),
             ("--model", "{{ .ModelPath }}", "--served-model-name", "{{ .ModelName }}",
              "--host", "0.0.0.0", "--port", "8080"), "vllm/vllm-openai", "v0.7.3"),
    "sglang": (("python3", "-m", "sglang.launch_server"),
               ("--model-path", "{{ .ModelPath }}", "--served-model-name", "{{ .ModelName }}",
                "--host", "0.0.0.0", "--port", "8080"), "lmsysorg/sglang", "v0.4.5-cu121"),
    "llamacpp": (("./llama-server",), ("-m", "{{ .ModelPath }}", "--host", "0.0.0.0",
                                        "--port", "8080", "--metrics"),
                 "ghcr.io/ggerganov/llama.cpp", "server"),
    "tgi": (("text-generation-launcher",), ("--model-id", "{{ .ModelPath }}", "--port", "8080"),
            "ghcr.io/huggingface/text-generation-inference", "2.3.1"),
    "tensorrt-llm": (("trtllm-serve",), ("{{ .ModelPath }}", "--host", "0.0.0.0", "--port",
                                          "8080"), "nvcr.io/nvidia/tritonserver",
                     "25.03-trtllm-python-py3"),
}
"""The ``default`` recommended config of the BackendRuntimes llmaz's Helm chart installs
(command, args, image repository, the chart's image tag; TGI's command is its image's
entrypoint): chart/templates/backends/*.yaml@2ca4feedf6bc40f6ec6f8a3acedd60b52f9bc50d,
chart/values.global.yaml@4a29db2b."""


def _render(items: list[Any], values: Mapping[str, str]) -> list[Any]:
    out = []
    for item in items:
        text = str(item)
        for key, value in values.items():
            for form in (f"{{{{ .{key} }}}}", f"{{{{.{key}}}}}"):
                text = text.replace(form, value)
        out.append(item if text == str(item) else lstr(text, node_line(item)))
    return out


def _main_ref(claims: Any) -> Any:
    models = [m for m in get_list(claims, "models") or [] if isinstance(m, dict)]
    return next((m for m in models if get_str(m, "role") in (None, "main")), None)


class LlmazParser(ManifestParser):
    """llmaz: a ``Playground`` claims an ``OpenModel`` (``modelClaim.modelName``, or
    ``modelClaims.models`` with a main and a draft model) and runs it on a
    ``BackendRuntime`` (``backendRuntimeConfig.backendName``, default ``vllm``): the
    runtime's ``command``, its recommended config's ``args`` (``default``, or
    ``speculative-decoding`` with a draft model) with ``{{ .ModelPath }}``/
    ``{{ .ModelName }}`` filled in, then the Playground's ``args``; image
    ``<runtime image>:<version>`` (the Playground's ``version`` wins); resources the
    Playground's over the recommended config's, then the limits of the model's inference
    flavor (the claimed one, else the first). The model path is
    ``/workspace/models/models--ORG--NAME`` (the file for a GGUF ``filename``), the id
    itself with the ``llmaz.io/skip-model-loader`` annotation. A runtime not in the file is
    the chart's of that name, its version unresolved. A ``Service`` is a LeaderWorkerSet
    template (``workloadTemplate``: ``size`` pods, an optional ``leaderTemplate``) whose
    ``model-runner`` gets the flavor limits; a ``BackendRuntime`` no Playground of the file
    uses is reported as a template. An ``OpenModel`` serves nothing by itself.

    Read: InftyAI/llmaz@43f79d3c906d9fa2c5007c1d3307994178d403e8
    api/core/v1alpha1/model_types.go, @20fc66dc67782fcbaf0be35b97d7aee22c36dd24
    api/inference/v1alpha1/playground_types.go and service_types.go,
    @568e6e4e2fa102b4b48156f9159d6926221cf07a backendruntime_types.go,
    @175260ac2486b94a5220bd1bcf1e5f4a2cce66c8 config_types.go,
    @ea979b89d56ae9f84bb7a7547963c83f3676c37d pkg/controller/inference/playground_controller.go
    (buildTemplate), @67d5b73cd09b88624f83aecddb96581b9170e8fd service_controller.go
    (injectModelFlavor), @2bdc3768d4c2f37804386498fd9b0e6910e8346c
    pkg/controller_helper/backendruntime/backendruntime.go,
    @dbdb8c935599165d6a0472bf33f5b4b23828c33c pkg/controller_helper/modelsource/ and
    docs/examples/multi-nodes/service.yaml@f2ed8e03.
    """

    name = "llmaz"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("llmaz.io/",), ("OpenModel",)) or is_object(
            document, ("inference.llmaz.io/",), ("Playground", "Service", "BackendRuntime"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        kind = document.get("kind")
        spec = get_map(document, "spec") or {}
        if kind == "Playground":
            return self._playground(ctx, document, spec)
        if kind == "Service":
            return self._service(ctx, document, spec)
        if kind == "BackendRuntime":
            return self._template(ctx, document, spec)
        return []

    # --- the pieces ---------------------------------------------------------------------

    @staticmethod
    def _find(ctx: DocumentContext, name: str | None, api: str, kind: str) -> dict[str, Any] | None:
        for doc in named(ctx.documents, name or ""):
            if is_object(doc, (api,), (kind,)) and isinstance(doc, dict):
                return doc
        return None

    def _source(self, ctx: DocumentContext, name: str | None, line: int | None, skip: bool
                ) -> tuple[Model, str | None, str, dict[str, Any] | None, list[str]]:
        """The claimed OpenModel: (model, its path in the pod, its served name, the
        document, notes)."""
        doc = self._find(ctx, name, "llmaz.io/", "OpenModel")
        if doc is None:
            return Unresolved(f"the OpenModel {name} is not in this file", line, None,
                              name or ""), None, name or "", None, []
        source = get_map(get_map(doc, "spec"), "source") or {}
        hub = get_map(source, "modelHub")
        uri = get_str(source, "uri")
        notes: list[str] = []
        if hub is not None:
            model_id = get_str(hub, "modelID") or ""
            where = _where(hub, "modelID")
            filename = get_str(hub, "filename")
            path = model_id if skip else LLMAZ_MODEL_DIR + (
                filename or "models--" + model_id.replace("/", "--"))
            hub_name = get_str(hub, "name") or "Huggingface"
            if filename:
                notes.append(f"the engine loads the file {filename} of {model_id}")
            if hub_name != "Huggingface":
                return Unresolved(f"OpenModel {name}: a {hub_name} model id, not a Hugging "
                                  "Face one; map it with [tool.kvlint.models]", where, None,
                                  model_id), path, object_name(doc), doc, notes
            return Located(model_id, where, None, f"OpenModel {name} source.modelHub.modelID"
                           ), path, object_name(doc), doc, notes
        if uri:
            protocol, _, address = uri.partition("://")
            tail = address.rstrip("/").rsplit("/", 1)[-1]
            path = address if protocol.upper() == "HOST" else uri if skip else \
                LLMAZ_MODEL_DIR + (tail if ".gguf" in address else "models--" + tail)
            model, more = _storage_model(uri, _where(source, "uri"),
                                         f"OpenModel {name} source.uri")
            served = address if protocol.upper() == "OLLAMA" else object_name(doc)
            return model, path, served, doc, more
        return Unresolved(f"OpenModel {name} names no source", line, None, name or ""), \
            None, object_name(doc), doc, notes

    @staticmethod
    def _flavor(model_doc: dict[str, Any] | None, claims: Any
                ) -> tuple[dict[str, Any], Located[str] | None, list[str]]:
        """The inference flavor the Service controller applies: its limits, GPU type."""
        flavors = [f for f in get_list(get_map(get_map(model_doc, "spec"), "inferenceConfig"),
                                       "flavors") or [] if isinstance(f, dict)]
        if not flavors:
            return {}, None, []
        wanted = [str(f) for f in get_list(claims, "inferenceFlavors") or []]
        name = wanted[0] if wanted else get_str(flavors[0], "name")
        flavor = next((f for f in flavors if get_str(f, "name") == name), None)
        if flavor is None:
            return {}, None, [f"inference flavor {name} is not one of the model's"]
        selector = get_map(flavor, "nodeSelector")
        gpu_type = gpu_type_of({"nodeSelector": selector}) if selector else None
        if gpu_type is not None:
            gpu_type = replace(gpu_type, source=f"inference flavor {name} {gpu_type.source}")
        return get_map(flavor, "limits") or {}, gpu_type, [
            f"resources from the model's inference flavor {name}"]

    @staticmethod
    def _with_limits(container: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
        if not limits:
            return container
        resources = dict(get_map(container, "resources") or {})
        for part in ("limits", "requests"):
            merged = copy.copy(limits)  # the flavor's, with its lines, over the container's
            for key, value in (get_map(resources, part) or {}).items():
                merged.setdefault(key, value)
            resources[part] = merged
        return {**container, "resources": resources}

    # --- Playground ---------------------------------------------------------------------

    def _playground(self, ctx: DocumentContext, document: dict[str, Any],
                    spec: dict[str, Any]) -> list[ServedModel]:
        claim = get_map(spec, "modelClaim")
        claims = claim if claim is not None else get_map(spec, "modelClaims")
        ref = {"name": get_str(claim, "modelName")} if claim is not None else _main_ref(claims)
        draft = next((m for m in get_list(claims, "models") or []
                      if get_str(m, "role") == "draft"), None) if claim is None else None
        line = (value_line(claim, "modelName") if claim is not None else
                value_line(ref, "name") if ref else None) or node_line(spec)
        annotations = get_map(get_map(document, "metadata"), "annotations") or {}
        skip = get_str(annotations, "llmaz.io/skip-model-loader") == "true"
        model, path, served, model_doc, notes = self._source(ctx, get_str(ref, "name"), line,
                                                             skip)
        config = get_map(spec, "backendRuntimeConfig") or {}
        backend = get_str(config, "backendName") or get_str(config, "name") or "vllm"
        runtime = self._find(ctx, backend, "inference.llmaz.io/", "BackendRuntime")
        rspec = get_map(runtime, "spec") or {}
        config_name = get_str(config, "configName") or (
            "speculative-decoding" if draft is not None else "default")
        legacy_args = get_map(config, "args")  # before llmaz 0.1: {name, flags}
        if legacy_args is not None:
            config_name = get_str(legacy_args, "name") or config_name
        values = {"ModelPath": path or "", "ModelName": served}
        if draft is not None:
            _, draft_path, _, _, _ = self._source(ctx, get_str(draft, "name"), line, skip)
            values["DraftModelPath"] = draft_path or ""
        version_text = get_str(config, "version")
        if runtime is None and backend not in LLMAZ_RUNTIMES:
            notes.append(f"the BackendRuntime {backend} is not in this file nor one llmaz "
                         "installs")
            return [ServedModel(path=ctx.path, line=line or 1, format=self.name,
                                document=ctx.index, name=object_name(document), model=model,
                                notes=tuple(notes))]
        if runtime is None:
            command, args, repo, _ = LLMAZ_RUNTIMES[backend]
            recommended: dict[str, Any] = {"args": list(args)}
            image = f"{repo}:{version_text}" if version_text else None
            notes.append(f"BackendRuntime {backend} is not in this file: the one llmaz's "
                         "chart installs is assumed")
            at = _where(config, "backendName") or key_line(spec, "backendRuntimeConfig") or line
            container: dict[str, Any] = {"command": [lstr(w, at) for w in command]}
        else:
            recommended = next(
                (r for r in get_list(rspec, "recommendedConfigs") or get_list(rspec, "args")
                 or [] if get_str(r, "name") == config_name), {})
            if "flags" in recommended:
                recommended = {**recommended, "args": recommended["flags"]}
            base_version = version_text or get_str(rspec, "version")
            image = f"{get_str(rspec, 'image')}:{base_version}" \
                if get_str(rspec, "image") and base_version else None
            container = {"command": get_list(rspec, "command") or get_list(rspec, "commands")
                         or []}
            notes.append(f"engine from the BackendRuntime {backend}, recommended config "
                         f"{config_name}")
        extra = get_list(config, "args") or get_list(legacy_args, "flags") or []
        container["args"] = [*_render(get_list(recommended, "args") or [], values), *extra]
        env = {get_str(e, "name"): e for e in get_list(rspec, "envs") or []}
        env.update({get_str(e, "name"): e for e in get_list(config, "envs") or []})
        container["env"] = list(env.values())
        base = get_map(recommended, "resources") or get_map(rspec, "resources") or {}
        mine = get_map(config, "resources") or {}
        container["resources"] = {part: {**(get_map(base, part) or {}),
                                         **(get_map(mine, part) or {})}
                                  for part in ("limits", "requests")}
        version: Unresolved | None = None
        if image:
            container["image"] = lstr(image, _where(config, "version") or
                                      _where(rspec, "version"))
        else:
            default = LLMAZ_RUNTIMES.get(backend)
            version = Unresolved(
                f"the image of the llmaz installation's BackendRuntime {backend} is not in "
                "the manifest" + (f" (the chart's default tag was {default[3]})"
                                  if default else ""), key_line(spec, "backendRuntimeConfig")
                or line, None, backend)
        limits, gpu_type, more = self._flavor(model_doc, claims)
        container = self._with_limits(container, limits)
        pod = {"containers": [container]}
        gpus, gpu_notes = pod_gpus(pod)
        notes += [*more, *gpu_notes, *replicas_notes(spec, what="Playground replicas")]
        return serve_pod(Origin(ctx, self.name, name=object_name(document)), pod,
                      hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes,
                      resource=ResourceModel(model=model, placed=path, version=version))

    # --- Service ------------------------------------------------------------------------

    def _service(self, ctx: DocumentContext, document: dict[str, Any],
                 spec: dict[str, Any]) -> list[ServedModel]:
        claims = get_map(spec, "modelClaims")
        ref = _main_ref(claims)
        line = value_line(ref, "name") if ref else None
        annotations = get_map(get_map(document, "metadata"), "annotations") or {}
        skip = get_str(annotations, "llmaz.io/skip-model-loader") == "true"
        model, path, _, model_doc, notes = self._source(ctx, get_str(ref, "name"), line, skip)
        template = get_map(spec, "workloadTemplate") or {}
        limits, gpu_type, more = self._flavor(model_doc, claims)
        notes += [*more, *replicas_notes(spec, what="Service replicas")]
        size_v = int_at(template, "size", "workloadTemplate.size")
        size = size_v.value if isinstance(size_v, Located) and size_v.value > 0 else 1

        def pod_of(key: str) -> dict[str, Any] | None:
            pod = get_map(get_map(template, key), "spec")
            if pod is None:
                return None
            runners = [self._with_limits(c, limits) if get_str(c, "name") == "model-runner"
                       else c for c in get_list(pod, "containers") or []]
            return {**pod, "containers": runners}

        leader, worker = pod_of("leaderTemplate"), pod_of("workerTemplate")
        platform = {"LWS_GROUP_SIZE": str(size), "LWS_WORKER_INDEX": "0"}
        main = leader or worker
        if main is None:
            return []
        runs = container_runs(main, ctx, platform=platform)
        lead, gpu_notes = pod_gpus(main)
        work, _ = pod_gpus(worker) if worker is not None else (None, [])
        gpus = lead_and_workers_gpus(lead, work, size - 1, f"workloadTemplate.size {size}", "entry")
        if size > 1:
            notes.append(f"workloadTemplate.size {size}: one model served by {size} pods")
        return serve_pod(Origin(ctx, self.name, name=object_name(document)), main,
                      hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=[*notes, *gpu_notes],
                      resource=ResourceModel(model=model, placed=path), runs=runs)

    # --- BackendRuntime -----------------------------------------------------------------

    def _template(self, ctx: DocumentContext, document: dict[str, Any],
                  spec: dict[str, Any]) -> list[ServedModel]:
        name = object_name(document)
        for doc in ctx.documents:
            if is_object(doc, ("inference.llmaz.io/",), ("Playground",)):
                config = get_map(get_map(doc, "spec"), "backendRuntimeConfig") or {}
                if (get_str(config, "backendName") or get_str(config, "name")
                        or "vllm") == name:
                    return []  # reported with the Playground that uses it
        recommended: dict[str, Any] = next(
            (r for r in get_list(spec, "recommendedConfigs") or []
             if get_str(r, "name") == "default"), {})
        container: dict[str, Any] = {
            "command": get_list(spec, "command") or [],
            "args": _render(get_list(recommended, "args") or [],
                            {"ModelPath": "/workspace/models/model", "ModelName": name}),
            "env": get_list(spec, "envs") or [],
            "resources": get_map(recommended, "resources") or {}}
        if get_str(spec, "image") and get_str(spec, "version"):
            container["image"] = lstr(f"{spec['image']}:{spec['version']}",
                                      _where(spec, "version"))
        pod = {"containers": [container]}
        gpus, gpu_notes = pod_gpus(pod)
        model = Unresolved("a BackendRuntime is a template: the model comes from the "
                           "Playground that uses it", key_line(spec, "recommendedConfigs") or
                           node_line(spec), None, "{{ .ModelPath }}")
        return serve_pod(Origin(ctx, self.name, name=name), pod,
                      hardware=Hardware(gpus=gpus),
                      notes=["an llmaz BackendRuntime is a template: the model and its "
                             "flavor come from the Playground that uses it", *gpu_notes],
                      resource=ResourceModel(model=model, placed="/workspace/models/model"))
