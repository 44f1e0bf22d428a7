"""vLLM's MXFP4 kernels (gpt-oss's checkpoint format) run bfloat16 only
(kvlint/engines/quant_refusals.py ``BFLOAT16_ONLY_KERNELS``): ``--dtype float16`` on such a
checkpoint, or with ``--quantization mxfp4``, is refused at start (KV702)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.engines.quant_refusals import bfloat16_only_refusal
from tests.helpers import CONFIGS


@pytest.mark.parametrize(("engine", "quantization", "checkpoint", "dtype", "refused"), [
    ("vllm", None, "mxfp4", "float16", True),
    ("vllm", None, "mxfp4", "half", True),
    ("vllm", "mxfp4", None, "float32", True),
    ("vllm", None, "mxfp4", "bfloat16", False),
    ("vllm", None, "mxfp4", "auto", False),
    ("vllm", None, "mxfp4", None, False),
    ("vllm", None, "awq", "float16", False),
    ("sglang", None, "mxfp4", "float16", False),  # SGLang's Mxfp4Config takes float16
])
def test_which_dtypes_vllm_refuses(engine: str, quantization: str | None,
                                   checkpoint: str | None, dtype: str | None,
                                   refused: bool) -> None:
    found = bfloat16_only_refusal(engine, quantization, checkpoint, dtype)
    assert (found is not None) == refused


def test_gpt_oss_in_float16_through_lint(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("vllm serve openai/gpt-oss-20b --dtype=float16 --max-model-len 2048\n",
                      encoding="utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(script), "--offline", "--no-plugins", "--format", "json", "--model-map",
        f"openai/gpt-oss-20b={CONFIGS / 'openai--gpt-oss-20b.json'}"])
    found = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
             if f["code"] == "KV702"]
    assert len(found) == 1 and found[0]["severity"] == "error", result.output
    assert "Supported dtypes: [torch.bfloat16]" in found[0]["message"]
