"""The GPU memory a Kubernetes pod is scheduled for, from the node labels it selects on.

NVIDIA GPU Feature Discovery labels each GPU node with ``nvidia.com/gpu.memory``: the total
memory of one GPU in MiB as the driver reports it (an A10 node: ``23028``, nvidia-smi's total).
Karpenter on AWS writes ``karpenter.k8s.aws/instance-gpu-memory`` in MiB too. A pod that pins
such a label (``nodeSelector``, or a required node-affinity ``In`` term with one value) states
the memory of the GPU it runs on, for any GPU, named in the GPU table or not.
"""

from __future__ import annotations

from typing import Any

from kvlint.manifests.base import Located
from kvlint.manifests.yaml_values import get_list, get_map, get_str, key_col, key_line, to_int
from kvlint.model.gpu_memory import gpu_memory_error

__all__ = ["GPU_MEMORY_KEYS", "gpu_memory_of"]

GPU_MEMORY_KEYS = ("nvidia.com/gpu.memory", "karpenter.k8s.aws/instance-gpu-memory")
"""Node labels holding one GPU's memory in MiB."""


def _gib(text: object) -> float | None:
    """MiB written in a label, as GiB (MiB / 1024 is exact); ``None`` unless a whole
    number of MiB kvlint accepts as a GPU memory."""
    mib = to_int(text)
    if mib is None:
        return None
    gib = mib / 1024
    return gib if gpu_memory_error(gib) is None else None


def gpu_memory_of(pod: Any) -> Located[float] | None:
    """One GPU's memory in GiB as the pod's node selection states it, or ``None``."""
    selector = get_map(pod, "nodeSelector") or {}
    for key in GPU_MEMORY_KEYS:
        gib = _gib(selector.get(key))
        if gib is not None:
            return Located(gib, key_line(selector, key), key_col(selector, key),
                           f"nodeSelector {key}")
    affinity = get_map(get_map(pod, "affinity"), "nodeAffinity")
    required = get_map(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    for term in get_list(required, "nodeSelectorTerms") or []:
        for expr in get_list(term, "matchExpressions") or []:
            label = get_str(expr, "key")
            values = get_list(expr, "values") or []
            if label in GPU_MEMORY_KEYS and get_str(expr, "operator") == "In" and \
                    len(values) == 1:
                gib = _gib(values[0])
                if gib is not None:
                    return Located(gib, key_line(expr, "values"), None,
                                   f"node affinity {label} In")
    return None
