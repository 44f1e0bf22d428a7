"""Cloud VM types name their GPU (kvlint/manifests/instance_types.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.lint.extraction import extract
from kvlint.manifests.base import ServedModel
from kvlint.manifests.instance_types import instance_gpu
from kvlint.plugins import get_plugin_manager


@pytest.mark.parametrize(("name", "gpu"), [
    ("g5.2xlarge", "A10G"), ("ml.g5.12xlarge", "A10G"), ("g4dn.xlarge", "T4"),
    ("g6.xlarge", "L4"), ("g6e.48xlarge", "L40S"), ("p4d.24xlarge", "A100-40GB"),
    ("p4de.24xlarge", "A100-80GB"), ("p5.48xlarge", "H100-80GB"), ("p5en.48xlarge", "H200"),
    ("a2-highgpu-1g", "A100-40GB"), ("a2-ultragpu-8g", "A100-80GB"),
    ("a3-megagpu-8g", "H100-80GB"), ("a3-ultragpu-8g", "H200"), ("g2-standard-24", "L4"),
    ("Standard_NC24ads_A100_v4", "A100-PCIe-80GB"), ("standard_nd96isr_h100_v5", "H100-80GB"),
    ("m5.large", None), ("n1-standard-8", None), ("H100", None),
    # Google Cloud accelerator types whose name does not say which card: the GKE label values
    ("nvidia-tesla-a100", "A100-40GB"), ("nvidia-a100-80gb", "A100-80GB"),
    ("nvidia-tesla-v100", "V100-16GB"), ("nvidia-tesla-p100", "P100-PCIe-16GB"),
    ("nvidia-h100-mega-80gb", "H100-80GB"), ("nvidia-l4", None),  # L4: the GPU table's own
])
def test_instance_gpu(name: str, gpu: str | None) -> None:
    assert instance_gpu(name) == gpu


def _served_on(tmp_path: Path, label: str) -> ServedModel:
    """The one model of a Deployment whose nodeSelector holds ``label`` (line 9)."""
    path = tmp_path / "deploy.yaml"
    path.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: v\nspec:\n  template:\n"
        f"    spec:\n      nodeSelector:\n        {label}\n"
        "      containers:\n      - name: v\n        image: vllm/vllm-openai:v0.9.2\n"
        "        args: [\"--model\", \"org/m\"]\n", encoding="utf-8")
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract(path, pm, parsers)
    assert isinstance(found, list)
    (served,) = found
    return served


def test_a_node_selector_instance_type_names_the_gpu(tmp_path: Path) -> None:
    served = _served_on(tmp_path, "node.kubernetes.io/instance-type: g6e.xlarge")
    assert served.gpu_type is not None and served.gpu_type.value == "L40S"
    assert "g6e.xlarge (a VM with L40S)" in served.gpu_type.source and served.gpu_type.line == 9


def test_a_gke_accelerator_label_names_the_40_gb_a100(tmp_path: Path) -> None:
    served = _served_on(tmp_path, "cloud.google.com/gke-accelerator: nvidia-tesla-a100")
    assert served.gpu_type is not None and served.gpu_type.value == "A100-40GB"
    assert "Google Cloud's name for the A100-40GB" in served.gpu_type.source
