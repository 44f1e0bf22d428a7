"""SLURM batch directives (kvlint/manifests/slurm.py) and a batch script's GPUs."""

from __future__ import annotations

import pytest

from kvlint.manifests.base import Located
from kvlint.manifests.shell_scripts import script_models
from kvlint.manifests.slurm import slurm_gpus


@pytest.mark.parametrize(("header", "expected"), [
    ("#SBATCH --gres=gpu:A6000:2", (2, "A6000")),
    ("#SBATCH --gres=gpu:4", (4, None)),
    ("#SBATCH --gres gpu:h100:8 # eight", (8, "h100")),
    ("#SBATCH --gpus-per-node=a100:4", (4, "a100")),
    ("#SBATCH -G 2", (2, None)),
    ("#SBATCH --nodes=2\n#SBATCH --gpus=8", None),  # job-wide over two nodes: not per node
    ("#SBATCH --mem=64G", None),
    ("echo hi\n#SBATCH --gres=gpu:2", None),  # after the first command: not read
])
def test_directives(header: str, expected: tuple[int, str | None] | None) -> None:
    found = slurm_gpus("#!/bin/bash\n# job\n" + header + "\n")
    assert (None if found is None else (found.count, found.kind)) == expected


def test_a_batch_script_serves_on_the_gpus_it_asks_for() -> None:
    text = ("#!/bin/bash\n#SBATCH --job-name=x\n#SBATCH --gres=gpu:A6000:2\n\n"
            "python3 -m vllm.entrypoints.openai.api_server --model org/m "
            "--tensor-parallel-size 2\n"
            "docker run --gpus 1 vllm/vllm-openai:v0.8.5 --model org/n\n")
    bare, container = script_models(text, "job.sh")
    assert isinstance(bare.gpus, Located) and (bare.gpus.value, bare.gpus.line) == (2, 3)
    assert isinstance(bare.gpu_type, Located) and bare.gpu_type.value == "A6000"
    assert isinstance(container.gpus, Located) and container.gpus.value == 1  # its own count
