"""Container task definitions (kvlint/manifests/container_tasks.py): Amazon ECS task
definitions and Nosana job definitions, read as the Kubernetes containers they are
equivalent to (ENTRYPOINT = command, CMD = args). Fixtures are written here, modelled on the
platforms' own documented shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.container_tasks import EcsTaskDefinitionParser, NosanaJobParser
from tests.helpers import CONFIGS
from tests.loaders.manifests.support import line, model_map, parse_with, v

PARSERS = [EcsTaskDefinitionParser(), NosanaJobParser()]

ECS = {
    "family": "llm",
    "requiresCompatibilities": ["EC2"],
    "containerDefinitions": [
        {"name": "proxy", "image": "nginx:1.27", "essential": False},
        {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1.1",
         "command": ["--model", "Qwen/Qwen2.5-7B", "--tensor-parallel-size", "2",
                     "--max-model-len", "8192"],
         "environment": [{"name": "VLLM_USE_V1", "value": "1"}],
         "resourceRequirements": [{"type": "GPU", "value": "2"}]},
        {"name": "sglang", "image": "lmsysorg/sglang:v0.4.6.post1",
         "entryPoint": ["python3", "-m", "sglang.launch_server"],
         "command": ["--model-path", "Qwen/Qwen3-8B", "--tp", "$(TP)"]},
    ],
}

NOSANA = {
    "version": "0.1",
    "type": "container",
    "meta": {"trigger": "cli", "system_requirements": {"required_vram": 24}},
    "global": {"env": {"MODEL": "Qwen/Qwen3-8B"}},
    "ops": [
        {"type": "container/create-volume", "id": "cache", "args": {"name": "hf"}},
        {"type": "container/run", "id": "vllm",
         "args": {"image": "docker.io/vllm/vllm-openai:v0.9.2", "gpu": True,
                  "cmd": ["--model", "Qwen/Qwen3-8B", "--max-model-len", "16384"],
                  "expose": 8000}},
        {"type": "container/run", "id": "tgi",
         "args": {"image": "ghcr.io/huggingface/text-generation-inference:2.4.1",
                  "entrypoint": ["/bin/sh", "-c"],
                  "cmd": ["text-generation-launcher --model-id $MODEL --num-shard 1"]}},
    ],
}


def test_ecs_task_definition_containers() -> None:
    """``command`` is the image's CMD (the engine image's entrypoint runs the server with it),
    ``entryPoint`` its ENTRYPOINT; ``resourceRequirements`` GPU reserves that many, and a
    container without one gets none."""
    found = parse_with(PARSERS, json.dumps(ECS, indent=2), "task-def.json")
    assert [(v(s.engine), v(s.model), v(s.tp), v(s.engine_version), v(s.gpus), s.name)
            for s in found] == [
        ("vllm", "Qwen/Qwen2.5-7B", 2, "0.10.1.1", 2, "vllm"),
        ("sglang", "Qwen/Qwen3-8B", found[1].tp, "0.4.6.post1", 0, "sglang")]
    assert v(found[0].max_model_len) == 8192 and line(found[0].model) == 16
    assert not isinstance(found[1].tp, int)  # $(TP) is no value ECS sets


def test_nosana_job_operations() -> None:
    """``cmd`` is the CMD (a string runs as ``/bin/sh -c``), ``entrypoint`` the ENTRYPOINT,
    ``global.env`` the environment of every operation; ``gpu: true`` gives every GPU of the
    node (no count), none without it."""
    found = parse_with(PARSERS, json.dumps(NOSANA, indent=2), "job.json")
    assert [(v(s.engine), v(s.model), v(s.engine_version), v(s.gpus), s.name)
            for s in found] == [("vllm", "Qwen/Qwen3-8B", "0.9.2", None, "vllm"),
                                ("tgi", "Qwen/Qwen3-8B", "2.4.1", 0, "tgi")]
    assert v(found[0].max_model_len) == 16384
    assert any("required_vram 24" in n for n in found[0].notes)
    # a string cmd runs as /bin/sh -c CMD: handed to an engine image's own entrypoint, the
    # server gets "/bin/sh" as its first argument (KV701)
    job = json.loads(json.dumps(NOSANA))
    job["ops"][1]["args"]["cmd"] = "vllm serve Qwen/Qwen3-8B"
    (first, _) = parse_with(PARSERS, json.dumps(job, indent=2), "job.json")
    assert [p.option for p in first.engine_problems] == ["/bin/sh"]


def test_other_json_is_not_claimed() -> None:
    for doc in ({"containerDefinitions": "x"}, {"ops": [{"type": "container/create-volume"}]},
                {"containerDefinitions": [{"name": "a"}]}, ["not", "a", "map"]):
        assert parse_with(PARSERS, json.dumps(doc), "other.json") == []


def test_lint_an_ecs_task_definition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``kvlint lint``: the vLLM container with no GPU reservation on a CUDA image
    is an error; with two GPUs it is linted against its config."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    doc = json.loads(json.dumps(ECS))
    del doc["containerDefinitions"][2]
    path = tmp_path / "task-def.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    args = ["lint", str(path), "--offline", "--no-plugins", "--format", "json",
            *model_map({"Qwen/Qwen2.5-7B": "Qwen--Qwen2.5-7B.json"}, CONFIGS)]
    result = CliRunner().invoke(main, args)
    (one,) = json.loads(result.stdout)["results"]
    assert one["serving"]["tp"] == 2 and one["geometry"], result.output
    del doc["containerDefinitions"][1]["resourceRequirements"]
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    result = CliRunner().invoke(main, args)
    (kv206,) = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
                if f["code"] == "KV206"]
    assert result.exit_code == 1 and kv206["severity"] == "error", result.output
    assert "reserves no GPU (no GPU entry in the container's resourceRequirements)" in \
        kv206["message"]


TRUSS = ("""\
base_image:
  image: vllm/vllm-openai:v0.10.1.1
model_metadata:
  repo_id: Qwen/Qwen2.5-7B
docker_server:
  start_command: sh -c "HF_TOKEN=$(cat /secrets/hf_access_token) vllm serve"""
         """ Qwen/Qwen2.5-7B --tensor-parallel-size 2 --port 8000"
  server_port: 8000
  predict_endpoint: /v1/completions
  readiness_endpoint: /health
  liveness_endpoint: /health
resources:
  accelerator: H100:2
  use_gpu: true
model_name: Qwen 2.5 7B vLLM
""")


def test_truss_docker_server() -> None:
    """The start command (split as supervisord splits it, then the ``sh -c`` script) runs in
    the base image; ``accelerator: TYPE:COUNT`` is the GPUs; ``model_name`` is a display
    name, never the model."""
    from kvlint.manifests.container_tasks import TrussConfigParser

    (found,) = parse_with([TrussConfigParser()], TRUSS, "config.yaml")
    assert (v(found.engine), v(found.model), v(found.tp), v(found.engine_version),
            v(found.gpus), v(found.gpu_type), found.name) == (
        "vllm", "Qwen/Qwen2.5-7B", 2, "0.10.1.1", 2, "H100", "Qwen 2.5 7B vLLM")
    assert line(found.model) == 6
    (one,) = parse_with([TrussConfigParser()], TRUSS.replace("H100:2", "A10G"), "c.yaml")
    assert (v(one.gpus), v(one.gpu_type)) == (1, "A10G")
    cpu = TRUSS.replace("  accelerator: H100:2\n  use_gpu: true\n", "  cpu: '4'\n")
    (none,) = parse_with([TrussConfigParser()], cpu, "c.yaml")
    assert v(none.gpus) == 0
    assert parse_with([TrussConfigParser()], "model_name: x\nresources: {}\n", "c.yaml") == []


def test_truss_start_command_with_an_unclosed_quote_is_refused(tmp_path: Path) -> None:
    """supervisord splits the command with shlex when it spawns the program: an unclosed
    quote is a command it cannot parse (KV903 on the start command's line), never KV904."""
    path = tmp_path / "config.yaml"
    path.write_text(TRUSS.replace('--port 8000"', "--port 8000"), encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(path), "--format", "json", "--offline",
                                       "--no-cache", "--isolated"])
    found = [(f["code"], f["severity"], f["line"]) for r in json.loads(result.stdout)["results"]
             for f in r["findings"]]
    assert found == [("KV903", "error", 6)], found
