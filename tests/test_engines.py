"""The engine table and the engine-aware rules (issue: engines and capacity)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from packaging.version import Version

from kvlint.cli import main
from kvlint.engines import ENGINES, behaviour, load_engines, parse_version
from kvlint.model.kv import (
    KV_SHARDINGS,
    MLA_CACHES,
    ParallelLayout,
    as_cached,
    footprint,
    resolve_kv_dtype,
)
from tests.helpers import CONFIGS, geometry

LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
DSV3 = str(CONFIGS / "deepseek-ai--DeepSeek-V3.json")
DSV25 = str(CONFIGS / "deepseek-ai--DeepSeek-V2.5.json")


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["check", *args, "--format", "json", "--no-plugins"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)["results"][0]


def codes(result: dict[str, Any]) -> list[str]:
    return [f["code"] for f in result["findings"]]


def finding(result: dict[str, Any], code: str) -> dict[str, Any]:
    return next(f for f in result["findings"] if f["code"] == code)


# --- the data -------------------------------------------------------------------------------


def test_every_engine_is_in_the_table_with_sources() -> None:
    engines = load_engines()
    assert tuple(engines) == ENGINES
    for engine in engines.values():
        assert engine.latest > Version("0")
        facts = [*engine.kv_sharding, *engine.mla, *engine.fp8_mla, *engine.sliding_window]
        assert facts
        for fact in facts:
            assert fact.source.strip(), engine.key
            assert fact.evidence in ("V", "D", "I"), engine.key
            if fact.evidence == "I":
                assert fact.note, f"{engine.key}: an unverified fact needs a note"
        assert {f.values["kv_sharding"] for f in engine.kv_sharding} <= set(KV_SHARDINGS)
        assert {f.values["cache"] for f in engine.mla} <= set(MLA_CACHES)
        assert engine.flags.get("model") or engine.env.get("model"), engine.key


def test_engine_table_ships_in_the_package() -> None:
    from importlib import resources

    assert resources.files("kvlint.engines").joinpath("engines.toml").is_file()


@pytest.mark.parametrize(("text", "want", "pinned"), [
    ("0.6.3", "0.6.3", True), ("v0.6.3", "0.6.3", True), ("latest", None, False),
    ("nightly", None, False), (None, None, False),
])
def test_versions(text: str | None, want: str | None, pinned: bool) -> None:
    vllm = load_engines()["vllm"]
    version, is_pinned = parse_version(vllm, text)
    assert is_pinned is pinned
    assert version == (Version(want) if want else vllm.latest)


def test_llama_cpp_build_numbers() -> None:
    assert parse_version(load_engines()["llamacpp"], "b5415")[0] == Version("5415")


def test_bad_version_and_engine() -> None:
    with pytest.raises(ValueError, match="not a version"):
        parse_version(load_engines()["vllm"], "banana")
    with pytest.raises(ValueError, match="unknown engine 'vllmm'"):
        behaviour("vllmm", None, "llama", is_mla=False)


def test_default_is_newest_vllm_unnamed() -> None:
    b = behaviour(None, None, "deepseek_v3", is_mla=True)
    assert (b.engine, b.named, b.pinned, b.mla_cache) == ("vllm", False, False, "latent")
    assert b.version == str(load_engines()["vllm"].latest)


@pytest.mark.parametrize(("engine", "version", "cache"), [
    ("vllm", "0.6.3", "full-padded-256"), ("vllm", "0.7.0", "full-padded-v"),
    ("vllm", "0.7.1", "latent"),
    ("vllm", "0.7.3", "latent-aligned-256"), ("vllm", "0.8.0", "latent"),
    ("sglang", "0.4.6", "latent"),
    ("tgi", "3.3.4", "full-padded-v"), ("transformers", "4.57.0", "full"),
    ("transformers", "5.0.0", "full"),
])
def test_mla_cache_by_engine_version(engine: str, version: str, cache: str) -> None:
    assert behaviour(engine, version, "deepseek_v3", is_mla=True).mla_cache == cache


def test_minicpm3_never_latent_on_vllm() -> None:
    assert behaviour("vllm", None, "minicpm3", is_mla=True).mla_cache != "latent"


# --- engine-aware rules ---------------------------------------------------------------------


def test_phi3_medium_tp8_refused_by_vllm() -> None:
    code, result = check(str(CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"), "--tp", "8")
    assert code == 1 and "KV202" in codes(result)
    assert finding(result, "KV202")["data"]["valid_tp"] == [1, 2, 5, 10, 20, 40]


@pytest.mark.parametrize("engine", ["tgi", "mlc-llm"])
def test_llama31_8b_tp16_refused_by_tgi_and_mlc(engine: str) -> None:
    code, result = check(LLAMA31, "--tp", "16", "--engine", engine, "--engine-version", "latest")
    assert code == 1
    kv202 = finding(result, "KV202")
    assert "refuses tp=16 for 8 KV heads" in kv202["message"]
    assert kv202["data"]["valid_tp"] == [1, 2, 4, 8]
    assert result["kv"] is None


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
def test_llama31_8b_tp16_replicated_by_vllm_trtllm_sglang(engine: str) -> None:
    _, result = check(LLAMA31, "--tp", "16", "--engine", engine, "--engine-version", "latest")
    assert "KV202" not in codes(result)
    assert result["kv"]["replication_factor"] == 2.0
    assert result["kv"]["bytes_per_token_per_gpu"] == 16_384
    assert "KV201" in codes(result)


def test_trtllm_ceil_pads_uneven_heads() -> None:
    # phi-4: 10 KV heads at tp=4 -> ceil(10/4) = 3 per GPU, 12 head copies for 10 heads.
    _, result = check(str(CONFIGS / "microsoft--phi-4.json"), "--tp", "4", "--engine", "trtllm",
                      "--engine-version", "latest")
    assert result["kv"]["kv_heads_per_gpu"] == 3
    assert result["kv"]["bytes_per_token_per_gpu"] == 40 * 2 * 3 * 128 * 2
    assert result["kv"]["replication_factor"] == pytest.approx(1.2)
    assert "12 head copies for 10 heads" in finding(result, "KV201")["message"]


def test_gemma_2b_mqa_tp8_accepted_by_tgi() -> None:
    _, result = check(str(CONFIGS / "google--gemma-2b.json"), "--tp", "8", "--engine", "tgi",
                      "--engine-version", "3.3.4")
    assert "KV202" not in codes(result)
    assert result["kv"]["replication_factor"] == 8.0


def test_llama_cpp_splits_layers_not_heads() -> None:
    _, result = check(LLAMA31, "--tp", "4", "--engine", "llamacpp", "--engine-version", "b6000")
    assert result["kv"]["bytes_per_token_per_gpu"] == 131_072 // 4  # 8 of 32 layers each
    assert result["kv"]["replication_factor"] == 1.0
    assert codes(result) == []


@pytest.mark.parametrize(("engine", "version", "fires"), [
    ("transformers", "4.57.0", True), ("vllm", "0.6.3", True), ("vllm", "0.7.1", False),
    ("vllm", "0.11.0", False), ("sglang", "0.4.6", False),
])
def test_kv301_deepseek_v3(engine: str, version: str, fires: bool) -> None:
    _, result = check(DSV3, "--tp", "8", "--engine", engine, "--engine-version", version)
    assert ("KV301" in codes(result)) is fires


def test_full_kv_of_deepseek_v2_sharded_by_heads() -> None:
    # 60 layers x 128 heads x (192 + 128) x 2 B; 16 heads per GPU at tp=8
    g = as_cached(geometry("deepseek-ai--DeepSeek-V2.5"), "full")
    fp = footprint(g, resolve_kv_dtype("auto", g), ParallelLayout(tp=8))
    assert (fp.bytes_per_token, fp.bytes_per_token_per_gpu) == (4_915_200, 614_400)


def test_kv301_message_numbers_deepseek_v2() -> None:
    _, result = check(DSV25, "--tp", "8", "--engine", "transformers", "--engine-version",
                      "4.57.0")
    message = finding(result, "KV301")["message"]
    # transformers splits layers over GPUs (device_map), not heads: 8 of 60 layers x 81,920 B
    assert "4,915,200 B/token (655,360 per GPU at tp=8) instead of the 69,120 B latent, 71x" \
        in message
    assert "latent MLA caching needs transformers ≥ 5.15.0" in message
    assert result["kv"]["bytes_per_token"] == 4_915_200


def test_kv301_vllm_before_0_7_1_caches_per_head_kv() -> None:
    # 0.6.x pads K and V to 256 per head (deepseek_v2.py@v0.6.6); 0.7.0 pads V to qk_head_dim
    _, result = check(DSV25, "--tp", "8", "--engine", "vllm", "--engine-version", "0.6.3")
    data = finding(result, "KV301")["data"]
    assert data["cached_bytes_per_token"] == 60 * 128 * (256 + 256) * 2
    assert "needs vLLM ≥ 0.7.1" in finding(result, "KV301")["message"]
    _, result = check(DSV25, "--tp", "8", "--engine", "vllm", "--engine-version", "0.7.0")
    assert finding(result, "KV301")["data"]["cached_bytes_per_token"] == \
        60 * 128 * (192 + 192) * 2


def test_kv302_fp8_mla_on_vllm_085() -> None:
    _, result = check(DSV3, "--engine", "vllm", "--engine-version", "0.8.5", "--kv-cache-dtype",
                      "fp8")
    assert "KV302" in codes(result)
    _, newer = check(DSV3, "--engine", "vllm", "--engine-version", "0.11.0",
                     "--kv-cache-dtype", "fp8")
    assert "KV302" not in codes(newer)


def test_kv303_full_allocation_of_sliding_layers() -> None:
    gpt_oss = str(CONFIGS / "openai--gpt-oss-20b.json")
    _, result = check(gpt_oss, "--engine", "tgi", "--engine-version", "3.3.4", "--context",
                      "131072")
    data = finding(result, "KV303")["data"]
    per_layer = 2 * 8 * 64 * 2
    assert data["bytes_per_sequence"] == 24 * 131_072 * per_layer
    assert data["windowed_bytes_per_sequence"] == 12 * 128 * per_layer + 12 * 131_072 * per_layer
    _, vllm = check(gpt_oss, "--context", "131072")
    assert "KV303" not in codes(vllm)


def test_kv304_only_when_an_engine_is_named_without_version() -> None:
    assert "KV304" in codes(check(LLAMA31, "--engine", "sglang")[1])
    assert "KV304" in codes(check(LLAMA31, "--engine", "vllm", "--engine-version", "nightly")[1])
    assert "KV304" not in codes(check(LLAMA31)[1])
    assert "KV304" not in codes(check(LLAMA31, "--engine", "vllm", "--engine-version",
                                      "0.8.5")[1])


def test_kv204_silent_with_dp_attention() -> None:
    assert "KV204" in codes(check(DSV3, "--tp", "8")[1])
    assert "KV204" not in codes(check(DSV3, "--tp", "8", "--dp", "8", "--dp-attention")[1])


def test_engine_usage_errors() -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["check", LLAMA31, "--engine", "ollama", "--no-plugins"])
    assert bad.exit_code == 2
    version = runner.invoke(main, ["check", LLAMA31, "--engine-version", "banana",
                                   "--no-plugins"])
    assert version.exit_code == 2
    assert version.stderr.strip() == ("kvlint: error: --engine-version 'banana' is not a "
                                      "version (like 0.6.3, v0.6.3, latest)")


# --- vLLM 0.34.0 (read in the vllm-0.34.0 wheel, PyPI) --------------------------------------


def test_vllm_latest_is_0_34() -> None:
    vllm = load_engines()["vllm"]
    assert vllm.latest == Version("0.34.0")
    assert "2026-12-02" in vllm.latest_source


@pytest.mark.parametrize(("version", "cache"), [
    ("0.33.0", "full-padded-v"), ("0.34.0", "latent"), (None, "latent")])
def test_mistral_large_4_latent_from_0_34(version: str | None, cache: str) -> None:
    # transformers_utils/model_arch_config_convertor.py@v0.34.0 is_deepseek_mla() line 315
    assert behaviour("vllm", version, "mistral_large_4", is_mla=True).mla_cache == cache


def test_vllm_0_34_is_known() -> None:
    _, result = check(LLAMA31, "--engine", "vllm", "--engine-version", "0.34.0")
    assert "KV306" not in codes(result)
    _, result = check(LLAMA31, "--engine", "vllm", "--engine-version", "0.35.0")
    assert "newest is 0.34.0" in finding(result, "KV306")["message"]


@pytest.mark.parametrize(("version", "per_token"), [
    ("0.7.1", 61 * 576 * 2), ("0.7.2", 61 * 640 * 2), ("0.7.3", 61 * 640 * 2),
    ("0.8.0", 61 * 576 * 2)])
def test_v0_pads_the_mla_entry_to_256_bytes_in_0_7_2_and_0_7_3(version: str,
                                                               per_token: int) -> None:
    # vllm/worker/cache_engine.py@v0.7.2/@v0.7.3 align_to_256bytes: 576 -> 640 elements; a
    # held-out 8 x H200 log printed 21.43 GiB for 18,418 blocks of 16 = 78,080 B/token
    _, result = check(str(CONFIGS / "deepseek-ai--DeepSeek-R1.json"), "--engine", "vllm",
                      "--engine-version", version, "--tp", "8", "--gpu", "H200")
    assert result["kv"]["bytes_per_token_per_gpu"] == per_token


@pytest.mark.parametrize(("version", "per_token"), [
    ("0.6.4", 27 * 16 * (256 + 256) * 2), ("0.7.0", 27 * 16 * (192 + 192) * 2)])
def test_before_0_7_vllm_pads_deepseek_k_and_v_to_256(version: str, per_token: int) -> None:
    # deepseek_v2.py@v0.6.6: Attention(num_local_heads, 256) with q, k, v padded to 256; a
    # held-out H100 log of ~0.6.4 printed 35.42 GiB for 5,373 blocks of 16 (442,400 B/token)
    _, result = check(str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json"), "--engine", "vllm",
                      "--engine-version", version)
    assert result["kv"]["bytes_per_token_per_gpu"] == per_token
    assert "padded to 256" in finding(result, "KV301")["message"] or version != "0.6.4"
