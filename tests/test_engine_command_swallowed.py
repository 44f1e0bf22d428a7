"""KV707: an engine command written into the command before it (no ``;`` between them, as
a YAML quoted string's joined lines make), whose program takes it as its own arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: llm}}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command:
            - sh
            - -c
            - "huggingface-cli download Qwen/Qwen3-8B --local-dir /models{end}
              python3 -m vllm.entrypoints.openai.api_server --model /models --port 8080"
          resources:
            limits:
              nvidia.com/gpu: "1"
"""


def findings(tmp_path: Path, text: str, name: str) -> list[tuple[str, int | None]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                    "--offline", "--no-cache", "--format", "json",
                                    "--select", "KV707"])
    return [(f["code"], f["line"]) for r in json.loads(out.stdout)["results"]
            for f in r["findings"]]


def test_a_quoted_yaml_string_joins_the_download_and_the_server(tmp_path: Path) -> None:
    assert findings(tmp_path, DEPLOYMENT.format(end=""), "dep.yaml") == [("KV707", 14)]
    assert findings(tmp_path, DEPLOYMENT.format(end=";"), "dep.yaml") == []


@pytest.mark.parametrize(("script", "found"), [
    ("sleep 5 vllm serve org/model\n", [("KV707", 1)]),
    ("mkdir -p /models python -m sglang.launch_server --model-path org/m\n", [("KV707", 1)]),
    ("hf download org/m && vllm serve org/m\n", []),
    ("nohup vllm serve org/model > log 2>&1 &\n", []),
    ("srun --gres=gpu:1 vllm serve org/model\n", []),
    ("uv run vllm serve org/model\n", []),
])
def test_scripts(tmp_path: Path, script: str, found: list[tuple[str, int]]) -> None:
    assert findings(tmp_path, "#!/bin/bash\n" + script, "serve.sh") == \
        [(code, line + 1) for code, line in found]
