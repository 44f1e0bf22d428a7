"""The accelerator a deployment runs on when it names no GPU model: what the device it
requests, the runtime it asks for and the image it runs say.

Three sources, most specific first (callers keep a GPU model the manifest names, a node label
or selector, over any of these):

- **node labels** that name the GPU model, beyond the well-known ones
  (:data:`kvlint.manifests.kubernetes.GPU_TYPE_KEYS`): any label whose last segment says "GPU
  product/name/model/type" or "accelerator type" (NVIDIA GPU Feature Discovery
  ``nvidia.com/gpu.product``, NVIDIA DRA ``gpu.nvidia.com/model``, Volcano Engine VKE
  ``machine.cluster.vke.volcengine.com/gpu-name``, KubeRay/Anyscale
  ``ray.io/accelerator-type``...). Counts, memories and presence flags
  (``nvidia.com/gpu.count``, ``nvidia.com/gpu.present``) are not types;
- **the device plugin's resource** a container requests: each vendor's plugin advertises its
  own extended resource (HabanaAI/habana-k8s-device-plugin ``habana.ai/gaudi``,
  ROCm/k8s-device-plugin ``amd.com/gpu``, aws-neuron device plugin
  ``aws.amazon.com/neuron``/``neuroncore``/``neurondevice``,
  intel/intel-device-plugins-for-kubernetes ``gpu.intel.com/i915``/``xe``, Huawei's Ascend
  plugin ``huawei.com/Ascend910``/``ascend-1980``); Docker/compose ``runtime: habana``
  (Habana's container runtime) and a ``/dev/kfd`` device (the ROCm compute device, which
  ROCm containers are given with ``/dev/dri``) say the same;
- **the image**, when it is built for one family only: ROCm images whose tag names the
  Instinct generation (``mi300``/``mi30x``: gfx942; ``mi35x``/``mi355``: gfx950; SGLang's
  ``docker/rocm.Dockerfile`` builds ``-mi30x``/``-mi35x`` tags for those GPU_ARCH values),
  Gaudi builds (``vllm-gaudi``, ``tgi-gaudi``, an ``hpu`` tag), Ascend builds
  (``vllm-ascend``), CPU builds (TGI's ``-intel-cpu`` tag, vLLM's ``vllm-cpu`` images) and
  ROCm builds in general (``rocm/...``, ``vllm-rocm``, a ``rocm`` tag).

The family is reported as a description (``Intel Gaudi (HPU)``, ``AMD Instinct MI300 series
(gfx942)``), never as a GPU model kvlint's GPU table would size: a family does not say how
much memory one device has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kvlint.manifests.base import Located
from kvlint.model.engine_args import GPU_BUILD

__all__ = ["GENERIC_AMD", "device_family", "image_family", "is_gpu_label", "runtime_family",
           "variable_family"]

GENERIC_AMD = "AMD GPU (ROCm)"

_LABEL = re.compile(r"(?:^|[./-])(?:gpu[.-]?(?:product|name|model|type)|"
                    r"accelerator(?:[.-]?type)?|instance-gpu-name|gke-accelerator)$")
_DEVICE_PLUGINS: tuple[tuple[str, str], ...] = (
    ("habana.ai/gaudi", "Intel Gaudi (HPU)"),
    ("amd.com/gpu", GENERIC_AMD),
    ("aws.amazon.com/neuron", "AWS Neuron (Inferentia/Trainium)"),
    ("gpu.intel.com/", "Intel GPU (XPU)"),
    ("huawei.com/ascend", "Huawei Ascend (NPU)"),
)
"""Extended-resource names (a prefix, compared without case) -> the family they advertise."""


_DEVICE_VARIABLES = re.compile(
    r"(?:^|[\s;&|\"'-]|name:\s*)((?:HIP|ROCR|HABANA)_VISIBLE_DEVICES|ASCEND_RT_VISIBLE_DEVICES"
    r"|PYTORCH_NPU_ALLOC_CONF|VLLM_ASCEND_[A-Z0-9_]{1,64})\b(?:\s*[=:]|\s*$)",
    re.MULTILINE)
_CUDA_DEVICES = re.compile(r"(?:^|[\s;&|\"'-]|name:\s*)CUDA_VISIBLE_DEVICES\s*[=:]",
                           re.MULTILINE)
ASCEND = "Huawei Ascend (NPU)"
_VARIABLE_FAMILIES = {"HIP": GENERIC_AMD, "ROCR": GENERIC_AMD, "HABANA": "Intel Gaudi (HPU)",
                      "ASCEND": ASCEND, "PYTORCH": ASCEND, "VLLM": ASCEND}
"""The runtime's own device-visibility variable -> the family it selects devices of (ROCm's
``HIP_VISIBLE_DEVICES``/``ROCR_VISIBLE_DEVICES``, Habana's ``HABANA_VISIBLE_DEVICES``,
CANN's ``ASCEND_RT_VISIBLE_DEVICES``), and the settings only an Ascend NPU's stack reads
(torch_npu's ``PYTORCH_NPU_ALLOC_CONF``, vllm-ascend's ``VLLM_ASCEND_*``), keyed by the
variable's first word."""


def variable_family(text: str) -> Located[str] | None:
    """The accelerator family a file's device-visibility variables select, when it sets
    those of one vendor only (``export HIP_VISIBLE_DEVICES=0,1``, an env entry named
    ``HABANA_VISIBLE_DEVICES``), on the line of the first; ``None`` otherwise."""
    found: dict[str, int] = {}
    text = text[:1_000_000]
    for match in _DEVICE_VARIABLES.finditer(text):
        start = text.rfind("\n", 0, match.start(1)) + 1
        if text[start:match.start(1)].lstrip().startswith("#"):
            continue  # a comment
        family = _VARIABLE_FAMILIES[match.group(1).split("_", 1)[0]]
        if family not in found:
            found[family] = text.count("\n", 0, match.start(1)) + 1
            if len(found) > 1:
                return None
    if len(found) != 1 or _CUDA_DEVICES.search(text):
        return None  # two vendors, or a script that also lists CUDA devices: portable
    ((family, line),) = found.items()
    if family == ASCEND:
        return Located(family, line, None, "Ascend NPU settings (CANN, torch_npu, "
                       "vllm-ascend variables)")
    name = "HABANA_VISIBLE_DEVICES" if "Gaudi" in family else "HIP_VISIBLE_DEVICES"
    return Located(family, line, None, f"{name} (the devices its runtime makes visible)")


def is_gpu_label(key: str) -> bool:
    """Whether a node label names the GPU (or accelerator) model: its last segment says so
    (``gpu.product``, ``gpu-name``, ``gpu.nvidia.com/model``, ``accelerator-type``)."""
    low = key.lower()
    head, _, tail = low.rpartition("/")
    if tail in ("model", "class") and "gpu" in head:
        # NVIDIA DRA: gpu.nvidia.com/model; CoreWeave: gpu.nvidia.com/class (RTX_A5000)
        return True
    return bool(_LABEL.search(tail))


def device_family(resources: Iterable[Mapping[str, Any] | None]) -> tuple[str, str] | None:
    """``(family, resource)`` of the first vendor device resource a container's ``limits``
    or ``requests`` ask for (a positive or unreadable count); ``None`` for ``nvidia.com/gpu``
    (the model is not in the name) or none."""
    for block in resources:
        if not isinstance(block, Mapping):
            continue
        for part in ("limits", "requests"):
            asked = block.get(part)
            if not isinstance(asked, Mapping):
                continue
            for name, count in asked.items():
                if str(count).strip() in ("0", ""):
                    continue
                low = str(name).lower()
                for prefix, family in _DEVICE_PLUGINS:
                    if low.startswith(prefix):
                        return family, str(name)
    return None


def runtime_family(service: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(family, why)`` a compose service's container runtime or devices give."""
    runtime = service.get("runtime")
    if isinstance(runtime, str) and runtime.strip().lower() == "habana":
        return "Intel Gaudi (HPU)", "runtime: habana"
    devices = service.get("devices")
    if isinstance(devices, list):
        for item in devices:
            text = str(item.get("source", "")) if isinstance(item, Mapping) else str(item)
            if text.split(":", 1)[0].rstrip("/") == "/dev/kfd":
                return GENERIC_AMD, "devices: /dev/kfd (the ROCm compute device)"
    return None


_IMAGE_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|[^a-z0-9])mi(?:30[0x]|325)(?:x|a)?(?:$|[^a-z0-9])"),
     "AMD Instinct MI300 series (gfx942)"),
    (re.compile(r"(?:^|[^a-z0-9])mi(?:35[0x5])(?:x)?(?:$|[^a-z0-9])"),
     "AMD Instinct MI350 series (gfx950)"),
    (re.compile(r"gaudi|(?:^|[:_-])hpu(?:$|[-_.])|habana"), "Intel Gaudi (HPU)"),
    (re.compile(r"ascend"), "Huawei Ascend (NPU)"),
    (re.compile(r"(?:^|[:_-])intel-cpu(?:$|[-_.])"), "CPU (Intel)"),
    (re.compile(r"(?:^|[/_-])vllm-cpu(?:$|[-_./:])|(?:^|[:/_-])cpu(?:$|[-_.:/])"), "CPU"),
    (re.compile(r"(?:^|/)rocm/|(?:^|[/_:-])rocm(?:\d|$|[-_.:/])"), GENERIC_AMD),
    # llama.cpp's own images without a backend suffix are its CPU builds (docs/docker.md:
    # full, light and server; -cuda, -rocm, -intel, -vulkan, -musa name the GPU builds)
    (re.compile(r"(?:^|/)(?:ggml-org|ggerganov)/llama\.cpp:(?:full|light|server)(?:-b\d+)?$"),
     "CPU"),
)


def image_family(image: Located[str] | None) -> Located[str] | None:
    """The family an image is built for, when its name or tag says so."""
    if image is None or not isinstance(image.value, str):
        return None
    ref = image.value.strip().lower()
    if "$" in ref.rsplit("/", 1)[-1].split(":", 1)[0]:
        return None  # the image's own name is a variable: it says nothing
    for pattern, family in _IMAGE_FAMILIES:
        if pattern.search(ref):
            return Located(family, image.line, image.column,
                           f"image {image.value} is built for it")
    return None


_ENGINE_GPU_IMAGES: Mapping[str, re.Pattern[str]] = {
    "vllm": re.compile(r"(?:^|/)(?:vllm/vllm-openai|nvidia/vllm)(?::|@|$)"),
    "sglang": re.compile(r"(?:^|/)lmsysorg/sglang(?::|@|$)"),
    "lmdeploy": re.compile(r"(?:^|/)openmmlab/lmdeploy(?::|@|$)"),
    "trtllm": re.compile(r"(?:^|/)nvidia/(?:tensorrt-llm/release|tritonserver)(?::|@|$)"),
}
"""The engines' own GPU (CUDA) images: vLLM's ``vllm/vllm-openai`` and NVIDIA's NGC vLLM,
SGLang's ``lmsysorg/sglang``, LMDeploy's ``openmmlab/lmdeploy``, NVIDIA's TensorRT-LLM and
Triton images. A tag naming another build (``-rocm``, ``-cpu``) is told apart by
:func:`image_family`."""


def engine_gpu_build(engine: str, image: Located[str] | None) -> bool:
    """Whether ``image`` is ``engine``'s own CUDA image, which cannot start without a GPU
    (a custom image may hold a CPU or another accelerator's build)."""
    pattern = _ENGINE_GPU_IMAGES.get(engine)
    if pattern is None or image is None or not isinstance(image.value, str):
        return False
    return pattern.search(image.value.strip().lower()) is not None and \
        image_family(image) is None


def no_gpu_source(source: str, engine: str, image: Located[str] | None) -> str:
    """``source`` (why a container is given no GPU), naming the image when it is the
    engine's own GPU build."""
    if engine_gpu_build(engine, image) and image is not None:
        return f"{source}; image {image.value} is {GPU_BUILD}"
    return source

