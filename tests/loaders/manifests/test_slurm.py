"""SLURM batch directives (kvlint/manifests/slurm.py) and a batch script's GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlint.manifests.base import Located
from kvlint.manifests.shell_env import VISIBLE_GPUS
from kvlint.manifests.shell_scripts import script_models
from kvlint.manifests.slurm import slurm_gpus, slurm_variables


@pytest.mark.parametrize(("header", "expected"), [
    ("#SBATCH --gres=gpu:A6000:2", (2, "A6000")),
    ("#SBATCH --gres=gpu:4", (4, None)),
    ("#SBATCH --gres gpu:h100:8 # eight", (8, "h100")),
    ("#SBATCH --gpus-per-node=a100:4", (4, "a100")),
    ("#SBATCH -G 2", (2, None)),
    ("#SBATCH --nodes=2\n#SBATCH --gpus=8", None),  # job-wide over two nodes: not per node
    ("#SBATCH --mem=64G", None),
    ("echo hi\n#SBATCH --gres=gpu:2", None),  # after the first command: not read
    # a partition or constraint named for one GPU model gives the type the gres lacks
    ("#SBATCH --partition=h200_short\n#SBATCH --gres=gpu:1", (1, "H200")),
    ("#SBATCH -p rtx4060\n#SBATCH --gres=gpu:2", (2, "RTX-4060")),
    ("#SBATCH -p gpu-a100\n#SBATCH -C h100\n#SBATCH --gres=gpu:1", (1, "H100-80GB")),
    ("#SBATCH -p a100,h100\n#SBATCH --gres=gpu:1", (1, None)),     # two models: none
    ("#SBATCH -p gpu\n#SBATCH --gres=gpu:1", (1, None)),
    ("#SBATCH -p a100x4\n#SBATCH --gres=gpu:1", (1, "A100")),      # count x model
    ("#SBATCH -p h200\n#SBATCH --gres=gpu:a100:1", (1, "a100")),   # the gres type wins
    ("#SBATCH -p h200\n#SBATCH --mem=64G", (None, "H200")),  # no count; the type still
    ("#SBATCH -p gpu\n#SBATCH --mem=64G", None),
    # a GeForce number beside the word GPU; a number alone names nothing
    ("#SBATCH --partition=GPU-4090\n#SBATCH --mem=32G", (None, "RTX-4090")),
    ("#SBATCH --partition=q-4090\n#SBATCH --mem=32G", None),
    ("#SBATCH --gpus-per-task=1\n#SBATCH --ntasks=1", (1, None)),
    ("#SBATCH --gpus-per-task=a100:2\n#SBATCH -n 2", (4, "a100")),
    ("#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1", (4, None)),
    ("#SBATCH -N 2\n#SBATCH --ntasks=8\n#SBATCH --gpus-per-task=1", None),  # per node?
    # MIG instances scheduled as gres types named for their profile
    ("#SBATCH --gres=gpu:3g.20gb:1", (1, "3g.20gb")),
    ("#SBATCH --gres=gpu:a100_3g.40gb:2", (2, "a100_3g.40gb")),
    ("#SBATCH --gres=gpu:3g:1", None),  # not a profile, not a name
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


def test_tp_over_slurm_mig_gres_is_kv206(tmp_path: Path) -> None:
    """Two MIG instances from a gres type named for the profile are MIG devices: tp 2 over
    them cannot start (KV206), whatever their count."""
    from click.testing import CliRunner

    from kvlint.cli import main
    from tests.helpers import CONFIGS

    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --gres=gpu:3g.40gb:2\n"
                   "vllm serve org/qwen --tensor-parallel-size 2 --max-model-len 8192\n",
                   encoding="utf-8")
    out = CliRunner().invoke(main, [
        "lint", str(job), "--model-map", f"org/qwen={CONFIGS / 'Qwen--Qwen2.5-7B.json'}",
        "--format", "json", "--no-plugins", "--isolated"])
    result = json.loads(out.stdout)["results"][0]
    assert result["serving"]["gpu"] == "3g.40gb"  # as the job names it: a MIG device
    assert [f["code"] for f in result["findings"] if f["severity"] == "error"] == ["KV206"]


def test_the_jobs_own_variables_are_set_from_its_directives() -> None:
    """sbatch sets ``SLURM_GPUS_ON_NODE`` (and ``SLURM_GPUS_PER_NODE``, ``SLURM_NNODES``)
    in the job's environment: a command built from them has the values the directives fix,
    a typo included (``1$SLURM_GPUS_ON_NODE`` is 11 on a one-GPU job)."""
    head = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=4\n"
    assert slurm_variables(head, slurm_gpus(head)) == {
        "SLURM_GPUS_ON_NODE": "4", "SLURM_GPUS_PER_NODE": "4", "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NNODES": "1", VISIBLE_GPUS: "4"}
    (m,) = script_models(head + "vllm serve org/m --tensor-parallel-size $SLURM_GPUS_ON_NODE\n",
                         "job.sh")
    assert m.tp is not None and getattr(m.tp, "value", None) == 4
    (typo,) = script_models(head.replace("=4", "=1") +
                            "vllm serve org/m --tensor-parallel-size 1$SLURM_GPUS_ON_NODE\n",
                            "job.sh")
    assert getattr(typo.tp, "value", None) == 11 and getattr(typo.gpus, "value", None) == 1
    # without directives the variable is the run's: unresolved
    (bare,) = script_models("#!/bin/bash\nvllm serve org/m -tp $SLURM_GPUS_ON_NODE\n", "a.sh")
    assert getattr(bare.tp, "value", None) is None


@pytest.mark.parametrize(("ray", "gpus"), [(True, 8), (False, 4)])
def test_a_server_on_a_ray_cluster_over_the_jobs_nodes_takes_every_nodes_gpus(
        ray: bool, gpus: int) -> None:
    """Two nodes of four: a job that starts Ray on its nodes through srun and runs vLLM on
    that cluster serves one replica on 8 GPUs; without Ray the server runs on one node."""
    start = ("srun --ntasks=2 --ntasks-per-node=1 bash -c '\n  ray start --head --port=6379\n"
             "  sleep infinity\n' &\n") if ray else ""
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:a100:4\n" + start +
            "vllm serve Qwen/Qwen3-8B --tensor-parallel-size $((SLURM_NNODES * 4)) "
            "--distributed-executor-backend ray\n")
    (m,) = script_models(text, "job.sbatch")
    assert isinstance(m.gpus, Located) and m.gpus.value == gpus
    assert isinstance(m.tp, Located) and m.tp.value == 8
    assert ("2 nodes" in m.gpus.source) is ray
