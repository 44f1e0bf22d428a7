"""vLLM services of one compose file that share a GPU (:mod:`.shared_gpus` judges them).

Compose starts every service without a profile (and those of a profile asked for together),
so a pair is judged only when neither has profiles or they share one. A service is given
every GPU (``gpus: all``, ``count: all``), the ones its ``device_ids`` or visible-devices
variable name, or the host's first N for ``count: N`` (Docker's ``countToDevices``, moby
daemon/nvidia_linux.go), and its ranks take the first tp x pp (x dp) of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kvlint.manifests.base import ServedModel, Unresolved
from kvlint.manifests.engine_launch import occupied_gpus
from kvlint.manifests.shared_gpus import EVERY_GPU, Tenant, used_devices
from kvlint.manifests.shared_gpus import shared_gpu_problems as judge
from kvlint.manifests.yaml_values import get_list, get_map, key_line

__all__ = ["shared_gpu_problems"]

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


Interpolate = Callable[[str], "str | Unresolved"]
"""Compose's interpolation of a value (:func:`kvlint.manifests.compose.interpolate`)."""


def _devices(service: Mapping[str, Any], interpolate: Interpolate) -> frozenset[str] | None:
    """The GPUs a service is given: ``{"*"}`` for every GPU, the ids it names (a variable
    as Compose interpolates it: the ``.env`` beside, else its default), or ``None`` (none, or
    not said in a way kvlint reads: a visible-devices variable neither sets narrows them to
    cards unknown here)."""
    visible = _visible(service)
    if visible is not None:
        # ${CUDA_VISIBLE_DEVICES:-0}: interpolated as Compose does (the .env beside, else the
        # default); a variable set by neither stays unread
        found = interpolate(visible.strip().strip("'\""))
        if not isinstance(found, str):
            return None
        text = found.strip()
        if "$" in text or text.lower() in ("void", "none"):
            return None
        if text and text.lower() != "all":
            return frozenset(p.strip() for p in text.split(",") if p.strip())
    if str(service.get("gpus", "")).strip().lower() == "all":
        return frozenset({EVERY_GPU})
    reservations = get_map(get_map(get_map(service, "deploy"), "resources"), "reservations")
    ids: set[str] = set()
    for device in get_list(reservations, "devices") or []:
        if not isinstance(device, dict):
            continue
        caps = device.get("capabilities")
        if isinstance(caps, list) and "gpu" not in [str(c) for c in caps]:
            continue
        count = str(device.get("count", "")).strip().lower()
        if count == "all" or ("count" not in device and "device_ids" not in device):
            # "If count is set to all or not specified, Compose reserves all devices that
            # satisfy the requested capabilities" (compose spec, deploy.md: devices)
            return frozenset({EVERY_GPU})
        if count.isdigit() and 0 < int(count) <= 64 and not device.get("device_ids"):
            # Docker gives a count the host's first N GPUs (moby daemon/nvidia_linux.go
            # countToDevices): two services of count 1 both get GPU 0
            ids.update(str(d) for d in range(int(count)))
            continue
        named = device.get("device_ids")
        if isinstance(named, list) and all(isinstance(d, str | int) for d in named):
            ids.update(str(d).strip() for d in named)
    return frozenset(ids) if ids and not any("$" in i for i in ids) else None


def _profiles(service: Mapping[str, Any]) -> frozenset[str]:
    raw = service.get("profiles")
    return frozenset(str(p) for p in raw) if isinstance(raw, list) else frozenset()


def shared_gpu_problems(models: list[ServedModel], services: Sequence[Mapping[str, Any]],
                        interpolate: Interpolate) -> list[ServedModel]:
    """``models`` (one per service in ``services``), each later vLLM service that cannot
    start beside the earlier ones on a GPU they share given a KV702 problem
    (:func:`.shared_gpus.shared_gpu_problems`)."""
    if len(models) != len(services) or len(models) < 2:
        return models
    tenants: list[Tenant] = []
    for i, (served, service) in enumerate(zip(models[:MAX_SERVICES],
                                              services[:MAX_SERVICES], strict=True)):
        given, world = _devices(service, interpolate), occupied_gpus(served, None, "")
        if given is None or world is None:
            continue
        visible = None if EVERY_GPU in given else sorted(given, key=lambda d: (len(d), d))
        devices = used_devices(visible, world.value)
        if devices is not None:
            tenants.append(Tenant(i, devices, key_line(service, "gpus") or served.line,
                                  f"the service {served.name or i + 1}"))

    def together(one: Tenant, other: Tenant) -> bool:
        mine, his = _profiles(services[one.index]), _profiles(services[other.index])
        return not (mine or his) or bool(mine & his)

    return judge(models, tenants, together)
