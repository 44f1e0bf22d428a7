"""vLLM's KV cache groups for models with several cache specs (kvlint/model/vllm_groups.py):
exact values worked by hand from kv_cache_utils.py / models/config.py of the 0.9.1-0.19
wheels."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.model import kv
from kvlint.model.vllm_groups import kv_groups
from tests.helpers import CONFIGS, geometry

GIB = 2**30


def groups_of(name: str, tp: int, version: str | None = "0.11.0",  # type: ignore[no-untyped-def]
              batched: int | None = None):
    g = geometry(name)
    return kv_groups(g, kv.resolve_kv_dtype("auto", g), tp, version,
                     batched_tokens=batched)


def test_qwen3_next_groups_state_and_attention_layers() -> None:
    # 48 layers: 12 full attention (2 KV heads x 256, tp 2: one head, 1,024 B per token) and
    # 36 gated-delta-net layers: group_size 12, 1 + 3 groups
    groups = groups_of("Qwen--Qwen3-Next-80B-A3B-Thinking", 2)
    assert groups is not None
    assert (groups.group_size, groups.num_groups, groups.layer_bytes_per_token) == (12, 4, 1024)
    assert groups.padded_layers == 48 and groups.bytes_per_printed_token == 48 * 1024
    # the attention block holds one state page: 16 x cdiv(state, 16 x 1,024)
    assert groups.block_size(16) == 16 * -(-groups.state_page_bytes // (16 * 1024)) == 544
    memory = int(44.59 * GIB)
    blocks = memory // (544 * 1024) // 12
    assert groups.blocks(memory, 544) == blocks == 7162
    assert groups.printed_tokens(memory, 544) == blocks // 4 * 544 == 973_760
    # one request of 262,144 tokens: cdiv(262144, 544) blocks in the full group, one page in
    # each of the three state groups
    assert groups.concurrency(blocks, 262_144, 544) == pytest.approx(7162 / (482 + 3))


def test_gemma3_sliding_layers_are_padded_to_whole_groups() -> None:
    # 26 layers: 22 sliding (window 512) and 4 full: group_size 4, ceil(22 / 4) + 1 = 7
    # groups, two padding layers ("Add 2 padding layers")
    groups = groups_of("google--gemma-3-1b-it", 1)
    assert groups is not None
    assert (groups.group_size, groups.num_groups, groups.padded_layers) == (4, 7, 28)
    assert groups.block_size(16) == 16  # no state: the default block
    assert groups.concurrency(100, 8192, 16) is None  # windowed groups: batch-dependent


@pytest.mark.parametrize("version", ["0.9.0", "0.20.0", "0.34.0", None, "not-a-version"])
def test_groups_apply_only_to_the_releases_read(version: str | None) -> None:
    assert groups_of("google--gemma-3-1b-it", 1, version) is None


def test_one_cache_spec_is_not_grouped() -> None:
    assert groups_of("meta-llama--Meta-Llama-3.1-8B", 1) is None


def test_check_prints_the_grouped_kv_cache_size() -> None:
    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking.json"), "--gpu", "H200",
        "--tp", "2", "--engine-version", "0.10.2", "--format", "json", "--no-plugins",
        "--isolated"])
    cap = json.loads(result.stdout)["results"][0]["capacity"]
    budget = cap["kv_budget_bytes_per_gpu"]
    assert cap["max_tokens"] == budget // (544 * 1024) // 12 // 4 * 544


def test_from_0_21_the_report_is_concurrency_times_the_request_length() -> None:
    """vLLM 0.20.1-0.29 print ``int(max_concurrency x max_model_len)``, a state group taking
    two pages per request (``mamba_cache_mode="align"``, prefix caching on). A held-out
    vLLM 0.29.0 log of a Qwen3.5-27B-class model on an RTX PRO 6000 (logs29f 107: 31.24 GiB
    of KV memory, block 784, 652 blocks, "GPU KV cache size: 314,187 tokens", concurrency
    38.35x for 8,192 tokens) gives the same figures from its printed memory."""
    groups = groups_of("Qwen--Qwen3.5-27B", 1, "0.29.0")
    assert groups is not None and groups.report == "concurrency"
    assert (groups.group_size, groups.num_groups, groups.layer_bytes_per_token) == (16, 4, 4096)
    block = groups.block_size(16)
    assert block == 784
    memory = int(31.24 * GIB)
    assert groups.blocks(memory, block) == 652
    # one request: cdiv(8192, 784) = 11 blocks in the full group, 2 in each state group
    assert groups.blocks_per_request(8192, block) == 11 + 3 * 2
    assert groups.concurrency(652, 8192, block) == pytest.approx(652 / 17)
    assert groups.printed_tokens(memory, block, 8192) == int(652 / 17 * 8192) == 314_187
    assert groups.bytes_per_printed_token_at(block, 8192) == 17 * 16 * block * 4096 / 8192
    # the same model under 0.19 prints whole blocks per group
    assert groups_of("Qwen--Qwen3.5-27B", 1, "0.20.1") == groups  # the 0.20.1 wheel: the same
    old = groups_of("Qwen--Qwen3.5-27B", 1, "0.19.0")
    assert old is not None and old.printed_tokens(memory, block) == 652 // 4 * 784


@pytest.mark.parametrize(("name", "version"), [
    ("Qwen--Qwen3.5-27B", "0.20.0"),  # the platform aligns the block: not read
    ("Qwen--Qwen3.5-27B", "0.30.0"),  # state layers' alignment from 0.30: not re-read
    ("nvidia--Nemotron-H-56B-Base-8K", "0.25.0"),  # Mamba prefix caching "all": not modelled
    ("google--gemma-3-1b-it", "0.25.0"),  # windowed groups without max_num_batched_tokens
])
def test_releases_and_layouts_the_concurrency_report_does_not_model(name: str,
                                                                     version: str) -> None:
    assert groups_of(name, 1, version) is None


def test_a_window_groups_share_of_a_request_in_the_concurrency_report() -> None:
    """From 0.21 a sliding group holds ``cdiv(min(window - 1 + max_num_batched_tokens, L),
    block) + 1`` blocks of a request (``SlidingWindowSpec.max_admission_blocks_per_request``,
    kv_interface@v0.21.0 = @v0.25.0). gpt-oss-20b: 12 full and 12 sliding layers (window
    128), 2,048 B per layer and token, one group of each. A held-out log (logs29h 305, RTX
    5090, vLLM's 2,048 batched tokens for a GPU under 70 GiB) printed 13.27 GiB of KV memory,
    "GPU KV cache size: 560,887 tokens" and 8.56x for 65,536 tokens: 4,096 full blocks plus
    cdiv(127 + 2,048, 16) + 1 = 137 sliding ones per request."""
    groups = groups_of("openai--gpt-oss-20b", 1, "0.25.0", batched=2048)
    assert groups is not None and groups.report == "concurrency"
    assert (groups.group_size, groups.num_groups, groups.layer_bytes_per_token) == (12, 2, 2048)
    assert groups.blocks_per_request(65_536, 16) == 4096 + 137
    memory = int(13.27 * GIB)
    blocks = groups.blocks(memory, 16)
    assert blocks == memory // (16 * 2048) // 12 == 36_235
    assert groups.concurrency(blocks, 65_536, 16) == pytest.approx(36_235 / 4233)
    printed = groups.printed_tokens(memory, 16, 65_536)
    assert printed == int(36_235 / 4233 * 65_536) == 560_996
    assert abs(printed - 560_887) / 560_887 < 0.001  # 13.27 is the log's rounded GiB
    # a window that covers the request: min(..., L) caps it at the full group's blocks + 1
    assert groups.blocks_per_request(1024, 16) == 64 + 65
    # Llama-4's chunked local attention: cdiv(min(chunk + batched, L), block), no extra block
    assert groups.window_blocks("chunk", 8192, 65_536, 16) == (8192 + 2048) // 16
    # from 0.26 the window admits the tokens in flight: two batches with async scheduling
    # (config/vllm.py@v0.26.0 max_concurrent_batches at pp 1)
    later = groups_of("openai--gpt-oss-20b", 1, "0.29.0", batched=2048)
    assert later is not None and later.in_flight_tokens == 4096
    assert later.blocks_per_request(65_536, 16) == 4096 + -(-(127 + 4096) // 16) + 1
    # 0.34 (the 0.30.0, 0.33.0 and 0.34.0 wheels read): the same report and admission, with
    # 0.34's 64-token blocks and an H100's 8,192 batched tokens
    newest = groups_of("openai--gpt-oss-20b", 1, "0.34.0", batched=8192)
    assert newest is not None and newest.report == "concurrency"
    assert newest.blocks_per_request(65_536, 64) == 1024 + -(-(127 + 2 * 8192) // 64) + 1



@pytest.mark.parametrize(("version", "group_size", "groups"), [
    ("0.17.0", 11, 3),  # the fewest: 11 sliding, 13 full split into 11 + 2 (padded)
    ("0.18.0", 13, 2),  # from 0.18 13 < 1.5 x 11: both padded to groups of 13
])
def test_nearly_equal_spec_counts_pad_the_smaller_from_0_18(version: str, group_size: int,
                                                             groups: int) -> None:
    """``_get_kv_cache_groups_uniform_page_size``@v0.18.0: when the largest spec's layer
    count is under 1.5 x the smallest's, it is the group size (gpt-oss-20b with one sliding
    layer made full: 11 sliding + 13 full)."""
    from kvlint.loaders.config_defaults import TableDefaults
    from kvlint.loaders.hf_config import resolve_geometry
    from tests.helpers import fixture_config

    config = fixture_config("openai--gpt-oss-20b")
    config["layer_types"] = ["full_attention", *config["layer_types"][1:]]
    g = resolve_geometry(config, defaults=TableDefaults())
    found = kv_groups(g, kv.resolve_kv_dtype("auto", g), 1, version)
    assert found is not None
    assert (found.group_size, found.num_groups) == (group_size, groups)
