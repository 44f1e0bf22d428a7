"""GGUF weights: llama.cpp's bits per weight of a file type, read from the file's name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.model.gguf import GGUF_BITS, LLAMA_3_8B_PARAMETERS, gguf_bits, gguf_type
from tests.helpers import CONFIGS


@pytest.mark.parametrize(("name", "kind"), [
    ("Llama-3.2-3B-Instruct-Q8_0.gguf", "Q8_0"),
    ("/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
    ("qwen2.5-coder-7b-instruct-q5_k_m.gguf", "Q5_K_M"),
    ("bartowski/X-GGUF:Q5_K_M", "Q5_K_M"),  # llama.cpp's -hf tag
    ("x.Q4_K-00001-of-00003.gguf", "Q4_K_M"),  # a split file; Q4_K is Q4_K_M
    ("m-IQ4_XS.gguf", "IQ4_XS"),
    ("m-bf16.gguf", "BF16"),
    ("model.gguf", None),  # no type in the name
    ("m-UD-Q4_K_XL.gguf", None),  # a type llama.cpp's table has no figure for
    ("org/Q4_K_M", None),  # not a GGUF file
])
def test_the_type_is_read_from_the_name(name: str, kind: str | None) -> None:
    assert gguf_type(name) == kind


def test_file_sizes_are_llama_3_8b_files_in_gib() -> None:
    # Q8_0 is 8.5 bits (34 bytes per 32 weights): 7.96 GiB over Llama-3-8B's parameters
    assert gguf_bits("q8_0") == pytest.approx(8.5, abs=0.02)
    assert gguf_bits("Q6_K") == pytest.approx(6.5625, abs=0.02)  # 210 bytes per 256
    assert gguf_bits("Q4_K_M") == 4.58 * 2**30 * 8 / LLAMA_3_8B_PARAMETERS
    assert gguf_bits("IQ4_NL") == 4.5 and gguf_bits("F16") == 16.0
    assert gguf_bits("MXFP4_MOE") is None
    assert all(0 < bits <= 32 for bits in GGUF_BITS.values())


def _weights(args: list[str]) -> int:
    result = CliRunner().invoke(main, ["check", str(CONFIGS / "Qwen--Qwen2.5-7B.json"),
                                       "--gpu", "RTX-3060-12GB", "--engine", "llamacpp",
                                       "--format", "json", "--no-plugins", *args])
    assert result.exit_code in (0, 1), result.output
    weights: int = json.loads(result.stdout)["results"][0]["capacity"]["weight_bytes_per_gpu"]
    return weights


def test_a_gguf_type_sizes_every_weight_at_its_bits() -> None:
    sixteen = _weights([])
    q4 = _weights(["--quantization", "gguf:Q4_K_M"])
    # embeddings and output are in the file's type too: all but the norms scale
    assert q4 == pytest.approx(sixteen * gguf_bits("Q4_K_M") / 16, rel=0.001)
    # Qwen2.5-7B at 4.9 bits: 4.66 GB (the published Q4_K_M file is 4.68 GB)
    assert (sixteen, q4) == (15_230_974_976, 4_664_013_287)


def test_a_gguf_file_in_a_manifest_is_not_sized_at_16_bits(tmp_path: Path) -> None:
    # Qwen2.5-7B at Q4_K_M is a 4.7 GB file: it fits a 12 GB card; at 16 bits it would not
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nllama-server -m /models/Qwen2.5-7B-Instruct-Q4_K_M.gguf "
                      "-ngl 99 -c 8192\n", encoding="utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(script), "--no-plugins", "--offline", "--gpu", "RTX-3060-12GB",
        "--format", "json", "--model-map",
        f"/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf={CONFIGS / 'Qwen--Qwen2.5-7B.json'}"])
    assert result.exit_code == 0, result.output
    (model,) = json.loads(result.stdout)["results"]
    assert "KV503" not in {f["code"] for f in model["findings"]}
    assert model["capacity"]["weight_bytes_per_gpu"] == _weights(["--quantization",
                                                                  "gguf:Q4_K_M"])
