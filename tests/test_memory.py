"""vLLM's start-up memory profile (kvlint/model/memory.py): each term's arithmetic, and the
predicted KV tokens against real start-up logs (fixtures/vllm_logs, read by kvlint's parser)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.loaders.vllm_log import read_log
from kvlint.model.memory import (
    GIB,
    MIB,
    EngineLimits,
    ModelDims,
    activation_peak_bytes,
    block_tokens,
    cuda_graph_bytes,
    default_batch_limits,
    default_block_size,
    default_utilization,
    kv_margin_bytes,
    memory_terms,
    model_dims,
    moe_workspace_bytes,
    non_torch_bytes,
)
from tests.helpers import CONFIGS, ROOT

LLAMA_DIMS = ModelDims(hidden_size=4096, intermediate_size=14336, vocab_size=128_256)


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def test_model_dims_dense_moe_and_multimodal() -> None:
    assert model_dims(config("meta-llama--Meta-Llama-3.1-8B")) == LLAMA_DIMS
    # Qwen3-30B-A3B: 8 experts x 768 per token beat the config's 6,144 dense width; every
    # layer routes (no mlp_only_layers), so no dense layer width
    assert model_dims(config("Qwen--Qwen3-30B-A3B")) == ModelDims(
        2048, 6144, 151_936, moe_topk=8, expert_width=768)
    assert model_dims({"moe_intermediate_size": 768, "num_experts_per_tok": 8,
                       "intermediate_size": 1024, "hidden_size": 2048,
                       "vocab_size": 100}) == ModelDims(2048, 6144, 100, moe_topk=8,
                                                       expert_width=768)
    # Mixtral: no moe_intermediate_size, every expert intermediate_size wide: 2 x 14,336
    assert model_dims(config("mistralai--Mixtral-8x7B-v0.1")) == ModelDims(
        4096, 28672, 32000, moe_topk=2, expert_width=14336)
    # DeepSeek-V2-Lite: its first layer is dense (first_k_dense_replace 1, 10,944 wide)
    assert model_dims(config("deepseek-ai--DeepSeek-V2-Lite")) == ModelDims(
        2048, 10944, 102_400, moe_topk=6, expert_width=1408, dense_width=10944)
    # an FP8 checkpoint's experts run another kernel: marked, not sized
    assert model_dims(config("Qwen--Qwen3-235B-A22B-FP8")).quantized  # type: ignore[union-attr]
    assert model_dims(config("Qwen--Qwen3-VL-8B-Instruct")) == ModelDims(4096, 12288, 151_936)
    assert model_dims({"hidden_size": 8, "vocab_size": 10, "torch_dtype": "float32"}) == \
        ModelDims(8, 32, 10, 4)
    assert model_dims({"hidden_size": 8}) is None
    assert model_dims({"hidden_size": True, "vocab_size": 10}) is None


@pytest.mark.parametrize(("version", "gib", "name", "expected"), [
    ("0.33.0", 79.2, "H100-80GB", (8192, 1024)),
    ("0.33.0", 79.2, "A100-80GB", (2048, 256)),     # PR #17885: A100s keep the small tier
    ("0.8.5", 79.2, "A100-80GB", (8192, 1024)),     # ... not yet in 0.8.5
    ("0.33.0", 178.0, "B200", (16384, 1024)),
    ("0.11.0", 178.0, "B200", (8192, 1024)),        # no 160 GiB tier in 0.11.0
    ("0.27.1", 178.0, "B200", (8192, 1024)),        # ... nor in 0.27.1 (read in the wheel)
    ("0.28.0", 178.0, "B200", (16384, 1024)),       # from 0.28.0
    ("0.9.0", 79.2, "A100-80GB", (2048, 256)),      # A100 exception from 0.9.0
    ("0.33.0", 22.5, "L4", (2048, 256)),
    ("0.34.0", 178.0, "B200", (16384, 1024)),       # tiers unchanged (arg_utils.py@v0.34.0)
    ("0.34.0", 79.2, "A100-80GB", (2048, 256)),
    ("0.34.0", 79.2, "H100-80GB", (8192, 1024)),
    (None, 22.5, "L4", (2048, 256)),
])
def test_default_batch_limits_v1(version: str | None, gib: float, name: str,
                                 expected: tuple[int, int]) -> None:
    assert default_batch_limits(version, int(gib * GIB), name, 8192) == expected


def test_default_batch_limits_v0_profiles_the_whole_context() -> None:
    assert default_batch_limits("0.6.4", 24 * GIB, "RTX 3090", 20000) == (20000, 256)
    assert default_batch_limits("0.6.4", 24 * GIB, "RTX 3090", 1000) == (2048, 256)
    assert default_batch_limits("0.6.5", 24 * GIB, "RTX 3090", 40000) == (2048, 256)  # chunked
    # read in the wheels: chunked prefill's default was 512 tokens through 0.6.4 ...
    assert default_batch_limits("0.6.4", 24 * GIB, "RTX 3090", 40000) == (512, 256)
    # ... and 0.5.0 had no automatic chunked prefill for long contexts
    assert default_batch_limits("0.5.0", 24 * GIB, "RTX 3090", 40000) == (40000, 256)


def test_activation_peak_is_the_larger_of_forward_and_sampler() -> None:
    # forward: 2 B x (3 x 14,336 + 3 x 4,096) = 110,592 B per token
    assert activation_peak_bytes(LLAMA_DIMS, 8192, 1, 1) == 8192 * 110_592
    # at tp=2 the MLP's intermediate is split: 2 x (3 x 7,168 + 3 x 4,096) = 67,584 B
    assert activation_peak_bytes(LLAMA_DIMS, 8192, 1, 2) == 8192 * 67_584
    # sampler: 1,024 rows x 128,256 x 16 B beats 2,048 tokens of forward pass
    assert activation_peak_bytes(LLAMA_DIMS, 2048, 1024, 1) == 1024 * 128_256 * 16


def test_non_torch_and_cuda_graph_terms() -> None:
    assert non_torch_bytes(1) == 300 * MIB
    assert non_torch_bytes(2) == non_torch_bytes(8) == (300 + 1843) * MIB
    # V1 before 0.11 takes no tp-only buffer into its profile; V0 and 0.11+ do; PCIe never
    assert non_torch_bytes(4, "nvlink", "0.10.1.1") == non_torch_bytes(4, "nvlink", "0.8.0") \
        == 300 * MIB
    assert non_torch_bytes(4, "nvlink", "0.11.0") == non_torch_bytes(2, "nvlink", "0.7.3") \
        == non_torch_bytes(2, "nvlink", "0.22.0") == (300 + 1843) * MIB
    assert non_torch_bytes(4, "pcie", "0.22.0") == 300 * MIB
    assert cuda_graph_bytes("0.19.0") == 0
    assert cuda_graph_bytes("0.20.0") == cuda_graph_bytes("0.21.0") == 512 * MIB
    assert cuda_graph_bytes(None) == 512 * MIB
    assert cuda_graph_bytes("not-a-version") == 512 * MIB


def test_non_torch_memory_of_a_v1_worker_before_graph_profiling() -> None:
    """A tp=1 V1 worker before 0.18.0 measures no CUDA-graph profile in its non-torch window
    (gpu_worker.py@v0.18.0 moved ``profile_cudagraph_memory`` inside it): 100 MiB, not 300."""
    assert non_torch_bytes(1, None, "0.8.0") == non_torch_bytes(1, None, "0.17.1") \
        == 100 * MIB
    assert non_torch_bytes(1, None, "0.18.0") == non_torch_bytes(1, None, "0.19.0") \
        == 300 * MIB
    # V0 (before 0.8, and pre-Ampere GPUs until 0.10.2) and an unread version keep 300 MiB
    assert non_torch_bytes(1, None, "0.7.3") == non_torch_bytes(1, None, None) == 300 * MIB
    assert non_torch_bytes(1, "pcie", "0.9.2", "T4") == 300 * MIB
    assert non_torch_bytes(1, "pcie", "0.9.2", "L4") == 100 * MIB
    # tp > 1 is unchanged: V1 before 0.11 the tp=1 base of the profile kvlint has logs for
    assert non_torch_bytes(2, "nvlink", "0.10.1.1") == 300 * MIB


def test_memory_terms_add_up() -> None:
    t = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=0.9,
                     weight_bytes=15 * GIB, dims=LLAMA_DIMS, tp=1, version="0.33.0",
                     limits=EngineLimits(8192, max_num_seqs=4))
    assert (t.profiled_tokens, t.sampler_rows) == (8192, 4)
    assert t.requested_bytes == int(80 * GIB * 0.9)
    assert t.activation_peak_bytes == 8192 * 110_592
    assert t.overhead_bytes == 8192 * 110_592 + 300 * MIB + 512 * MIB
    assert t.kv_memory_bytes == int(80 * GIB * 0.9) - 15 * GIB - t.overhead_bytes
    given = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=0.9,
                         weight_bytes=15 * GIB, dims=LLAMA_DIMS, tp=1, version="0.33.0",
                         limits=EngineLimits(8192, max_num_batched_tokens=512))
    assert (given.profiled_tokens, given.sampler_rows) == (512, 512)


def test_extensible_kv_cache_of_0_34() -> None:
    # vllm/config/cache.py@v0.34.0: DEFAULT_BLOCK_SIZE 64 (16 @v0.33.0), and an unset
    # gpu_memory_utilization resolves to 1.0 with the extensible KV cache (0.92 without)
    assert (default_block_size("0.33.0"), default_block_size("0.34.0")) == (16, 64)
    assert default_block_size(None) == 64  # unpinned: the newest known
    assert (default_utilization("0.33.0"), default_utilization("0.34.0")) == (None, 1.0)
    # extensible_kv_cache.py@v0.34.0 measure_kv_cache_bytes: the budget is capped at the
    # free memory less max(1 GiB, 0.75 x transient peak)
    assert kv_margin_bytes("0.33.0", 80 * GIB, 80 * GIB, 4 * GIB) == 0
    assert kv_margin_bytes("0.34.0", 80 * GIB, 80 * GIB, 512 * MIB) == GIB  # the floor
    assert kv_margin_bytes("0.34.0", 80 * GIB, 80 * GIB, 4 * GIB) == 3 * GIB  # 0.75 x 4 GiB
    # an explicit 0.9 leaves 8 GiB free: more than the margin, which then costs nothing
    assert kv_margin_bytes("0.34.0", 80 * GIB, int(80 * GIB * 0.9), 4 * GIB) == 0
    # 0.98 leaves 1.6 GiB: the margin takes the 1.4 GiB that are missing
    assert kv_margin_bytes("0.34.0", 80 * GIB, int(80 * GIB * 0.98), 4 * GIB) == \
        3 * GIB - (80 * GIB - int(80 * GIB * 0.98))
    t = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=1.0,
                     weight_bytes=15 * GIB, dims=LLAMA_DIMS, tp=1, version="0.34.0",
                     limits=EngineLimits(8192, max_num_seqs=4))
    peak = 8192 * 110_592
    assert t.activation_peak_bytes == peak and t.block_size == 64
    assert t.kv_margin_bytes == GIB  # 0.75 x 864 MiB = 648 MiB: the 1 GiB floor
    assert t.kv_memory_bytes == 80 * GIB - 15 * GIB - (peak + 300 * MIB + 512 * MIB + GIB)


def test_block_tokens_rounds_down_to_whole_blocks() -> None:
    assert block_tokens(16 * 131_072 * 10 + 131_072 * 15, 131_072) == 160
    assert block_tokens(-1, 131_072) == 0
    assert block_tokens(10**9, 0) == 0


# --- start-up logs ----------------------------------------------------------------------------
# Real logs in fixtures/vllm_logs (SOURCES.md): GPU total, utilization, max_model_len, tp/pp and
# version read from the log by kvlint's parser unless the log lacks them (then the thread's:
# bench/capacity_vs_logs.py gives the reasons). kvlint check then predicts vLLM's "GPU KV cache
# size"; printed: the log's tokens, or the tokens its printed KV memory holds.
LOGS: list[tuple[str, str, dict[str, Any], int]] = [
    ("llama-3.1-8b-v0-rtx3090-20k.log", "meta-llama--Meta-Llama-3.1-8B",
     {"version": "0.6.4", "max_model_len": 20000}, 32_032),
    ("llama-3.1-8b-v0-rtx3090-29k.log", "meta-llama--Meta-Llama-3.1-8B",
     {"version": "0.6.4", "max_model_len": 29000}, 24_448),
    ("llama-3-8b-v0-h100-profile.log", "meta-llama--Meta-Llama-3-8B",
     {"version": "0.6.5", "max_model_len": 8192}, 449_616),
    ("qwen3-8b-v1-lmcache-cudagraph.log", "Qwen--Qwen3-8B",
     {"version": "0.21.0", "total": 23.53}, 46_208),
    ("llmd-llama-3.1-8b-h100-tp1-8192.log", "meta-llama--Meta-Llama-3.1-8B", {}, 475_312),
    ("llmd-llama-3.1-8b-h100-tp1-8192-kvfp8.log", "meta-llama--Meta-Llama-3.1-8B", {}, 950_640),
    ("llmd-llama-3.1-8b-h100-tp2-8192.log", "meta-llama--Meta-Llama-3.1-8B", {}, 1_043_680),
    ("llmd-llama-3.1-8b-h100-tp4-8192.log", "meta-llama--Meta-Llama-3.1-8B", {}, 2_209_904),
    ("llmd-llama-3.1-8b-h100-pp2-8192.log", "meta-llama--Meta-Llama-3.1-8B", {}, 1_073_168),
    ("llmd-llama-3.1-8b-h100-pp4-8192.log", "meta-llama--Meta-Llama-3.1-8B", {}, 2_252_848),
    ("llmd-qwen2.5-7b-h100-tp2-8192.log", "Qwen--Qwen2.5-7B", {}, 2_386_432),
    # MoE from 0.14.0: the fused-MoE workspace stays under the sampler (moe_workspace_bytes)
    ("llmd-qwen3-30b-a3b-h100-tp1-8192.log", "Qwen--Qwen3-30B-A3B", {}, 166_544),
    ("llmd-mixtral-8x7b-h100-tp2-8192.log", "mistralai--Mixtral-8x7B-v0.1", {}, 466_880),
    ("llmd-qwen2.5-72b-h100-tp2-8192.log", "Qwen--Qwen2.5-72B", {}, 20_336),
    ("llmd-deepseek-v2-lite-h100-tp1-8192.log", "deepseek-ai--DeepSeek-V2-Lite", {}, 1_507_664),
]


@pytest.mark.parametrize(("log_name", "name", "given", "expected"), LOGS)
def test_predicted_tokens_within_five_percent_of_the_log(
        log_name: str, name: str, given: dict[str, Any], expected: int) -> None:
    log = read_log(ROOT / "fixtures" / "vllm_logs" / log_name)
    total = given.get("total", log.total_gpu_gib)
    length = given.get("max_model_len", log.max_model_len or log.concurrency_tokens)
    version = given.get("version", log.version)
    args = ["check", str(CONFIGS / f"{name}.json"), "--gpu-memory", str(total),
            "--gpu-memory-utilization", str(log.gpu_memory_utilization),
            "--max-model-len", str(length), "--tp", str(log.tp or 1), "--pp", str(log.pp or 1),
            "--engine-version", str(version), "--format", "json", "--no-plugins"]
    if log.kv_cache_dtype not in (None, "auto"):
        args += ["--kv-cache-dtype", str(log.kv_cache_dtype)]
    result = CliRunner().invoke(main, args)
    data = json.loads(result.stdout)["results"][0]
    predicted = data["capacity"]["max_tokens"]
    printed = log.capacity_tokens
    if printed is None:  # only the KV memory was printed: the tokens it holds
        assert log.kv_memory_gib is not None
        page = 16 * data["kv"]["bytes_per_token_per_gpu"]
        printed = int(log.kv_memory_gib * GIB) // page * 16
    assert predicted == expected
    assert abs(predicted - printed) / printed <= 0.05, (log_name, predicted, printed)


# --- --max-num-batched-tokens and pipeline stages, by hand -----------------------------------
def _profile(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), "--gpu-memory", "79.19",
        "--gpu-memory-utilization", "0.95", "--engine-version", "0.19.0", *args,
        "--format", "json", "--no-plugins"])
    assert result.exit_code == 0, result.output
    capacity: dict[str, Any] = json.loads(result.stdout)["results"][0]["capacity"]
    return capacity


def test_max_num_batched_tokens_sizes_the_profile_run() -> None:
    # 32,768 tokens x 110,592 B (forward) beat 1,024 rows x 128,256 x 16 B (sampler)
    big = _profile("--max-num-batched-tokens", "32768")["memory_profile"]
    assert (big["profiled_tokens"], big["sampler_rows"]) == (32768, 1024)
    assert big["activation_peak_bytes"] == 32768 * 110_592 == 3_623_878_656
    # 512 tokens: 512 sampler rows (min(tokens, max_num_seqs 1,024)) x 128,256 x 16 B
    small = _profile("--max-num-batched-tokens", "512")["memory_profile"]
    assert (small["profiled_tokens"], small["sampler_rows"]) == (512, 512)
    assert small["activation_peak_bytes"] == 512 * 128_256 * 16 == 1_050_673_152
    assert small["kv_memory_bytes"] - big["kv_memory_bytes"] == 3_623_878_656 - 1_050_673_152
    # the default on an >= 70 GiB GPU: 8,192 tokens, 1,024 rows: the sampler's 2,101,346,304
    default = _profile()["memory_profile"]
    assert (default["profiled_tokens"], default["activation_peak_bytes"]) == (8192, 2_101_346_304)


def test_max_num_batched_tokens_bad_value_is_exit_2() -> None:
    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), "--gpu", "H100",
        "--max-num-batched-tokens", "0", "--no-plugins"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_pipeline_budget_is_the_fullest_stage() -> None:
    # Llama-3.1-8B at pp 4: 32 layers of (16,060,522,496 - 2 x 1,050,673,152) / 32 =
    # 436,224,256 B; stage 0 holds 8 of them and the embeddings (128,256 x 4,096 x 2 B), the
    # last stage 8 and the LM head: 4,540,467,200 B (vLLM 0.19 printed 4.26 GiB on stage 0)
    cap = _profile("--pp", "4")
    assert cap["weight_bytes_per_gpu"] == 8 * 436_224_256 + 1_050_673_152 == 4_540_467_200
    assert cap["memory_profile"]["weight_bytes"] == 4_540_467_200
    assert cap["kv_budget_bytes_per_gpu"] == cap["memory_profile"]["kv_memory_bytes"]


# --- the profile's sampler pass by release (issue 29) ---------------------------------------


@pytest.mark.parametrize(("version", "rows", "switch", "expected"), [
    ("0.6.5", 256, None, 38),    # V0 sorts (its FlashInfer sampler only with the variable)
    ("0.6.5", 256, True, 16),
    ("0.10.1", 1024, None, 38),  # V1 without the optional FlashInfer: the sorting sampler
    ("0.11.1", 1024, True, 16),
    ("0.11.2", 1024, None, 38),  # FlashInfer's sampler is opt-in from 0.11.2
    ("0.16.0", 1024, False, 38),
    ("0.17.0", 1024, None, 16),  # Triton top-k/top-p for 8 rows or more
    ("0.17.0", 4, None, 38),
    ("0.34.0", 1024, None, 16),
    (None, 1024, None, 16),      # the newest known
])
def test_sampler_bytes_per_logit_by_release(version: str | None, rows: int,
                                            switch: bool | None, expected: int) -> None:
    from kvlint.model.memory import sampler_bytes_per_logit

    assert sampler_bytes_per_logit(version, rows, switch) == expected


def test_the_sorting_sampler_sets_the_peak_of_a_large_vocabulary() -> None:
    from kvlint.model.memory import SORTING_SAMPLER_BYTES_PER_LOGIT, ModelDims

    # gpt-oss-120b: 1,024 sampler rows (H100 tier) x 201,088 entries x 38 B = 7.29 GiB, above
    # the forward pass of 1,024 tokens
    dims = ModelDims(hidden_size=2880, intermediate_size=4 * 2880, vocab_size=201_088)
    assert SORTING_SAMPLER_BYTES_PER_LOGIT == 38
    assert activation_peak_bytes(dims, 1024, 1024, 1, 38) == 1024 * 201_088 * 38


def test_the_flashinfer_sampler_variable_reaches_the_profile() -> None:
    base = ["check", str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), "--gpu", "H100",
            "--engine-version", "0.12.0", "--format", "json", "--no-plugins", "--isolated"]
    sorted_ = CliRunner().invoke(main, base)
    fused = CliRunner().invoke(main, base, env={"VLLM_USE_FLASHINFER_SAMPLER": "1"})
    peak = [json.loads(r.stdout)["results"][0]["capacity"]["memory_profile"]
            ["activation_peak_bytes"] for r in (sorted_, fused)]
    assert peak == [1024 * 128_256 * 38, 1024 * 128_256 * 16]


def test_non_torch_memory_at_tp_above_one_follows_the_interconnect() -> None:
    from kvlint.model.hardware import INTERCONNECTS, load_gpus
    from kvlint.model.memory import NON_TORCH_BYTES, NON_TORCH_TP_BYTES, non_torch_bytes

    assert all(gpu.interconnect in INTERCONNECTS for gpu in load_gpus())
    assert non_torch_bytes(1, "nvlink") == NON_TORCH_BYTES
    assert non_torch_bytes(2, "nvlink") == NON_TORCH_BYTES + NON_TORCH_TP_BYTES
    assert non_torch_bytes(4, "pcie") == NON_TORCH_BYTES  # no custom all-reduce past 2 cards
    assert non_torch_bytes(2, None) == NON_TORCH_BYTES + NON_TORCH_TP_BYTES  # unknown: more

    def non_torch(gpu: str) -> int:
        result = CliRunner().invoke(main, [
            "check", str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), "--gpu", gpu,
            "--tp", "2", "--engine-version", "0.19.0", "--format", "json", "--no-plugins",
            "--isolated"])
        profile = json.loads(result.stdout)["results"][0]["capacity"]["memory_profile"]
        return int(profile["non_torch_bytes"])

    assert non_torch("H100") == NON_TORCH_BYTES + NON_TORCH_TP_BYTES
    assert non_torch("L40S") == NON_TORCH_BYTES


@pytest.mark.parametrize(("version", "gpu", "v0"), [
    ("0.7.3", "H100-80GB", True),
    ("0.8.5", "H100-80GB", False),
    ("0.8.5", "T4", True),           # V1 falls back below compute capability 8.0
    ("0.10.1.1", "V100-32GB", True),
    ("0.10.2", "T4", False),         # V1 runs Turing and Volta from 0.10.2
    ("0.8.5", "custom (15 GiB)", False),
    (None, "T4", False),
])
def test_pre_ampere_gpus_run_v0_until_0_10_2(version: str | None, gpu: str, v0: bool) -> None:
    from kvlint.model.memory import default_batch_limits, runs_v0

    assert runs_v0(version, gpu) is v0
    if version and version.startswith("0.8"):
        # V0 profiles max(max_model_len, 2048) tokens and 256 sequences; V1 on a 15 GiB GPU
        # 2048 and 256 too, so the difference shows at a longer max_model_len
        assert default_batch_limits(version, 15 * 2**30, gpu, 8192) == \
            ((8192, 256) if v0 else (2048, 256))


@pytest.mark.parametrize(("version", "image", "bytes_per_logit"), [
    ("0.10.1.1", "vllm/vllm-openai:v0.10.1.1", 16),  # the image ships FlashInfer: on
    ("0.11.0", "vllm/vllm-openai:v0.11.0", 16),
    ("0.11.2", "vllm/vllm-openai:v0.11.2", 38),      # opt-in from 0.11.2
    # 0.8.x turns it off for FlashInfer >= 0.2.3 and its image ships 0.2.1.post2: on (a
    # held-out 0.8.5 log on 2 x H100 matches kvlint with it to 0.02 %, not without)
    ("0.8.5", "vllm/vllm-openai:v0.8.5", 16),
    ("0.9.2", "vllm/vllm-openai:v0.9.2", 38),        # 0.9.x's image not read: unjudged
    ("0.10.1.1", "python:3.12", 38),                 # a pip install: no FlashInfer
])
def test_vllms_own_image_samples_with_flashinfer_where_the_release_does(
        tmp_path: Path, version: str, image: str, bytes_per_logit: int) -> None:
    from kvlint.model.memory import image_flashinfer_sampler

    official = image.startswith("vllm/")
    assert image_flashinfer_sampler(version, official) == (
        True if bytes_per_logit == 16 else None)
    command = ("[vllm, serve, meta-llama/Llama-3.1-8B]" if official else
               f"[sh, -c, 'pip install vllm=={version} && vllm serve meta-llama/Llama-3.1-8B']")
    path = tmp_path / "deploy.yaml"
    path.write_text(f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: llm}}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: {image}
        command: {command}
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
""", encoding="utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(path), "--gpu", "H100", "--format", "json", "--no-plugins", "--isolated",
        "--no-cache", "--model-map",
        f"meta-llama/Llama-3.1-8B={CONFIGS / 'meta-llama--Meta-Llama-3.1-8B.json'}"])
    (served,) = json.loads(result.stdout)["results"]
    assert served["serving"]["engine_version"] == version
    profile = served["capacity"]["memory_profile"]
    assert profile["activation_peak_bytes"] == 1024 * 128_256 * bytes_per_logit


def test_pipeline_stages_are_sized_each_with_its_own_layers_and_memory() -> None:
    """vLLM sizes each stage's blocks from its own profile (the sampler on the last stage
    only) and gives every worker the fewest: a held-out 4 x L4 tp 2 x pp 2 DeepSeek-V2-Lite
    log printed 12.13 GiB on stage 0 (14 layers) and 11.33 GiB on stage 1 (13 layers and
    the sampler) and 807,792 tokens, stage 0's blocks."""
    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json"), "--gpu", "L4",
        "--tp", "2", "--pp", "2", "--engine-version", "0.9.2", "--max-model-len", "1024",
        "--format", "json", "--offline", "--isolated", "--no-plugins"])
    cap = json.loads(result.stdout)["results"][0]["capacity"]
    profile = cap["memory_profile"]
    stage0_bytes = 14 * 576 * 2  # the latent, replicated over tp, on stage 0's 14 layers
    page = stage0_bytes * 16
    assert cap["max_tokens"] == profile["kv_memory_bytes"] // page * 16
    assert profile["activation_peak_bytes"] < 256 * 102_400 * 4  # no sampler on stage 0
    assert abs(cap["max_tokens"] - 807_792) / 807_792 < 0.05


# --- the fused-MoE workspace (vLLM 0.14.0 on), by hand ------------------------------------------
QWEN3_30B = ModelDims(2048, 6144, 151_936, moe_topk=8, expert_width=768)
MIXTRAL = ModelDims(4096, 28672, 32000, moe_topk=2, expert_width=14336)


@pytest.mark.parametrize(("dims", "tokens", "tp", "version", "expected"), [
    # Qwen3-30B-A3B, 8,192 tokens, tp 1: N = 1,536, K = 2,048:
    # (8,192 x 8 x max(768, 2,048) + 8,192 x 8 x max(1,536, 2,048)) x 2 B
    (QWEN3_30B, 8192, 1, "0.19.0", 2 * 8192 * 8 * 2048 * 2),
    # Mixtral at tp 2: N = 14,336 (2 x 14,336 / 2), K = 4,096
    (MIXTRAL, 8192, 2, "0.19.0", (8192 * 2 * 7168 + 8192 * 2 * 14336) * 2),
    # through 0.17.1 a batch above 16,384 tokens is chunked: two chunk-sized views and the
    # whole batch's output (32,768 x 2,048 x 2 B)
    (QWEN3_30B, 32768, 1, "0.17.1", 2 * 16384 * 8 * 2048 * 2 + 32768 * 2048 * 2),
    (QWEN3_30B, 32768, 1, "0.18.0", 2 * 32768 * 8 * 2048 * 2),  # no chunking from 0.18.0
    (QWEN3_30B, 8192, 1, "0.13.0", 0),  # buffers freed after each layer before 0.14.0
    (QWEN3_30B, 8192, None, "0.19.0", 0),  # attention DP: not sized
    (replace(QWEN3_30B, quantized=True), 8192, 1, "0.19.0", 0),  # other kernels
    (LLAMA_DIMS, 8192, 1, "0.19.0", 0),  # dense
])
def test_moe_workspace_from_the_kernels_shapes(dims: ModelDims, tokens: int, tp: int | None,
                                               version: str, expected: int) -> None:
    assert moe_workspace_bytes(dims, tokens, tp, version) == expected


def test_the_workspace_stays_under_the_sampler() -> None:
    """Qwen3-30B-A3B at vLLM 0.19.0 on H100 (the llm-d log prints a 2.68 GiB peak): the
    sampler's 1,024 rows x 151,936 x 16 B plus the 0.5 GiB workspace; the forward pass beside
    it is only the hidden streams (3 x 2,048 x 2 B a token), below the sampler."""
    t = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=0.95,
                     weight_bytes=57 * GIB, dims=QWEN3_30B, tp=1, version="0.19.0",
                     limits=EngineLimits(8192, moe_tp=1))
    assert t.activation_peak_bytes == 1024 * 151_936 * 16 + 2 * 8192 * 8 * 2048 * 2
    without = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=0.95,
                           weight_bytes=57 * GIB, dims=QWEN3_30B, tp=1, version="0.19.0",
                           limits=EngineLimits(8192))  # no plain tp given: not sized
    assert without.activation_peak_bytes == 1024 * 151_936 * 16
