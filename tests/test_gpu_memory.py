"""A GPU's memory as an input: ``--gpu-memory`` (check, lint, compare), ``gpu-memory`` in the
settings, and the GPU-memory node labels of Kubernetes manifests (kvlint.model.gpu_memory).

Every figure below is checked by hand: Qwen3-8B in bfloat16 under vLLM's defaults (0.34, the
newest known, for ``check``: gpu memory utilization 1.0 less the extensible KV cache's margin,
64-token blocks; 0.33 for the manifests, which pin v0.33.0: 0.92, 16-token blocks; the
overhead from the start-up profile, kvlint.model.memory) holds
147,456 KV bytes per token (36 layers x 8 KV heads x 128 x 2 x 2 B) and ~16,381,452,288 B of
weights (8,190,726,144 parameters x 2 B); its max_model_len is 40,960, so one full sequence is
147,456 x 40,960 = 6,039,797,760 B.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from kvlint.model.gpu_memory import (
    MAX_GPU_MEMORY_GIB,
    custom_gpu_name,
    gpu_memory_bytes,
    gpu_memory_error,
)
from kvlint.model.memory import EngineLimits, block_tokens, memory_terms, model_dims
from tests.helpers import CONFIGS

QWEN3_8B = str(CONFIGS / "Qwen--Qwen3-8B.json")
GIB = 2**30
MIB = 2**20
WEIGHTS = 8_190_726_144 * 2
PER_TOKEN = 147_456
SEQUENCE = PER_TOKEN * 40_960


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # no settings file of the repository


def run(*args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--no-plugins"])


def capacity_of(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    jsonschema.validate(data, schema)
    [only] = data["results"]
    cap: dict[str, Any] = only["capacity"]
    return cap


def budget(memory: int, name: str = "custom", version: str = "0.34.0") -> int:
    """The KV budget under vLLM's start-up profile (kvlint.model.memory): 0.34 (the newest
    known: gpu_memory_utilization 1.0 and the extensible KV cache's margin) or 0.33 (0.92)."""
    dims = model_dims(json.loads(Path(QWEN3_8B).read_text(encoding="utf-8")))
    assert dims is not None
    utilization = 1.0 if version == "0.34.0" else 0.92
    terms = memory_terms(gpu_memory_bytes=memory, gpu_name=name, utilization=utilization,
                         weight_bytes=WEIGHTS, dims=dims, tp=1, version=version,
                     limits=EngineLimits(40_960))
    if version == "0.34.0":
        assert terms.kv_margin_bytes == max(GIB, int(terms.activation_peak_bytes * 0.75))
    else:
        assert terms.kv_margin_bytes == 0
    assert terms.kv_memory_bytes == int(memory * utilization) - WEIGHTS - terms.overhead_bytes
    return terms.kv_memory_bytes


def tokens(memory: int, name: str = "custom", version: str = "0.34.0") -> int:
    return block_tokens(budget(memory, name, version), PER_TOKEN,
                        64 if version == "0.34.0" else 16)


# --------------------------------------------------------------------------- the arithmetic
def test_gib_to_bytes_is_exact() -> None:
    assert gpu_memory_bytes(80) == 85_899_345_920
    assert gpu_memory_bytes(81_559 / 1024) == 81_559 * MIB  # nvidia-smi MiB / 1024
    assert custom_gpu_name(80 * GIB) == "custom (80 GiB)"
    assert custom_gpu_name(81_559 * MIB) == "custom (79.6475 GiB)"


@pytest.mark.parametrize("value", [0, -1, 0.0, math.nan, math.inf, -math.inf,
                                   MAX_GPU_MEMORY_GIB + 1, 1e300, True, "80", None, 1e-12])
def test_bad_memory_refused(value: object) -> None:
    assert gpu_memory_error(value) is not None


def test_bounds_accepted() -> None:
    assert gpu_memory_error(MAX_GPU_MEMORY_GIB) is None
    assert gpu_memory_error(0.5) is None


# --------------------------------------------------------------------------- kvlint check
def test_check_memory_alone_sizes_a_custom_gpu_without_roofline() -> None:
    cap = capacity_of("check", QWEN3_8B, "--gpu-memory", "80", "--isolated")
    assert cap["gpu"] == "custom (80 GiB)"
    assert cap["gpu_memory_bytes"] == 85_899_345_920
    assert cap["gpu_memory_source"] == "--gpu-memory"
    assert cap["gpu_source"] is None
    assert cap["weight_bytes_per_gpu"] == WEIGHTS
    assert cap["kv_budget_bytes_per_gpu"] == budget(80 * GIB)
    assert cap["max_tokens"] == tokens(80 * GIB)
    assert cap["max_sequences"] == budget(80 * GIB) // SEQUENCE
    assert cap["context"] == 40_960
    assert cap["tpot_floor_ms"] is None  # no bandwidth: no roofline


def test_check_text_says_why_there_is_no_roofline() -> None:
    out = run("check", QWEN3_8B, "--gpu-memory", "80", "--isolated").stdout
    assert "custom (80 GiB) · 80.0 GiB (85,899,345,920 B from --gpu-memory)" in out
    assert f"{tokens(80 * GIB):,} tokens" in out
    assert "no TPOT floor: the GPU is given only by its memory" in out
    assert "HBM roofline" not in out


def test_check_memory_overrides_the_table_and_keeps_its_bandwidth() -> None:
    table = capacity_of("check", QWEN3_8B, "--gpu", "H100", "--isolated")
    assert table["gpu_memory_bytes"] == 81_082 * MIB  # the table's runtime figure
    assert table["gpu_memory_source"] == "gpus.toml"
    given = capacity_of("check", QWEN3_8B, "--gpu", "H100", "--gpu-memory",
                        str(81_559 / 1024), "--isolated")
    assert given["gpu"] == "H100-80GB"
    assert given["gpu_memory_bytes"] == 81_559 * MIB == 85_520_809_984
    assert given["kv_budget_bytes_per_gpu"] == budget(85_520_809_984, "H100-80GB")
    assert given["max_tokens"] == tokens(85_520_809_984, "H100-80GB")
    assert given["max_sequences"] == budget(85_520_809_984, "H100-80GB") // SEQUENCE
    assert given["tpot_floor_ms"] == table["tpot_floor_ms"]  # same bandwidth, same step
    assert given["tpot_floor_ms"] is not None


def test_settings_memory_and_the_option_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\ngpu-memory = 24\n",
                                             encoding="utf-8")
    cap = capacity_of("check", QWEN3_8B)
    assert cap["gpu"] == "custom (24 GiB)"
    assert cap["gpu_memory_source"] == "settings (gpu-memory)"
    assert cap["kv_budget_bytes_per_gpu"] == budget(24 * GIB)
    assert cap["max_tokens"] == tokens(24 * GIB)
    assert cap["max_sequences"] == budget(24 * GIB) // SEQUENCE == 1  # 6.37 GiB > 5.63 GiB
    cap = capacity_of("check", QWEN3_8B, "--gpu-memory", "48")
    assert cap["gpu_memory_source"] == "--gpu-memory"
    assert cap["gpu_memory_bytes"] == 48 * GIB


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "4097", "abc", "1e400"])
def test_bad_option_is_one_line_exit_2(value: str) -> None:
    result = run("check", QWEN3_8B, "--gpu-memory", value, "--isolated")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "--gpu-memory" in result.output


@pytest.mark.parametrize("value", ["0", "-8", "5000", "nan", "inf", '"80"', "true"])
def test_bad_setting_is_one_line_exit_2(tmp_path: Path, value: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.kvlint]\ngpu-memory = {value}\n",
                                             encoding="utf-8")
    result = run("check", QWEN3_8B)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert "pyproject.toml [tool.kvlint]" in line and "'gpu-memory'" in line


# --------------------------------------------------------------------------- kvlint lint
MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen
spec:
  template:
    spec:
{selector}      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["--model", "Qwen/Qwen3-8B"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""
MAP = ["--model-map", f"Qwen/Qwen3-8B={QWEN3_8B}"]


def write_manifest(tmp_path: Path, selector: dict[str, str]) -> str:
    lines = "".join(f"        {k}: \"{v}\"\n" for k, v in selector.items())
    text = MANIFEST.format(selector=f"      nodeSelector:\n{lines}" if selector else "")
    path = tmp_path / "deploy.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_lint_option_sizes_any_gpu(tmp_path: Path) -> None:
    cap = capacity_of("lint", write_manifest(tmp_path, {}), *MAP, "--gpu-memory", "80")
    assert cap["gpu"] == "custom (80 GiB)"
    assert cap["kv_budget_bytes_per_gpu"] == budget(80 * GIB, version="0.33.0")  # v0.33.0
    assert cap["max_tokens"] == tokens(80 * GIB, version="0.33.0")
    assert cap["gpu_memory_source"] == "--gpu-memory"


@pytest.mark.parametrize("label", ["nvidia.com/gpu.memory",
                                   "karpenter.k8s.aws/instance-gpu-memory"])
def test_manifest_node_label_states_the_memory(tmp_path: Path, label: str) -> None:
    manifest = write_manifest(tmp_path, {label: "46068"})
    cap = capacity_of("lint", manifest, *MAP, "--gpu-memory", "80")  # the manifest wins
    assert cap["gpu"] == "custom (44.9883 GiB)"
    assert cap["gpu_memory_bytes"] == 46_068 * MIB == 48_305_799_168
    assert cap["gpu_memory_source"] == f"nodeSelector {label} (line 9)"
    assert cap["kv_budget_bytes_per_gpu"] == budget(48_305_799_168, version="0.33.0")
    assert cap["max_tokens"] == tokens(48_305_799_168, version="0.33.0")


def test_manifest_memory_with_a_named_gpu_keeps_its_bandwidth(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, {"nvidia.com/gpu.product": "NVIDIA-L40",
                                         "nvidia.com/gpu.memory": "49140"})
    cap = capacity_of("lint", manifest, *MAP)
    assert cap["gpu"] == "L40"
    assert cap["gpu_memory_bytes"] == 49_140 * MIB  # ECC off: more than the table's 46068
    assert cap["gpu_memory_source"] == "nodeSelector nvidia.com/gpu.memory (line 10)"
    assert cap["tpot_floor_ms"] is not None


def test_manifest_gpu_drops_a_default_memory(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, {"nvidia.com/gpu.product": "NVIDIA-RTX-A6000"})
    cap = capacity_of("lint", manifest, *MAP, "--gpu-memory", "80")
    assert cap["gpu"] == "RTX-A6000"
    # the named GPU's as CUDA reports it (gpus.toml cuda_memory_bytes), not --gpu-memory's
    assert cap["gpu_memory_bytes"] == 48_676 * MIB
    assert cap["gpu_memory_source"] == "gpus.toml"


@pytest.mark.parametrize("value", ["lots", "0", "-5", "99999999"])
def test_unusable_label_is_ignored(tmp_path: Path, value: str) -> None:
    result = run("lint", write_manifest(tmp_path, {"nvidia.com/gpu.memory": value}), *MAP,
                 "--format", "json")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["results"][0]["capacity"] is None


# --------------------------------------------------------------------------- kvlint compare
def test_compare_names_the_custom_gpu() -> None:
    result = CliRunner().invoke(main, ["compare", QWEN3_8B, "--gpu-memory", "80",
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gpu"] == "custom (80 GiB)"
    [row] = data["rows"]
    assert row["weight_bytes_per_gpu"] == WEIGHTS
