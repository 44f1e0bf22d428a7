"""llama-swap configurations (kvlint/manifests/llama_swap.py), read as llama-swap reads them
(internal/config/{load,macros,commands}.go@0bdb3720). Fixtures are written here, modelled on
the shapes of the project's config.example.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Unresolved
from kvlint.manifests.llama_swap import MAX_MACRO_TEXT, LlamaSwapParser
from tests.helpers import CONFIGS
from tests.loaders.manifests.support import extract_path, line, model_map, parse_with, v

PARSERS = [LlamaSwapParser()]

CONFIG = """\
# llama-swap
healthCheckTimeout: 300
startPort: 9000
macros:
  "server": /opt/llama.cpp/build/bin/llama-server
  "ctx": 32768
  "base": "${server} --port ${PORT} -ngl 99 -c ${ctx}"
models:
  "qwen3-30b":
    cmd: |
      ${base}
      # --flash-attn on
      -m /models/Qwen3-30B-A3B-Q4_K_M.gguf
      --alias ${MODEL_ID}
    env:
      - "CUDA_VISIBLE_DEVICES=0,1"
    ttl: 600
  "gemma":
    macros:
      ctx: 8192
    cmd: >
      ${base} -hf ggml-org/gemma-3-4b-it-GGUF
  "qwen-vllm":
    proxy: http://127.0.0.1:8000
    cmd: >
      docker run --rm --gpus all -p 8000:8000 vllm/vllm-openai:v0.10.1.1
      --model Qwen/Qwen2.5-7B --tensor-parallel-size 2 --max-model-len 16384
groups:
  small:
    swap: true
    members: [gemma, qwen3-30b]
"""


def test_each_model_command_is_a_served_model() -> None:
    """Macros nest (the last declared substituted first), a model's own macros override the
    global ones, ``#`` lines are dropped and a ``cmd: |`` block with one option per line is
    one command (newlines split words, not commands)."""
    found = parse_with(PARSERS, CONFIG, "config.yaml")
    assert [(s.name, v(s.engine), v(s.model), v(s.max_model_len), v(s.gpus)) for s in found] \
        == [("gemma", "llamacpp", "ggml-org/gemma-3-4b-it-GGUF", 8192, 1),
            ("qwen-vllm", "vllm", "Qwen/Qwen2.5-7B", 16384, 2),
            ("qwen3-30b", "llamacpp", "/models/Qwen3-30B-A3B-Q4_K_M.gguf", 32768, 2)]
    assert found[2].format == "llama-swap" and line(found[2].model) == 13
    assert v(found[1].engine_version) == "0.10.1.1" and v(found[1].tp) == 2
    assert not any(p for s in found for p in s.engine_problems)  # --alias <model id> read


def test_ports_follow_model_ids_and_env_macros_stay_unresolved() -> None:
    """``${PORT}`` is allocated from ``startPort`` in model-ID order, only to models whose
    command uses it; ``${env.NAME}`` is llama-swap's own environment (unknown here)."""
    text = """\
startPort: 7000
models:
  b:
    cmd: llama-server --port ${PORT} -m /m/b.gguf -c ${PORT}
  a:
    cmd: llama-server --port ${PORT} -m /m/a.gguf -c ${PORT}
  c:
    cmd: llama-server --port 8080 -m ${env.MODELS}/c.gguf
"""
    found = parse_with(PARSERS, text, "config.yaml")
    assert [(s.name, v(s.max_model_len)) for s in found[:2]] == [("a", 7000), ("b", 7001)]
    assert isinstance(found[2].model, Unresolved)
    assert found[2].model.text == "${MODELS}/c.gguf"


def test_other_documents_are_not_claimed() -> None:
    for doc in ({"models": {"a": {"path": "x"}}}, {"models": ["a"]}, {"models": {}},
                {"apiVersion": "v1", "kind": "ConfigMap", "models": {"a": {"cmd": "x"}}},
                {"services": {"a": {}}, "models": {"a": {"cmd": "vllm serve x"}}},
                ["models"]):
        assert parse_with(PARSERS, json.dumps(doc), "config.yaml") == []


def test_macros_are_bounded() -> None:
    """A macro that doubles itself through a chain of others cannot grow a command past
    MAX_MACRO_TEXT characters (llama-swap would build it; kvlint stops)."""
    chain = {f"m{i}": f"${{m{i - 1}}} ${{m{i - 1}}}" for i in range(1, 40)}
    doc = {"macros": {"m0": "x" * 100, **chain},
           "models": {"a": {"cmd": "llama-server -m /m/a.gguf ${m39}"}}}
    (found,) = parse_with(PARSERS, json.dumps(doc), "config.yaml")
    assert v(found.model) == "/m/a.gguf"
    assert MAX_MACRO_TEXT < 10**6


def test_lint_a_llama_swap_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``kvlint lint``: every model is found (the format is detected among all the
    built-in parsers), and a vLLM command is checked against its config."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.replace("--tensor-parallel-size 2", "--tensor-parallel-size 3"),
                    encoding="utf-8")
    assert sorted(s.name for s in extract_path(path)) == ["gemma", "qwen-vllm", "qwen3-30b"]
    result = CliRunner().invoke(main, [
        "lint", str(path), "--offline", "--no-plugins", "--format", "json",
        *model_map({"Qwen/Qwen2.5-7B": "Qwen--Qwen2.5-7B.json"}, CONFIGS)])
    codes = [(f["code"], f["severity"]) for r in json.loads(result.stdout)["results"]
             for f in r["findings"]]
    assert ("KV202", "error") in codes, result.output  # 4 KV heads over tp=3
