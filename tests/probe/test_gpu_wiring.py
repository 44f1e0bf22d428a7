"""The GPU path's wiring, run on the CPU: ``kvlint probe --device cuda`` with the three
hardware-only functions (device properties, streaming bandwidth, CUDA-event timing) replaced.

Everything else is real: the model is built by transformers, each context gets a real
pre-filled in-place cache, and every timed step really runs (on the CPU). The replaced timer
returns a synthetic time that follows the bytes a kernel reading ``FACTOR`` x theory would
stream, so the slope arithmetic must give back ``FACTOR``.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from tests.helpers import CONFIGS

torch = pytest.importorskip("torch")

LLAMA = str(CONFIGS / "meta-llama--Llama-3.2-1B-Instruct.json")
BANDWIDTH = 2.0e12
FACTOR = 3.0
PER_TOKEN = 2 * 8 * 64 * 2  # one layer of Llama-3.2-1B, bf16: K and V of 8 heads x 64 dims


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from kvlint.probe import build, gpu

    harnesses: list[Any] = []
    real_build = build.build

    def build_on_cpu(*args: Any, **kwargs: Any) -> Any:
        return real_build(*args, **{**kwargs, "device": "cpu"})

    def time_steps(harness: Any, **_: Any) -> float:
        harness.reset()
        harness.step()  # the real step, on the CPU
        harnesses.append(harness)
        streamed = FACTOR * PER_TOKEN * (harness.context + 1) * harness.batch
        return 25e-6 + streamed / BANDWIDTH

    monkeypatch.setattr(gpu, "cuda_unavailable_reason", lambda: None)
    monkeypatch.setattr(gpu, "l2_cache_bytes", lambda device: 1 << 20)
    monkeypatch.setattr(gpu, "streaming_bandwidth", lambda device: BANDWIDTH)
    monkeypatch.setattr(gpu, "time_steps", time_steps)
    monkeypatch.setattr(build, "build", build_on_cpu)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: SimpleNamespace(total_memory=80 << 30,
                                                       L2_cache_size=1 << 20))
    return harnesses


def test_timing_path_end_to_end(fake_cuda: list[Any]) -> None:
    result = CliRunner().invoke(main, [
        "probe", LLAMA, "--device", "cuda", "--impl", "sdpa,flashinfer", "--context",
        "64,128,256,512", "--format", "json", "--no-plugins"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    block = data["results"][0]["probe"]
    assert (block["device"], block["method"], block["context"]) == ("cuda", "timing", 512)
    found = {m["impl"]: m for m in block["impls"]}
    sdpa = found["sdpa"]
    assert sdpa["details"]["contexts"] == [64, 128, 256, 512]
    assert sdpa["read_ratio"] == pytest.approx(FACTOR, rel=1e-6)
    assert sdpa["theory_read_bytes"] == PER_TOKEN * 513
    assert "not installed" in found["flashinfer"]["skipped"]
    assert [h.context for h in fake_cuda] == [64, 128, 256, 512]
    assert all(h.spec.kind == "inplace" for h in fake_cuda)  # timing cannot split a cat off
    assert all(h.cache.get_seq_length() == h.context + 1 for h in fake_cuda)
    assert data["results"][0]["findings"][0]["code"] == "KV601"


def test_contexts_are_planned_from_the_l2_size(fake_cuda: list[Any]) -> None:
    result = CliRunner().invoke(main, [
        "probe", LLAMA, "--device", "cuda", "--impl", "sdpa", "--format", "json",
        "--no-plugins", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    contexts = json.loads(result.stdout)["results"][0]["probe"]["impls"][0]["details"][
        "contexts"]
    assert len(contexts) >= 4
    assert contexts[0] * PER_TOKEN >= 4 * (1 << 20)  # working set >= 4x L2


def test_plot_of_a_timing_run(fake_cuda: list[Any], tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "gpu.png"
    result = CliRunner().invoke(main, [
        "probe", LLAMA, "--device", "cuda", "--impl", "sdpa", "--context", "64,128,256",
        "--plot", str(out), "--fail-on", "never", "--no-plugins"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")


def test_swept_points_remove_the_fixed_part() -> None:
    from kvlint.probe.plot import MIB, _swept

    timing = {"contexts": [100, 200], "seconds": [1.5e-3, 2.5e-3], "intercept_s": 0.5e-3,
              "bandwidth_bytes_per_s": 1e12}
    assert _swept(timing) == [(100, 1e9 / MIB), (200, 2e9 / MIB)]
    ncu = {"contexts": [100, 200], "dram_read_bytes_per_step": [3e6, 5e6],
           "intercept_bytes": 1e6}
    assert _swept(ncu) == [(100, 2e6 / MIB), (200, 4e6 / MIB)]
    assert _swept({"attention_write_bytes": 0}) == []
