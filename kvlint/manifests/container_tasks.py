"""Container task definitions that run an engine image outside Kubernetes: Amazon ECS task
definitions (``containerDefinitions``), Nosana job definitions (``ops`` of type
``container/run``) and Baseten Truss configs of a custom server (``docker_server``).

Both name an image and override its ENTRYPOINT and CMD. kvlint turns each container into the
Kubernetes container it is equivalent to (ENTRYPOINT = ``command``, CMD = ``args``, the
environment as ``env``) and reads it with the pod machinery of
:mod:`.kubernetes_containers`, so an engine image's own entrypoint, a program handed to it
and ``sh -c`` scripts are read as for a pod.

* **ECS** (Amazon ECS Developer Guide, task definition parameters, ``ContainerDefinition``):
  ``image``; ``entryPoint`` (the ENTRYPOINT); ``command`` (the CMD); ``environment``
  (``[{"name", "value"}]``); ``resourceRequirements`` ``[{"type": "GPU", "value": "N"}]``
  reserves N GPUs for the container (none without it).
* **Nosana** (nosana-ci/nosana-cli ``src/providers/utils/parseOpsArgsCmd.ts``
  @6de53d63fdbb4ebd00d209acb72f591ad58d2d14 and ``createPodmanRunOptions.ts``
  @070093a722274d518286b0b5a762072928a479ac): ``args.image``; ``args.entrypoint`` (the
  ENTRYPOINT; a string is one word); ``args.cmd`` (the CMD; a string runs as ``/bin/sh -c
  CMD``); ``args.env`` and the job's ``global.env`` (maps); ``args.gpu: true`` hands the
  container every GPU of the node (``nvidia.com/gpu=all``: no count), and without it the
  container gets none. ``meta.system_requirements.required_vram`` is the least GPU memory
  (GB) a node must have, not the GPU's memory, so it is only noted.
* **Truss** (basetenlabs/truss ``truss/base/truss_config.py`` and
  ``contexts/image_builder/serving_image_builder.py`` @0bee989b): ``base_image.image`` is
  the image; ``docker_server.start_command`` runs as a supervisord program's ``command``
  (split with ``shlex``, no shell: ``sh -c "..."`` is how a script is given), in place of the
  image's entrypoint; ``resources.accelerator`` is ``TYPE`` or ``TYPE:COUNT`` (one GPU by
  default, none without an accelerator unless ``use_gpu`` says so); ``model_name`` is the
  deployment's display name, not a model.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from kvlint.manifests.accelerators import no_gpu_source
from kvlint.manifests.base import (
    DocumentContext,
    Located,
    ManifestParser,
    ServedModel,
    Unresolved,
    refuse_object,
)
from kvlint.manifests.engine_launch import Hardware, Origin
from kvlint.manifests.kubernetes import build
from kvlint.manifests.kubernetes_containers import container_runs, follow_config
from kvlint.manifests.yaml_values import (
    env_items,
    get_list,
    get_map,
    get_str,
    item_line,
    key_line,
    lstr,
    node_line,
    plain_map,
    to_int,
    value_line,
)

MAX_CONTAINERS = 64
"""Containers read per task definition or job (a real one has a few)."""


def _serve(origin: Origin, container: dict[str, Any], gpus: Located[int] | Unresolved | None,
           notes: list[str]) -> list[ServedModel]:
    """One ServedModel per engine ``container`` (a Kubernetes-shaped container) starts; a
    count of 0 names the engine's own GPU image when it is one (KV206 is then an error)."""
    pod = {"containers": [container]}
    out = []
    for run in container_runs(pod, origin.ctx):
        args, overrides, more = follow_config(run, pod, origin.ctx)
        given = gpus
        if isinstance(gpus, Located) and gpus.value == 0:
            given = Located(0, gpus.line, None,
                            no_gpu_source(gpus.source or "", run.engine.value, run.image))
        out.append(build(origin, run, args=args, hardware=Hardware(gpus=given),
                         notes=[*notes, *more], overrides=overrides))
    return out


class EcsTaskDefinitionParser(ManifestParser):
    """An Amazon ECS task definition (the JSON ``aws ecs register-task-definition`` takes):
    each of its ``containerDefinitions`` that starts an engine is a served model with the GPUs
    its ``resourceRequirements`` reserve (module doc)."""

    name = "ecs"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        containers = document.get("containerDefinitions")
        return isinstance(containers, list) and any(
            isinstance(c, dict) and isinstance(c.get("image"), str) for c in containers)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        family = get_str(document, "family") or ""
        out: list[ServedModel] = []
        for container in (get_list(document, "containerDefinitions") or [])[:MAX_CONTAINERS]:
            if not isinstance(container, dict) or not isinstance(container.get("image"), str):
                continue
            pod_container: dict[str, Any] = {"image": container["image"]}
            if container.get("entryPoint") is not None:
                pod_container["command"] = container["entryPoint"]
            if container.get("command") is not None:
                pod_container["args"] = container["command"]
            environment = container.get("environment")
            if isinstance(environment, list):
                pod_container["env"] = [e for e in environment if isinstance(e, dict)]
            name = get_str(container, "name") or family
            origin = Origin(ctx, self.name, name=name, line=node_line(container))
            out.extend(_serve(origin, pod_container, _ecs_gpus(container), []))
        return out


def _ecs_gpus(container: dict[str, Any]) -> Located[int] | Unresolved:
    """The GPUs ``resourceRequirements`` reserve for one container (0 without a GPU entry:
    ECS then exposes none to it)."""
    requirements = get_list(container, "resourceRequirements") or []
    for i, item in enumerate(requirements):
        if not isinstance(item, dict) or str(item.get("type", "")).upper() != "GPU":
            continue
        count = to_int(item.get("value"))
        line = item_line(requirements, i)
        if count is None:
            return Unresolved(reason="resourceRequirements GPU value is not a count",
                              line=line, text=str(item.get("value")))
        return Located(count, line, None, "resourceRequirements GPU")
    return Located(0, key_line(container, "image"), None,
                   "no GPU reserved (no GPU entry in the container's resourceRequirements)")


class NosanaJobParser(ManifestParser):
    """A Nosana job definition (``nosana job post --file job.json``): each ``container/run``
    operation that starts an engine is a served model (module doc)."""

    name = "nosana"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        ops = document.get("ops")
        return isinstance(ops, list) and any(
            isinstance(op, dict) and op.get("type") == "container/run" for op in ops)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        shared = get_map(get_map(document, "global") or {}, "env") or {}
        meta = get_map(document, "meta") or {}
        vram = (get_map(meta, "system_requirements") or {}).get("required_vram")
        notes = [f"meta.system_requirements.required_vram {vram}: a node offers at least "
                 f"{vram} GB of GPU memory"] if vram is not None else []
        out: list[ServedModel] = []
        for op in (get_list(document, "ops") or [])[:MAX_CONTAINERS]:
            if not isinstance(op, dict) or op.get("type") != "container/run":
                continue
            args = get_map(op, "args") or {}
            if not isinstance(args.get("image"), str):
                continue
            container: dict[str, Any] = {"image": args["image"]}
            entrypoint = args.get("entrypoint")
            if isinstance(entrypoint, str | list):
                container["command"] = [entrypoint] if isinstance(entrypoint, str) \
                    else entrypoint
            cmd = args.get("cmd")
            if isinstance(cmd, str) and cmd.strip():
                line = value_line(args, "cmd")
                container["args"] = [lstr("/bin/sh", line), lstr("-c", line), cmd]
            elif isinstance(cmd, list) and cmd:
                container["args"] = cmd
            container["env"] = env_items(shared) + env_items(get_map(args, "env") or {})
            origin = Origin(ctx, self.name, name=get_str(op, "id") or "", line=node_line(op))
            out.extend(_serve(origin, container, _nosana_gpus(args), notes))
        return out


def _nosana_gpus(args: dict[str, Any]) -> Located[int] | None:
    """``gpu: true``: every GPU of the node (no count, ``None``); otherwise none."""
    if args.get("gpu") is True:
        return None
    return Located(0, key_line(args, "gpu") or key_line(args, "image"), None,
                   "no GPU reserved (no gpu: true in the operation's args)")


class TrussConfigParser(ManifestParser):
    """A Baseten Truss ``config.yaml`` of a custom server: its ``docker_server``'s start
    command in its ``base_image`` (module doc)."""

    name = "truss"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        server = document.get("docker_server")
        return isinstance(server, dict) and isinstance(server.get("start_command"), str)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        server = get_map(document, "docker_server") or {}
        image = get_str(get_map(document, "base_image") or {}, "image")
        command = get_str(server, "start_command") or ""
        line = value_line(server, "start_command")
        try:
            words = shlex.split(command)
        except ValueError as err:
            # supervisord splits the program's command with shlex when it spawns it
            # (supervisor/process.py@0137efe7 get_execv_args: BadCommand "can't parse
            # command"), so
            # the program never runs
            refuse_object(ctx, line, f"docker_server.start_command cannot be split as "
                          f"supervisord splits it ({err}): supervisord refuses to spawn it "
                          "(\"can't parse command\") and no server starts; close the quote")
            return []
        container: dict[str, Any] = {
            "image": lstr(image or "", value_line(get_map(document, "base_image"), "image")),
            "command": [lstr(word, line) for word in words],
            "env": env_items(get_map(document, "environment_variables") or {})}
        name = get_str(document, "model_name") or ""
        origin = Origin(ctx, self.name, name=name, line=line)
        gpus, kind = _truss_gpus(get_map(document, "resources") or {})
        notes = [f"Truss model_name {name!r} is the deployment's name, not the model"] \
            if name else []
        return [replace(s, gpu_type=s.gpu_type or kind) if kind else s
                for s in _serve(origin, container, gpus, notes)]


def _truss_gpus(resources: dict[str, Any]
                ) -> tuple[Located[int] | Unresolved | None, Located[str] | None]:
    """The GPUs and their type ``resources.accelerator`` asks for (``H100:4``)."""
    spec = resources.get("accelerator")
    line = value_line(resources, "accelerator")
    if isinstance(spec, dict):
        spec = f"{spec.get('accelerator')}:{spec.get('count', 1)}"
    if isinstance(spec, str) and spec.strip():
        kind, _, count = spec.strip().partition(":")
        number = to_int(count) if count else 1
        if number is None:
            return Unresolved(reason="resources.accelerator count is not a number",
                              line=line, text=spec), None
        return (Located(number, line, None, "resources.accelerator"),
                Located(kind, line, None, "resources.accelerator"))
    if resources.get("use_gpu") is True:
        return None, None
    return Located(0, key_line(resources, "cpu") or line, None,
                   "no GPU requested (no resources.accelerator)"), None
