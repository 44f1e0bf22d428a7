"""SGLang's DeepSeek-V4 pools, by the rule of each release (kvlint/model/sglang_dsv4.py),
checked against what SGLang printed: ``DSv4 memory calculation: bytes_per_full_token=
15955.85, available_bytes=45.78 GB, full_token=3080960`` (8 x H20, tp 8, a build of
2026-05-15, between 0.5.11 and 0.5.12)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version

from kvlint.cli import main
from kvlint.model.sglang_dsv4 import dsv4_pool, pool_tokens

CONFIG = Path(__file__).parent.parent / "fixtures" / "configs" / \
    "deepseek-ai--DeepSeek-V4-Flash.json"
V4 = json.loads(CONFIG.read_text(encoding="utf-8"))


def test_the_first_rule_prices_a_token_as_sglang_printed() -> None:
    pool = dsv4_pool(V4, Version("0.5.12"))
    assert pool is not None and pool.fixed_bytes == 0
    # 0.1 x 584 x 44 + 584 x 21 / 4 + 584 x 20 / 128 + 132 x 21 / 4
    #   + 0.1 x 8/128 x (8192 + 2048) x 21 + 0.1 x 128/128 x 4096 x 20
    assert pool.bytes_per_full_token == Fraction(1595585, 100)
    assert pool.page_size == 256
    # 45.78 GB printed (rounded): the pool SGLang allocated, within one page
    printed = 3_080_960
    assert abs(pool_tokens(pool, int(45.78 * 2**30)) - printed) <= 256
    assert abs(pool_tokens(pool, int(19.58 * 2**30)) - 1_317_632) <= 256  # the 0.60 run
    early = dsv4_pool(V4, Version("0.5.11"))  # a development build dated before 0.5.12
    assert early is not None and early.bytes_per_full_token == pool.bytes_per_full_token
    assert "development build" in early.rule


def test_from_0_5_15_the_ratio_128_state_is_set_aside_per_request() -> None:
    pool = dsv4_pool(V4, Version("0.5.15"))
    assert pool is not None
    assert pool.bytes_per_full_token == Fraction(1595585, 100) - Fraction(8192)
    rows = -(-(257 * 128 + 129) // 128) * 128  # 256 running requests + 1 slot
    assert pool.fixed_bytes == rows * 2 * 512 * 4 * 20
    fewer = dsv4_pool(V4, Version("0.5.20"), max_running_requests=16)
    assert fewer is not None and fewer.fixed_bytes < pool.fixed_bytes


PRO = json.loads((CONFIG.parent / "deepseek-ai--DeepSeek-V4-Pro.json").read_text("utf-8"))


@pytest.mark.parametrize(("config", "requests", "chunk", "tokens"), [
    # SGLang 0.5.23's own DSV4PoolConfigurator, run on CPU (calculate_pool_sizes at 30,
    # 45.78 and 60 GiB available; radix cache on, no speculative decoding, CUDA defaults)
    (V4, 256, 8192, (2_515_968, 6_861_312, 10_777_088)),
    (V4, 64, 4096, (6_782_976, 11_128_320, 15_044_096)),
    (PRO, 256, 8192, (32_768, 3_065_600, 5_798_656)),
])
def test_from_0_5_21_the_swa_pool_is_set_aside_for_a_cap_of_slots(
        config: dict[str, object], requests: int, chunk: int,
        tokens: tuple[int, int, int]) -> None:
    pool = dsv4_pool(config, Version("0.5.23"), max_running_requests=requests,
                     chunked_prefill=chunk)
    assert pool is not None and "capped" in pool.rule
    assert tuple(pool_tokens(pool, int(g * 2**30)) for g in (30.0, 45.78, 60.0)) == tokens
    assert pool.bytes_per_full_token == Fraction(389925, 100) if config is V4 else True
    unchunked = dsv4_pool(config, Version("0.5.21"), chunked_prefill=-1)
    assert unchunked is not None and "not chunked" in unchunked.rule
    assert unchunked.bytes_per_full_token > pool.bytes_per_full_token  # the SWA share back


@pytest.mark.parametrize("config", [
    {**V4, "architectures": ["DeepseekV3ForCausalLM"]},
    {k: v for k, v in V4.items() if k != "compress_ratios"},
    {**V4, "index_head_dim": True},
])
def test_not_a_deepseek_v4_pool(config: dict[str, object]) -> None:
    assert dsv4_pool(config, Version("0.5.12")) is None


def check(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["check", str(CONFIG), "--engine", "sglang", "--gpu",
                                       "H20", "--tp", "8", *args, "--format", "json",
                                       "--no-plugins", "--isolated", "--offline"])
    assert result.exit_code in (0, 1), result.output
    out: dict[str, object] = json.loads(result.stdout)["results"][0]
    return out


def test_check_sizes_sglangs_own_pool_and_a_million_tokens_fit() -> None:
    """The 1,048,576-token context SGLang serves V4 at costs 1M pool tokens (~15 GiB on
    each GPU), not the layer sum's 300+ GiB: no KV501."""
    result = check("--engine-version", "0.5.12", "--gpu-memory-utilization", "0.6")
    cap = result["capacity"]
    assert isinstance(cap, dict)
    per_token = Fraction(1595585, 100)
    free = cap["kv_budget_bytes_per_gpu"]
    assert cap["max_tokens"] == int(free / per_token) // 256 * 256
    codes = [f["code"] for f in result["findings"]]  # type: ignore[union-attr]
    assert "KV501" not in codes
    notes = result["geometry"]["notes"]  # type: ignore[index]
    assert any("15,955.85 B" in n for n in notes)  # type: ignore[union-attr]


def test_max_total_tokens_caps_the_pool_before_it_is_cut_to_pages() -> None:
    # 3 x GB10 at --max-total-tokens 3000000 printed max_total_num_tokens=2999808: the cap,
    # then whole 256-token pages (model_runner: min(tokens, max_total_tokens) // page * page)
    cap = check("--engine-version", "0.5.20", "--max-total-tokens", "3000000")["capacity"]
    assert isinstance(cap, dict)
    assert cap["max_tokens"] == 2_999_808
    assert cap["kv_tokens_capped_by"] == "--max-total-tokens"
    uncapped = check("--engine-version", "0.5.20", "--max-total-tokens", "900000000")
    assert uncapped["capacity"]["kv_tokens_capped_by"] is None  # type: ignore[index]


def test_a_pool_smaller_than_what_is_set_aside_stops_the_start() -> None:
    """DeepSeek-V4-Pro at tp 16 on 80 GB GPUs (0.5.23): about 10 GiB left for the pool, less
    than the sliding-window slots and ratio-128 state set aside before tokens are priced, so
    the pool holds no token and SGLang stops ("Not enough memory"): KV501 is an error with no
    --max-model-len given, not an info about zero sequences."""
    pro = CONFIG.with_name("deepseek-ai--DeepSeek-V4-Pro.json")
    result = CliRunner().invoke(main, ["check", str(pro), "--engine", "sglang", "--gpu",
                                       "H100-80GB", "--tp", "16", "--format", "json",
                                       "--no-plugins", "--isolated", "--offline"])
    (report,) = json.loads(result.stdout)["results"]
    assert report["capacity"]["max_tokens"] == 0 and report["capacity"][
        "kv_budget_bytes_per_gpu"] > 0
    (found,) = [f for f in report["findings"] if f["code"] == "KV501"]
    assert found["severity"] == "error" and "Not enough memory" in found["message"]
    assert "no token fits" in found["message"]
    assert result.exit_code == 1
