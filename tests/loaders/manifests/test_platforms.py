"""Serving platforms (:mod:`kvlint.manifests.platforms`): KubeAI Model, Kthena
ModelServing/ModelBooster, llmaz OpenModel + Playground/Service/BackendRuntime. Every fixture
of ``fixtures/operators/platforms`` gives exactly the served models a reader of the platform's
controller derives, ``kvlint lint --offline`` reports the expected findings on it, and
synthetic cases cover the patterns the fixtures do not."""

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
from kvlint.manifests.platforms import (
    KthenaParser,
    KubeAIModelParser,
    LlmazParser,
    _go_text,
)
from kvlint.manifests.yaml_marks import load_documents
from tests.helpers import CONFIGS, ROOT
from tests.loaders.manifests.support import model_map, parse_with

FIXTURES = ROOT / "fixtures" / "operators" / "platforms"
PARSERS = [KubeAIModelParser(), KthenaParser(), LlmazParser()]
MODELS = {
    "Qwen/Qwen3-8B": "Qwen--Qwen3-8B.json",
    "Qwen/Qwen2.5-7B": "Qwen--Qwen2.5-7B.json",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B.json",
    "meta-llama/Llama-3.1-70B-Instruct": "meta-llama--Meta-Llama-3.1-70B.json",
}
MAP = model_map(MODELS, CONFIGS)


def extract_text(text: str, path: str = "manifest.yaml") -> list[ServedModel]:
    return parse_with(PARSERS, text, path)


def extract(name: str) -> list[ServedModel]:
    path = FIXTURES / name
    return extract_text(path.read_text(encoding="utf-8"), str(path))


def dedent(*parts: str) -> list[ServedModel]:
    return extract_text("".join(textwrap.dedent(part) for part in parts))


def value(found: Any) -> Any:
    return found.value if isinstance(found, Located) else found


def line(found: Any) -> int | None:
    return found.line if isinstance(found, Located | Unresolved) else None


def summary(model: ServedModel) -> dict[str, Any]:
    return {"format": model.format, "role": model.role, "model": value(model.model),
            "engine": value(model.engine), "version": value(model.engine_version),
            "tp": value(model.tp), "pp": value(model.pp), "gpus": value(model.gpus),
            "gpu_type": value(model.gpu_type)}


def row(fmt: str, role: str | None, model: str, engine: str, version: Any, tp: Any, pp: Any,
        gpus: Any, gpu_type: Any = None) -> dict[str, Any]:
    return {"format": fmt, "role": role, "model": model, "engine": engine, "version": version,
            "tp": tp, "pp": pp, "gpus": gpus, "gpu_type": gpu_type}


UNRESOLVED = "unresolved"
CASES: dict[str, list[dict[str, Any]]] = {
    "kubeai-models-vllm-qwen3-8b-llama3.1-8b.yaml": [
        row("kubeai", None, "Qwen/Qwen3-8B", "vllm", "0.9.2", 2, None, 2, "L4"),
        row("kubeai", None, "meta-llama/Llama-3.1-8B-Instruct", "vllm", UNRESOLVED, None,
            None, 1, "H100")],
    "kthena-modelserving-vllm-multinode-llama3.1-70b.yaml": [
        row("kthena", "llama-70b", "meta-llama/Llama-3.1-70B-Instruct", "vllm", "0.10.1", 4,
            2, 8)],
    "kthena-modelbooster-vllm-qwen3-8b-qwen2.5-7b.yaml": [
        row("kthena", "prefill", "Qwen/Qwen3-8B", "vllm", "0.10.1", 1, None, 1),
        row("kthena", "decode", "Qwen/Qwen3-8B", "vllm", "0.10.1", 1, None, 2),
        row("kthena", None, "Qwen/Qwen2.5-7B", "vllm", "0.10.1", 2, 2, 4)],
    "llmaz-playground-vllm-qwen2.5-7b.yaml": [
        row("llmaz", None, "Qwen/Qwen2.5-7B", "vllm", "0.8.5", 2, None, 2, "nvidia-l4")],
    "llmaz-service-sglang-multinode-qwen3-8b.yaml": [
        row("llmaz", None, "Qwen/Qwen3-8B", "sglang", "0.4.6.post1", 2, None, 2)],
}


def test_every_platform_fixture_has_a_case() -> None:
    assert {p.name for p in FIXTURES.glob("*.yaml")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_served_models(name: str) -> None:
    found = [summary(m) for m in extract(name)]
    for got in found:
        if isinstance(got["version"], Unresolved):
            got["version"] = UNRESOLVED
    assert found == CASES[name]


def test_fixture_details_and_lines() -> None:
    qwen, llama = extract("kubeai-models-vllm-qwen3-8b-llama3.1-8b.yaml")
    assert line(qwen.model) == 9 and line(qwen.tp) == 15 and line(qwen.gpus) == 12
    assert qwen.served_name == "qwen3-8b-l4" and value(qwen.max_model_len) == 40960
    assert value(qwen.env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"]) == "1"
    assert isinstance(llama.engine_version, Unresolved)
    assert "modelServers.VLLM.images.nvidia-gpu" in llama.engine_version.reason
    assert value(llama.kv_cache_dtype) == "fp8" and line(llama.gpu_type) == 31
    (ms,) = extract("kthena-modelserving-vllm-multinode-llama3.1-70b.yaml")
    assert line(ms.gpus) == 28 and "workerReplicas 1" in "\n".join(ms.notes)
    prefill, decode, server = extract("kthena-modelbooster-vllm-qwen3-8b-qwen2.5-7b.yaml")
    assert line(prefill.model) == 13 and line(prefill.tp) == 25
    assert value(decode.max_num_seqs) == 256 and line(decode.gpus) == 35
    assert value(server.max_model_len) == 32768 and "Ray" in "\n".join(server.notes)
    assert "/model-cache/" in "\n".join(prefill.notes)
    (play,) = extract("llmaz-playground-vllm-qwen2.5-7b.yaml")
    assert line(play.model) == 12 and line(play.gpus) == 17 and line(play.tp) == 33
    assert play.served_name == "qwen2-5-7b" and line(play.engine_version) == 31
    (svc,) = extract("llmaz-service-sglang-multinode-qwen3-8b.yaml")
    assert line(svc.model) == 11 and value(svc.max_model_len) == 65536
    assert "size 2" in "\n".join(svc.notes)


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


FINDINGS: dict[str, list[tuple[int | None, str]]] = {
    "kubeai-models-vllm-qwen3-8b-llama3.1-8b.yaml": [(30, "KV304")],
    "kthena-modelserving-vllm-multinode-llama3.1-70b.yaml": [],
    "kthena-modelbooster-vllm-qwen3-8b-qwen2.5-7b.yaml": [(35, "KV206")],
    "llmaz-playground-vllm-qwen2.5-7b.yaml": [],
    "llmaz-service-sglang-multinode-qwen3-8b.yaml": [(37, "KV703")],
}


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_lint_offline(name: str) -> None:
    result = CliRunner().invoke(main, ["lint", str(FIXTURES / name), "--offline",
                                       "--no-plugins", "--format", "json", *MAP])
    results = json.loads(result.stdout)["results"]
    errors = any(f["severity"] == "error" for r in results for f in r["findings"])
    assert result.exit_code == (1 if errors else 0), result.output
    assert [r["target"]["ref"] for r in results] == [c["model"] for c in CASES[name]]
    assert all(r["geometry"] for r in results)  # every model mapped to its config
    assert [r["serving"]["tp"] for r in results] == [c["tp"] or 1 for c in CASES[name]]
    found = sorted((f["line"], f["code"]) for r in results for f in r["findings"])
    assert found == FINDINGS[name]


def test_formats_are_chosen_by_the_builtin_table() -> None:
    docs = load_documents(textwrap.dedent("""\
        apiVersion: kubeai.org/v1
        kind: Model
        metadata: {name: a}
        ---
        apiVersion: workload.serving.volcano.sh/v1alpha1
        kind: ModelBooster
        metadata: {name: b}
        ---
        apiVersion: inference.llmaz.io/v1alpha1
        kind: Service
        metadata: {name: c}
        ---
        apiVersion: llmaz.io/v1alpha1
        kind: OpenModel
        metadata: {name: d}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: e}
        """), "x.yaml")
    assert isinstance(docs, list)
    parsers = [cls() for cls in LAZY_PARSERS]
    formats = [kvlint_manifest_format(document=doc, ctx=DocumentContext("x.yaml", i,
                                                                        tuple(docs)),
                                      parsers=parsers) for i, doc in enumerate(docs)]
    assert formats == ["kubeai", "kthena", "llmaz", "llmaz", None]


# --- KubeAI ---------------------------------------------------------------------------------

KUBEAI = """\
    apiVersion: kubeai.org/v1
    kind: Model
    metadata: {{name: m}}
    spec:
      url: {url}
      engine: {engine}
      resourceProfile: {profile}
      image: vllm/vllm-openai:v0.10.1
      adapters: [{{name: a, url: "hf://x/y"}}]
    """


def kubeai(url: str = "hf://Qwen/Qwen3-8B", engine: str = "VLLM",
           profile: str = "nvidia-gpu-l4:1") -> list[ServedModel]:
    return dedent(KUBEAI.format(url=url, engine=engine, profile=profile))


@pytest.mark.parametrize("engine", ["OLlama", "Infinity", "FasterWhisper"])
def test_kubeai_other_engines_serve_nothing_kvlint_lints(engine: str) -> None:
    assert kubeai(engine=engine) == []


def test_kubeai_storage_urls_and_lora() -> None:
    (pvc,) = kubeai(url="pvc://weights/llama")
    assert isinstance(pvc.model, Unresolved) and pvc.model.text == "pvc://weights/llama"
    assert "mounted at /model" in "\n".join(pvc.notes)
    (s3,) = kubeai(url="s3://bucket/qwen")
    assert isinstance(s3.model, Unresolved)
    (hf,) = kubeai()
    assert value(hf.model) == "Qwen/Qwen3-8B" and value(hf.engine_version) == "0.10.1"


def test_kubeai_profiles() -> None:
    (custom,) = kubeai(profile="my-a10g:2")
    assert isinstance(custom.gpus, Unresolved) and custom.gpu_type is None
    (tpu,) = kubeai(profile="google-tpu-v5e-2x2:4")
    assert tpu.gpus is None and "TPU" in "\n".join(tpu.notes)
    (many,) = kubeai(profile="amd-gpu-mi300x:8")
    assert value(many.gpus) == 8 and value(many.gpu_type) == "MI300X"
    (bad,) = kubeai(profile="nvidia-gpu-l4")
    assert isinstance(bad.gpus, Unresolved)


# --- Kthena ---------------------------------------------------------------------------------


def test_go_number_text() -> None:
    assert [_go_text(v) for v in (16384, 1000000, 0.9, 2, True, "", {"a": 1})] == \
        ["16384", "1e+06", "0.9", "2", "true", "", None]


def test_kthena_single_pod_role_and_refused_backend() -> None:
    (role,) = dedent("""\
        apiVersion: workload.serving.volcano.sh/v1alpha1
        kind: ModelServing
        metadata: {name: s}
        spec:
          template:
            roles:
              - name: decode
                replicas: 2
                workerReplicas: 0
                entryTemplate:
                  spec:
                    containers:
                      - name: e
                        image: lmsysorg/sglang:v0.5.9
                        command: ["python3", "-m", "sglang.launch_server", "--model-path",
                                  "Qwen/Qwen3-8B", "--tp", "$(GROUP_SIZE)"]
                        resources: {limits: {nvidia.com/gpu: 1}}
        """)
    assert summary(role) == row("kthena", "decode", "Qwen/Qwen3-8B", "sglang", "0.5.9", 1,
                                None, 1)
    assert dedent("""\
        apiVersion: workload.serving.volcano.sh/v1alpha1
        kind: ModelBooster
        metadata: {name: b}
        spec:
          backend:
            name: b
            type: SGLang
            modelURI: hf://Qwen/Qwen3-8B
            workers: [{type: server, image: lmsysorg/sglang:v0.5.9}]
        """) == []


# --- llmaz ----------------------------------------------------------------------------------

OPEN_MODEL = """\
    apiVersion: llmaz.io/v1alpha1
    kind: OpenModel
    metadata: {name: qwen}
    spec:
      familyName: qwen3
      source:
        modelHub: {name: HUB, modelID: Qwen/Qwen3-8B}
      inferenceConfig:
        flavors:
          - {name: big, limits: {nvidia.com/gpu: 4}}
          - {name: small, limits: {nvidia.com/gpu: 1}}
    ---
    """
RUNTIME = """\
    apiVersion: inference.llmaz.io/v1alpha1
    kind: BackendRuntime
    metadata: {name: sglang}
    spec:
      command: ["python3", "-m", "sglang.launch_server"]
      image: lmsysorg/sglang
      version: v0.5.9
      recommendedConfigs:
        - name: default
          args: ["--model-path", "{{ .ModelPath }}", "--served-model-name",
                 "{{ .ModelName }}", "--mem-fraction-static", "0.8"]
          resources: {limits: {cpu: 4, nvidia.com/gpu: 2}}
    """
PLAYGROUND = """\
    ---
    apiVersion: inference.llmaz.io/v1alpha1
    kind: Playground
    metadata: {name: p}
    spec:
      modelClaim: {modelName: qwen, inferenceFlavors: [small]}
      backendRuntimeConfig:
        backendName: sglang
        args: ["--tp", "1"]
    """


def test_llmaz_playground_on_a_runtime_of_the_file() -> None:
    (model,) = dedent(OPEN_MODEL.replace("HUB", "Huggingface"), RUNTIME, PLAYGROUND)
    assert summary(model) == row("llmaz", None, "Qwen/Qwen3-8B", "sglang", "0.5.9", 1, None,
                                 1)  # the claimed flavor's GPUs over the runtime's
    assert value(model.gpu_memory_utilization) == 0.8
    assert model.served_name == "qwen"


def test_llmaz_modelscope_and_missing_pieces() -> None:
    (scope,) = dedent(OPEN_MODEL.replace("HUB", "ModelScope"), RUNTIME, PLAYGROUND)
    assert isinstance(scope.model, Unresolved) and scope.model.text == "Qwen/Qwen3-8B"
    assert value(scope.gpus) == 1
    (alone,) = dedent(PLAYGROUND.replace("sglang", "vllm"))
    assert isinstance(alone.model, Unresolved) and "not in this file" in alone.model.reason
    assert value(alone.engine) == "vllm" and isinstance(alone.engine_version, Unresolved)
    assert dedent(OPEN_MODEL, "{}\n") == []


def test_llmaz_runtime_template_and_skip_loader() -> None:
    (template,) = dedent(RUNTIME)
    assert isinstance(template.model, Unresolved) and "template" in template.model.reason
    assert value(template.engine) == "sglang" and value(template.gpus) == 2
    (direct,) = dedent(OPEN_MODEL.replace("HUB", "Huggingface"), PLAYGROUND.replace(
        "metadata: {name: p}",
        'metadata: {name: p, annotations: {"llmaz.io/skip-model-loader": "true"}}'
    ).replace("backendName: sglang", "backendName: vllm\n        version: v0.10.1"))
    # --tp is SGLang's; vLLM takes no such option (the model id itself, not a loader path)
    assert summary(direct) == row("llmaz", None, "Qwen/Qwen3-8B", "vllm", "0.10.1", None,
                                  None, 1)
