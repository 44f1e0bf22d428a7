"""Ordinary ways real manifests are written that kvlint misread (a false error, a model not
found, a version taken for the newest). Each case is written here, in the shape the engines'
own images and parsers define; none is copied from a scanned repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.engines import load_engines
from kvlint.manifests.images import engine_from_image, entrypoint_engine
from kvlint.manifests.operators import kaito_gpu
from tests.helpers import CONFIGS

MAP = ["--model-map", f"Qwen/Qwen3-8B={CONFIGS / 'Qwen--Qwen3-8B.json'}",
       "--model-map", f"deepseek-ai/DeepSeek-V3={CONFIGS / 'deepseek-ai--DeepSeek-V3.json'}"]


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def lint(path: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--no-cache", "--format", "json", "--verbose", *MAP])
    assert result.exit_code in (0, 1), result.output
    return list(json.loads(result.stdout)["results"])


def deployment(image: str, command: str, gpus: int = 1, *, limits: str | None = None,
               pod: str = "") -> str:
    """A Deployment of one container; ``limits``: its resources' limits (default: ``gpus``
    GPUs; empty: no resources block); ``pod``: a line of the pod spec."""
    limits = f"nvidia.com/gpu: {gpus}" if limits is None else limits
    block = f"\n          resources:\n            limits:\n              {limits}" \
        if limits else ""
    spec = f"    spec:\n      {pod}" if pod else "    spec:"
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
spec:
  template:
{spec}
      containers:
        - name: server
          image: {image}
          {command}{block}
"""


def test_sglang_disable_cuda_graph_is_a_flag_in_every_release(tmp_path: Path) -> None:
    """A flag (store_true, then DeprecatedStoreTrueAction with nargs=0 at 0.5.23), never an
    option that takes a value: no KV702 "expected one argument"."""
    path = tmp_path / "sglang.yaml"
    for version in ("v0.4.6.post1", "v0.5.8", "v0.5.23"):
        path.write_text(deployment(
            f"lmsysorg/sglang:{version}",
            'command: ["python3", "-m", "sglang.launch_server", "--model-path", '
            '"Qwen/Qwen3-8B", "--disable-cuda-graph"]'), encoding="utf-8")
        (result,) = lint(path)
        assert [f["code"] for f in result["findings"]] == [], version


def test_bash_lc_double_dash_script_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ray.yaml"
    path.write_text(deployment(
        "vllm/vllm-openai:v0.9.2",
        'command: ["/bin/bash", "-lc", "--"]\n'
        '          args: ["ulimit -n 65536; $RAY_START_CMD; vllm serve Qwen/Qwen3-8B '
        '--tensor-parallel-size 2"]', gpus=2), encoding="utf-8")
    (result,) = lint(path)
    assert result["serving"]["tp"] == 2 and result["target"]["ref"] == "Qwen/Qwen3-8B"


def test_a_rebuilt_vllm_openai_image_keeps_its_entrypoint(tmp_path: Path) -> None:
    assert entrypoint_engine("quay.io/acme/vllm-openai-ubi9:0.4.2") == "vllm"
    assert entrypoint_engine("vllm/vllm-openai@sha256:abc") == "vllm"
    path = tmp_path / "ubi.yaml"
    path.write_text(deployment("quay.io/acme/vllm-openai-ubi9:0.4.2",
                               'args: ["--model", "Qwen/Qwen3-8B"]'), encoding="utf-8")
    (result,) = lint(path)
    assert (result["serving"]["engine"], result["serving"]["engine_version"]) == \
        ("vllm", "0.4.2")


@pytest.mark.parametrize(("image", "expected"), [
    ("opea/vllm-gaudi:1.22.0", ("vllm", None)),  # a Gaudi software release, not vLLM's
    ("opea/vllm-rocm:latest", ("vllm", None)),  # a vendor's newest build, not vLLM's newest
    ("registry.example.com/mirror/vllm-openai:latest", ("vllm", "latest")),  # a mirror
    ("aibrix/vllm-openai:v0.7.3.self.post1", ("vllm", "0.7.3")),
    ("vllm/vllm-openai:v0.6.3.post1", ("vllm", "0.6.3.post1")),
])
def test_vendor_tags(image: str, expected: tuple[str, str | None]) -> None:
    assert engine_from_image(image)[:2] == expected


def test_llama_cpp_build_with_its_model_in_the_environment(tmp_path: Path) -> None:
    assert entrypoint_engine("llama-cpp-docker", ["LLAMA_ARG_MODEL"]) == "llamacpp"
    assert entrypoint_engine("llama-cpp-docker", ["HF_TOKEN"]) is None
    path = tmp_path / "compose.yaml"
    path.write_text("services:\n  llama:\n    image: llama-cpp-docker\n    environment:\n"
                    "      - LLAMA_ARG_CTX_SIZE=2048\n"
                    "      - LLAMA_ARG_MODEL=/models/model-Q5_K_M.gguf\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--no-cache", "--format", "json"])
    (found,) = json.loads(result.stdout)["results"]
    assert found["serving"]["engine"] == "llamacpp"
    assert found["target"]["ref"] == "/models/model-Q5_K_M.gguf"


def test_kaito_sku_names_its_gpu() -> None:
    assert kaito_gpu("Standard_NC24ads_A100_v4") == "A100-80GB"
    assert kaito_gpu("Standard_ND96asr_A100_v4") == "A100-40GB"
    assert kaito_gpu("Standard_NC40ads_H100_v5") == "H100-NVL"
    assert kaito_gpu("Standard_ND96isr_H100_v5") == "H100-80GB"
    assert kaito_gpu("Standard_NC4as_T4_v3") == "T4"
    assert kaito_gpu("Standard_Unknown_v9") == "Standard_Unknown_v9"


def test_an_unknown_version_is_judged_by_every_known_version(tmp_path: Path) -> None:
    """vLLM caches DeepSeek-V3's MLA latent only from some release on: with a version nothing
    dates, neither "caches full K/V" (KV301, old releases) nor "the latent is replicated"
    (KV204, new ones) holds for every version, so neither is reported; KV304 says why."""
    versions = load_engines()["vllm"].judging_versions()
    assert versions[0] == "0" and versions[-1] == str(load_engines()["vllm"].latest)
    assert list(versions) == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    path = tmp_path / "custom.yaml"
    path.write_text(deployment("myorg/custom-vllm:build-42",
                               'command: ["vllm", "serve", "deepseek-ai/DeepSeek-V3", '
                               '"--tensor-parallel-size", "8"]', gpus=8), encoding="utf-8")
    (result,) = lint(path)
    assert result["serving"]["engine_version"] == "unknown"
    (kv304,) = result["findings"]
    assert kv304["code"] == "KV304"
    assert "the vLLM version is unknown" in kv304["message"]
    assert f"({', '.join(['one before ' + versions[1], *versions[1:]])})" in kv304["message"]
    # pinned, the newest release's findings are reported
    path.write_text(deployment("vllm/vllm-openai:v0.34.0",
                               'command: ["vllm", "serve", "deepseek-ai/DeepSeek-V3", '
                               '"--tensor-parallel-size", "8"]', gpus=8), encoding="utf-8")
    (result,) = lint(path)
    assert "KV204" in [f["code"] for f in result["findings"]]


@pytest.mark.parametrize(("version", "dp", "codes"), [
    ("v0.4.3", 8, []),  # 0.3.6-0.4.3: dp_size = tp_size (server_args.py@0.4.3)
    ("v0.4.9", 1, ["KV702"]),  # 0.4.6.post1-0.5.1 assert dp_size > 1 at start
    ("v0.5.5", 1, ["KV204"]),  # 0.5.5: dp stays 1; the latent is replicated over tp=8
])
def test_sglang_dp_attention_without_dp_size_by_release(tmp_path: Path, version: str, dp: int,
                                                        codes: list[str]) -> None:
    path = tmp_path / "sglang.yaml"
    path.write_text(deployment(
        f"lmsysorg/sglang:{version}",
        'command: [python3, -m, sglang.launch_server, --model-path, deepseek-ai/DeepSeek-V3, '
        "--tp, '8', --enable-dp-attention]", gpus=8), encoding="utf-8")
    (result,) = lint(path)
    assert (result["serving"]["dp"], result["serving"]["dp_attention"]) == (dp, True)
    assert [f["code"] for f in result["findings"]] == codes
    if codes == ["KV702"]:  # the refusal; KV204 (computed from dp=1) is left out and named
        assert result["findings"][0]["message"].endswith(
            "kvlint skipped KV204: it depends on this dp.")


def test_kserve_mount_path_is_the_model_its_uri_names(tmp_path: Path) -> None:
    """``vllm serve /mnt/models`` in an LLMInferenceService serves what spec.model.uri names:
    KServe's storage initializer copies it to /mnt/models."""
    path = tmp_path / "llmisvc.yaml"
    path.write_text("""\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: qwen
spec:
  model:
    uri: hf://Qwen/Qwen3-8B
    name: Qwen/Qwen3-8B
  template:
    containers:
      - name: main
        image: vllm/vllm-openai:v0.11.0
        command: ["sh", "-c"]
        args:
          - exec vllm serve /mnt/models --served-model-name Qwen/Qwen3-8B --max-model-len 8192
        resources:
          limits:
            nvidia.com/gpu: "1"
""", encoding="utf-8")
    (result,) = lint(path)
    assert result["target"]["ref"] == "Qwen/Qwen3-8B"
    assert result["findings"] == []


def test_llm_d_values_render_their_own_values_references(tmp_path: Path) -> None:
    """The llm-d modelservice chart renders container fields through Helm's tpl:
    ``{{ .Values.modelArtifacts.name }}`` is the values file's own modelArtifacts.name."""
    path = tmp_path / "values.yaml"
    path.write_text("""\
modelArtifacts:
  name: Qwen/Qwen3-8B
  uri: hf://"{{ .Values.modelArtifacts.name }}"
decode:
  create: true
  replicas: 1
  parallelism:
    tensor: 2
  containers:
  - name: vllm
    image: ghcr.io/llm-d/llm-d:v0.2.0
    modelCommand: vllmServe
    args:
      - --served-model-name
      - "{{ .Values.modelArtifacts.name }}"
      - --max-model-len
      - "{{ .Values.decode.missing }}"
""", encoding="utf-8")
    (result,) = lint(path)
    assert (result["target"]["ref"], result["serving"]["tp"]) == ("Qwen/Qwen3-8B", 2)
    # a reference kvlint cannot render is not a value the engine refuses (no KV702)
    assert [f["code"] for f in result["findings"]] == ["KV304"]


def test_a_pod_that_joins_a_ray_cluster_does_not_hold_all_the_ranks(tmp_path: Path) -> None:
    """``ray start --address=...`` then ``vllm serve -tp 16`` on an 8-GPU pod: the other ranks
    run on the cluster's other nodes, so "8 GPUs but tp=16 needs 16" (KV206) is not claimed."""
    path = tmp_path / "ray-worker.yaml"
    path.write_text(deployment(
        "vllm/vllm-openai:v0.9.2",
        'command: ["/bin/bash", "-c"]\n'
        '          args: ["ray start --address=ray-head:6379; vllm serve Qwen/Qwen3-8B -tp 16 '
        '--distributed-executor-backend ray"]', gpus=8), encoding="utf-8")
    (result,) = lint(path)
    assert "KV206" not in [f["code"] for f in result["findings"]]
    path.write_text(deployment(
        "vllm/vllm-openai:v0.9.2",
        'command: ["/bin/bash", "-c"]\n'
        '          args: ["vllm serve Qwen/Qwen3-8B -tp 16"]', gpus=8), encoding="utf-8")
    (result,) = lint(path)
    assert "KV206" in [f["code"] for f in result["findings"]]


def test_the_nodes_of_one_multi_node_sglang_server_are_one_served_model(tmp_path: Path) -> None:
    """Node 0 (a StatefulSet) and node 1 (a Deployment) of ``--nnodes 2``: node 0 serves;
    the file has one served model, with both nodes' GPUs."""
    def node(kind: str, rank: int) -> str:
        return deployment(
            "lmsysorg/sglang:v0.5.5",
            'command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-8B, '
            f"--tp, '16', --nnodes, '2', --node-rank, '{rank}', --dist-init-addr, "
            "'head:5000']", gpus=8).replace("kind: Deployment", f"kind: {kind}")
    path = tmp_path / "two-nodes.yaml"
    path.write_text(node("StatefulSet", 0) + "---\n" + node("Deployment", 1), encoding="utf-8")
    (result,) = lint(path)
    assert result["serving"]["tp"] == 16
    assert result["target"]["line"] == 11  # node 0's
    assert "KV206" not in [f["code"] for f in result["findings"]]


@pytest.mark.parametrize(("extra", "codes"), [
    ("--node-rank, '1'", ["KV702"]),                       # forgot --nnodes: 1 by default
    ("--node-rank, '1', --nnodes, '2'", []),
    ("--node-rank, '2', --nnodes, '2'", ["KV702"]),
    ("--node-rank, '0'", []),
])
def test_sglang_node_rank_must_be_below_the_nodes(tmp_path: Path, extra: str,
                                                  codes: list[str]) -> None:
    """SGLang does not check ``--node-rank`` against ``--nnodes``; its launcher splits the
    ranks by both, so a rank at or above the node count starts every rank on one node."""
    path = tmp_path / "sglang.yaml"
    path.write_text(deployment(
        "lmsysorg/sglang:v0.5.5.post3",
        "command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-8B, "
        f"--tp, '8', --dist-init-addr, 'head:5000', {extra}]", gpus=8), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV702"]
    assert [f["code"] for f in found] == codes
    if codes:
        assert "--node-rank" in found[0]["message"] and "--nnodes" in found[0]["message"]


@pytest.mark.parametrize(("image", "extra", "resources", "severity"), [
    ("vllm/vllm-openai:v0.10.1.1", "", "cpu: 4", "error"),
    ("vllm/vllm-openai:v0.10.1.1", "", None, "error"),                 # no resources at all
    ("lmsysorg/sglang:v0.5.3-cu126", "", "cpu: 4", "error"),
    ("registry.example.com/team/vllm:2025-06", "", "cpu: 4", "warning"),  # a custom build
    ("vllm/vllm-openai:v0.10.1.1", "runtimeClassName: nvidia", "cpu: 4", None),
    ("vllm/vllm-openai:v0.10.1.1", "", "habana.ai/gaudi: 1", None),   # another accelerator
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1", "", "cpu: 4", None),
    ("ghcr.io/ggml-org/llama.cpp:server", "", "cpu: 4", None),       # serves on the CPU
])
def test_a_pod_that_requests_no_gpu(tmp_path: Path, image: str, extra: str,
                                    resources: str | None, severity: str | None) -> None:
    """A GPU engine's container with no GPU in its resources: the device plugin gives it
    none (KV206). An error for the engine's own CUDA image, which exits at start; a warning
    for a custom image, which may be a CPU build."""
    command = ('command: ["llama-server", "-m", "/models/qwen3-8b-q4_k_m.gguf"]'
               if "llama" in image else
               'command: ["python3", "-m", "sglang.launch_server", "--model-path", '
               '"Qwen/Qwen3-8B"]' if "sglang" in image else
               'command: ["vllm", "serve", "Qwen/Qwen3-8B"]')
    path = tmp_path / "pod.yaml"
    path.write_text(deployment(image, command, limits=resources or "", pod=extra),
                    encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV206"]
    assert [f["severity"] for f in found] == ([severity] if severity else []), found
    if severity:
        assert "requests no GPU" in found[0]["message"]


def test_a_custom_image_given_only_one_engines_options_runs_that_engine(tmp_path: Path) -> None:
    """``image: registry/serving:1.2`` (or a placeholder) with ``args`` that only vLLM's server
    takes: the image's entrypoint is that server; shared options alone say nothing."""
    from kvlint.manifests.cli_options import engine_of_options

    assert engine_of_options(["--model=org/m", "--gpu-memory-utilization=0.9"]) == "vllm"
    assert engine_of_options(["--model", "org/m", "--port", "8000"]) is None
    assert engine_of_options(["--mem-fraction-static", "0.8", "--gpu-memory-utilization",
                              "0.9"]) is None  # two engines' options
    (result,) = lint_custom(tmp_path, "'--model=Qwen/Qwen3-8B', '--enable-lora', "
                            "'--max-lora-rank=16', '--gpu-memory-utilization=0.90', "
                            "'--max-model-len=2048'")
    assert result["serving"]["engine"] == "vllm"
    assert result["serving"]["max_model_len"] == 2048


def lint_custom(tmp_path: Path, args: str) -> list[dict[str, Any]]:
    """A Deployment of a custom image given only the options ``args`` (a YAML flow list's
    items)."""
    path = tmp_path / "custom.yaml"
    path.write_text(deployment("registry.example.com/serving:1.2", f"args: [{args}]"),
                    encoding="utf-8")
    return lint(path)


@pytest.mark.parametrize(("image", "limits", "refused"), [
    ("vllm/vllm-openai:v0.10.1.1", "cpu: 4", True),         # no GPU: nothing to run on
    ("vllm/vllm-openai:v0.10.1.1", "nvidia.com/gpu: 1", False),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.1.1", "cpu: 4", False),
])
def test_device_cpu_on_vllms_cuda_image_without_a_gpu(tmp_path: Path, image: str, limits: str,
                                                      refused: bool) -> None:
    path = tmp_path / "cpu.yaml"
    path.write_text(deployment(
        image, 'args: ["--model", "Qwen/Qwen3-8B", "--device", "cpu"]', limits=limits),
        encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV702"]
    assert bool(found) is refused
    if refused:
        assert "no CPU platform" in found[0]["message"]


def test_a_custom_images_own_options_are_not_judged(tmp_path: Path) -> None:
    """The engine told by its options runs behind a custom entrypoint that may take options
    of its own: an option vLLM lacks is no KV701 there; a bad value of one it has is KV702."""
    (result,) = lint_custom(tmp_path, "'--model=Qwen/Qwen3-8B', "
                            "'--gpu-memory-utilization=0.90', '--wrapper-log-format=json', "
                            "'--max-model-len=abc'")
    codes = [f["code"] for f in result["findings"]]
    assert "KV701" not in codes and "KV702" in codes


@pytest.mark.parametrize(("image", "command", "severity"), [
    # llama.cpp's table is one source of no stated release: a build may be newer (or a fork)
    ("ghcr.io/ggml-org/llama.cpp:server", '["llama-server", "-m", "/m/q.gguf", '
     '"--cache-type-k", "tq3_turbo"]', "warning"),
    ("ghcr.io/ggml-org/llama.cpp:server", '["llama-server", "-m", "/m/q.gguf", '
     '"--cache-type-k", "q8_1"]', "error"),                         # near q8_0: a misspelling
    ("vllm/vllm-openai:v0.10.1.1", '["vllm", "serve", "Qwen/Qwen3-8B", "--kv-cache-dtype", '
     '"turbo3"]', "error"),                                         # the release pinned
])
def test_a_choice_no_release_read_has_warns_only_past_the_newest(
        tmp_path: Path, image: str, command: str, severity: str) -> None:
    path = tmp_path / "choice.yaml"
    path.write_text(deployment(image, f"command: {command}"), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV702"]
    assert [f["severity"] for f in found] == [severity]


SERVICE = """\
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
{namespace}spec:
  selector: {{app: vllm}}
  ports: [{{port: 8000}}]
"""


@pytest.mark.parametrize(("service", "pod", "env", "refused"), [
    ("vllm", "", "", True),                                  # VLLM_PORT=tcp://...
    ("vllm", "enableServiceLinks: false", "", False),        # the pod keeps links out
    ("vllm", "", "env: [{name: VLLM_PORT, value: '8001'}]", False),   # its own value wins
    ("vllm-api", "", "", False),                             # VLLM_API_PORT: not read
])
def test_a_service_named_vllm_sets_the_pods_vllm_port(tmp_path: Path, service: str, pod: str,
                                                      env: str, refused: bool) -> None:
    """Kubernetes' service links put ``VLLM_PORT=tcp://IP:PORT`` into every container of the
    Service's namespace; vLLM reads it as its port number and exits (vllm/envs.py)."""
    command = 'args: ["--model", "Qwen/Qwen3-8B"]' + (f"\n          {env}" if env else "")
    path = tmp_path / "vllm.yaml"
    path.write_text(deployment("vllm/vllm-openai:v0.10.1.1", command, pod=pod)
                    + SERVICE.format(name=service, namespace=""), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV702"]
    assert bool(found) is refused, found
    if refused:
        assert found[0]["severity"] == "error" and found[0]["line"] == 10  # the container
        assert "Service named 'vllm' (line 19 of this file)" in found[0]["message"]
        assert "enableServiceLinks: false" in found[0]["message"]


@pytest.mark.parametrize(("tag", "refused"), [
    ("v0.4.2", False),  # reads no VLLM_PORT (vllm/utils.py@v0.4.2 get_open_port)
    ("v0.4.3", True),   # vllm/envs.py@v0.4.3: int(os.getenv('VLLM_PORT', '0'))
])
def test_vllm_reads_vllm_port_from_0_4_3(tmp_path: Path, tag: str, refused: bool) -> None:
    path = tmp_path / "vllm.yaml"
    path.write_text(deployment(f"vllm/vllm-openai:{tag}", 'args: ["--model", "Qwen/Qwen3-8B"]')
                    + SERVICE.format(name="vllm", namespace=""), encoding="utf-8")
    (result,) = lint(path)
    assert any(f["data"].get("reason") == "service-link-vllm-port"
               for f in result["findings"]) is refused


@pytest.mark.parametrize(("workload_ns", "service_ns", "refused"), [
    ("", "", True), ("  namespace: llm\n", "  namespace: llm\n", True),
    ("  namespace: llm\n", "  namespace: other\n", False), ("", "  namespace: llm\n", False),
])
def test_the_service_may_be_in_a_file_beside_it(tmp_path: Path, workload_ns: str,
                                                service_ns: str, refused: bool) -> None:
    """``kubectl apply -f k8s/`` applies the folder as one: a Service file beside the
    Deployment counts, in the same namespace only."""
    text = deployment("vllm/vllm-openai:v0.10.1.1", 'args: ["--model", "Qwen/Qwen3-8B"]')
    text = text.replace("  name: server\n", "  name: server\n" + workload_ns, 1)
    path = tmp_path / "deployment.yaml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "service.yml").write_text(SERVICE.format(name="vllm", namespace=service_ns),
                                          encoding="utf-8")
    (tmp_path / "notes.yaml").write_text("a: [unclosed\n", encoding="utf-8")  # not YAML
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV702"]
    assert bool(found) is refused, found
    if refused:
        assert "Service named 'vllm' (service.yml)" in found[0]["message"]


COMPOSE = """\
services:
  llm:
    image: {image}
{entrypoint}    command: {command}
    deploy:
      resources:
        reservations:
          devices: [{{driver: nvidia, count: 1, capabilities: [gpu]}}]
"""


@pytest.mark.parametrize(("image", "entrypoint", "command", "refused"), [
    ("vllm/vllm-openai:v0.10.1.1", "", "vllm serve Qwen/Qwen3-8B", True),
    ("vllm/vllm-openai:latest", "", '["/bin/sh", "-c", "vllm serve Qwen/Qwen3-8B"]', True),
    ("vllm/vllm-openai:v0.10.1.1", "", "python3 -m vllm.entrypoints.openai.api_server "
     "--model Qwen/Qwen3-8B", True),
    ("vllm/vllm-openai:v0.10.1.1", "    entrypoint: []\n", "vllm serve Qwen/Qwen3-8B", False),
    ("vllm/vllm-openai:v0.10.1.1", "    entrypoint: [vllm]\n", "serve Qwen/Qwen3-8B", False),
    ("vllm/vllm-openai:v0.10.1.1", "", "--model Qwen/Qwen3-8B", False),
    ("vllm/vllm-openai:v0.10.1.1", "", "Qwen/Qwen3-8B --max-model-len 4096", False),
    ("lmsysorg/sglang:v0.4.6.post1", "", "python3 -m sglang.launch_server --model-path "
     "Qwen/Qwen3-8B", False),                              # no server entrypoint
    ("myorg/vllm-openai-custom:1", "", "vllm serve Qwen/Qwen3-8B", False),  # not vLLM's own
])
def test_a_program_given_to_an_engine_images_own_entrypoint(
        tmp_path: Path, image: str, entrypoint: str, command: str, refused: bool) -> None:
    """Compose's ``command:`` replaces CMD, not ENTRYPOINT: on vLLM's image the server takes
    ``vllm serve ...`` (or ``/bin/sh -c ...``) as its arguments and exits."""
    path = tmp_path / "compose.yaml"
    path.write_text(COMPOSE.format(image=image, entrypoint=entrypoint, command=command),
                    encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV701"
             and f["data"].get("reason") == "entrypoint-receives-program"]
    assert bool(found) is refused, result["findings"]
    if refused:
        assert found[0]["severity"] == "error" and found[0]["line"] == 4
        assert "the service sets no entrypoint, so" in found[0]["message"]


def test_docker_run_hands_a_program_to_the_images_entrypoint(tmp_path: Path) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(
        "#!/bin/bash\n"
        "docker run --gpus 1 vllm/vllm-openai:v0.10.1.1 vllm serve Qwen/Qwen3-8B\n"
        "docker run --gpus 1 vllm/vllm-openai:v0.10.1.1 --model Qwen/Qwen3-8B\n"
        "docker run --gpus 1 --entrypoint vllm vllm/vllm-openai:v0.10.1.1 serve Qwen/Qwen3-8B\n",
        encoding="utf-8")
    results = lint(path)
    flagged = [r["target"]["line"] for r in results for f in r["findings"]
               if f["data"].get("reason") == "entrypoint-receives-program"]
    assert flagged == [2] and len(results) == 3


PORTS = """\
services:
  llm:
    image: {image}
    command: {command}
{environment}    ports: {ports}
    deploy:
      resources:
        reservations:
          devices: [{{driver: nvidia, count: 1, capabilities: [gpu]}}]
"""


@pytest.mark.parametrize(("image", "command", "environment", "ports", "listens"), [
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B --port 8001", "", '["9998:8000"]',
     8001),
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B", "", '["8080:8080"]', 8000),
    ("ghcr.io/huggingface/text-generation-inference:3.3.4", "--model-id Qwen/Qwen3-8B", "",
     '["8080:8080"]', 80),                                   # the image's PORT=80
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B", "", '["127.0.0.1:9000:8000"]',
     None),
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B --port 8001", "",
     '["8000-8010:8000-8010"]', None),                       # a range holds it
    ("ghcr.io/huggingface/text-generation-inference:3.3.4", "--model-id Qwen/Qwen3-8B",
     "    environment: [PORT=8080]\n", '["8080:8080"]', None),
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B --port $${PORT}", "",
     '["8000:8000"]', None),                                 # the engine's port is unknown
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B", "",
     '[{target: 8000, published: 80}]', None),               # the long syntax
])
def test_a_published_port_nothing_listens_on(tmp_path: Path, image: str, command: str,
                                             environment: str, ports: str,
                                             listens: int | None) -> None:
    path = tmp_path / "compose.yaml"
    path.write_text(PORTS.format(image=image, command=command, environment=environment,
                                 ports=ports), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV705"]
    assert bool(found) is (listens is not None), result["findings"]
    if listens is not None:
        assert found[0]["severity"] == "error" and found[0]["line"] == 5
        assert found[0]["data"]["listens"] == listens


@pytest.mark.parametrize(("image", "limits", "refused"), [
    ("vllm/vllm-openai:v0.10.1.1", "amd.com/gpu: 1", True),     # CUDA build, AMD device
    ("vllm/vllm-openai:v0.10.1.1", "habana.ai/gaudi: 1", True),
    ("vllm/vllm-openai-rocm:v0.10.1.1", "amd.com/gpu: 1", False),
    ("rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521", "amd.com/gpu: 1", False),
    ("vllm/vllm-openai:v0.10.1.1", "nvidia.com/gpu: 1", False),
])
def test_vllms_cuda_image_on_another_vendors_accelerator(tmp_path: Path, image: str,
                                                        limits: str, refused: bool) -> None:
    path = tmp_path / "amd.yaml"
    path.write_text(deployment(image, 'args: ["--model", "Qwen/Qwen3-8B"]', limits=limits),
                    encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV702"
             and f["data"].get("reason") == "cuda-image-on-other-accelerator"]
    assert bool(found) is refused, result["findings"]
    if refused:
        assert found[0]["severity"] == "error" and "vLLM's CUDA build" in found[0]["message"]


@pytest.mark.parametrize(("image", "command", "environment", "host"), [
    ("lmsysorg/sglang:v0.5.23", "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
     "", "127.0.0.1"),                                       # SGLang's default --host
    ("lmsysorg/sglang:v0.5.23", "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B "
     "--host 0.0.0.0 --port 30000", "", None),
    ("vllm/vllm-openai:v0.10.1.1", "--model Qwen/Qwen3-8B", "", None),  # every interface
    ("ghcr.io/ggml-org/llama.cpp:server", "-m /models/m.gguf", "", None),  # the image's ENV
    ("ghcr.io/ggml-org/llama.cpp:server", "-m /models/m.gguf",
     "    environment: [LLAMA_ARG_HOST=127.0.0.1]\n", "127.0.0.1"),
])
def test_an_engine_bound_to_the_containers_loopback(tmp_path: Path, image: str, command: str,
                                                    environment: str, host: str | None) -> None:
    ports = {"lmsysorg": '["30000:30000"]', "vllm/vll": '["8000:8000"]'}.get(
        image[:8], '["8080:8080"]')
    path = tmp_path / "compose.yaml"
    path.write_text(PORTS.format(image=image, command=command, environment=environment,
                                 ports=ports), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV705"]
    assert bool(found) is (host is not None), result["findings"]
    if host is not None:
        assert found[0]["data"]["host"] == host and "--host 0.0.0.0" in found[0]["message"]


@pytest.mark.parametrize(("image", "tag"), [
    ("vllm/vllm-openai:0.10.1.1", "0.10.1.1"),                  # the release is v0.10.1.1
    ("docker.io/vllm/vllm-openai:0.9.2", "0.9.2"),
    ("vllm/vllm-openai:REPLACE_WITH_TESTED_VERSION", "REPLACE_WITH_TESTED_VERSION"),
    ("lmsysorg/sglang:0.5.4-cu129", "0.5.4-cu129"),
    ("vllm/vllm-openai:v0.10.1.1", None),
    ("vllm/vllm-openai:latest", None),
    ("vllm/vllm-openai:nightly-0123456789abcdef0123456789abcdef01234567", None),
    ("vllm/vllm-openai:0.10.1.1@sha256:" + "a" * 64, None),    # pulled by its digest
    ("ghcr.io/someone/vllm-openai:0.10.1.1", None),              # a mirror's own tags
    ("lmsysorg/sglang:v0.5.4-cu129", None),
    ("lmsysorg/sglang:dev-Ling-3.0-flash", None),               # a model's dev tag
])
def test_engine_image_tag_its_repository_never_publishes(tmp_path: Path, image: str,
                                                        tag: str | None) -> None:
    engine = "sglang" if "sglang" in image else "vllm"
    command = ('command: ["python3", "-m", "sglang.launch_server", "--model-path", '
               '"Qwen/Qwen3-8B"]' if engine == "sglang" else 'args: ["--model", "Qwen/Qwen3-8B"]')
    path = tmp_path / "tag.yaml"
    path.write_text(deployment(image, command), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV706"]
    assert bool(found) is (tag is not None), result["findings"]
    if tag is not None:
        assert found[0]["severity"] == "error" and found[0]["data"]["tag"] == tag
        assert "ErrImagePull" in found[0]["message"]
        if tag[0].isdigit():
            assert f":v{tag}" in found[0]["message"]


CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: llm-config
{namespace}data:
  MODEL: Qwen/Qwen3-8B
  TP: "2"
"""


@pytest.mark.parametrize(("env", "cm_ns", "resolved"), [
    ("envFrom: [{configMapRef: {name: llm-config}}]", "", True),
    ("env: [{name: MODEL, valueFrom: {configMapKeyRef: {name: llm-config, key: MODEL}}}, "
     "{name: TP, valueFrom: {configMapKeyRef: {name: llm-config, key: TP}}}]", "", True),
    ("envFrom: [{configMapRef: {name: llm-config}}]", "  namespace: llm\n", True),
    ("envFrom: [{configMapRef: {name: llm-config}}]", "  namespace: other\n", False),
    ("envFrom: [{configMapRef: {name: another}}]", "", False),
])
def test_the_configmap_may_be_in_a_file_beside_it(tmp_path: Path, env: str, cm_ns: str,
                                                  resolved: bool) -> None:
    """A kustomization or ``kubectl apply -f k8s/`` applies the folder as one: the
    ConfigMap an ``envFrom``/``configMapKeyRef`` names may be in a file beside the
    Deployment (same namespace), and the model and tp it holds are read from it."""
    command = 'args: ["--model", "$(MODEL)", "-tp", "$(TP)"]\n          ' + env
    text = deployment("vllm/vllm-openai:v0.10.1.1", command, gpus=2)
    text = text.replace("  name: server\n", "  name: server\n  namespace: llm\n", 1)
    path = tmp_path / "deployment.yaml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "configmap.yaml").write_text(CONFIGMAP.format(namespace=cm_ns),
                                             encoding="utf-8")
    (result,) = lint(path)
    if resolved:
        assert result["target"]["ref"] == "Qwen/Qwen3-8B", result
        assert result["serving"]["tp"] == 2
        assert not [f for f in result["findings"] if f["code"] in ("KV902", "KV206")]
    else:
        assert result["target"]["ref"] == "$(MODEL)"
        assert [f for f in result["findings"] if f["code"] == "KV902"]


def test_an_envsubst_template_line_does_not_hide_the_deployment(tmp_path: Path) -> None:
    """``$EXTRA_ARGS_YAML`` on a line of its own (envsubst renders it into list items before
    the file is applied) is not YAML: the file is read without it, with an info saying what
    is not checked, and its model is found."""
    text = deployment("vllm/vllm-openai:v0.10.1.1",
                      'args:\n            - "--model"\n            - "Qwen/Qwen3-8B"\n'
                      "$EXTRA_ARGS_YAML")
    path = tmp_path / "vllm.yaml"
    path.write_text(text, encoding="utf-8")
    results = lint(path)
    assert "Qwen/Qwen3-8B" in [r["target"]["ref"] for r in results]
    findings = [f for r in results for f in r["findings"]]
    kv903 = [f for f in findings if f["code"] == "KV903"]
    assert kv903 and kv903[0]["severity"] == "info" and "$EXTRA_ARGS_YAML" in \
        kv903[0]["message"]
    assert not [f for f in findings if f["severity"] == "error"]


def test_a_dunder_placeholder_a_deploy_script_fills_in_is_unresolved(tmp_path: Path) -> None:
    """``__MODEL__`` / ``__EXTRA_ARGS__`` values are filled in by a deploy script (sed): the
    model is unresolved (KV902), and the extra arguments are not refused as written."""
    command = ('command: ["/bin/sh", "-c"]\n          args: [\'exec vllm serve "$MODEL_NAME" '
               '--max-model-len 2048 $EXTRA_ARGS\']\n          env: [{name: MODEL_NAME, value: '
               '__MODEL__}, {name: EXTRA_ARGS, value: __EXTRA_ARGS__}]')
    path = tmp_path / "vllm.yaml"
    path.write_text(deployment("vllm/vllm-openai:v0.10.1.1", command), encoding="utf-8")
    (result,) = lint(path)
    assert [f["code"] for f in result["findings"] if f["severity"] != "info"] == ["KV902"]


def served(path: Path) -> list[dict[str, Any]]:
    """The served models kvlint reads from ``path``: model and GPU count."""
    from kvlint.lint.extraction import extract
    from kvlint.plugins import get_plugin_manager

    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract(path, pm, parsers)
    assert isinstance(found, list)
    return [{"model": getattr(s.model, "value", None),
             "gpus": getattr(s.gpus, "value", None)} for s in found]


VALUES_GPU_MAP = """\
image:
  repository: vllm/vllm-openai
  tag: v0.10.1.1
args: ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "{tp}"]
{key}:
  enabled: {enabled}
  count: {count}
"""


@pytest.mark.parametrize(("key", "enabled", "count", "gpus"), [
    ("gpu", "true", 2, 2), ("accelerator", "true", 4, 4), ("gpu", "false", 2, 0)])
def test_a_charts_gpu_map_is_its_gpu_request(tmp_path: Path, key: str, enabled: str,
                                             count: int, gpus: int) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(VALUES_GPU_MAP.format(tp=2, key=key, enabled=enabled, count=count),
                    encoding="utf-8")
    (found,) = served(path)
    assert found["gpus"] == gpus


@pytest.mark.parametrize(("devices", "gpus"), [
    ('["/dev/dri/renderD128"]', 1),
    ('["/dev/kfd", "/dev/dri/renderD128", "/dev/dri/renderD129"]', 2),
    ('["/dev/kfd", "/dev/dri"]', None),        # every GPU of the host: the engine's world
])
def test_compose_render_nodes_are_the_gpus_given(tmp_path: Path, devices: str,
                                                 gpus: int | None) -> None:
    path = tmp_path / "compose.yaml"
    path.write_text("services:\n  llm:\n    image: ghcr.io/ggml-org/llama.cpp:server-intel\n"
                    "    command: [\"-m\", \"/models/m.gguf\", \"-ngl\", \"99\"]\n"
                    f"    devices: {devices}\n", encoding="utf-8")
    (found,) = served(path)
    assert found["gpus"] == (gpus if gpus is not None else 1)


def test_gaudi_devices_are_counted_as_the_engines_gpus(tmp_path: Path) -> None:
    path = tmp_path / "hpu.yaml"
    path.write_text(deployment("vault.habana.ai/gaudi-docker/1.19.0/ubuntu22.04/habanalabs/"
                               "vllm-fork:latest",
                               'command: ["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]',
                               limits="habana.ai/gaudi: 2"), encoding="utf-8")
    (result,) = lint(path)
    assert not [f for f in result["findings"] if f["code"] == "KV206"], result["findings"]


BUILT_COMPOSE = """\
services:
  api:
    build: {build}
    image: myorg/llm-api:1.0
{extra}    environment:
      - MODEL=Qwen/Qwen3-8B
    deploy:
      resources:
        reservations:
          devices: [{{driver: nvidia, count: 2, capabilities: [gpu]}}]
"""
BUILT_DOCKERFILE = """\
FROM vllm/vllm-openai:v0.10.1.1
ENV MODEL=facebook/opt-125m TP=4
ENTRYPOINT ["/bin/sh", "-c", "vllm serve $MODEL --tensor-parallel-size $TP"]
"""


@pytest.mark.parametrize(("build", "extra", "tp"), [
    (".", "", 4),                                    # the Dockerfile's command: tp 4 on 2
    ("{context: docker, dockerfile: Dockerfile.vllm}", "", 4),
    (".", "    command: []\n", 4),
    (".", '    entrypoint: ["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]\n', 2),
])
def test_a_compose_service_runs_the_dockerfile_it_builds(tmp_path: Path, build: str,
                                                         extra: str, tp: int) -> None:
    """``build:`` makes the image the service runs: without its own entrypoint/command the
    Dockerfile's ENTRYPOINT/CMD run, with the service's environment over the image's ENV
    (MODEL) and the image's ENV for the rest (TP); its GPUs come from the compose file."""
    folder = tmp_path / "docker" if "context" in build else tmp_path
    folder.mkdir(exist_ok=True)
    name = "Dockerfile.vllm" if "context" in build else "Dockerfile"
    (folder / name).write_text(BUILT_DOCKERFILE, encoding="utf-8")
    path = tmp_path / "compose.yaml"
    path.write_text(BUILT_COMPOSE.format(build=build, extra=extra), encoding="utf-8")
    (result,) = lint(path)
    assert result["target"]["ref"] == "Qwen/Qwen3-8B"
    assert result["serving"]["tp"] == tp and result["serving"]["engine_version"] == "0.10.1.1"
    kv206 = [f for f in result["findings"] if f["code"] == "KV206"]
    assert bool(kv206) is (tp != 2), result["findings"]
    if kv206:
        assert kv206[0]["line"] == 10 + extra.count("\n")   # the GPU request


def test_a_build_outside_the_tree_or_missing_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_text(BUILT_COMPOSE.format(build="../elsewhere", extra=""), encoding="utf-8")
    assert lint(path) == [] or all(r["target"]["ref"] != "Qwen/Qwen3-8B" for r in lint(path))


@pytest.mark.parametrize(("command", "reason"), [
    ('command: ["--model", "Qwen/Qwen3-8B", "--port", "8000"]', "command-is-options"),
    ('args: ["vllm", "serve", "Qwen/Qwen3-8B"]', "entrypoint-receives-program"),
    ('args: ["serve", "Qwen/Qwen3-8B"]', "entrypoint-receives-program"),
    ('args: ["--model", "Qwen/Qwen3-8B"]', None),
    ('command: ["vllm", "serve", "Qwen/Qwen3-8B"]', None),
])
def test_kubernetes_command_and_args_against_the_images_entrypoint(
        tmp_path: Path, command: str, reason: str | None) -> None:
    """``command`` replaces the image's ENTRYPOINT (the runtime then runs ``--model`` as a
    program); ``args`` alone go to it (``vllm serve vllm serve MODEL``, ``vllm serve serve
    MODEL``): each fails at start, and the served model is still read."""
    path = tmp_path / "vllm.yaml"
    path.write_text(deployment("vllm/vllm-openai:v0.10.1.1", command), encoding="utf-8")
    (result,) = lint(path)
    assert result["target"]["ref"] == "Qwen/Qwen3-8B"
    found = [f for f in result["findings"] if f["code"] == "KV701"]
    assert [f["data"]["reason"] for f in found] == ([reason] if reason else []), found
    if found:
        assert found[0]["severity"] == "error"


def test_vllms_cpu_image_is_its_own() -> None:
    """``vllm/vllm-openai-cpu`` is vLLM's (.buildkite/scripts/push-nightly-builds-cpu.sh):
    its rolling tags are the newest release, its release tags the release."""
    assert engine_from_image("vllm/vllm-openai-cpu:latest-x86_64")[:2] == ("vllm", "latest")
    assert engine_from_image("vllm/vllm-openai-cpu:v0.19.0-x86_64")[:2] == ("vllm", "0.19.0")


def test_compose_serve_word_given_to_vllms_entrypoint(tmp_path: Path) -> None:
    """``command: ["serve", MODEL, ...]`` on vLLM's image runs ``vllm serve serve MODEL``:
    one KV701 naming the word, and the model and options meant are read."""
    path = tmp_path / "compose.yaml"
    path.write_text(PORTS.format(image="vllm/vllm-openai:v0.10.1.1",
                                 command='["serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", '
                                         '"1"]', environment="", ports='["8000:8000"]'),
                    encoding="utf-8")
    (result,) = lint(path)
    assert result["target"]["ref"] == "Qwen/Qwen3-8B"
    found = [f for f in result["findings"] if f["code"] == "KV701"]
    assert len(found) == 1 and "'serve' first" in found[0]["message"], found


@pytest.mark.parametrize("build", ['{context: ., dockerfile: /etc/passwd}',
                                   '{context: "..", dockerfile: Dockerfile}',
                                   '"https://github.com/org/repo.git#main"'])
def test_a_build_kvlint_must_not_read_is_not_read(tmp_path: Path, build: str) -> None:
    """A Dockerfile outside the linted tree (an absolute path, a context above it) or a
    remote context is never read: the service stays as its own keys say."""
    (tmp_path.parent / "Dockerfile").write_text(BUILT_DOCKERFILE, encoding="utf-8")
    path = tmp_path / "compose.yaml"
    path.write_text(BUILT_COMPOSE.format(build=build, extra=""), encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--no-cache", "--format", "json", *MAP])
    assert result.exit_code in (0, 1), result.output
    assert all(r["target"]["ref"] != "Qwen/Qwen3-8B"
               for r in json.loads(result.stdout)["results"])


@pytest.mark.parametrize(("tag", "words", "severity"), [
    ("v0.6.3", '"--enable-chunked-prefill", "False"', None),   # 0.6.3's StoreBoolean
    ("v0.6.4", '"--enable-chunked-prefill", "True"', None),    # between 0.6.3 and 0.6.6
    ("v0.4.3", '"--enable-chunked-prefill", "False"', "error"),     # a flag in 0.4.3
    ("v0.8.5", '"--enable-chunked-prefill", "False"', "error"),     # a flag from 0.8.5
    ("v0.6.3", '"--tensor-paralel-size", "1"', "error"),            # a misspelling anywhere
    ("v0.1.7", '"--tensor-paralel-size", "1"', "error"),
])
def test_an_early_release_is_judged_by_its_own_parser(tmp_path: Path, tag: str, words: str,
                                                      severity: str | None) -> None:
    """vLLM 0.2.7-0.7.3's parsers (kvlint/engines/vllm_early_options.json) judge their
    releases: 0.5.5-0.7.3 took ``--enable-chunked-prefill [True|False]`` (``StoreBoolean``),
    0.4.3 a flag, 0.8.5 on a flag again; a misspelling of a known option is an error
    anywhere, also in a release older than every table."""
    path = tmp_path / "compose.yaml"
    path.write_text(PORTS.format(image=f"vllm/vllm-openai:{tag}",
                                 command=f'["--model", "Qwen/Qwen3-8B", {words}]',
                                 environment="", ports='["8000:8000"]'), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV701"]
    assert [f["severity"] for f in found] == ([severity] if severity else []), found


@pytest.mark.parametrize(("image", "severity"), [
    ("myorg/vllm-build:2024", "warning"),           # a build of unknown release
    ("vllm/vllm-openai:v0.10.1.1", "error"),        # a flag there
])
def test_a_boolean_value_older_releases_took_on_an_unknown_build(tmp_path: Path, image: str,
                                                                 severity: str) -> None:
    """vLLM 0.5.5-0.7.3 took ``--enable-chunked-prefill False`` (StoreBoolean, nargs="?"):
    on a build whose release nothing names, the refusal of ``False`` is a warning."""
    path = tmp_path / "compose.yaml"
    path.write_text(PORTS.format(image=image, command='["--model", "Qwen/Qwen3-8B", '
                                 '"--enable-chunked-prefill", "False"]', environment="",
                                 ports='["8000:8000"]'), encoding="utf-8")
    (result,) = lint(path)
    found = [f for f in result["findings"] if f["code"] == "KV701"]
    assert [f["severity"] for f in found] == [severity], found
