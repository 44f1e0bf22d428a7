"""Helm values that hold the engine's whole command as one string (``cli: "vllm serve
org/model --tensor-parallel-size 2"``), for charts kvlint has no parser for.

Some charts take the command the container runs as a values string and render it into the
pod's ``args`` (often behind ``sh -c``). Such a string is read as the script it is: every
engine it starts is a served model, with the GPUs of the same map's ``resources`` (a device
key directly under it, or under ``limits``/``requests``). What reaches the pod is what the
chart's templates render, and they are not in the file: each model says so in a note. Only
strings in the top map and the maps one level down are read, and only those that name an
engine program, so a values file of any size costs one pattern search per string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ServedModel, Unresolved
from kvlint.manifests.engine_launch import (
    Hardware,
    Launch,
    Origin,
    first_launch,
    served_model,
    walk_script,
)
from kvlint.manifests.kubernetes import gpu_type_of
from kvlint.manifests.located_str import LStr
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import split_script
from kvlint.manifests.yaml_values import loc_int, plain_map, value_line

__all__ = ["DEVICES", "CommandString", "command_string_models", "command_strings",
           "resource_gpus"]

MAX_COMMAND_CHARS = 20_000
"""A values string longer than this is not read as a command (a real one has a few hundred
characters)."""
_ENGINE_WORD = re.compile(r"\b(?:vllm|sglang|text-generation-launcher|llama-server|lmdeploy|"
                          r"trtllm-serve)\b")
_GROUP = re.compile(r"\$\{?LWS_\w+|multi-node-serving\.sh|--ray[_-]cluster[_-]size|"
                    r"\bray start\b|--nnodes")
"""Words of a command that runs one pod's part of a multi-node group (LeaderWorkerSet's
variables, vLLM's multi-node Ray script, a Ray cluster, an engine's node count)."""
DEVICES = ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "gpu.intel.com/i915",
           "gpu.intel.com/xe", "nvidia.com/gpu.shared", "google.com/tpu")


@dataclass(frozen=True)
class CommandString:
    """One values string that starts an engine: where it is and what it starts."""

    path: str
    """The dotted key (``cli``, ``server.command``)."""
    holder: dict[str, Any]
    launch: Launch
    notes: tuple[str, ...]
    group: str | None = None
    """What in the string starts a multi-node group (``$LWS_GROUP_SIZE``...), if anything."""


def command_strings(document: object) -> list[CommandString]:
    """The values strings of ``document`` (a plain map, not a Kubernetes object) that start
    an engine, in the order of the keys."""
    if not plain_map(document) or not isinstance(document, dict):
        return []
    out: list[CommandString] = []
    holders: list[tuple[str, dict[str, Any]]] = [("", document)]
    holders += [(str(k), v) for k, v in document.items() if isinstance(v, dict)]
    for prefix, holder in holders:
        for key, value in holder.items():
            if not isinstance(value, str) or len(value) > MAX_COMMAND_CHARS or \
                    not _ENGINE_WORD.search(value):
                continue
            line = value_line(holder, key)
            commands = split_script(value) if isinstance(value, LStr) and value.line else \
                split_script(value, line=line)
            launch, notes = first_launch(walk_script(commands, Env({}, k8s=False)))
            if launch is not None:
                path = f"{prefix}.{key}" if prefix else str(key)
                group = _GROUP.search(value)
                out.append(CommandString(path, holder, launch, tuple(notes),
                                         group.group(0) if group else None))
    return out


def resource_gpus(resources: object, where: str, *, direct: bool = True
                  ) -> Located[int] | Unresolved | None:
    """GPUs of a values ``resources`` map: under ``limits``, else ``requests`` (as Kubernetes
    reads them), or, with ``direct``, first a device key directly under it (a chart that puts
    it into the pod's limits itself)."""
    if not isinstance(resources, dict):
        return None
    blocks = [("limits.", resources.get("limits")), ("requests.", resources.get("requests"))]
    for part, block in ([("", resources)] if direct else []) + blocks:
        if not isinstance(block, dict):
            continue
        for key in DEVICES:
            if block.get(key) is not None:
                return loc_int(block, key, f"{where}.{part}{key}")
        if part and isinstance(block.get("gpu"), int | str) and \
                not isinstance(block.get("gpu"), bool) and \
                str(block["gpu"]).strip().isdigit():
            # a chart's own short key (resources.limits.gpu: "1"), which its template
            # renders as the device plugin's resource
            return loc_int(block, "gpu", f"{where}.{part}gpu")
    return None


def command_string_models(document: dict[str, Any], ctx: DocumentContext, name: str,
                          found: list[CommandString]) -> list[ServedModel]:
    """A served model per command string, with the GPUs its map (or the top map) asks
    for."""
    out: list[ServedModel] = []
    for item in found:
        launch = item.launch
        scope = item.holder if "resources" in item.holder else document
        where = "resources" if scope is document else \
            f"{item.path.rpartition('.')[0]}.resources"
        notes = [f"the engine command is the values string {item.path}: the chart's "
                 "templates, not in the file, decide how it reaches the pod", *item.notes]
        gpus = resource_gpus(scope.get("resources"), where)
        if isinstance(gpus, Located) and item.group:
            # a Ray/LWS group spans pods: the request is one pod's share of its GPUs
            gpus = Unresolved(f"{gpus.source} {gpus.value} is one pod's GPUs of a multi-node "
                              f"group ({item.group}) whose size the values do not say",
                              gpus.line, gpus.column, str(gpus.value))
        out.append(served_model(
            Origin(ctx, name, line=launch.line),
            engine=Located(launch.engine, launch.line, None, f"values key {item.path}"),
            args=launch.args, image=None, version=None,
            hardware=Hardware(gpus=gpus,
                              gpu_type=gpu_type_of(scope) or gpu_type_of(document)),
            notes=notes))
    return out
