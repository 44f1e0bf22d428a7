"""LMDeploy's start-up KV budget arithmetic (kvlint/model/lmdeploy_memory.py), pinned to the
releases it was read from (the lmdeploy 0.7.3 and 0.18.0 wheels; git tags for the releases
between). Separately, ``kv_budget`` was compared with LMDeploy's own ``ExecutorBase`` code
run on CPU (``_get_runtime_size`` / ``update_configs`` @0.7.3, ``_get_runtime_size`` /
``_update_num_gpu_blocks`` @0.18.0) on 616 generated cases, halving and refusals included:
all agree (research notes of issue 33)."""

from __future__ import annotations

import pytest

from kvlint.model.lmdeploy_memory import (
    BLOCK_SIZE,
    CACHE_MAX_ENTRY_COUNT,
    DSA_SCORE_WORKSPACE_BYTES,
    MAX_PREFILL_TOKEN_NUM,
    MIB,
    CacheSettings,
    block_size,
    default_max_batch_size,
    default_max_prefill_token_num,
    kv_budget,
    kv_budget_bytes,
    kv_tokens,
    runtime_buffer_bytes,
    runtime_reserve,
    state_cache_slots,
)

GIB = 1024**3
LLAMA3_VOCAB = 128256
QWEN_VOCAB = 151936
LLAMA3_8B_BLOCK = 64 * 131072
"""Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B/token; 64 tokens."""
H100 = "NVIDIA H100 80GB HBM3"


def test_defaults_of_both_releases() -> None:
    # cli/utils.py@0.7.3 / @0.18.0: --cache-max-entry-count 0.8, --cache-block-seq-len 64,
    # --max-prefill-token-num 8192
    assert CACHE_MAX_ENTRY_COUNT == 0.8
    assert BLOCK_SIZE == 64
    assert MAX_PREFILL_TOKEN_NUM == 8192


@pytest.mark.parametrize(
    ("version", "cli", "tokens"),
    [
        ("0.7.3", True, 8192),
        ("0.18.0", True, 8192),
        ("0.7.3", False, 4096),  # PytorchEngineConfig@0.7.3 line 301
        ("0.12.3", False, 4096),
        ("0.13.0", False, 8192),  # PR #4546
        ("0.18.0", False, 8192),  # messages.py@0.18.0 line 562
    ],
)
def test_default_max_prefill_token_num(version: str, cli: bool, tokens: int) -> None:
    assert default_max_prefill_token_num(version, cli=cli) == tokens


@pytest.mark.parametrize(
    ("version", "gpu", "size"),
    [
        # utils.py@0.7.3 get_max_batch_size: a100/a800 256, h100/h800 512, others 128
        ("0.7.3", "NVIDIA A100-SXM4-80GB", 256),
        ("0.7.3", H100, 512),
        ("0.7.3", "NVIDIA H200", 128),
        ("0.7.3", "NVIDIA L40S", 128),
        # PR #3921 (v0.10.0); utils.py@0.18.0: a100/a800 384, h100/h800/l20y/h200 1024
        ("0.9.2", H100, 512),
        ("0.10.0", H100, 1024),
        ("0.18.0", "NVIDIA A100-SXM4-40GB", 384),
        ("0.18.0", H100, 1024),
        ("0.18.0", "NVIDIA H200", 1024),
        ("0.18.0", "NVIDIA GeForce RTX 4090", 128),
        (None, "NVIDIA H800", 1024),
    ],
)
def test_default_max_batch_size(version: str | None, gpu: str, size: int) -> None:
    assert default_max_batch_size(version, gpu) == size


def test_runtime_buffers_0_7_3_are_7_bytes_per_prefill_token() -> None:
    # executor/base.py@0.7.3 line 95: max_prefill_token_num x vocab x 7
    assert runtime_buffer_bytes("0.7.3", QWEN_VOCAB) == 8192 * QWEN_VOCAB * 7
    assert (
        runtime_buffer_bytes("0.9.1", LLAMA3_VOCAB, max_batches=1024) == 8192 * LLAMA3_VOCAB * 7
    )  # max_batches plays no part before 0.9.2
    assert runtime_buffer_bytes("0.7.3", LLAMA3_VOCAB) == 7_354_712_064  # 6.85 GiB


def test_runtime_buffers_from_0_9_2_add_two_rows_per_batch_slot() -> None:
    # PR #3745 (v0.9.2); executor/base.py@0.18.0 line 232
    assert (
        runtime_buffer_bytes("0.9.2", LLAMA3_VOCAB, max_batches=256)
        == (8192 + 2 * 256) * LLAMA3_VOCAB * 2
    )
    assert (
        runtime_buffer_bytes("0.18.0", LLAMA3_VOCAB, max_batches=1024)
        == (8192 + 2048) * LLAMA3_VOCAB * 2
        == 2_626_682_880
    )
    assert (
        runtime_buffer_bytes(None, 32000, max_prefill_token_num=4096, max_batches=128)
        == (4096 + 256) * 32000 * 2
    )


def test_dsa_score_workspace_only_from_0_18() -> None:
    # executor/base.py@0.18.0 lines 213-217, 233; envs.py@0.18.0 line 238 (512 MiB)
    plain = runtime_buffer_bytes("0.18.0", 129280, max_batches=1024)
    assert DSA_SCORE_WORKSPACE_BYTES == 512 * MIB
    assert runtime_buffer_bytes("0.18.0", 129280, max_batches=1024, dsa=True) == plain + 512 * MIB
    assert runtime_buffer_bytes("0.16.0", 129280, max_batches=1024, dsa=True) == plain


@pytest.mark.parametrize(
    ("version", "slots"),
    [
        ("0.10.0", 0),  # no state cache before PR #4039 (v0.11.0)
        ("0.11.0", 264),  # executor/base.py@v0.11.0 line 173: max_batches + 8
        ("0.13.0", 257),  # @v0.13.0 line 231: max_batches + 1
        ("0.14.0", 258),  # @v0.14.0 line 264: max_batches + 2 + prefix_cache_state_budget
        ("0.18.0", 258),  # @0.18.0 line 289
    ],
)
def test_state_cache_slots(version: str, slots: int) -> None:
    assert state_cache_slots(version, 256) == slots


def test_state_cache_slots_count_the_prefix_budget() -> None:
    assert state_cache_slots("0.18.0", 256, prefix_cache_state_budget=32) == 290


@pytest.mark.parametrize(
    ("version", "head_dim", "flash_mla", "tokens"),
    [
        ("0.7.3", 128, False, 64),
        ("0.7.3", 576, False, 32),  # the MLA latent on the Triton path: executor/base.py@0.7.3
        ("0.18.0", 512, False, 32),  # k_head_dim >= 512 -> 32 (@0.18.0 lines 266-271)
        ("0.18.0", 511, False, 64),
        ("0.18.0", 576, True, 64),  # FlashMLA keeps 64 (PR #3218, v0.7.2)
        ("0.7.1", 576, True, 32),  # before FlashMLA support the flag does nothing
        ("0.5.0", 576, False, 32),  # model_agent.py@v0.5.0 line 86
    ],
)
def test_block_size(version: str, head_dim: int, flash_mla: bool, tokens: int) -> None:
    assert block_size(version, head_dim, flash_mla) == tokens


def test_block_size_keeps_a_smaller_request_and_flash_mla_demands_64() -> None:
    assert block_size("0.18.0", 576, requested=16) == 16
    assert block_size("0.18.0", 128, requested=128) == 128
    with pytest.raises(ValueError, match="block_size to 64"):
        block_size("0.18.0", 576, flash_mla=True, requested=32)


def test_pytorch_budget_0_18_llama3_8b_on_h100() -> None:
    # free after the weights (~15 GiB of bf16 weights on an 80 GB H100), by hand:
    free = 63 * GIB
    runtime = (8192 + 2 * 1024) * LLAMA3_VOCAB * 2
    budget = int((free - runtime) * 0.8)
    result = kv_budget(
        "0.18.0",
        "pytorch",
        free,
        LLAMA3_8B_BLOCK,
        CacheSettings(vocab_size=LLAMA3_VOCAB, max_batches=default_max_batch_size("0.18.0", H100)),
    )
    assert result.runtime_bytes == runtime
    assert result.max_prefill_token_num == 8192
    assert result.budget_bytes == budget
    assert result.num_gpu_blocks == budget // LLAMA3_8B_BLOCK == 6200
    assert result.error is None
    assert kv_tokens(result, 64) == 6200 * 64


def test_pytorch_budget_0_7_3_sets_aside_more_runtime() -> None:
    free = 63 * GIB
    runtime = 8192 * LLAMA3_VOCAB * 7
    result = kv_budget(
        "0.7.3", "pytorch", free, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=LLAMA3_VOCAB)
    )
    assert result.runtime_bytes == runtime
    assert result.num_gpu_blocks == int((free - runtime) * 0.8 / LLAMA3_8B_BLOCK) == 5749
    assert kv_budget_bytes(
        "0.7.3", "pytorch", free, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=LLAMA3_VOCAB)
    ) == int((free - runtime) * 0.8)


def test_turbomind_applies_the_fraction_to_free_memory_directly() -> None:
    # BlockManager::GetBlockCount@v0.7.3: (size_t)(free * ratio) / block_size
    free = 63 * GIB
    result = kv_budget(
        "0.7.3", "turbomind", free, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=LLAMA3_VOCAB)
    )
    assert result.budget_bytes == int(free * 0.8)
    assert result.num_gpu_blocks == int(free * 0.8) // LLAMA3_8B_BLOCK == 6451
    assert result.runtime_bytes == 0
    assert result.max_prefill_token_num is None


def test_the_tightest_gpu_decides() -> None:
    one = kv_budget(
        "0.18.0", "pytorch", 40 * GIB, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=LLAMA3_VOCAB)
    )
    many = kv_budget(
        "0.18.0",
        "pytorch",
        [41 * GIB, 40 * GIB, 45 * GIB],
        LLAMA3_8B_BLOCK,
        CacheSettings(vocab_size=LLAMA3_VOCAB),
    )
    assert one == many
    tm = kv_budget("0.18.0", "turbomind", [41 * GIB, 40 * GIB], LLAMA3_8B_BLOCK)
    assert tm.budget_bytes == int(40 * GIB * 0.8)


def test_state_cache_comes_off_first() -> None:
    free, state = 30 * GIB, 2 * GIB
    with_state = kv_budget(
        "0.18.0",
        "pytorch",
        free,
        LLAMA3_8B_BLOCK,
        CacheSettings(vocab_size=LLAMA3_VOCAB, state_cache_bytes=state),
    )
    without = kv_budget(
        "0.18.0", "pytorch", free - state, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=LLAMA3_VOCAB)
    )
    assert with_state == without
    assert (
        kv_budget(
            "0.18.0",
            "pytorch",
            GIB,
            LLAMA3_8B_BLOCK,
            CacheSettings(vocab_size=LLAMA3_VOCAB, state_cache_bytes=2 * GIB),
        ).error
        is not None
    )


def test_halving_the_prefill_budget_0_7_3() -> None:
    # 10 blocks' worth over the 8192-token runtime: 4096 tokens leave 16 blocks or more
    runtime = 8192 * 32000 * 7
    free = runtime + int(10 * LLAMA3_8B_BLOCK / 0.8) + 1000
    runtime_bytes, tokens = runtime_reserve("0.7.3", free, LLAMA3_8B_BLOCK, 32000)
    assert tokens == 4096
    assert runtime_bytes == 4096 * 32000 * 7


def test_halving_the_prefill_budget_0_18() -> None:
    runtime = (8192 + 256) * 32000 * 2
    free = runtime + int(10 * LLAMA3_8B_BLOCK / 0.8) + 1000
    result = kv_budget("0.18.0", "pytorch", free, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=32000))
    assert result.max_prefill_token_num == 4096
    assert result.runtime_bytes == (4096 + 256) * 32000 * 2
    assert result.error is None


def test_too_little_memory_fails_as_lmdeploy_does() -> None:
    # 0.7.3: every halving leaves fewer than 16 blocks -> 'No enough gpu memory for runtime.'
    small = kv_budget(
        "0.7.3",
        "pytorch",
        2 * GIB,
        72 * MIB,
        CacheSettings(vocab_size=LLAMA3_VOCAB, cache_max_entry_count=0.5),
    )
    assert small.error == "No enough gpu memory for runtime."
    assert small.num_gpu_blocks == 0
    # 0.14+: 2 blocks or fewer inside the halving loop raise at once
    tight = kv_budget(
        "0.18.0", "pytorch", 2 * GIB, LLAMA3_8B_BLOCK, CacheSettings(vocab_size=LLAMA3_VOCAB)
    )
    assert tight.error == "No enough gpu memory for kv cache."
    # 0.14+: 3..15 blocks at every halving run the loop out
    runtime = (8192 + 256) * 32000 * 2
    loop = kv_budget(
        "0.18.0",
        "pytorch",
        runtime + int(5 * 72 * MIB / 0.5) + 1000,
        72 * MIB,
        CacheSettings(vocab_size=32000, cache_max_entry_count=0.5),
    )
    assert loop.error == "No enough gpu memory for runtime."


def test_block_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="block_bytes"):
        kv_budget("0.18.0", "pytorch", GIB, 0)
