"""Cloud VM instance types and the GPUs they carry, so that a node selector, a Karpenter
requirement or a launcher's ``instance_type`` that names a VM (``g5.2xlarge``,
``a3-highgpu-8g``, ``Standard_NC24ads_A100_v4``) or a Google Cloud accelerator
(``nvidia-tesla-a100``) names its GPU model too.

Sources: AWS "Amazon EC2 accelerated computing instances" (instance families and their
GPUs; SageMaker's ``ml.`` types are the same families), Google Cloud "GPU machine types"
(accelerator-optimized A2/A3/A4/G2), Azure's VM size documentation (GPU-accelerated sizes).
A family this table does not list names no GPU (an unknown type is left as written).
"""

from __future__ import annotations

import re

__all__ = ["AZURE_SKUS", "instance_gpu"]

AZURE_SKUS: dict[str, tuple[str, int]] = {
    "standard_nc4as_t4_v3": ("T4", 1), "standard_nc8as_t4_v3": ("T4", 1),
    "standard_nc16as_t4_v3": ("T4", 1), "standard_nc64as_t4_v3": ("T4", 4),
    "standard_nc6s_v3": ("V100-16GB", 1), "standard_nc12s_v3": ("V100-16GB", 2),
    "standard_nc24s_v3": ("V100-16GB", 4), "standard_nc24rs_v3": ("V100-16GB", 4),
    "standard_nd40rs_v2": ("V100-32GB", 8),
    "standard_nc24ads_a100_v4": ("A100-PCIe-80GB", 1),
    "standard_nc48ads_a100_v4": ("A100-PCIe-80GB", 2),
    "standard_nc96ads_a100_v4": ("A100-PCIe-80GB", 4),
    "standard_nd96asr_v4": ("A100-40GB", 8), "standard_nd96asr_a100_v4": ("A100-40GB", 8),
    "standard_nd96amsr_a100_v4": ("A100-80GB", 8),
    "standard_nc40ads_h100_v5": ("H100-NVL", 1), "standard_nc80adis_h100_v5": ("H100-NVL", 2),
    "standard_nd96isr_h100_v5": ("H100-80GB", 8), "standard_nd96isr_h200_v5": ("H200", 8),
    "standard_nd96isr_mi300x_v5": ("MI300X", 8),
}
"""Azure VM sizes with GPUs: (GPU, GPUs per VM), from Azure's VM size documentation."""

_AWS: tuple[tuple[str, str], ...] = (
    ("p6-b200", "B200"), ("p5en", "H200"), ("p5e", "H200"), ("p5", "H100-80GB"),
    ("p4de", "A100-80GB"), ("p4d", "A100-40GB"), ("p3dn", "V100-32GB"), ("p3", "V100-16GB"),
    ("g6e", "L40S"), ("gr6", "L4"), ("g6", "L4"), ("g5", "A10G"), ("g4dn", "T4"),
)
"""AWS instance family -> GPU (the ``.size`` after it sets the count, not the model)."""
_AWS_TYPE = re.compile(r"^(?:ml\.)?([a-z][a-z0-9-]*?)\.\d*(?:x|metal|large|medium|small)",
                       re.IGNORECASE)
_GCP: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^a2-ultragpu-"), "A100-80GB"), (re.compile(r"^a2-(?:high|mega)gpu-"),
                                                   "A100-40GB"),
    (re.compile(r"^a3-ultragpu-"), "H200"),
    (re.compile(r"^a3-(?:high|mega|edge)gpu-"), "H100-80GB"),
    (re.compile(r"^a4-highgpu-"), "B200"), (re.compile(r"^g2-standard-"), "L4"),
)
"""Google Cloud accelerator-optimized machine types -> GPU."""
_GCP_ACCELERATORS: dict[str, str] = {
    "nvidia-tesla-a100": "A100-40GB", "nvidia-a100-80gb": "A100-80GB",
    "nvidia-tesla-v100": "V100-16GB", "nvidia-tesla-p100": "P100-PCIe-16GB",
    "nvidia-h100-mega-80gb": "H100-80GB",
}
"""Google Cloud accelerator types (Compute Engine's ``--accelerator type=``, and GKE's
``cloud.google.com/gke-accelerator`` node label, which carries the same names) whose name
alone does not say which GPU of kvlint's table they are: ``nvidia-tesla-a100`` is the 40 GB
A100 of the A2 standard machines (``nvidia-a100-80gb`` the A2 ultra's), the V100 and P100 are
the 16 GB cards, and ``nvidia-h100-mega-80gb`` is the A3 Mega's H100 SXM (Google Cloud "GPU
machine types", https://cloud.google.com/compute/docs/gpus; the Vertex AI ``AcceleratorType``
enum lists the same accelerators, NVIDIA_TESLA_A100 apart from NVIDIA_A100_80GB:
https://docs.cloud.google.com/ruby/docs/reference/google-cloud-ai_platform-v1/latest/
Google-Cloud-AIPlatform-V1-AcceleratorType). The
others (``nvidia-l4``, ``nvidia-tesla-t4``, ``nvidia-h100-80gb``, ``nvidia-h200-141gb``,
``nvidia-b200``...) are names kvlint's GPU table reads as they are."""


def instance_gpu(name: str) -> str | None:
    """The GPU model of the VM type ``name`` (``None``: not a GPU type this table knows)."""
    text = name.strip().lower()
    if text in _GCP_ACCELERATORS:
        return _GCP_ACCELERATORS[text]
    if text in AZURE_SKUS:
        return AZURE_SKUS[text][0]
    for pattern, gpu in _GCP:
        if pattern.match(text):
            return gpu
    found = _AWS_TYPE.match(text)
    if found is not None:
        family = found.group(1)
        return next((gpu for prefix, gpu in _AWS if family == prefix), None)
    return None
