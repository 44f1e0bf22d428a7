"""vLLM refuses float16 for some model types (kvlint/engines/dtype_refusals.py, read from
the wheels 0.9.0-0.34.0): KV702 on the --dtype of a manifest, by release."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.engines.dtype_refusals import float16_refusal
from tests.helpers import lint_script


@pytest.mark.parametrize(("model_type", "version", "certain"), [
    ("gemma2", "0.9.0", None),  # not in vllm/config.py@v0.9.0
    ("gemma2", "0.9.1", True),
    ("gemma3", "0.34.0", True),
    ("gemma3_text", "0.10.1.1", None),  # added in 0.11.0
    ("gemma3_text", "0.11.0", True),
    ("plamo2", "0.14.0", True),
    ("plamo2", "0.20.0", True),
    ("plamo2", "0.23.0", False),  # dropped by 0.28.0, in a release between not read
    ("plamo2", "0.28.0", None),
    ("llama", "0.11.0", None),
])
def test_float16_refusal_by_release(model_type: str, version: str,
                                    certain: bool | None) -> None:
    found = float16_refusal(model_type, version)
    assert (found.certain if found else None) == certain


@pytest.mark.parametrize(("pin", "dtype", "found"), [
    ("vllm==0.11.0", "half", [("error", 4)]),
    ("vllm==0.11.0", "bfloat16", []),
    ("vllm==0.10.1.1", "float16", []),  # gemma3_text is refused from 0.11.0
    # no release named: judged by every release kvlint knows (KV304), and those before
    # 0.11.0 take it, so no finding
    ("", "half", []),
])
def test_a_manifest_running_gemma3_in_half(tmp_path: Path, pin: str, dtype: str,
                                           found: list[tuple[str, int]]) -> None:
    findings = lint_script(
        tmp_path, f"#!/bin/bash\n{'pip install ' + pin if pin else 'true'}\n"
        f"vllm serve google/gemma-3-1b-it \\\n  --dtype={dtype}\n",
        "google/gemma-3-1b-it", "google--gemma-3-1b-it")
    got = [(f["severity"], f["line"]) for f in findings
           if f["data"].get("reason") == "float16-refused"]
    assert got == found


@pytest.mark.parametrize(("options", "found"), [
    ("--quantization awq --dtype bfloat16", [("error", 3)]),
    ("--quantization=gptq --dtype=bfloat16", [("error", 3)]),
    ("--quantization awq --dtype float16", []),
    ("--quantization awq_marlin --dtype bfloat16", []),   # Marlin runs bfloat16 too
    ("--quantization awq --dtype auto", []),              # the checkpoint's float16
])
def test_bfloat16_with_a_float16_only_quantization_kernel(tmp_path: Path, options: str,
                                                          found: list[tuple[str, int]]) -> None:
    """vLLM's AWQ and GPTQ kernels run float16 only (get_supported_act_dtypes, 0.4.3 and
    0.11.0 wheels): --dtype bfloat16 with them stops the server at start."""
    findings = lint_script(
        tmp_path, "#!/bin/bash\nvllm serve Qwen/Qwen2.5-7B \\\n"
        f"  {options} --max-model-len 4096\n", "Qwen/Qwen2.5-7B", "Qwen--Qwen2.5-7B")
    got = [(f["severity"], f["line"]) for f in findings
           if f["data"].get("reason") == "dtype-refused-by-quantization"]
    assert got == found
