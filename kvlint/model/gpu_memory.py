"""A GPU's memory given as a number (``--gpu-memory``, ``gpu-memory`` in the settings, a
manifest's node label) rather than read from the GPU table.

The figure is the total memory of one GPU as its driver reports it (``nvidia-smi``'s
``Memory-Usage`` total, ``rocm-smi``'s ``VRAM Total Memory``), in GiB (2**30 bytes): an
``nvidia-smi`` total of 81,559 MiB is ``--gpu-memory 79.6474609375`` (MiB / 1024 is exact).
It is sized as given: kvlint does not subtract a driver reservation from it. With a named GPU it
replaces the table's memory (the bandwidth stays the table's); alone, it sizes a GPU of unknown
bandwidth, so capacity has no decode roofline. Pure arithmetic, no I/O.
"""

from __future__ import annotations

import math
from typing import Final

__all__ = ["MAX_GPU_MEMORY_GIB", "custom_gpu_name", "gpu_memory_bytes", "gpu_memory_error"]

MAX_GPU_MEMORY_GIB: Final = 4096
"""Largest accepted memory of one GPU, in GiB (the largest in ``gpus.toml`` has under 300)."""

GIB: Final = 2**30


def gpu_memory_error(value: object) -> str | None:
    """Why ``value`` is not a GPU memory in GiB (``None``: it is one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected a number of GiB, got {value!r}"
    if not math.isfinite(value) or not 0 < value <= MAX_GPU_MEMORY_GIB:
        return f"expected a number of GiB in (0, {MAX_GPU_MEMORY_GIB}], got {value!r}"
    if round(value * GIB) < 1:
        return f"expected at least one byte, got {value!r} GiB"
    return None


def gpu_memory_bytes(gib: float) -> int:
    """``gib`` GiB in bytes (rounded to the byte); ``ValueError`` outside (0, 4096] GiB."""
    problem = gpu_memory_error(gib)
    if problem is not None:
        raise ValueError(f"GPU memory: {problem}")
    return round(gib * GIB)


def custom_gpu_name(memory_bytes: int) -> str:
    """How a GPU known only by its memory is named in reports: ``custom (80 GiB)``."""
    gib = memory_bytes / GIB
    text = f"{gib:.0f}" if gib == round(gib) else f"{gib:.4f}".rstrip("0")
    return f"custom ({text} GiB)"
