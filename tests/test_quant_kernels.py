"""KV708: vLLM's `--quantization awq`/`gptq` that keeps the plain kernel of a checkpoint its
Marlin kernel runs (kvlint/engines/quant_kernels.py, read from the wheels 0.4.3-0.5.4 and
main)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvlint.engines.quant_kernels import forced_kernel
from tests.helpers import CONFIGS, lint_deployment

AWQ = {"bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm",
       "zero_point": True}
GPTQ = {"bits": 4, "group_size": 128, "quant_method": "gptq", "sym": True, "desc_act": False}


@pytest.mark.parametrize(("asked", "config", "version", "want"), [
    ("awq", AWQ, "0.6.3", "awq_marlin"),
    ("awq", AWQ, None, "awq_marlin"),  # the newest
    ("AWQ", AWQ, "0.34.0", "awq_marlin"),
    ("awq", AWQ, "0.5.2", None),  # no awq_marlin before 0.5.3
    ("gptq", GPTQ, "0.4.3", "gptq_marlin"),
    ("gptq", GPTQ, "0.4.2", None),
    ("gptq", {**GPTQ, "bits": 8}, "0.11.0", "gptq_marlin"),
    ("gptq", {**GPTQ, "sym": False}, "0.11.0", None),  # Marlin needs symmetric GPTQ
    ("gptq", {**GPTQ, "desc_act": None}, "0.11.0", None),
    ("awq", {**AWQ, "zero_point": False}, "0.11.0", None),
    ("awq", {**AWQ, "bits": 8}, "0.11.0", None),
    ("awq", {**AWQ, "group_size": 256}, "0.11.0", None),
    ("awq_marlin", AWQ, "0.11.0", None),  # the fast kernel itself
    ("gptq", AWQ, "0.11.0", None),  # another format: KV702's
])
def test_which_checkpoints_marlin_runs(asked: str, config: dict[str, Any],
                                       version: str | None, want: str | None) -> None:
    found = forced_kernel("vllm", version, asked, config)
    assert (found.faster if found else None) == want
    assert forced_kernel("sglang", version, asked, config) is None


def _lint(tmp_path: Path, flags: str, image: str = "vllm/vllm-openai:v0.6.3",
          gpu: str = "") -> list[tuple[str, int, str]]:
    config = json.loads((CONFIGS / "Qwen--Qwen2.5-7B.json").read_text("utf-8"))
    config["quantization_config"] = AWQ
    (tmp_path / "awq.json").write_text(json.dumps(config), "utf-8")
    found = lint_deployment(tmp_path, image, ["--model=Qwen/Qwen2.5-7B-Instruct-AWQ", flags],
                            "Qwen/Qwen2.5-7B-Instruct-AWQ", tmp_path / "awq.json", gpu)
    return [(f["severity"], f["line"], f["message"]) for f in found if f["code"] == "KV708"]


def test_a_manifest_forcing_awq_gets_a_warning_on_its_option_line(tmp_path: Path) -> None:
    ((severity, line, message),) = _lint(tmp_path, "--quantization=awq")
    assert severity == "warning" and line == 12
    assert "awq_marlin" in message and "so forcing awq" in message
    assert _lint(tmp_path, "--quantization=awq_marlin") == []
    assert _lint(tmp_path, "--max-model-len=4096") == []


def test_not_on_a_gpu_marlin_cannot_run(tmp_path: Path) -> None:
    """A T4 (compute capability 7.5): the plain kernel is vLLM's only one there."""
    assert _lint(tmp_path, "--quantization=awq", gpu="Tesla-T4") == []
    ((_, _, message),) = _lint(tmp_path, "--quantization=awq", gpu="NVIDIA-A10G")
    assert "on the NVIDIA-A10G" in message
