"""``kvlint probe`` end to end on CPU: real transformers models built from fixture configs,
one decode step under the byte accounting, exact figures against hand-computed theory."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS
from tests.probe.test_staging import FakeVllm, metrics_text, vllm  # noqa: F401 (fixture)

torch = pytest.importorskip("torch")

LLAMA = str(CONFIGS / "meta-llama--Llama-3.2-1B-Instruct.json")
DSV2_LITE = str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json")
LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")


def probe(*args: str) -> Result:
    return CliRunner().invoke(main, ["probe", *args, "--no-plugins"])


@cache
def as_json(*args: str) -> dict[str, Any]:
    result = probe(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def impls(data: dict[str, Any], index: int = 0) -> dict[str, dict[str, Any]]:
    return {m["impl"]: m for m in data["results"][index]["probe"]["impls"]}


def schema() -> dict[str, Any]:
    result = CliRunner().invoke(main, ["schema"])
    value: dict[str, Any] = json.loads(result.stdout)
    return value


# --- Llama-3.2-1B: 32 query heads, 8 KV heads, head dim 64 ------------------------------------

LLAMA_ARGS = (LLAMA, "--device", "cpu", "--impl", "eager,sdpa", "--context", "128,256")


def llama_theory(context: int) -> int:
    """One layer, bf16: 2 (K, V) x 8 heads x 64 dims x 2 bytes per token, context + 1 tokens."""
    return 2 * 8 * 64 * 2 * (context + 1)


@pytest.mark.parametrize("index,context", [(0, 128), (1, 256)])
def test_llama_eager_materialises_4x_and_sdpa_reads_theory(index: int, context: int) -> None:
    data = as_json(*LLAMA_ARGS)
    block = data["results"][index]["probe"]
    assert (block["device"], block["method"], block["context"], block["batch"],
            block["layers"]) == ("cpu", "dispatch", context, 1, 1)
    found = impls(data, index)
    eager, sdpa = found["eager"], found["sdpa"]
    theory = llama_theory(context)
    assert eager["theory_read_bytes"] == sdpa["theory_read_bytes"] == theory
    # eager: repeat_kv reads K and V once and writes them 4x; the matmuls read the copies.
    assert eager["measured_read_bytes"] == 5 * theory
    assert eager["read_ratio"] == 5.0 and eager["verdict"] == "error"
    [copy] = eager["materializations"]
    assert copy["op"].startswith("aten.clone in repeat_kv")
    assert copy["amplification"] == 4.0 and copy["calls"] == 2
    assert copy["bytes"] == 4 * theory
    assert copy["module"] == "model.layers.0.self_attn"
    # sdpa: enable_gqa, no mask, reads the 8 KV heads once.
    assert sdpa["measured_read_bytes"] == theory and sdpa["verdict"] == "ok"
    assert sdpa["materializations"] == []
    [call] = sdpa["sdpa_calls"]
    assert call["enable_gqa"] and not call["has_mask"]
    assert call["key_shape"] == [1, 8, context + 1, 64]
    assert call["cuda_backend"] == "flash" and not call["materializes"]
    for m in (eager, sdpa):  # DynamicCache holds exactly the tokens: cache ratio 1
        assert m["measured_cache_bytes"] == m["theory_cache_bytes"] == theory
        assert m["cache_traffic_read_bytes"] == llama_theory(context - 1)
        assert m["cache_traffic_write_bytes"] == theory


def test_llama_findings_and_schema() -> None:
    data = as_json(*LLAMA_ARGS)
    jsonschema.validate(data, schema())
    for result in data["results"]:
        [finding] = result["findings"]
        assert (finding["code"], finding["severity"]) == ("KV601", "error")
        assert finding["data"]["impl"] == "eager" and finding["data"]["read_ratio"] == 5.0
        assert "repeat_kv" in finding["message"] and "sdpa" in finding["message"]
    assert data["summary"] == {"error": 2, "warning": 0, "info": 0}
    assert data["results"][0]["serving"]["engine"] == "transformers"


def test_text_output_and_exit_code() -> None:
    result = probe(LLAMA, "--device", "cpu", "--impl", "eager,sdpa", "--context", "128")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "probe · cpu · dispatch · 128 tokens x batch 1 · 1 layer" in out
    assert "eager" in out and "5.00x" in out and "1.00x" in out
    assert "KV601 error  kv-read-amplification" in out
    assert "1 of 16 decoder layers" in out


def test_sdpa_alone_passes() -> None:
    result = probe(LLAMA, "--device", "cpu", "--impl", "sdpa", "--context", "64")
    assert result.exit_code == 0, result.output
    assert "no findings" in result.stdout


def test_batch_and_layers_scale_theory() -> None:
    data = as_json(LLAMA, "--device", "cpu", "--impl", "sdpa", "--context", "64",
                   "--batch", "2", "--layers", "2")
    [sdpa] = impls(data).values()
    assert sdpa["theory_read_bytes"] == 2 * 2 * llama_theory(64)
    assert sdpa["measured_read_bytes"] == sdpa["theory_read_bytes"]
    assert data["results"][0]["probe"]["layers"] == 2


# --- DeepSeek-V2-Lite: MLA, 16 heads, latent 512 + rope 64 --------------------------------------


def test_deepseek_v2_lite_is_flagged_with_its_installed_behaviour() -> None:
    data = as_json(DSV2_LITE, "--device", "cpu", "--impl", "eager,sdpa", "--context", "128")
    tokens = 129
    latent = (512 + 64) * 2  # bytes per token per layer: what an absorbed kernel reads
    for m in impls(data).values():
        assert m["theory_read_bytes"] == m["theory_cache_bytes"] == latent * tokens
        assert m["verdict"] == "error"
        full_kv = 16 * (192 + 128) * 2 * tokens  # per-head K/V: 8.89x the latent
        if m["cache_ratio"] > 2:  # transformers caches the per-head K/V
            assert m["measured_cache_bytes"] == full_kv
        else:  # it caches the latent and rebuilds per-head K/V from it every step
            assert m["measured_cache_bytes"] == latent * tokens
            assert m["read_ratio"] >= full_kv / (latent * tokens)
            ops = [x["op"] + " " + str(x["module"]) for x in m["materializations"]]
            assert any("kv_b_proj" in op for op in ops), ops
            [up] = [x for x in m["materializations"] if "kv_b_proj" in str(x["module"])]
            # kv_b_proj: the 512-wide latent -> 16 heads x (128 nope + 128 v), 8x, bf16.
            assert (up["amplification"], up["bytes"]) == (8.0, 16 * 256 * 2 * tokens)
            # Per token: latent into kv_b_proj 1,024 B + k_nope copied out of its output
            # 4,096 + k_pe copied to 16 heads 128 + SDPA reading K (16 x 192) 6,144 and
            # V (16 x 128) 4,096 = 15,488 B: 13.44x the 1,152 B latent.
            assert m["measured_read_bytes"] == 15_488 * tokens
    [finding, _] = data["results"][0]["findings"]
    assert finding["code"] == "KV601" and finding["severity"] == "error"
    assert "MLA" in finding["message"] and "latent" in finding["message"]


# --- errors and options ---------------------------------------------------------------------


def assert_one_line_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvlint: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present")
def test_device_cuda_without_cuda_is_a_clear_error() -> None:
    assert_one_line_error(probe(LLAMA, "--device", "cuda"), "--device cuda", "no CUDA")


@pytest.mark.parametrize("args,fragment", [
    (("--context", "0"), "--context"),
    (("--context", "12,x"), "--context"),
    (("--layers", "99"), "--layers 99"),
    (("--impl", ","), "--impl"),
])
def test_bad_options(args: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(probe(LLAMA, "--device", "cpu", *args), fragment)


def test_no_model_is_a_usage_error() -> None:
    assert_one_line_error(probe(), "MODEL")


def test_unavailable_impls_are_skipped_with_a_reason() -> None:
    data = as_json(LLAMA, "--device", "cpu", "--impl", "flash_attention_2,flashinfer,nope",
                   "--context", "32")
    found = impls(data)
    assert "CUDA" in found["flash_attention_2"]["skipped"]
    assert "CUDA" in found["flashinfer"]["skipped"]
    assert "unknown implementation" in found["nope"]["skipped"]
    assert all(m["measured_read_bytes"] is None and m["verdict"] == "ok"
               for m in found.values())


def test_remote_code_model_type_is_refused(tmp_path: Path) -> None:
    config = json.loads((CONFIGS / "meta-llama--Llama-3.2-1B-Instruct.json").read_text())
    config["model_type"] = "acme_remote"
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_acme.AcmeForCausalLM"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = probe(str(path), "--device", "cpu", "--impl", "sdpa", "--context", "16")
    assert result.exit_code == 2
    assert "remote code" in result.stderr and "Traceback" not in result.stderr


def test_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "probe.png"
    result = probe(LLAMA, "--device", "cpu", "--impl", "eager,sdpa", "--context", "32,64",
                   "--plot", str(out), "--fail-on", "never")
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")


# --- staging: a fake vLLM on 127.0.0.1 ------------------------------------------------------


def test_endpoint_reports_allocated_bytes_per_token(vllm: FakeVllm) -> None:  # noqa: F811
    # 2 GiB for 16,384 tokens = 131,072 B/token: Llama-3.1-8B's theory at tp 1.
    vllm.metrics = metrics_text(kv_cache_memory_bytes=str(2 * 1024**3),
                                kv_cache_size_tokens="16384")
    result = probe("--endpoint", vllm.endpoint, "--model", LLAMA31, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema())
    block = data["results"][0]["probe"]
    assert (block["method"], block["context"], block["batch"]) == ("metrics", 1, 1)
    [m] = block["impls"]
    assert m["theory_cache_bytes"] == 131_072 and m["measured_cache_bytes"] == 131_072
    assert m["cache_ratio"] == 1.0 and data["results"][0]["findings"] == []


def test_endpoint_flags_a_doubled_allocation(vllm: FakeVllm) -> None:  # noqa: F811
    vllm.metrics = metrics_text(kv_cache_memory_bytes=str(4 * 1024**3),
                                kv_cache_size_tokens="16384")
    result = probe("--endpoint", vllm.endpoint, "--model", LLAMA31)
    assert result.exit_code == 1, result.output
    assert "KV601 error" in result.stdout and "2.00x" in result.stdout


def test_endpoint_unreachable_is_one_line(vllm: FakeVllm) -> None:  # noqa: F811
    vllm.metrics_status = 500
    assert_one_line_error(probe("--endpoint", vllm.endpoint, "--model", LLAMA31),
                          vllm.endpoint)


# --- StaticCache: attended over all max_cache_len positions -------------------------------


def test_static_cache_reads_every_position() -> None:
    data = as_json(LLAMA, "--device", "cpu", "--impl", "sdpa", "--context", "128",
                   "--cache", "static", "--max-cache-len", "512")
    [sdpa] = impls(data).values()
    positions = 2 * 8 * 64 * 2 * 512  # K and V of 8 heads x 64 dims, bf16, 512 positions
    assert sdpa["theory_read_bytes"] == llama_theory(128)
    assert sdpa["measured_cache_bytes"] == positions
    assert sdpa["measured_read_bytes"] == positions  # no head copy: only the extra positions
    assert sdpa["cache_traffic_read_bytes"] == 0  # index_copy_ writes the new token in place
    assert sdpa["cache_traffic_write_bytes"] == 2 * 8 * 64 * 2
    assert sdpa["verdict"] == "error"
    assert any(n.startswith("StaticCache holds max_cache_len=512") for n in sdpa["notes"])
    assert not any("query head" in n for n in sdpa["notes"])
    [call] = sdpa["sdpa_calls"]
    assert call["has_mask"] and call["cuda_backend"] == "efficient"
    assert "StaticCache(max_cache_len=512)" in data["results"][0]["probe"]["built"]
    [finding] = data["results"][0]["findings"]
    assert "DynamicCache" in finding["message"]


@pytest.mark.parametrize("args,fragment", [
    (("--max-cache-len", "64"), "--max-cache-len applies to --cache static"),
    (("--cache", "static", "--context", "64", "--max-cache-len", "64"), "no room"),
])
def test_static_cache_options(args: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(probe(LLAMA, "--device", "cpu", "--impl", "sdpa", *args), fragment)


# --- in-place cache: what engines do, and what the GPU path times ---------------------------


def test_inplace_cache_appends_only_the_new_token() -> None:
    data = as_json(LLAMA, "--device", "cpu", "--impl", "eager,sdpa", "--context", "128",
                   "--cache", "inplace")
    found = impls(data)
    for m in found.values():
        assert m["cache_traffic_read_bytes"] == 0  # no torch.cat of the history
        assert m["cache_traffic_write_bytes"] == 2 * 8 * 64 * 2  # K and V of one token
        assert m["measured_cache_bytes"] == m["theory_cache_bytes"] == llama_theory(128)
    assert found["eager"]["measured_read_bytes"] == 5 * llama_theory(128)
    assert found["sdpa"]["measured_read_bytes"] == llama_theory(128)


def test_inplace_cache_computes_what_dynamic_cache_computes() -> None:
    from kvlint.probe import build as builder
    from tests.helpers import fixture_config

    built = builder.build(fixture_config("meta-llama--Llama-3.2-1B-Instruct"), impl="sdpa",
                          layers=2, dtype="float32")
    kv = builder.random_kv(built, builder.layer_shapes(built, 2), 40)
    outputs = []
    for spec in (builder.CacheSpec("dynamic"), builder.CacheSpec("inplace")):
        cache = builder.fill(built, kv, spec)
        with torch.no_grad():
            for step in range(3):  # three tokens appended in a row
                logits = built.model(**builder._step_kwargs(built, cache, 40 + step, 2)).logits
        outputs.append(logits)
        assert cache.get_seq_length() == 43
    torch.testing.assert_close(outputs[0], outputs[1])


# --- what is built ------------------------------------------------------------------------


def test_hybrid_first_layers_without_kv_say_how_many_to_build() -> None:
    config = str(CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking.json")
    assert_one_line_error(probe(config, "--device", "cpu"), "hold no KV cache",
                          "use --layers 4")


@pytest.mark.parametrize("name,layers,expected", [
    ("deepseek-ai--DeepSeek-V3", 4, "MoE layers 3..3 built dense (first_k_dense_replace)"),
    ("Qwen--Qwen3-30B-A3B", 1, "MoE layers built dense (mlp_only_layers)"),
    ("ai21labs--AI21-Jamba-1.5-Mini", 8, "16 experts -> 2 (the top-k a token uses)"),
    ("meta-llama--Llama-3.2-1B-Instruct", 1, "vocabulary 128,256 -> 1,024"),
])
def test_built_config_keeps_attention_and_lightens_the_rest(name: str, layers: int,
                                                            expected: str) -> None:
    from kvlint.probe.build import PROBE_MLP, transformers_config
    from tests.helpers import fixture_config, geometry

    raw = fixture_config(name)
    config, changes = transformers_config(raw, layers)
    assert expected in ", ".join(changes)
    assert config.num_hidden_layers == layers
    assert config.intermediate_size <= PROBE_MLP
    want = next(layer for layer in geometry(name).layers if layer.holds_kv)
    assert config.num_attention_heads == want.num_attention_heads
    if not want.is_mla:
        assert config.num_key_value_heads == want.num_kv_heads
    else:
        assert (config.kv_lora_rank, config.qk_rope_head_dim) == (want.kv_lora_rank,
                                                                  want.qk_rope_head_dim)


def test_endpoint_measure_itl_fits_the_slope(vllm: FakeVllm) -> None:  # noqa: F811
    # The fake streams a token every 2 ms + 2 us x prompt length: at 3,000 GB/s a batch of
    # one reads 2e-6 x 3e12 = 6,000,000 B per context token, 45.8x Llama-3.1-8B's 131,072.
    result = probe("--endpoint", vllm.endpoint, "--model", LLAMA31, "--measure-itl",
                   "--context", "256,1024,2048,4096", "--bandwidth", "3000",
                   "--served-model-name", "served", "--format", "json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    [m] = data["results"][0]["probe"]["impls"]
    assert m["details"]["itl"]["contexts"] == [256, 1024, 2048, 4096]
    assert 0.75 * 45.8 < m["read_ratio"] < 1.25 * 45.8
    assert {r["model"] for r in vllm.requests} == {"served"}
    assert len(vllm.requests) == 4
    assert data["results"][0]["findings"][0]["code"] == "KV601"


def test_endpoint_measure_itl_needs_a_bandwidth(vllm: FakeVllm) -> None:  # noqa: F811
    assert_one_line_error(probe("--endpoint", vllm.endpoint, "--model", LLAMA31,
                                "--measure-itl"), "--gpu", "--bandwidth")


@pytest.mark.parametrize("args,fragment", [
    (("--measure-itl",), "--measure-itl applies to a running engine: add --endpoint"),
    (("--tp", "2", "--gpu", "H100"), "--gpu, --tp apply to a running engine"),
])
def test_staging_options_need_an_endpoint(args: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(probe(LLAMA, "--device", "cpu", *args), fragment)


def test_ncu_needs_cuda() -> None:
    assert_one_line_error(probe(LLAMA, "--device", "cpu", "--ncu"), "--ncu", "--device cuda")
