"""Capacity (KV501-503), the decode roofline and `kvlint compare` (DESIGN §3)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.hardware import find_gpu
from kvlint.model.serving import ServingPlan, analyze
from tests.helpers import CONFIGS, geometry

LLAMA31_8B = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
GIB = 1024**3
MIB = 1024**2


def check(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["check", *args, "--format", "json", "--no-plugins"])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    jsonschema.validate(data, schema)
    first: dict[str, Any] = data["results"][0]
    return first


def codes(result: dict[str, Any]) -> list[str]:
    return [f["code"] for f in result["findings"]]


def with_kv_heads(g: AttentionGeometry, n: int) -> AttentionGeometry:
    return replace(g, layers=tuple(replace(la, num_kv_heads=n) for la in g.layers))


def seq_bytes(g: AttentionGeometry, context: int) -> int:
    return kv.bytes_per_sequence(g, kv.resolve_kv_dtype("auto", g), context)


# --- the seeds' worked figures --------------------------------------------------------------


def test_llama3_70b_at_8k_times_32() -> None:
    g = geometry("meta-llama--Meta-Llama-3.1-70B")  # the Llama-3-70B geometry: 80 x GQA-8
    assert seq_bytes(g, 8192) * 32 == 85_899_345_920  # 86 GB
    assert seq_bytes(with_kv_heads(g, 64), 8192) * 32 == 687_194_767_360  # ~688 GB as MHA
    assert seq_bytes(g, 8192) == 2_684_354_560  # 2.7 GB per 8K sequence
    assert seq_bytes(g, 131_072) == 40 * GIB


def test_deepseek_v2_540_mib_per_8k_sequence() -> None:
    assert seq_bytes(geometry("deepseek-ai--DeepSeek-V2.5"), 8192) == 540 * 1024**2


def test_llama31_8b_gqa_mha_mqa() -> None:
    g = geometry("meta-llama--Meta-Llama-3.1-8B")
    dtype = kv.resolve_kv_dtype("auto", g)
    assert kv.bytes_per_token(g, dtype) == 128 * 1024
    assert kv.bytes_per_token(with_kv_heads(g, 32), dtype) == 512 * 1024
    assert kv.bytes_per_token(with_kv_heads(g, 1), dtype) == 16 * 1024


def test_eight_kv_heads_at_tp16_replicate_twice() -> None:
    assert check(LLAMA31_8B, "--tp", "16")["kv"]["replication_factor"] == 2.0


# --- capacity -------------------------------------------------------------------------------


def test_llama31_8b_on_one_l4() -> None:
    l4 = find_gpu("l4")
    weights = 16_060_522_496  # 8,030,261,248 parameters x 2 bytes (estimate)
    # vLLM 0.34's profile (the newest known) on a 24 GB GPU: 2,048 profiled tokens, 256
    # sampler rows; the sampler's 256 x 128,256 x 16 B beats the forward pass's 2,048 x
    # 110,592 B. gpu_memory_utilization defaults to 1.0 with the extensible KV cache, whose
    # margin max(1 GiB, 0.75 x peak) stays free: 1 GiB here (0.75 x 501 MiB is less)
    activation = 256 * 128_256 * 16
    margin = GIB
    overhead = activation + 300 * MIB + 512 * MIB + margin  # + non-torch + CUDA graphs
    budget = l4.runtime_memory_bytes - weights - overhead
    # a decode step reads every weight but the embedding table, of which it reads one row
    read = weights - (128_256 - 1) * 4096 * 2
    fits = check(LLAMA31_8B, "--gpu", "L4", "--max-model-len", "8192")
    assert fits["capacity"] == {
        "gpu": "L4", "gpu_source": "--gpu", "gpu_memory_utilization": 1.0,
        "gpu_memory_bytes": l4.runtime_memory_bytes, "gpu_memory_source": "gpus.toml",
        "weight_bytes_per_gpu": weights, "kv_budget_bytes_per_gpu": budget,
        "max_tokens": budget // (64 * 131_072) * 64,  # whole 64-token blocks (0.34)
        "max_sequences": budget // (8192 * 131_072),
        "crossover_batch": pytest.approx(read / (8192 * 131_072)),
        "tpot_floor_ms": pytest.approx((read + 8192 * 131_072) / 300e9 * 1000),
        "context": 8192, "bytes_per_sequence_per_gpu": 8192 * 131_072,
        "state_bytes_per_sequence_per_gpu": 0, "overhead_bytes_per_gpu": overhead,
        "max_concurrency": pytest.approx(budget // (64 * 131_072) * 64 / 8192),
        "memory_profile": {
            "engine_version": "0.34.0", "requested_bytes": l4.runtime_memory_bytes,
            "weight_bytes": weights, "lora_bytes": 0, "activation_peak_bytes": activation,
            "non_torch_bytes": 300 * MIB, "cuda_graph_bytes": 512 * MIB,
            "kv_memory_bytes": budget, "profiled_tokens": 2048, "sampler_rows": 256,
            "kv_margin_bytes": margin, "block_size": 64,
            "estimated": ["activation_peak_bytes", "non_torch_bytes", "cuda_graph_bytes",
                          "kv_margin_bytes"]},
        "kv_budget_source": None, "kv_tokens_capped_by": None, "kv_pools": [],
    }
    assert "KV501" not in codes(fits)

    too_long = check(LLAMA31_8B, "--gpu", "L4", "--max-model-len", "131072")
    kv501 = next(f for f in too_long["findings"] if f["code"] == "KV501")
    assert kv501["data"]["kv_bytes_needed_per_gpu"] == 131_072 * 131_072  # 16 GiB
    # vLLM's estimate counts whole blocks (64 tokens from 0.34)
    assert kv501["data"]["largest_fitting_max_model_len"] == budget // (64 * 131_072) * 64
    assert "one 131,072-token sequence needs 16.0 GiB of KV cache per GPU" in kv501["message"]
    assert kv501["message"].startswith('vLLM stops at start-up ("... KV cache is needed, which '
                                       'is larger than the available KV cache memory"): ')


@pytest.mark.parametrize(("engine", "args", "said"), [
    # the weights fit the GPU but not the share the engine may use: loaded, then refused
    ("vllm", ["--gpu-memory-utilization", "0.5", "--engine-version", "0.11.0"],
     'at gpu_memory_utilization 0.50: vLLM loads them, then stops at start-up with "No '
     'available memory for the cache blocks"'),
    ("sglang", ["--gpu-memory-utilization", "0.5"],
     'at mem_fraction_static 0.50: SGLang loads them, then stops with "Not enough memory. '
     'Please try to increase --mem-fraction-static."'),
    # past the GPU's own memory the load itself runs out
    ("vllm", ["--tp", "1"], "loading the checkpoint runs out of GPU memory"),
])
def test_weights_over_the_share_name_the_engines_own_refusal(
        engine: str, args: list[str], said: str) -> None:
    qwen72 = str(CONFIGS / "Qwen--Qwen2.5-72B.json")
    result = check(qwen72, "--gpu", "H100-80GB", "--tp", "2", "--engine", engine, *args)
    (kv503,) = [f for f in result["findings"] if f["code"] == "KV503"]
    assert said in kv503["message"]


def test_an_empty_sglang_pool_is_its_refusal_to_start() -> None:
    """SGLang raises "Not enough memory" when its pool comes out empty
    (model_runner.py@0.4.10.post1): an error, not the warning of a short pool."""
    result = check(str(CONFIGS / "Qwen--Qwen2.5-72B.json"), "--gpu", "H100-80GB", "--tp", "2",
                   "--engine", "sglang", "--gpu-memory-utilization", "0.86")
    (kv501,) = [f for f in result["findings"] if f["code"] == "KV501"]
    assert kv501["severity"] == "error"
    assert kv501["message"].startswith('SGLang will stop at start-up with "Not enough memory.')


def test_default_max_model_len_is_the_models_own() -> None:
    # Llama-3.1's config says 131,072: on one L4 that does not fit.
    assert "KV501" in codes(check(LLAMA31_8B, "--gpu", "L4"))


def test_llama31_405b_bf16_tp8_h100_weights_do_not_fit() -> None:
    result = check(str(CONFIGS / "meta-llama--Meta-Llama-3.1-405B.json"), "--gpu", "H100-80GB",
                   "--tp", "8")
    assert "KV503" in codes(result)
    assert "KV501" not in codes(result)  # the weights are the problem, not the context
    assert result["capacity"]["kv_budget_bytes_per_gpu"] < 0


def test_kv502_max_num_seqs() -> None:
    result = check(LLAMA31_8B, "--gpu", "H100", "--max-model-len", "8192", "--max-num-seqs",
                   "256")
    kv502 = next(f for f in result["findings"] if f["code"] == "KV502")
    assert kv502["data"]["max_sequences"] == result["capacity"]["max_sequences"] < 256


def test_gpu_memory_utilization_and_overhead_options() -> None:
    a = check(LLAMA31_8B, "--gpu", "H100", "--max-model-len", "8192")["capacity"]
    b = check(LLAMA31_8B, "--gpu", "H100", "--max-model-len", "8192",
              "--gpu-memory-utilization", "0.5", "--overhead", "1")["capacity"]
    h100 = find_gpu("H100").runtime_memory_bytes
    assert b["overhead_bytes_per_gpu"] == GIB and b["memory_profile"] is None  # the override
    assert a["gpu_memory_utilization"] == 1.0  # vLLM 0.34's default (extensible KV cache)
    assert a["kv_budget_bytes_per_gpu"] - b["kv_budget_bytes_per_gpu"] == \
        h100 - int(h100 * 0.5) - a["overhead_bytes_per_gpu"] + GIB


def test_windowed_layers_fit_more_sequences() -> None:
    g = geometry("openai--gpt-oss-20b")
    plan = ServingPlan(context=131_072)
    a = analyze(g, plan)
    per_seq = a.bytes_per_sequence_per_gpu
    assert per_seq == 12 * 128 * 2048 + 12 * 131_072 * 2048
    assert per_seq < 131_072 * a.footprint.bytes_per_token


def test_unknown_gpu_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["check", LLAMA31_8B, "--gpu", "H10", "--no-plugins"])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("kvlint: error: unknown GPU 'H10'")


def test_text_shows_capacity() -> None:
    out = CliRunner().invoke(main, ["check", LLAMA31_8B, "--gpu", "L4", "--max-model-len",
                                    "8192", "--no-plugins"]).stdout  # vLLM 0.34.0
    assert "L4 · 22.0 GiB · gpu_memory_utilization 1.00 · overhead 2.3 GiB" in out  # CUDA total
    assert ("vLLM profile  22.0 GiB requested · model weights ~15.0 GiB · peak activation "
            "~501 MiB (2,048 tokens) · non-torch memory ~300 MiB · CUDA graph memory "
            "~512 MiB · KV cache margin ~1.0 GiB (vLLM 0.34.0)") in out
    assert ("Available KV cache memory: ~4.8 GiB · GPU KV cache size: ~38,912 tokens · "
            "Maximum concurrency for 8,192 tokens per request: ~4.75x") in out
    out = CliRunner().invoke(main, ["check", LLAMA31_8B, "--gpu", "L4", "--max-model-len",
                                    "8192", "--engine-version", "0.33.0",
                                    "--no-plugins"]).stdout
    assert "L4 · 22.0 GiB · gpu_memory_utilization 0.92 · overhead 1.3 GiB" in out
    assert ("vLLM profile  20.2 GiB requested · model weights ~15.0 GiB · peak activation "
            "~501 MiB (2,048 tokens) · non-torch memory ~300 MiB · CUDA graph memory "
            "~512 MiB (vLLM 0.33.0)") in out
    assert ("Available KV cache memory: ~4.0 GiB · GPU KV cache size: ~32,688 tokens · "
            "Maximum concurrency for 8,192 tokens per request: ~3.99x") in out
    assert "~15.0 GiB per GPU (estimate: 8,030,261,248 parameters x bfloat16)" in out
    assert "TPOT ≥ 53.6 ms at batch 1 x 8,192 tokens (HBM roofline)" in out


# --- compare --------------------------------------------------------------------------------


def compare(*args: str) -> str:
    result = CliRunner().invoke(main, ["compare", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


MODELS = [str(CONFIGS / f"{n}.json") for n in (
    "meta-llama--Llama-2-70b-hf", "meta-llama--Meta-Llama-3.1-70B", "Qwen--Qwen2.5-72B",
    "deepseek-ai--DeepSeek-V3")]


def test_compare_ranks_by_bytes_per_token_with_ties() -> None:
    rows = json.loads(compare(*MODELS, "--format", "json"))["rows"]
    assert [(r["rank"], r["ref"].rsplit("/", 1)[-1]) for r in rows] == [
        (1, "deepseek-ai--DeepSeek-V3.json"), (2, "meta-llama--Llama-2-70b-hf.json"),
        (2, "meta-llama--Meta-Llama-3.1-70B.json"), (2, "Qwen--Qwen2.5-72B.json")]
    assert [r["attention_label"] for r in rows] == ["MLA 512+64", "GQA 64/8", "GQA 64/8",
                                                    "GQA 64/8"]
    assert rows[0]["bytes_per_token"] == 70_272 and rows[1]["bytes_per_token"] == 327_680
    assert rows[1]["factor"] == pytest.approx(327_680 / 70_272)
    text = compare(*MODELS)
    assert "MLA 512+64" in text and "68.6 KiB" in text and "4.7" in text
    assert "\n\n| rank" in compare(*MODELS, "--format", "markdown")


def test_compare_with_gpu_ranks_by_sequences() -> None:
    rows = json.loads(compare(*MODELS, "--gpu", "H200", "--tp", "8", "--format", "json"))["rows"]
    seqs = [r["max_sequences"] for r in rows]
    assert seqs == sorted(seqs, reverse=True)
    assert all(r["weight_bytes_per_gpu"] for r in rows)


def test_moe_decode_reads_only_touched_experts() -> None:
    qwen = str(CONFIGS / "Qwen--Qwen3-30B-A3B.json")
    one = check(qwen, "--gpu", "H100", "--batch", "1")["capacity"]
    many = check(qwen, "--gpu", "H100", "--batch", "64")["capacity"]
    assert one["weight_bytes_per_gpu"] == many["weight_bytes_per_gpu"]
    # batch 1 reads the dense part and 8 of 128 experts per layer; batch 64 touches most experts
    assert one["tpot_floor_ms"] * 3 < many["tpot_floor_ms"]
    out = CliRunner().invoke(main, ["check", qwen, "--gpu", "H100", "--batch", "8",
                                    "--no-plugins"]).stdout
    assert "(MoE: the experts 8 sequences touch under uniform routing)" in out


# --- vLLM's refusals in its own terms (issue 29) --------------------------------------------


GPT_OSS_120B = str(CONFIGS / "openai--gpt-oss-120b.json")


def test_gpt_oss_before_0_12_loads_marlin_mxfp4_on_hopper() -> None:
    def weights(gpu: str, version: str) -> int:
        cap = check(GPT_OSS_120B, "--gpu", gpu, "--engine-version", version)["capacity"]
        return int(cap["weight_bytes_per_gpu"])

    # triton_kernels ships with vLLM from 0.12.0: before it Hopper runs Marlin's padded layout,
    # as an A100 does in every release
    assert weights("H100", "0.11.0") == weights("A100-80GB", "0.11.0") \
        == weights("A100-80GB", "0.12.0") > weights("H100", "0.12.0")
    assert weights("H100", "0.11.0") == 70_756_002_432  # 65.9 GiB; vLLM printed 65.9651 GiB


def test_no_memory_for_the_cache_is_vllms_own_refusal() -> None:
    result = check(GPT_OSS_120B, "--gpu", "H100", "--engine-version", "0.10.1")
    cap = result["capacity"]
    assert cap["kv_budget_bytes_per_gpu"] < 0
    kv501 = next(f for f in result["findings"] if f["code"] == "KV501")
    assert kv501["message"].startswith(
        'vLLM will stop at start-up with "No available memory for the cache blocks"')
    assert kv501["data"]["largest_fitting_max_model_len"] == 0
    assert "KV503" not in codes(result)  # the weights fit: the profile's peak does not


def test_kv501_counts_whole_blocks_as_vllm_does() -> None:
    # vLLM 0.11: 16-token blocks; the sequence of 131,071 tokens takes 8,192 blocks
    result = check(LLAMA31_8B, "--gpu", "L4", "--max-model-len", "131071",
                   "--engine-version", "0.11.0")
    kv501 = next(f for f in result["findings"] if f["code"] == "KV501")
    assert kv501["data"]["kv_bytes_needed_per_gpu"] == 131_072 * 131_072
    budget = result["capacity"]["kv_budget_bytes_per_gpu"]
    assert kv501["data"]["largest_fitting_max_model_len"] == budget // (16 * 131_072) * 16


def test_check_quantization_sizes_the_weights_as_the_engine_loads_them() -> None:
    plain = check(LLAMA31_8B, "--gpu", "L4")["capacity"]
    nf4 = check(LLAMA31_8B, "--gpu", "L4", "--quantization", "bitsandbytes")["capacity"]
    fp8 = check(LLAMA31_8B, "--gpu", "L4", "--quantization", "FP8")["capacity"]
    assert nf4["weight_bytes_per_gpu"] < fp8["weight_bytes_per_gpu"] \
        < plain["weight_bytes_per_gpu"]
    # a method that needs a checkpoint quantized beforehand, on a config that names no
    # quantization: that checkpoint's usual form (AWQ 4-bit), a what-if said to be assumed
    assert check(LLAMA31_8B, "--gpu", "L4", "--quantization", "awq")["capacity"][
        "weight_bytes_per_gpu"] < fp8["weight_bytes_per_gpu"]


def test_check_quantization_sizes_as_a_checkpoint_in_that_format(tmp_path: Path) -> None:
    """In-flight bitsandbytes weighs exactly what a 4-bit NF4 checkpoint of the same config
    does (vLLM quantizes to load_in_4bit NF4: kvlint/model/overrides.py)."""
    config = json.loads((CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    stored = tmp_path / "config.json"
    stored.write_text(json.dumps(config))
    flight = check(LLAMA31_8B, "--gpu", "L4", "--quantization", "bitsandbytes")["capacity"]
    assert flight["weight_bytes_per_gpu"] == \
        check(str(stored), "--gpu", "L4")["capacity"]["weight_bytes_per_gpu"]


def test_a_vision_models_vllm_capacity_says_the_encoder_profile_is_not_sized() -> None:
    """vLLM profiles the vision encoder on its largest dummy input at start-up; kvlint does
    not size that peak and says so in the model's notes (never a silent budget)."""
    vl = str(CONFIGS / "Qwen--Qwen3-VL-8B-Instruct.json")
    notes = check(vl, "--gpu", "H100-80GB", "--max-model-len", "8192")["geometry"]["notes"]
    assert any("vision encoder" in n for n in notes)
    for args in ([LLAMA31_8B, "--gpu", "H100-80GB"], [vl, "--gpu", "H100-80GB", "--engine",
                                                       "sglang"], [vl]):
        notes = check(*args)["geometry"]["notes"]
        assert not any("vision encoder" in n for n in notes), args
