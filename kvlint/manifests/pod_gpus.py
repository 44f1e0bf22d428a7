"""The GPUs a pod's containers ask the device plugins for (``limits``, else ``requests``):
below :mod:`.kubernetes` and :mod:`.kubernetes_containers`, which both count them (a pod's
GPUs; a container's, for a script that counts the GPUs it sees)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.yaml_values import get_list, get_map, key_col, key_line, to_int
from kvlint.model.hardware import mig_device

__all__ = ["GPU_KEYS", "MIG_RESOURCE", "SHARED_GPU", "TPU_KEYS", "int_at", "mig_name",
           "mig_resources", "pod_gpus"]

GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "gpu.intel.com/i915",
            "gpu.intel.com/xe", "nvidia.com/gpu.shared")
"""Device-plugin resources of accelerators an engine counts as its GPUs (tp x pp of them):
NVIDIA, AMD (ROCm/k8s-device-plugin), Intel Gaudi (habana-k8s-device-plugin) and Intel GPUs
(intel-device-plugins-for-kubernetes), as the Helm values reader counts them; and
``nvidia.com/gpu.shared``, a time-sliced replica of an NVIDIA GPU (the device plugin's
``sharing.timeSlicing`` with ``renameByDefault: true``, NVIDIA/k8s-device-plugin
README.md@cb6e45ec):
one device to the process, shared with the other pods given a replica of it."""
SHARED_GPU = "nvidia.com/gpu.shared"
TPU_KEYS = ("google.com/tpu",)


def int_at(obj: Any, key: str, source: str) -> Located[int] | Unresolved | None:
    """An integer setting with its key's line; ``"8"`` counts as 8."""
    if not isinstance(obj, dict) or obj.get(key) is None:
        return None
    value = obj[key]
    number = to_int(value)
    line, column = key_line(obj, key), key_col(obj, key)
    if number is None:
        return Unresolved(f"{source} is not an integer", line, column, str(value))
    return Located(number, line, column, source)


def pod_gpus(pod: Any, containers: Sequence[Any] | None = None,
             where: str = "") -> tuple[Located[int] | Unresolved | None, list[str]]:
    """GPUs one pod requests (``limits``, else ``requests``, summed over its containers),
    and notes (TPUs are not GPUs)."""
    total = 0
    first: Located[int] | None = None
    keys: list[str] = []
    notes: list[str] = []
    for container in containers if containers is not None else (
            get_list(pod, "containers") or []):
        resources = get_map(container, "resources")
        for key in GPU_KEYS + TPU_KEYS + mig_resources(resources):
            for part in ("limits", "requests"):
                block = get_map(resources, part)
                if block is None or block.get(key) is None:
                    continue
                found = int_at(block, key, f"{where}resources.{part}.{key}")
                if isinstance(found, Unresolved):
                    return found, notes
                assert found is not None
                if key in TPU_KEYS:
                    notes.append(f"{key}: {found.value} TPU chips per pod (line {found.line})"
                                 "; TPUs are not counted as GPUs")
                else:
                    total += found.value
                    keys.append(key)
                    first = first or found
                    if key == SHARED_GPU:
                        notes.append(f"{key}: time-sliced replicas of a GPU (line "
                                     f"{found.line}); other pods may share the same card")
                break
    if first is None:
        return None, notes
    if len(keys) > 1:
        return Located(total, first.line, first.column,
                       f"{where}resources {' + '.join(keys)} (all containers)"), notes
    return Located(total, first.line, first.column, first.source), notes


MIG_RESOURCE = re.compile(r"nvidia\.com/(mig-\S+)$", re.IGNORECASE)
"""The NVIDIA device plugin's resource for a MIG device under its ``mixed`` strategy
(``nvidia.com/mig-3g.20gb``: NVIDIA/k8s-device-plugin v0.7.0 release notes), its name a MIG
device's (:func:`kvlint.model.hardware.mig_device`)."""


def mig_name(key: object) -> str | None:
    """``mig-3g.40gb`` for a MIG-device resource name, else ``None``."""
    found = MIG_RESOURCE.match(str(key))
    return found.group(1) if found and mig_device(found.group(1)) is not None else None


def mig_resources(resources: Any) -> tuple[str, ...]:
    """The MIG-device resources a container's ``limits`` or ``requests`` name."""
    found: list[str] = []
    for part in ("limits", "requests"):
        for key in get_map(resources, part) or {}:
            if mig_name(key) and str(key) not in found:
                found.append(str(key))
    return tuple(found)
