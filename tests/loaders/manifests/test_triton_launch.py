"""Triton Inference Server with the TensorRT-LLM or the vLLM backend, wherever a command
runs it: a script's ``docker run`` or ``mpirun``, the TensorRT-LLM backend's
``launch_triton_server.py``, a Kubernetes container in a TensorRT-LLM or vLLM Triton image, a
Slurm job's Apptainer file. Each is a served model (its model unresolved: KV902), its MPI
world size read as tp; a ``tritonserver`` with no sign of either backend is not one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import split_script
from kvlint.manifests.triton_launch import triton_launch, trtllm_image
from tests.loaders.manifests.support import extract_path, v


def _models(tmp_path: Path, name: str, text: str) -> list:  # type: ignore[type-arg]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return extract_path(path)


def test_a_docker_run_of_mpirun_tritonserver_is_a_trtllm_server(tmp_path: Path) -> None:
    """The backend's launcher writes ``mpirun -n 1 tritonserver ... :`` once per rank: two
    app contexts are two ranks; the image, a local build, names TensorRT-LLM."""
    text = ("#!/bin/bash\nREPO=/models/llama\n"
            "docker run --rm --gpus all triton-tensorrt-llm-server \\\n"
            "  mpirun --allow-run-as-root -n 1 /opt/tritonserver/bin/tritonserver \\\n"
            "    --model-repository=$REPO : \\\n"
            "  -n 1 /opt/tritonserver/bin/tritonserver --model-repository=$REPO :\n")
    (m,) = _models(tmp_path, "serve.sh", text)
    assert v(m.engine) == "trtllm" and v(m.tp) == 2
    assert isinstance(m.model, Unresolved) and m.model.text == "/models/llama"
    assert "model repository /models/llama" in m.model.reason
    assert m.model.line == 4


def test_the_backends_launcher_world_size_is_tp(tmp_path: Path) -> None:
    """``launch_triton_server.py --world_size N --model_repo R`` (tensorrtllm_backend
    scripts/launch_triton_server.py): N ranks, read as tp."""
    text = ("#!/bin/bash\nTP=4\npython3 scripts/launch_triton_server.py --world_size=${TP} "
            "--model_repo /work/triton_model_repo\n")
    (m,) = _models(tmp_path, "run.sh", text)
    assert v(m.engine) == "trtllm" and v(m.tp) == 4
    assert isinstance(m.model, Unresolved) and m.model.text == "/work/triton_model_repo"
    text = "python3 launch_triton_server.py --world_size two --model_repo /r\n"
    (m,) = _models(tmp_path, "run2.sh", text)
    assert isinstance(m.tp, Unresolved) and "two" in m.tp.reason


def test_a_kubernetes_container_in_a_trtllm_triton_image(tmp_path: Path) -> None:
    """``exec tritonserver`` in ``nvcr.io/nvidia/tritonserver:24.12-trtllm-python-py3``: the
    image is the evidence; its release dates the engine (24.12 -> TensorRT-LLM 0.16.0)."""
    text = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: triton
spec:
  template:
    spec:
      containers:
      - name: triton
        image: nvcr.io/nvidia/tritonserver:24.12-trtllm-python-py3
        command: ["/bin/bash", "-c"]
        args:
        - |
          ls /models
          exec tritonserver --model-repository=/models --exit-on-error=false
        resources:
          limits:
            nvidia.com/gpu: 1
"""
    (m,) = _models(tmp_path, "deploy.yaml", text)
    assert (v(m.engine), v(m.engine_version), v(m.gpus)) == ("trtllm", "0.16.0", 1)
    assert isinstance(m.model, Unresolved) and m.model.text == "/models"
    assert m.tp is None  # one process: tp 1


def test_tritonserver_without_tensorrt_llm_is_not_a_served_model(tmp_path: Path) -> None:
    """An ONNX model repository in the general Triton image: no LLM engine to lint."""
    text = ("#!/bin/bash\ndocker run --gpus all -v $PWD/models:/models "
            "nvcr.io/nvidia/tritonserver:24.05-py3 tritonserver --model-repository=/models\n")
    assert _models(tmp_path, "onnx.sh", text) == []


VLLM_TRITON = """apiVersion: apps/v1
kind: Deployment
metadata: {name: triton}
spec:
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
        - name: triton
          image: nvcr.io/nvidia/tritonserver:24.01-vllm-python-py3
          resources: {limits: {nvidia.com/gpu: 1}}
          args: ["tritonserver", "--model-store=gs://bucket/model_repository",
                 "--log-verbose=1"]
"""


def test_a_tritonserver_in_the_vllm_triton_image_serves_vllm(tmp_path: Path) -> None:
    """Triton's vLLM backend builds the engine from model.json in the model repository: the
    model and tp are there, unresolved (KV902), never a pod linted as serving nothing."""
    (m,) = _models(tmp_path, "deploy.yaml", VLLM_TRITON)
    # the release dates the backend's vLLM (build.py@v2.42.0)
    assert (v(m.engine), v(m.engine_version), v(m.gpus)) == ("vllm", "0.2.3", 1)
    assert isinstance(m.model, Unresolved) and m.model.text == "gs://bucket/model_repository"
    assert "vLLM backend" in m.model.reason and "model.json" in m.model.reason
    assert isinstance(m.tp, Unresolved)


def test_a_tritonserver_whose_repository_names_vllm(tmp_path: Path) -> None:
    text = ("#!/bin/bash\ndocker run --gpus all -v $PWD/vllm_backend/samples/model_repository:"
            "/models nvcr.io/nvidia/tritonserver:24.05-py3 \\\n"
            "  tritonserver --model-repository ./vllm_backend/samples/model_repository\n")
    (m,) = _models(tmp_path, "serve.sh", text)
    assert v(m.engine) == "vllm" and isinstance(m.model, Unresolved)


def test_orchestrator_mode_leaves_the_world_to_the_engine() -> None:
    """``TRTLLM_ORCHESTRATOR`` set to a nonzero integer (C's ``atoi``): the backend spawns
    the engines' ranks itself; ``0`` or a word is not orchestrator mode."""
    (words,) = split_script("tritonserver --model-repository=/trtllm_repo")
    for value in ("1", "2", " 01x"):
        found = triton_launch(words, env=Env({"TRTLLM_ORCHESTRATOR": value}, k8s=False))
        assert found is not None and isinstance(found.world, Unresolved)
    for value in ("0", "yes", ""):
        found = triton_launch(words, env=Env({"TRTLLM_ORCHESTRATOR": value}, k8s=False))
        assert found is not None and found.world is None
    plain = triton_launch(words)
    assert plain is not None and plain.world is None and plain.repository == "/trtllm_repo"


def test_mpirun_counts() -> None:
    (words,) = split_script("mpirun -np 4 tritonserver --model-repository /m/tensorrtllm")
    found = triton_launch(words)
    assert found is not None and isinstance(found.world, Located) and found.world.value == 4
    (words,) = split_script("mpirun -n $N tritonserver --model-repository /m/trtllm")
    found = triton_launch(words)
    assert found is not None and found.world is None  # a count kvlint cannot read
    (words,) = split_script("mpirun -n 99999 tritonserver --model-repository /m/trtllm")
    found = triton_launch(words)
    assert found is not None and found.world is None


def test_triton_vllm_releases_only_from_the_table() -> None:
    from kvlint.manifests.images import engine_from_image

    assert engine_from_image("nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3")[:2] == \
        ("vllm", "0.7.0")
    # 24.08: its build.py and the compatibility matrix disagree: unknown, never a guess
    assert engine_from_image("nvcr.io/nvidia/tritonserver:24.08-vllm-python-py3")[:2] == \
        ("vllm", None)


def test_images() -> None:
    assert trtllm_image("nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3")
    assert trtllm_image("tritonserver_24.05-trtllm-python-py3.sif")
    assert not trtllm_image("nvcr.io/nvidia/tritonserver:25.01-py3")
    assert not trtllm_image(None)


def test_a_hostile_command_is_bounded() -> None:
    """A command of a hundred thousand words is read up to its bound."""
    words = split_script("tritonserver --model-repository=/trtllm " + "-n 1 " * 100_000)[0]
    found = triton_launch(words)
    assert found is not None and found.repository == "/trtllm"


def test_a_python_service_that_starts_the_launcher(tmp_path: Path) -> None:
    """A BentoML service whose ``__init__`` runs ``cmd + flags`` with ``subprocess.Popen``:
    the launcher's world size and repository, the service's GPU."""
    text = '''import subprocess
import bentoml


@bentoml.service(resources={"gpu": 2, "gpu_type": "nvidia-a100-80gb"})
class Llm:
    def __init__(self) -> None:
        cmd = ["python3", "tensorrtllm_backend/scripts/launch_triton_server.py"]
        flags = ["--model_repo", "tensorrtllm_backend/all_models/inflight_batcher_llm",
                 "--world_size", "2"]
        self.launcher = subprocess.Popen(cmd + flags)
'''
    (m,) = _models(tmp_path, "service.py", text)
    assert (v(m.engine), v(m.tp), v(m.gpus)) == ("trtllm", 2, 2)
    assert isinstance(m.model, Unresolved)
    assert m.model.text == "tensorrtllm_backend/all_models/inflight_batcher_llm"


@pytest.mark.parametrize("command", [
    "pkill -f tritonserver", "echo starting tritonserver", "which tritonserver",
    "command -v tritonserver", "ls /opt/tritonserver/bin/tritonserver",
])
def test_a_command_that_only_mentions_tritonserver(command: str) -> None:
    """In a TensorRT-LLM Triton image, a command that only names the server runs none."""
    (words,) = split_script(command)
    assert triton_launch(words, image="nvcr.io/nvidia/tritonserver:24.12-trtllm-python-py3") \
        is None
