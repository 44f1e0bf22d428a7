"""``kvlint probe MODEL --engine-log / --trtllm-log / --lmdeploy-log FILE`` on TensorRT-LLM and
LMDeploy start-up logs built from the engines' own format strings (the tables'
entries, filled with figures worked by hand); detection among the four engines; the forcing
flags; junk is a one-line exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kvlint.errors import UsageError
from kvlint.loaders import lmdeploy_log, trtllm_log
from kvlint.loaders.log_formats import FormatEntry, Placeholder, format_tokens
from kvlint.probe.engine_log import detect
from tests.helpers import CONFIGS
from tests.loaders.test_vllm_log_formats import ENTRIES as VLLM_ENTRIES
from tests.loaders.test_vllm_log_formats import PREFIX as VLLM_PREFIX
from tests.loaders.test_vllm_log_formats import _line as vllm_line
from tests.probe.test_sglang_log import LLAMA_LOG as SGLANG_LOG

LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
GIB = 2**30
TRT_CPP = "[TensorRT-LLM][INFO] "
TRT_PY = "[12/20/2025-04:21:10] [TRT-LLM] [I] "
LMD_PY = "2025-03-01 10:00:00,000 - lmdeploy - INFO - async_engine.py:283 - "
LMD_DEBUG = "2025-03-01 10:00:01,000 - lmdeploy - DEBUG - base.py:122 - "
TM = "[TM][INFO] "


def _fill(entries: tuple[FormatEntry, ...], prefix_id: str, values: dict[str, str]) -> str:
    """The newest entry ``prefix_id.N`` of a table printed with ``values`` (by field)."""
    entry = max((e for e in entries if e.id.rsplit(".", 1)[0] == prefix_id),
                key=lambda e: e.last)
    out, index = [], 0
    for token in format_tokens(entry.format, entry.style):
        if isinstance(token, Placeholder):
            out.append(values.get(entry.fields[index].partition(",")[0], "0"))
            index += 1
        else:
            out.append(token)
    return "".join(out)


def trt_log(pool_gib: str = "55.33", tokens: str = "453280") -> str:
    """Llama-3.1-8B at tp 1 on an 80 GB H100 (PyTorch backend): 131,072 B/token; the final
    pool 55.33 GiB over 453,280 tokens = 131,067.2 B/token."""
    t = trtllm_log.table().entries
    return "\n".join([
        "[TensorRT-LLM] TensorRT-LLM version: 1.2.0rc2",
        TRT_PY + _fill(t, "weights", {"weights_gib": "14.96"}),
        TRT_CPP + _fill(t, "tokens_per_block", {"tokens_per_block": "32"}),
        TRT_CPP + _fill(t, "allocated", {"kv_gib": "1.00", "kv_tokens": "8192"}),
        TRT_PY + _fill(t, "activations", {"activation_gib": "1.20"}),
        TRT_PY + _fill(t, "non_torch", {"non_torch_gib": "0.80"}),
        TRT_PY + _fill(t, "peak", {"peak_gib": "18.00", "profiled_available_gib": "55.33",
                                   "fraction": "0.9", "kv_size_estimate": "131072",
                                   "device_total_gib": "79.19", "tmp_kv_gib": "1.00"}),
        TRT_CPP + _fill(t, "tokens_per_block", {"tokens_per_block": "32"}),
        TRT_CPP + _fill(t, "allocated", {"kv_gib": pool_gib, "kv_tokens": tokens}), ""])


def turbomind_log(block_mib: str = "8.000") -> str:
    """Llama-3.1-8B, TurboMind 0.8-0.12 wording: a 64-token block of 8 MiB = 131,072
    B/token."""
    t = lmdeploy_log.table().entries
    config = ("TurbomindEngineConfig(dtype='auto', model_format='hf', tp=1, session_len=32768, "
              "max_batch_size=256, cache_max_entry_count=0.8, cache_block_seq_len=64, "
              "quant_policy=0)")
    return "\n".join([
        LMD_PY + _fill(t, "backend_config", {"backend": "turbomind", "backend_config": config}),
        TM + next(e.format for e in t if e.id.startswith("tm_block_size")
                  and "%.3f" in e.format).replace("%.3f", block_mib),
        TM + next(e.format for e in t if e.id.startswith("tm_max_block_count")
                  and "%d" in e.format).replace("%d", "6700"), ""])


def pytorch_log() -> str:
    """Llama-3.1-8B on the PyTorch engine with DEBUG lines: (63,000 - 4,000 MiB) x 0.8 over
    5,900 blocks of 64 tokens = 131,072.0 B/token (bounds 131,048..131,074)."""
    t = lmdeploy_log.table().entries
    config = ("PytorchEngineConfig(dtype='auto', tp=1, dp=1, session_len=None, "
              "max_batch_size=256, cache_max_entry_count=0.8, block_size=64, num_gpu_blocks=0, "
              "quant_policy=0)")
    cache = ("CacheConfig(max_batches=256, block_size=64, num_cpu_blocks=512, "
             "num_gpu_blocks=5900, window_size=-1, cache_max_entry_count=0.8, "
             "max_prefill_token_num=8192, enable_prefix_caching=False, quant_policy=0)")
    return "\n".join([
        LMD_PY + _fill(t, "backend_config", {"backend": "pytorch", "backend_config": config}),
        LMD_DEBUG + _fill(t, "free_mem", {"free_mib": "63000"}),
        LMD_DEBUG + _fill(t, "runtime_mem", {"runtime_mib": "4000"}),
        LMD_PY + _fill(t, "cache_config", {"cache_config": cache}), ""])


def write(tmp_path: Path, text: str, name: str = "engine.log") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def probe(*args: str) -> Result:
    return CliRunner().invoke(main_command(), ["probe", *args, "--no-plugins", "--offline"])


def main_command() -> Any:
    from kvlint.cli import main

    return main


def as_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = probe(*args, "--format", "json")
    assert result.exit_code == code, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def measured(data: dict[str, Any], impl: str) -> dict[str, Any]:
    block = data["results"][0]["probe"]
    assert block["method"] == "log"
    value: dict[str, Any] = block["impls"][0]
    assert value["impl"] == impl
    return value


def terms(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["term"]: t for t in data["results"][0]["probe"]["terms"]}


def test_trtllm_pool_per_token_and_capacity(tmp_path: Path) -> None:
    data = as_json(LLAMA31, "--engine-log", write(tmp_path, trt_log()))
    m = measured(data, "trtllm")
    assert m["theory_cache_bytes"] == 131_072
    assert m["measured_cache_bytes"] == round(55.33 * GIB / 453_280) == 131_067
    assert m["verdict"] == "ok" and m["details"]["pool"]["within_rounding"] is True
    assert m["details"]["kv_size_estimate_kvlint"] == 131_072
    row = terms(data)["max tokens in paged KV cache"]
    assert row["printed"] == 453_280 and row["predicted"] is not None
    assert abs(row["predicted"] - 453_280) / 453_280 < 0.05
    block = data["results"][0]["probe"]
    assert any("recognised as a TensorRT-LLM log" in n for n in block["notes"])


def test_trtllm_pool_twice_theory_is_kv601(tmp_path: Path) -> None:
    """The same tokens in three times the GiB: 393,232 B/token, 3.0x theory: KV601 (error),
    exit 1; 1.5x is a warning."""
    data = as_json(LLAMA31, "--trtllm-log", write(tmp_path, trt_log("166.00")), code=1)
    m = measured(data, "trtllm")
    assert m["verdict"] == "error"
    assert "KV601" in [f["code"] for f in data["results"][0]["findings"]]
    data = as_json(LLAMA31, "--trtllm-log", write(tmp_path, trt_log("83.00")))
    assert measured(data, "trtllm")["verdict"] == "warning"
    assert "KV601" in [f["code"] for f in data["results"][0]["findings"]]


def test_lmdeploy_turbomind_block_size(tmp_path: Path) -> None:
    data = as_json(LLAMA31, "--engine-log", write(tmp_path, turbomind_log()))
    m = measured(data, "lmdeploy")
    assert m["theory_cache_bytes"] == 131_072 and m["measured_cache_bytes"] == 131_072
    assert m["verdict"] == "ok" and m["details"]["backend"] == "turbomind"
    assert terms(data)["KV cache tokens (blocks x block tokens)"]["printed"] == 6700 * 64


def test_lmdeploy_pytorch_debug_budget_and_capacity(tmp_path: Path) -> None:
    data = as_json(LLAMA31, "--lmdeploy-log", write(tmp_path, pytorch_log()))
    m = measured(data, "lmdeploy")
    assert m["measured_cache_bytes"] == 131_072 and m["verdict"] == "ok"
    pool = m["details"]["pool"]
    assert pool["bytes_per_token_low"] <= 131_072 <= pool["bytes_per_token_high"]
    rows = terms(data)
    assert rows["free gpu memory after the weights"]["printed"] == round(63000 / 1024, 2)
    assert rows["KV cache tokens (blocks x block tokens)"]["printed"] == 5900 * 64
    assert rows["KV cache tokens (blocks x block tokens)"]["predicted"] is not None


def test_detection_among_four_engines(tmp_path: Path) -> None:
    vllm = "\n".join(VLLM_PREFIX + vllm_line(e)[0] for e in VLLM_ENTRIES[:6])
    for text, engine in ((vllm, "vllm"), (SGLANG_LOG, "sglang"), (trt_log(), "trtllm"),
                         (turbomind_log(), "lmdeploy"), (pytorch_log(), "lmdeploy")):
        found, why = detect(Path(write(tmp_path, text)))
        assert found == engine, why
        assert why.startswith("recognised as") and "wording(s) against" in why


def test_forcing_flags_and_one_log(tmp_path: Path) -> None:
    trt = write(tmp_path, trt_log(), "trt.log")
    lmd = write(tmp_path, turbomind_log(), "lmd.log")
    text = probe(LLAMA31, "--trtllm-log", trt)
    assert text.exit_code == 0, text.output
    assert "read as a TensorRT-LLM log (--trtllm-log)" in text.output.replace("\n    ", " ")
    forced = probe(LLAMA31, "--lmdeploy-log", trt)  # nothing of LMDeploy in it
    assert forced.exit_code == 2 and "nothing comparable" in forced.output
    assert "LMDeploy" in forced.output
    forced = probe(LLAMA31, "--trtllm-log", lmd)
    assert forced.exit_code == 2 and "nothing comparable" in forced.output
    both = probe(LLAMA31, "--trtllm-log", trt, "--lmdeploy-log", lmd)
    assert both.exit_code == 2 and "give one start-up log" in both.output
    pp = probe(LLAMA31, "--lmdeploy-log", lmd, "--pp", "2")
    assert pp.exit_code == 2 and "pipeline" in pp.output


def test_junk_is_one_line_exit_2(tmp_path: Path) -> None:
    for text in ("hello\nworld\n", "\x00\x01" * 5000, "", "[TM][INFO] " * 10_000):
        result = probe(LLAMA31, "--engine-log", write(tmp_path, text, "junk.log"))
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1, result.output
        assert "TensorRT-LLM or LMDeploy" in lines[0] and "Traceback" not in result.output


# --- starts that failed for memory (KV602) ------------------------------------------------

LLAMA31_70B = str(CONFIGS / "meta-llama--Meta-Llama-3.1-70B.json")
TRT_OOM = ("[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, stream): out "
           "of memory (/src/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)")
TM_OOM = "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory memory_utils.cu:32"
TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 172.00 MiB. GPU 0 "
             "has a total capacity of 23.57 GiB of which 127.38 MiB is free.")


def kv602(data: dict[str, Any]) -> dict[str, Any]:
    found = [f for f in data["results"][0]["findings"] if f["code"] == "KV602"]
    assert len(found) == 1, data["results"][0]["findings"]
    return found[0]


def test_trtllm_oom_where_the_weights_do_not_fit(tmp_path: Path) -> None:
    log = write(tmp_path, "Traceback (most recent call last):\n" + TRT_OOM + "\n")
    assert detect(Path(log))[0] == "trtllm"
    data = as_json(LLAMA31_70B, "--engine-log", log, "--gpu-memory", "23.57", code=1)
    assert data["results"][0]["probe"]["out_of_memory"].startswith("[TensorRT-LLM][ERROR]")
    finding = kv602(data)
    assert finding["severity"] == "error" and finding["data"]["predicted"] == "fails"
    assert ("kvlint predicts the same: the weights do not fit (kvlint check's KV503)"
            in finding["message"])


def test_turbomind_oom_kvlint_would_start_names_what_it_misses(tmp_path: Path) -> None:
    log = write(tmp_path, TM_OOM + "\n")
    assert detect(Path(log))[0] == "lmdeploy"
    data = as_json(LLAMA31, "--engine-log", log, "--gpu-memory", "80", code=1)
    finding = kv602(data)
    assert finding["data"]["predicted"] == "starts"
    assert "outside its memory model" in finding["message"]
    notes = " ".join(data["results"][0]["probe"]["notes"])
    assert "LMDeploy ran out of GPU memory at start" in notes
    assert "no pool to compare" in " ".join(
        data["results"][0]["probe"]["impls"][0]["notes"])


def test_pytorchs_oom_needs_the_engine_and_gives_the_gpu_total(tmp_path: Path) -> None:
    log = write(tmp_path, TORCH_OOM + "\n")
    unnamed = probe(LLAMA31_70B, "--engine-log", log)
    assert unnamed.exit_code == 2 and len(unnamed.output.strip().splitlines()) == 1
    assert "no line names the engine" in unnamed.output
    data = as_json(LLAMA31_70B, "--lmdeploy-log", log, code=1)
    notes = " ".join(data["results"][0]["probe"]["notes"])
    assert "GPU memory: 23.57 GiB, the total the error printed" in notes
    assert kv602(data)["data"]["predicted"] == "fails"


def test_no_gpu_memory_says_so(tmp_path: Path) -> None:
    data = as_json(LLAMA31, "--engine-log", write(tmp_path, TRT_OOM + "\n"), code=1)
    finding = kv602(data)
    assert finding["data"]["predicted"] == "unknown"
    assert "give --gpu or --gpu-memory" in finding["message"]


def test_an_sglang_start_that_ran_out_of_memory(tmp_path: Path) -> None:
    """An SGLang log (recognised by its own lines) that ends in PyTorch's error: KV602."""
    log = write(tmp_path, SGLANG_LOG + "\n" + TORCH_OOM + "\n")
    assert detect(Path(log))[0] == "sglang"
    data = as_json(LLAMA31, "--engine-log", log, code=1)
    assert data["results"][0]["probe"]["out_of_memory"].startswith("CUDA out of memory.")
    assert kv602(data)["data"]["predicted"] in ("starts", "fails")


def test_a_vllm_start_that_ran_out_of_memory(tmp_path: Path) -> None:
    text = ("INFO 10-03 16:22:17 [gpu_worker.py:298] Available KV cache memory: 3.00 GiB\n"
            + TORCH_OOM + "\n")
    data = as_json(LLAMA31, "--vllm-log", write(tmp_path, text), code=1)
    assert data["results"][0]["probe"]["out_of_memory"].startswith("CUDA out of memory.")
    notes = " ".join(data["results"][0]["probe"]["notes"])
    assert "vLLM ran out of GPU memory at start" in notes and "23.57 GiB" in notes
    assert kv602(data)["severity"] == "error"


def test_an_lmdeploy_log_without_kv_lines_is_named_by_its_loggers(tmp_path: Path) -> None:
    log = tmp_path / "lmdeploy.log"
    log.write_text("2024-08-05 05:40:52,191 - lmdeploy - WARNING - model_source: hf_model\n"
                   "model_config:\n\n[llama]\nhead_num = 56\n", encoding="utf-8")
    engine, why = detect(log)
    assert engine == "lmdeploy" and "logger's name" in why
    other = tmp_path / "other.log"
    other.write_text("2024-08-05 05:40:52,191 - myapp - WARNING - hello\n", encoding="utf-8")
    with pytest.raises(UsageError, match="was recognised"):
        detect(other)
