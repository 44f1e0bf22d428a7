"""Serving packs (:mod:`kvlint.manifests.serving_packs`): Nebari's ``LLMModel`` read as the
pack's operator builds its vLLM pod (modelservice.go@502536264e025064eaf38143a0ed31e86ab127dc),
on a fixture written in the shape of the pack's examples."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.serving_packs import NEBARI_DEFAULT_IMAGE, NebariLLMModelParser
from tests.helpers import CONFIGS, ROOT
from tests.loaders.manifests.support import model_map, parse_with

FIXTURE = ROOT / "fixtures" / "operators" / "packs" / \
    "nebari-llmmodel-vllm-qwen3-8b-llama3.1-70b.yaml"


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
    runner = CliRunner()
    path = FIXTURE
    out = runner.invoke(main, ["lint", str(path), "--no-plugins", "--isolated", "--offline",
                               "--no-cache", "--format", "json", *model_map(
                                   {"Qwen/Qwen3-8B": "Qwen--Qwen3-8B.json",
                                    "meta-llama/Llama-3.1-70B-Instruct":
                                        "meta-llama--Meta-Llama-3.1-70B.json"}, CONFIGS)])
    data = json.loads(out.stdout)
    assert [r["target"]["ref"] for r in data["results"]] == \
        ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-70B-Instruct"]
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
