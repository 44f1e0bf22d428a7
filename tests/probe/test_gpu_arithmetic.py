"""The GPU path's arithmetic on synthetic step timings (runs without CUDA), and what the GPU
path says on a machine without CUDA. One test needs a CUDA device and skips elsewhere."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import pytest

from kvlint.probe import gpu
from kvlint.probe.result import ImplMeasurement
from kvlint.probe.slope import MIN_R2, plan_contexts
from kvlint.probe.theory import TheoryCurve, decode_step
from tests.helpers import geometry

LLAMA = "meta-llama--Meta-Llama-3.1-8B"
BATCH = 8
BANDWIDTH = 3.0e12
FIXED_S = 20e-6
"""Launches, Q/O and the combine: what the intercept absorbs."""
CONTEXTS = (7680, 15360, 30720, 61440)


def _read_at(context: int) -> int:
    return decode_step(geometry(LLAMA), context=context, batch=BATCH, layers=1,
                       dtype="bfloat16").read_bytes


def _cache_at(context: int) -> int:
    return decode_step(geometry(LLAMA), context=context, batch=BATCH, layers=1,
                       dtype="bfloat16").cache_bytes


def _per_token() -> int:
    return decode_step(geometry(LLAMA), context=1, batch=1, layers=1,
                       dtype="bfloat16").bytes_per_token


def _synthetic(bytes_per_token: float, contexts: Sequence[int] = CONTEXTS) -> list[float]:
    """Step times of a memory-bound kernel moving ``bytes_per_token`` per context token."""
    return [FIXED_S + c * BATCH * bytes_per_token / BANDWIDTH for c in contexts]


def _measure(impl: str, seconds: Sequence[float],
             contexts: Sequence[int] = CONTEXTS) -> ImplMeasurement:
    return gpu.timing_measurement(impl, contexts, seconds, batch=BATCH,
                                  theory=TheoryCurve(_per_token(), _read_at, _cache_at),
                                  bandwidth=BANDWIDTH, dtype="bfloat16")


def test_llama_one_layer_theory_is_4096_bytes_per_token() -> None:
    # 2 (K, V) x 8 KV heads x 128 head dim x 2 B.
    assert _per_token() == 4096
    assert _read_at(61440) == 4096 * 61441 * BATCH


def test_a_kernel_that_reads_theory_has_ratio_one() -> None:
    m = _measure("flash_attention_2", _synthetic(4096))
    assert m.details["timing_ratio"] == pytest.approx(1.0, abs=1e-9)
    assert m.details["effective_bytes_per_token"] == pytest.approx(4096, rel=1e-9)
    assert m.details["slope_s_per_token"] == pytest.approx(BATCH * 4096 / BANDWIDTH, rel=1e-9)
    assert m.details["intercept_s"] == pytest.approx(FIXED_S, rel=1e-6)
    assert m.details["r2"] == pytest.approx(1.0, abs=1e-12)
    assert m.read_ratio == pytest.approx(1.0, abs=1e-9)
    assert m.verdict == "ok"


def test_eager_repeat_kv_shows_as_its_ratio() -> None:
    # HF eager GQA copies K/V to the 32 query heads (repeat_kv, h/g = 4): the research note
    # puts its read ratio near 2 + h/g = 6.
    m = _measure("eager", _synthetic(6 * 4096))
    ratio = m.details["timing_ratio"]
    assert ratio == pytest.approx(6.0, abs=1e-9)
    assert m.measured_read_bytes == round(6 * 4096 * 61441 * BATCH)
    assert m.read_ratio == pytest.approx(ratio, abs=1e-9)
    assert m.verdict == "error"
    assert any("confirm the bytes with ncu" in n for n in m.notes)


def test_measurement_fields() -> None:
    seconds = _synthetic(4096 * 1.4)
    m = _measure("sdpa", seconds)
    assert m.impl == "sdpa"
    assert m.dtype == "bfloat16"
    assert m.theory_read_bytes == _read_at(61440)
    assert m.theory_cache_bytes == _cache_at(61440)
    assert m.measured_cache_bytes is None
    assert m.cache_ratio is None
    assert m.seconds == seconds[-1]
    assert m.skipped is None
    assert m.verdict == "warning"
    details = m.details
    assert details["contexts"] == list(CONTEXTS)
    assert details["seconds"] == seconds
    assert details["bandwidth_bytes_per_s"] == BANDWIDTH
    assert details["theory_bytes_per_token"] == 4096
    assert details["batch"] == BATCH
    assert details["points"] == 4
    assert set(details) >= {"contexts", "seconds", "slope_s_per_token", "intercept_s", "r2",
                            "bandwidth_bytes_per_s", "effective_bytes_per_token",
                            "theory_bytes_per_token", "timing_ratio"}
    # Below the ncu threshold: only the memory-bound caveat, no fit-quality note.
    assert len(m.notes) == 1
    assert "memory-bound" in m.notes[0]


def test_contexts_in_any_order_report_at_the_largest() -> None:
    contexts = (30720, 7680, 61440, 15360)
    seconds = _synthetic(4096, contexts)
    m = _measure("sdpa", seconds, contexts)
    assert m.seconds == seconds[2]
    assert m.theory_read_bytes == _read_at(61440)
    assert m.details["timing_ratio"] == pytest.approx(1.0, abs=1e-9)


def test_noisy_timings_get_a_fit_quality_note() -> None:
    seconds = _synthetic(4096)
    seconds[1] *= 3.0
    m = _measure("sdpa", seconds)
    assert m.details["r2"] < MIN_R2
    assert any("not linear enough" in n for n in m.notes)


def test_flat_timings_measure_nothing() -> None:
    m = _measure("sdpa", [FIXED_S] * 4)
    assert m.measured_read_bytes is None
    assert m.read_ratio is None
    assert any("did not grow" in n for n in m.notes)


def test_mismatched_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="contexts but"):
        _measure("sdpa", [1.0, 2.0], CONTEXTS)
    with pytest.raises(ValueError):
        gpu.timing_measurement("sdpa", CONTEXTS, _synthetic(4096), batch=BATCH,
                               theory=TheoryCurve(4096, _read_at, _cache_at), bandwidth=0.0,
                               dtype="bfloat16")


def test_planned_contexts_feed_the_fit() -> None:
    planned = plan_contexts(l2_bytes=60 << 20, bytes_per_token=_per_token(), batch=BATCH)
    assert planned == CONTEXTS
    m = _measure("sdpa", _synthetic(4096 * 1.1, planned), planned)
    assert m.details["timing_ratio"] == pytest.approx(1.1, abs=1e-9)


def test_measure_times_each_context_then_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    built: list[int] = []
    timings = dict(zip(CONTEXTS, _synthetic(2 * 4096), strict=True))

    def make(context: int) -> gpu.Harness:
        built.append(context)
        harness = _CountingHarness()
        harness.context = context
        return harness

    def fake_time_steps(harness: gpu.Harness, *, warmup: int = 3, reps: int = 10) -> float:
        assert isinstance(harness, _CountingHarness)
        return timings[harness.context]

    monkeypatch.setattr(gpu, "time_steps", fake_time_steps)
    m = gpu.measure("eager", make, contexts=CONTEXTS, batch=BATCH,
                    theory=TheoryCurve(4096, _read_at, _cache_at), bandwidth=BANDWIDTH,
                    dtype="bfloat16")
    assert built == list(CONTEXTS)
    assert m.details["timing_ratio"] == pytest.approx(2.0, abs=1e-9)
    assert m.skipped is None


def test_measure_skips_an_impl_that_runs_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")

    def make(context: int) -> gpu.Harness:
        if context > 20000:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return _CountingHarness()

    monkeypatch.setattr(gpu, "time_steps", lambda harness, **_: 1e-3)
    m = gpu.measure("eager", make, contexts=CONTEXTS, batch=BATCH,
                    theory=TheoryCurve(4096, _read_at, _cache_at), bandwidth=BANDWIDTH,
                    dtype="bfloat16")
    assert m.skipped is not None
    assert "out of GPU memory at context 30720" in m.skipped
    assert m.measured_read_bytes is None
    assert m.theory_read_bytes == _read_at(61440)


def test_the_gpu_modules_import_without_torch() -> None:
    code = ("import sys, kvlint.probe.gpu, kvlint.probe.slope, kvlint.probe.ncu; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


class _CountingHarness:
    def __init__(self) -> None:
        self.resets = 0
        self.steps = 0
        self.context = 0

    def reset(self) -> None:
        self.resets += 1

    def step(self) -> None:
        self.steps += 1


def test_a_harness_class_satisfies_the_protocol() -> None:
    harness: gpu.Harness = _CountingHarness()
    harness.reset()
    harness.step()


def test_cuda_unavailable_reason_on_this_machine() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        assert gpu.cuda_unavailable_reason() is None
        return
    reason = gpu.cuda_unavailable_reason()
    assert reason is not None
    assert torch.__version__ in reason
    assert "\n" not in reason


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA device")
def test_streaming_bandwidth_and_time_steps_on_a_small_tensor() -> None:
    torch = pytest.importorskip("torch")
    device = torch.cuda.current_device()
    assert gpu.l2_cache_bytes(device) > 0
    bandwidth = gpu.streaming_bandwidth(device, nbytes=256 << 20, reps=5)
    assert 1e10 < bandwidth < 2e13  # 10 GB/s .. 20 TB/s: a plausible GPU
    harness = _CountingHarness()
    seconds = gpu.time_steps(harness, warmup=2, reps=3)
    assert seconds >= 0.0
    assert (harness.resets, harness.steps) == (5, 5)
