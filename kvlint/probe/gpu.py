"""The GPU path of ``kvlint probe``: time decode steps over several contexts and read the
bytes per token off the slope (research note ``gpu-probe.md`` §2).

torch (and triton, when present) are imported inside the functions that need them, so this
module imports on any machine; :func:`timing_measurement` is plain arithmetic and runs
without torch. The harness that builds a one-layer model and its cache lives elsewhere: this
module only needs its :class:`Harness` protocol.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from kvlint.probe.result import ImplMeasurement
from kvlint.probe.slope import (
    effective_bytes_per_token,
    fit,
    fit_quality_note,
    timing_ratio,
)

if TYPE_CHECKING:
    from typing import TypeAlias

    import torch

    from kvlint.probe.theory import TheoryCurve

    Device: TypeAlias = int | str | torch.device
    """A CUDA device: an index, ``"cuda:1"``, or a ``torch.device``."""

NVTX_RANGE = "kvlint_attn"
"""The NVTX range each timed step runs in (``ncu --nvtx-include kvlint_attn/``)."""
CONFIRM_RATIO = 1.5
"""Above this timing ratio, confirm with ncu before blaming the bytes."""
FLUSH_MIN_BYTES = 256 << 20
"""Smallest L2 flush buffer (what ``triton.testing.do_bench`` zeroes)."""


class Harness(Protocol):
    """One implementation, built at one context, ready to run decode steps."""

    def reset(self) -> None:
        """Restore the cache to the context it was built at (untimed)."""

    def step(self) -> None:
        """Run one decode step (timed)."""


def cuda_unavailable_reason() -> str | None:
    """``None`` when torch sees a CUDA device, else why not, in one line."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'kvlint[probe]')"
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return f"torch {torch.__version__} has no CUDA"
    return f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"


def _device(device: Device) -> torch.device:
    import torch

    dev = torch.device(f"cuda:{device}") if isinstance(device, int) else torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"the GPU probe needs a CUDA device, got {dev}")
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def l2_cache_bytes(device: Device) -> int:
    """The L2 cache size of ``device`` in bytes, as the driver reports it."""
    import torch

    return int(torch.cuda.get_device_properties(_device(device)).L2_cache_size)


def _flush_buffer(device: torch.device) -> torch.Tensor:
    """A buffer whose write evicts L2: twice its size, and at least 256 MiB."""
    import torch

    nbytes = max(FLUSH_MIN_BYTES, 2 * l2_cache_bytes(device))
    return torch.empty(nbytes, dtype=torch.int8, device=device)


def _event_median(fn: Callable[[], object], *, before: Callable[[], object], warmup: int,
                  reps: int, nvtx: str | None = None) -> float:
    """Median seconds of ``fn()`` over ``reps`` runs timed with CUDA events on the current
    stream; ``before()`` runs untimed (and outside the NVTX range) ahead of every run."""
    import torch

    for _ in range(warmup):
        before()
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        before()
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        if nvtx is not None:
            torch.cuda.nvtx.range_push(nvtx)  # type: ignore[no-untyped-call]
        fn()
        if nvtx is not None:
            torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]
        end.record()
        end.synchronize()
        samples.append(float(start.elapsed_time(end)) / 1e3)
    return statistics.median(samples)


def streaming_bandwidth(device: Device, *, nbytes: int = 4 << 30, reps: int = 20) -> float:
    """Achieved DRAM read bandwidth of ``device`` in bytes/s: the median time of a sum over
    ``nbytes`` of bf16, L2 flushed before each run (``triton.testing.do_bench`` when triton
    imports, CUDA events otherwise)."""
    import torch

    if nbytes < 2 or reps < 1:
        raise ValueError("nbytes must be at least 2 and reps at least 1")
    dev = _device(device)
    with torch.cuda.device(dev):
        data = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=dev)
        read = data.numel() * data.element_size()

        def run() -> None:
            torch.sum(data, dtype=torch.float32)

        flush = _flush_buffer(dev)
        try:
            import triton.testing
        except ImportError:
            seconds = _event_median(run, before=flush.zero_, warmup=2, reps=reps)
        else:
            estimate = _event_median(run, before=flush.zero_, warmup=1, reps=1)
            rep_ms = max(1.0, reps * estimate * 1e3)
            ms = triton.testing.do_bench(run, warmup=max(1.0, 2 * estimate * 1e3), rep=rep_ms,
                                         return_mode="median")
            seconds = float(ms) / 1e3
    return read / seconds


def time_steps(harness: Harness, *, warmup: int = 3, reps: int = 10) -> float:
    """Median seconds of ``harness.step()`` over ``reps`` runs, timed with CUDA events.

    Before every run (warm-up included) ``harness.reset()`` restores the cache and a buffer
    twice the size of L2 is written, both untimed, so each step starts from the same context
    with a cold L2. Timed steps run in the NVTX range ``kvlint_attn`` (the warm-up does not),
    so ``ncu --nvtx-include kvlint_attn/`` profiles exactly them.
    """
    import torch

    if warmup < 0 or reps < 1:
        raise ValueError("warmup must be >= 0 and reps >= 1")
    flush = _flush_buffer(_device(torch.cuda.current_device()))

    def before() -> None:
        harness.reset()
        flush.zero_()

    return _event_median(harness.step, before=before, warmup=warmup, reps=reps, nvtx=NVTX_RANGE)


def timing_measurement(impl: str, contexts: Sequence[int], seconds: Sequence[float], *,
                       batch: int, theory: TheoryCurve, bandwidth: float,
                       dtype: str) -> ImplMeasurement:
    """The measurement a slope fit of step ``seconds`` over ``contexts`` gives (no torch).

    ``beta_eff = slope * bandwidth / batch``; the measured read bytes are reported at the
    largest context as ``beta_eff * (L + 1) * batch``, so that the read ratio is the timing
    ratio (when the theory counts ``L + 1`` tokens of ``theory.bytes_per_token``). The cache
    size is not measured by timing.
    """
    if len(contexts) != len(seconds):
        raise ValueError(f"{len(contexts)} contexts but {len(seconds)} timings")
    line = fit([float(c) for c in contexts], seconds)
    beta = effective_bytes_per_token(line.slope, bandwidth, batch)
    ratio = timing_ratio(beta, theory.bytes_per_token)
    longest = max(contexts)
    notes: list[str] = []
    quality = fit_quality_note(line)
    if quality is not None:
        notes.append(quality)
    bound = ("a timing ratio bounds bytes only for a memory-bound kernel: a latency-, "
             "occupancy- or compute-bound one (MLA decode with many query heads) also "
             "steepens the slope")
    if ratio > CONFIRM_RATIO:
        notes.append(f"timing ratio {ratio:.2f} > {CONFIRM_RATIO}: {bound}; confirm the bytes "
                     f"with ncu (dram__bytes_read.sum) before acting on it")
    else:
        notes.append(f"{bound}; confirm with ncu when the ratio exceeds {CONFIRM_RATIO}")
    measured = round(beta * (longest + 1) * batch) if line.slope > 0 else None
    return ImplMeasurement(
        impl=impl,
        dtype=dtype,
        theory_read_bytes=theory.read_bytes_at(longest),
        measured_read_bytes=measured,
        theory_cache_bytes=theory.cache_bytes_at(longest),
        measured_cache_bytes=None,
        seconds=seconds[list(contexts).index(longest)],
        details={
            "batch": batch,
            "points": line.points,
            "contexts": [int(c) for c in contexts],
            "seconds": [float(s) for s in seconds],
            "slope_s_per_token": line.slope,
            "intercept_s": line.intercept,
            "r2": line.r2,
            "bandwidth_bytes_per_s": bandwidth,
            "effective_bytes_per_token": beta,
            "theory_bytes_per_token": theory.bytes_per_token,
            "timing_ratio": ratio,
        },
        notes=tuple(notes),
    )


def _time_context(make_harness: Callable[[int], Harness], context: int) -> float:
    """Build a harness at ``context`` and time it; it is freed when this returns."""
    return time_steps(make_harness(context))


def measure(impl: str, make_harness: Callable[[int], Harness], *, contexts: Sequence[int],
            batch: int, theory: TheoryCurve, bandwidth: float,
            dtype: str) -> ImplMeasurement:
    """Build ``impl`` at each context, time its decode step (:func:`time_steps`) and fit the
    slope (:func:`timing_measurement`). Running out of GPU memory skips the implementation."""
    import torch

    if len(contexts) < 2:
        raise ValueError("the slope needs at least 2 contexts")
    seconds: list[float] = []
    failed: int | None = None
    for context in contexts:
        try:
            seconds.append(_time_context(make_harness, context))
        except torch.cuda.OutOfMemoryError:
            failed = context  # leave the handler first: its traceback holds the harness
        torch.cuda.empty_cache()
        if failed is not None:
            longest = max(contexts)
            return ImplMeasurement(
                impl=impl, dtype=dtype, theory_read_bytes=theory.read_bytes_at(longest),
                measured_read_bytes=None, theory_cache_bytes=theory.cache_bytes_at(longest),
                measured_cache_bytes=None,
                skipped=f"out of GPU memory at context {failed} (batch {batch}): lower "
                        f"the batch or the contexts")
    return timing_measurement(impl, contexts, seconds, batch=batch, theory=theory,
                              bandwidth=bandwidth, dtype=dtype)
