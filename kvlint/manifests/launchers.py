"""Launcher specs that start an engine from a shell script or an image: SkyPilot tasks, dstack
services/tasks and Azure ML managed online deployments.

Scripts are read, never run: assignments and ``export`` are followed in order (conditions are
not evaluated), the platform variables a launcher sets are resolved from the spec itself
(``SKYPILOT_NUM_GPUS_PER_NODE``, ``DSTACK_GPUS_NUM``...), and ``pip install`` lines pin the
engine version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_launch import (
    Hardware,
    Origin,
    Script,
    engine_args,
    first_launch,
    resolve_download,
    served_model,
    settle_version,
    walk_script,
)
from kvlint.manifests.images import entrypoint_engine
from kvlint.manifests.instance_types import AZURE_SKUS
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word, split_script
from kvlint.manifests.yaml_values import (
    env_of,
    get_list,
    get_map,
    get_str,
    key_col,
    key_line,
    model_value,
    plain_map,
    scalar_text,
    to_int,
    value_line,
)


def _script(text: Any, env: Env) -> Script:
    if not isinstance(text, str) or not text.strip():
        return Script()
    return walk_script(split_script(text), env)


def _merge_scripts(*scripts: Script) -> Script:
    out = Script()
    for script in scripts:
        out.launches.extend(script.launches)
        out.pins.extend(script.pins)
        out.downloads.update(script.downloads)
        out.notes.extend(script.notes)
    return out


@dataclass
class _Gpus:
    """Accelerators a spec asks for: alternatives (any one of) with their counts."""

    names: list[str]
    count: int | None
    line: int | None
    source: str
    problem: str | None = None

    def type_(self) -> Located[str] | None:
        if not self.names:
            return None
        text = self.names[0] if len(self.names) == 1 else " | ".join(self.names)
        return Located(text, self.line, None, self.source)


# ============================================================================================
# SkyPilot
# ============================================================================================

SKY_KEYS = frozenset({"name", "workdir", "num_nodes", "resources", "envs", "secrets",
                      "file_mounts", "setup", "run", "service", "config", "volumes",
                      "event_callback", "inputs", "outputs", "pool", "job_recovery"})
SKY_RESOURCE_KEYS = frozenset({"accelerators", "cloud", "infra", "region", "zone",
                               "instance_type", "cpus", "memory", "use_spot", "disk_size",
                               "disk_tier", "network_tier", "ports", "image_id", "any_of",
                               "ordered", "labels", "accelerator_args", "job_recovery",
                               "spot_recovery", "autostop", "priority"})


def _accelerator_items(value: Any) -> list[tuple[str, int | None]]:
    """``H100:8``, ``{A100-80GB: 8}``, ``{L4:1, A10G:1}`` (keys with null values: no space
    after the colon) or a list of such: (name, count) alternatives."""
    items: list[tuple[str, int | None]] = []
    if isinstance(value, str):
        for part in value.split(","):
            name, _, count = part.strip().partition(":")
            if name:
                items.append((name.strip(), to_int(count) if count else 1))
    elif isinstance(value, dict):
        for key, count in value.items():
            text = str(key)
            if count is None and ":" in text:
                name, _, raw = text.partition(":")
                items.append((name.strip(), to_int(raw)))
            else:
                items.append((text.strip(), to_int(count) if count is not None else 1))
    elif isinstance(value, list):
        for item in value:
            items.extend(_accelerator_items(item))
    return items


def _sky_gpus(resources: Any) -> _Gpus | None:
    candidates: list[tuple[dict[str, Any], str]] = []
    if isinstance(resources, dict):
        if "accelerators" in resources:
            candidates.append((resources, "resources.accelerators"))
        for group in ("any_of", "ordered"):
            for i, alt in enumerate(get_list(resources, group) or []):
                if isinstance(alt, dict) and "accelerators" in alt:
                    candidates.append((alt, f"resources.{group}[{i}].accelerators"))
    items: list[tuple[str, int | None]] = []
    line = None
    sources = []
    for holder, where in candidates:
        found = _accelerator_items(holder.get("accelerators"))
        if found:
            items.extend(found)
            line = line or key_line(holder, "accelerators")
            sources.append(where)
    if not items:
        return None
    names = list(dict.fromkeys(name for name, _ in items))
    counts = {count for _, count in items}
    source = " or ".join(sources)
    if len(items) > 1:
        source += " (alternatives: any one of them)"
    if len(counts) != 1 or None in counts:
        return _Gpus(names, None, line, source,
                     problem="the accelerator alternatives ask for different GPU counts")
    return _Gpus(names, counts.pop(), line, source)


class SkyPilotParser(ManifestParser):
    """SkyPilot task/service YAML (``sky launch``/``sky serve up``)."""

    name = "skypilot"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        keys = list(document)
        if not keys or not all(isinstance(k, str) and k in SKY_KEYS for k in keys):
            return False
        resources = document.get("resources")
        sky_resources = isinstance(resources, dict) and bool(set(resources) &
                                                               SKY_RESOURCE_KEYS)
        has_script = isinstance(document.get("run"), str) or \
            isinstance(document.get("setup"), str)
        return has_script and (sky_resources or any(k in document for k in
                                                    ("envs", "num_nodes", "service")))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        notes: list[str] = []
        resources = document.get("resources")
        gpus_spec = _sky_gpus(resources)
        nodes = to_int(document.get("num_nodes", 1)) or 1
        nodes_line = key_line(document, "num_nodes") if "num_nodes" in document else None
        platform: dict[str, str] = {"SKYPILOT_NUM_NODES": str(nodes)}
        if gpus_spec is not None and gpus_spec.count is not None:
            platform["SKYPILOT_NUM_GPUS_PER_NODE"] = str(gpus_spec.count)
        env = env_of(document.get("envs"))
        for key in (get_map(document, "secrets") or {}):
            env.setdefault(str(key), None)
        shell = Env(env, platform, k8s=False)
        setup = _script(document.get("setup"), shell)
        run = _script(document.get("run"), shell)
        script = _merge_scripts(setup, run)
        launch, more = first_launch(run)
        notes.extend(more + script.notes)
        image = None
        image_id = get_str(resources, "image_id") if isinstance(resources, dict) else None
        if image_id and image_id.startswith("docker:"):
            image = Located(image_id[len("docker:"):], value_line(resources, "image_id"),
                            key_col(resources, "image_id"), "resources.image_id")
        engine: Located[str] | None = None
        args: EngineArgs | None = None
        if launch is not None:
            engine = Located(launch.engine, launch.line, None, "run")
            args = launch.args
        model = args.model if args else None
        model, note = resolve_download(model, script.downloads)
        if note:
            notes.append(note)
        gpus: Located[int] | Unresolved | None = None
        gpu_type = None
        if gpus_spec is not None:
            gpu_type = gpus_spec.type_()
            if gpus_spec.problem:
                gpus = Unresolved(gpus_spec.problem, gpus_spec.line)
                notes.append(gpus_spec.problem)
            elif gpus_spec.count is not None:
                source = f"{gpus_spec.source} {gpus_spec.count} per node"
                if nodes != 1:
                    source += f" x num_nodes {nodes}"
                gpus = Located(gpus_spec.count * nodes, gpus_spec.line, None, source)
            if len(gpus_spec.names) > 1:
                notes.append(f"accelerators are alternatives, not a sum: {gpus_spec.count} "
                             f"GPU(s) of one of {', '.join(gpus_spec.names)}")
        if nodes != 1 and nodes_line:
            notes.append(f"num_nodes {nodes}: GPUs are counted over all nodes")
        service = get_map(document, "service")
        if service is not None:
            replicas = to_int(service.get("replicas"))
            policy = get_map(service, "replica_policy") or {}
            if replicas is not None and replicas != 1:
                notes.append(f"service.replicas {replicas}: {replicas} replicas, each with the "
                             "GPUs reported")
            elif policy:
                bounds = ", ".join(f"{k} {policy[k]}" for k in ("min_replicas", "max_replicas")
                                   if k in policy)
                if bounds:
                    notes.append(f"service.replica_policy {bounds}")
        version, more = settle_version(engine.value if engine else None, image, script.pins)
        notes.extend(more)
        if engine is None:
            return []  # a task that serves no engine kvlint can see (training, a custom app)
        name = get_str(document, "name") or ""
        return [served_model(Origin(ctx, self.name, name=name, line=engine.line), engine=engine,
                             args=args, image=image, version=version, hardware=Hardware(gpus=gpus,
                                                                                        gpu_type=gpu_type),
                             notes=notes, model=model)]


# ============================================================================================
# dstack
# ============================================================================================

DSTACK_TYPES = ("service", "task")
VENDORS = frozenset({"nvidia", "amd", "google", "tpu", "intel", "tenstorrent", "tt"})


def _dstack_gpus(resources: Any) -> _Gpus | None:
    """``resources.gpu``: ``H200:2``, ``8:H200``, ``A100:40GB:2``, ``24GB..``, ``2``, or a
    mapping with ``name``/``count``; a count range is not one number."""
    if not isinstance(resources, dict) or resources.get("gpu") is None:
        return None
    value = resources["gpu"]
    line = key_line(resources, "gpu")
    names: list[str] = []
    count: int | None = 1
    problem = None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, str):
        for token in (t.strip() for t in value.split(":")):
            if not token:
                continue
            if re.fullmatch(r"\d+", token):
                count = int(token)
            elif re.fullmatch(r"\d*\.\.\d*", token):
                low, _, high = token.partition("..")
                if low and low == high:
                    count = int(low)
                else:
                    count, problem = None, f"resources.gpu count is a range ({token})"
            elif re.fullmatch(r"[\d.]+(GB|MB|TB)?(\.\.[\d.]*(GB|MB|TB)?)?", token, re.I) \
                    or token.lower() in VENDORS:
                continue
            else:
                names.extend(n.strip() for n in token.split(",") if n.strip())
    elif isinstance(value, dict):
        raw = value.get("name")
        if isinstance(raw, str):
            names = [raw]
        elif isinstance(raw, list):
            names = [str(n) for n in raw]
        raw_count = value.get("count", 1)
        count = to_int(raw_count)
        if count is None:
            problem = f"resources.gpu.count is not one number ({raw_count})"
    return _Gpus(names, count, line, "resources.gpu", problem)


class DstackParser(ManifestParser):
    """dstack run configurations (``type: service`` or ``task``): ``image``, ``env``,
    ``commands``, ``resources.gpu``, and the registered ``model``."""

    name = "dstack"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        if document.get("type") not in DSTACK_TYPES:
            return False
        return isinstance(document.get("commands"), list) or (
            isinstance(document.get("image"), str) and
            any(k in document for k in ("port", "resources", "model", "env")))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        notes: list[str] = []
        gpus_spec = _dstack_gpus(document.get("resources"))
        nodes = to_int(document.get("nodes", 1)) or 1
        platform: dict[str, str] = {"DSTACK_NODES_NUM": str(nodes)}
        if gpus_spec is not None and gpus_spec.count is not None:
            platform["DSTACK_GPUS_PER_NODE"] = str(gpus_spec.count)
            platform["DSTACK_GPUS_NUM"] = str(gpus_spec.count * nodes)
        env = env_of(document.get("env"))
        commands: list[list[Word]] = []
        for item in get_list(document, "commands") or []:
            if isinstance(item, str):
                commands.extend(split_script(item))
        shell = Env(env, platform, k8s=False)
        script = walk_script(commands, shell)
        launch, more = first_launch(script)
        notes.extend(more + script.notes)
        image = None
        raw_image = get_str(document, "image")
        if raw_image:
            image = Located(raw_image.strip(), value_line(document, "image"),
                            key_col(document, "image"), "image")
        engine: Located[str] | None = None
        args: EngineArgs | None = None
        if launch is not None:
            engine = Located(launch.engine, launch.line, None, "commands")
            args = launch.args
        elif image is not None and not commands:
            fallback = entrypoint_engine(image.value)
            if fallback is not None:
                engine = Located(fallback, image.line, image.column,
                                 f"entrypoint of image {image.value}")
                args = engine_args(fallback, [], shell)
        registered = document.get("model")
        served_name = registered if isinstance(registered, str) else \
            get_str(registered, "name")
        model = args.model if args else None
        model, note = resolve_download(model, script.downloads)
        if note:
            notes.append(note)
        if model is None and served_name:
            model = model_value(served_name, value_line(document, "model"),
                                "model (the name the service registers)")
        gpus: Located[int] | Unresolved | None = None
        gpu_type = None
        if gpus_spec is not None:
            gpu_type = gpus_spec.type_()
            if gpus_spec.problem:
                gpus = Unresolved(gpus_spec.problem, gpus_spec.line)
            elif gpus_spec.count is not None:
                gpus = Located(gpus_spec.count * nodes, gpus_spec.line, None,
                               "resources.gpu" + (f" x nodes {nodes}" if nodes != 1 else ""))
        replicas = document.get("replicas")
        if replicas is not None and to_int(replicas) != 1:
            notes.append(f"replicas {scalar_text(replicas)}: each replica has the GPUs reported")
        version, more = settle_version(engine.value if engine else None, image, script.pins)
        notes.extend(more)
        if engine is None:
            return []
        return [served_model(Origin(ctx, self.name, name=get_str(document, "name") or "",
                                    line=engine.line), engine=engine, args=args, image=image,
                             version=version, hardware=Hardware(gpus=gpus, gpu_type=gpu_type),
                             notes=notes, served_name=served_name, model=model)]


# ============================================================================================
# Azure ML managed online deployments
# ============================================================================================

class AzureMLDeploymentParser(ManifestParser):
    """Azure ML managed (or Kubernetes) online deployment YAML: a container
    ``environment.image`` configured through ``environment_variables`` on an
    ``instance_type``."""

    name = "azureml"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        schema = get_str(document, "$schema") or ""
        if "azureml" in schema.lower() and "deployment" in schema.lower():
            return True
        return "endpoint_name" in document and any(
            k in document for k in ("environment", "instance_type", "environment_variables"))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        notes: list[str] = []
        environment = document.get("environment")
        image = None
        if isinstance(environment, dict) and get_str(environment, "image"):
            image = Located(str(environment["image"]).strip(), value_line(environment, "image"),
                            key_col(environment, "image"), "environment.image")
        elif isinstance(environment, str):
            notes.append(f"environment {environment} is a registered Azure ML environment: "
                         "its image is not in the file")
        env = env_of(document.get("environment_variables"))
        engine: Located[str] | None = None
        args: EngineArgs | None = None
        fallback = entrypoint_engine(image.value) if image else None
        if fallback is not None and image is not None:
            engine = Located(fallback, image.line, image.column,
                             f"entrypoint of image {image.value}")
            args = engine_args(fallback, [], Env(env, k8s=False))
        model = args.model if args else None
        registered = get_str(document, "model")
        if model is None and registered:
            model = Unresolved("an Azure ML model asset: its weights are not named in the "
                               "file", value_line(document, "model"), None, registered)
        elif registered:
            notes.append(f"model {registered} is mounted at "
                         f"{get_str(document, 'model_mount_path') or 'the default path'}")
        gpus: Located[int] | Unresolved | None = None
        gpu_type = None
        sku = get_str(document, "instance_type")
        if sku:
            known = AZURE_SKUS.get(sku.strip().lower())
            line = key_line(document, "instance_type")
            if known:
                gpu_type = Located(known[0], line, None, f"instance_type {sku}")
                gpus = Located(known[1], line, None, f"instance_type {sku}: {known[1]} GPUs")
            else:
                notes.append(f"instance_type {sku} is not a known GPU VM size")
        count = to_int(document.get("instance_count"))
        if count is not None and count != 1:
            notes.append(f"instance_count {count}: {count} instances, each with the GPUs "
                         "reported")
        version, more = settle_version(engine.value if engine else None, image)
        notes.extend(more)
        if engine is None:
            return []
        return [served_model(Origin(ctx, self.name, name=get_str(document, "name") or "",
                                    line=engine.line), engine=engine, args=args, image=image,
                             version=version, hardware=Hardware(gpus=gpus, gpu_type=gpu_type),
                             notes=notes, model=model)]
