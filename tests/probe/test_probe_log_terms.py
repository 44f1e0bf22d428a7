"""``kvlint probe MODEL --vllm-log FILE``: the log's memory profile next to kvlint's, term by
term (issue 15). The printed column is the log's own figures; kvlint's column is the same
memory model ``kvlint check`` uses for that plan (GPU total, utilization, max_model_len and
version from the log or the options), so the two commands must agree to the token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS, ROOT

LOGS = ROOT / "fixtures" / "vllm_logs"
LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
QWEN3_8B = str(CONFIGS / "Qwen--Qwen3-8B.json")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--no-plugins"])


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(data, json.loads(CliRunner().invoke(main, ["schema"]).stdout))
    return data


def terms(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["term"]: t for t in data["results"][0]["probe"]["terms"]}


def check_tokens(*args: str) -> int:
    data = as_json("check", LLAMA31, *args)
    tokens: int = data["results"][0]["capacity"]["max_tokens"]
    return tokens


def test_terms_of_a_v019_tp2_log_next_to_kvlints() -> None:
    """llm-d-planner's Llama-3.1-8B H100 tp 2 log (vLLM 0.19.0): every printed term is the
    log's figure; kvlint's KV tokens are `kvlint check`'s for the plan the log printed."""
    data = as_json("probe", LLAMA31, "--vllm-log",
                   str(LOGS / "llmd-llama-3.1-8b-h100-tp2-8192.log"))
    rows = terms(data)
    assert rows["model weights (Model loading took)"]["printed"] == 7.51
    assert rows["peak activation"]["printed"] == 1.89
    assert rows["non-torch memory"]["printed"] == 2.07
    assert rows["Available KV cache memory"]["printed"] == 63.76
    assert rows["GPU KV cache size (tokens)"]["printed"] == 1_044_688
    assert rows["Maximum concurrency for 8,192 tokens per request"]["printed"] == 127.53
    # vLLM 0.19 captures CUDA graphs after sizing the KV cache: printed, not predicted
    graphs = rows["CUDA graph memory (not deducted by vLLM 0.19.0)"]
    assert graphs["printed"] == 1.69 and graphs["predicted"] is None
    # kvlint's activation peak: the dummy sampler's 1,024 rows x 128,256 logits x 16 B =
    # 2,101,346,304 B (above 8,192 tokens x 2 B x (3 x 14,336 / 2 + 3 x 4,096) = 553,648,128)
    assert rows["peak activation"]["predicted"] == round(1024 * 128_256 * 16 / 2**30, 2) == 1.96
    # non-torch at tp 2: 300 MiB + 1,843 MiB
    assert rows["non-torch memory"]["predicted"] == round((300 + 1843) / 1024, 2) == 2.09
    for name in ("peak activation", "non-torch memory", "Available KV cache memory"):
        assert rows[name]["estimated"] is True
    total = 85_029_615_043 / 2**30  # the log's total_gpu_memory, as kvlint read it
    assert data["results"][0]["capacity"]["gpu_memory_source"] == "the log (total_gpu_memory)"
    same = check_tokens("--tp", "2", "--gpu-memory", repr(total), "--gpu-memory-utilization",
                        "0.95", "--max-model-len", "8192", "--engine-version", "0.19.0")
    predicted = rows["GPU KV cache size (tokens)"]["predicted"]
    assert predicted == same
    assert abs(predicted - 1_044_688) / 1_044_688 < 0.05
    error = rows["GPU KV cache size (tokens)"]["error"]
    assert error == round((predicted - 1_044_688) / 1_044_688, 4)


def test_options_fill_what_a_v0_log_does_not_print() -> None:
    """vllm#10517's RTX 3090 log prints no version; the thread's is 0.6.4. Without it kvlint
    says so and sizes with the newest version (graphs deducted); with it, the prediction is
    `check`'s for 0.6.4 (the log's total_gpu_memory=23.58GiB, utilization 0.90) and within
    5 % of the printed 31,232 tokens: 32,032 (+2.6 %)."""
    log = str(LOGS / "llama-3.1-8b-v0-rtx3090-20k.log")
    unpinned = as_json("probe", LLAMA31, "--vllm-log", log)
    assert any("prints no vLLM version" in n for n in unpinned["results"][0]["probe"]["notes"])
    pinned = as_json("probe", LLAMA31, "--vllm-log", log, "--engine-version", "0.6.4",
                     "--max-model-len", "20000")
    rows = terms(pinned)
    tokens = rows["GPU KV cache size (tokens)"]
    assert tokens["printed"] == 31_232
    assert tokens["predicted"] == check_tokens(
        "--gpu-memory", "23.58", "--gpu-memory-utilization", "0.9", "--max-model-len", "20000",
        "--engine-version", "0.6.4")
    assert abs(tokens["error"]) < 0.05
    assert not any(name.startswith("CUDA graph") for name in rows)  # V0 prints none


def test_gpu_memory_option_replaces_a_missing_total() -> None:
    """The LMCache Qwen3-8B log prints no total: without --gpu-memory only the printed
    column is filled, and a note asks for it; with it, kvlint's column appears."""
    log = str(LOGS / "qwen3-8b-v1-lmcache-cudagraph.log")
    bare = as_json("probe", QWEN3_8B, "--vllm-log", log)
    assert bare["results"][0]["capacity"] is None
    assert all(t["predicted"] is None for t in bare["results"][0]["probe"]["terms"])
    assert any("--gpu-memory GIB" in n for n in bare["results"][0]["probe"]["notes"])
    given = as_json("probe", QWEN3_8B, "--vllm-log", log, "--gpu-memory", "23.53",
                    "--engine-version", "0.21.0")
    rows = terms(given)
    assert given["results"][0]["capacity"]["gpu_memory_source"] == "--gpu-memory"
    assert rows["GPU KV cache size (tokens)"]["printed"] == 46_368
    assert abs(rows["GPU KV cache size (tokens)"]["error"]) < 0.05
    assert rows["CUDA graph memory"]["printed"] == 0.52
    assert rows["CUDA graph memory"]["estimated"] is True


def test_text_table_marks_estimates() -> None:
    result = run("probe", LLAMA31, "--vllm-log",
                 str(LOGS / "llmd-llama-3.1-8b-h100-tp1-8192.log"))
    assert result.exit_code == 0, result.output
    assert "vLLM memory profile, per GPU" in result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("peak activation"))
    assert "GiB" in line and "~" in line  # an estimate, marked
    assert "Traceback" not in result.output


def test_log_only_options_need_a_log(tmp_path: Path) -> None:
    result = run("probe", QWEN3_8B, "--gpu-memory", "80", "--max-model-len", "4096")
    assert result.exit_code == 2
    assert "--gpu-memory, --max-model-len apply to --vllm-log FILE" in result.output
    bad = run("probe", QWEN3_8B, "--vllm-log", str(LOGS / "qwen3-8b-v1-lmcache-cudagraph.log"),
              "--engine-version", "not-a-version")
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "not a version" in bad.output


def test_multi_rank_excerpt_gets_the_per_rank_caveat() -> None:
    """vllm#21348's Qwen3-235B-A22B tp 4 excerpt: 8.11 GiB and 178,880 tokens; at 94 layers x 1
    KV head per GPU x 128 x 2 x 2 = 48,128 B/token the GiB would hold 180,928 (-1.13 %): the
    tokens are 178,880 x 48,128 / 2^30 = 8.018 GiB, a smaller rank's pool."""
    data = as_json("probe", str(CONFIGS / "Qwen--Qwen3-235B-A22B.json"), "--vllm-log",
                   str(LOGS / "qwen3-235b-a22b-fp8-tp4.log"), "--tp", "4")
    m = data["results"][0]["probe"]["impls"][0]
    assert m["theory_cache_bytes"] == 48_128
    assert m["details"]["tokens"]["within_rounding"] is False
    assert m["details"]["tokens"]["smallest_rank_gib"] == round(178_880 * 48_128 / 2**30, 3)
    assert any(n.startswith("per rank: on 4 GPUs") for n in m["notes"])
    single = as_json("probe", QWEN3_8B, "--vllm-log",
                     str(LOGS / "qwen3-8b-v1-lmcache-cudagraph.log"))
    assert not any(n.startswith("per rank") for n in
                   single["results"][0]["probe"]["impls"][0]["notes"])


def test_extensible_cache_margin_row_from_vllm_034() -> None:
    """vLLM 0.34 keeps max(1 GiB, 0.75 x the transient peak) free beyond the requested
    budget: at utilization 1.0 on the log's 79.19 GiB H100 the whole margin is a row."""
    data = as_json("probe", LLAMA31, "--vllm-log",
                   str(LOGS / "llmd-llama-3.1-8b-h100-tp1-8192.log"),
                   "--engine-version", "0.34.0", "--gpu-memory-utilization", "1.0")
    rows = terms(data)
    margin = rows["extensible KV cache margin (kept free)"]
    profile = data["results"][0]["capacity"]["memory_profile"]
    assert margin["printed"] is None and margin["estimated"] is True
    assert margin["predicted"] == round(profile["kv_margin_bytes"] / 2**30, 2) > 0
    pinned = terms(as_json("probe", LLAMA31, "--vllm-log",
                           str(LOGS / "llmd-llama-3.1-8b-h100-tp1-8192.log")))
    assert not any(name.startswith("extensible") for name in pinned)  # the log's 0.19.0
