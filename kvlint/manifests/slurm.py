"""SLURM batch directives of a script (``#SBATCH`` lines before its first command,
https://slurm.schedmd.com/sbatch.html): the GPUs a job asks for on each node.

``--gres=gpu[:TYPE]:N`` and ``--gpus-per-node=[TYPE:]N`` are per node; ``--gpus=[TYPE:]N``
(``-G``) is for the whole job, per node when the job has one (``--nodes``/``-N`` 1 or not
given); ``--gpus-per-task=[TYPE:]N`` is per task, times the tasks of a node
(``--ntasks-per-node``, or ``--ntasks``/``-n`` on one node, else one). What sbatch reads
stops at the first line that is not a comment or blank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kvlint.manifests.shell_env import VISIBLE_GPUS

__all__ = ["SlurmGpus", "slurm_gpus", "slurm_variables"]

_DIRECTIVE = re.compile(r"^#SBATCH\s+(.*)$")
_GPU_SPEC = re.compile(r"^(?:([A-Za-z][\w.-]{0,40}|\d{1,2}g\.\d{1,4}gb):)?(\d{1,4})$")
"""``[TYPE:]N``; TYPE a name, or a bare MIG profile: sites that schedule MIG instances as
GPU gres name their type after the profile (``3g.20gb``, or ``a100_3g.20gb`` after the GPU),
which kvlint.model.hardware.mig_device reads as a MIG device (KV206 for tp x pp > 1)."""


@dataclass(frozen=True)
class SlurmGpus:
    """GPUs per node (``None``: not read, or not asked for) and their type as the directive
    (or a partition named for it) names it."""

    count: int | None
    kind: str | None
    line: int
    source: str
    nodes: int = 1
    """The job's nodes where ``--nodes`` fixes them (a range ``2-4``: 1, not known)."""


def _options(text: str) -> list[tuple[str, str, int]]:
    """``(option, value, line)`` of the ``#SBATCH`` directives at the top of ``text``."""
    out: list[tuple[str, str, int]] = []
    for number, raw in enumerate(text.splitlines()[:2000], 1):
        line = raw.strip()
        if not line or (line.startswith("#") and not line.startswith("#SBATCH")):
            continue
        found = _DIRECTIVE.match(line)
        if found is None:
            break  # the first command: sbatch reads no directive after it
        words = found.group(1).split("#", 1)[0].split()
        i = 0
        while i < len(words):
            option, eq, value = words[i].partition("=")
            if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value, i = words[i + 1], i + 1
            out.append((option, value, number))
            i += 1
    return out


def slurm_gpus(text: str) -> SlurmGpus | None:
    """The GPUs per node a batch script's directives ask for, or ``None`` when it asks for
    none (or for several nodes with a job-wide ``--gpus``, which does not say per node) and
    its partition names no GPU (then the count is ``None`` and the type the partition's)."""
    nodes = fixed = 1
    found: SlurmGpus | None = None
    whole: SlurmGpus | None = None
    per_task: SlurmGpus | None = None
    per_node_tasks: int | None = None
    tasks_all: int | None = None
    for option, value, line in _options(text):
        if option in ("--nodes", "-N") and value.split("-")[0].isdigit():
            nodes = int(value.split("-")[0])
            fixed = int(value) if value.isdigit() else 1
        elif option in ("--ntasks", "-n") and value.isdigit():
            tasks_all = int(value)
        elif option == "--ntasks-per-node" and value.isdigit():
            per_node_tasks = int(value)
        elif option == "--gpus-per-task":
            spec = _GPU_SPEC.match(value)
            if spec is not None:
                per_task = SlurmGpus(int(spec.group(2)), spec.group(1), line,
                                     f"#SBATCH --gpus-per-task={value}")
        elif option == "--gres":
            for item in value.split(","):
                name, _, rest = item.partition(":")
                spec = _GPU_SPEC.match(rest) if name == "gpu" else None
                if spec is not None:
                    found = SlurmGpus(int(spec.group(2)), spec.group(1), line,
                                      f"#SBATCH --gres={value}")
                elif name == "gpu" and not rest:
                    found = SlurmGpus(1, None, line, f"#SBATCH --gres={value}")
        elif option == "--gpus-per-node":
            spec = _GPU_SPEC.match(value)
            if spec is not None:
                found = SlurmGpus(int(spec.group(2)), spec.group(1), line,
                                  f"#SBATCH --gpus-per-node={value}")
        elif option in ("--gpus", "-G"):
            spec = _GPU_SPEC.match(value)
            if spec is not None:
                whole = SlurmGpus(int(spec.group(2)), spec.group(1), line,
                                  f"#SBATCH {option}={value}")
    if found is None and per_task is not None:
        # --gpus-per-task times the tasks of one node: --ntasks-per-node, else --ntasks of a
        # one-node job, else one task
        tasks = per_node_tasks or (tasks_all if nodes == 1 else None) or \
            (1 if nodes == 1 else None)
        if tasks is not None and per_task.count is not None:
            found = replace(per_task, count=per_task.count * tasks,
                            source=per_task.source + (f" x {tasks} tasks" if tasks > 1 else ""))
    if found is None and whole is not None and nodes == 1:
        found = whole
    if found is None or found.kind is None:
        named = _named_resource(text)
        if named is not None and found is not None:
            found = replace(found, kind=named[0], source=f"{found.source}; {named[1]}")
        elif named is not None:  # no GPU count asked for: the partition still names the type
            found = SlurmGpus(None, named[0], named[2], named[1])
    return replace(found, nodes=fixed) if found is not None else None


def _named_resource(text: str) -> tuple[str, str, int] | None:
    """``(GPU, why)`` when the job's partition or node constraint is named for one GPU model
    (``--partition=h200_short``, ``-C a100``): clusters name them after the GPUs they hold.
    The last directive of each option wins, as sbatch reads them."""
    from kvlint.manifests.comment_gpus import gpu_in_name

    chosen: dict[str, tuple[str, str, int]] = {}
    for option, value, line in _options(text):
        key = {"-p": "--partition", "-C": "--constraint"}.get(option, option)
        if key in ("--partition", "--constraint") and value:
            chosen[key] = (value, option, line)
    for key in ("--constraint", "--partition"):
        if key in chosen:
            value, option, line = chosen[key]
            gpu = gpu_in_name(value)
            if gpu is not None:
                return gpu, f"#SBATCH {option} {value} (named for its GPU)", line
    return None


def slurm_variables(text: str, found: SlurmGpus | None) -> dict[str, str]:
    """The job's own variables its directives fix, as sbatch sets them in the script's
    environment (https://slurm.schedmd.com/sbatch.html, "OUTPUT ENVIRONMENT VARIABLES"):
    ``SLURM_GPUS_ON_NODE`` (the GPUs of this node, ``found`` by :func:`slurm_gpus`, when the
    directives give a per-node count), ``SLURM_GPUS_PER_NODE`` (``--gpus-per-node``),
    ``SLURM_JOB_NUM_NODES`` and ``SLURM_NNODES`` (a fixed ``--nodes``); and the node's GPU
    count for a count of the GPUs the job sees (:data:`~.shell_env.VISIBLE_GPUS`)."""
    out: dict[str, str] = {}
    if found is not None and found.count is not None:
        out["SLURM_GPUS_ON_NODE"] = str(found.count)
        # what nvidia-smi lists on the node: Slurm confines the job to its GPUs (cgroup
        # ConstrainDevices, the usual GPU cluster setting) and sets CUDA_VISIBLE_DEVICES
        out[VISIBLE_GPUS] = str(found.count)
    for option, value, _ in _options(text):
        if option == "--gpus-per-node":
            spec = _GPU_SPEC.match(value)
            if spec is not None:
                out["SLURM_GPUS_PER_NODE"] = value
        elif option in ("--nodes", "-N") and value.isdigit():
            out["SLURM_JOB_NUM_NODES"] = out["SLURM_NNODES"] = value
    return out
