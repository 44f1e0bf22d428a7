"""Serving operators whose custom resources turn into engine pods: RoleBasedGroup
``workloads.x-k8s.io/v1alpha2`` (sgl-project/rbg), AIBrix ``orchestration.aibrix.ai``
``StormService``/``RoleSet``/``RayClusterFleet`` (vllm-project/aibrix), OME ``ome.io``
``InferenceService`` + ``ServingRuntime``/``ClusterServingRuntime`` + ``(Cluster)BaseModel``
(sgl-project/ome) and KAITO ``kaito.sh`` ``Workspace`` with its ``inference_config.yaml``
ConfigMap (kaito-project/kaito).

What each controller does with the resource was read from the operators' sources (types
and controllers), cited per parser; the pod machinery is :mod:`.kubernetes_containers`'s and
:mod:`.kubernetes`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_launch import Hardware, Origin
from kvlint.manifests.flat_configs import config_args
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
from kvlint.manifests.kubernetes_containers import (
    Run,
    container_runs,
    embedded_yaml,
    follow_config,
    no_column,
)
from kvlint.manifests.node_memory import gpu_memory_of
from kvlint.manifests.yaml_values import (
    get_list,
    get_map,
    get_str,
    is_object,
    key_line,
    node_line,
    object_name,
    value_line,
)

__all__ = ["AibrixParser", "KaitoWorkspaceParser", "OmeParser", "RoleBasedGroupV2Parser"]

GPU = Located[int] | Unresolved | None


# ============================================================================================
# shared: pod templates patched the way the controllers patch them
# ============================================================================================


def _merge_container(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A container with ``patch``'s fields over ``base``'s (``env`` merged by name, the
    patch's entries winning), the way a strategic merge patch or OME's runner override
    treats the fields that matter here."""
    out = dict(base)
    for key, value in patch.items():
        if key == "env" and isinstance(value, list) and isinstance(base.get("env"), list):
            names = {get_str(e, "name") for e in value}
            out["env"] = [e for e in base["env"] if get_str(e, "name") not in names] + value
        elif key == "resources" and isinstance(value, dict) and isinstance(base.get(key), dict):
            out[key] = {**base[key], **value}
        else:
            out[key] = value
    return out


def _patch_pod(pod: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """A pod spec with a template patch (``{spec: {...}}``) applied: containers merged by
    name, other pod fields replaced."""
    spec = get_map(patch, "spec")
    out = dict(pod)
    if not spec:
        return out
    for key, value in spec.items():
        if key == "containers" and isinstance(value, list):
            containers = [c for c in get_list(pod, "containers") or [] if isinstance(c, dict)]
            for item in value:
                if not isinstance(item, dict):
                    continue
                at = next((i for i, c in enumerate(containers)
                           if get_str(c, "name") == get_str(item, "name")), None)
                if at is None:
                    containers.append(dict(item))
                else:
                    containers[at] = _merge_container(containers[at], item)
            out["containers"] = containers
        else:
            out[key] = value
    return out



def _runs_to_models(ctx: DocumentContext, fmt: str, runs: list[Run], pod: dict[str, Any], *,
                    name: str, role: str | None, gpus: GPU,
                    notes: list[str]) -> list[ServedModel]:
    out = []
    for run in runs:
        args, overrides, more = follow_config(run, pod, ctx)
        hardware = Hardware(gpus=gpus, gpu_type=gpu_type_of(pod), gpu_memory=gpu_memory_of(pod))
        out.append(build(Origin(ctx, fmt, name=name, role=role), run, args=args,
                         hardware=hardware, notes=[*notes, *more], overrides=overrides))
    return out


def _size(obj: Any, key: str, where: str) -> tuple[int, Located[int] | Unresolved | None]:
    found = int_at(obj, key, where)
    return (found.value if isinstance(found, Located) and found.value > 0 else 1), found


# ============================================================================================
# RoleBasedGroup v1alpha2
# ============================================================================================


class RoleBasedGroupV2Parser(ManifestParser):
    """RoleBasedGroup ``workloads.x-k8s.io/v1alpha2``: one ServedModel per role (per
    component of a ``customComponentsPattern``) that starts an engine, the role name as
    ``role``. A role's pod template is inline (``template``) or a ``templateRef`` to
    ``spec.roleTemplates`` with its ``patch``; ``standalonePattern`` makes one pod per
    replica, ``leaderWorkerPattern`` a group of ``size`` pods (the leader, then ``size - 1``
    workers, each template patched by ``leaderTemplatePatch``/``workerTemplatePatch``) whose
    GPUs are added up; the controller injects ``RBG_LWP_GROUP_SIZE``/``RBG_LWP_WORKER_INDEX``
    (the leader is index 0), ``RBG_ROLE_NAME``, ``RBG_GROUP_NAME``.

    Read: sgl-project/rbg@0c00546d31e7c9190f08729c10f1c74129244b55
    api/workloads/v1alpha2/rolebasedgroup_types.go (RoleSpec, Pattern, TemplateSource,
    LeaderWorkerPattern, InstanceComponent) and
    sgl-project/rbg@2100087724c6c50b56e0b21393973c5b3eeb7f3d api/workloads/constants/env.go.
    """

    name = "rbg-v1alpha2"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("workloads.x-k8s.io/v1alpha2",), ("RoleBasedGroup",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        templates = {get_str(t, "name"): get_map(t, "template")
                     for t in get_list(spec, "roleTemplates") or [] if isinstance(t, dict)}
        out: list[ServedModel] = []
        for role in get_list(spec, "roles") or []:
            if isinstance(role, dict):
                out.extend(self._role(ctx, document, role, templates))
        return out

    @staticmethod
    def _template(source: Any, templates: Mapping[str | None, Any],
                  notes: list[str]) -> dict[str, Any] | None:
        inline = get_map(get_map(source, "template"), "spec")
        if inline is not None:
            return inline
        ref = get_map(source, "templateRef")
        if ref is None:
            return None
        name = get_str(ref, "name")
        base = get_map(templates.get(name), "spec")
        if base is None:
            notes.append(f"templateRef {name} names no spec.roleTemplates entry of this object")
            return None
        notes.append(f"pod template from spec.roleTemplates {name}"
                     + (" with its patch" if get_map(ref, "patch") else ""))
        return _patch_pod(base, get_map(ref, "patch"))

    def _role(self, ctx: DocumentContext, document: Any, role: dict[str, Any],
              templates: Mapping[str | None, Any]) -> list[ServedModel]:
        role_name = get_str(role, "name") or ""
        group = object_name(document)
        notes = replicas_notes(role, what=f"{role_name} replicas")
        platform = {"RBG_GROUP_NAME": group, "RBG_ROLE_NAME": role_name}
        lwp = get_map(role, "leaderWorkerPattern")
        custom = get_map(role, "customComponentsPattern")
        if custom is not None:
            return self._components(ctx, group, role_name, custom, platform, notes)
        source = lwp if lwp is not None else (get_map(role, "standalonePattern") or role)
        pod = self._template(source, templates, notes)
        if pod is None:
            return []
        if lwp is None:
            return pod_models(Origin(ctx, self.name, name=group, role=role_name), pod, notes=notes,
                              platform=platform, multinode=True)
        size, size_v = _size(lwp, "size", f"{role_name}.leaderWorkerPattern.size")
        platform.update(RBG_LWP_GROUP_SIZE=str(size), RBG_LWP_WORKER_INDEX="0")
        leader = _patch_pod(pod, get_map(lwp, "leaderTemplatePatch"))
        worker = _patch_pod(pod, get_map(lwp, "workerTemplatePatch"))
        runs = container_runs(leader, ctx, platform=platform)
        used = leader
        if not runs:
            runs = container_runs(worker, ctx, platform={**platform, "RBG_LWP_WORKER_INDEX": "1"})
            used = worker
            notes.append("the leader starts no engine; the workers' command is reported")
        lead_gpus, gpu_notes = pod_gpus(leader)
        work_gpus, _ = pod_gpus(worker)
        if size > 1 and isinstance(size_v, Located):
            notes.append(f"leaderWorkerPattern size {size} (line {size_v.line}): one model "
                         f"served by {size} pods")
        gpus = lead_and_workers_gpus(lead_gpus, work_gpus, size - 1,
                                     f"leaderWorkerPattern size {size}")
        return _runs_to_models(ctx, self.name, runs, used, name=group, role=role_name,
                               gpus=gpus, notes=[*notes, *gpu_notes])

    def _components(self, ctx: DocumentContext, group: str, role_name: str,
                    custom: dict[str, Any], platform: dict[str, str],
                    notes: list[str]) -> list[ServedModel]:
        out = []
        for component in get_list(custom, "components") or []:
            pod = get_map(get_map(component, "template"), "spec")
            if pod is None:
                continue
            comp = get_str(component, "name") or ""
            size, _ = _size(component, "size", f"{role_name}.{comp}.size")
            out.extend(pod_models(Origin(ctx, self.name, name=group, role=f"{role_name}/{comp}"),
                                  pod, pods=size, pods_what=f"component {comp} size {size}",
                                  notes=notes, platform={**platform,
                                                         "RBG_COMPONENT_NAME": comp}))
        return out


# ============================================================================================
# AIBrix
# ============================================================================================


class AibrixParser(ManifestParser):
    """AIBrix ``orchestration.aibrix.ai``: ``StormService`` (``spec.template.spec.roles``
    of the RoleSet it stamps out; ``replicas`` RoleSets) and ``RoleSet`` (``spec.roles``):
    one ServedModel per role that starts an engine, the role name as ``role``; a role with
    ``podGroupSize`` N runs as a PodSet of N pods (the GPUs of all N; the controller injects
    ``PODSET_NAME``, ``POD_GROUP_INDEX`` (0 for the first pod) and ``POD_GROUP_SIZE``).
    ``RayClusterFleet``: a fleet of KubeRay clusters; the engine runs in the head pod and
    spans the Ray cluster, so its GPUs are the head pod's plus ``replicas`` x each worker
    group's pod.

    Read: vllm-project/aibrix@0066fbd7220ca4a822704fa861bf0fba43542925
    api/orchestration/v1alpha1/stormservice_types.go,
    @0a53a25fcb77b4d96b4c3cfe28b8b4fb19da09db api/orchestration/v1alpha1/roleset_types.go,
    @3ffbcdee8dc572d77391927e092d77f4a7a0a973 api/orchestration/v1alpha1/
    rayclusterfleet_types.go, @009aa45c880b2c07e823f97674c90a628aa5b436
    pkg/controller/podset/podset_controller.go (createPodFromTemplate: pod count and env),
    and the samples samples/disaggregation/sglang/tp-1p1d.yaml@6baddd3a and
    samples/distributed/fleet-two-node.yaml@75e6e274.
    """

    name = "aibrix"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("orchestration.aibrix.ai/",),
                         ("StormService", "RoleSet", "RayClusterFleet"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        spec = get_map(document, "spec") or {}
        kind = document.get("kind")
        if kind == "RayClusterFleet":
            return self._fleet(ctx, document, spec)
        notes: list[str] = []
        roles_of = spec
        if kind == "StormService":
            roles_of = get_map(get_map(spec, "template"), "spec") or {}
            notes = replicas_notes(spec, what="StormService RoleSets")
        out: list[ServedModel] = []
        for role in get_list(roles_of, "roles") or []:
            if isinstance(role, dict):
                out.extend(self._role(ctx, document, role, notes))
        return out

    def _role(self, ctx: DocumentContext, document: Any, role: dict[str, Any],
              notes: list[str]) -> list[ServedModel]:
        pod = get_map(get_map(role, "template"), "spec")
        if pod is None:
            return []
        role_name = get_str(role, "name") or ""
        more = [*notes, *replicas_notes(role, what=f"{role_name} replicas")]
        platform = {"ROLE_NAME": role_name, "ROLESET_INDEX": "0", "ROLE_REPLICA_INDEX": "0"}
        size, size_v = _size(role, "podGroupSize", f"{role_name}.podGroupSize")
        if size_v is not None:
            platform.update(PODSET_NAME=f"{object_name(document)}-{role_name}",
                            POD_GROUP_INDEX="0", POD_GROUP_SIZE=str(size))
        if size > 1:
            more.append(f"podGroupSize {size} (line {size_v.line if size_v else None}): one "
                        f"model served by a PodSet of {size} pods")
        return pod_models(Origin(ctx, self.name, name=object_name(document), role=role_name), pod,
                          pods=size, pods_what=f"podGroupSize {size}", notes=more,
                          platform=platform, multinode=size == 1)

    def _fleet(self, ctx: DocumentContext, document: Any,
               spec: dict[str, Any]) -> list[ServedModel]:
        cluster = get_map(get_map(spec, "template"), "spec") or {}
        head = get_map(get_map(get_map(cluster, "headGroupSpec"), "template"), "spec")
        if head is None:
            return []
        notes = replicas_notes(spec, what="RayClusterFleet Ray clusters")
        runs = container_runs(head, ctx)
        if not runs:
            return []
        gpus, gpu_notes = pod_gpus(head)
        parts = [f"head {gpus.value}"] if isinstance(gpus, Located) else []
        for group in get_list(cluster, "workerGroupSpecs") or []:
            pod = get_map(get_map(group, "template"), "spec")
            per_pod, _ = pod_gpus(pod)
            count, _ = _size(group, "replicas", "workerGroupSpecs.replicas")
            name = get_str(group, "groupName") or "workers"
            if isinstance(per_pod, Unresolved) or isinstance(gpus, Unresolved):
                gpus = per_pod if isinstance(per_pod, Unresolved) else gpus
                continue
            if per_pod is None:
                continue
            parts.append(f"{name} {count} x {per_pod.value}")
            total = (gpus.value if gpus is not None else 0) + count * per_pod.value
            where = gpus or per_pod
            gpus = Located(total, where.line, where.column, "")
        if isinstance(gpus, Located) and (len(parts) > 1 or not gpus.source):
            gpus = Located(gpus.value, gpus.line, gpus.column,
                           f"Ray cluster GPUs: {' + '.join(parts)}")
            notes.append("the engine runs on the Ray cluster: GPUs of the head pod and of "
                         "every worker pod")
        return _runs_to_models(ctx, self.name, runs, head, name=object_name(document),
                               role=None, gpus=gpus, notes=[*notes, *gpu_notes])


# ============================================================================================
# OME
# ============================================================================================

OME_RUNTIMES = ("ServingRuntime", "ClusterServingRuntime")
OME_MODELS = ("BaseModel", "ClusterBaseModel")


class OmeParser(ManifestParser):
    """OME ``ome.io``: an ``InferenceService`` names its model (``spec.model``: a
    ``BaseModel``/``ClusterBaseModel``) and its runtime (``spec.runtime``: a
    ``ServingRuntime``/``ClusterServingRuntime``); the runtime holds the engine
    (``engineConfig``: ``runner``, or ``leader`` + ``worker.size`` for multi-node) and, for
    prefill/decode disaggregation, the decoder (``decoderConfig``), both of which the
    InferenceService's ``engine``/``decoder`` override field by field. The controller sets
    ``MODEL_PATH`` to the model's ``storage.path`` and ``PARALLELISM_SIZE`` to GPUs per pod
    x pods (a leader and ``worker.size`` workers, deployed as a LeaderWorkerSet). One
    ServedModel per component (``prefill`` and ``decode`` when there is a decoder);
    the router is not an engine. A runtime with no InferenceService of this file using it
    is reported as a template (the model unresolved).

    Read: sgl-project/ome@07fae1954732025a45ca8f0308b71b0663fecf85
    pkg/apis/ome/v1beta1/inference_service.go, @0878bedc7c2012d8e8f9edbc2c0b1802aa5b5afa
    pkg/apis/ome/v1beta1/servingruntime_types.go, the engine/decoder components'
    setParallelismEnvVar and UpdateEnvVariables (pkg/controller/v1beta1/inferenceservice/
    components), and config/runtimes/srt/deepseek-rdma-pd-rt.yaml@0296bc41.
    """

    name = "ome"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("ome.io/",), ("InferenceService", *OME_RUNTIMES))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        spec = get_map(document, "spec") or {}
        if document.get("kind") == "InferenceService":
            return self._isvc(ctx, document, spec)
        name = object_name(document)
        if any(self._runtime_name(doc) == name for doc in ctx.documents
               if is_object(doc, ("ome.io/",), ("InferenceService",))):
            return []  # reported with the InferenceService that uses it
        model = Unresolved("a serving runtime template: the model comes from the "
                           "InferenceService that uses it", node_line(spec), None,
                           "$MODEL_PATH")
        return self._serve(ctx, name, spec, {}, None, model, [
            "an OME serving runtime is a template: the model and the values the controller "
            "injects come from the InferenceService that uses it"])

    @staticmethod
    def _runtime_name(isvc: Any) -> str | None:
        spec = get_map(isvc, "spec")
        return get_str(get_map(spec, "runtime"), "name") or get_str(
            get_map(get_map(spec, "predictor"), "model"), "runtime")

    @staticmethod
    def _find(ctx: DocumentContext, name: str | None,
              kinds: tuple[str, ...]) -> dict[str, Any] | None:
        for doc in named(ctx.documents, name or ""):
            if is_object(doc, ("ome.io/",), kinds) and isinstance(doc, dict):
                return doc
        return None

    def _isvc(self, ctx: DocumentContext, document: dict[str, Any],
              spec: dict[str, Any]) -> list[ServedModel]:
        ref = get_map(spec, "model")
        model_name = get_str(ref, "name") or get_str(
            get_map(get_map(spec, "predictor"), "model"), "baseModel")
        kind = get_str(ref, "kind") or "ClusterBaseModel"
        runtime_name = self._runtime_name(document)
        base = self._find(ctx, model_name, OME_MODELS)
        line = value_line(ref, "name") if ref else node_line(spec)
        storage = get_map(get_map(base, "spec"), "storage") or {}
        path = get_str(storage, "path")
        uri = get_str(storage, "storageUri")
        notes: list[str] = []
        model: Located[str] | Unresolved | None = None
        if base is None:
            model = Unresolved(f"the model is the {kind} {model_name}, which is not in this "
                               "file", line, None, model_name or "")
        elif uri is not None:
            # not at module level: the operators are detected before the workloads, so this
            # module is imported for every Kubernetes object, and the KServe module is not
            from kvlint.manifests.kubernetes_crds import storage_model

            found, more = storage_model(uri, value_line(storage, "storageUri"), None,
                                        f"{base.get('kind')} {model_name} storage.storageUri")
            notes.extend(more)
            if isinstance(found, Located):
                model = found
                if path:
                    notes.append(f"the weights are downloaded to {path} (MODEL_PATH)")
        runtime = self._find(ctx, runtime_name, OME_RUNTIMES)
        if runtime is None:
            why = (f"the runtime {runtime_name} is not in this file" if runtime_name else
                   "no runtime is named: OME selects one by the model's format and size")
            where = line or node_line(document) or 1
            return [ServedModel(
                path=ctx.path, line=where, format=self.name, document=ctx.index,
                name=object_name(document), model=model or Unresolved(
                    f"{why}: the engine command is unknown", where, None, model_name or ""),
                notes=(f"{why}: the engine, its flags and GPUs are unknown", *notes))]
        env = {"MODEL_PATH": path} if path else {}
        return self._serve(ctx, object_name(document), get_map(runtime, "spec") or {},
                           spec, env, model, [f"engine from {runtime.get('kind')} "
                                              f"{runtime_name}", *notes])

    def _serve(self, ctx: DocumentContext, name: str, runtime: dict[str, Any],
               isvc: dict[str, Any], env: dict[str, str] | None,
               model: Located[str] | Unresolved | None,
               notes: list[str]) -> list[ServedModel]:
        decoder = get_map(runtime, "decoderConfig") or get_map(isvc, "decoder")
        parts = [("engine", "engineConfig", "prefill" if decoder is not None else None)]
        if decoder is not None:
            parts.append(("decoder", "decoderConfig", "decode"))
        out: list[ServedModel] = []
        for isvc_key, runtime_key, role in parts:
            component = get_map(runtime, runtime_key)
            legacy = [c for c in get_list(runtime, "containers") or [] if isinstance(c, dict)]
            if component is None and runtime_key == "engineConfig" and legacy:
                component = {"runner": legacy[0], **{
                    k: v for k, v in runtime.items() if k in ("nodeSelector", "affinity")}}
            out.extend(self._component(ctx, name, component or {},
                                       get_map(isvc, isvc_key) or {}, role, env, model, notes))
        return out

    def _component(self, ctx: DocumentContext, name: str, rt: dict[str, Any],
                   over: dict[str, Any], role: str | None, env: dict[str, str] | None,
                   model: Located[str] | Unresolved | None,
                   notes: list[str]) -> list[ServedModel]:
        def runner(where: str) -> dict[str, Any]:
            base = get_map(get_map(rt, where), "runner") if where else get_map(rt, "runner")
            top = get_map(get_map(over, where), "runner") if where else get_map(over, "runner")
            return _merge_container(base or {}, top or {})

        worker_spec = {**(get_map(rt, "worker") or {}), **(get_map(over, "worker") or {})}
        multinode = bool(get_map(rt, "leader") or get_map(over, "leader"))
        main = runner("leader") if multinode else runner("")
        if not main:
            return []
        workers = 0
        if multinode:
            size_v = int_at(worker_spec, "size", "worker.size")
            workers = size_v.value if isinstance(size_v, Located) and size_v.value > 0 else 0
        pod = {**rt, **over, **(get_map(rt, "leader") or {}), "containers": [main]}
        per_pod, gpu_notes = pod_gpus(pod)
        platform = {"LWS_GROUP_SIZE": str(workers + 1), "LWS_WORKER_INDEX": "0"}
        if isinstance(per_pod, Located):
            platform["PARALLELISM_SIZE"] = str(per_pod.value * (workers + 1))
        runs = container_runs(pod, ctx, platform=platform, extra_env=env)
        more = [*notes, *gpu_notes]
        for key in ("minReplicas", "maxReplicas"):
            if over.get(key) is not None:
                more.append(f"{role or 'engine'} {key} {over[key]}")
        gpus = per_pod
        if multinode:
            work_pod = {"containers": [runner("worker")]}
            work_gpus, _ = pod_gpus(work_pod)
            gpus = lead_and_workers_gpus(per_pod, work_gpus, workers,
                                         f"a leader and worker.size {workers}")
            more.append(f"multi-node: a leader and {workers} worker pods (LeaderWorkerSet)")
        out = []
        for run in runs:
            args, overrides, follow = follow_config(run, pod, ctx)
            if isinstance(model, Located):
                overrides["model"] = model
            elif isinstance(model, Unresolved) and not isinstance(args.model, Located):
                line = args.model.line if args.model is not None else None
                overrides["model"] = _served_hub_id(args.served_name) or \
                    replace(model, line=line or model.line)
            out.append(build(Origin(ctx, self.name, name=name, role=role), run, args=args,
                             hardware=Hardware(gpus=gpus, gpu_type=gpu_type_of(pod),
                                               gpu_memory=gpu_memory_of(pod)),
                             notes=[*more, *follow], overrides=overrides))
        return out


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]*[A-Za-z0-9]")


def _served_hub_id(served: object) -> Located[str] | None:
    """The model an OME runtime template is written for, when its command serves it under a
    Hub id (``--served-model-name meta-llama/Llama-3.1-405B-Instruct-FP8``): OME's runtimes
    are matched to a model by architecture and size (``supportedModelFormats``,
    ``modelSizeRange``) and load it from ``$(MODEL_PATH)``, so the name they serve is the one
    left that says which checkpoint it is (sgl-project/ome config/runtimes/srt/*-rt.yaml)."""
    if not isinstance(served, Located):
        return None
    value = served.value
    text = value[0] if isinstance(value, list) and value else value
    if not isinstance(text, str) or not _HUB_ID.fullmatch(text.strip()):
        return None
    return Located(text.strip(), served.line, served.column,
                   "--served-model-name (the runtime template loads $(MODEL_PATH), which the "
                   "InferenceService fills in; the Hub id it serves under names the model)")


# ============================================================================================
# KAITO
# ============================================================================================

KAITO_SKUS: dict[str, tuple[int, float]] = {
    "Standard_NC4as_T4_v3": (1, 16), "Standard_NC8as_T4_v3": (1, 16),
    "Standard_NC16as_T4_v3": (1, 16), "Standard_NC64as_T4_v3": (4, 64),
    "Standard_NV36ads_A10_v5": (1, 24), "Standard_NV72ads_A10_v5": (2, 48),
    "Standard_NC24ads_A100_v4": (1, 80), "Standard_NC48ads_A100_v4": (2, 160),
    "Standard_NC96ads_A100_v4": (4, 320), "Standard_ND96asr_A100_v4": (8, 320),
    "Standard_ND96amsr_A100_v4": (8, 640), "Standard_NC40ads_H100_v5": (1, 94),
    "Standard_NC80adis_H100_v5": (2, 188), "Standard_ND96isr_H100_v5": (8, 640),
    "Standard_NCC40ads_H100_v5": (1, 94), "Standard_ND96isr_H200_v5": (8, 1128),
}
"""Azure GPU SKU -> (GPUs per node, GPU memory per node in GiB), as KAITO's
pkg/sku/azure_sku_handler.go@0d9b555e5f322170ec8f3a9518fed1cf104639b9 lists them."""

_AZURE_GPU = re.compile(r"_(T4|A10|A100|H100|H200)_v\d+$")


def kaito_gpu(sku: str) -> str:
    """The GPU of an Azure SKU, named as kvlint's GPU table names it: the model is in the
    SKU's name (``Standard_NC24ads_A100_v4``), its memory in :data:`KAITO_SKUS` (80 GiB per
    A100 there: ``A100-80GB``; 94 per H100: ``H100-NVL``); the SKU itself when unknown."""
    found = _AZURE_GPU.search(sku)
    if found is None or sku not in KAITO_SKUS:
        return sku
    count, memory = KAITO_SKUS[sku]
    per_gpu = memory / count
    model = found.group(1)
    if model == "A100":
        return "A100-80GB" if per_gpu >= 80 else "A100-40GB"
    if model == "H100":
        return "H100-NVL" if per_gpu >= 94 else "H100-80GB"
    return model


KAITO_PRESETS: dict[str, str] = {
    "llama-3.1-8b-instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "falcon-7b": "tiiuae/falcon-7b", "falcon-7b-instruct": "tiiuae/falcon-7b-instruct",
    "falcon-40b": "tiiuae/falcon-40b", "falcon-40b-instruct": "tiiuae/falcon-40b-instruct",
    "mistral-7b": "mistralai/Mistral-7B-v0.3",
    "mistral-7b-instruct": "mistralai/Mistral-7B-Instruct-v0.3",
    "phi-2": "microsoft/phi-2",
    "phi-3-mini-4k-instruct": "microsoft/Phi-3-mini-4k-instruct",
    "phi-3-mini-128k-instruct": "microsoft/Phi-3-mini-128k-instruct",
    "phi-3-medium-4k-instruct": "microsoft/Phi-3-medium-4k-instruct",
    "phi-3-medium-128k-instruct": "microsoft/Phi-3-medium-128k-instruct",
    "phi-3.5-mini-instruct": "microsoft/Phi-3.5-mini-instruct",
    "phi-4-mini-instruct": "microsoft/Phi-4-mini-instruct", "phi-4": "microsoft/phi-4",
    "qwen2.5-coder-7b-instruct": "Qwen/Qwen2.5-Coder-7B-Instruct",
    "qwen2.5-coder-32b-instruct": "Qwen/Qwen2.5-Coder-32B-Instruct",
    "deepseek-r1-distill-qwen-14b": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    "deepseek-r1-distill-llama-8b": "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
}
"""KAITO catalog preset -> the Hugging Face repository its ``version`` URL names
(presets/workspace/models/supported_models.yaml@0567d7f2e5040e991cc9c88a02d43d6befe15816)."""

KAITO_CONFIG_KEY = "inference_config.yaml"


class KaitoWorkspaceParser(ManifestParser):
    """KAITO ``kaito.sh`` ``Workspace`` (``resource`` and ``inference`` at the top level).
    A ``preset`` runs the KAITO base image's vLLM (``kaito.sh/runtime: transformers``
    chooses Hugging Face Transformers) on ``resource.count`` nodes of ``instanceType``; the
    model is the preset's Hugging Face repository (a preset named ``org/name`` is that
    repository). The controller passes ``--tensor-parallel-size`` = the SKU's GPUs per node
    and, on several nodes, ``--pipeline-parallel-size`` = the node count, and
    ``--gpu-memory-utilization 0.84``; the ``vllm:`` section of ``inference_config.yaml`` in
    the ConfigMap ``inference.config`` is appended after and wins. A custom
    ``inference.template`` is read as a pod.

    Read: kaito-project/kaito@0228438ba6cf2a79734bf3521d72d0dd67c5a389
    api/v1beta1/workspace_types.go, @00dc9aa6d5708420f30e48fa6072325b765f239c
    pkg/workspace/inference/preset_inferences.go (GenerateInferencePodSpec: GPUs per pod
    from the SKU) and pkg/model/interface.go (buildVLLMInferenceCommand,
    configureParallelism), @0d9b555e pkg/sku/azure_sku_handler.go, and
    examples/inference/kaito_workspace_llama-3.3_70b_instruct.yaml@0e39c99c.
    """

    name = "kaito"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("kaito.sh/",), ("Workspace",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        inference = get_map(document, "inference")
        spec = get_map(document, "spec")
        if inference is None and spec is not None and (
                "inference" in spec or "resource" in spec):
            # the Workspace CRD has no spec (api/v1beta1/workspace_types.go: resource,
            # inference and tuning are top-level), and the API server's strict field
            # validation refuses an unknown field: nothing here is deployed
            refuse_object(ctx, key_line(document, "spec"),
                          f"KAITO Workspace {object_name(document) or ''} puts resource and "
                          "inference under spec, but the Workspace API has no spec (they are "
                          "top-level fields): kubectl's strict field validation refuses it "
                          "(unknown field \"spec\") and no model is deployed; move them to "
                          "the top level")
            return []
        if inference is None:
            return []  # a tuning workspace
        name = object_name(document)
        template = get_map(get_map(inference, "template"), "spec")
        if template is not None:
            return pod_models(Origin(ctx, self.name, name=name), template,
                              notes=["inference.template: a custom pod, not a KAITO preset"])
        preset = get_map(inference, "preset")
        preset_name = get_str(preset, "name")
        if not preset_name:
            return []
        resource = get_map(document, "resource") or {}
        annotations = get_map(get_map(document, "metadata"), "annotations") or {}
        runtime = get_str(annotations, "kaito.sh/runtime") or "vllm"
        engine_key = "transformers" if runtime == "transformers" else "vllm"
        line = value_line(preset, "name") or node_line(preset)
        notes: list[str] = ["the KAITO base image's engine version is not in the manifest"]
        model = self._model(preset_name, line, notes)
        nodes_v = int_at(resource, "count", "resource.count")
        nodes = nodes_v.value if isinstance(nodes_v, Located) and nodes_v.value > 0 else 1
        sku = get_str(resource, "instanceType")
        sku_line = value_line(resource, "instanceType")
        per_node: Located[int] | Unresolved | None = None
        gpu_type = Located(kaito_gpu(sku), sku_line, None,
                           f"resource.instanceType {sku}") if sku else None
        if sku and sku in KAITO_SKUS:
            per_node = Located(KAITO_SKUS[sku][0], sku_line, None,
                               f"resource.instanceType {sku}: {KAITO_SKUS[sku][0]} GPUs per "
                               "node (KAITO's SKU table)")
        elif sku:
            per_node = Unresolved(f"instanceType {sku} is not in KAITO's Azure SKU table",
                                  sku_line, None, sku)
        else:
            per_node = Unresolved("no instanceType: the GPUs are those of the nodes "
                                  "resource.labelSelector selects (not in the manifest)",
                                  key_line(document, "resource"), None, "labelSelector")
        fields: dict[str, Any] = {"model": model}
        if engine_key == "vllm":
            self._vllm_fields(fields, per_node, nodes, nodes_v, notes)
        elif nodes > 1:
            notes.append("multi-node inference is vLLM-only in KAITO")
        gpus = group_gpus(per_node, nodes, f"resource.count {nodes} nodes")
        args = EngineArgs(engine=engine_key)
        config = get_str(inference, "config")
        if config:
            args = self._config(ctx, config, engine_key, notes)
            for key in ("tp", "pp", "dp", "max_model_len", "gpu_memory_utilization"):
                if getattr(args, key) is not None:
                    fields.pop(key, None)
        label = "vLLM" if engine_key == "vllm" else "Transformers"
        engine = Located(engine_key, line, None, f"KAITO preset {preset_name} ({label} runtime)")
        run = Run(engine, args, line, {}, None, None, [])
        return [build(Origin(ctx, self.name, name=name), run, args=args,
                      hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes,
                      overrides=fields)]

    @staticmethod
    def _model(preset: str, line: int | None, notes: list[str]) -> Located[str] | Unresolved:
        if "/" in preset:
            return Located(preset, line, None, "inference.preset.name (a Hugging Face id)")
        if preset in KAITO_PRESETS:
            return Located(KAITO_PRESETS[preset], line, None,
                           f"inference.preset.name {preset} (KAITO catalog)")
        notes.append(f"preset {preset} is not in kvlint's table of KAITO presets")
        return Unresolved(f"KAITO preset {preset}: its Hugging Face repository is not known "
                          "to kvlint; map it with [tool.kvlint.models]", line, None, preset)

    @staticmethod
    def _vllm_fields(fields: dict[str, Any], per_node: Located[int] | Unresolved | None,
                     nodes: int, nodes_v: Located[int] | Unresolved | None,
                     notes: list[str]) -> None:
        if isinstance(per_node, Located):
            fields["tp"] = Located(per_node.value, per_node.line, None,
                                   f"KAITO --tensor-parallel-size = {per_node.source}")
            if per_node.value > 1:
                notes.append("KAITO runs data parallel instead (tp 1, dp = GPUs) when the "
                             "weights take under half of one GPU's memory")
        elif isinstance(per_node, Unresolved):
            fields["tp"] = per_node
        if nodes > 1 and isinstance(nodes_v, Located):
            fields["pp"] = Located(nodes, nodes_v.line, None,
                                   "KAITO --pipeline-parallel-size = resource.count (multi-node "
                                   "vLLM over Ray)")
        fields["gpu_memory_utilization"] = Located(
            0.84, None, None, "KAITO's vLLM command (--gpu-memory-utilization 0.84)")
        notes.append("KAITO passes --max-model-len auto unless inference_config.yaml sets it")

    @staticmethod
    def _config(ctx: DocumentContext, name: str, engine: str, notes: list[str]) -> EngineArgs:
        for doc in named(ctx.documents, name):
            if not is_object(doc, ("v1",), ("ConfigMap",)):
                continue
            text = (get_map(doc, "data") or {}).get(KAITO_CONFIG_KEY)
            conf, problem = embedded_yaml(text, ctx.path)
            section = get_map(conf, "vllm") if conf is not None else None
            if section is None:
                notes.append(f"ConfigMap {name} {KAITO_CONFIG_KEY} is not read: "
                             f"{problem or 'it has no vllm section'}")
                return EngineArgs(engine=engine)
            notes.append(f"engine flags from ConfigMap {name} {KAITO_CONFIG_KEY} vllm "
                         f"(line {key_line(conf, 'vllm')})")
            args = config_args("vllm", section, f"ConfigMap {name} {KAITO_CONFIG_KEY}: vllm.")
            return EngineArgs(engine=engine, **{k: no_column(getattr(args, k)) for k in (
                "tp", "pp", "dp", "max_model_len", "max_num_seqs", "kv_cache_dtype",
                "gpu_memory_utilization", "max_num_batched_tokens", "dtype")})
        notes.append(f"the inference ConfigMap {name} is not in this file")
        return EngineArgs(engine=engine)
