"""The slope arithmetic of the GPU probe, on synthetic numbers."""

from __future__ import annotations

import math

import pytest

from kvlint.probe.slope import (
    MIN_R2,
    LinearFit,
    effective_bytes_per_token,
    fit,
    fit_quality_note,
    plan_contexts,
    timing_ratio,
)


def test_perfect_line_recovers_slope_intercept_and_r2_one() -> None:
    line = fit([1, 2, 3, 4], [3, 5, 7, 9])
    assert line == LinearFit(slope=2.0, intercept=1.0, r2=1.0, points=4)


def test_perfect_line_of_realistic_step_times() -> None:
    contexts = [7680, 15360, 30720, 61440]
    slope = 8 * 4096 / 3.0e12
    line = fit(contexts, [20e-6 + slope * c for c in contexts])
    assert line.slope == pytest.approx(slope, rel=1e-12)
    assert line.intercept == pytest.approx(20e-6, rel=1e-9)
    assert line.r2 == 1.0
    assert line.points == 4


def test_constant_ys_are_exactly_linear() -> None:
    line = fit([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])
    assert (line.slope, line.intercept, line.r2) == (0.0, 5.0, 1.0)


def test_noisy_line_has_r2_below_one() -> None:
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    ys = [2.1, 3.9, 6.2, 7.8, 10.1]
    line = fit(xs, ys)
    # Closed form: sxx = 10, sxy = 19.9, syy = 39.708 -> slope 1.99, r2 = sxy^2 / (sxx * syy).
    assert line.slope == pytest.approx(1.99)
    assert line.intercept == pytest.approx(6.02 - 1.99 * 3)
    assert line.r2 == pytest.approx(19.9**2 / (10 * 39.708))
    assert 0.99 < line.r2 < 1.0


def test_unrelated_points_have_low_r2() -> None:
    line = fit([1, 2, 3, 4], [1, 3, 1, 3])
    assert line.r2 == pytest.approx(0.2)
    assert line.r2 < MIN_R2


@pytest.mark.parametrize(("xs", "ys", "message"), [
    ([1.0], [2.0], "at least 2 points"),
    ([], [], "at least 2 points"),
    ([1.0, 2.0], [1.0], "as many xs as ys"),
    ([3.0, 3.0, 3.0], [1.0, 2.0, 3.0], "distinct xs"),
    ([1.0, math.nan], [1.0, 2.0], "finite"),
    ([1.0, 2.0], [1.0, math.inf], "finite"),
])
def test_fit_rejects_degenerate_input(xs: list[float], ys: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit(xs, ys)


def test_effective_bytes_per_token_normalises_by_bandwidth_and_batch() -> None:
    assert effective_bytes_per_token(1e-9, 3.0e12, 8) == pytest.approx(375.0, rel=1e-12)
    assert effective_bytes_per_token(0.0, 3.0e12, 1) == 0.0


@pytest.mark.parametrize(("slope", "bandwidth", "batch"), [
    (1e-9, 3e12, 0), (1e-9, 0.0, 8), (1e-9, -1.0, 8), (1e-9, math.nan, 8)])
def test_effective_bytes_per_token_rejects_bad_input(slope: float, bandwidth: float,
                                                     batch: int) -> None:
    with pytest.raises(ValueError):
        effective_bytes_per_token(slope, bandwidth, batch)


def test_timing_ratio() -> None:
    # Llama-3.1-8B, one layer, bf16: 2 x 8 KV heads x 128 x 2 B = 4096 B per token.
    assert timing_ratio(4096.0, 4096) == 1.0
    assert timing_ratio(375.0, 4096) == pytest.approx(375 / 4096)
    assert timing_ratio(6 * 4096.0, 4096) == pytest.approx(6.0)
    with pytest.raises(ValueError):
        timing_ratio(1.0, 0)


def test_plan_contexts_starts_above_the_l2_factor_and_doubles() -> None:
    l2 = 60 << 20
    planned = plan_contexts(l2_bytes=l2, bytes_per_token=4096, batch=8)
    # 4 x 60 MiB / (8 x 4096 B) = 7680 tokens, already a multiple of 256.
    assert planned == (7680, 15360, 30720, 61440)
    assert planned[0] * 8 * 4096 >= 4 * l2
    assert all(c % 256 == 0 for c in planned)


def test_plan_contexts_rounds_up_to_256_and_honours_factor_and_points() -> None:
    planned = plan_contexts(l2_bytes=50_000_000, bytes_per_token=1152, batch=4, points=5,
                            factor=5.0)
    # ceil(250e6 / 4608) = 54254 tokens -> 54272 (212 x 256).
    assert planned == (54272, 108544, 217088, 434176, 868352)
    assert planned[0] * 4 * 1152 >= 5 * 50_000_000
    assert (planned[0] - 256) * 4 * 1152 < 5 * 50_000_000


def test_plan_contexts_has_a_floor_of_256_tokens() -> None:
    assert plan_contexts(l2_bytes=0, bytes_per_token=4096, batch=8, points=2) == (256, 512)


def test_plan_contexts_spreads_points_under_max_bytes() -> None:
    per_token = 8 * 4096
    cap = 1 << 30  # 32768 tokens at batch 8
    planned = plan_contexts(l2_bytes=60 << 20, bytes_per_token=4096, batch=8, max_bytes=cap)
    assert planned[0] == 7680
    assert planned[-1] == 32768
    assert planned[-1] * per_token <= cap
    assert list(planned) == sorted(set(planned))
    assert all(c % 256 == 0 for c in planned)


def test_plan_contexts_keeps_points_distinct_in_a_tight_range() -> None:
    cap = (7680 + 3 * 256 + 100) * 8 * 4096
    planned = plan_contexts(l2_bytes=60 << 20, bytes_per_token=4096, batch=8, max_bytes=cap)
    assert planned == (7680, 7936, 8192, 8448)


def test_plan_contexts_doubling_is_kept_when_it_fits() -> None:
    cap = 61440 * 8 * 4096
    planned = plan_contexts(l2_bytes=60 << 20, bytes_per_token=4096, batch=8, max_bytes=cap)
    assert planned == (7680, 15360, 30720, 61440)


def test_plan_contexts_raises_when_impossible() -> None:
    with pytest.raises(ValueError, match="cannot fit 4 contexts"):
        plan_contexts(l2_bytes=60 << 20, bytes_per_token=4096, batch=8,
                      max_bytes=(7680 + 512) * 8 * 4096)
    with pytest.raises(ValueError, match="at least 2 contexts"):
        plan_contexts(l2_bytes=1, bytes_per_token=1, batch=1, points=1)
    with pytest.raises(ValueError):
        plan_contexts(l2_bytes=1, bytes_per_token=0, batch=1)
    with pytest.raises(ValueError):
        plan_contexts(l2_bytes=1, bytes_per_token=1, batch=1, factor=0.0)


def test_fit_quality_note() -> None:
    assert fit_quality_note(LinearFit(slope=1.0, intercept=0.0, r2=MIN_R2, points=4)) is None
    noisy = fit_quality_note(LinearFit(slope=1.0, intercept=0.0, r2=0.9, points=4))
    assert noisy is not None
    assert "0.900" in noisy
    assert "0.98" in noisy
    flat = fit_quality_note(LinearFit(slope=0.0, intercept=1.0, r2=1.0, points=4))
    assert flat is not None
    assert "did not grow" in flat
