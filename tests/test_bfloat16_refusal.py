"""vLLM refuses bfloat16 on a GPU below compute capability 8.0 (kvlint/engines/
dtype_refusals.py, read in the wheels 0.2.7-0.11.0): `--dtype bfloat16` always, `--dtype
auto` for a bfloat16 checkpoint before 0.9.0 (which falls back to float16 itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.engines.dtype_refusals import bfloat16_refusal
from kvlint.model.memory import pre_ampere_capability
from tests.helpers import CONFIGS


@pytest.mark.parametrize(("dtype", "config", "version", "gpu", "refused"), [
    (None, "bfloat16", "0.4.3", "T4", True),
    ("auto", "bfloat16", "0.8.5", "V100-32GB", True),
    (None, "bfloat16", "0.9.0", "T4", False),  # falls back to float16
    (None, "bfloat16", None, "T4", False),  # the newest
    ("bfloat16", "float16", "0.11.0", "T4", True),  # asked for: every release
    ("bf16", None, "0.6.3", "RTX-2080-Ti", True),
    ("half", "bfloat16", "0.4.3", "T4", False),
    (None, "float32", "0.4.3", "T4", False),  # auto picks float16 for float32
    (None, "bfloat16", "0.4.3", "A10G", False),  # Ampere
])
def test_which_starts_vllm_refuses(dtype: str | None, config: str | None,
                                   version: str | None, gpu: str, refused: bool) -> None:
    older = pre_ampere_capability(gpu)
    assert (older is not None and
            bfloat16_refusal(dtype, config, version, *older) is not None) == refused


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: m}
spec:
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-tesla-t4}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.4.3
          args: [--model=Qwen/Qwen2.5-1.5B, --max-model-len=2048]
          resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_a_bfloat16_checkpoint_on_an_old_release_and_a_t4(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    config = CONFIGS / "Qwen--Qwen2.5-1.5B.json"
    assert json.loads(config.read_text("utf-8"))["torch_dtype"] == "bfloat16"

    def reasons(text: str) -> list[str]:
        path.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(main, [
            "lint", str(path), "--no-plugins", "--offline", "--isolated", "--no-cache",
            "--format", "json", "--model-map", f"Qwen/Qwen2.5-1.5B={config}"])
        return [str(f["data"].get("reason")) for r in json.loads(result.stdout)["results"]
                for f in r["findings"] if f["code"] == "KV702"]

    assert reasons(DEPLOYMENT) == ["bfloat16-refused"]
    assert pre_ampere_capability("nvidia-tesla-t4") == ("T4", "7.5")
    assert reasons(DEPLOYMENT.replace("=2048]", "=2048, --dtype=half]")) == []
    assert reasons(DEPLOYMENT.replace("v0.4.3", "v0.9.2")) == []


def test_the_message_names_the_gpu_its_capability_and_the_release(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT, encoding="utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(path), "--no-plugins", "--offline", "--isolated", "--no-cache",
        "--format", "json", "--model-map",
        f"Qwen/Qwen2.5-1.5B={CONFIGS / 'Qwen--Qwen2.5-1.5B.json'}"])
    (message,) = [f["message"] for r in json.loads(result.stdout)["results"]
                  for f in r["findings"] if f["data"].get("reason") == "bfloat16-refused"]
    assert message.startswith("the checkpoint is bfloat16 and vLLM 0.4.3 keeps it for --dtype "
                              "auto (from 0.9.0 it falls back to float16 itself), but the T4 "
                              "has no bfloat16")
    assert "Your T4 GPU has compute capability 7.5." in message
