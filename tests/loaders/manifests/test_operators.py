"""Serving operators (:mod:`kvlint.manifests.operators`): RoleBasedGroup v1alpha2,
AIBrix StormService/RoleSet/RayClusterFleet, OME InferenceService + runtimes + base models,
KAITO Workspace. Every fixture of ``fixtures/operators`` gives exactly the served models a
reader of the operator's controller derives, ``kvlint lint --offline`` reports the expected
findings on it, and synthetic cases cover the patterns the fixtures do not."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import DocumentContext, Located, ServedModel, Unresolved
from kvlint.manifests.builtin import LAZY_PARSERS, kvlint_manifest_format
from kvlint.manifests.operators import (
    AibrixParser,
    KaitoWorkspaceParser,
    OmeParser,
    RoleBasedGroupV2Parser,
)
from kvlint.manifests.yaml_marks import load_documents
from tests.helpers import CONFIGS, ROOT
from tests.loaders.manifests.support import model_map, parse_with

FIXTURES = ROOT / "fixtures" / "operators"
PARSERS = [RoleBasedGroupV2Parser(), AibrixParser(), OmeParser(), KaitoWorkspaceParser()]
MODELS = {
    "Qwen/Qwen3-8B": "Qwen--Qwen3-8B.json",
    "Qwen/Qwen2.5-7B": "Qwen--Qwen2.5-7B.json",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B.json",
    "deepseek-ai/DeepSeek-V3": "deepseek-ai--DeepSeek-V3.json",
    "meta-llama/Llama-3.3-70B-Instruct": "meta-llama--Llama-3.3-70B-Instruct.json",
    "microsoft/phi-4": "microsoft--phi-4.json",
}
MAP = model_map(MODELS, CONFIGS)


def extract_text(text: str, path: str = "manifest.yaml") -> list[ServedModel]:
    return parse_with(PARSERS, text, path)


def extract(name: str) -> list[ServedModel]:
    path = FIXTURES / name
    return extract_text(path.read_text(encoding="utf-8"), str(path))


def value(found: Any) -> Any:
    return found.value if isinstance(found, Located) else found


def line(found: Any) -> int | None:
    return found.line if isinstance(found, Located | Unresolved) else None


def summary(model: ServedModel) -> dict[str, Any]:
    return {"format": model.format, "role": model.role, "model": value(model.model),
            "engine": value(model.engine), "version": value(model.engine_version),
            "tp": value(model.tp), "pp": value(model.pp), "gpus": value(model.gpus)}


CASES: dict[str, list[dict[str, Any]]] = {
    "rbg-v1alpha2-sglang-pd-qwen3-8b.yaml": [
        {"format": "rbg-v1alpha2", "role": "prefill", "model": "Qwen/Qwen3-8B",
         "engine": "sglang", "version": "0.5.9", "tp": 4, "pp": None, "gpus": 2},
        {"format": "rbg-v1alpha2", "role": "decode", "model": "Qwen/Qwen3-8B",
         "engine": "sglang", "version": "0.5.9", "tp": 2, "pp": None, "gpus": 2}],
    "aibrix-stormservice-vllm-pd-qwen3-8b.yaml": [
        {"format": "aibrix", "role": "prefill", "model": "Qwen/Qwen3-8B", "engine": "vllm",
         "version": "0.10.1", "tp": 1, "pp": None, "gpus": 1},
        {"format": "aibrix", "role": "decode", "model": "Qwen/Qwen3-8B", "engine": "sglang",
         "version": "0.4.9.post3", "tp": 2, "pp": None, "gpus": 2}],
    "aibrix-rayclusterfleet-vllm-qwen2.5-7b-tp2.yaml": [
        {"format": "aibrix", "role": None, "model": "Qwen/Qwen2.5-7B", "engine": "vllm",
         "version": "0.7.1", "tp": 2, "pp": None, "gpus": 2}],
    "ome-isvc-sglang-llama3.1-8b.yaml": [
        {"format": "ome", "role": None, "model": "meta-llama/Llama-3.1-8B-Instruct",
         "engine": "sglang", "version": "0.4.8.post1", "tp": 2, "pp": None, "gpus": 2}],
    "ome-pd-multinode-deepseek-v3.yaml": [
        {"format": "ome", "role": "prefill", "model": "deepseek-ai/DeepSeek-V3",
         "engine": "sglang", "version": "0.4.8.post1", "tp": 16, "pp": None, "gpus": 16},
        {"format": "ome", "role": "decode", "model": "deepseek-ai/DeepSeek-V3",
         "engine": "sglang", "version": "0.4.8.post1", "tp": 16, "pp": None, "gpus": 16}],
    "kaito-workspace-llama3.3-70b-2node.yaml": [
        {"format": "kaito", "role": None, "model": "meta-llama/Llama-3.3-70B-Instruct",
         "engine": "vllm", "version": None, "tp": 2, "pp": 2, "gpus": 4}],
    "kaito-workspace-phi4-a100.yaml": [
        {"format": "kaito", "role": None, "model": "microsoft/phi-4", "engine": "vllm",
         "version": None, "tp": 1, "pp": None, "gpus": 1}],
}


def test_every_operator_fixture_has_a_case() -> None:
    assert {p.name for p in FIXTURES.glob("*.yaml")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_served_models(name: str) -> None:
    assert [summary(m) for m in extract(name)] == CASES[name]


def test_fixture_details_and_lines() -> None:
    prefill, decode = extract("rbg-v1alpha2-sglang-pd-qwen3-8b.yaml")
    assert line(prefill.tp) == 24 and line(prefill.gpus) == 28
    assert "spec.roleTemplates sglang-base" in "\n".join(prefill.notes)
    assert isinstance(decode.gpus, Located) and "leaderWorkerPattern size 2" in \
        decode.gpus.source
    _, storm = extract("aibrix-stormservice-vllm-pd-qwen3-8b.yaml")
    assert isinstance(storm.gpus, Located) and "podGroupSize 2" in storm.gpus.source
    (fleet,) = extract("aibrix-rayclusterfleet-vllm-qwen2.5-7b-tp2.yaml")
    assert isinstance(fleet.gpus, Located)
    assert fleet.gpus.source == "Ray cluster GPUs: head 1 + gpu-group 1 x 1"
    assert value(fleet.max_model_len) == 16384
    (isvc,) = extract("ome-isvc-sglang-llama3.1-8b.yaml")
    assert line(isvc.model) == 12 and line(isvc.tp) == 36
    assert value(isvc.max_model_len) == 65536 and value(isvc.gpu_memory_utilization) == 0.9
    assert "maxReplicas 2" in "\n".join(isvc.notes)
    prefill, decode = extract("ome-pd-multinode-deepseek-v3.yaml")
    # the InferenceService's decoder override wins over the runtime's env
    assert value(prefill.max_model_len) == 32768 and value(decode.max_model_len) == 65536
    assert value(decode.max_num_seqs) == 1024
    (llama,) = extract("kaito-workspace-llama3.3-70b-2node.yaml")
    assert value(llama.max_model_len) == 16384 and line(llama.max_model_len) == 15
    assert value(llama.gpu_memory_utilization) == 0.95
    assert value(llama.gpu_type) == "A100-80GB"  # the GPU of Standard_NC48ads_A100_v4
    assert line(llama.tp) == 23 and line(llama.pp) == 22
    (phi,) = extract("kaito-workspace-phi4-a100.yaml")
    assert value(phi.gpu_memory_utilization) == 0.84 and phi.max_model_len is None


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


FINDINGS: dict[str, list[tuple[int | None, str]]] = {
    "rbg-v1alpha2-sglang-pd-qwen3-8b.yaml": [(28, "KV206")],
    "aibrix-stormservice-vllm-pd-qwen3-8b.yaml": [],
    "aibrix-rayclusterfleet-vllm-qwen2.5-7b-tp2.yaml": [],
    "ome-isvc-sglang-llama3.1-8b.yaml": [],
    "ome-pd-multinode-deepseek-v3.yaml": [(31, "KV204"), (59, "KV204")],
    "kaito-workspace-llama3.3-70b-2node.yaml": [(29, "KV304")],
    "kaito-workspace-phi4-a100.yaml": [(14, "KV304")],
}


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_lint_offline(name: str) -> None:
    result = CliRunner().invoke(main, ["lint", str(FIXTURES / name), "--offline",
                                       "--no-plugins", "--format", "json", *MAP])
    data = json.loads(result.stdout)
    results = data["results"]
    errors = [f for r in results for f in r["findings"] if f["severity"] == "error"]
    assert result.exit_code == (1 if errors else 0), result.output  # KV206: too few GPUs
    assert [r["target"]["ref"] for r in results] == [c["model"] for c in CASES[name]]
    assert all(r["geometry"] for r in results)  # every model mapped to its config
    assert [r["serving"]["tp"] for r in results] == [c["tp"] for c in CASES[name]]
    found = sorted((f["line"], f["code"]) for r in results for f in r["findings"])
    assert found == FINDINGS[name]


def test_v1alpha2_is_not_read_as_v1alpha1() -> None:
    text = (FIXTURES / "rbg-v1alpha2-sglang-pd-qwen3-8b.yaml").read_text(encoding="utf-8")
    docs = load_documents(text, "rbg.yaml")
    assert isinstance(docs, list)
    ctx = DocumentContext("rbg.yaml", 0, tuple(docs))
    parsers = [cls() for cls in LAZY_PARSERS]
    assert kvlint_manifest_format(document=docs[0], ctx=ctx, parsers=parsers) == \
        "rbg-v1alpha2"
    v1 = {**docs[0], "apiVersion": "workloads.x-k8s.io/v1alpha1"}
    assert kvlint_manifest_format(document=v1, ctx=ctx, parsers=parsers) == "rbg"


# --- synthetic cases ------------------------------------------------------------------------

RBG_PATCHES = """\
    apiVersion: workloads.x-k8s.io/v1alpha2
    kind: RoleBasedGroup
    metadata: {name: g}
    spec:
      roles:
        - name: server
          leaderWorkerPattern:
            size: 3
            template:
              spec:
                containers:
                  - name: vllm
                    image: vllm/vllm-openai:v0.10.1
                    command: ["sh", "-c", "ray start --block"]
                    resources: {limits: {nvidia.com/gpu: "4"}}
            leaderTemplatePatch:
              spec:
                containers:
                  - name: vllm
                    command: ["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size",
                              "4", "--pipeline-parallel-size", "$(RBG_LWP_GROUP_SIZE)"]
        - name: tools
          customComponentsPattern:
            components:
              - name: embed
                size: 2
                template:
                  spec:
                    containers:
                      - name: e
                        image: lmsysorg/sglang:v0.5.9
                        command: ["python3", "-m", "sglang.launch_server", "--model-path",
                                  "Qwen/Qwen3-0.6B"]
                        resources: {limits: {nvidia.com/gpu: 1}}
    """


def test_rbg_leader_patch_and_custom_components() -> None:
    server, embed = extract_text(textwrap.dedent(RBG_PATCHES))
    assert summary(server) == {"format": "rbg-v1alpha2", "role": "server",
                               "model": "Qwen/Qwen3-8B", "engine": "vllm", "version": "0.10.1",
                               "tp": 4, "pp": 3, "gpus": 12}
    assert summary(embed) == {"format": "rbg-v1alpha2", "role": "tools/embed",
                              "model": "Qwen/Qwen3-0.6B", "engine": "sglang",
                              "version": "0.5.9", "tp": None, "pp": None, "gpus": 2}


def test_aibrix_roleset() -> None:
    (model,) = extract_text(textwrap.dedent("""\
        apiVersion: orchestration.aibrix.ai/v1alpha1
        kind: RoleSet
        metadata: {name: rs}
        spec:
          roles:
            - name: worker
              replicas: 3
              template:
                spec:
                  containers:
                    - name: vllm
                      image: vllm/vllm-openai:v0.10.1
                      command: ["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]
                      resources: {limits: {nvidia.com/gpu: 2}}
        """))
    assert summary(model) == {"format": "aibrix", "role": "worker", "model": "Qwen/Qwen3-8B",
                              "engine": "vllm", "version": "0.10.1", "tp": 2, "pp": None,
                              "gpus": 2}
    assert "replicas: 3" in "\n".join(model.notes)


OME_ALONE = """\
    apiVersion: ome.io/v1beta1
    kind: InferenceService
    metadata: {name: q}
    spec:
      model: {name: qwen3-8b}
      runtime: {name: srt-elsewhere}
    ---
    apiVersion: ome.io/v1beta1
    kind: ServingRuntime
    metadata: {name: lonely}
    spec:
      engineConfig:
        runner:
          name: c
          image: vllm/vllm-openai:v0.10.1
          command: ["vllm", "serve", "$(MODEL_PATH)", "--tensor-parallel-size",
                    "$(PARALLELISM_SIZE)"]
          resources: {limits: {nvidia.com/gpu: 4}}
    """


def test_ome_runtime_or_model_elsewhere() -> None:
    isvc, runtime = extract_text(textwrap.dedent(OME_ALONE))
    assert isvc.engine is None and isinstance(isvc.model, Unresolved)
    assert "srt-elsewhere is not in this file" in "\n".join(isvc.notes)
    assert isinstance(runtime.model, Unresolved) and runtime.model.line == 16
    assert "template" in runtime.model.reason
    assert value(runtime.tp) == 4 and value(runtime.gpus) == 4  # PARALLELISM_SIZE 4 x 1


def test_ome_runtime_used_by_an_isvc_is_reported_once() -> None:
    found = extract("ome-isvc-sglang-llama3.1-8b.yaml")
    assert [m.name for m in found] == ["llama-3-1-8b-instruct"]


@pytest.mark.parametrize(("workspace", "expected"), [
    ("""\
        apiVersion: kaito.sh/v1beta1
        kind: Workspace
        metadata: {name: w, annotations: {kaito.sh/runtime: transformers}}
        resource: {instanceType: Standard_NC96ads_A100_v4}
        inference: {preset: {name: phi-3-medium-4k-instruct}}
        """, {"model": "microsoft/Phi-3-medium-4k-instruct", "engine": "transformers",
              "tp": None, "gpus": 4}),
    ("""\
        apiVersion: kaito.sh/v1beta1
        kind: Workspace
        metadata: {name: w}
        resource: {labelSelector: {matchLabels: {a: b}}}
        inference: {preset: {name: my-private-model}}
        """, {"model": Unresolved, "engine": "vllm", "tp": Unresolved, "gpus": Unresolved}),
    ("""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: params}
        data:
          inference_config.yaml: |
            max_probe_steps: 6
            vllm:
              tensor-parallel-size: 1
              max_model_len: 8192
        ---
        apiVersion: kaito.sh/v1beta1
        kind: Workspace
        metadata: {name: w}
        resource: {instanceType: Standard_NC48ads_A100_v4}
        inference: {preset: {name: Qwen/Qwen3-8B}, config: params}
        """, {"model": "Qwen/Qwen3-8B", "engine": "vllm", "tp": 1, "gpus": 2,
              "max_model_len": 8192}),
    ("""\
        apiVersion: kaito.sh/v1alpha1
        kind: Workspace
        metadata: {name: w}
        resource: {instanceType: Standard_NC24ads_A100_v4}
        inference:
          template:
            spec:
              containers:
                - name: c
                  image: vllm/vllm-openai:v0.10.1
                  command: ["vllm", "serve", "Qwen/Qwen3-8B"]
                  resources: {limits: {nvidia.com/gpu: 1}}
        """, {"model": "Qwen/Qwen3-8B", "engine": "vllm", "tp": None, "gpus": 1}),
])
def test_kaito_variants(workspace: str, expected: dict[str, Any]) -> None:
    (model,) = extract_text(textwrap.dedent(workspace))
    for key, want in expected.items():
        got = getattr(model, key)
        if want is Unresolved:
            assert isinstance(got, Unresolved), (key, got)
        else:
            assert value(got) == want, (key, got)


def test_kaito_tuning_workspace_serves_nothing() -> None:
    assert extract_text(textwrap.dedent("""\
        apiVersion: kaito.sh/v1beta1
        kind: Workspace
        metadata: {name: t}
        resource: {instanceType: Standard_NC24ads_A100_v4}
        tuning: {preset: {name: phi-4}, method: lora}
        """)) == []


def test_parsers_claim_only_their_kinds() -> None:
    docs = load_documents(textwrap.dedent("""\
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata: {name: k}
        ---
        apiVersion: ome.io/v1beta1
        kind: ClusterBaseModel
        metadata: {name: m}
        ---
        apiVersion: workloads.x-k8s.io/v1alpha1
        kind: RoleBasedGroup
        metadata: {name: r}
        """), "x.yaml")
    assert isinstance(docs, list)
    for index, doc in enumerate(docs):
        ctx = DocumentContext("x.yaml", index, tuple(docs))
        assert not any(p.detect(doc, ctx) for p in PARSERS)


OME_RUNTIME_SERVED_AS_HUB_ID = """\
    apiVersion: ome.io/v1beta1
    kind: ClusterServingRuntime
    metadata: {name: srt-some-70b}
    spec:
      engineConfig:
        runner:
          name: ome-container
          image: docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64
          command: ["python3", "-m", "sglang.launch_server", "--model-path", "$(MODEL_PATH)",
                    "--tp-size", "4", "--served-model-name", "org/Some-70B-Instruct"]
          resources: {limits: {nvidia.com/gpu: 4}}
    """


@pytest.mark.parametrize(("served", "expected"), [
    ("org/Some-70B-Instruct", "org/Some-70B-Instruct"),
    ("some-model", None),  # not a Hub id: the model stays unresolved
])
def test_ome_runtime_template_names_its_model_by_the_hub_id_it_serves(
        served: str, expected: str | None) -> None:
    """OME's runtimes load $(MODEL_PATH) and serve under the model's Hub id: that id names
    the checkpoint the template is written for; any other served name says nothing."""
    text = textwrap.dedent(OME_RUNTIME_SERVED_AS_HUB_ID).replace("org/Some-70B-Instruct",
                                                                 served)
    (runtime,) = extract_text(text)
    if expected is None:
        assert isinstance(runtime.model, Unresolved)
        return
    assert isinstance(runtime.model, Located) and runtime.model.value == expected
    assert "--served-model-name" in runtime.model.source and runtime.model.line in (10, 11)
    assert value(runtime.tp) == 4 and value(runtime.gpus) == 4
