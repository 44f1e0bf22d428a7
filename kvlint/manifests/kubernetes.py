"""Kubernetes objects that run LLM engines: plain workloads (Deployment, StatefulSet,
DaemonSet, ReplicaSet, Job, CronJob, Pod, Argo Rollout), LeaderWorkerSet and RoleBasedGroup.

What each container runs (the engine, its flags and environment, an engine config file in a
mounted ConfigMap) is read by :mod:`.kubernetes_containers`; this module adds what the pod and
its object say around it. GPUs are per replica: ``nvidia.com/gpu``/``amd.com/gpu`` of one pod,
times the pods of a multi-node group (LeaderWorkerSet ``size``, SGLang/LMDeploy
``--nnodes``); ``replicas`` only goes into the notes.

The engine CRDs (KServe, NVIDIA Dynamo, production-stack VLLMRuntime, KubeRay RayService)
are in :mod:`.kubernetes_crds`, which shares the pod machinery of both modules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kvlint.manifests.accelerators import (
    device_family,
    image_family,
    is_gpu_label,
    no_gpu_source,
)
from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_launch import (
    NO_HARDWARE,
    Hardware,
    Origin,
    engine_refusals,
    foreign_device_problem,
    told_device,
)
from kvlint.manifests.kubernetes_containers import FILLED_IN, Run, container_runs, follow_config
from kvlint.manifests.node_memory import gpu_memory_of
from kvlint.manifests.pod_gpus import TPU_KEYS, int_at, mig_name, pod_gpus
from kvlint.manifests.service_links import service_link_problem
from kvlint.manifests.yaml_values import (
    TEMPLATE,
    doc_line,
    get_list,
    get_map,
    get_str,
    is_object,
    key_col,
    key_line,
    node_line,
    object_name,
    to_int,
)
from kvlint.model.hardware import gpu_family, mig_device

__all__ = [
    "KubernetesWorkloadParser",
    "LeaderWorkerSetParser",
    "RoleBasedGroupParser",
    "build",
    "gpu_type_of",
    "group_gpus",
    "int_at",
    "model_check",
    "pod_gpus",
    "pod_models",
    "pod_tpus",
    "replicas_notes",
]

GPU_TYPE_KEYS = ("cloud.google.com/gke-accelerator", "nvidia.com/gpu.product",
                 "amd.com/gpu.product", "karpenter.k8s.aws/instance-gpu-name",
                 "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
                 "cloud.google.com/gke-tpu-accelerator", "accelerator")


# ============================================================================================
# small readers
# ============================================================================================


PLACEHOLDER = re.compile(r"YOUR[-_]|REPLACE[-_]?ME|CHANGE[-_]?ME|<[^<>]*>|"
                         rf"(?:^|/){FILLED_IN.pattern}$")
"""A model that is a placeholder (``__MODEL__``: :data:`.kubernetes_containers.FILLED_IN`)."""


def model_check(model: Located[str] | Unresolved | None) -> Located[str] | Unresolved | None:
    """A model that is a placeholder (``<model>``, ``{{ .Name }}``,
    ``/models/YOUR-MODEL-PATH``, ``__MODEL__``) is unresolved."""
    if isinstance(model, Located) and (not model.value.strip()
                                       or TEMPLATE.search(model.value)
                                       or PLACEHOLDER.search(model.value)):
        return Unresolved(f"{model.source or 'the model'} is a placeholder", model.line,
                          model.column, model.value)
    return model


# ============================================================================================
# GPUs and GPU type
# ============================================================================================


GKE_PARTITION = "cloud.google.com/gke-gpu-partition-size"
"""GKE's node label of a MIG node pool (its ``gpuPartitionSize``): the pod asks for
``nvidia.com/gpu`` and selects the partition by this label."""


def pod_mig_profile(pod: Any) -> Located[str] | None:
    """The MIG device (``mig-3g.40gb``) a pod's containers request, or GKE's partition label
    selects, with its line."""
    selector = get_map(pod, "nodeSelector") or {}
    size = selector.get(GKE_PARTITION)
    if isinstance(size, str) and mig_device(size) is not None:
        return Located(f"mig-{size.strip().lower()}", key_line(selector, GKE_PARTITION),
                       key_col(selector, GKE_PARTITION), f"nodeSelector {GKE_PARTITION}")
    for key in ("containers", "initContainers"):
        for container in get_list(pod, key) or []:
            for part in ("limits", "requests"):
                block = get_map(get_map(container, "resources"), part) or {}
                for name in block:
                    profile = mig_name(name)
                    if profile and str(block[name]).strip() not in ("0", ""):
                        return Located(profile, key_line(block, name), key_col(block, name),
                                       f"resources.{part}.{name}")
    return None


POD_NO_GPU = ("no GPU requested (no nvidia.com/gpu or other device in the container's "
              "resources, no runtimeClassName)")
"""The source of a GPU count of 0: the container asks the device plugin for no GPU."""
_PLAIN_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _no_gpu_access(pod: Any, run: Run) -> bool:
    """Whether the engine's container is given no GPU: no device in its resources (any
    extended resource, ``vendor/device``, may be an accelerator), no ``runtimeClassName``,
    not privileged, no ``NVIDIA_VISIBLE_DEVICES`` (which a node whose default runtime is
    nvidia honours), and an image not built for another accelerator (a CPU build is given
    none either)."""
    family = image_family(run.image)
    if get_str(pod, "runtimeClassName") or run.image is None or \
            (family is not None and not family.value.startswith("CPU")):
        return False
    container = run.container
    if (get_map(container, "securityContext") or {}).get("privileged") is True:
        return False
    if any(isinstance(e, dict) and e.get("name") == "NVIDIA_VISIBLE_DEVICES"
           for e in get_list(container, "env") or []):
        return False
    resources = get_map(container, "resources") or {}
    for part in ("limits", "requests"):
        block = get_map(resources, part) or {}
        if any(str(key) not in _PLAIN_RESOURCES and not str(key).startswith("hugepages-")
               for key in block):
            return False
    return True


def pod_tpus(pod: Any) -> int:
    """TPU chips one pod requests (``google.com/tpu``)."""
    total = 0
    for container in get_list(pod, "containers") or []:
        resources = get_map(container, "resources")
        for part in ("limits", "requests"):
            count = to_int((get_map(resources, part) or {}).get(TPU_KEYS[0]))
            if count is not None:
                total += count
                break
    return total


def group_gpus(per_pod: Located[int] | Unresolved | None, pods: int,
               what: str) -> Located[int] | Unresolved | None:
    if not isinstance(per_pod, Located) or pods == 1:
        return per_pod
    return Located(per_pod.value * pods, per_pod.line, per_pod.column,
                   f"{per_pod.source} {per_pod.value} per pod x {what}")


def lead_and_workers_gpus(lead: Located[int] | Unresolved | None,
                          work: Located[int] | Unresolved | None, workers: int, what: str,
                          lead_name: str = "leader") -> Located[int] | Unresolved | None:
    """GPUs of one lead pod (a leader, an entry pod) plus ``workers`` worker pods."""
    if isinstance(lead, Unresolved) or isinstance(work, Unresolved):
        return lead if isinstance(lead, Unresolved) else work
    if workers <= 0 or work is None:
        return lead
    if lead is None or lead.value == work.value:
        return group_gpus(lead or work, workers + 1, what)
    return Located(lead.value + work.value * workers, lead.line, lead.column,
                   f"{lead_name} {lead.value} + {workers} workers x {work.value} GPUs ({what})")


def _gpu_word(key: str) -> bool:
    """Whether a node label's name speaks of GPUs or accelerators (``gpu``,
    ``mlops.local/gpu``, ``accelerator-model``)."""
    low = key.lower()
    return "gpu" in low or "accelerator" in low


def _tolerated_gpu(pod: Any) -> Located[str] | None:
    """The GPU a toleration's value names, where its key speaks of GPUs: nodes tainted
    ``nvidia.com/gpu=Tesla-T4-SHARED:NoSchedule`` (OpenShift AI's accelerator profiles) are
    the only ones the pod may use besides untainted ones, so that is its GPU."""
    from kvlint.manifests.comment_gpus import gpu_in_name

    for toleration in get_list(pod, "tolerations") or []:
        key, value = get_str(toleration, "key"), get_str(toleration, "value")
        if key is None or value is None or not _gpu_word(key):
            continue
        named = gpu_in_name(value)
        if named is not None:
            return Located(named, key_line(toleration, "value"), None,
                           f"toleration {key}={value} (the GPU nodes' taint)")
    return None


def gpu_type_of(pod: Any) -> Located[str] | None:
    """The GPU (or machine) type a pod is scheduled on, as written: a nodeSelector label, or
    a required node-affinity term on such a label (:func:`.accelerators.is_gpu_label`); else
    the accelerator family of the device its containers request (``habana.ai/gaudi``). A
    label of another name that speaks of GPUs counts when its value names a GPU kvlint knows
    (:func:`~kvlint.model.hardware.gpu_family`: ``gpu: rtx3090``), never ``gpu: "true"``."""
    named = _gpu_type_of(pod)
    mig = pod_mig_profile(pod)
    if mig is None:
        return named
    if named is None or named.source.startswith("resources "):  # no node label names a GPU
        return Located(f"MIG {mig.value[4:]}", mig.line, mig.column, mig.source)
    if mig_device(named.value) is not None:
        return named  # the label names the MIG device already (single strategy)
    return Located(f"{named.value} MIG {mig.value[4:]}", named.line, named.column,
                   f"{named.source} with {mig.source}")


def _gpu_type_of(pod: Any) -> Located[str] | None:
    selector = get_map(pod, "nodeSelector") or {}
    keys = [*GPU_TYPE_KEYS, *(k for k in map(str, selector) if k not in GPU_TYPE_KEYS and
                              is_gpu_label(k))]
    for key in keys:
        value = selector.get(key)
        if isinstance(value, str) and value.strip():
            source = f"nodeSelector {key}"
            topology = selector.get("cloud.google.com/gke-tpu-topology")
            if "tpu" in key and topology:
                source += f" (topology {topology})"
            return Located(str(value), key_line(selector, key), key_col(selector, key), source)
    for key in map(str, selector):  # a custom label (gpu: rtx3090, mlops.local/gpu: rtx-3080)
        value = selector.get(key)
        if key not in keys and _gpu_word(key) and isinstance(value, str) and \
                gpu_family(value):
            return Located(value, key_line(selector, key), key_col(selector, key),
                           f"nodeSelector {key} (a GPU's name)")
    affinity = get_map(get_map(pod, "affinity"), "nodeAffinity")
    required = get_map(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    for term in get_list(required, "nodeSelectorTerms") or []:
        for expr in get_list(term, "matchExpressions") or []:
            label = get_str(expr, "key")
            values = [str(v) for v in get_list(expr, "values") or [] if v is not None]
            if label is not None and (label in GPU_TYPE_KEYS or is_gpu_label(label)) and \
                    get_str(expr, "operator") == "In" and values:
                return Located(" | ".join(values), key_line(expr, "values"), None,
                               f"node affinity {label} In")
    tolerated = _tolerated_gpu(pod)
    if tolerated is not None:
        return tolerated
    containers = [c for key in ("containers", "initContainers")
                  for c in get_list(pod, key) or [] if isinstance(c, dict)]
    device = device_family(c.get("resources") for c in containers)
    if device is not None:
        holder = next(c for c in containers if device[1] in str(c.get("resources")))
        return Located(device[0], node_line(holder.get("resources")) or node_line(holder), None,
                       f"resources {device[1]} (the device plugin's resource)")
    return None


# ============================================================================================
# ServedModel
# ============================================================================================


def _times(a: Located[int] | Unresolved | None, b: Located[int] | Unresolved | None
           ) -> int | Unresolved:
    for v in (a, b):
        if isinstance(v, Unresolved):
            return v
    return (a.value if isinstance(a, Located) else 1) * (b.value if isinstance(b, Located)
                                                          else 1)


def expert_size(engine: str, args: EngineArgs) -> Located[int] | Unresolved | None:
    """The EP size: given, or what ``--enable-expert-parallel`` makes of it (vLLM: the MoE
    layers run on tp x dp ranks; SGLang ``--enable-ep-moe``: tp)."""
    if args.ep is not None:
        return args.ep
    flag = args.expert_parallel
    if not isinstance(flag, Located) or not flag.value:
        return None
    size = _times(args.tp, args.dp if engine == "vllm" else None)
    if isinstance(size, Unresolved):
        return Unresolved(f"{flag.source}: the EP size follows from an unresolved TP/DP "
                          f"({size.reason})", flag.line, None, size.text)
    what = "tp x dp" if engine == "vllm" else "tp"
    return Located(size, flag.line, flag.column, f"{flag.source} (EP = {what})")


ARG_FIELDS = ("model", "tp", "pp", "dp", "dp_attention", "kv_cache_dtype", "max_model_len",
              "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
              "extensible_kv_cache", "kv_tokens_cap", "gpu_memory_utilization", "dtype",
              "quantization", "config_overrides", "node_rank", "prefill_chunk",
              "graph_batch", "graph_off", "page_size", "speculative", "backend", "swa_ratio",
              "lora", "max_loras", "max_lora_rank", "lora_sharded", "cpu_offload",
              "trust_remote_code")


def build(origin: Origin, run: Run, *, args: EngineArgs | None = None,
          hardware: Hardware = NO_HARDWARE, notes: Sequence[str] = (),
          overrides: Mapping[str, Any] | None = None) -> ServedModel:
    """A ServedModel from an engine run plus what the object says around it."""
    ctx = origin.ctx
    gpus = hardware.gpus
    args = args or run.args
    values: dict[str, Any] = {k: getattr(args, k) for k in ARG_FIELDS}
    values["ep"] = expert_size(run.engine.value, args)
    values.update(run.overrides)
    values.update(overrides or {})
    if "gpus" in values:  # the container says its request is not the group's (a Ray worker)
        gpus = values.pop("gpus")
    values["model"] = model_check(values.get("model"))
    served = values.pop("served_name") if "served_name" in values else args.served_name
    served_name = str(served.value) if isinstance(served, Located) else (
        served if isinstance(served, str) else None)
    model = values.get("model")
    where = (model.line if isinstance(model, Located | Unresolved) else None) or run.line or \
        origin.line or \
        doc_line(ctx.documents[ctx.index] if ctx.index < len(ctx.documents) else None)
    unique: list[str] = []
    for note in [*run.notes, *notes]:
        if note and note not in unique:
            unique.append(note)
    return ServedModel(path=origin.path or ctx.path, line=where, format=origin.fmt,
                       document=ctx.index, name=origin.name, role=origin.role,
                       served_name=served_name, engine=run.engine,
                       engine_version=run.version, image=run.image, gpus=gpus,
                       gpu_type=hardware.gpu_type or told_device(args),
                       gpu_memory=hardware.gpu_memory,
                       notes=tuple(unique),
                       env=dict(args.env),
                       engine_problems=(*run.problems,
                                        *engine_refusals(run.engine, run.version, run.image,
                                                         args, gpus)), **values)


def replicas_notes(obj: Any, key: str = "replicas", what: str = "replicas") -> list[str]:
    count = to_int(obj.get(key)) if isinstance(obj, dict) else None
    if count is not None and count != 1:
        return [f"{key}: {count} {what}, each with the GPUs reported"]
    return []


def pod_models(origin: Origin, pod: Any, *, pods: int = 1, pods_what: str = "",
               notes: Sequence[str] = (), platform: Mapping[str, str] | None = None,
               extra_env: Mapping[str, str | None] | None = None,
               multinode: bool = False) -> list[ServedModel]:
    """One ServedModel per engine container of ``pod``; a group of ``pods`` pods (or, with
    ``multinode``, the engine's own ``--nnodes``) multiplies the GPUs."""
    ctx = origin.ctx
    out = []
    runs = container_runs(pod, ctx, platform=platform, extra_env=extra_env)
    for run in runs:
        args, overrides, more = follow_config(run, pod, ctx)
        # several engine containers in one pod: each has the GPUs of its own container
        per_pod, gpu_notes = pod_gpus(pod, [run.container] if len(runs) > 1 else None)
        count, what = pods, pods_what
        nnodes = args.nnodes
        if multinode and isinstance(nnodes, Located) and nnodes.value > 1:
            count, what = nnodes.value, f"{nnodes.source} {nnodes.value} pods"
        elif multinode and isinstance(nnodes, Unresolved):
            more.append(f"--nnodes is not resolved ({nnodes.reason}): GPUs are per pod")
        gpus = group_gpus(per_pod, count, what)
        if per_pod is None and not gpu_notes and _no_gpu_access(pod, run):
            gpus = Located(0, run.image.line if run.image else run.line, None,
                           no_gpu_source(POD_NO_GPU, run.engine.value, run.image))
        hardware = Hardware(gpus=gpus, gpu_type=gpu_type_of(pod), gpu_memory=gpu_memory_of(pod))
        served = build(origin, run, args=args, hardware=hardware,
                       notes=[*notes, *gpu_notes, *more], overrides=overrides)
        found = tuple(p for p in (
            service_link_problem(run.engine.value, pod, run.container, ctx,
                                 run.line or served.line, served.engine_version),
            foreign_device_problem(run.engine, run.image, hardware.gpu_type)) if p is not None)
        out.append(served if not found else
                   replace(served, engine_problems=(*served.engine_problems, *found)))
    return out


# ============================================================================================
# parsers
# ============================================================================================

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob",
                  "Pod", "ReplicationController", "Rollout")
KNATIVE_KINDS = ("Service", "Configuration")
"""Knative Serving objects (``serving.knative.dev/v1``) whose ``spec.template`` is a
revision's pod template (its ``spec`` a pod spec), as a Deployment's is."""


def _pod_template(document: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    kind = document.get("kind")
    spec = get_map(document, "spec")
    if kind == "Pod":
        return spec, get_map(document, "metadata") or {}
    if kind == "CronJob":
        spec = get_map(get_map(spec, "jobTemplate"), "spec")
    template = get_map(spec, "template")
    return get_map(template, "spec"), get_map(template, "metadata") or {}


class KubernetesWorkloadParser(ManifestParser):
    """Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod (and Argo Rollout,
    and a Knative Service or Configuration): the pod template's containers."""

    name = "k8s"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("",), WORKLOAD_KINDS) or \
            is_object(document, ("serving.knative.dev/",), KNATIVE_KINDS)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        pod, _meta = _pod_template(document)
        if pod is None:
            return []
        kind = str(document.get("kind"))
        spec = get_map(document, "spec") or {}
        notes = replicas_notes(spec, what=f"{kind} replicas")
        if kind == "DaemonSet":
            notes.append("DaemonSet: one pod per matching node, each with the GPUs reported")
        return pod_models(Origin(ctx, self.name, name=object_name(document)), pod, notes=notes,
                          multinode=kind in ("StatefulSet", "Job", "Pod", "Deployment"))


class LeaderWorkerSetParser(ManifestParser):
    """LeaderWorkerSet (``leaderworkerset.x-k8s.io``): one group of ``size`` pods serves
    one model; it is reported once, from the leader template (or the worker template when
    there is none), with the GPUs of the whole group."""

    name = "lws"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("leaderworkerset.x-k8s.io/",), ("LeaderWorkerSet",))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        lwt = get_map(spec, "leaderWorkerTemplate") or {}
        size_v = int_at(lwt, "size", "leaderWorkerTemplate.size")
        size = size_v.value if isinstance(size_v, Located) and size_v.value > 0 else 1
        leader_t = get_map(lwt, "leaderTemplate")
        worker_t = get_map(lwt, "workerTemplate")
        leader = get_map(leader_t, "spec")
        worker = get_map(worker_t, "spec")
        notes = replicas_notes(spec, what="LeaderWorkerSet groups")
        platform = {"LWS_GROUP_SIZE": str(size)}
        runs: list[Run] = []
        pod: dict[str, Any] | None = None
        meta: dict[str, Any] = {}
        if leader is not None:
            runs = container_runs(leader, ctx, platform={**platform, "LWS_WORKER_INDEX": "0"})
            pod, meta = leader, get_map(leader_t, "metadata") or {}
        if not runs and worker is not None:
            runs = container_runs(worker, ctx, platform=platform)
            pod, meta = worker, get_map(worker_t, "metadata") or {}
            if leader is None:
                notes.append("no leaderTemplate: the leader runs the workerTemplate too")
            else:
                notes.append("the leader starts no engine; the workers' command is reported")
        if not runs or pod is None:
            return []
        lead_gpus, lead_notes = pod_gpus(leader if leader is not None else worker)
        work_gpus, _ = pod_gpus(worker) if worker is not None else (lead_gpus, [])
        gpus = self._group(lead_gpus, work_gpus, size, leader is not None)
        notes.extend(lead_notes)
        tpus = pod_tpus(leader if leader is not None else worker)
        if tpus and size > 1:
            notes.append(f"{tpus} TPU chips per pod x LWS size {size} = {tpus * size} TPU "
                         "chips per group")
        if size > 1 and isinstance(size_v, Located):
            notes.append(f"LeaderWorkerSet size {size} (line {size_v.line}): one model "
                         f"served by {size} pods")
        labels = get_map(meta, "labels") or get_map(get_map(document, "metadata"),
                                                    "labels") or {}
        role = get_str(labels, "llm-d.ai/role")
        out = []
        for run in runs:
            args, overrides, more = follow_config(run, pod, ctx)
            hardware = Hardware(gpus=gpus, gpu_type=gpu_type_of(pod) or gpu_type_of(worker),
                                gpu_memory=gpu_memory_of(pod) or gpu_memory_of(worker))
            out.append(build(Origin(ctx, self.name, name=object_name(document), role=role), run,
                             args=args, hardware=hardware, notes=[*notes, *more],
                             overrides=overrides))
        return out

    @staticmethod
    def _group(lead: Located[int] | Unresolved | None, work: Located[int] | Unresolved | None,
               size: int, has_leader: bool) -> Located[int] | Unresolved | None:
        if isinstance(lead, Unresolved) or isinstance(work, Unresolved):
            return lead if isinstance(lead, Unresolved) else work
        if lead is None and work is None:
            return None
        if not has_leader or size == 1:
            return group_gpus(work or lead, size, f"LWS size {size}")
        lead_n = lead.value if lead else 0
        work_n = work.value if work else 0
        if lead_n == work_n and lead is not None:
            return group_gpus(lead, size, f"LWS size {size}")
        where = lead or work
        assert where is not None
        return Located(lead_n + work_n * (size - 1), where.line, where.column,
                       f"leader {lead_n} + {size - 1} workers x {work_n} GPUs")


class RoleBasedGroupParser(ManifestParser):
    """RoleBasedGroup (``workloads.x-k8s.io``): one ServedModel per role that runs an
    engine (``spec.roles[].template``), the role name as ``role``."""

    name = "rbg"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        # v1alpha2 (leaderWorkerPattern, roleTemplates) is the operators module's rbg-v1alpha2
        return is_object(document, ("workloads.x-k8s.io/",), ("RoleBasedGroup",)) and \
            isinstance(document, dict) and \
            not str(document.get("apiVersion", "")).startswith("workloads.x-k8s.io/v1alpha2")

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        out: list[ServedModel] = []
        for role in get_list(get_map(document, "spec"), "roles") or []:
            pod = get_map(get_map(role, "template"), "spec")
            if pod is None:
                continue
            role_name = get_str(role, "name") or ""
            notes = replicas_notes(role, what=f"{role_name} replicas")
            lws = get_map(role, "leaderWorkerSet")
            size_v = int_at(lws, "size", f"{role_name}.leaderWorkerSet.size")
            size = size_v.value if isinstance(size_v, Located) and size_v.value > 0 else 1
            platform = {"LWS_GROUP_SIZE": str(size)} if lws is not None else None
            origin = Origin(ctx, self.name, name=object_name(document), role=role_name)
            out.extend(pod_models(origin, pod, pods=size, pods_what=f"leaderWorkerSet size {size}",
                                  notes=notes, platform=platform, multinode=lws is None))
        return out
