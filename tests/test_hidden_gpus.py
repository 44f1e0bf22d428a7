"""A visible-devices variable that leaves CUDA no GPU (``CUDA_VISIBLE_DEVICES=''``, ``-1``
or NVIDIA's word ``all``; kvlint.manifests.engine_launch.visible_devices): the engine finds
no device, KV206 an error; an engine that runs on the CPU is not flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from tests.helpers import CONFIGS

COMPOSE = """services:
  tgi:
    image: ghcr.io/huggingface/text-generation-inference:3.3.5
    environment:
      - NVIDIA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES:-all}}
      - CUDA_VISIBLE_DEVICES=${{CUDA_VISIBLE_DEVICES:-{default}}}
    command: --model-id Qwen/Qwen2.5-7B --num-shard 1
    deploy: {{resources: {{reservations: {{devices: [{{driver: nvidia, count: all,
                                                     capabilities: [gpu]}}]}}}}}}
"""


def _kv206(path: Path) -> list[tuple[str, str]]:
    result = CliRunner().invoke(main, [
        "lint", str(path), "--no-plugins", "--offline", "--isolated", "--no-cache",
        "--format", "json", "--model-map", f"Qwen/Qwen2.5-7B={CONFIGS / 'Qwen--Qwen2.5-7B.json'}"])
    return [(f["severity"], f["message"]) for r in json.loads(result.stdout)["results"]
            for f in r["findings"] if f["code"] == "KV206"]


@pytest.mark.parametrize(("default", "hidden"), [("", True), ("all", True), ("-1", True),
                                                 ("0", False), ("0,1", False)])
def test_a_compose_default_that_hides_the_reserved_gpus(tmp_path: Path, default: str,
                                                        hidden: bool) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE.format(default=default), encoding="utf-8")
    found = _kv206(path)
    if hidden:
        ((severity, message),) = found
        assert severity == "error" and "leaves CUDA no GPU" in message
    else:
        assert all("leaves CUDA no GPU" not in m for _, m in found)


@pytest.mark.parametrize(("line", "flagged"), [
    ('CUDA_VISIBLE_DEVICES= python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B', True),
    ('CUDA_VISIBLE_DEVICES="" vllm serve Qwen/Qwen2.5-7B --device cpu', False),  # the CPU
    ('CUDA_VISIBLE_DEVICES=-1 llama-server -m /m.gguf -ngl 0', False),  # runs on the CPU
])
def test_a_script_that_hides_every_gpu(tmp_path: Path, line: str, flagged: bool) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(f"#!/bin/bash\n{line}\n", encoding="utf-8")
    assert bool(_kv206(path)) == flagged
