"""MIG devices (NVIDIA Multi-Instance GPU): a pod's MIG slices are its GPUs, sized by their
profile, and no engine rank group spans several of them (a CUDA process enumerates one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located
from kvlint.model.hardware import find_gpu, mig_device
from tests.helpers import CONFIGS
from tests.loaders.manifests.support import extract_path

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: vllm}}
spec:
  template:
    spec:
{selector}      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args: ["--model", "org/m"{flags}]
          resources:
            limits:
              {resource}: {count}
"""


def deployment(tmp_path: Path, *, resource: str = "nvidia.com/mig-3g.40gb", count: int = 1,
               flags: str = "", selector: str = "") -> Path:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(resource=resource, count=count, flags=flags,
                                      selector=selector), encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "canonical", "memory_bytes", "bandwidth"), [
    # no parent: the profile's memory as GiB, bandwidth unknown
    ("MIG 3g.40gb", "MIG 3g.40gb", 40 * 2**30, 0),
    ("mig-1g.10gb+me", "MIG 1g.10gb", 10 * 2**30, 0),
    ("1c.3g.20gb", "MIG 1c.3g.20gb", 20 * 2**30, 0),
    # GPU Feature Discovery's single-strategy product label: the parent's share (40 of 80)
    ("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", "A100-80GB MIG 3g.40gb", 85_899_345_920 // 2,
     2_039_000_000_000 // 2),
    ("A100-80GB MIG 1g.10gb", "A100-80GB MIG 1g.10gb", 85_899_345_920 // 8,
     2_039_000_000_000 // 8),
])
def test_a_mig_device_is_sized_by_its_profile(name: str, canonical: str, memory_bytes: int,
                                               bandwidth: int) -> None:
    gpu = find_gpu(name)
    assert (gpu.name, gpu.memory_bytes, gpu.bandwidth_bytes_per_s) == \
        (canonical, memory_bytes, bandwidth)
    assert gpu.runtime_memory_bytes == memory_bytes


@pytest.mark.parametrize("name", ["A100-80GB", "H100", "RTX 4090", "3g", "40gb", "mig",
                                  "mig-1g." + "9" * 5000 + "gb"])  # no int of 5,000 digits
def test_whole_gpus_are_not_mig_devices(name: str) -> None:
    assert mig_device(name) is None


def test_mig_slices_are_the_pods_gpus_and_name_its_gpu(tmp_path: Path) -> None:
    (model,) = extract_path(deployment(tmp_path, count=2))
    assert isinstance(model.gpus, Located) and model.gpus.value == 2
    assert isinstance(model.gpu_type, Located) and model.gpu_type.value == "MIG 3g.40gb"
    assert model.gpu_type.line == 13
    selector = "      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
    (model,) = extract_path(deployment(tmp_path, selector=selector))
    assert isinstance(model.gpu_type, Located)
    assert model.gpu_type.value == "NVIDIA-A100-SXM4-80GB MIG 3g.40gb"
    assert find_gpu(model.gpu_type.value).name == "A100-80GB MIG 3g.40gb"
    # GKE: the pod asks for nvidia.com/gpu and selects the partition size
    selector = ("      nodeSelector:\n        cloud.google.com/gke-accelerator: "
                "nvidia-h100-80gb\n        cloud.google.com/gke-gpu-partition-size: 1g.10gb\n")
    (model,) = extract_path(deployment(tmp_path, resource="nvidia.com/gpu", selector=selector))
    assert isinstance(model.gpu_type, Located)
    assert find_gpu(model.gpu_type.value).name == "H100-80GB MIG 1g.10gb"


def _lint(path: Path, config: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--format", "json",
                                       "--model-map", f"org/m={CONFIGS / config}"])
    assert result.exit_code in (0, 1), result.output
    return [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]


def test_tensor_parallel_across_mig_devices_is_an_error(tmp_path: Path) -> None:
    found = _lint(deployment(tmp_path, count=2, flags=', "--tensor-parallel-size", "2"'),
                  "meta-llama--Meta-Llama-3.1-8B.json")
    (kv206,) = [f for f in found if f["code"] == "KV206"]
    assert kv206["severity"] == "error" and kv206["line"] == 13
    assert "a CUDA process enumerates only one MIG device" in str(kv206["message"])
    # one model on one slice that holds it: nothing to say about the GPUs
    found = _lint(deployment(tmp_path), "meta-llama--Meta-Llama-3.1-8B.json")
    assert not {"KV206", "KV503"} & {f["code"] for f in found}


def test_weights_larger_than_a_slice_are_not_told_to_add_slices(tmp_path: Path) -> None:
    found = _lint(deployment(tmp_path), "meta-llama--Meta-Llama-3.1-70B.json")
    (kv503,) = [f for f in found if f["code"] == "KV503"]
    assert "serve on a larger MIG profile or on whole GPUs" in str(kv503["message"])
    assert kv503.get("suggestion") is None


def test_a_hostile_mig_resource_name_is_no_traceback(tmp_path: Path) -> None:
    # a 5,000-digit profile would overflow int() of a string: no MIG device and no crash;
    # an unknown device resource is not taken for "no GPU" either
    key = "nvidia.com/mig-1g." + "9" * 5000 + "gb"
    path = deployment(tmp_path, resource=f"? {key}\n              :")
    found = _lint(path, "meta-llama--Meta-Llama-3.1-8B.json")
    assert found == []
