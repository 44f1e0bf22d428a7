"""vLLM services of one compose file that share a GPU and ask for more than all of it.

vLLM sizes its KV cache as a fraction of the whole GPU (``--gpu-memory-utilization``) and, at
start, refuses when less than that fraction is free (V1's worker: "Free memory on device ...
on startup ... is less than desired GPU memory utilization", v1/worker/gpu_worker.py@v0.10.1.1
``init_device``; V0 sizes no cache at all: "No available memory for the cache blocks"). Two
such servers given the same GPU (``gpus: all`` or ``count: all`` on both, or overlapping
``device_ids``), whose fractions add up to more than 1, cannot both start: whichever comes
second fails. Compose starts every service without a profile (and those of a profile asked
for together), so a pair is judged only when neither has profiles or they share one.

The fraction is the one the command gives, else the release's default (kvlint's engine table:
0.9, 0.92 from 0.20); vLLM 0.34's default of 1.0 comes with its extensible KV cache, whose
start-up check was not read: a pair that relies on it is a warning, not an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.yaml_values import get_list, get_map, key_line
from kvlint.model.engine_args import EngineArgProblem

__all__ = ["shared_gpu_problems"]

EXTENSIBLE_DEFAULT_FROM = "0.34.0"
MAX_SERVICES = 64


_VISIBLE = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def _visible(service: Mapping[str, Any]) -> str | None:
    """The devices the service's environment makes visible, as written (``None``: unset)."""
    env = service.get("environment")
    pairs: list[tuple[str, str]] = []
    if isinstance(env, dict):
        pairs = [(str(k), str(v)) for k, v in env.items() if v is not None]
    elif isinstance(env, list):
        pairs = [(str(e).partition("=")[0], str(e).partition("=")[2]) for e in env
                 if "=" in str(e)]
    return next((v for k, v in pairs if k.strip() in _VISIBLE), None)


def _devices(service: Mapping[str, Any]) -> frozenset[str] | None:
    """The GPUs a service is given: ``{"*"}`` for every GPU, the ids it names, or ``None``
    (none, or not said in a way kvlint reads: a visible-devices variable a deployer sets,
    ``NVIDIA_VISIBLE_DEVICES: ${MODEL_DEVICES:-all}``, narrows them to cards unknown here)."""
    visible = _visible(service)
    if visible is not None:
        text = visible.strip().strip("'\"")
        if "$" in text or text.lower() in ("void", "none"):
            return None
        if text and text.lower() != "all":
            return frozenset(p.strip() for p in text.split(",") if p.strip())
    if str(service.get("gpus", "")).strip().lower() == "all":
        return frozenset({"*"})
    reservations = get_map(get_map(get_map(service, "deploy"), "resources"), "reservations")
    ids: set[str] = set()
    for device in get_list(reservations, "devices") or []:
        if not isinstance(device, dict):
            continue
        caps = device.get("capabilities")
        if isinstance(caps, list) and "gpu" not in [str(c) for c in caps]:
            continue
        if str(device.get("count", "")).strip().lower() == "all":
            return frozenset({"*"})
        named = device.get("device_ids")
        if isinstance(named, list) and all(isinstance(d, str | int) for d in named):
            ids.update(str(d).strip() for d in named)
    return frozenset(ids) if ids and not any("$" in i for i in ids) else None


def _overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    return "*" in a or "*" in b or bool(a & b)


def _profiles(service: Mapping[str, Any]) -> frozenset[str]:
    raw = service.get("profiles")
    return frozenset(str(p) for p in raw) if isinstance(raw, list) else frozenset()


def _fraction(served: ServedModel) -> tuple[float, bool] | None:
    """``(gpu_memory_utilization, whether it is certain)`` of a vLLM service."""
    from packaging.version import InvalidVersion, Version

    from kvlint.engines import load_engines

    given = served.gpu_memory_utilization
    if isinstance(given, Located) and isinstance(given.value, int | float):
        return float(given.value), True
    version = served.engine_version.value if isinstance(served.engine_version, Located) \
        else None
    default = load_engines()["vllm"].gpu_memory_utilization_at(
        None if version in (None, "latest") else str(version))
    if default is None:
        return None
    try:
        newest = version in (None, "latest") or \
            Version(str(version)) >= Version(EXTENSIBLE_DEFAULT_FROM)
    except InvalidVersion:
        newest = True
    return default, not newest


def shared_gpu_problems(models: list[ServedModel], services: Sequence[Mapping[str, Any]]
                        ) -> list[ServedModel]:
    """``models`` (one per service in ``services``), each later vLLM service that shares a
    GPU with an earlier one, whose fractions add up to more than 1, given a KV702 problem."""
    if len(models) != len(services) or len(models) < 2:
        return models
    out = list(models)
    seen: list[tuple[int, frozenset[str], float, bool]] = []
    for i, (served, service) in enumerate(zip(models[:MAX_SERVICES],
                                              services[:MAX_SERVICES], strict=True)):
        if served.engine is None or served.engine.value != "vllm":
            continue
        devices, fraction = _devices(service), _fraction(served)
        if devices is None or fraction is None:
            continue
        for j, other, theirs, certain in seen:
            mine, his = _profiles(service), _profiles(services[j])
            if (mine or his) and not mine & his:
                continue
            if not _overlap(devices, other) or fraction[0] + theirs <= 1.0:
                continue
            first = models[j].name or "another service"
            sure = fraction[1] and certain
            problem = EngineArgProblem(
                "value", "--gpu-memory-utilization",
                f"this vLLM service and {first} are given the same GPU and ask for "
                f"{fraction[0]:g} and {theirs:g} of it ({fraction[0] + theirs:g} in all): "
                "whichever starts second finds less free memory than its fraction and exits "
                "(vLLM: 'Free memory on device ... is less than desired GPU memory "
                "utilization'); give each its own GPU (device_ids) or fractions that add up "
                "to 1 or less"
                + ("" if sure else " (vLLM 0.34's default of 1.0 comes with its extensible "
                   "KV cache, whose start-up check kvlint has not read: a warning)"),
                key_line(service, "gpus") or served.line, None,
                {"reason": "shared-gpu", "with": first, "sum": fraction[0] + theirs,
                 **({} if sure else {"newer_may_accept": True})})
            out[i] = replace(out[i], engine_problems=(*out[i].engine_problems, problem))
            break
        seen.append((i, devices, fraction[0], fraction[1]))
    return out
