"""The timing slope method, as plain arithmetic (pure: no torch).

Hold batch, dtype and implementation fixed, time one decode step at several contexts ``L``
whose KV working set dwarfs L2, and fit ``t(L) = t0 + s * L``. The slope removes fixed costs
(launches, Q/O, the split-K combine); with a measured streaming bandwidth ``BW`` it gives the
bytes a step really moves per context token and sequence::

    beta_eff = s * BW / batch        timing ratio = beta_eff / beta_theory

The ratio bounds bytes only for a memory-bound kernel (see :func:`fit_quality_note` and
``gpu.timing_measurement``). Research note ``gpu-probe.md`` §2 has the method and its pitfalls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_R2 = 0.98
"""Below this R² the time is not linear enough in the context to read bytes off the slope."""

CONTEXT_MULTIPLE = 256
"""Planned contexts are multiples of this (whole pages for every paged kernel we know)."""

@dataclass(frozen=True)
class LinearFit:
    """``y = intercept + slope * x`` fitted by ordinary least squares."""

    slope: float
    intercept: float
    r2: float
    """Coefficient of determination, in ``[0, 1]``; 1 when the points lie on the line
    (constant ``ys`` included)."""
    points: int


def fit(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Ordinary least squares of ``ys`` on ``xs``.

    Raises ``ValueError`` for fewer than two points, lengths that differ, non-finite values,
    or ``xs`` that are all equal (no slope to fit).
    """
    if len(xs) != len(ys):
        raise ValueError(f"fit needs as many xs as ys, got {len(xs)} and {len(ys)}")
    n = len(xs)
    if n < 2:
        raise ValueError(f"fit needs at least 2 points, got {n}")
    x = [float(v) for v in xs]
    y = [float(v) for v in ys]
    if not all(math.isfinite(v) for v in (*x, *y)):
        raise ValueError("fit needs finite xs and ys")
    mean_x = math.fsum(x) / n
    mean_y = math.fsum(y) / n
    dx = [v - mean_x for v in x]
    dy = [v - mean_y for v in y]
    sxx = math.fsum(d * d for d in dx)
    if sxx == 0.0:
        raise ValueError("fit needs at least two distinct xs")
    sxy = math.fsum(a * b for a, b in zip(dx, dy, strict=True))
    syy = math.fsum(d * d for d in dy)
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    residual = math.fsum((yi - (intercept + slope * xi)) ** 2 for xi, yi in zip(x, y, strict=True))
    r2 = 1.0 if syy == 0.0 else min(1.0, max(0.0, 1.0 - residual / syy))
    return LinearFit(slope=slope, intercept=intercept, r2=r2, points=n)


def effective_bytes_per_token(slope_s_per_token: float, bandwidth_bytes_per_s: float,
                              batch: int) -> float:
    """Bytes a step moves per context token and sequence: ``slope * bandwidth / batch``."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if not bandwidth_bytes_per_s > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth_bytes_per_s}")
    return slope_s_per_token * bandwidth_bytes_per_s / batch


def timing_ratio(effective_bytes_per_token: float, theory_bytes_per_token: int) -> float:
    """Measured over theory bytes per token (1.0: the kernel reads what it must)."""
    if theory_bytes_per_token <= 0:
        raise ValueError(f"theory bytes per token must be positive, got "
                         f"{theory_bytes_per_token}")
    return effective_bytes_per_token / theory_bytes_per_token


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def plan_contexts(*, l2_bytes: int, bytes_per_token: int, batch: int, points: int = 4,
                  factor: float = 4.0, max_bytes: int | None = None) -> tuple[int, ...]:
    """``points`` increasing contexts (multiples of 256 tokens) for a slope fit.

    The smallest has a KV working set ``batch * L * bytes_per_token`` of at least
    ``factor * l2_bytes``, so no point is served from L2; the others double. When the last
    would exceed ``max_bytes`` the points are spread geometrically between the smallest and
    the largest context that fits instead. Raises ``ValueError`` when ``points`` distinct
    contexts do not fit under ``max_bytes``.
    """
    if points < 2:
        raise ValueError(f"a slope needs at least 2 contexts, got points={points}")
    if batch < 1 or bytes_per_token < 1:
        raise ValueError("batch and bytes_per_token must be at least 1")
    if l2_bytes < 0 or not factor > 0:
        raise ValueError("l2_bytes must be >= 0 and factor > 0")
    per_context_token = batch * bytes_per_token
    floor_bytes = math.ceil(factor * l2_bytes)
    first = max(CONTEXT_MULTIPLE,
                _round_up(-(-floor_bytes // per_context_token), CONTEXT_MULTIPLE))
    doubled = tuple(first << i for i in range(points))
    if max_bytes is None or doubled[-1] * per_context_token <= max_bytes:
        return doubled
    last = max_bytes // per_context_token // CONTEXT_MULTIPLE * CONTEXT_MULTIPLE
    if last < first + (points - 1) * CONTEXT_MULTIPLE:
        raise ValueError(
            f"cannot fit {points} contexts of at least {first} tokens (working set "
            f">= {factor:g} x L2 = {floor_bytes} B at batch {batch}) under max_bytes="
            f"{max_bytes} B; lower the batch or the points, or allow more memory")
    ratio = last / first
    steps = points - 1
    planned = [round(first * ratio ** (i / steps) / CONTEXT_MULTIPLE) * CONTEXT_MULTIPLE
               for i in range(points)]
    planned[0], planned[-1] = first, last
    for i in range(1, points):  # keep them distinct after rounding ...
        planned[i] = max(planned[i], planned[i - 1] + CONTEXT_MULTIPLE)
    planned[-1] = last
    for i in range(points - 2, -1, -1):  # ... and under the cap
        planned[i] = min(planned[i], planned[i + 1] - CONTEXT_MULTIPLE)
    return tuple(planned)


def fit_quality_note(fit: LinearFit) -> str | None:
    """Why the fit cannot be trusted to give bytes, or ``None`` when it can."""
    if fit.r2 < MIN_R2:
        return (f"timing fit R² {fit.r2:.3f} < {MIN_R2}: step time is not linear enough in "
                f"the context to read bytes off the slope (noisy timings, or a working set "
                f"still served from L2: raise the contexts or the batch)")
    if fit.slope <= 0:
        return (f"step time did not grow with the context (slope {fit.slope:.3g} s/token): "
                f"the contexts are too short to measure KV reads")
    return None
