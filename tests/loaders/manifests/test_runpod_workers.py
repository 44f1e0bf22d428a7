"""RunPod's serverless workers (kvlint/manifests/runpod_workers.py): images whose entrypoint
starts vLLM or SGLang with options written from environment variables, read wherever such an
image runs (Kubernetes, compose, a Dockerfile built on one, ``docker run``, a RunPod Python
app), and the engine version of each worker release (worker-vllm@7a92503, worker-sglang
@1b924c9 and their tags)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.images import engine_from_image
from kvlint.manifests.runpod_workers import worker_release
from tests.helpers import CONFIGS
from tests.loaders.manifests.support import extract_path


def v(value: object) -> object:
    return value.value if isinstance(value, Located) else value


served = extract_path


@pytest.mark.parametrize(("image", "version"), [
    ("runpod/worker-v1-vllm:v2.9.4", "0.10.0"),
    ("runpod/worker-v1-vllm:v2.6.0stable-cuda12.1.0", "0.9.0.1"),
    ("runpod/worker-v1-vllm:v1.1", "0.5.3.post1"),
    ("runpod/worker-v1-vllm:v2.13.1", "0.15.1"),
    ("runpod/worker-v1-vllm:v2.22.4", "0.20.2"),  # the release that reverted vLLM
    ("docker.io/runpod/worker-v1-vllm:v2.25.2", "0.27.1"),
    ("runpod/worker-v1-vllm:v2.5.1", None),  # its config and its Dockerfile disagree
    ("runpod/worker-v1-vllm:v9.0.0", None),  # a release kvlint has no record of
    ("runpod/worker-v1-vllm:dev-main", None),
    ("runpod/worker-sglang:1.2.0", "0.4.6.post4"),
    ("runpod/worker-sglang:2.0.1", "0.5.2"),
    ("runpod/worker-sglang:v0.4.1stable", "0.4.1"),  # tagged after the SGLang it installed
    ("runpod/worker-sglang:dev", None),
])
def test_a_worker_tag_is_its_release_never_the_engine_version(image: str,
                                                              version: str | None) -> None:
    found = worker_release(image)
    assert found is not None and found[1] == version, found
    # what every manifest reads the image with: the engine's release, not the worker's
    assert engine_from_image(image)[1] == version
    assert engine_from_image(image)[0] == ("sglang" if "sglang" in image else "vllm")


def test_other_images_are_no_worker() -> None:
    assert worker_release("vllm/vllm-openai:v0.10.0") is None
    assert worker_release("runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel") is None


K8S = """apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  template:
    spec:
      containers:
        - name: worker
          image: runpod/worker-v1-vllm:{tag}
          env:
            - {name: MODEL_NAME, value: Qwen/Qwen3-8B}
            - {name: MAX_MODEL_LEN, value: "16384"}
            - {name: TENSOR_PARALLEL_SIZE, value: "2"}
            - {name: ENFORCE_EAGER, value: "{eager}"}
            - {name: CONTEXT_LENGTH, value: "9999"}
          resources: {limits: {nvidia.com/gpu: 2}}
"""


def test_a_worker_container_runs_vllm_with_its_environment(tmp_path: Path) -> None:
    path = tmp_path / "worker.yaml"
    path.write_text(K8S.replace("{tag}", "v2.9.4").replace("{eager}", "true"))
    (m,) = served(path)
    assert (v(m.model), v(m.engine), v(m.engine_version), v(m.tp), v(m.gpus),
            v(m.max_model_len), v(m.gpu_memory_utilization)) == \
        ("Qwen/Qwen3-8B", "vllm", "0.10.0", 2, 2, 16384, 0.95)
    assert m.model.line == 11 and m.max_model_len.line == 12  # type: ignore[union-attr]
    notes = " ".join(m.notes)
    # the in-process releases: their own default utilisation, tp from the visible GPUs
    assert "own default gpu_memory_utilization 0.95" in notes
    assert "number of visible GPUs" in notes
    assert "ignores CONTEXT_LENGTH" in notes  # SGLang's name: the vLLM worker never reads it
    assert not m.engine_problems


def test_the_newest_worker_keeps_vllms_default_and_refuses_a_bad_boolean(
        tmp_path: Path) -> None:
    path = tmp_path / "worker.yaml"
    path.write_text(K8S.replace("{tag}", "v2.25.2").replace("{eager}", "maybe"))
    (m,) = served(path)
    assert (v(m.engine_version), v(m.gpu_memory_utilization)) == ("0.27.1", None)
    (problem,) = m.engine_problems
    assert problem.data["reason"] == "runpod-boolean" and problem.line == 14
    path.write_text(K8S.replace("{tag}", "v2.25.2").replace("{eager}", "off"))
    (m,) = served(path)
    assert not m.engine_problems  # --no-enforce-eager: a flag vLLM 0.27 has


def test_a_secret_model_stays_unresolved(tmp_path: Path) -> None:
    path = tmp_path / "worker.yaml"
    path.write_text(K8S.replace("{tag}", "v2.25.2").replace("{eager}", "true").replace(
        "{name: MODEL_NAME, value: Qwen/Qwen3-8B}",
        "{name: MODEL_NAME, valueFrom: {secretKeyRef: {name: s, key: model}}}"))
    (m,) = served(path)
    assert isinstance(m.model, Unresolved)


COMPOSE = """services:
  worker:
    image: runpod/worker-sglang:{tag}
    deploy:
      resources:
        reservations:
          devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]
    environment:
      - MODEL_NAME=Qwen/Qwen3-8B
      - MODEL_PATH=/models/other
      - TRUST_REMOTE_CODE=true
      - MEM_FRACTION_STATIC=0.85
      - CONTEXT_LENGTH=16384
      - DISABLE_CUDA_GRAPH=on
      - KV_CACHE_DTYPE=fp8_e5m2
"""


def test_the_sglang_worker_reads_its_own_table(tmp_path: Path) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE.replace("{tag}", "2.0.1"))
    (m,) = served(path)
    assert (v(m.model), v(m.engine), v(m.engine_version), v(m.max_model_len),
            v(m.gpu_memory_utilization), v(m.trust_remote_code), v(m.kv_cache_dtype)) == \
        ("Qwen/Qwen3-8B", "sglang", "0.5.2", 16384, 0.85, True, None)
    # KV_CACHE_DTYPE is not in the worker's table: SGLang keeps its default, and says so
    assert any("ignores KV_CACHE_DTYPE" in note for note in m.notes)
    # releases 1.0.0-1.2.0 read the model from MODEL_PATH
    path.write_text(COMPOSE.replace("{tag}", "1.2.0"))
    (old,) = served(path)
    assert (v(old.model), v(old.engine_version)) == ("/models/other", "0.4.6.post4")


def test_the_sglang_worker_binds_its_host_and_its_handler_answers_the_ports(
        tmp_path: Path) -> None:
    """The worker always passes --host $HOST (0.0.0.0) and --port $PORT (30000) to SGLang
    (engine.py@1b924c9), so SGLang's own loopback default does not apply; the ports a
    compose service publishes are its handler's (local testing), not the engine's: no
    KV705."""
    path = tmp_path / "docker-compose.yml"
    path.write_text("services:\n  w:\n    image: runpod/worker-sglang:dev\n"
                    "    environment: [MODEL_NAME=org/m, PORT=30001]\n"
                    "    ports: ['8000:8000']\n    gpus: all\n")
    from kvlint.manifests.runpod_workers import worker_command
    from kvlint.manifests.shell_env import Env

    command = worker_command("runpod/worker-sglang:dev",
                             Env({"MODEL_NAME": "org/m", "PORT": "30001"}, k8s=False), 3)
    assert command is not None
    words = [w.text for w in command.words]
    assert words[words.index("--host") + 1] == "0.0.0.0"
    assert words[words.index("--port") + 1] == "30001"
    result = CliRunner().invoke(main, ["lint", str(path), "--offline", "--isolated",
                                       "--no-plugins", "--format", "json"])
    codes = [f["code"] for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    assert "KV705" not in codes


def test_a_dockerfile_on_a_worker_serves_its_env(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text('FROM runpod/worker-v1-vllm:v2.13.1\n'
                    'ENV MODEL_NAME="Qwen/Qwen3-8B" \\\n    MAX_MODEL_LEN=32768\n')
    (m,) = served(path)
    assert (v(m.model), v(m.engine), v(m.engine_version), v(m.max_model_len)) == \
        ("Qwen/Qwen3-8B", "vllm", "0.15.1", 32768)


def test_docker_run_of_a_worker_reads_its_e_variables(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text('#!/bin/bash\nMODEL=Qwen/Qwen3-8B\n'
                    'docker run --gpus all -e MODEL_NAME=$MODEL -e MAX_MODEL_LEN=8192 \\\n'
                    '  runpod/worker-v1-vllm:v2.25.2\n')
    (m,) = served(path)
    assert (v(m.model), v(m.engine_version), v(m.max_model_len)) == \
        ("Qwen/Qwen3-8B", "0.27.1", 8192)


def test_a_runpod_pod_of_a_worker_is_linted_with_its_env(tmp_path: Path) -> None:
    path = tmp_path / "deploy.py"
    path.write_text('import runpod\n\nMODEL = "Qwen/Qwen3-8B"\n'
                    'runpod.create_pod(name="q", image_name="runpod/worker-v1-vllm:v2.25.2",\n'
                    '                  gpu_type_id="NVIDIA L4", gpu_count=1,\n'
                    '                  env={"MODEL_NAME": MODEL, "MAX_MODEL_LEN": "65536",\n'
                    '                       "KV_CACHE_DTYPE": "fp8"})\n')
    out = CliRunner().invoke(main, [
        "lint", str(path), "--no-plugins", "--isolated", "--offline", "--no-cache",
        "--format", "json", "--model-map", f"Qwen/Qwen3-8B={CONFIGS / 'Qwen--Qwen3-8B.json'}"])
    (result,) = json.loads(out.stdout)["results"]
    assert (result["serving"]["engine_version"], result["serving"]["max_model_len"],
            result["serving"]["kv_cache_dtype"], result["serving"]["gpu"]) == \
        ("0.27.1", 65536, "fp8", "NVIDIA L4")
    # 65,536 tokens is past Qwen3-8B's 40,960, and one sequence does not fit an L4
    assert {f["code"] for f in result["findings"]} == {"KV501", "KV703"}
    assert out.exit_code == 1


def test_a_tag_of_more_digits_than_an_int_takes_is_no_release() -> None:
    # a hostile tag: read as no release (unknown engine version), never a ValueError
    assert worker_release("runpod/worker-v1-vllm:v" + "9" * 6000)[:2] == ("vllm", None)
