"""vLLM's start-up memory profile (kvlint/model/memory.py): each term's arithmetic, and the
predicted KV tokens against start-up logs vLLM printed (numbers typed in with their URL)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.model.memory import (
    GIB,
    MIB,
    ModelDims,
    activation_peak_bytes,
    block_tokens,
    cuda_graph_bytes,
    default_batch_limits,
    memory_terms,
    model_dims,
    non_torch_bytes,
)
from tests.helpers import CONFIGS

LLAMA_DIMS = ModelDims(hidden_size=4096, intermediate_size=14336, vocab_size=128_256)


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def test_model_dims_dense_moe_and_multimodal() -> None:
    assert model_dims(config("meta-llama--Meta-Llama-3.1-8B")) == LLAMA_DIMS
    # Qwen3-30B-A3B: 8 experts x 768 per token beat the config's 6,144 dense width
    assert model_dims(config("Qwen--Qwen3-30B-A3B")) == ModelDims(2048, 6144, 151_936)
    assert model_dims({"moe_intermediate_size": 768, "num_experts_per_tok": 8,
                       "intermediate_size": 1024, "hidden_size": 2048,
                       "vocab_size": 100}) == ModelDims(2048, 6144, 100)
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
    ("0.33.0", 22.5, "L4", (2048, 256)),
    (None, 22.5, "L4", (2048, 256)),
])
def test_default_batch_limits_v1(version: str | None, gib: float, name: str,
                                 expected: tuple[int, int]) -> None:
    assert default_batch_limits(version, int(gib * GIB), name, 8192) == expected


def test_default_batch_limits_v0_profiles_the_whole_context() -> None:
    assert default_batch_limits("0.6.4", 24 * GIB, "RTX 3090", 20000) == (20000, 256)
    assert default_batch_limits("0.6.4", 24 * GIB, "RTX 3090", 1000) == (2048, 256)
    assert default_batch_limits("0.6.4", 24 * GIB, "RTX 3090", 40000) == (2048, 256)  # chunked


def test_activation_peak_is_the_larger_of_forward_and_sampler() -> None:
    # forward: 2 B x (3 x 14,336 + 3 x 4,096) = 110,592 B per token
    assert activation_peak_bytes(LLAMA_DIMS, 8192, 1, 1) == 8192 * 110_592
    # at tp=2 the MLP's intermediate is split: 2 x (3 x 7,168 + 3 x 4,096) = 67,584 B
    assert activation_peak_bytes(LLAMA_DIMS, 8192, 1, 2) == 8192 * 67_584
    # sampler: 1,024 rows x 128,256 x 10 B beats 2,048 tokens of forward pass
    assert activation_peak_bytes(LLAMA_DIMS, 2048, 1024, 1) == 1024 * 128_256 * 10


def test_non_torch_and_cuda_graph_terms() -> None:
    assert non_torch_bytes(1) == 300 * MIB
    assert non_torch_bytes(8) == 500 * MIB
    assert cuda_graph_bytes("0.20.0") == 0
    assert cuda_graph_bytes("0.21.0") == 512 * MIB
    assert cuda_graph_bytes(None) == 512 * MIB
    assert cuda_graph_bytes("not-a-version") == 512 * MIB


def test_memory_terms_add_up() -> None:
    t = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=0.9,
                     weight_bytes=15 * GIB, dims=LLAMA_DIMS, tp=1, version="0.33.0",
                     max_model_len=8192, max_num_seqs=4)
    assert (t.profiled_tokens, t.sampler_rows) == (8192, 4)
    assert t.requested_bytes == int(80 * GIB * 0.9)
    assert t.activation_peak_bytes == 8192 * 110_592
    assert t.overhead_bytes == 8192 * 110_592 + 300 * MIB + 512 * MIB
    assert t.kv_memory_bytes == int(80 * GIB * 0.9) - 15 * GIB - t.overhead_bytes
    given = memory_terms(gpu_memory_bytes=80 * GIB, gpu_name="H100", utilization=0.9,
                         weight_bytes=15 * GIB, dims=LLAMA_DIMS, tp=1, version="0.33.0",
                         max_model_len=8192, max_num_batched_tokens=512)
    assert (given.profiled_tokens, given.sampler_rows) == (512, 512)


def test_block_tokens_rounds_down_to_whole_blocks() -> None:
    assert block_tokens(16 * 131_072 * 10 + 131_072 * 15, 131_072) == 160
    assert block_tokens(-1, 131_072) == 0
    assert block_tokens(10**9, 0) == 0


# --- start-up logs ----------------------------------------------------------------------------
# (source, config, vLLM version, total_gpu_memory GiB as printed, utilization, max_model_len,
#  tokens vLLM printed: "# GPU blocks" x 16, or the printed KV memory in whole blocks)
LOGS = [
    ("https://github.com/vllm-project/vllm/issues/10517", "meta-llama--Meta-Llama-3.1-8B",
     "0.6.4", 23.58, 0.90, 20000, 1952 * 16),   # "GPU blocks: 1952"
    ("https://github.com/vllm-project/vllm/issues/10517", "meta-llama--Meta-Llama-3.1-8B",
     "0.6.4", 23.58, 0.90, 29000, 1478 * 16),   # "# GPU blocks: 1478"
    ("https://github.com/vllm-project/vllm/pull/10511", "meta-llama--Meta-Llama-3-8B",
     "0.6.5", 79.22, 0.90, 8192, int(53.29 * GIB) // (16 * 131_072) * 16),  # 53.29 GiB
    # "24 GB GPU": total = 0.52 GiB CUDA graphs / (0.9764 - 0.9543), from the log's own line
    ("https://github.com/LMCache/LMCache/issues/3430", "Qwen--Qwen3-8B",
     "0.21.0", 23.53, 0.9764, 16384, 46_368),     # "GPU KV cache size: 46,368 tokens"
]


@pytest.mark.parametrize(("url", "name", "version", "total_gib", "util", "length", "printed"),
                         LOGS)
def test_predicted_tokens_within_five_percent_of_the_log(
        url: str, name: str, version: str, total_gib: float, util: float, length: int,
        printed: int) -> None:
    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / f"{name}.json"), "--gpu", "H100", "--max-model-len",
        str(length), "--engine-version", version, "--format", "json", "--no-plugins"])
    data = json.loads(result.stdout)["results"][0]
    weights = data["capacity"]["weight_bytes_per_gpu"]
    if "Llama" in name:
        assert weights == 16_060_522_496  # the logs: 14.9888 "GB" (GiB), i.e. 16.09e9 B
    per_token = data["kv"]["bytes_per_token_per_gpu"]
    dims = model_dims(config(name))
    assert dims is not None
    terms = memory_terms(gpu_memory_bytes=round(total_gib * GIB), gpu_name="", utilization=util,
                         weight_bytes=weights, dims=dims, tp=1, version=version,
                         max_model_len=length)
    predicted = block_tokens(terms.kv_memory_bytes, per_token)
    assert abs(predicted - printed) / printed <= 0.05, (url, predicted, printed)
