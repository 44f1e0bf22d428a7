"""The GPU a manifest's comments name (kvlint/manifests/comment_gpus.py), used only where
nothing else names one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.comment_gpus import comment_gpu
from tests.helpers import CONFIGS


@pytest.mark.parametrize(("text", "name", "line"), [
    ("# Tested on 2 x NVIDIA L4 24 GB GPUs\nservices: {}\n", "L4", 1),
    ("x: 1\n# vLLM on ThunderCompute A100 80GB\n", "A100-80GB", 2),
    ("#!/bin/bash\n# 用途 \uff1a在 RTX PRO 6000 Blackwell(SM120) 单卡\n", "RTX-PRO-6000", 2),
    ("image: x  # runs on one H100\n", "H100-80GB", 1),
    ("# RTX 5070 Ti (SM120) needs --attention-backend flashinfer\n", "RTX-5070-Ti", 1),
    ("# NVIDIA GB10 Grace Blackwell (ARM64, 128GB)\n", "GB10", 1),
    ("# Tesla V100 SXM2 16GB (Volta)\n", "V100-16GB", 1),
    ("# one GeForce RTX 3080 Ti\n", "RTX-3080-Ti", 1),
    ("# one GeForce RTX 3080\n", "GeForce RTX 3080", 1),  # 10 or 12 GB: named, not sized
    ("REM needs a Quadro RTX 5000\r\n", "Quadro RTX 5000", 1),
    ("# A100 40GB for tests\n# A100 80GB in production\n", "A100", 1),  # the model only
    ("# on L40S\n# the L40S node pool\n", "L40S", 1),
    ("[Unit]\nDescription=vLLM server (Qwen2.5-32B-AWQ, dual RTX 3090)\n", "RTX-3090", 2),
])
def test_one_gpu_model_named_in_comments(text: str, name: str, line: int) -> None:
    found = comment_gpu(text)
    assert found is not None and (found.value, found.line, found.source) == \
        (name, line, "a comment")


@pytest.mark.parametrize("text", [
    "# works on A100 and on H100\n",  # two models: none
    "# tested on an RTX 4090\n# the RTX 3090 is too small\n",
    "gpu: H100\nimage: vllm/vllm-openai\n",  # not a comment
    "#!/usr/bin/env H100\n#SBATCH --gres=gpu:a100:2\n",  # a shebang, a directive
    "url: https://x.org/p#H100\n",  # a fragment, not a comment
    "# the L2 cache and the B12 bus\n",  # not GPU models
    "",
])
def test_no_gpu_or_several_gpus_name_none(text: str) -> None:
    assert comment_gpu(text) is None


def _lint(tmp_path: Path, text: str, *extra: str) -> dict[str, object]:
    manifest = tmp_path / "compose.yaml"
    manifest.write_text(text, encoding="utf-8")
    out = CliRunner().invoke(main, [
        "lint", str(manifest), "--no-plugins", "--isolated", "--offline", "--no-cache",
        "--format", "json", "--model-map",
        f"Qwen/Qwen2.5-7B={CONFIGS / 'Qwen--Qwen2.5-7B.json'}", *extra])
    serving = json.loads(out.stdout)["results"][0]["serving"]
    assert isinstance(serving, dict)
    return serving


COMPOSE = """\
# Tested on one NVIDIA L4 24 GB
services:
  vllm:
    image: vllm/vllm-openai:v0.9.2
    command: --model Qwen/Qwen2.5-7B --max-model-len 8192
{more}"""


def test_a_comment_gpu_sizes_a_deployment_that_names_none(tmp_path: Path) -> None:
    assert _lint(tmp_path, COMPOSE.format(more=""))["gpu"] == "L4"


def test_the_manifest_and_the_command_line_win_over_a_comment(tmp_path: Path) -> None:
    assert _lint(tmp_path, COMPOSE.format(more=""), "--gpu", "H100")["gpu"] == "H100"
    labelled = COMPOSE.format(more="    runtime: habana\n")
    assert _lint(tmp_path, labelled)["gpu"] != "L4"


def test_the_one_release_the_comments_name_dates_an_undated_engine() -> None:
    """A script that runs vLLM from a virtual environment and says its release only in a
    comment; two releases named, or a pinned image, leave it as it was."""
    from kvlint.lint.extraction import extract_text
    from kvlint.manifests.comment_versions import comment_version
    from kvlint.plugins import get_plugin_manager

    def served(text: str, name: str) -> list[Any]:
        pm = get_plugin_manager(load_entry_points=False)
        parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
        return list(extract_text(text, Path(name), pm, parsers))

    text = ("#!/bin/bash\n# Uses .venv (vLLM 0.19.0 + FA2), NOT .venv_11_2\n"
            "vllm serve org/model-70b --tensor-parallel-size 2\n")
    named = comment_version(text, "vllm")
    assert named is not None and (named.value, named.line) == ("0.19.0", 2)
    assert comment_version(text, "sglang") is None
    assert comment_version("# vLLM 0.10.1 and vLLM v0.11.0 both work\n", "vllm") is None
    pinned_in_comment = comment_version("# pip install vllm==0.8.5\n", "vllm")
    assert pinned_in_comment is not None and pinned_in_comment.value == "0.8.5"
    assert comment_version("# see github.com/org/vllm-0.8.5-patches\n", "vllm") is None
    (m,) = served(text, "serve.sh")
    assert m.engine_version is not None and m.engine_version.value == "0.19.0"
    assert m.engine_version.source == "a comment"
    pinned = "# tested with vLLM 0.19.0\ndocker run vllm/vllm-openai:v0.10.1.1 --model org/m\n"
    (m,) = served(pinned, "serve.sh")
    assert m.engine_version is not None and m.engine_version.value == "0.10.1.1"


@pytest.mark.parametrize(("text", "family"), [
    ("export HIP_VISIBLE_DEVICES=0,1,2,3\nvllm serve org/m -tp 4\n", "AMD GPU (ROCm)"),
    ("env:\n  - name: HABANA_VISIBLE_DEVICES\n    value: all\n", "Intel Gaudi (HPU)"),
    ("# export HIP_VISIBLE_DEVICES=0\nvllm serve org/m\n", None),          # a comment
    ("HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0 vllm serve org/m\n", None),  # portable
    ("echo $HIP_VISIBLE_DEVICES\n", None),                                 # not set
    # Ascend: CANN's device variable, or settings only torch_npu and vllm-ascend read
    ("export ASCEND_RT_VISIBLE_DEVICES=0,1\nvllm serve org/m\n", "Huawei Ascend (NPU)"),
    ("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True\n"
     "export VLLM_ASCEND_ENABLE_MLAPO=1\nexec vllm serve /m --tp 16\n", "Huawei Ascend (NPU)"),
    ("export VLLM_ASCEND_ENABLE_MLAPO=1\nexport HIP_VISIBLE_DEVICES=0\n", None),  # two
])
def test_a_runtimes_device_variable_names_the_family(text: str, family: str | None) -> None:
    from kvlint.manifests.accelerators import variable_family

    found = variable_family(text)
    assert (found.value if found else None) == family


def test_the_comment_beside_a_services_gpu_count(tmp_path: Path) -> None:
    """The file's comments name two GPUs, so no file-wide one; the comment on the service's
    own device line names the one it runs on."""
    text = ("# vLLM on GPU 0 (RTX 4090); OmniParser on GPU 1 (RTX 4080)\nservices:\n"
            "  vllm:\n    image: vllm/vllm-openai:v0.10.1.1\n"
            "    command: --model Qwen/Qwen2.5-7B\n    deploy:\n      resources:\n"
            "        reservations:\n          devices:\n            - driver: nvidia\n"
            "              device_ids: ['0']  # RTX 4090\n              capabilities: [gpu]\n")
    assert comment_gpu(text) is None
    assert _lint(tmp_path, text)["gpu"] == "RTX-4090"


def test_counts_plurals_and_possessives() -> None:
    """``Tested on 8xH100s``, ``the RTX 3090's memory``: the GPU without its count or ``s``."""
    from kvlint.manifests.comment_gpus import comment_gpu

    found = comment_gpu("# Tested on 8xH100s\n")
    assert found is not None and found.value == "H100-80GB"
    found = comment_gpu("x: 1  # would exceed the RTX 3090's 24 GB\n")
    assert found is not None and found.value == "RTX-3090"
    assert comment_gpu("# 8x faster\n") is None


def test_a_dgx_spark_is_its_gb10() -> None:
    from kvlint.manifests.comment_gpus import comment_gpu

    found = comment_gpu("# DGX Spark local model serving\n# NVIDIA DGX Spark Playbooks\n")
    assert found is not None and found.value == "GB10"
