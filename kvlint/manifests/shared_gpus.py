"""vLLM servers of one host that share a GPU and ask for more of it than it has (KV702).

Each vLLM instance sizes itself as a fraction of the *whole* GPU (``--gpu-memory-utilization``:
"This is a per-instance limit, and only applies to the current vLLM instance",
vllm/engine/arg_utils.py@v0.7.3 line 505, vllm/config/cache.py@v0.34.0 line 219), so servers
run side by side on one GPU fit only while their fractions add up to less than 1. What the one
that starts later does when they do not depends on the release (read in the wheels):

* **before 0.8.0** (V0, ``Worker.determine_num_available_blocks``, vllm/worker/worker.py
  @v0.7.3 lines 233-236): its KV cache is its fraction of the whole GPU less its own use,
  allocated at once, so it runs out of memory allocating it when the fractions add up to 1 or
  more;
* **0.8.0 to 0.9.0** (V1, ``Worker.determine_available_memory``, vllm/v1/worker/gpu_worker.py
  @v0.9.0 lines 179-212): the memory the other processes hold counts as its own
  ("non_torch_allocations" is everything in use on the device less its own tensors), so it
  starts with what is left, and fails ("No available memory for the cache blocks") only when
  its fraction is no more than the others' together;
* **0.9.1 to 0.33** (``Worker.init_device``, vllm/v1/worker/gpu_worker.py@v0.9.1, and
  @v0.10.1.1 lines 174-187): it exits at start when less than its fraction is free: "Free
  memory on device (...) on startup is less than desired GPU memory utilization";
* **from 0.34.0** with the extensible KV cache (its default; ``request_memory``,
  vllm/v1/worker/utils.py@v0.34.0 lines 783-797): the fraction is only a cap and the check is
  skipped, so it starts with the memory left free.

A server of no stated release is judged by each of these: an error when every one fails it, a
warning naming those that do when only some do.

Which servers run side by side, and on which GPUs, is the caller's: every service of a compose
file (:mod:`.compose_shared`), the servers a script leaves running in the background
(:mod:`.shell_scripts`). A server's ranks take the first tp x pp x dp of the GPUs it sees;
every GPU of the host when nothing narrows them; Docker's ``--gpus N`` and compose's
``count: N`` are the host's first N (``countToDevices``, moby daemon/nvidia_linux.go).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kvlint.manifests.base import Located, ServedModel, Unresolved
from kvlint.model.engine_args import EngineArgProblem

__all__ = ["Tenant", "shared_gpu_problems", "used_devices"]

MAX_TENANTS = 64

EVERY_GPU = "*"
"""A visible-device list that narrows nothing: the host's every GPU."""

_REFUSES_AT_START = ("exits at start ('Free memory on device ... on startup is less than "
                     "desired GPU memory utilization')")
_ERAS = (
    ("0.7.3", "runs out of memory allocating its KV cache (V0 sizes it as its fraction of the "
              "whole GPU)"),
    ("0.8.0", "finds no memory for its KV cache ('No available memory for the cache blocks': "
              "V1 before 0.9.1 counts the other server's memory as its own)"),
    ("0.9.1", _REFUSES_AT_START),
    ("0.20.0", _REFUSES_AT_START),
    ("0.34.0", ""),
)
"""A release of each way vLLM sizes a server beside another (the module's docs), for a server
of no stated release; 0.20.0 for the default fraction of 0.92 from there."""

_SPANS = {"0.7.3": "before 0.8", "0.8.0": "0.8.0-0.9.0", "0.9.1": "0.9.1-0.33",
          "0.20.0": "0.9.1-0.33", "0.34.0": "0.34 on"}


@dataclass(frozen=True)
class Tenant:
    """A server that runs beside the others given with it: ``index`` in the file's served
    models, the GPUs its ranks take, where a finding about it goes and how a finding about
    another names it."""

    index: int
    devices: frozenset[str]
    line: int | None
    label: str


def used_devices(visible: Sequence[str] | None, world: int) -> frozenset[str] | None:
    """The GPUs a server of ``world`` ranks takes from those it sees (``None``: every GPU of
    the host); ``None`` when it sees fewer than it needs (it does not start at all)."""
    if world < 1:
        return None
    if visible is None:
        return frozenset(str(d) for d in range(min(world, 4096)))
    if len(visible) < world:
        return None
    return frozenset(visible[:world])


def _release(served: ServedModel) -> str | None:
    """The release ``served`` runs: the newest known for a rolling tag (``latest``, as every
    rule reads it: a pull gets the newest), ``None`` when nothing names one."""
    from kvlint.engines import UNKNOWN_VERSION, UNPINNED
    from kvlint.engines.release_dates import newest
    from kvlint.model.memory import release_version

    version = served.engine_version
    if not isinstance(version, Located):
        return None
    text = str(version.value).strip().lower()
    if text in UNPINNED and text != UNKNOWN_VERSION:
        return newest("vllm")
    parsed = release_version(text)
    return str(parsed) if parsed is not None else None


def _fraction(served: ServedModel, release: str) -> float | None:
    from kvlint.engines import load_engines

    given = served.gpu_memory_utilization
    if isinstance(given, Unresolved):
        return None
    if isinstance(given, Located) and isinstance(given.value, int | float):
        return float(given.value)
    return load_engines()["vllm"].gpu_memory_utilization_at(release)


def _fails(served: ServedModel, release: str, mine: float, theirs: float) -> bool:
    """Whether ``served`` at ``release``, asking for ``mine`` beside servers that hold
    ``theirs`` of the GPU, fails to start."""
    from packaging.version import Version

    from kvlint.model.memory import extensible_kv_cache

    v = Version(release)
    switch = served.extensible_kv_cache.value if isinstance(
        served.extensible_kv_cache, Located) else None
    if isinstance(served.kv_cache_memory_bytes, Located):
        switch = False  # --kv-cache-memory-bytes turns the extensible cache off
    if extensible_kv_cache(release, switch):
        return False
    if Version("0.8.0") <= v < Version("0.9.1"):
        return mine <= theirs
    return mine + theirs >= 1.0


def _verdict(served: ServedModel, others: Sequence[ServedModel]
             ) -> tuple[float, float, list[tuple[str, str]], bool] | None:
    """``(its fraction, the others', [(release, how it fails)], whether every release
    judged fails it)``, or ``None`` when none does (or a fraction is unresolved)."""
    release = _release(served)
    eras = [(release, _reason(release))] if release else list(_ERAS)
    failing: list[tuple[str, str]] = []
    mine = theirs = 0.0
    for era, reason in eras:
        fraction = _fraction(served, era)
        held = [_fraction(o, era) for o in others]
        if fraction is None or any(h is None for h in held):
            return None
        total = sum(h for h in held if h is not None)
        if _fails(served, era, fraction, total):
            if not failing:
                mine, theirs = fraction, total
            failing.append((era, reason))
    if not failing:
        return None
    return mine, theirs, failing, len(failing) == len(eras)


def _reason(release: str) -> str:
    """How ``release`` fails a server that does not fit beside the others."""
    from packaging.version import Version

    v = Version(release)
    later = [why for era, why in _ERAS if Version(era) <= v and why]
    return later[-1] if later and v >= Version("0.8.0") else _ERAS[0][1]


def shared_gpu_problems(models: list[ServedModel], tenants: Sequence[Tenant],
                        together: Callable[[Tenant, Tenant], bool] = lambda a, b: True
                        ) -> list[ServedModel]:
    """``models`` with a KV702 problem on each vLLM server of ``tenants`` (in the order they
    start) that cannot start beside the earlier ones that share a GPU with it and run
    ``together`` with it."""
    out = list(models)
    seen: list[Tenant] = []
    for tenant in tenants[:MAX_TENANTS]:
        served = models[tenant.index]
        if served.engine is None or served.engine.value != "vllm":
            continue
        beside = [t for t in seen if t.devices & tenant.devices and together(t, tenant)]
        seen.append(tenant)
        verdict = _verdict(served, [models[t.index] for t in beside]) if beside else None
        if verdict is None:
            continue
        mine, theirs, failing, certain = verdict
        names = " and ".join(t.label for t in beside[:3])
        common = tenant.devices & frozenset().union(*(t.devices for t in beside))
        shared = ",".join(sorted(common, key=lambda d: (len(d), d))[:8])
        held = "holds" if len(beside) == 1 else "hold"
        by_reason: dict[str, list[str]] = {}
        for era, why in failing:
            spans = by_reason.setdefault(why, [])
            if _SPANS.get(era, era) not in spans:
                spans.append(_SPANS.get(era, era))
        if certain and len(by_reason) == 1:
            how = failing[0][1]
        else:
            how = "; ".join(f"{why} on vLLM {', '.join(spans)}"
                            for why, spans in by_reason.items())
        if not certain:
            fine = dict.fromkeys(_SPANS[era] for era, _ in _ERAS if era not in dict(failing))
            how += (" (the file names no release; vLLM " + " and ".join(fine) +
                    " would start it with the memory left)")
        message = (
            f"this vLLM server shares GPU {shared} with {names}, which {held} {theirs:g} of "
            f"it, and asks for {mine:g} ({mine + theirs:g} in all): vLLM sizes each server "
            f"as a fraction of the whole GPU, so the one that starts second {how}. Give each "
            "server its own GPU (CUDA_VISIBLE_DEVICES, device_ids) or fractions that add up "
            "to less than 1")
        problem = EngineArgProblem(
            "value", "--gpu-memory-utilization", message, tenant.line, None,
            {"reason": "shared-gpu", "with": [t.label for t in beside], "sum": mine + theirs,
             **({} if certain else {"newer_may_accept": True})})
        out[tenant.index] = replace(out[tenant.index], engine_problems=(
            *out[tenant.index].engine_problems, problem))
    return out
