"""Serving packs (:mod:`kvlint.manifests.serving_packs`): Nebari's ``LLMModel`` read as the
pack's operator builds its vLLM pod (modelservice.go@502536264e025064eaf38143a0ed31e86ab127dc),
and revving-ai's ``VllmDeployment`` as its controller does (vllmdeployment_controller.go
@d771480bb749fade165ca6ae2058fc9552353698), on fixtures written in the shape of their examples."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.serving_packs import (
    NEBARI_DEFAULT_IMAGE,
    NebariLLMModelParser,
    VllmDeploymentParser,
)
from tests.helpers import CONFIGS, ROOT
from tests.loaders.manifests.support import model_map, parse_with

FIXTURE = ROOT / "fixtures" / "operators" / "packs" / \
    "nebari-llmmodel-vllm-qwen3-8b-llama3.1-70b.yaml"
OPERATOR = ROOT / "fixtures" / "operators" / "packs" / \
    "vllm-operator-vllmdeployment-llama3.1-8b-qwen3-8b.yaml"


def v(value: object) -> object:
    return value.value if isinstance(value, Located) else value


def test_each_llmmodel_is_the_vllm_pod_its_operator_builds() -> None:
    qwen, llama = parse_with([NebariLLMModelParser()], FIXTURE.read_text(encoding="utf-8"),
                             str(FIXTURE))
    # the default image: the installation's, so the version is not known
    assert (v(qwen.model), v(qwen.engine), v(qwen.tp), v(qwen.dp), v(qwen.gpus),
            v(qwen.max_model_len)) == ("Qwen/Qwen3-8B", "vllm", 1, 1, 1, 8192)
    assert isinstance(qwen.engine_version, Unresolved)
    assert NEBARI_DEFAULT_IMAGE in qwen.engine_version.reason
    assert v(qwen.gpu_type) == "NVIDIA-L4"  # advanced.vllm.nodeSelector (the label)
    # tensorParallelism defaults to gpu.count; serving.image pins the release
    assert (v(llama.model), v(llama.tp), v(llama.gpus), v(llama.engine_version),
            v(llama.gpu_memory_utilization)) == \
        ("meta-llama/Llama-3.1-70B-Instruct", 4, 4, "0.11.0", 0.92)
    assert any("replicas 2" in note for note in llama.notes)


def test_tensor_parallelism_wins_over_the_gpu_count_and_the_fixture_lints_clean() -> None:
    text = FIXTURE.read_text(encoding="utf-8").split("---")[1].replace(
        "    replicas: 2\n", "    replicas: 2\n    tensorParallelism: 8\n")
    (llama,) = parse_with([NebariLLMModelParser()], text)
    assert (v(llama.tp), v(llama.gpus)) == (8, 4)
    _lints_clean(FIXTURE, {"Qwen/Qwen3-8B": "Qwen--Qwen3-8B.json",
                           "meta-llama/Llama-3.1-70B-Instruct":
                               "meta-llama--Meta-Llama-3.1-70B.json"})


def _lints_clean(path: Path, configs: dict[str, str]) -> None:
    """``kvlint lint`` of ``path`` offline, each model mapped to its fixture config: one result
    per model, in the file's order, and no error."""
    out = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                    "--offline", "--no-cache", "--format", "json",
                                    *model_map(configs, CONFIGS)])
    data = json.loads(out.stdout)
    assert [r["target"]["ref"] for r in data["results"]] == list(configs)
    assert out.exit_code == 0, [f["code"] for r in data["results"] for f in r["findings"]]


def test_a_model_from_an_oci_image_is_unresolved() -> None:
    text = """apiVersion: llm.nebari.dev/v1alpha1
kind: LLMModel
metadata: {name: granite}
spec:
  model: {name: granite-3.1-8b, source: oci, image: "quay.io/org/granite:1"}
  resources: {gpu: {count: 1, type: nvidia}}
"""
    (m,) = parse_with([NebariLLMModelParser()], text)
    assert isinstance(m.model, Unresolved) and "oci" in m.model.reason


def test_the_operator_model_path_is_replaced_by_a_users_model_flag() -> None:
    # the operator writes --model /model-cache first; a --model in vllmArgs comes later and
    # wins in vLLM's parser, so the served model is the user's
    text = """apiVersion: llm.nebari.dev/v1alpha1
kind: LLMModel
metadata: {name: custom}
spec:
  model: {name: Qwen/Qwen3-8B, source: huggingface}
  resources: {gpu: {count: 1, type: nvidia}}
  serving: {vllmArgs: ["--model", "/weights/other"]}
"""
    (m,) = parse_with([NebariLLMModelParser()], text)
    assert v(m.model) == "/weights/other"
    (plain,) = parse_with([NebariLLMModelParser()], text.replace(
        '  serving: {vllmArgs: ["--model", "/weights/other"]}\n', ""))
    assert v(plain.model) == "Qwen/Qwen3-8B"


def test_no_gpu_count_writes_no_tensor_parallel_flag() -> None:
    text = """apiVersion: llm.nebari.dev/v1alpha1
kind: LLMModel
metadata: {name: nogpu}
spec:
  model: {name: Qwen/Qwen3-8B, source: huggingface}
  resources: {gpu: {type: nvidia}}
"""
    (m,) = parse_with([NebariLLMModelParser()], text)
    assert m.tp is None and not m.engine_problems


def test_each_vllmdeployment_is_the_pod_its_controller_builds() -> None:
    llama, qwen = parse_with([VllmDeploymentParser()], OPERATOR.read_text(encoding="utf-8"),
                             str(OPERATOR))
    # --model, then the vLLMConfig flags that are set; no tp flag and no GPU request
    assert (v(llama.model), v(llama.engine), v(llama.engine_version), v(llama.tp),
            v(llama.gpus), v(llama.max_model_len), v(llama.gpu_memory_utilization)) == \
        ("meta-llama/Llama-3.1-8B-Instruct", "vllm", "0.6.2", None, None, 16384, 0.85)
    assert llama.format == "vllm-operator" and not llama.engine_problems
    assert any("replicas 2" in note for note in llama.notes)
    # the container is picked although it is not named vllm (it is the only one); its args
    # and resources are dropped, so tp stays vLLM's default and no GPU is requested
    assert (v(qwen.model), v(qwen.engine_version), v(qwen.tp), v(qwen.gpus),
            v(qwen.max_model_len)) == ("Qwen/Qwen3-8B", "0.9.2", None, None, 8192)
    assert any("drops the container's args, resources" in note for note in qwen.notes)


def test_the_vllmdeployment_fixture_lints_clean() -> None:
    _lints_clean(OPERATOR, {"meta-llama/Llama-3.1-8B-Instruct":
                                "meta-llama--Meta-Llama-3.1-8B.json",
                            "Qwen/Qwen3-8B": "Qwen--Qwen3-8B.json"})


def test_the_operator_flags_reach_vllm_as_it_writes_them() -> None:
    text = """apiVersion: core.vllmoperator.org/v1alpha1
kind: VllmDeployment
metadata: {name: tiny}
spec:
  replicas: 0
  model: {name: Qwen/Qwen3-8B, hf_url: "https://huggingface.co/Qwen/Qwen3-8B"}
  vLLMConfig: {port: 0, gpu-memory-utilization: "", log-level: "", block-size: 32,
               max-model-len: 0, enforce-eager: true}
  containers:
    - {name: sidecar, image: busybox}
    - {name: vllm, image: "vllm/vllm-openai:v0.8.5", command: ["sleep", "inf"]}
"""
    (m,) = parse_with([VllmDeploymentParser()], text)
    # empty and zero values write no flag; the container named vllm is the one that runs,
    # and its command is dropped (the image's entrypoint runs)
    assert (v(m.engine_version), v(m.max_model_len), v(m.gpu_memory_utilization)) == \
        ("0.8.5", None, None)
    assert not m.engine_problems  # --block-size 32 and a bare --enforce-eager: both accepted
    assert any("drops the container's command" in note for note in m.notes)


def test_a_vllmdeployment_with_no_container_to_pick_runs_no_known_image() -> None:
    text = """apiVersion: core.vllmoperator.org/v1alpha1
kind: VllmDeployment
metadata: {name: two}
spec:
  replicas: 1
  model: {name: Qwen/Qwen3-8B, hf_url: x}
  vLLMConfig: {port: 8000, gpu-memory-utilization: "0.9", log-level: info, block-size: 16,
               max-model-len: 4096, enforce-eager: false}
  containers:
    - {name: a, image: "vllm/vllm-openai:v0.8.5"}
    - {name: b, image: "vllm/vllm-openai:v0.8.5"}
"""
    models = parse_with([VllmDeploymentParser()], text)
    assert all(isinstance(m.engine_version, Unresolved) for m in models)
