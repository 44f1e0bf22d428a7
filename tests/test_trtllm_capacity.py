"""TensorRT-LLM's KV capacity (PyTorch backend, kvlint/model/trtllm_memory.py), by hand.

No TRT-LLM code runs here (../shared/oracle/TRTLLM.md): every expected value below is the
formula of ``KvCacheCreator.configure_kv_cache_capacity`` / ``_cal_max_memory`` (_util.py)
and ``KVCacheManager.calculate_max_num_blocks`` (resource_manager.py@001541ba) worked out
by hand:

    available = int((total - weights - activations - non-torch) x free_gpu_memory_fraction)
    max_tokens = min(available, user max_tokens x estimate) // estimate
    tokens     = min(max_tokens, fraction x (total - weights - non-torch) / pool bytes)
    blocks     = tokens // 32 (1.2; rounded up before), pool = blocks x 32

with kvlint's ESTIMATES for the activations (8,192 tokens x 2 B x (3 x MLP width / tp + 3 x
hidden)) and non-torch memory (300 MiB, + 1,843 MiB at tp > 1, + 512 MiB of CUDA graphs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.model import trtllm_memory as trt
from kvlint.model.memory import ModelDims
from tests.helpers import CONFIGS

MIB = 1024**2
H100 = 85_020_639_232  # gpus.toml runtime (CUDA) memory
H200 = 150_109_945_856
NON_TORCH_TP1 = (300 + 512) * MIB  # 851,443,712
NON_TORCH_TP2 = (300 + 1843 + 512) * MIB  # 2,783,969,280
LLAMA31_8B = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
LLAMA31_70B = CONFIGS / "meta-llama--Meta-Llama-3.1-70B.json"
DEEPSEEK_V3 = CONFIGS / "deepseek-ai--DeepSeek-V3.json"
MIXTRAL = CONFIGS / "mistralai--Mixtral-8x7B-v0.1.json"
LLAMA_8B = ModelDims(hidden_size=4096, intermediate_size=14336, vocab_size=128_256)


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def capacity(*args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    result = CliRunner().invoke(main, [*args, "--format", "json", "--no-plugins", "--isolated"])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)["results"][0]
    return data["capacity"], data["kv"]


def check(config: Path, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return capacity("check", str(config), "--engine", "trtllm", "--engine-version", "1.2.1",
                    *args)


# --- the pure arithmetic ----------------------------------------------------------------------

def test_estimates_reuse_the_vllm_terms() -> None:
    # 8,192 tokens x 2 B x (3 x 14,336 + 3 x 4,096); one dummy request (max_seq_len 131,072)
    assert trt.activation_bytes(LLAMA_8B, 8192, 1) == 8192 * 110_592 == 905_969_664
    assert trt.activation_bytes(LLAMA_8B, 8192, 2) == 8192 * 2 * (21_504 + 12_288)
    assert trt.non_torch_bytes(1) == NON_TORCH_TP1 and trt.non_torch_bytes(2) == NON_TORCH_TP2
    assert trt.dummy_requests(8192, 131_072) == 1
    assert trt.dummy_requests(8192, 2049) == 4  # requests of max_seq_len - 1 = 2,048 tokens


def test_estimate_is_the_floor_of_the_product() -> None:
    """``get_cache_size_per_token``: head_dim x kv // tp; the pool: ceil(kv / tp) heads."""
    assert trt.estimate_bytes_per_token(131_072, 8, 128, 1) == 131_072
    assert trt.estimate_bytes_per_token(40_960, 8, 128, 16) == 20_480  # Llama-70B tp 16
    # Phi-3-medium tp 8: the pool holds ceil(10 / 8) = 2 heads (40,960 B), 10 x 128 // 8
    assert trt.estimate_bytes_per_token(2 * 40 * 2 * 128 * 2, 10, 128, 8) == 25_600
    assert trt.estimate_bytes_per_token(70_272, 1, 576, 8, mla=True) == 70_272


def test_llama_8b_tp1_by_hand() -> None:
    budget = trt.kv_budget("1.2.1", total_bytes=H100, weight_bytes=16_060_522_496,
                           activation_bytes=905_969_664, non_torch_bytes=NON_TORCH_TP1,
                           pool_bytes_per_token=131_072)
    assert budget.available_bytes == int(67_202_703_360 * 0.9) == 60_482_433_024
    assert budget.estimated_max_tokens == 461_444  # 60,482,433,024 // 131,072
    assert budget.blocks == 14_420 and budget.tokens == 461_440  # 461,444 // 32 blocks
    assert not budget.capped_by_max_tokens
    # the 1.1-era rounding: math.ceil(461,444 / 32) = 14,421 blocks
    older = trt.kv_budget("1.1.0", total_bytes=H100, weight_bytes=16_060_522_496,
                          activation_bytes=905_969_664, non_torch_bytes=NON_TORCH_TP1,
                          pool_bytes_per_token=131_072)
    assert older.blocks == 14_421 and older.tokens == 461_472


def test_the_temporary_kv_cancels() -> None:
    """The profiling run's temporary KV is in the peak and added back (``_cal_max_memory``)."""
    args: dict[str, Any] = dict(total_bytes=H100, weight_bytes=16_060_522_496,
                                activation_bytes=905_969_664, non_torch_bytes=NON_TORCH_TP1,
                                pool_bytes_per_token=131_072)
    plain = trt.kv_budget("1.2.1", **args)
    with_tmp = trt.kv_budget("1.2.1", **args, temporary_kv_bytes=8224 * 131_072)
    assert with_tmp.peak_bytes == plain.peak_bytes + 8224 * 131_072
    assert with_tmp.available_bytes == plain.available_bytes
    assert trt.available_kv_bytes(100, 60, 10, 0.5) == 25


@pytest.mark.parametrize(("max_tokens", "tokens", "capped"), [
    (100_000, 99_968, True),       # 100,000 // 64 = 1,562 whole blocks
    (10_000_000, 461_440, False),  # above what the memory holds: no effect
])
def test_max_tokens_caps_the_pool(max_tokens: int, tokens: int, capped: bool) -> None:
    budget = trt.kv_budget("1.2.1", total_bytes=H100, weight_bytes=16_060_522_496,
                           activation_bytes=905_969_664, non_torch_bytes=NON_TORCH_TP1,
                           pool_bytes_per_token=131_072,
                           cache=trt.TrtllmCacheConfig(max_tokens=max_tokens,
                                                       tokens_per_block=64))
    expected = min(max_tokens, 60_482_433_024 // 131_072) // 64 * 64
    assert budget.tokens == expected == (tokens if capped else 461_440 // 64 * 64)
    assert budget.capped_by_max_tokens is capped
    assert budget.memory_bytes == min(60_482_433_024, max_tokens * 131_072)


@pytest.mark.parametrize(("per_block", "down", "up"), [
    (32, 461_440, 461_472), (64, 461_440, 461_504), (16, 461_440, 461_456),
    (128, 461_440, 461_568),
])
def test_tokens_per_block_rounding(per_block: int, down: int, up: int) -> None:
    """461,444 tokens fit: 1.2 keeps whole blocks (int(max_tokens // tokens_per_block)), the
    1.1-era copy rounds the last block up (math.ceil)."""
    cache = trt.TrtllmCacheConfig(tokens_per_block=per_block)
    kwargs: dict[str, Any] = dict(total_bytes=H100, weight_bytes=16_060_522_496,
                                  activation_bytes=905_969_664, non_torch_bytes=NON_TORCH_TP1,
                                  pool_bytes_per_token=131_072, cache=cache)
    assert trt.kv_budget("1.2.1", **kwargs).tokens == down
    assert trt.kv_budget("1.1.0", **kwargs).tokens == up


def test_max_gpu_total_bytes_does_not_size_the_standard_pool() -> None:
    budget = trt.kv_budget("1.2.1", total_bytes=H100, weight_bytes=16_060_522_496,
                           activation_bytes=905_969_664, non_torch_bytes=NON_TORCH_TP1,
                           pool_bytes_per_token=131_072,
                           cache=trt.TrtllmCacheConfig(max_gpu_total_bytes=10 * 1024**3))
    assert budget.memory_bytes == 10 * 1024**3 and budget.tokens == 461_440


def test_which_releases() -> None:
    assert trt.applies("1.2.1") and trt.applies(None) and trt.applies("1.0.0")
    assert not trt.applies("0.21.0") and trt.applies("0.21.0", "pytorch")
    assert not trt.applies("1.2.1", "tensorrt")
    assert trt.rounds_down("1.2.0") and not trt.rounds_down("1.1.0")


# --- kvlint check --engine trtllm, end to end ----------------------------------------------------

def test_llama_8b_tp1_end_to_end() -> None:
    cap, kv = check(LLAMA31_8B, "--gpu", "H100")
    weights = 16_060_522_496  # 8,030,261,248 parameters x 2 B (kvlint's estimate)
    overhead = 905_969_664 + NON_TORCH_TP1
    assert kv["bytes_per_token_per_gpu"] == 131_072
    assert cap["weight_bytes_per_gpu"] == weights
    assert cap["gpu_memory_utilization"] == 0.9
    assert cap["overhead_bytes_per_gpu"] == overhead == 1_757_413_376
    assert cap["kv_budget_bytes_per_gpu"] == int((H100 - weights - overhead) * 0.9) \
        == 60_482_433_024
    assert cap["max_tokens"] == 461_440 and cap["kv_tokens_capped_by"] is None
    assert cap["max_sequences"] == 60_482_433_024 // (131_072 * 131_072) == 3


def test_llama_8b_tp2_end_to_end() -> None:
    cap, kv = check(LLAMA31_8B, "--gpu", "H100", "--tp", "2")
    weights = cap["weight_bytes_per_gpu"]
    assert weights == 8_030_527_488
    overhead = 8192 * 2 * (3 * 14_336 // 2 + 3 * 4096) + NON_TORCH_TP2
    assert cap["overhead_bytes_per_gpu"] == overhead == 3_337_617_408
    budget = int((H100 - weights - overhead) * 0.9)
    assert cap["kv_budget_bytes_per_gpu"] == budget == 66_287_244_902
    assert kv["bytes_per_token_per_gpu"] == 65_536
    assert cap["max_tokens"] == budget // 65_536 // 32 * 32 == 1_011_456


def test_deepseek_v3_mla_end_to_end() -> None:
    """The latent (576 x 61 layers x 2 B) on every rank; the estimate equals the pool."""
    cap, kv = check(DEEPSEEK_V3, "--gpu", "H200", "--tp", "8")
    weights = cap["weight_bytes_per_gpu"]
    assert kv["bytes_per_token_per_gpu"] == 61 * 576 * 2 == 70_272
    # MLP width: max(dense 18,432, 8 experts x 2,048); hidden 7,168
    overhead = 8192 * 2 * (3 * 18_432 // 8 + 3 * 7168) + NON_TORCH_TP2
    assert cap["overhead_bytes_per_gpu"] == overhead == 3_249_537_024
    budget = int((H200 - weights - overhead) * 0.9)
    assert cap["kv_budget_bytes_per_gpu"] == budget
    assert cap["max_tokens"] == budget // 70_272 // 32 * 32


def test_mixtral_end_to_end() -> None:
    cap, kv = check(MIXTRAL, "--gpu", "H100", "--tp", "2")
    weights = cap["weight_bytes_per_gpu"]
    # MLP width: 2 experts x 14,336 routed per token (kvlint's ModelDims)
    overhead = 8192 * 2 * (3 * 28_672 // 2 + 3 * 4096) + NON_TORCH_TP2
    assert cap["overhead_bytes_per_gpu"] == overhead == 3_689_938_944
    budget = int((H100 - weights - overhead) * 0.9)
    assert cap["kv_budget_bytes_per_gpu"] == budget
    assert kv["bytes_per_token_per_gpu"] == 2 * 32 * 4 * 128 * 2 == 65_536
    assert cap["max_tokens"] == budget // 65_536 // 32 * 32


def test_kv_heads_below_tp_use_the_estimate() -> None:
    """Llama-3.1-70B at tp 16: 8 KV heads, one per GPU (40,960 B/token), estimate 20,480:
    max_tokens from the estimate is twice what the memory holds, so the final step's
    ``fraction x free / pool bytes`` (free = total - weights - non-torch) decides."""
    cap, kv = check(LLAMA31_70B, "--gpu", "H100", "--tp", "16")
    weights = cap["weight_bytes_per_gpu"]
    assert kv["bytes_per_token_per_gpu"] == 40_960
    available = cap["kv_budget_bytes_per_gpu"]
    assert available // 20_480 > 0.9 * (H100 - weights - NON_TORCH_TP2) / 40_960
    tokens = int(0.9 * (H100 - weights - NON_TORCH_TP2) / 40_960 // 32) * 32
    assert cap["max_tokens"] == tokens == 1_613_120
    assert tokens > available // 40_960  # beyond the fraction of the profiled free memory


def test_attention_dp_keeps_every_kv_head() -> None:
    """``enable_attention_dp``: the KV manager's tp is 1, each rank holds all 8 heads."""
    cap, kv = check(LLAMA31_8B, "--gpu", "H100", "--tp", "8", "--dp", "8", "--dp-attention")
    assert kv["bytes_per_token_per_gpu"] == 131_072
    weights = cap["weight_bytes_per_gpu"]
    # activations at attention tp 1, NCCL of the 8-GPU group
    overhead = 905_969_664 + (300 + 1843 + 512) * MIB
    assert cap["overhead_bytes_per_gpu"] == overhead
    budget = int((H100 - weights - overhead) * 0.9)
    assert cap["kv_budget_bytes_per_gpu"] == budget
    assert cap["max_tokens"] == budget // 131_072 // 32 * 32


def test_overhead_given_keeps_the_generic_budget() -> None:
    cap, _ = check(LLAMA31_8B, "--gpu", "H100", "--overhead", "2")
    weights = 16_060_522_496
    assert cap["overhead_bytes_per_gpu"] == 2 * 1024**3
    assert cap["max_tokens"] == int((H100 - weights - 2 * 1024**3) * 0.9) // 131_072


def test_yaml_options_reach_the_pool(tmp_path: Path) -> None:
    """``--config`` / ``--extra_llm_api_options`` keys: the fraction, ``max_num_tokens``,
    ``kv_cache_config.max_tokens`` and ``tokens_per_block``."""
    path = tmp_path / "llm_api_options.yaml"
    path.write_text("model: org/llama\nmax_num_tokens: 4096\nkv_cache_config:\n"
                    "  free_gpu_memory_fraction: 0.85\n  max_tokens: 100000\n"
                    "  tokens_per_block: 64\n", encoding="utf-8")
    cap, _ = capacity("lint", str(path), "--gpu", "H100", "--model-map",
                      f"org/llama={LLAMA31_8B}")
    weights = 16_060_522_496
    overhead = 4096 * 110_592 + NON_TORCH_TP1
    assert cap["gpu_memory_utilization"] == 0.85
    assert cap["overhead_bytes_per_gpu"] == overhead == 1_304_428_544
    assert cap["kv_budget_bytes_per_gpu"] == int((H100 - weights - overhead) * 0.85)
    assert cap["max_tokens"] == 100_000 // 64 * 64 == 99_968
    assert cap["kv_tokens_capped_by"] == "kv_cache_config.max_tokens (line 5)"
    path.write_text(path.read_text(encoding="utf-8").replace("100000", "10000000"),
                    encoding="utf-8")
    cap, _ = capacity("lint", str(path), "--gpu", "H100", "--model-map",
                      f"org/llama={LLAMA31_8B}")
    assert cap["max_tokens"] == int((H100 - weights - overhead) * 0.85) // 131_072 // 64 * 64
    assert cap["kv_tokens_capped_by"] is None


def test_text_names_the_fraction() -> None:
    result = CliRunner().invoke(main, ["check", str(LLAMA31_8B), "--engine", "trtllm",
                                       "--gpu", "H100", "--no-plugins", "--isolated"])
    assert "free_gpu_memory_fraction (of the memory left after weights) 0.90" in result.stdout


@pytest.mark.parametrize(("cap", "expected"), [(2560, 2560), (10**7, None)])
def test_the_engine_workflows_token_cap_is_the_smaller_of_the_two(cap: int,
                                                                 expected: int | None) -> None:
    """TensorRT-LLM 0.8 (the TensorRT-engine workflow): ``max_tokens_in_paged_kv_cache`` with
    a memory fraction gives the smaller of the two token counts (Triton's 2,560 on a 3090 at
    0.5, from a public start-up log); a cap above the fraction's tokens changes nothing."""
    def check(*extra: str) -> dict[str, Any]:
        out = CliRunner().invoke(main, [
            "check", str(CONFIGS / "meta-llama--Meta-Llama-3-8B.json"), "--engine", "trtllm",
            "--gpu", "RTX-3090", "--engine-version", "0.8.0", "--gpu-memory-utilization",
            "0.5", "--format", "json", "--no-plugins", "--isolated", "--offline", *extra])
        capacity = json.loads(out.stdout)["results"][0]["capacity"]
        assert isinstance(capacity, dict)
        return capacity

    free = check()
    capped = check("--max-total-tokens", str(cap))
    assert capped["max_tokens"] == (expected or free["max_tokens"])
    assert (capped["kv_tokens_capped_by"] is not None) == (expected is not None)


@pytest.mark.parametrize(("engine", "refused"), [("trtllm", False), ("lmdeploy", False),
                                                 ("vllm", True)])
def test_a_fraction_of_free_memory_does_not_shrink_what_the_weights_may_use(
        engine: str, refused: bool) -> None:
    """Llama-3-8B's 15 GiB of weights on a 24 GB card at a fraction of 0.5: TensorRT-LLM and
    LMDeploy take the fraction of the memory the weights leave (a public 0.8.0 log of this
    start kept 2,560 tokens), vLLM of the whole GPU (11.8 GiB: the weights do not fit)."""
    out = CliRunner().invoke(main, [
        "check", str(CONFIGS / "meta-llama--Meta-Llama-3-8B.json"), "--engine", engine,
        "--gpu", "RTX-3090", "--gpu-memory-utilization", "0.5", "--format", "json",
        "--no-plugins", "--isolated", "--offline"])
    codes = [f["code"] for f in json.loads(out.stdout)["results"][0]["findings"]]
    assert ("KV503" in codes) is refused
