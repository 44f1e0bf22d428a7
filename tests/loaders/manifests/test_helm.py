"""Helm values parsers against the corpus (fixtures/manifests/SOURCES.md) and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import (
    DocumentContext,
    Located,
    ManifestProblem,
)
from kvlint.manifests.yaml_marks import load_documents
from tests.loaders.manifests.support import (
    CORPUS,
    claims,
    extract,
    extract_text,
    line,
    one,
    v,
)

# --- production-stack -----------------------------------------------------------------------


def test_production_stack_tp4_v100() -> None:
    m = one("production-stack/helm-values-qwen2.5-14b-v100-tp4.yaml")
    assert m.format == "helm-production-stack" and m.name == "qwen14b"
    assert v(m.model) == "Qwen/Qwen2.5-14B-Instruct" and line(m.model) == 26 and m.line == 26
    assert v(m.engine) == "vllm"
    assert v(m.engine_version) == "0.8.5"
    assert v(m.image) == "vllm/vllm-openai:v0.8.5"
    assert v(m.tp) == 4 and line(m.tp) == 45
    assert m.pp is None and m.dp is None and m.ep is None and m.dp_attention is None
    assert m.kv_cache_dtype is None
    assert v(m.max_model_len) == 8192 and line(m.max_model_len) == 46
    assert m.max_num_seqs is None
    assert v(m.gpu_memory_utilization) == 0.9
    assert v(m.gpus) == 4 and line(m.gpus) == 31
    assert m.gpu_type is None  # V100 appears only in comments


def test_production_stack_node_selector_terms_name_the_gpu() -> None:
    """The chart renders ``modelSpec[].nodeSelectorTerms`` as the pod's required node
    affinity; a ``nodeName`` replaces it."""
    text = """\
servingEngineSpec:
  modelSpec:
  - name: qwen
    repository: vllm/vllm-openai
    tag: v0.10.1.1
    modelURL: Qwen/Qwen3-8B
    requestGPU: 1
    nodeSelectorTerms:
    - matchExpressions:
      - key: cloud.google.com/gke-accelerator
        operator: In
        values: [nvidia-l4]
  - name: pinned
    repository: vllm/vllm-openai
    tag: v0.10.1.1
    modelURL: Qwen/Qwen3-8B
    nodeName: node-a
    nodeSelectorTerms:
    - matchExpressions:
      - key: cloud.google.com/gke-accelerator
        operator: In
        values: [nvidia-l4]
"""
    first, second = extract_text(text)
    assert v(first.gpu_type) == "nvidia-l4" and line(first.gpu_type) == 12  # "values:"
    assert second.gpu_type is None


def test_production_stack_ray_pp2_two_models() -> None:
    ray, plain = extract("production-stack/helm-values-ray-pp2-multi-modelspec.yaml")
    assert v(ray.model) == "distilbert/distilgpt2"
    assert v(ray.tp) == 1 and v(ray.pp) == 2 and line(ray.pp) == 17
    assert v(ray.gpus) == 2  # head requestGPU 1 + worker requestGPU 1
    assert v(ray.image) == "lmcache/vllm-openai:latest"
    assert v(plain.model) == "facebook/opt-125m"
    assert v(plain.tp) == 1 and plain.pp is None and v(plain.gpus) == 1
    assert v(plain.image) == "vllm/vllm-openai:latest"
    assert v(plain.engine_version) == "latest"


def test_production_stack_pipeline_parallel_off_the_ray_path_is_dropped() -> None:
    text = """servingEngineSpec:
  modelSpec:
  - name: m
    repository: vllm/vllm-openai
    tag: v0.9.0
    modelURL: Qwen/Qwen3-8B
    requestGPU: 2
    vllmConfig:
      tensorParallelSize: 1
      pipelineParallelSize: 2
"""
    (m,) = extract_text(text, "values.yaml")
    assert m.pp is None and v(m.tp) == 1 and v(m.gpus) == 2
    assert any("pipelineParallelSize" in n and "Ray path" in n for n in m.notes)


def test_production_stack_two_models() -> None:
    llama, mistral = extract("production-stack/helm-values-llama3-mistral-two-models.yaml")
    assert v(llama.model) == "meta-llama/Llama-3.1-8B-Instruct" and llama.name == "llama3"
    assert v(mistral.model) == "mistralai/Mistral-7B-Instruct-v0.2"
    for m, util in ((llama, 0.8), (mistral, 0.95)):
        assert v(m.max_model_len) == 4096 and v(m.max_num_seqs) == 32
        assert v(m.gpu_memory_utilization) == util
        assert v(m.gpus) == 1 and m.tp is None
        assert v(m.image) == "vllm/vllm-openai:latest"
        assert v(m.engine_version) == "latest"


def test_production_stack_misplaced_extra_args_are_not_applied() -> None:
    m = one("production-stack/helm-values-oci-gptoss20b-misplaced-extraargs.yaml")
    assert v(m.model) == "openai/gpt-oss-20b" and v(m.gpus) == 1
    assert m.max_model_len is None and m.gpu_memory_utilization is None
    assert m.tp is None  # the commented 70B block is never read
    assert any("extraArgs" in n and "silently dropped" in n and "--max-model-len=8192" in n
               for n in m.notes)


def test_production_stack_vllm_config_extra_args_apply_after_the_chart_flags() -> None:
    text = """servingEngineSpec:
  enableEngine: true
  modelSpec:
  - name: a
    repository: vllm/vllm-openai
    tag: v0.10.1
    modelURL: deepseek-ai/DeepSeek-V2-Lite
    requestGPU: 2
    vllmConfig:
      maxModelLen: 4096
      extraArgs: ["--kv-cache-dtype=fp8", "--max-model-len", "8192", "-tp", "2"]
  - name: off
    enabled: false
    repository: vllm/vllm-openai
    tag: latest
    modelURL: x/y
"""
    (m,) = extract_text(text, "values.yaml")
    assert v(m.kv_cache_dtype) == "fp8" and line(m.kv_cache_dtype) == 11
    assert v(m.max_model_len) == 8192 and v(m.tp) == 2
    assert extract_text(text.replace("enableEngine: true", "enableEngine: false"),
                        "values.yaml") == []


# --- llm-d modelservice ---------------------------------------------------------------------


def test_llmd_modelservice_gpus_injected_from_parallelism() -> None:
    m = one("llm-d/helm-values-modelservice-qwen3-32b-tp2.yaml")  # prefill.create: false
    assert m.format == "helm-llm-d" and m.role == "decode"
    assert v(m.model) == "Qwen/Qwen3-32B" and line(m.model) == 12
    assert v(m.engine) == "vllm"
    assert v(m.tp) == 2 and line(m.tp) == 34
    assert m.dp is None and m.pp is None and m.kv_cache_dtype is None
    assert m.max_model_len is None
    assert v(m.gpu_memory_utilization) == 0.95
    assert v(m.gpus) == 2
    assert any("replicas 8" in n for n in m.notes)
    assert v(m.engine_version) != "0.5.0"  # an llm-d image version, not vLLM's


def test_llmd_multinode_and_prefill_roles() -> None:
    text = """modelArtifacts:
  uri: hf://deepseek-ai/DeepSeek-R1
  name: deepseek-ai/DeepSeek-R1
multinode: true
prefill:
  replicas: 2
  parallelism:
    tensor: 1
    data: 16
    dataLocal: 8
  containers:
  - name: vllm
    image: ghcr.io/llm-d/llm-d-cuda:v0.3.0
    modelCommand: vllmServe
    args: ["--enable-expert-parallel"]
decode:
  create: true
  parallelism:
    tensor: 4
  containers:
  - name: vllm
    modelCommand: vllmServe
    resources:
      limits:
        nvidia.com/gpu: "8"
"""
    prefill, decode = extract_text(text, "values.yaml")
    assert prefill.role == "prefill" and v(prefill.dp) == 16 and v(prefill.gpus) == 16
    assert v(decode.tp) == 4 and v(decode.gpus) == 8  # the user's resources win


# --- vLLM example chart and TGI chart ------------------------------------------------------


def test_vllm_chart_command_in_image() -> None:
    m = one("vllm/helm-values-chart-helm-opt125m-localpath.yaml")
    assert m.format == "helm-vllm-chart"
    assert v(m.model) == "/data/" and m.served_name == "opt-125m" and line(m.model) == 11
    assert v(m.engine) == "vllm" and m.tp is None
    assert v(m.gpus) == 1 and m.gpu_type is None
    assert v(m.image) == "vllm/vllm-openai:latest" and v(m.engine_version) == "latest"
    assert any("TYPE_GPU_USED" in n for n in m.notes)


def test_tgi_chart_model_only_in_comments() -> None:
    m = one("tgi/helm-values-tgi-chart-model-only-in-comments.yaml")
    assert m.format == "helm-tgi"
    assert m.model is None  # bigcode/starcoderbase-7b is in a comment
    assert m.tp is None  # so is --num-shard 1
    assert v(m.engine) == "tgi" and v(m.engine_version) == "1.1.0"
    assert v(m.image) == "ghcr.io/huggingface/text-generation-inference:1.1.0"
    assert v(m.gpus) == 1


def test_tgi_chart_args_and_env() -> None:
    text = """image:
  repository: ghcr.io/huggingface/text-generation-inference
  tag: "2.4.1"
args:
  - --model-id
  - mistralai/Mistral-7B-v0.1
env:
  NUM_SHARD: "2"
resources:
  limits:
    nvidia.com/gpu: 2
"""
    (m,) = extract_text(text, "values.yaml")
    assert v(m.model) == "mistralai/Mistral-7B-v0.1" and line(m.model) == 5  # the flag
    assert v(m.tp) == 2 and v(m.gpus) == 2 and v(m.engine_version) == "2.4.1"


# --- silogen llama.cpp values ---------------------------------------------------------------


def test_silogen_llamacpp_values_not_vllm() -> None:
    m = one("llama.cpp/helm-values-silogen-deepseek-r1-gguf-mi300x.yaml")
    assert m.format == "helm-silogen"
    assert v(m.model) == "unsloth/DeepSeek-R1-GGUF:DeepSeek-R1-UD-IQ1_M" and m.line == 11
    assert v(m.engine) == "llamacpp"  # inferred, never from the rocm/vllm-dev base image
    assert "inferred" in m.engine.source if m.engine else False
    assert any("entrypoint" in n for n in m.notes)
    assert m.engine_version is None
    assert v(m.gpus) == 1 and m.tp is None
    assert v(m.max_model_len) == 4096
    assert v(m.gpu_type) == "gfx942"


def test_silogen_without_evidence_leaves_the_engine_unknown() -> None:
    text = """image: rocm/vllm-dev:20250205_aiter
gpus: 2
env_vars:
  MODEL: org/model
entrypoint: |
  bash /workload/mount/entrypoint.sh
"""
    (m,) = extract_text(text, "values.yaml")
    assert m.engine is None and v(m.model) == "org/model" and v(m.gpus) == 2
    assert any("engine unknown" in n for n in m.notes)


def test_silogen_inline_entrypoint() -> None:
    text = """image: rocm/vllm:latest
gpus: 8
env_vars:
  MODEL: Qwen/Qwen3-32B
entrypoint: |
  vllm serve $MODEL --tensor-parallel-size 8
"""
    (m,) = extract_text(text, "values.yaml")
    assert v(m.engine) == "vllm" and v(m.model) == "Qwen/Qwen3-32B" and v(m.tp) == 8
    assert line(m.tp) == 6


# --- negatives ------------------------------------------------------------------------------


def test_helm_template_is_a_problem_not_a_crash() -> None:
    path = CORPUS / "llama.cpp/helm-template-silogen-deployment-unrendered.yaml"
    problem = load_documents(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(problem, ManifestProblem) and problem.kind == "helm-template"


def test_vllm_chart_with_an_unknown_command_serves_nothing() -> None:
    text = """image:
  repository: vllm/vllm-openai
  tag: latest
  command: ["python3", "my_server.py"]
"""
    assert extract_text(text, "values.yaml") == []


@pytest.mark.parametrize("text", [
    "image:\n  repository: nginx\n  tag: '1.25'\nresources:\n  limits:\n    cpu: 1\n",
    "replicaCount: 1\nservice:\n  type: ClusterIP\n",
    "modelArtifacts: {}\n",
    "env_vars:\n  FOO: bar\n",
    "servingEngineSpec: {}\n",
])
def test_other_values_files_are_not_claimed(text: str) -> None:
    docs = load_documents(text, "values.yaml")
    assert isinstance(docs, list)
    assert claims(docs[0], DocumentContext("values.yaml", 0, tuple(docs))) == []


def test_no_kubernetes_document_is_claimed() -> None:
    for path in sorted(CORPUS.rglob("*.y*ml")):
        docs = load_documents(path.read_text(encoding="utf-8"), str(path))
        if isinstance(docs, ManifestProblem):
            continue
        for index, doc in enumerate(docs):
            if isinstance(doc, dict) and ("kind" in doc or "apiVersion" in doc):
                assert claims(doc, DocumentContext(str(path), index, tuple(docs))) == [], path


def test_production_stack_as_a_subchart_of_a_wrapper_chart() -> None:
    """A wrapper chart passes the stack its values under the subchart's name."""
    found = extract_text("""\
autoSleepHook:
  image: python:3.12-slim
vllm-stack:
  servingEngineSpec:
    runtimeClassName: "nvidia"
    modelSpec:
      - name: "llama"
        repository: "vllm/vllm-openai"
        tag: "v0.10.1.1"
        modelURL: "meta-llama/Llama-3.1-8B-Instruct"
        replicaCount: 1
        requestGPU: 1
        vllmConfig:
          maxModelLen: 8192
""", "values.yaml")
    (m,) = found
    assert v(m.model) == "meta-llama/Llama-3.1-8B-Instruct"
    assert v(m.engine_version) == "0.10.1.1" and v(m.max_model_len) == 8192


@pytest.mark.parametrize(("gpu_map", "gpus", "source"), [
    ("gpu:\n  vendor: none\n  limit: 1\n", 0, "no GPU requested (the values key gpu.vendor"),
    ("gpu:\n  enabled: false\n", 0, "no GPU requested (the values key gpu.enabled false)"),
    ("gpu:\n  vendor: nvidia\n  limit: 2\n", 2, "the values key gpu.limit"),
    ("gpu:\n  enabled: true\n  count: 1\n", 1, "the values key gpu.count"),
])
def test_a_charts_gpu_map(gpu_map: str, gpus: int, source: str, tmp_path: Path) -> None:
    from kvlint.lint.extraction import extract as lint_extract
    from kvlint.plugins import get_plugin_manager

    values = tmp_path / "values.yaml"
    values.write_text("image:\n  repository: vllm/vllm-openai\n  tag: latest\n"
                      "model: org/m\n" + gpu_map, encoding="utf-8")
    pm = get_plugin_manager(load_entry_points=False)
    found = lint_extract(values, pm, [c() for b in pm.hook.kvlint_manifest_parsers() for c in b])
    assert isinstance(found, list)
    (m,) = found
    assert isinstance(m.gpus, Located) and m.gpus.value == gpus
    assert m.gpus.source.startswith(source)
    if gpus == 0:  # the engine's own CUDA image: KV206 makes it an error
        assert m.gpus.source.endswith("the engine's own GPU build")


def test_a_cpu_image_chart_with_no_gpu_request_runs_on_no_gpu() -> None:
    """A chart's values running vLLM's CPU image with CPU and memory resources only: 0 GPUs
    (the image is a CPU build), where the count was left unknown."""
    text = ('image:\n  repository: vllm/vllm-openai-cpu\n  tag: "v0.24.0"\n'
            "model:\n  name: BAAI/bge-small-en-v1.5\n"
            "resources:\n  limits:\n    memory: 4Gi\n    cpu: '10'\n")
    (m,) = extract_text(text, "values.yaml")
    assert (v(m.engine), v(m.engine_version), v(m.gpus)) == ("vllm", "0.24.0", 0)
    assert "CPU" in m.gpus.source  # type: ignore[union-attr]
    # the GPU image with the same resources: not known (the chart's template may add one)
    (gpu,) = extract_text(text.replace("vllm-openai-cpu", "vllm-openai"), "values.yaml")
    assert gpu.gpus is None
