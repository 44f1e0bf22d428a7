"""SGLang's start-up memory arithmetic (kvlint/model/sglang_memory.py), pinned to the releases
it was read from: each default fraction below was restated from the release's
``sglang/srt/server_args.py`` (0.5.23: ``arg_groups/memory_hook.py``), computed by hand
where the note says so."""

from __future__ import annotations

import pytest
from packaging.version import Version

from kvlint.model.sglang_memory import (
    GIB,
    MIB,
    SglangStart,
    default_chunked_prefill_size,
    default_cuda_graph_max_bs,
    default_mem_fraction_static,
    pool_budget_bytes,
    pool_tokens,
    prefill_capture_sizes,
    reserved_mib,
)

H100, A100_80, A100_40, RTX4090, L4, H200 = 81559, 81920, 40960, 24564, 23034, 143771
"""nvidia-smi memory.total, MiB."""


@pytest.mark.parametrize(("version", "mem", "tp", "extra", "fraction"), [
    # up to 0.4.5: by tp alone (server_args.py@0.3.4 L140-150, @0.3.6 L156-166, @0.4.0 L158)
    ("0.3.4", H100, 8, {}, 0.83), ("0.3.6", H100, 8, {}, 0.82), ("0.4.1", H200, 8, {}, 0.81),
    ("0.4.3.post4", 196592, 1, {}, 0.88), ("0.4.1", H100, 2, {}, 0.87),
    ("0.4.1", H100, 4, {}, 0.85), ("0.4.1", H100, 16, {}, 0.79),
    # 0.4.5.post3 / 0.4.6.post1: cards over 81,920 MiB, (memory - 13 GiB) / memory
    ("0.4.6.post1", H100, 1, {}, 0.88), ("0.4.6.post1", H100, 8, {}, 0.81),
    ("0.4.6.post1", H200, 8, {}, (H200 - 13 * 1024) / H200),
    # 0.4.10 - 0.5.2: reserved = a + tp x pp x b GiB by card size
    ("0.4.10", H100, 1, {}, 0.874), ("0.4.10", H100, 8, {}, 0.831),
    ("0.5.1", A100_40, 1, {}, 0.750), ("0.5.2", RTX4090, 1, {}, 0.879),
    ("0.5.2", L4, 1, {}, 0.871), ("0.5.2", H200, 1, {}, 0.911), ("0.5.2", H200, 8, {}, 0.886),
    ("0.4.10", H100, 1, {"speculative": "EAGLE"}, 0.849),
    ("0.4.10", H100, 8, {"dp_attention": True, "dp_size": 8}, 0.780),
    # 0.5.5.post3: activations, CUDA graphs, tp x pp / 8 GiB, a 10 GiB floor on big cards
    ("0.5.5.post3", H100, 1, {}, 0.835), ("0.5.5.post3", H100, 8, {}, 0.818),
    ("0.5.5.post3", RTX4090, 1, {}, 0.847), ("0.5.5.post3", L4, 1, {}, 0.837),
    ("0.5.5.post3", A100_40, 1, {}, 0.833), ("0.5.5.post3", A100_80, 1, {}, 0.836),
    ("0.5.5.post3", H200, 8, {}, 0.897), ("0.5.5.post3", H100, 1, {"speculative": "EAGLE"},
                                            0.810),
    ("0.5.5.post3", H100, 8, {"dp_attention": True, "dp_size": 8}, 0.592),
    # 0.5.23: + prefill CUDA graphs (8 MB a size; 1.5 GiB for MLA), no speculative reserve
    ("0.5.23", H100, 1, {}, 0.830), ("0.5.23", H100, 8, {}, 0.812),
    ("0.5.23", RTX4090, 1, {}, 0.704), ("0.5.23", L4, 1, {}, 0.684),
    ("0.5.23", H100, 1, {"speculative": "EAGLE"}, 0.830),
    ("0.5.23", H100, 1, {"mla": True}, 0.816),  # by hand: 512+12288+128+512+1536 = 14976
    (None, H100, 1, {}, 0.830),  # no version: the newest rule read
])
def test_default_mem_fraction_static(version: str | None, mem: int, tp: int,
                                     extra: dict[str, object], fraction: float) -> None:
    start = SglangStart(Version(version) if version else None, mem, tp=tp,
                        **extra)  # type: ignore[arg-type]
    assert default_mem_fraction_static(start) == pytest.approx(fraction, abs=1e-12)


def test_a_release_between_two_read_is_the_older_rule() -> None:
    assert default_mem_fraction_static(SglangStart(Version("0.5.4"), H100)) == 0.874
    assert default_mem_fraction_static(SglangStart(Version("0.5.18"), H100)) == 0.835


def test_vision_towers_keep_more_out_of_the_pool() -> None:
    """adjust_mem_fraction_for_vlm (0.4.10+): 0.95 x clamp(1 - 0.1 (ratio - 1), 0.8, 1.05)
    with ratio = layers x hidden^2 / (24 x 1024^2)."""
    plain = default_mem_fraction_static(SglangStart(Version("0.5.5.post3"), H100))
    tower = default_mem_fraction_static(SglangStart(Version("0.5.5.post3"), H100,
                                                    vision=(24, 1024)))
    assert tower == pytest.approx(plain * 0.95)
    big = default_mem_fraction_static(SglangStart(Version("0.5.5.post3"), H100,
                                                  vision=(48, 2048)))  # ratio 8: clamp 0.8
    assert big == pytest.approx(plain * 0.95 * 0.8)
    assert default_mem_fraction_static(SglangStart(Version("0.4.6.post1"), H100,
                                                   vision=(48, 2048))) == 0.88


def test_defaults_that_feed_the_fraction() -> None:
    assert default_chunked_prefill_size(SglangStart(Version("0.5.23"), RTX4090)) == 4096
    assert default_chunked_prefill_size(SglangStart(Version("0.5.5.post3"), RTX4090)) == 2048
    assert default_chunked_prefill_size(SglangStart(Version("0.5.5.post3"), 200_000)) == 16384
    assert default_cuda_graph_max_bs(SglangStart(Version("0.5.23"), RTX4090)) == 48
    assert default_cuda_graph_max_bs(SglangStart(Version("0.5.5.post3"), RTX4090, tp=4)) == 80
    assert default_cuda_graph_max_bs(SglangStart(Version("0.4.10"), H200)) == 256
    assert len(prefill_capture_sizes(8192)) == 58 and len(prefill_capture_sizes(4096)) == 50
    assert reserved_mib(SglangStart(Version("0.5.5.post3"), H100)) == 13440


def test_the_budget_reproduces_a_printed_pool() -> None:
    """SGLang's docs notebook (bench/sglang_logs.md, log 01): 78.81 GiB free before the
    load, 63.72 GiB after, mem_fraction_static 0.88, Llama-3.1-8B at 131,072 B a token:
    rest = 63.72 - 78.81 x 0.12 GiB, and SGLang printed 444,500 tokens (its GiB figures are
    rounded to 2 decimals, hence the tolerance)."""
    rest = 63.72 * GIB - 78.81 * GIB * (1 - 0.88)
    assert abs(int(rest) // 131_072 - 444_500) < 100
    budget, free = pool_budget_bytes(85_020_639_232, 0.88, 15 * GIB, tp=1)
    assert free == 85_020_639_232 - 380 * MIB
    assert budget == int(free * 0.88) - 15 * GIB


def test_pool_tokens_round_to_the_page_and_take_the_cap() -> None:
    assert pool_tokens(131_072 * 1000 + 5, 131_072) == 1000
    assert pool_tokens(131_072 * 1000, 131_072, page_size=64) == 960
    assert pool_tokens(131_072 * 1000, 131_072, cap=500, page_size=64) == 448
    assert pool_tokens(-1, 131_072) == 0


def test_a_pool_token_costs_the_full_layers_and_the_share_of_the_windowed() -> None:
    """SGLang's #tokens counts full-pool tokens: Gemma-2-9B (21 full and 21 windowed layers
    of 8,192 B a token at tp 1) costs 21 x 8,192 + 0.8 x 21 x 8,192 B a pool token from
    0.4.10; a model whose layers are all windowed has no full pool (each layer once)."""
    from fractions import Fraction

    from kvlint.engines import behaviour
    from kvlint.model import kv
    from tests.helpers import geometry

    g = geometry("google--gemma-2-9b")
    share = behaviour("sglang", "0.4.10", "gemma2", is_mla=False).windowed_pool_share
    assert share == Fraction(4, 5)
    dtype = kv.resolve_kv_dtype("auto", g, None)
    fp = kv.footprint(g, dtype, kv.ParallelLayout(), windowed_share=share)
    assert fp.bytes_per_token_per_gpu_exact == 21 * 8192 + Fraction(4, 5) * 21 * 8192
    assert fp.bytes_per_token == 42 * 8192  # the model's own figure is unchanged


@pytest.mark.parametrize(("model_type", "version", "windowed"), [
    # SGLang switches its SWA pool off per architecture, per release (engines.toml, cited)
    ("gemma2", "0.4.10", True), ("gemma2", "0.5.2", False), ("gemma2", "0.5.23", False),
    ("gpt_oss", "0.5.0rc2", False), ("gpt_oss", "0.5.5.post3", False),
    ("gpt_oss", "0.5.23", True), ("olmo2", "0.5.2", True), ("olmo2", "0.5.5.post3", False),
    ("exaone4", "0.5.5.post3", True), ("exaone4", "0.5.23", False),
    ("llama4", "0.5.5.post3", False), ("mistral", "0.5.5.post3", True),
    ("gemma2", "0.4.6.post1", False),  # no SWA pool before 0.4.10
])
def test_the_swa_pool_per_architecture_and_release(model_type: str, version: str,
                                                   windowed: bool) -> None:
    from kvlint.engines import behaviour

    assert behaviour("sglang", version, model_type, is_mla=False).windowed_sliding_cache \
        is windowed


def test_the_state_pool_takes_its_share_first() -> None:
    """handle_max_mamba_cache (0.5.5.post3): state slots = floor(budget x 0.9 / 1.9 /
    state); the KV pool gets the rest. 0.5.2: 512 slots."""
    from kvlint.model.sglang_memory import state_split

    budget, state = 100 * GIB, 10 * MIB
    kv_budget, slots = state_split(budget, state, Version("0.5.5.post3"))
    assert slots == int(budget * 9 // 19 // state) == 4850
    assert kv_budget == budget - slots * state
    assert state_split(budget, state, Version("0.5.2")) == (budget - 512 * state, 512)
    assert state_split(budget, 0, None) == (budget, 0)
    assert state_split(-1, state, None) == (-1, 0)


@pytest.mark.parametrize(("ratio", "per_token"), [
    # gpt-oss-20b at 0.5.23 (SWA pool on): 12 full and 12 windowed layers of 2,048 B a token
    (None, 12 * 2048 + 0.8 * 12 * 2048),   # 44,236.8: the release's default share
    (0.5, 12 * 2048 + 0.5 * 12 * 2048),    # 36,864: the operator's --swa-full-tokens-ratio
])
def test_the_operators_swa_full_tokens_ratio(ratio: float | None, per_token: float) -> None:
    import json

    from click.testing import CliRunner

    from kvlint.cli import main
    from tests.helpers import CONFIGS

    extra = ["--swa-full-tokens-ratio", str(ratio)] if ratio is not None else []
    out = CliRunner().invoke(main, [
        "check", str(CONFIGS / "openai--gpt-oss-20b.json"), "--engine", "sglang",
        "--engine-version", "0.5.23", "--format", "json", "--no-plugins", *extra])
    assert out.exit_code in (0, 1), out.output
    kv_ = json.loads(out.stdout)["results"][0]["kv"]
    assert kv_["bytes_per_token_per_gpu"] == pytest.approx(per_token, abs=1e-9)


def test_a_manifests_swa_full_tokens_ratio_is_read() -> None:
    from tests.loaders.manifests.support import extract_text, v

    (m,) = extract_text(
        "services:\n  s:\n    image: lmsysorg/sglang:v0.5.23\n    command: python3 -m "
        "sglang.launch_server --model-path openai/gpt-oss-20b --swa-full-tokens-ratio 0.5\n")
    assert v(m.swa_ratio) == 0.5
