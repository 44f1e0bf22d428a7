"""``kvlint probe MODEL --vllm-log FILE`` end to end: real vLLM start-up logs
(fixtures/vllm_logs) against kvlint's theory, exact figures worked by hand; a synthetic log
of an engine caching full K/V for an MLA model (built here) must raise KV601."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS, ROOT

LOGS = ROOT / "fixtures" / "vllm_logs"
QWEN3_8B = str(CONFIGS / "Qwen--Qwen3-8B.json")
LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
DSV2_LITE = str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json")
GIB = 2**30


def probe(*args: str) -> Result:
    return CliRunner().invoke(main, ["probe", *args, "--no-plugins"])


def as_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = probe(*args, "--format", "json")
    assert result.exit_code == code, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    jsonschema.validate(data, schema)
    return data


def impl(data: dict[str, Any]) -> dict[str, Any]:
    probe_block = data["results"][0]["probe"]
    assert probe_block["method"] == "log"
    value: dict[str, Any] = probe_block["impls"][0]
    return value


def test_qwen3_8b_real_log_matches_theory() -> None:
    """36 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 147,456 B/token; 6.37 GiB /
    (16 x 147,456) = 2,899.06 blocks -> 46,384 tokens; vLLM printed 46,368 (2,898 blocks), inside
    what 6.365..6.375 GiB allow (46,336..46,416)."""
    m = impl(as_json(QWEN3_8B, "--vllm-log", str(LOGS / "qwen3-8b-v1-lmcache-cudagraph.log")))
    assert m["theory_cache_bytes"] == 147_456
    assert m["measured_cache_bytes"] == round(6.37 * GIB / 46_368) == 147_510
    assert m["verdict"] == "ok"
    tokens = m["details"]["tokens"]
    assert (tokens["printed"], tokens["predicted"], tokens["low"], tokens["high"]) == \
        (46_368, 46_384, 46_336, 46_416)
    assert tokens["within_rounding"] is True
    assert m["details"]["concurrency"] == {"printed": 2.83, "predicted": 2.83,
                                           "tokens_per_request": 16_384}


def test_v0_blocks_log_text_output() -> None:
    """Llama-3.1-8B: 131,072 B/token, 2 MiB per 16-token block; 3.81 GiB -> 1,950 blocks =
    31,200 tokens; V0 printed 1,952 blocks = 31,232 tokens (+0.10%)."""
    result = probe(LLAMA31, "--vllm-log", str(LOGS / "llama-3.1-8b-v0-rtx3090-20k.log"))
    assert result.exit_code == 0, result.output
    assert "engine log · KV bytes per token per GPU" in result.output
    flat = result.output.replace("\n    ", " ")
    assert "31,232 tokens per GPU; kvlint from 3.81 GiB at 131,072.0 B/token: 31,200 tokens " \
           "(31,168..31,248 within the GiB rounding, +0.10%)" in flat
    assert "printed 1.56x, kvlint 1.56x" in result.output


def test_mla_needed_line_matches_the_latent() -> None:
    """DeepSeek-V2-Lite caches the latent: 27 x (512 + 64) x 2 = 31,104 B/token; 32,768
    tokens -> 0.949 GiB, vLLM printed 0.95 GiB needed."""
    m = impl(as_json(DSV2_LITE, "--vllm-log", str(LOGS / "deepseek-v2-lite-chat-v1-needed.log")))
    assert m["theory_cache_bytes"] == 31_104
    assert m["measured_cache_bytes"] == round(0.95 * GIB / 32_768) == 31_130
    assert m["details"]["needed"]["predicted_gib"] == 31_104 * 32_768 / GIB


def _mla_as_full_kv_log(tmp_path: Path) -> Path:
    """An engine that caches per-head K/V for DeepSeek-V2-Lite: 27 layers x 16 heads x
    (192 + 128) x 2 bytes = 276,480 B/token."""
    full = 27 * 16 * (192 + 128) * 2
    tokens = (10 * GIB // (16 * full)) * 16
    path = tmp_path / "mla-full.log"
    path.write_text(
        "(EngineCore_DP0 pid=1) INFO 04-02 12:32:04 [core.py:61] Initializing a V1 LLM engine "
        "(v0.8.3) with config: model='deepseek-ai/DeepSeek-V2-Lite', dtype=torch.bfloat16, "
        "max_seq_len=32768, tensor_parallel_size=1, pipeline_parallel_size=1, "
        "enforce_eager=False, kv_cache_dtype=auto\n"
        "(EngineCore_DP0 pid=1) INFO 04-02 12:33:23 [gpu_worker.py:227] Available KV cache "
        "memory: 10.00 GiB\n"
        f"(EngineCore_DP0 pid=1) INFO 04-02 12:33:23 [kv_cache_utils.py:864] GPU KV cache "
        f"size: {tokens:,} tokens\n")
    return path


def test_mla_cached_as_full_kv_is_kv601_error(tmp_path: Path) -> None:
    data = as_json(DSV2_LITE, "--vllm-log", str(_mla_as_full_kv_log(tmp_path)), code=1)
    m = impl(data)
    assert m["verdict"] == "error"
    # 10 GiB / (16 x 276,480) = 2,427 blocks = 38,832 tokens -> 276,510 B/token allocated
    assert m["measured_cache_bytes"] == round(10 * GIB / 38_832) == 276_510
    assert m["cache_ratio"] == round(276_510 / 31_104, 4) == 8.8899
    codes = [(f["code"], f["severity"]) for f in data["results"][0]["findings"]]
    assert ("KV601", "error") in codes
    text = probe(DSV2_LITE, "--vllm-log", str(_mla_as_full_kv_log(tmp_path)))
    assert text.exit_code == 1
    assert "vllm allocates 8.89x the KV bytes per token per GPU" in text.output.replace("\n", " ")


def test_tp_and_pp_come_from_the_log_and_split_the_theory(tmp_path: Path) -> None:
    """Llama-3.1-8B at tp=2, pp=2: 16 layers per stage x 4 KV heads x 128 x 2 x 2 = 32,768 B."""
    path = tmp_path / "pp.log"
    path.write_text("INFO 01-01 00:00:00 llm_engine.py:1] Initializing an LLM engine (v0.6.3) "
                    "with config: model='m', dtype=torch.bfloat16, max_seq_len=8192, "
                    "tensor_parallel_size=2, pipeline_parallel_size=2, kv_cache_dtype=auto\n"
                    "INFO 01-01 00:00:01 worker.py:1] Memory profiling results: "
                    "kv_cache_size=1.00GiB gpu_memory_utilization=0.90\n"
                    "INFO 01-01 00:00:02 executor.py:1] # GPU blocks: 2048, # CPU blocks: 0\n")
    m = impl(as_json(LLAMA31, "--vllm-log", str(path)))
    assert m["theory_cache_bytes"] == 32_768 and m["measured_cache_bytes"] == 32_768
    assert (m["details"]["tp"], m["details"]["pp"]) == (2, 2)
    override = impl(as_json(LLAMA31, "--vllm-log", str(path), "--tp", "1"))
    assert override["theory_cache_bytes"] == 65_536
    assert any("ran at tp=2, the theory uses tp=1" in n for n in override["notes"])


def test_a_log_of_kv_cache_memory_bytes_sizes_the_plan(tmp_path: Path) -> None:
    """vLLM >= 0.10.2 with --kv-cache-memory-bytes skips its memory profile and prints what
    it reserved (the line's format: vllm/v1/worker/gpu_worker.py@v0.11.0 lines 240-247):
    kvlint's plan takes that KV size, and its tokens follow from it exactly: 20 GiB /
    131,072 B = 163,840 tokens (whole 16-token blocks)."""
    path = tmp_path / "kv-bytes.log"
    path.write_text(
        "INFO 10-03 12:00:01 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
        "model='meta-llama/Llama-3.1-8B', dtype=torch.bfloat16, max_seq_len=8192, "
        "tensor_parallel_size=1, pipeline_parallel_size=1, kv_cache_dtype=auto\n"
        "INFO 10-03 12:00:30 [gpu_model_runner.py:2653] Model loading took 14.9889 GiB and "
        "10.52 seconds\n"
        "INFO 10-03 12:00:35 [gpu_worker.py:253] Initial free memory 78.69 GiB, reserved "
        "20.00GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped "
        "memory profiling. This does does not respect the gpu_memory_utilization config.\n"
        "INFO 10-03 12:00:36 [kv_cache_utils.py:1087] GPU KV cache size: 163,840 tokens\n"
        "INFO 10-03 12:00:36 [kv_cache_utils.py:1091] Maximum concurrency for 8,192 tokens per "
        "request: 20.00x\n", encoding="utf-8")
    data = as_json(LLAMA31, "--vllm-log", str(path), "--gpu-memory", "79.19")
    result = data["results"][0]
    cap = result["capacity"]
    assert cap["kv_budget_bytes_per_gpu"] == 20 * GIB and cap["max_tokens"] == 163_840
    assert cap["kv_budget_source"] == "the log (kv_cache_memory_bytes)"
    assert cap["memory_profile"] is None
    terms = {t["term"]: t for t in result["probe"]["terms"]}
    reserved = terms["reserved for KV Cache as specified by kv_cache_memory_bytes"]
    assert (reserved["printed"], reserved["predicted"]) == (20.0, 20.0)
    tokens = terms["GPU KV cache size (tokens)"]
    assert (tokens["printed"], tokens["predicted"], tokens["estimated"]) == \
        (163_840, 163_840, False)
    assert "Available KV cache memory" not in terms
    assert impl(data)["measured_cache_bytes"] == 131_072


def test_a_log_without_kv_figures_compares_nothing() -> None:
    """Nothing comparable is never verdict "ok" with exit 0 (issue 31): a one-line exit 2."""
    _one_line_error(probe(QWEN3_8B, "--vllm-log", str(LOGS / "qwen3-8b-gguf-v0.18-args.log")),
                    "qwen3-8b-gguf-v0.18-args.log", "nothing comparable")


def _one_line_error(result: Result, *parts: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert all(p in lines[0] for p in parts), lines[0]


def test_bad_uses_exit_2(tmp_path: Path) -> None:
    _one_line_error(probe(QWEN3_8B, "--vllm-log", str(tmp_path / "nope.log")),
                    "nope.log", "cannot read it")
    log = str(LOGS / "qwen3-8b-v1-lmcache-cudagraph.log")
    _one_line_error(probe(QWEN3_8B, "--vllm-log", log, "--endpoint", "http://127.0.0.1:9"),
                    "--endpoint and --vllm-log")
    _one_line_error(probe(QWEN3_8B, "--vllm-log", log, "--measure-itl"), "--measure-itl")
    _one_line_error(probe(QWEN3_8B, QWEN3_8B, "--vllm-log", log), "one MODEL")
    _one_line_error(probe(QWEN3_8B, "--pp", "2"), "--pp", "--vllm-log FILE")
    huge = tmp_path / "huge-tp.log"
    huge.write_text("Initializing a V1 LLM engine (v0.8.3) with config: model='m', "
                    "tensor_parallel_size=999999, pipeline_parallel_size=1\n")
    _one_line_error(probe(QWEN3_8B, "--vllm-log", str(huge)), "huge-tp.log",
                    "tensor_parallel_size")


def test_hostile_log_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "hostile.log"
    path.write_bytes(b"\x00\xff" * 100_000 + b"\nGPU KV cache size: 99999999999999999999999 "
                     b"tokens\nAvailable KV cache memory: 0.00 GiB\n" + b"\x1b[31m" * 10_000)
    result = probe(QWEN3_8B, "--vllm-log", str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    m = json.loads(result.stdout)["results"][0]["probe"]["impls"][0]
    assert m["measured_cache_bytes"] == 0


def test_pipeline_log_uses_the_smallest_stage_pool() -> None:
    """Llama-3.1-8B at pp 2 (vLLM 0.19.0, H100): 16 layers x 8 x 128 x 2 x 2 = 65,536 B/token
    per stage. Stage 0 prints 66.54 GiB available; the last stage (sampler) has 65.63 GiB in
    use, which sized the cache: 65.63 GiB / (16 x 65,536) = 67,205 blocks -> 1,075,280 tokens;
    vLLM printed 1,075,312, inside 65.625..65.635 GiB (1,075,200..1,075,360)."""
    m = impl(as_json(LLAMA31, "--vllm-log", str(LOGS / "llmd-llama-3.1-8b-h100-pp2-8192.log")))
    assert m["details"]["pp"] == 2 and m["theory_cache_bytes"] == 65_536
    tokens = m["details"]["tokens"]
    assert (tokens["printed"], tokens["predicted"], tokens["low"], tokens["high"]) == \
        (1_075_312, 1_075_280, 1_075_200, 1_075_360)
    assert tokens["within_rounding"] is True


VLLM_019 = ["llmd-llama-3.1-8b-h100-tp1-8192.log", "llmd-llama-3.1-8b-h100-tp1-32768.log",
            "llmd-llama-3.1-8b-h100-tp1-8192-kvfp8.log", "llmd-llama-3.1-8b-h100-tp2-8192.log",
            "llmd-llama-3.1-8b-h100-tp4-8192.log", "llmd-llama-3.1-8b-h100-pp2-8192.log",
            "llmd-llama-3.1-8b-h100-pp4-8192.log"]


def test_every_vllm_019_llama_log_within_the_printed_rounding() -> None:
    for name in VLLM_019:
        m = impl(as_json(LLAMA31, "--vllm-log", str(LOGS / name)))
        assert m["details"]["tokens"]["within_rounding"] is True, name


def test_a_log_without_a_version_is_modelled_at_its_wordings_oldest_release() -> None:
    """A V0 log (``# GPU blocks``) that prints no version is not modelled as the newest vLLM:
    the oldest release whose wording it has (vllm_log_formats.json) is used, and said."""
    from kvlint.loaders.vllm_log import parse_text
    from kvlint.probe.log_common import log_version

    log = parse_text("INFO 10-03 16:22:17 [executor_base.py:110] # cuda blocks: 2356, "
                     "# CPU blocks: 2048\n")
    assert log.version is None and log.version_range is not None
    notes: list[str] = []
    version = log_version("vllm", None, None, notes, log.version_range)
    assert version == log.version_range[0] != "0.34.0"
    assert "its wording is that of vLLM" in notes[0]
    assert log_version("vllm", "0.6.3", None, [], log.version_range) == "0.6.3"  # the option wins


def test_a_hybrid_models_grouped_kv_cache_size_is_not_kv601(tmp_path: Path) -> None:
    """Qwen3-Next at tp 2 under vLLM 0.11: 4 KV cache groups of 12 layers share each block
    (kvlint/model/vllm_groups.py), so vLLM prints num_blocks // 4 x 544 tokens: 44.59 GiB ->
    7,162 blocks -> 973,760 tokens, one printed token standing for 48 layers x 1,024 B. That
    is vLLM's unit, not 4x the KV a token needs."""
    path = tmp_path / "qwen3-next.log"
    path.write_text(
        "INFO 10-03 12:00:01 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct', dtype=torch.bfloat16, max_seq_len=262144, "
        "tensor_parallel_size=2, pipeline_parallel_size=1, kv_cache_dtype=auto\n"
        "INFO 10-03 12:00:09 [gpu_worker.py:298] Available KV cache memory: 44.59 GiB\n"
        "INFO 10-03 12:00:09 [kv_cache_utils.py:1087] GPU KV cache size: 973,760 tokens\n"
        "INFO 10-03 12:00:09 [kv_cache_utils.py:1091] Maximum concurrency for 262,144 tokens "
        "per request: 14.77x\n", encoding="utf-8")
    m = impl(as_json(str(CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking.json"),
                     "--vllm-log", str(path)))
    assert m["verdict"] == "ok"
    assert m["theory_cache_bytes"] == 48 * 1024
    tokens = m["details"]["tokens"]
    assert (tokens["printed"], tokens["predicted"], tokens["within_rounding"]) == \
        (973_760, 973_760, True)
    assert m["details"]["concurrency"]["predicted"] == round(7162 / 485, 2) == 14.77


def test_each_pipeline_stage_pairs_its_own_memory_with_its_own_layers(tmp_path: Path) -> None:
    """DeepSeek-V2-Lite at tp 2 x pp 2: stage 0 holds 14 of its 27 layers (16,128 B a token),
    stage 1 13 (14,976 B) and the sampler; each rank prints its own Available KV cache memory
    and vLLM gives every worker the fewest blocks: 12.13 GiB over 16,128 B, stage 0's."""
    lines = [f"(VllmWorker rank={rank} pid={rank}) INFO 07-09 09:47:45 [gpu_worker.py:1] "
             f"Available KV cache memory: {gib} GiB"
             for rank, gib in ((3, "11.33"), (2, "11.33"), (1, "12.13"), (0, "12.13"))]
    lines.append("INFO 07-09 09:47:46 [kv_cache_utils.py:1] GPU KV cache size: 807,792 tokens")
    path = tmp_path / "pp.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    m = impl(as_json(DSV2_LITE, "--vllm-log", str(path), "--tp", "2", "--pp", "2"))
    tokens = m["details"]["tokens"]
    assert tokens["stage"] == 0 and tokens["within_rounding"]
    assert tokens["predicted"] == int(Fraction("12.13") * GIB) // (16_128 * 16) * 16
    assert m["measured_cache_bytes"] == pytest.approx(16_128, rel=0.001)
