"""TensorRT-LLM's KV pools per attention window (VSWA, kvlint/model/trtllm_windows.py), by hand.

No TRT-LLM code runs here (../shared/oracle/TRTLLM.md): every expected value is the arithmetic
of the read source worked out by hand. For windows ``w`` (their layers' bytes per token
``b_w`` on one GPU) and ``M`` bytes of KV memory (``max_gpu_total_bytes``):

    1.0          share_w = w x b_w / sum(w x b_w)     (float32; kvCacheManager.cpp, PR #6481)
    1.1 - 1.2    share_w = 1 / windows                (float32; kvCacheManager.cpp@b35ac1b6)
    1.3          the same in float64                  (resource_manager.py@001541ba)
    tokens_w = M x share_w / b_w, blocks = ceil(tokens_w / 32) (C++) or floor (Python)

A sequence of L tokens takes ceil(min(L, w) / 32) blocks of each pool, +1 when L > w from 1.1;
TensorRT-LLM prints the sum of the pools' tokens ("max tokens in paged KV cache").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.model import trtllm_memory as trt
from kvlint.model import trtllm_windows as win
from tests.helpers import CONFIGS

H100 = 85_020_639_232  # gpus.toml runtime (CUDA) memory
GEMMA3_1B = CONFIGS / "google--gemma-3-1b-it.json"
GPT_OSS_20B = CONFIGS / "openai--gpt-oss-20b.json"
LLAMA31_8B = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
MISTRAL = CONFIGS / "mistralai--Mistral-7B-v0.1.json"
# gpt-oss-20b at tp 1: 12 sliding (128) + 12 full layers, 2 x 8 KV heads x 64 x 2 B each
GPT_OSS_GROUPS = (win.WindowGroup(128, 12, 12 * 2048), win.WindowGroup(131_072, 12, 12 * 2048))


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, [*args, "--format", "json", "--no-plugins", "--isolated"])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    jsonschema.validate(data, schema)
    return data


def check(config: Path, *args: str) -> dict[str, Any]:
    data = run("check", str(config), "--engine", "trtllm", "--engine-version", "1.2.1",
               "--gpu", "H100", *args)
    capacity: dict[str, Any] = data["results"][0]["capacity"]
    return capacity


def pools(pool_set: dict[str, Any]) -> list[tuple[int, int, int, int, int]]:
    return [(p["window"], p["layers"], p["bytes_per_token"], p["blocks"], p["tokens"])
            for p in pool_set["pools"]]


# --- the pure arithmetic ----------------------------------------------------------------------

def test_windows_repeat_and_clamp() -> None:
    """``max_attention_window`` repeats over the layers, each entry clamped to max_seq_len;
    unset, every layer is max_seq_len long."""
    gemma = win.layer_windows([512, 512, 512, 512, 512, 65_536], 26, 32_768)
    assert gemma[:6] == (512, 512, 512, 512, 512, 32_768) and gemma[23] == 32_768
    assert gemma.count(32_768) == 4  # layers 5, 11, 17, 23
    assert win.layer_windows(None, 3, 4096) == (4096, 4096, 4096)
    assert win.window_pattern(gemma) == (512, 512, 512, 512, 512, 32_768)
    assert win.window_pattern([128, 4096] * 12) == (128, 4096)
    groups = win.window_groups(gemma, [1024] * 26)
    assert groups == (win.WindowGroup(512, 22, 22_528), win.WindowGroup(32_768, 4, 4096))


def test_shares_by_release() -> None:
    """1.0: share ~ window x bytes (every pool holds as many full windows); from 1.1: equal."""
    share_128, share_full = win.shares("1.0.0", GPT_OSS_GROUPS)
    assert share_128 == win.f32(64 / 65_600)  # 0.5 x 128 over 0.5 x 128 + 0.5 x 131,072
    assert share_full == win.f32(65_536 / 65_600)
    assert win.shares("1.2.1", GPT_OSS_GROUPS) == (0.5, 0.5)
    assert win.shares(None, GPT_OSS_GROUPS) == (0.5, 0.5)
    assert win.shares("1.2.1", GPT_OSS_GROUPS[:1]) == (1.0,)


@pytest.mark.parametrize(("version", "blocks", "sequences"), [
    # 2**36 x 128 / (24,576 x 131,200) = 2,728.003 tokens -> ceil(/32) = 86 blocks; the full
    # pool 2,793,474.7 -> 87,297 blocks; 86 // 4 = 87,297 // 4,096 = 21 (no extra block)
    ("1.0.0", (86, 87_297), 21),
    # 2**35 / 24,576 = 1,398,101.3 tokens each: ceil -> 43,691 blocks; 43,691 // 4,096 = 10
    ("1.2.1", (43_691, 43_691), 10),
    # the Python split: int(1,398,101.3 // 32) = 43,690 blocks
    ("1.3.0", (43_690, 43_690), 10),
])
def test_gpt_oss_split_by_release(version: str, blocks: tuple[int, int], sequences: int) -> None:
    built = win.vswa_pools(version, GPT_OSS_GROUPS, 2**36, tokens_per_block=32,
                           max_seq_len=131_072)
    assert tuple(p.blocks for p in built.pools) == blocks
    assert built.printed_tokens == 32 * sum(blocks)
    assert built.sequences() == sequences
    # a sequence longer than the window: one block more from 1.1 (kSWAExtraBlock)
    assert built.blocks_per_sequence(built.pools[0], 131_072) == (4 if version == "1.0.0" else 5)


def test_windows_shrink_when_one_sequence_does_not_fit() -> None:
    """adjust_window_sizes_for_vswa, then _validate_and_adjust_attention_windows. Gemma-3-1B
    windows (22 x 1,024 B at 512, 4 x 1,024 B at 32,768) in 10**8 B: one sequence needs
    512 x 22,528 + 32,768 x 4,096 = 145,752,064 B. Window 512: every layer, 512 tokens
    (13,631,488 B); then the 4 full layers get 86,368,512 // 4,096 = 21,086 more: 21,598."""
    groups = (win.WindowGroup(512, 22, 22_528), win.WindowGroup(32_768, 4, 4096))
    assert win.adjust_windows(groups, 10**8) == (
        win.WindowGroup(512, 22, 22_528), win.WindowGroup(21_598, 4, 4096))
    assert win.adjust_windows(groups, 145_752_065) == groups  # one sequence fits
    built = win.vswa_pools("1.2.1", groups, 10**8, tokens_per_block=32, max_seq_len=32_768)
    # 5 x 10**7 / 22,528 = 2,219 -> 70 blocks; 5 x 10**7 / 4,096 = 12,207 -> 382 blocks, whose
    # 12,224 tokens are below the window 21,598: the window and max_seq_len become 12,224
    assert [(p.window, p.blocks) for p in built.pools] == [(512, 70), (12_224, 382)]
    assert built.max_seq_len == 12_224
    assert built.sequences() == 1  # 382 // 382; 70 // 17


def test_single_window_is_the_standard_pool() -> None:
    """One window size: the standard manager's pool, the old arithmetic's blocks."""
    budget = trt.kv_budget("1.2.1", total_bytes=H100, weight_bytes=16_060_522_496,
                           activation_bytes=905_969_664, non_torch_bytes=(300 + 512) * 2**20,
                           pool_bytes_per_token=131_072)
    one = win.single_pool("1.2.1", win.WindowGroup(131_072, 32, 131_072), budget.blocks,
                          memory_bytes=budget.memory_bytes, tokens_per_block=32,
                          max_seq_len=131_072)
    assert one.printed_tokens == budget.tokens == 461_440
    assert one.sequences() == 461_440 // 131_072 == 3
    swa = win.single_pool("1.2.1", win.WindowGroup(4096, 32, 131_072), budget.blocks,
                          memory_bytes=budget.memory_bytes, tokens_per_block=32,
                          max_seq_len=131_072)
    assert swa.printed_tokens == budget.tokens
    assert swa.sequences() == 14_420 // (4096 // 32 + 1) == 111


def test_the_split_needs_memory() -> None:
    with pytest.raises(ValueError):
        win.vswa_pools("1.2.1", GPT_OSS_GROUPS, 0, tokens_per_block=32, max_seq_len=131_072)


# --- kvlint check --engine trtllm, end to end ----------------------------------------------------

def test_gemma3_pools_end_to_end() -> None:
    """Gemma-3-1B at tp 1 (26 layers x 1 KV head x 256 x 2 x 2 B = 1,024 B each, max_seq_len
    32,768): 22 layers at 512, 4 at 32,768, half of M each."""
    cap = check(GEMMA3_1B)
    memory = cap["kv_budget_bytes_per_gpu"]
    assert memory == int((H100 - cap["weight_bytes_per_gpu"] - cap["overhead_bytes_per_gpu"])
                         * 0.9) == 73_595_887_488
    unset, windowed = cap["kv_pools"]  # TensorRT-LLM reads no window from the config
    assert unset["assumed"] and not windowed["assumed"]
    assert windowed["setting"] == \
        "kv_cache_config.max_attention_window: [512, 512, 512, 512, 512, 32768]"
    # float32(M) = 73,595,887,616; x 0.5 / 22,528 = 1,633,431 -> 51,045 blocks;
    # / 4,096 = 8,983,873 -> 280,747 blocks
    assert pools(windowed) == [(512, 22, 22_528, 51_045, 1_633_440),
                               (32_768, 4, 4096, 280_747, 8_983_904)]
    assert windowed["tokens"] == 10_617_344
    # 51,045 // (16 + 1) = 3,002; 280,747 // 1,024 = 274
    assert windowed["max_sequences"] == 274
    # unset: one pool, every layer at 32,768: M // 26,624 = 2,764,268 -> 86,383 blocks
    assert pools(unset) == [(32_768, 26, 26_624, 86_383, 2_764_256)]
    assert unset["tokens"] == cap["max_tokens"] == 2_764_256
    assert unset["max_sequences"] == cap["max_sequences"] == 86_383 // 1024 == 84


@pytest.mark.parametrize(("tp", "memory", "layer_bytes", "blocks", "unset_blocks", "sequences"), [
    # f32(M) x 0.5 / 24,576 = 1,276,497.8 -> 39,891 blocks; M // 49,152 -> 39,890 blocks
    (1, 62_742_421_440, 2048, 39_891, 39_890, 9),
    # 4 KV heads per GPU: 1,024 B per layer
    (2, 67_442_257_036, 1024, 85_758, 85_757, 20),
])
def test_gpt_oss_pools_end_to_end(tp: int, memory: int, layer_bytes: int, blocks: int,
                                  unset_blocks: int, sequences: int) -> None:
    cap = check(GPT_OSS_20B, "--tp", str(tp))
    assert cap["kv_budget_bytes_per_gpu"] == memory
    unset, windowed = cap["kv_pools"]
    per_pool = 12 * layer_bytes
    tokens = int(win.f32(win.f32(memory) * 0.5) / per_pool)
    assert -(-tokens // 32) == blocks
    assert pools(windowed) == [(128, 12, per_pool, blocks, 32 * blocks),
                               (131_072, 12, per_pool, blocks, 32 * blocks)]
    assert windowed["tokens"] == 64 * blocks and windowed["max_sequences"] == blocks // 4096
    assert pools(unset) == [(131_072, 24, 2 * per_pool, unset_blocks, 32 * unset_blocks)]
    assert unset_blocks == memory // (2 * per_pool) // 32
    assert cap["max_tokens"] == unset["tokens"] == 32 * unset_blocks
    assert cap["max_sequences"] == unset_blocks // 4096 == sequences


def test_gpt_oss_release_1_0_shares() -> None:
    """1.0: the 128-token pool gets 128 / 131,200 of M."""
    cap = run("check", str(GPT_OSS_20B), "--engine", "trtllm", "--engine-version", "1.0.0",
              "--gpu", "H100")["results"][0]["capacity"]
    memory = cap["kv_budget_bytes_per_gpu"]
    assumed = cap["kv_pools"][1]  # the windows as kv_cache_config.max_attention_window
    share_128, share_full = win.shares("1.0.0", GPT_OSS_GROUPS)
    expected = [-(-int(win.f32(win.f32(memory) * s) / 24_576) // 32)
                for s in (share_128, share_full)]
    assert [p["blocks"] for p in assumed["pools"]] == expected
    assert expected[1] // 4096 == assumed["max_sequences"] == expected[0] // 4
    assert "window x bytes per token" in assumed["note"]


def test_max_tokens_only_lowers_the_memory(tmp_path: Path) -> None:
    """kv_cache_config.max_tokens caps max_gpu_total_bytes at max_tokens x estimate; the
    per-window pools then ignore it ("not effective in VSWA scheme"). 100,000 x 49,152 B:
    100,000 tokens per pool (3,125 blocks); the full pool's window drops to 100,000."""
    path = tmp_path / "llm_api_options.yaml"
    path.write_text("model: openai/gpt-oss-20b\nkv_cache_config:\n  max_tokens: 100000\n",
                    encoding="utf-8")
    cap = run("lint", str(path), "--gpu", "H100", "--model-map",
              f"openai/gpt-oss-20b={GPT_OSS_20B}")["results"][0]["capacity"]
    windowed = cap["kv_pools"][1]  # as if the windows were set too
    assert pools(windowed) == [(128, 12, 24_576, 3125, 100_000),
                               (100_000, 12, 24_576, 3125, 100_000)]
    assert windowed["max_seq_len"] == 100_000 and windowed["max_sequences"] == 1
    # unset (TensorRT-LLM's default): one full-length pool of at most 100,000 tokens
    assert cap["max_tokens"] == cap["kv_pools"][0]["tokens"] == 100_000


def test_uniform_window_keeps_the_standard_pool() -> None:
    """Mistral-7B-v0.1 (4,096 on every layer): one window, the standard pool's tokens; a
    32,768-token sequence holds 128 + 1 blocks."""
    cap = check(MISTRAL)
    unset, windowed = cap["kv_pools"]
    assert unset["tokens"] == windowed["tokens"] == cap["max_tokens"]
    blocks = windowed["pools"][0]["blocks"]
    assert windowed["max_sequences"] == blocks // 129 and unset["max_sequences"] == blocks // 1024


def test_full_attention_models_have_no_pools() -> None:
    cap = check(LLAMA31_8B)
    assert cap["kv_pools"] == [] and cap["max_tokens"] == 461_440


def test_text_says_what_was_assumed() -> None:
    result = CliRunner().invoke(main, ["check", str(GPT_OSS_20B), "--engine", "trtllm",
                                       "--gpu", "H100", "--no-plugins", "--isolated"])
    assert "kv_cache_config.max_attention_window unset (assumed)" in result.stdout
    assert "otherwise     kv_cache_config.max_attention_window: [128, 131072]" in result.stdout
    assert "reads no window from the model's config" in result.stdout


def test_windows_the_options_file_sets(tmp_path: Path) -> None:
    """kv_cache_config.max_attention_window in the LLM-API options file: the KV manager
    repeats the list over the layers, so Llama-3.1-8B (full attention) at [4096] keeps one
    pool of the standard pool's blocks, and a 32,768-token sequence takes 128 + 1 of them
    (1.1 on) instead of 1,024: 14,420 // 129 = 111 sequences, not 14."""
    path = tmp_path / "llm_api_options.yaml"
    path.write_text("model: meta-llama/Meta-Llama-3.1-8B\nmax_seq_len: 32768\n"
                    "kv_cache_config:\n  max_attention_window: [4096]\n", encoding="utf-8")
    cap = run("lint", str(path), "--gpu", "H100", "--model-map",
              f"meta-llama/Meta-Llama-3.1-8B={LLAMA31_8B}")["results"][0]["capacity"]
    (stated,) = cap["kv_pools"]  # the file says which: no assumed alternative beside it
    assert stated["setting"] == "kv_cache_config.max_attention_window: [4096]"
    assert not stated["assumed"]
    assert pools(stated) == [(4096, 32, 131_072, 14_420, 461_440)]
    assert cap["max_tokens"] == 461_440 and cap["max_sequences"] == 14_420 // 129 == 111


def test_a_stated_window_list_on_a_sliding_model(tmp_path: Path) -> None:
    """gpt-oss-20b with [128, 131072]: the two pools of test_gpt_oss_pools_end_to_end (tp 1,
    equal shares), now the ones built."""
    path = tmp_path / "llm_api_options.yaml"
    path.write_text("model: openai/gpt-oss-20b\nkv_cache_config:\n"
                    "  max_attention_window: [128, 131072]\n", encoding="utf-8")
    cap = run("lint", str(path), "--gpu", "H100", "--model-map",
              f"openai/gpt-oss-20b={GPT_OSS_20B}")["results"][0]["capacity"]
    (stated,) = cap["kv_pools"]
    assert pools(stated) == [(128, 12, 24_576, 39_891, 32 * 39_891),
                             (131_072, 12, 24_576, 39_891, 32 * 39_891)]
    assert cap["max_tokens"] == 64 * 39_891 and cap["max_sequences"] == 39_891 // 4096


@pytest.mark.parametrize("value", ["4096", "[0]", "[true]", "['a']", "[]"])
def test_a_window_list_trtllm_refuses_is_not_read(tmp_path: Path, value: str) -> None:
    path = tmp_path / "llm_api_options.yaml"
    path.write_text("model: meta-llama/Meta-Llama-3.1-8B\n"
                    f"kv_cache_config:\n  max_attention_window: {value}\n", encoding="utf-8")
    cap = run("lint", str(path), "--gpu", "H100", "--model-map",
              f"meta-llama/Meta-Llama-3.1-8B={LLAMA31_8B}")["results"][0]["capacity"]
    assert cap["kv_pools"] == []  # unresolved: the standard pool, as without it
