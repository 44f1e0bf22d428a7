"""The accelerator family a manifest runs on when it names no GPU model
(:mod:`kvlint.manifests.accelerators`): node labels, device-plugin resources, compose
runtimes and devices, and images built for one family."""

from __future__ import annotations

import pytest

from kvlint.manifests.accelerators import image_family, is_gpu_label
from kvlint.manifests.base import Located
from tests.loaders.manifests.test_helm_keys import served, v


@pytest.mark.parametrize(("key", "names_gpu"), [
    ("nvidia.com/gpu.product", True),
    ("gpu.nvidia.com/class", True),  # CoreWeave: RTX_A5000, A100_PCIE_80GB
    ("gpu.nvidia.com/model", True),
    ("machine.cluster.vke.volcengine.com/gpu-name", True),
    ("ray.io/accelerator-type", True),
    ("nvidia.com/gpu.present", False),
    ("nvidia.com/gpu.count", False),
    ("llm-d.ai/model", False),
])
def test_gpu_labels(key: str, names_gpu: bool) -> None:
    assert is_gpu_label(key) is names_gpu


@pytest.mark.parametrize(("image", "family"), [
    ("rocm/vllm:rocm6.2_mi300_ubuntu20.04_py3.9_vllm_0.6.4", "AMD Instinct MI300 series"),
    ("lmsysorg/sglang:v0.5.8-rocm700-mi30x", "AMD Instinct MI300 series"),
    ("lmsysorg/sglang:v0.5.8-rocm700-mi35x", "AMD Instinct MI350 series"),
    ("lmsysorg/sglang:v0.4.7.post1-rocm630", "AMD GPU (ROCm)"),
    ("opea/vllm-gaudi:1.22.0", "Intel Gaudi (HPU)"),
    ("ghcr.io/huggingface/text-generation-inference:2.4.1-intel-cpu", "CPU (Intel)"),
    ("public.ecr.aws/x/vllm-cpu-release-repo:v0.11.2", "CPU"),
    ("quay.io/ascend/vllm-ascend:v0.9.0", "Huawei Ascend (NPU)"),
    ("vllm/vllm-openai:v0.9.0-cu128", None),
    ("lmsysorg/sglang:v0.5.5.post3-cu129-amd64", None),
    ("${REGISTRY}/vllm-${TARGET}:latest", None),
])
def test_image_family(image: str, family: str | None) -> None:
    found = image_family(Located(image, 1, None, "image"))
    assert (found.value.split(" (gfx")[0] if found else None) == family


DEPLOYMENT = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: m}
    spec:
      template:
        spec:
          {extra}
          containers:
          - name: vllm
            image: {image}
            command: ["vllm", "serve", "org/M", "--tensor-parallel-size", "1"]
            resources:
              limits: {{{resource}: 1}}
    """


@pytest.mark.parametrize(("extra", "image", "resource", "expected"), [
    ("", "vllm/vllm-openai:v0.11.0", "habana.ai/gaudi", "Intel Gaudi (HPU)"),
    ("", "vllm/vllm-openai:v0.11.0", "huawei.com/ascend-1980", "Huawei Ascend (NPU)"),
    ("", "rocm/vllm:rocm6.2_mi300_ubuntu20.04_py3.9_vllm_0.6.4", "amd.com/gpu",
     "AMD Instinct MI300 series (gfx942)"),  # the image refines the device's family
    ("", "vllm/vllm-openai:v0.11.0", "amd.com/gpu", "AMD GPU (ROCm)"),
    ("", "vllm/vllm-openai:v0.11.0", "nvidia.com/gpu", None),
    ("nodeSelector: {gpu.nvidia.com/model: H200}", "vllm/vllm-openai:v0.11.0",
     "nvidia.com/gpu", "H200"),
    ("nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}", "rocm/vllm:latest",
     "nvidia.com/gpu", "NVIDIA-L4"),  # a label the manifest names wins over the image
    # the GPU a toleration of a GPU taint names (an accelerator profile: those nodes' GPU)
    ("tolerations: [{key: nvidia.com/gpu, value: Tesla-T4-SHARED, effect: NoSchedule}]",
     "vllm/vllm-openai:v0.11.0", "nvidia.com/gpu", "T4"),
    ("tolerations: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]",
     "vllm/vllm-openai:v0.11.0", "nvidia.com/gpu", None),
])
def test_kubernetes_gpu_family(extra: str, image: str, resource: str,
                               expected: str | None) -> None:
    text = DEPLOYMENT.replace("{extra}", extra or "hostIPC: false").replace(
        "{image}", image).replace("{resource}", resource).replace("{{", "{").replace("}}", "}")
    (m,) = served(text, "deploy.yaml")
    assert v(m.gpu_type) == expected


def test_node_affinity_on_a_vendor_gpu_label() -> None:
    (m,) = served("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: m}
        spec:
          template:
            spec:
              affinity:
                nodeAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    nodeSelectorTerms:
                    - matchExpressions:
                      - key: machine.cluster.vke.volcengine.com/gpu-name
                        operator: In
                        values: [Tesla-V100]
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.11.0
                command: ["vllm", "serve", "org/M"]
                resources: {limits: {nvidia.com/gpu: 1}}
        """, "deploy.yaml")
    assert v(m.gpu_type) == "Tesla-V100"


@pytest.mark.parametrize(("service", "expected"), [
    ("    runtime: habana\n", "Intel Gaudi (HPU)"),
    ("    devices:\n      - /dev/kfd:/dev/kfd\n      - /dev/dri:/dev/dri\n", "AMD GPU (ROCm)"),
    ("", None),
])
def test_compose_runtime_and_devices(service: str, expected: str | None) -> None:
    text = ("services:\n  llm:\n    image: example/llm-server:1.0\n"
            "    command: [\"vllm\", \"serve\", \"org/M\"]\n" + service)
    (m,) = served(text, "compose.yaml")
    assert v(m.gpu_type) == expected
