"""What SGLang sets by itself for DeepSeek Sparse Attention models, pinned to the releases it
was read from (kvlint/model/sglang_dsa.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version

from kvlint.cli import main
from kvlint.model.sglang_dsa import dsa_start, is_blackwell

V32 = "DeepseekV32ForCausalLM"
CONFIG = Path(__file__).parent.parent / "fixtures" / "configs" / "deepseek-ai--DeepSeek-V3.2.json"


@pytest.mark.parametrize(("version", "dtype", "blackwell", "expected"), [
    ("0.5.3", "auto", True, (True, 0.8, "fp8_e4m3")),
    ("0.5.3", "bfloat16", True, (True, 0.8, "fp8_e4m3")),  # over the given value
    ("0.5.3", "auto", False, (True, 0.8, None)),
    ("0.5.4", "bfloat16", True, (True, None, "fp8_e4m3")),
    ("0.5.5.post3", "bfloat16", True, (True, None, None)),  # only an auto KV cache
    ("0.5.5.post3", "auto", True, (True, None, "fp8_e4m3")),
    ("0.5.6", "auto", True, (False, None, "fp8_e4m3")),
    ("0.5.14", "auto", False, (False, None, None)),
    ("0.5.23", "auto", True, (False, None, "fp8_e4m3")),
])
def test_releases(version: str, dtype: str, blackwell: bool,
                  expected: tuple[bool, float | None, str | None]) -> None:
    start = dsa_start(Version(version), V32, True, dtype, blackwell)
    assert start is not None and start.page_size == 64
    assert (start.dp_is_tp, start.mem_fraction_static, start.kv_cache_dtype) == expected


def test_what_is_not_dsa() -> None:
    assert dsa_start(Version("0.5.2"), V32, True, "auto", True) is None  # before DSA support
    assert dsa_start(Version("0.5.6"), V32, False, "auto", True) is None  # no index_topk
    assert dsa_start(Version("0.5.8"), "GlmMoeDsaForCausalLM", True, "auto", True) is None
    assert dsa_start(Version("0.5.10"), "GlmMoeDsaForCausalLM", True, "auto", True) is not None
    sinks = dsa_start(Version("0.5.23"), V32, True, "auto", True, has_attention_sinks=True)
    assert sinks is not None and sinks.kv_cache_dtype is None
    assert (is_blackwell("B200"), is_blackwell("H200"), is_blackwell(None)) == (True, False, None)


def check(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["check", str(CONFIG), "--engine", "sglang", *args,
                                       "--format", "json", "--no-plugins", "--isolated",
                                       "--offline"])
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)["results"][0]
    return out


def test_check_runs_the_layout_sglang_runs() -> None:
    blackwell = check("--gpu", "B200", "--tp", "8", "--engine-version", "0.5.3")
    assert blackwell["serving"]["dp"] == 8  # type: ignore[index]
    assert blackwell["serving"]["kv_cache_dtype"] == "fp8_e4m3"  # type: ignore[index]
    assert blackwell["capacity"]["gpu_memory_utilization"] == 0.8  # type: ignore[index]
    notes = blackwell["geometry"]["notes"]  # type: ignore[index]
    assert any("server_args.py@0.5.3" in n for n in notes)  # type: ignore[attr-defined]
    hopper = check("--gpu", "H200", "--tp", "8", "--engine-version", "0.5.23")
    assert hopper["serving"]["kv_cache_dtype"] == "auto"  # type: ignore[index]
    assert hopper["serving"]["dp"] == 1  # type: ignore[index]


# --------------------------------------------------------------- the request-to-token table
SCOUT = CONFIG.parent / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"


def test_the_request_table_of_a_ten_million_token_context() -> None:
    """SGLang's default 2,048 slots x Llama-4-Scout's 10,485,760 positions: the 80.04 GiB
    table an 80 GB GPU's start failed on (``Tried to allocate 80.04 GiB``)."""
    from kvlint.model.sglang_memory import headroom_bytes, request_table

    slots, table = request_table(500_000, 10_485_760, None)
    assert (slots, table) == (2048, 2049 * 10_485_764 * 4)
    assert round(table / 2**30, 2) == 80.04
    assert request_table(500_000, 10_485_760, 64) == (64, 65 * 10_485_764 * 4)
    assert request_table(10**9, 8192, None)[0] == 4096  # capped
    assert headroom_bytes(80 * 2**30, 0.9, 1) == int((80 * 2**30 - 380 * 2**20) * (1 - 0.9))
    result = CliRunner().invoke(main, ["check", str(SCOUT), "--engine", "sglang", "--gpu",
                                       "H100-80GB", "--tp", "8", "--format", "json",
                                       "--no-plugins", "--isolated", "--offline"])
    found = [f for f in json.loads(result.stdout)["results"][0]["findings"]
             if f["code"] == "KV504"]
    assert found and found[0]["data"]["request_table_bytes"] == table
    short = CliRunner().invoke(main, ["check", str(SCOUT), "--engine", "sglang", "--gpu",
                                      "H100-80GB", "--tp", "8", "--max-model-len", "131072",
                                      "--format", "json", "--no-plugins", "--isolated",
                                      "--offline"])
    assert "KV504" not in short.stdout


def test_cuda_graph_state_after_the_request_table() -> None:
    """Llama-4-Scout at 2,097,152 tokens on 8 x H200, SGLang 0.5.6.post2, fraction 0.85: the
    16 GiB table fits the ~20.8 GiB the fraction leaves, but the graph state's two 4 GiB
    tables (page indices of 512 sequences, and FlashAttention-3's local block table for
    chunked attention) do not: the start that failed with ``Tried to allocate 4.00 GiB``
    in ``init_cuda_graph_state``."""
    from kvlint.model.sglang_memory import cuda_graph_state_bytes

    assert cuda_graph_state_bytes(512, 2_097_152) == 4 * 2**30
    assert cuda_graph_state_bytes(512, 2_097_152, 1, 8192) == 8 * 2**30
    assert cuda_graph_state_bytes(512, 2_097_152, 64, 8192) == 2 * 512 * 32768 * 4
    assert cuda_graph_state_bytes(3, 10, 4, 3) == 3 * 3 * 4 + 3 * 4 * 1 * 4
    args = ["check", str(SCOUT), "--engine", "sglang", "--gpu", "H200", "--tp", "8",
            "--engine-version", "0.5.6.post2", "--gpu-memory-utilization", "0.85",
            "--max-model-len", "2097152", "--format", "json", "--no-plugins", "--isolated",
            "--offline"]
    result = CliRunner().invoke(main, args)
    found = [f for f in json.loads(result.stdout)["results"][0]["findings"]
             if f["code"] == "KV504"]
    assert found, result.stdout
    data = found[0]["data"]
    assert data["request_table_bytes"] == 2049 * 2_097_156 * 4
    assert data["cuda_graph_bytes"] == 8 * 2**30
    assert data["request_table_bytes"] < data["headroom_bytes"]
    assert "while capturing the graphs" in found[0]["message"]
    off = CliRunner().invoke(main, [*args, "--disable-cuda-graph"])
    assert "KV504" not in off.stdout
    fewer = CliRunner().invoke(main, [*args, "--cuda-graph-max-bs", "64"])
    assert "KV504" not in fewer.stdout


def test_dp_attention_holds_the_attention_whole_on_each_attention_rank() -> None:
    """SGLang's DP attention splits the attention projections over tp / dp ranks only
    (models/deepseek_v2.py@0.5.5.post3): each GPU holds tp / attention_tp times its share."""
    v3 = CONFIG.parent / "deepseek-ai--DeepSeek-V3.json"

    def weights(*extra: str) -> int:
        result = CliRunner().invoke(main, ["check", str(v3), "--engine", "sglang", "--gpu",
                                           "H200", "--tp", "8", *extra, "--format", "json",
                                           "--no-plugins", "--isolated", "--offline"])
        out: int = json.loads(result.stdout)["results"][0]["capacity"]["weight_bytes_per_gpu"]
        return out

    plain, dp8, dp2 = weights(), weights("--dp", "8", "--dp-attention"), \
        weights("--dp", "2", "--dp-attention")
    assert plain < dp2 < dp8
    # the sharded attention (all but MLA's whole down-projections) x (1/1 - 1/8) vs x (1/4 - 1/8)
    assert (dp8 - plain) == pytest.approx(7 * (dp2 - plain), rel=1e-6)


def test_kv204_offers_dp_attention_only_where_the_weights_still_fit() -> None:
    """DeepSeek-V3 at tp 8 (~78 GiB of weights per GPU): on H200s DP attention fits (a
    suggestion); on 96 GiB GPUs at 0.9 its whole attention per GPU (~88 GiB) would not (the
    advice says so, no suggestion to apply)."""
    v3 = CONFIG.parent / "deepseek-ai--DeepSeek-V3.json"

    def kv204(*gpu: str) -> dict[str, object]:
        result = CliRunner().invoke(main, ["check", str(v3), "--engine", "sglang", *gpu,
                                           "--tp", "8", "--format", "json", "--no-plugins",
                                           "--isolated", "--offline"])
        findings = json.loads(result.stdout)["results"][0]["findings"]
        found: dict[str, object] = next(f for f in findings if f["code"] == "KV204")
        return found

    assert kv204("--gpu", "H200").get("suggestion") is not None
    small = kv204("--gpu-memory", "96", "--gpu-memory-utilization", "0.9")
    assert small.get("suggestion") is None and "would not fit here" in str(small["message"])
