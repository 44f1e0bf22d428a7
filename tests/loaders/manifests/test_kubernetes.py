"""Kubernetes manifests: every Kubernetes-family fixture of ``fixtures/manifests`` gives what
``fixtures/manifests/SOURCES.md`` says a careful reader extracts, plus synthetic cases for
what the corpus lacks (ConfigMap-mounted vLLM configs, envFrom, AMD GPUs, embeddings
servers) and negatives (CI workflows, random configs, lone ConfigMaps/Services)."""

from __future__ import annotations

import glob
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kvlint.manifests.base import DocumentContext, Located, ServedModel, Unresolved
from kvlint.manifests.kubernetes import (
    KubernetesWorkloadParser,
    LeaderWorkerSetParser,
    RoleBasedGroupParser,
)
from kvlint.manifests.kubernetes_crds import (
    DynamoParser,
    KServeParser,
    RayServiceParser,
    VllmRuntimeParser,
)
from kvlint.manifests.yaml_marks import load_documents
from tests.loaders.manifests.support import parse_with

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "manifests"
PARSERS = [KubernetesWorkloadParser(), LeaderWorkerSetParser(), RoleBasedGroupParser(),
           KServeParser(), DynamoParser(), VllmRuntimeParser(), RayServiceParser()]
FAMILIES = ("lws/*", "llm-d/lws-*", "vllm/k8s-*", "production-stack/k8s-*",
            "production-stack/operator-*", "sglang/k8s-*", "lmdeploy/*", "rbg/*", "kserve/*",
            "dynamo/*", "tgi/k8s-*", "ray-serve/kuberay-*")


def extract_text(text: str, path: str = "manifest.yaml") -> list[ServedModel]:
    return parse_with(PARSERS, text, path)


def extract(rel: str) -> list[ServedModel]:
    path = FIXTURES / rel
    return extract_text(path.read_text(encoding="utf-8"), str(path))


@dataclass(frozen=True)
class U:
    """An expected Unresolved whose raw text contains ``text``."""

    text: str


def value(found: Located[Any] | Unresolved | None) -> Any:
    return found.value if isinstance(found, Located) else found


def check(found: Located[Any] | Unresolved | None, expected: Any, what: str) -> None:
    if isinstance(expected, U):
        assert isinstance(found, Unresolved), f"{what}: expected unresolved, got {found}"
        assert expected.text in found.text, f"{what}: {found.text!r}"
    else:
        assert not isinstance(found, Unresolved), f"{what}: unresolved {found}"
        assert value(found) == expected, f"{what}: {found}"


# Per fixture, per served model: what SOURCES.md says. Fields not given must be unset (None).
DEFAULTS: dict[str, Any] = dict(served=None, tp=None, pp=None, dp=None, dp_attention=None,
                                ep=None, kv=None, max_len=None, max_seqs=None, gpu_type=None,
                                role=None)
CASES: dict[str, list[dict[str, Any]]] = {
    "lws/vllm-llama3.1-405b-tp8-pp2-multinode.yaml": [dict(
        format="lws", model="meta-llama/Llama-3.1-405B-Instruct", engine="vllm",
        version="0.8.5", tp=8, pp=2, gpus=16, lines={"model": 25, "tp": 25, "pp": 25})],
    "lws/vllm-tpu-llama3.3-70b-tp16.yaml": [dict(
        format="lws", model="meta-llama/Llama-3.3-70B-Instruct", engine="vllm",
        version="latest", tp=16, gpus=None, gpu_type="tpu-v5-lite-podslice",
        lines={"model": 33, "tp": 33})],
    "lws/sglang-llama3.1-8b-tp2-2nodes.yaml": [dict(
        format="lws", model="meta-llama/Meta-Llama-3.1-8B-Instruct", engine="sglang",
        version="latest", tp=2, gpus=2, lines={"model": 25, "tp": 27})],
    "lws/tensorrt-llm-triton-pp8-tp2.yaml": [dict(
        format="lws", model=U("install_model.sh"), engine="trtllm", version=None, tp=2, pp=8,
        gpus=16, lines={"tp": 21})],
    "lws/llamacpp-rpc-llama3-8b-q5km.yaml": [dict(
        format="lws", model=U("llamacpp-llama3-8b-instruct-bartowski-q5km"),
        engine="llamacpp", version=None, gpus=None)],
    "llm-d/lws-wide-ep-deepseek-r1-decode-dp16-ep.yaml": [dict(
        format="lws", model="deepseek-ai/DeepSeek-R1-0528", engine="vllm", version=None,
        tp=1, dp=16, ep=16, gpus=16, role="decode",
        lines={"model": 75, "tp": 81, "dp": 82})],
    "vllm/k8s-gke-gemma3-27b-tp8-l4-k8s-env-expansion.yaml": [dict(
        format="k8s", model="google/gemma-3-27b-it", engine="vllm", version=None, tp=8,
        max_len=32768, max_seqs=4, gpus=8, gpu_type="nvidia-l4",
        lines={"model": 49, "tp": 50})],
    "production-stack/k8s-gie-vllm-llama3.2-1b-lora.yaml": [dict(
        format="k8s", model="meta-llama/Llama-3.2-1B-Instruct", engine="vllm", version=None,
        tp=1, max_seqs=1024, gpus=1, lines={"model": 21, "tp": 23})],
    "production-stack/k8s-prefill-deploy-envvar-bash.yaml": [dict(
        format="k8s", model=U("/var/mdl/YOUR-MODEL-PATH"), served="YOUR-MODEL-NAME",
        engine="vllm", version=None, max_len=512, gpus=0, lines={"model": 141})],
    "production-stack/operator-vllmruntime-llama3.1-8b.yaml": [dict(
        format="vllm-runtime", model="meta-llama/Llama-3.1-8B-Instruct", engine="vllm",
        version=None, tp=1, max_len=4096, max_seqs=32, gpus=1,
        lines={"model": 12, "tp": 29})],
    "sglang/k8s-statefulset-2node-tp16-ep16-localpath.yaml": [dict(
        format="k8s", model="/llm-folder", engine="sglang", version="latest", tp=16, ep=16,
        gpus=16, lines={"model": 30, "tp": 32})],
    "lmdeploy/k8s-internlm2-chat-7b-shell-string.yaml": [dict(
        format="k8s", model="internlm/internlm2-chat-7b", engine="lmdeploy",
        version="latest", gpus=1, lines={"model": 41})],
    "lmdeploy/k8s-ack-qwen1.5-4b-localpath-v0.4.2.yaml": [dict(
        format="k8s", model="/model/Qwen1.5-4B-Chat", engine="lmdeploy", version="0.4.2",
        gpus=1, lines={"model": 27})],
    "rbg/rbg-vllm-qwen3.5-397b-tp8-nightly.yaml": [dict(
        format="rbg", model="/models/Qwen3.5-397B-A17B", served="Qwen3.5-397B-A17B",
        engine="vllm", version="nightly", tp=8, gpus=8, role="server",
        lines={"model": 18, "tp": 23})],
    "rbg/rbg-sglang-pd-qwen3-235b-fp8-tp4-tp8-dpattn.yaml": [
        dict(format="rbg", model="/models/Qwen3-235B-A22B-Instruct-2507-FP8", engine="sglang",
             version="0.5.5.post3", tp=4, ep=4, dp=4, dp_attention=True, gpus=4,
             role="prefill", lines={"tp": 79}),
        dict(format="rbg", model="/models/Qwen3-235B-A22B-Instruct-2507-FP8", engine="sglang",
             version="0.5.5.post3", tp=8, ep=8, dp=8, dp_attention=True, max_seqs=300,
             gpus=8, role="decode", lines={"tp": 158})],
    "kserve/isvc-huggingface-llama3.1-8b-s3.yaml": [dict(
        format="kserve", model=U("s3://${bucket}/models/meta-llama--Meta-Llama-3.1-8B-Instruct"),
        engine="vllm", version=None, tp=1, max_len=1024, gpus=1, gpu_type="g5.8xlarge",
        lines={"model": 22, "tp": 19})],
    "kserve/clusterservingruntime-hf-multinode.yaml": [dict(
        format="kserve", model=U("MODEL"), engine="vllm", version=None,
        tp=U("${TENSOR_PARALLEL_SIZE}"), pp=U("${PIPELINE_PARALLEL_SIZE}"), gpus=None,
        lines={"tp": 41})],
    "kserve/llmisvc-deepseek-r1-dp32-ep-roce.yaml": [dict(
        format="kserve", model="deepseek-ai/DeepSeek-R1-0528", engine="vllm", version=None,
        tp=1, dp=32, ep=32, max_len=8192, gpus=32, lines={"model": 14, "tp": 20})],
    "kserve/llmisvc-nemotron3-ultra-pd-tp8-fp8kv.yaml": [
        dict(format="kserve", model="RedHatAI/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8-block",
             engine="vllm", version=None, tp=8, ep=8, kv="fp8", gpus=8, role="decode",
             lines={"model": 12, "tp": 39}),
        dict(format="kserve", model="RedHatAI/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8-block",
             engine="vllm", version=None, tp=8, ep=8, kv="fp8", gpus=8, role="prefill",
             lines={"tp": 94})],
    "dynamo/dgd-vllm-deepseek-r1-disagg-dep16-2node.yaml": [
        dict(format="dynamo", model="/model-cache/deepseek-r1", served="deepseek-ai/DeepSeek-R1",
             engine="vllm", version=None, tp=1, dp=16, ep=16, max_len=16384, max_seqs=512,
             gpus=16, role="decode", lines={"model": 75, "tp": 82}),
        dict(format="dynamo", model="/model-cache/deepseek-r1", served="deepseek-ai/DeepSeek-R1",
             engine="vllm", version=None, tp=1, dp=16, ep=16, max_len=16384, max_seqs=512,
             gpus=16, role="prefill", lines={"model": 143})],
    "dynamo/dgd-sglang-deepseek-r1-disagg-tp8-dp-attention.yaml": [
        dict(format="dynamo", model="deepseek-ai/DeepSeek-R1", served="deepseek-ai/DeepSeek-R1",
             engine="sglang", version=None, tp=8, dp=8, dp_attention=True, ep=8, gpus=8,
             role="decode", lines={"model": 45, "tp": 49}),
        dict(format="dynamo", model="deepseek-ai/DeepSeek-R1", served="deepseek-ai/DeepSeek-R1",
             engine="sglang", version=None, tp=8, ep=8, gpus=8, role="prefill")],
    "dynamo/dgd-trtllm-deepseek-r1-fp4-b200-configmap-engine-args.yaml": [dict(
        format="dynamo", model="/model-cache/deepseek-r1-fp4", served="deepseek-ai/DeepSeek-R1",
        engine="trtllm", version=None, tp=8, pp=1, ep=8, dp=8, dp_attention=True, kv="fp8",
        max_seqs=8192, gpus=8, lines={"model": 111, "tp": 20, "kv": 34})],
    "ray-serve/kuberay-rayservice-vllm-llama3-8b-tp2-envvars.yaml": [dict(
        format="ray-service", model="meta-llama/Meta-Llama-3-8B-Instruct", engine="vllm",
        version="0.6.1.post2", tp=2, pp=1, gpus=2, lines={"model": 21, "tp": 22})],
    "tgi/k8s-gke-gemma-7b-numshard4-l4.yaml": [dict(
        format="k8s", model="google/gemma-7b-it", engine="tgi", version="latest", tp=4,
        max_len=4096, gpus=4, gpu_type="nvidia-l4", lines={"model": 27, "tp": 29})],
    "tgi/k8s-gke-llama3.1-405b-fp8-numshard8-h100.yaml": [dict(
        format="k8s", model="meta-llama/Llama-3.1-405B-Instruct-FP8", engine="tgi",
        version="2.2", tp=8, gpus=8, gpu_type="nvidia-h100-80gb",
        lines={"model": 25, "tp": 27})],
}
FIELDS = {"tp": "tp", "pp": "pp", "dp": "dp", "ep": "ep", "kv": "kv_cache_dtype",
          "max_len": "max_model_len", "max_seqs": "max_num_seqs", "gpus": "gpus",
          "gpu_type": "gpu_type", "dp_attention": "dp_attention", "version": "engine_version",
          "engine": "engine", "model": "model"}


def test_every_kubernetes_fixture_has_a_case() -> None:
    files = {str(Path(p).relative_to(FIXTURES)) for family in FAMILIES
             for p in glob.glob(str(FIXTURES / family))}
    assert files == set(CASES)


@pytest.mark.parametrize("rel", sorted(CASES))
def test_fixture(rel: str) -> None:
    found = extract(rel)
    expected = CASES[rel]
    assert len(found) == len(expected), [(m.name, m.role) for m in found]
    for model, want in zip(found, expected, strict=True):
        want = {**DEFAULTS, **want}
        assert model.format == want["format"]
        assert model.document >= 0 and model.path.endswith(rel)
        for key, attr in FIELDS.items():
            check(getattr(model, attr), want[key], f"{rel} {model.role or ''} {key}")
        assert model.served_name == want["served"]
        assert model.role == want["role"]
        for key, line in want.get("lines", {}).items():
            got = getattr(model, FIELDS[key])
            assert got is not None and got.line == line, f"{rel} line of {key}: {got}"
        model_line = want.get("lines", {}).get("model")
        if model_line is not None:
            assert model.line == model_line
        else:
            assert model.line == (model.model.line if model.model is not None and
                                  model.model.line else model.engine.line
                                  if model.engine else model.line)


# --- notes and details the table does not show ---------------------------------------------


def notes_of(rel: str, index: int = 0) -> str:
    return "\n".join(extract(rel)[index].notes)


def test_replicas_are_noted_not_multiplied() -> None:
    (model,) = extract("lws/vllm-llama3.1-405b-tp8-pp2-multinode.yaml")
    assert "replicas: 2" in "\n".join(model.notes)
    assert isinstance(model.gpus, Located)
    assert "LWS size 2" in model.gpus.source and model.gpus.line == 28
    assert "replicas: 2" in notes_of("production-stack/k8s-gie-vllm-llama3.2-1b-lora.yaml")


def test_tpu_is_a_note_not_gpus() -> None:
    notes = notes_of("lws/vllm-tpu-llama3.3-70b-tp16.yaml")
    assert "google.com/tpu" in notes and "16 TPU chips per group" in notes


def test_a_time_sliced_gpu_replica_is_one_gpu() -> None:
    """``nvidia.com/gpu.shared`` (the device plugin's time-slicing, renamed): one device to
    the engine, with a note that other pods may share the card."""
    (model,) = extract_text(textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: qwen}
        spec:
          template:
            spec:
              containers:
                - image: vllm/vllm-openai:v0.10.1
                  args: [--model, org/m, --gpu-memory-utilization, "0.3"]
                  resources:
                    requests: {nvidia.com/gpu.shared: 1}
                    limits: {memory: 12Gi, nvidia.com/gpu.shared: 1}
        """))
    assert isinstance(model.gpus, Located) and model.gpus.value == 1
    assert "time-sliced" in "\n".join(model.notes)


def test_statefulset_spans_nnodes_pods() -> None:
    (model,) = extract("sglang/k8s-statefulset-2node-tp16-ep16-localpath.yaml")
    assert isinstance(model.gpus, Located) and "--nnodes" in model.gpus.source


def test_versions_with_misleading_tags_are_noted() -> None:
    assert "date" in notes_of("vllm/k8s-gke-gemma3-27b-tp8-l4-k8s-env-expansion.yaml")
    assert "ubuntu:22.04" in notes_of("production-stack/k8s-prefill-deploy-envvar-bash.yaml")
    assert "Dynamo" in notes_of("dynamo/dgd-vllm-deepseek-r1-disagg-dep16-2node.yaml")
    assert "llm-d" in notes_of("llm-d/lws-wide-ep-deepseek-r1-decode-dp16-ep.yaml")


def test_kserve_storage_uri_hint_and_runtime_template() -> None:
    assert "meta-llama/Meta-Llama-3.1-8B-Instruct" in notes_of(
        "kserve/isvc-huggingface-llama3.1-8b-s3.yaml")
    (runtime,) = extract("kserve/clusterservingruntime-hf-multinode.yaml")
    assert runtime.served_name is None  # --model_name={{.Name}} is a KServe template
    assert "huggingfaceserver" in "\n".join(runtime.notes)


def test_configmap_engine_args_are_followed() -> None:
    (model,) = extract("dynamo/dgd-trtllm-deepseek-r1-fp4-b200-configmap-engine-args.yaml")
    assert isinstance(model.tp, Located) and "ConfigMap dsr1-agg-b200-config" in model.tp.source
    assert "read from ConfigMap" in "\n".join(model.notes)


def test_ray_service_env_var_names_are_said_in_source() -> None:
    (model,) = extract("ray-serve/kuberay-rayservice-vllm-llama3-8b-tp2-envvars.yaml")
    assert isinstance(model.tp, Located) and "TENSOR_PARALLELISM" in model.tp.source
    assert isinstance(model.engine_version, Located)
    assert model.engine_version.source == "pip vllm==0.6.1.post2"


def test_router_and_frontend_are_skipped() -> None:
    roles = [m.role for m in extract("rbg/rbg-sglang-pd-qwen3-235b-fp8-tp4-tp8-dpattn.yaml")]
    assert "router" not in roles
    names = [m.name for m in extract("dynamo/dgd-sglang-deepseek-r1-disagg-tp8-dp-attention.yaml")]
    assert "Frontend" not in names


# --- synthetic cases --------------------------------------------------------------------


def test_vllm_config_from_configmap_with_underscore_keys() -> None:
    text = textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: engine-cfg
        data:
          serve.yaml: |
            model: Qwen/Qwen3-8B
            tensor_parallel_size: 2
            kv-cache-dtype: fp8
            max_model_len: 16384
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: vllm
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.10.1
                command: ["vllm", "serve", "--config", "/etc/vllm/serve.yaml",
                          "--max-model-len", "8192"]
                volumeMounts:
                - name: cfg
                  mountPath: /etc/vllm
                resources:
                  limits:
                    nvidia.com/gpu: 2
              volumes:
              - name: cfg
                configMap:
                  name: engine-cfg
        """)
    (model,) = extract_text(text)
    assert value(model.model) == "Qwen/Qwen3-8B" and model.model is not None
    assert model.model.line == 7
    assert value(model.tp) == 2 and model.tp is not None and model.tp.line == 8
    assert value(model.kv_cache_dtype) == "fp8"
    assert value(model.max_model_len) == 8192  # the command line wins over the file
    assert value(model.engine_version) == "0.10.1" and value(model.gpus) == 2


def test_missing_configmap_is_a_note() -> None:
    text = textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: trt}
        spec:
          template:
            spec:
              containers:
              - name: trt
                image: nvcr.io/nvidia/tensorrt-llm/release:1.0.0
                command: ["trtllm-serve", "nvidia/DeepSeek-R1-FP4",
                          "--extra_llm_api_options", "/cfg/extra.yaml"]
        """)
    (model,) = extract_text(text)
    assert value(model.engine) == "trtllm" and value(model.model) == "nvidia/DeepSeek-R1-FP4"
    assert "/cfg/extra.yaml" in "\n".join(model.notes)


def test_envfrom_configmap_and_amd_gpus_and_cronjob() -> None:
    text = textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: model-env}
        data:
          MODEL: mistralai/Mistral-7B-Instruct-v0.3
        ---
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: nightly}
        spec:
          jobTemplate:
            spec:
              template:
                spec:
                  nodeSelector:
                    amd.com/gpu.product: MI300X
                  containers:
                  - name: vllm
                    image: rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521
                    envFrom:
                    - configMapRef: {name: model-env}
                    command: ["sh", "-c", "vllm serve $(MODEL) --tensor-parallel-size 4"]
                    resources:
                      limits:
                        amd.com/gpu: "4"
        """)
    (model,) = extract_text(text)
    assert value(model.model) == "mistralai/Mistral-7B-Instruct-v0.3"
    assert value(model.tp) == 4 and value(model.gpus) == 4
    assert value(model.gpu_type) == "MI300X"


def test_env_value_from_a_configmap_key_in_the_same_file() -> None:
    """``valueFrom.configMapKeyRef`` of a ConfigMap beside the workload is its data value;
    one the file does not define (or a Secret) stays unknown."""
    text = textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: vllm-config}
        data:
          MODEL_NAME: /models/Qwen2.5-72B-Instruct-AWQ
          TP: "2"
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: vllm}
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.10.1.1
                env:
                - name: MODEL_NAME
                  valueFrom: {configMapKeyRef: {name: vllm-config, key: MODEL_NAME}}
                - name: TP
                  valueFrom: {configMapKeyRef: {name: vllm-config, key: TP}}
                - name: LEN
                  valueFrom: {configMapKeyRef: {name: other-config, key: LEN}}
                args: [--model, $(MODEL_NAME), --tensor-parallel-size, $(TP),
                       --max-model-len, $(LEN)]
                resources: {limits: {nvidia.com/gpu: "2"}}
        """)
    (model,) = extract_text(text)
    assert value(model.model) == "/models/Qwen2.5-72B-Instruct-AWQ" and value(model.tp) == 2
    assert not isinstance(model.max_model_len, Located)


def test_lws_leader_and_worker_gpus_differ() -> None:
    text = textwrap.dedent("""\
        apiVersion: leaderworkerset.x-k8s.io/v1
        kind: LeaderWorkerSet
        metadata: {name: g}
        spec:
          leaderWorkerTemplate:
            size: 3
            leaderTemplate:
              spec:
                containers:
                - name: l
                  image: lmsysorg/sglang:v0.4.6.post1
                  command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen2-7B,
                            --tp-size, $(TP), --nnodes, $(LWS_GROUP_SIZE)]
                  env: [{name: TP, value: "10"}]
                  resources: {limits: {nvidia.com/gpu: "2"}}
            workerTemplate:
              spec:
                containers:
                - name: w
                  image: lmsysorg/sglang:v0.4.6.post1
                  resources: {limits: {nvidia.com/gpu: "4"}}
        """)
    (model,) = extract_text(text)
    assert value(model.tp) == 10 and value(model.engine_version) == "0.4.6.post1"
    assert value(model.gpus) == 2 + 2 * 4


def test_unresolved_k8s_variable_stays_unresolved() -> None:
    text = textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
          - name: vllm
            image: vllm/vllm-openai:latest
            args: ["--model", "$(MODEL_ID)", "--tensor-parallel-size", "2"]
            env:
            - name: MODEL_ID
              valueFrom: {secretKeyRef: {name: s, key: k}}
        """)
    (model,) = extract_text(text)
    assert value(model.engine) == "vllm"  # the image's entrypoint takes the args
    assert isinstance(model.model, Unresolved) and model.model.text == "$(MODEL_ID)"
    assert value(model.tp) == 2 and value(model.engine_version) == "latest"


def test_isvc_version_from_runtime_in_same_file() -> None:
    text = textwrap.dedent("""\
        apiVersion: serving.kserve.io/v1alpha1
        kind: ServingRuntime
        metadata: {name: vllm-rt}
        spec:
          containers:
          - name: kserve-container
            image: kserve/huggingfaceserver:v0.15.0
            args: ["--model_name={{.Name}}"]
        ---
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata: {name: qwen}
        spec:
          predictor:
            model:
              runtime: vllm-rt
              modelFormat: {name: huggingface}
              storageUri: hf://Qwen/Qwen2.5-7B-Instruct
              args: ["--model_name=qwen", "--max-model-len=4096"]
              resources: {limits: {nvidia.com/gpu: "1"}}
        """)
    models = extract_text(text)
    isvc = models[-1]
    assert value(isvc.model) == "Qwen/Qwen2.5-7B-Instruct" and isvc.served_name == "qwen"
    assert value(isvc.max_model_len) == 4096 and value(isvc.gpus) == 1
    assert isvc.image is not None and isvc.image.value == "kserve/huggingfaceserver:v0.15.0"
    assert isvc.engine_version is None  # a KServe release, not a vLLM version


def test_vllm_runtime_extra_args_win() -> None:
    text = textwrap.dedent("""\
        apiVersion: production-stack.vllm.ai/v1alpha1
        kind: VLLMRuntime
        metadata: {name: rt}
        spec:
          model: {modelURL: Qwen/Qwen3-32B, maxModelLen: 8192}
          vllmConfig:
            tensorParallelSize: 2
            extraArgs: ["--max-model-len=16384", "--kv-cache-dtype", "fp8"]
          deploymentConfig:
            resources: {gpu: 2}
            image: {registry: docker.io, name: "vllm/vllm-openai:v0.9.2"}
        """)
    (model,) = extract_text(text)
    assert value(model.max_model_len) == 16384 and value(model.kv_cache_dtype) == "fp8"
    assert value(model.tp) == 2 and value(model.gpus) == 2
    assert value(model.engine_version) == "0.9.2"


def test_ray_service_llm_configs() -> None:
    text = textwrap.dedent("""\
        apiVersion: ray.io/v1
        kind: RayService
        metadata: {name: llm}
        spec:
          serveConfigV2: |
            applications:
            - name: llms
              import_path: ray.serve.llm:build_openai_app
              args:
                llm_configs:
                - model_loading_config: {model_id: Qwen/Qwen2.5-7B-Instruct}
                  accelerator_type: L4
                  engine_kwargs:
                    tensor_parallel_size: 2
                    max_model_len: 8192
          rayClusterConfig:
            workerGroupSpecs:
            - groupName: gpu
              template:
                spec:
                  containers:
                  - name: w
                    image: rayproject/ray-llm:2.46.0-py311-cu124
                    resources: {limits: {nvidia.com/gpu: 2}}
        """)
    (model,) = extract_text(text)
    assert value(model.model) == "Qwen/Qwen2.5-7B-Instruct"
    assert model.model is not None and model.model.line == 11
    assert value(model.tp) == 2 and model.tp is not None and model.tp.line == 14
    assert value(model.max_model_len) == 8192 and value(model.gpu_type) == "L4"
    assert value(model.engine) == "vllm" and value(model.gpus) == 2


def test_ray_service_reads_every_llm_config_as_ray_serve_does() -> None:
    """model_source is the model (model_id is the name it is served under), every LLMConfig
    is a served model, and a replica's GPUs are its own parallel sizes, not the worker pod's."""
    text = textwrap.dedent("""\
        apiVersion: ray.io/v1
        kind: RayService
        metadata: {name: llm}
        spec:
          serveConfigV2: |
            applications:
            - name: llms
              import_path: ray.serve.llm:build_openai_app
              args:
                llm_configs:
                - model_loading_config:
                    model_id: qwen
                    model_source: Qwen/Qwen2.5-7B-Instruct
                - model_loading_config: {model_id: meta-llama/Llama-3.1-8B-Instruct}
                  engine_kwargs: {tensor_parallel_size: 2}
          rayClusterConfig:
            workerGroupSpecs:
            - groupName: gpu
              template:
                spec:
                  containers:
                  - name: w
                    image: rayproject/ray-llm:2.46.0-py311-cu124
                    resources: {limits: {nvidia.com/gpu: 4}}
        """)
    first, second = extract_text(text)
    assert value(first.model) == "Qwen/Qwen2.5-7B-Instruct" and first.served_name == "qwen"
    assert value(first.gpus) == 1
    assert value(second.model) == "meta-llama/Llama-3.1-8B-Instruct"
    assert value(second.tp) == 2 and value(second.gpus) == 2


@pytest.mark.parametrize(("rel", "document"), [
    ("lmdeploy/k8s-internlm2-chat-7b-shell-string.yaml", 1),
    ("production-stack/k8s-prefill-deploy-envvar-bash.yaml", 1),
    ("dynamo/dgd-trtllm-deepseek-r1-fp4-b200-configmap-engine-args.yaml", 1),
    ("lws/vllm-llama3.1-405b-tp8-pp2-multinode.yaml", 0),
])
def test_document_index(rel: str, document: int) -> None:
    assert [m.document for m in extract(rel)] == [document]


# --- negatives --------------------------------------------------------------------------

NEGATIVES = {
    "github-workflow": """\
        name: CI
        on: [push]
        jobs:
          test:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@v4
              - run: vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 8
        """,
    "random-config": """\
        server:
          port: 8080
          replicas: 3
        model: gpt2
        """,
    "configmap-alone": """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c}
        data:
          config.yaml: |
            tensor_parallel_size: 8
            kv_cache_config: {dtype: fp8}
        """,
    "service-alone": """\
        apiVersion: v1
        kind: Service
        metadata: {name: vllm}
        spec:
          ports: [{port: 8000}]
        """,
    "no-engine": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          template:
            spec:
              containers:
              - name: nginx
                image: nginx:1.27
                args: ["--model", "meta-llama/Llama-3.1-8B"]
        """,
    "embeddings": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: tei}
        spec:
          template:
            spec:
              containers:
              - name: tei
                image: ghcr.io/huggingface/text-embeddings-inference:1.5
                args: ["--model-id", "BAAI/bge-large-en-v1.5"]
                resources: {limits: {nvidia.com/gpu: 1}}
        """,
}


@pytest.mark.parametrize("name", sorted(NEGATIVES))
def test_negatives_yield_nothing(name: str) -> None:
    assert extract_text(textwrap.dedent(NEGATIVES[name])) == []


def test_parsers_only_claim_their_kinds() -> None:
    docs = load_documents(textwrap.dedent(NEGATIVES["github-workflow"]), "ci.yaml")
    assert isinstance(docs, list)
    ctx = DocumentContext("ci.yaml", 0, tuple(docs))
    assert not any(p.detect(docs[0], ctx) for p in PARSERS)
    names = {p.name for p in PARSERS}
    assert names == {"k8s", "lws", "rbg", "kserve", "dynamo", "vllm-runtime", "ray-service"}


def _every_parser(text: str, name: str) -> list[ServedModel]:
    """The served models of ``text`` as ``kvlint lint`` extracts them (every parser)."""
    from kvlint.lint.extraction import extract_text
    from kvlint.plugins import get_plugin_manager

    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract_text(text, Path(name), pm, parsers)
    assert isinstance(found, list)
    return list(found)


def test_a_container_script_that_builds_its_command_with_set_dash_dash() -> None:
    """A container's ``bash -lc`` script that gathers vLLM's arguments with ``set --`` and
    runs ``exec vllm "$@"``: the engine, model and tp are read from the list."""
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n"
        "  template:\n    spec:\n      containers:\n        - name: vllm\n"
        "          image: vllm/vllm-openai:v0.11.0\n"
        '          command: ["/bin/bash", "-lc"]\n'
        "          args:\n            - |\n              set -eu\n"
        '              set -- serve "$MODEL_ID" \\\n'
        "                --tensor-parallel-size 2\n"
        '              if [ -n "${KEY:-}" ]; then\n'
        '                set -- "$@" --api-key "$KEY"\n              fi\n'
        '              exec vllm "$@"\n'
        "          env:\n            - name: MODEL_ID\n              value: org/m\n"
        "          resources:\n            limits:\n              nvidia.com/gpu: 2\n")
    (model,) = _every_parser(text, "dep.yaml")
    assert isinstance(model.model, Located) and model.model.value == "org/m"
    assert isinstance(model.tp, Located) and model.tp.value == 2
    assert model.line == 20


def test_a_llama_cpp_full_image_container_given_dash_s_runs_the_server() -> None:
    """A container of llama.cpp's ``full`` image whose args start with ``-s``: its
    ``tools.sh`` entrypoint runs ``llama-server`` with the rest, as in compose."""
    text = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: llama\nspec:\n  containers:\n"
            "    - name: llama\n      image: ghcr.io/ggml-org/llama.cpp:full-cuda\n"
            '      args: ["-s", "-m", "/models/m.gguf", "-c", "4096"]\n')
    (model,) = _every_parser(text, "pod.yaml")
    assert isinstance(model.engine, Located) and model.engine.value == "llamacpp"
    assert isinstance(model.model, Located) and model.model.value == "/models/m.gguf"
    assert isinstance(model.max_model_len, Located) and model.max_model_len.value == 4096


def test_device_cpu_names_the_cpu_as_the_device() -> None:
    text = textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: cpu}
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.8.5
                args: [--model, Qwen/Qwen3-0.6B, --device, cpu]
                resources: {limits: {nvidia.com/gpu: 1}}
        """)
    (model,) = extract_text(text)
    assert isinstance(model.gpu_type, Located) and model.gpu_type.value == "CPU"
    assert model.gpu_type.source == "--device cpu"


@pytest.mark.parametrize(("selector", "gpu_type"), [
    ("gpu: rtx3090", "rtx3090"),
    ("mlops.local/gpu: rtx-3080", "rtx-3080"),  # a family: the 10 GB, 12 GB or Ti card
    ('gpu: "true"', None),
    ("workload: gpu-llm", None),
    ("nvidia.com/gpu.count: '8'", None),
])
def test_a_custom_node_label_naming_a_gpu_is_its_type(selector: str,
                                                      gpu_type: str | None) -> None:
    text = textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: llm}}
        spec:
          template:
            spec:
              nodeSelector:
                {selector}
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.10.1
                args: ["--model", "org/m"]
                resources: {{limits: {{nvidia.com/gpu: 1}}}}
        """)
    (model,) = extract_text(text)
    assert value(model.gpu_type) == gpu_type


def test_isvc_runs_the_vllm_runtime_of_its_file_once() -> None:
    """An InferenceService naming a vLLM ServingRuntime of the same file: one served model,
    the runtime's command with the predictor's args appended and its resources; the runtime
    (a template) is not reported again. ``--model=/mnt/models`` is the directory KServe's
    storage initializer fills from ``storageUri``."""
    text = textwrap.dedent("""\
        apiVersion: serving.kserve.io/v1alpha1
        kind: ServingRuntime
        metadata: {name: llama3}
        spec:
          containers:
          - name: kserve-container
            image: quay.io/modh/vllm:rhoai-2.14
            command: [python, -m, vllm.entrypoints.openai.api_server]
            args: ["--port=8080", "--model=/mnt/models", "--max-model-len=15344"]
        ---
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata: {name: llama3}
        spec:
          predictor:
            model:
              modelFormat: {name: vLLM}
              runtime: llama3
              storageUri: hf://meta-llama/Llama-3.1-8B
              args: ["--tensor-parallel-size=2"]
              resources: {limits: {nvidia.com/gpu: "2"}}
        """)
    (isvc,) = extract_text(text)
    assert value(isvc.model) == "meta-llama/Llama-3.1-8B" and value(isvc.engine) == "vllm"
    assert value(isvc.max_model_len) == 15344 and value(isvc.tp) == 2
    assert value(isvc.gpus) == 2 and isvc.document == 1
    assert any("ServingRuntime llama3" in n for n in isvc.notes)


def test_ray_service_custom_app_args_as_engine_options() -> None:
    """A custom Serve app on an engine's image whose args name the model as the engine's
    options do (vLLM's Ray Serve example parses them as CLI args); an app module named
    ``vllm_*`` is vLLM's too; without an engine image or such args nothing is guessed."""
    text = textwrap.dedent("""\
        apiVersion: ray.io/v1
        kind: RayService
        metadata: {name: llm}
        spec:
          serveConfigV2: |
            applications:
            - name: llm
              import_path: main:build_app
              args:
                model: google/gemma-2b-it
                tensor-parallel-size: 2
          rayClusterConfig:
            headGroupSpec:
              template:
                spec:
                  containers: [{name: head, image: example/vllm-serve:ray}]
            workerGroupSpecs:
            - groupName: gpu
              template:
                spec:
                  containers:
                  - name: worker
                    image: example/vllm-serve:ray
                    resources: {limits: {nvidia.com/gpu: 2}}
        """)
    (model,) = extract_text(text)
    assert [getattr(x, "value", None) for x in (model.engine, model.model, model.tp,
                                                model.gpus)] == [
        "vllm", "google/gemma-2b-it", 2, 2]
    assert extract_text(text.replace("example/vllm-serve:ray", "example/app:ray")) == []
    named = text.replace("main:build_app", "vllm_serve:deployment").replace(
        "example/vllm-serve:ray", "example/app:ray")
    (model,) = extract_text(named)
    assert getattr(model.engine, "value", None) == "vllm"
