"""The ncu measurement on synthetic ncu output (no GPU, no ncu), and the profiled program's
refusal on a machine without CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.probe import ncu_run
from kvlint.probe.ncu import KernelMetrics, parse_csv, totals
from kvlint.probe.ncu_run import (
    PERMISSION_MESSAGE,
    BenchSpec,
    _failure_message,
    bench_argv,
    bytes_per_context,
    contexts_in,
    ncu_argv,
    ncu_available,
    ncu_measurement,
    range_name,
)
from kvlint.probe.result import ImplMeasurement

HEADER = (
    '"ID","Process ID","Process Name","Host Name",'
    '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLevel:NTHead","Kernel Name","Context",'
    '"Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum",'
    '"dram__bytes_write.sum","gpu__time_duration.sum","lts__t_sectors_srcunit_tex_op_read.sum"'
)
UNITS = '"","","","","","","","","","","","","byte","byte","nsecond","sector"'
LAUNCH = ("41213", "python3.11", "127.0.0.1")

CONTEXTS = (8192, 16384, 32768, 65536)
STEPS = 3
BATCH = 2
FIXED = 80_000_000
"""Bytes per step that do not depend on the context (projection weights, Q/O)."""
THEORY_PER_TOKEN = 4096 * 8
"""Theory KV bytes per context token and sequence (one layer, 8 KV heads of 128, bf16)."""

SDPA_KERNELS = (("gemv_projections", None), ("flash_fwd_splitkv_kernel", 1))
"""Kernel name and how many theory KVs it reads (``None``: the fixed bytes)."""
EAGER_KERNELS = (("gemv_projections", None), ("CatArrayBatchedCopy", 1),
                 ("elementwise_copy_repeat_kv", 1), ("bmm_qk", 2), ("bmm_pv", 2))
"""GQA ratio 4 in eager: cat (1) + repeat_kv's copy (1) + two matmuls over 4x K or V (4)."""


def _line(*cells: str) -> str:
    return ",".join('"' + cell.replace('"', '""') + '"' for cell in cells)


def _nvtx(context: int) -> str:
    return f"<default domain>:{range_name(context)}:none:none:0:0"


def _csv(kernels: tuple[tuple[str, int | None], ...], *, split_fixed: bool = False) -> str:
    """ncu's raw CSV for ``STEPS`` steps at each context: per step the fixed bytes plus
    ``k * THEORY_PER_TOKEN * L * BATCH`` for each kernel reading ``k`` KVs."""
    lines = ["==PROF== Connected to process 41213 (/usr/bin/python3.11)", HEADER, UNITS]
    launch = 0
    for context in CONTEXTS:
        for _ in range(STEPS):
            for name, kvs in kernels:
                if kvs is None:
                    parts = [FIXED // 2, FIXED - FIXED // 2] if split_fixed else [FIXED]
                else:
                    parts = [kvs * THEORY_PER_TOKEN * context * BATCH]
                for read in parts:
                    lines.append(_line(str(launch), *LAUNCH, _nvtx(context), name, "1", "7",
                                       "(128, 1, 1)", "(132, 1, 1)", "0", "9.0",
                                       f"{read:,}", "1,024", "1,000", "10"))
                    launch += 1
    # a kernel outside any range, and one in a context that was not asked for
    lines.append(_line(str(launch), *LAUNCH, "", "embedding", "1", "7", "(1, 1, 1)",
                       "(1, 1, 1)", "0", "9.0", "999,999,999", "0", "1", "1"))
    lines.append(_line(str(launch + 1), *LAUNCH, _nvtx(819200), "flash_fwd_splitkv_kernel",
                       "1", "7", "(1, 1, 1)", "(1, 1, 1)", "0", "9.0", "777,777,777", "0",
                       "1", "1"))
    lines.append("==PROF== Disconnected from process 41213")
    return "\n".join(lines) + "\n"


def _theory_read(context: int) -> int:
    return THEORY_PER_TOKEN * (context + 1) * BATCH


def _measure(kernels: tuple[tuple[str, int | None], ...], impl: str,
             exclude: str | None = None) -> tuple[dict[int, float], ImplMeasurement]:
    rows = parse_csv(_csv(kernels, split_fixed=True))
    per_context = bytes_per_context(rows, CONTEXTS, STEPS, exclude_kernels=exclude)
    measured = ncu_measurement(impl, per_context, batch=BATCH, dtype="bfloat16",
                               theory_bytes_per_token=THEORY_PER_TOKEN,
                               theory_read_bytes_at=_theory_read,
                               theory_cache_bytes_at=lambda c: THEORY_PER_TOKEN * c * BATCH)
    return per_context, measured


def test_range_names_are_read_back_from_any_nvtx_cell() -> None:
    assert range_name(8192) == "kvlint_attn:8192"
    assert contexts_in(_nvtx(8192)) == {8192}
    assert contexts_in("kvlint_attn:8192") == {8192}
    assert contexts_in("outer/kvlint_attn:16384") == {16384}
    assert contexts_in("<default domain>:kvlint_attn:81920:none:none:0:0") == {81920}
    assert contexts_in("<default domain>:my_kvlint_attn:8192:none") == set()
    assert contexts_in("<default domain>:kvlint_attn:none:none:0:0") == set()
    assert contexts_in(None) == set()


def test_bytes_per_context_sums_each_range_per_step() -> None:
    rows = parse_csv(_csv(SDPA_KERNELS, split_fixed=True))
    per_context = bytes_per_context(rows, CONTEXTS, STEPS)
    assert per_context == {c: FIXED + THEORY_PER_TOKEN * c * BATCH for c in CONTEXTS}
    # the ranges are still kvlint_attn ranges for the generic NVTX total
    assert totals(rows, "kvlint_attn/")["kernels"] == len(rows) - 1
    eager = bytes_per_context(parse_csv(_csv(EAGER_KERNELS)), CONTEXTS, STEPS)
    assert eager == {c: FIXED + 6 * THEORY_PER_TOKEN * c * BATCH for c in CONTEXTS}


def test_bytes_per_context_can_leave_kernels_out_and_refuses_empty_ranges() -> None:
    rows = parse_csv(_csv(EAGER_KERNELS))
    without_cat = bytes_per_context(rows, CONTEXTS, STEPS, exclude_kernels="CatArray")
    assert without_cat == {c: FIXED + 5 * THEORY_PER_TOKEN * c * BATCH for c in CONTEXTS}
    with pytest.raises(ValueError, match="kvlint_attn:1024"):
        bytes_per_context(rows, (*CONTEXTS, 1024), STEPS)
    with pytest.raises(ValueError, match="steps"):
        bytes_per_context(rows, CONTEXTS, 0)


@pytest.mark.parametrize(("kernels", "impl", "expected"),
                         [(SDPA_KERNELS, "sdpa", 1.0), (EAGER_KERNELS, "eager", 6.0)])
def test_ncu_measurement_recovers_the_ratio_without_the_fixed_bytes(
        kernels: tuple[tuple[str, int | None], ...], impl: str, expected: float) -> None:
    per_context, measured = _measure(kernels, impl)
    details = measured.details
    assert details["dram_ratio"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert details["effective_bytes_per_token"] == pytest.approx(expected * THEORY_PER_TOKEN,
                                                                 rel=1e-9)
    assert details["slope_bytes_per_token"] == pytest.approx(
        expected * THEORY_PER_TOKEN * BATCH, rel=1e-9)
    assert details["intercept_bytes"] == pytest.approx(FIXED, rel=1e-6)  # 80 MB removed
    assert details["r2"] == pytest.approx(1.0)
    assert details["contexts"] == list(CONTEXTS)
    assert details["dram_read_bytes_per_step"] == [per_context[c] for c in CONTEXTS]
    assert details["theory_bytes_per_token"] == THEORY_PER_TOKEN
    assert measured.read_ratio == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert measured.measured_read_bytes == round(expected * _theory_read(max(CONTEXTS)))
    assert measured.theory_read_bytes == _theory_read(max(CONTEXTS))
    assert measured.measured_cache_bytes is None
    assert measured.impl == impl and measured.dtype == "bfloat16"
    assert any("--cache-control all" in note for note in measured.notes)
    assert not any("R²" in note for note in measured.notes)
    assert measured.verdict == ("ok" if expected == 1.0 else "error")


def test_ncu_measurement_says_when_the_bytes_do_not_grow_or_are_not_linear() -> None:
    def theory(c: int) -> int:
        return THEORY_PER_TOKEN * c

    flat = ncu_measurement("sdpa", dict.fromkeys(CONTEXTS, 5e8), batch=1, dtype="float16",
                           theory_bytes_per_token=THEORY_PER_TOKEN,
                           theory_read_bytes_at=theory, theory_cache_bytes_at=theory)
    assert flat.measured_read_bytes is None
    assert any("did not grow" in note and "static cache" in note for note in flat.notes)
    noisy = ncu_measurement("sdpa", {8192: 1e9, 16384: 1e8, 32768: 2e9, 65536: 1.5e9},
                            batch=1, dtype="float16", theory_bytes_per_token=THEORY_PER_TOKEN,
                            theory_read_bytes_at=theory, theory_cache_bytes_at=theory)
    assert any("R²" in note for note in noisy.notes)
    with pytest.raises(ValueError, match="2 contexts"):
        ncu_measurement("sdpa", {8192: 1.0}, batch=1, dtype="float16",
                        theory_bytes_per_token=1, theory_read_bytes_at=theory,
                        theory_cache_bytes_at=theory)
    with pytest.raises(ValueError, match="batch"):
        ncu_measurement("sdpa", dict.fromkeys(CONTEXTS, 1.0), batch=0, dtype="float16",
                        theory_bytes_per_token=1, theory_read_bytes_at=theory,
                        theory_cache_bytes_at=theory)


def test_failure_messages_are_one_line() -> None:
    permission = ("==PROF== Connected to process 1 (/usr/bin/python3)\n"
                  "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                  "NVIDIA GPU Performance Counters on the target device 0.\n")
    assert _failure_message(0, permission, "") == PERMISSION_MESSAGE
    assert _failure_message(1, "", permission) == PERMISSION_MESSAGE
    assert "root" in PERMISSION_MESSAGE
    assert "NVreg_RestrictProfilingToAdminUsers=0" in PERMISSION_MESSAGE
    message = _failure_message(2, "", "Traceback ...\n  File x\nkvlint.probe.gpu_bench: "
                                      "out of GPU memory at context 65536\n\n")
    assert message == ("ncu failed (exit status 2): kvlint.probe.gpu_bench: out of GPU "
                       "memory at context 65536")
    assert _failure_message(9, "", "") == "ncu failed (exit status 9)"
    assert "\n" not in _failure_message(1, "a\nb\n", "")


def test_the_ncu_command_includes_one_range_per_context() -> None:
    argv = bench_argv("/tmp/config.json", "eager",
                      BenchSpec(contexts=(8192, 16384), batch=2, layers=1, dtype="bfloat16",
                                cache_kind="static", max_cache_len=40000, steps=3))
    assert argv == [sys.executable, "-m", "kvlint.probe.gpu_bench", "--config",
                    "/tmp/config.json", "--impl", "eager", "--contexts", "8192,16384",
                    "--batch", "2", "--layers", "1", "--dtype", "bfloat16", "--cache",
                    "static", "--max-cache-len", "40000", "--steps", "3"]
    cmd = ncu_argv("/opt/ncu", argv, (8192, 16384), "/tmp/out.csv")
    assert cmd[0] == "/opt/ncu"
    includes = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--nvtx-include"]
    assert includes == ["kvlint_attn:8192/", "kvlint_attn:16384/"]
    assert cmd[cmd.index("--log-file") + 1] == "/tmp/out.csv"
    assert cmd[-len(argv):] == argv
    assert "--cache-control" in cmd and "--nvtx" in cmd


def test_ncu_available_is_a_path_or_none() -> None:
    found = ncu_available()
    assert found is None or Path(found).name.startswith("ncu")


def test_run_ncu_without_ncu_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvlint.errors import UsageError

    monkeypatch.setattr(ncu_run, "ncu_available", lambda: None)
    with pytest.raises(UsageError, match="ncu"):
        ncu_run.run_ncu("config.json", "sdpa",
                        BenchSpec(contexts=CONTEXTS, batch=1, layers=1, dtype="bfloat16"))


def test_attention_modules_are_the_outermost_attn_names() -> None:
    from kvlint.probe.gpu_bench import attention_module_names

    names = ["", "model", "model.layers.0", "model.layers.0.self_attn",
             "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.inner_attn",
             "model.layers.0.post_attention_layernorm", "model.layers.1.attention",
             "transformer.h.0.attn", "model.attentions"]
    assert attention_module_names(names) == [
        "model.layers.0.self_attn", "model.layers.1.attention", "transformer.h.0.attn"]


def test_gpu_bench_exits_2_without_cuda(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 1}))
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "kvlint.probe.gpu_bench", "--config", str(config),
         "--impl", "sdpa", "--contexts", "8192,16384", "--batch", "1", "--layers", "1",
         "--dtype", "bfloat16", "--steps", "2"],
        capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("kvlint.probe.gpu_bench: needs CUDA: ")
    assert "CUDA" in lines[0][len("kvlint.probe.gpu_bench: needs CUDA: "):]


def test_gpu_bench_main_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from kvlint.probe.gpu_bench import main

    with pytest.raises(SystemExit) as exited:
        main(["--config", "c.json", "--impl", "sdpa", "--contexts", "8192,x"])
    assert exited.value.code == 2
    assert "not a list of integers" in capsys.readouterr().err


def test_kernel_metrics_rows_can_be_built_by_hand() -> None:
    rows = [KernelMetrics("k", "kvlint_attn:256", 10, 0, None, None),
            KernelMetrics("k", "kvlint_attn:512", 30, 0, None, None),
            KernelMetrics("k", "kvlint_attn:512", 10, 0, None, None)]
    assert bytes_per_context(rows, [256, 512], 2) == {256: 5.0, 512: 20.0}


@pytest.mark.parametrize("cache", [[], ["--cache", "static", "--max-cache-len", "64"]])
def test_gpu_bench_main_on_cpu_pushes_one_range_per_attention_forward(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        cache: list[str]) -> None:
    """The whole program with CUDA faked away: the model runs on CPU, the NVTX calls are
    recorded. Warm-up steps push no range; each timed step pushes one per layer."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from kvlint.probe import build as builder
    from kvlint.probe import gpu, gpu_bench
    from tests.helpers import CONFIGS

    events: list[str] = []

    def push(name: str) -> int:
        events.append(name)
        return len(events)  # a value the pre-hook must not hand back as the input

    def pop() -> int:
        events.append("pop")
        return 0

    real_build = builder.build
    monkeypatch.setattr(gpu, "cuda_unavailable_reason", lambda: None)
    monkeypatch.setattr(builder, "build",
                        lambda raw, **kw: real_build(raw, **{**kw, "device": "cpu"}))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", push)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", pop)
    config = str(CONFIGS / "meta-llama--Llama-3.2-1B-Instruct.json")
    rc = gpu_bench.main(["--config", config, "--impl", "sdpa", "--contexts", "16,32",
                         "--batch", "2", "--layers", "2", "--dtype", "float32",
                         "--steps", "3", *cache])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert captured.out.splitlines() == ['{"contexts": [16, 32], "steps": 3}']
    assert events == ["kvlint_attn:16", "pop"] * 2 * 3 + ["kvlint_attn:32", "pop"] * 2 * 3
