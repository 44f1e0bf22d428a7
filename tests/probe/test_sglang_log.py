"""``kvlint probe MODEL --engine-log / --sglang-log FILE`` on SGLang start-up logs: synthetic
logs written here (the real ones kvlint was checked on stay outside the project), with the
figures worked by hand; engine detection; junk is a one-line exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS

LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
DSV2_LITE = str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json")
GIB = 2**30

LLAMA_LOG = """\
[2025-05-02 16:13:35] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', \
tokenizer_path='meta-llama/Llama-3.1-8B-Instruct', dtype='auto', kv_cache_dtype='auto', \
mem_fraction_static=0.88, max_total_tokens=None, chunked_prefill_size=8192, tp_size=1, \
dp_size=1, page_size=1, random_seed=1)
[2025-05-02 16:13:42 TP0] Load weight begin. avail mem=78.81 GB
[2025-05-02 16:14:33 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, \
avail mem=63.82 GB, mem usage=14.99 GB.
[2025-05-02 16:14:33 TP0] KV Cache is allocated. #tokens: 445606, K size: 27.20 GB, \
V size: 27.20 GB
[2025-05-02 16:14:33 TP0] Memory pool end. avail mem=9.41 GB
[2025-05-02 16:14:58] max_total_num_tokens=445606, chunked_prefill_size=8192, \
max_prefill_tokens=16384, max_running_requests=4097, context_len=131072
"""
MLA_LOG = """\
[2025-09-11 10:25:43 TP0] Load weight begin. avail mem=77.43 GB
[2025-09-11 10:25:43 TP0] KV Cache is allocated. #tokens: 1000000, KV size: 28.97 GB
[2025-09-11 10:25:43 TP0] Memory pool end. avail mem=8.00 GB
"""


def write(tmp_path: Path, text: str, name: str = "sglang.log") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def probe(*args: str) -> Result:
    return CliRunner().invoke(main, ["probe", *args, "--no-plugins", "--offline"])


def as_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = probe(*args, "--format", "json")
    assert result.exit_code == code, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def measured(data: dict[str, Any]) -> dict[str, Any]:
    block = data["results"][0]["probe"]
    assert block["method"] == "log"
    value: dict[str, Any] = block["impls"][0]
    assert value["impl"] == "sglang"
    return value


def terms(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["term"]: t for t in data["results"][0]["probe"]["terms"]}


def test_llama_tp1_log_per_token_and_capacity(tmp_path: Path) -> None:
    """32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B/token; printed 27.20 + 27.20
    GiB over 445,606 tokens = 54.40 x 2^30 / 445,606 = 131,083.4 B/token (ratio 1.0001).
    kvlint's capacity from the printed free memory: (78.81 GiB x 0.88 - 8,030,261,248 x 2 B
    of weights) / 131,072 = 445,606.08 -> 445,606 tokens, as printed."""
    data = as_json(LLAMA31, "--engine-log", write(tmp_path, LLAMA_LOG))
    m = measured(data)
    assert m["theory_cache_bytes"] == 131_072
    assert m["measured_cache_bytes"] == round(54.40 * GIB / 445_606) == 131_083
    assert m["verdict"] == "ok"
    assert m["details"]["pool"]["within_rounding"] is True
    assert m["details"]["pool"]["tokens"] == 445_606
    rows = terms(data)
    tokens = rows["#tokens (max_total_num_tokens)"]
    assert (tokens["printed"], tokens["predicted"]) == (445_606, 445_606)
    assert rows["free at start (Load weight begin avail mem)"]["printed"] == 78.81
    assert rows["model weights (Load weight end mem usage)"]["printed"] == 14.99
    assert rows["model weights (Load weight end mem usage)"]["predicted"] == \
        round(8_030_261_248 * 2 / GIB, 2) == 14.96
    notes = " ".join(data["results"][0]["probe"]["notes"])
    assert "recognised as an SGLang log" in notes and "Load weight begin" in notes


def test_text_output_names_sglang(tmp_path: Path) -> None:
    result = probe(LLAMA31, "--sglang-log", write(tmp_path, LLAMA_LOG))
    assert result.exit_code == 0, result.output
    assert "SGLang memory profile, per GPU" in result.output
    assert "read as an SGLang log (--sglang-log)" in result.output.replace("\n    ", " ")


def test_mla_kv_size_log(tmp_path: Path) -> None:
    """DeepSeek-V2-Lite caches the latent: 27 x (512 + 64) x 2 B = 31,104 B/token; printed
    KV size 28.97 GiB over 1,000,000 tokens = 31,106.3 B/token."""
    m = measured(as_json(DSV2_LITE, "--engine-log", write(tmp_path, MLA_LOG)))
    assert m["theory_cache_bytes"] == 31_104
    assert m["measured_cache_bytes"] == round(28.97 * GIB / 1_000_000) == 31_106
    assert m["verdict"] == "ok"


def test_full_kv_for_an_mla_model_is_kv601(tmp_path: Path) -> None:
    """A pool of full per-head K/V for DeepSeek-V2-Lite: 27 x 16 heads x (192 + 128) x 2 B =
    276,480 B/token, 8.9x the latent: KV601 (error), exit 1."""
    log = MLA_LOG.replace("#tokens: 1000000, KV size: 28.97 GB",
                          "#tokens: 100000, K size: 15.45 GB, V size: 10.30 GB")
    data = as_json(DSV2_LITE, "--engine-log", write(tmp_path, log), code=1)
    m = measured(data)
    assert m["measured_cache_bytes"] == round(25.75 * GIB / 100_000) == 276_489
    assert m["verdict"] == "error"
    assert "KV601" in [f["code"] for f in data["results"][0]["findings"]]


def test_engine_detection_and_forcing(tmp_path: Path) -> None:
    vllm = write(tmp_path, "(EngineCore_DP0 pid=1) INFO 10-03 16:22:17 [gpu_worker.py:298] "
                           "Available KV cache memory: 6.51 GiB\n(EngineCore_DP0 pid=1) INFO "
                           "10-03 16:22:17 [kv_cache_utils.py:1087] GPU KV cache size: 53,328 "
                           "tokens\n", "vllm.log")
    read = probe(LLAMA31, "--engine-log", vllm, "--format", "json")
    assert read.exit_code == 0, read.output
    block = json.loads(read.stdout)["results"][0]["probe"]
    assert block["impls"][0]["impl"] == "vllm"
    assert any("recognised as a vLLM log" in n for n in block["impls"][0]["notes"]) or \
        any("recognised as a vLLM log" in n for n in block["notes"])
    sglang = write(tmp_path, LLAMA_LOG)
    forced = probe(LLAMA31, "--vllm-log", sglang)  # forced vLLM: nothing of vLLM in it
    assert forced.exit_code == 2 and "nothing comparable" in forced.output
    both = probe(LLAMA31, "--engine-log", sglang, "--sglang-log", sglang)
    assert both.exit_code == 2 and "give one start-up log" in both.output


def test_junk_is_one_line_exit_2(tmp_path: Path) -> None:
    for text in ("hello\nworld\n", "\x00\x01" * 5000, ""):
        result = probe(LLAMA31, "--engine-log", write(tmp_path, text, "junk.log"))
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1, result.output
        assert "no line of a vLLM or SGLang start-up log" in lines[0]
        assert "Traceback" not in result.output


def test_coarse_pool_is_not_compared(tmp_path: Path) -> None:
    """``K size: 0.00 GB`` says nothing about bytes per token: exit 2, one line, saying so."""
    log = "[2025-09-28 17:07:10 TP0] KV Cache is allocated. #tokens: 4096, K size: 0.00 GB, " \
          "V size: 0.00 GB\n"
    result = probe(LLAMA31, "--sglang-log", write(tmp_path, log))
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "too coarse" in lines[0], result.output


GEMMA4_E4B = str(CONFIGS / "google--gemma-4-E4B-it.json")
SWA_ONLY_LOG = """\
Load weight end. elapsed=2415.46 s, type=Gemma4ForConditionalGeneration,
avail mem=97.30 GB, mem usage=15.56 GB.
SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846
"""


def test_a_hybrid_pool_printed_only_as_its_swa_pool_line(tmp_path: Path) -> None:
    """A log that prints the hybrid pool only as ``SWAKVPool mem usage`` (no per-pool
    ``KV Cache is allocated`` lines) is still compared. Gemma-4-E4B: 42 layers, 7 full (2 KV
    heads x 512 x 2 (K, V) x 2 B = 4,096 B) and 35 sliding (2 x 256 x 2 x 2 B = 2,048 B);
    SGLang allocates every layer, its SWA pool holding 0.8 of the full pool's tokens: 7 x
    4,096 + 0.8 x 35 x 2,048 = 86,016 B per full-pool token; printed 79.94 GiB / 997,846 =
    86,020 B (the wrapped ``Load weight end`` record is read too)."""
    data = as_json(GEMMA4_E4B, "--engine-log", write(tmp_path, SWA_ONLY_LOG))
    m = measured(data)
    assert m["theory_cache_bytes"] == 7 * 4_096 + 0.8 * 35 * 2_048 == 86_016
    assert m["measured_cache_bytes"] == round(79.94 * GIB / 997_846) == 86_020
    assert m["verdict"] == "ok"
    assert terms(data)["model weights (Load weight end mem usage)"]["printed"] == 15.56
