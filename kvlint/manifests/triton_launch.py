"""Triton Inference Server running TensorRT-LLM engines or vLLM: ``tritonserver`` and the
TensorRT-LLM backend's ``launch_triton_server.py``, read as a served model wherever a command
runs.

The TensorRT-LLM backend of Triton serves the engines built beforehand into a model
repository (``--model-repository``); which model they are, and the tensor and pipeline
degrees they were built with, are in that repository, which kvlint does not read. So the
model is :class:`~kvlint.manifests.base.Unresolved` (reported as KV902, never passed over in
silence) with the repository as its text, and the one degree the command states is its MPI
world size:

- ``launch_triton_server.py --world_size N --model_repo R`` (the backend's own launcher:
  tensorrtllm_backend scripts/launch_triton_server.py@039e5b4a, ``--world_size`` default 1,
  "only support tensor parallelism now") runs ``mpirun -n 1 tritonserver
  --model-repository=R ... :`` once per rank: N ranks, read as tp N;
- ``mpirun [-n N | -np N] ... tritonserver ... [: -n M tritonserver ...]`` runs the sum of
  its app contexts' process counts, read as tp;
- ``tritonserver`` alone is one process: tp 1, unless ``TRTLLM_ORCHESTRATOR`` is a nonzero
  integer (the backend's ``TRITONBACKEND_Initialize`` tests ``std::atoi(...) != 0``; in that
  orchestrator mode it spawns one worker per ``gpu_device_ids`` entry of the model's config,
  else one: inflight_batcher_llm, the 2024 source in the code index), so the degree is the
  repository's, unresolved.

A bare ``tritonserver`` serves any backend (ONNX, PyTorch, Python, vLLM), so it is read as
TensorRT-LLM only with evidence: the caller knows the image is a TensorRT-LLM Triton image
(``nvcr.io/nvidia/tritonserver:YY.MM-trtllm-python-py3``), or a word of the command names
TensorRT-LLM (``trtllm``, ``tensorrt-llm``, ``tensorrtllm_backend``, ``inflight_batcher_llm``:
an image or container, a repository path). Likewise it is read as Triton's vLLM backend
(triton-inference-server/vllm_backend) in NVIDIA's vLLM Triton image
(``nvcr.io/nvidia/tritonserver:YY.MM-vllm-python-py3``) or when a word of the command names
vLLM (``vllm_backend``, a ``vllm_model`` repository): that backend builds the engine from the
``model.json`` of each model in the repository (the model, ``tensor_parallel_size``...), which
kvlint does not read either, so the model and tp are unresolved. Bounded: words past
:data:`MAX_WORDS` are not read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_programs import is_python, only_mentions
from kvlint.manifests.images import engine_from_image
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word

__all__ = ["TritonLaunch", "triton_args", "triton_launch", "trtllm_image", "vllm_image"]

MAX_WORDS = 512
"""Words of one command read (a real one has a few dozen)."""
_EVIDENCE = re.compile(r"trtllm|tensorrt[-_]?llm|inflight_batcher_llm", re.IGNORECASE)
_VLLM_EVIDENCE = re.compile(r"vllm", re.IGNORECASE)
_LAUNCHER = "launch_triton_server.py"
_COUNT_OPTIONS = ("-n", "-np", "--np", "-c")
"""mpirun's options of an app context's process count (Open MPI ``-n``/``-np``/``-c``)."""
_COUNT = re.compile(r"\d{1,4}")


@dataclass(frozen=True)
class TritonLaunch:
    """A Triton server of TensorRT-LLM engines found in one command."""

    program: int
    """Index of the word that runs it (``tritonserver``, or the launcher script)."""
    line: int | None
    repository: str
    """The model repository as written (``""`` when the command gives none)."""
    world: Located[int] | Unresolved | None
    """The MPI world size: the ranks of the engines (``None``: one process)."""
    how: str
    engine: str = "trtllm"
    """``trtllm``, or ``vllm`` for Triton's vLLM backend."""


def _flag(words: Sequence[Word], names: tuple[str, ...], start: int, env: Env | None
          ) -> Word | None:
    """The value word of the last ``NAME VALUE`` / ``NAME=VALUE`` of ``names`` from
    ``start`` (a value written after ``=`` keeps the option's line and column), expanded
    through ``env`` where it resolves (as written otherwise)."""
    found = None
    for i in range(start, len(words)):
        text = words[i].text
        for name in names:
            if text == name and i + 1 < len(words):
                found = words[i + 1]
            elif text.startswith(name + "="):
                found = Word(text[len(name) + 1:], words[i].line, column=words[i].column)
    if found is not None and env is not None and "$" in found.text and not found.literal:
        value = env.expand(found.text, k8s=False)
        if isinstance(value, str) and value:
            found = Word(value, found.line, column=found.column)
    return found


def _mpi_world(words: Sequence[Word], program: int) -> tuple[int, str] | None:
    """``(processes, how)`` of an ``mpirun``/``mpiexec`` before ``words[program]``: the sum
    of the process counts of the app contexts (``:``-separated) that run ``tritonserver``;
    ``None`` without one, or with a count kvlint cannot read."""
    runner = next((i for i in range(program) if os.path.basename(words[i].text)
                   in ("mpirun", "mpiexec", "orterun")), None)
    if runner is None:
        return None
    total, count = 0, 1
    contexts = 0
    i = runner + 1
    while i < len(words):
        text = words[i].text
        if text in _COUNT_OPTIONS and i + 1 < len(words):
            value = words[i + 1].text
            if not _COUNT.fullmatch(value):
                return None
            count = int(value)
            i += 2
            continue
        if text == ":":
            count = 1
        elif os.path.basename(text) == "tritonserver":
            total += count
            contexts += 1
        i += 1
    if not contexts:
        return None
    return total, f"{os.path.basename(words[runner].text)}: {total} tritonserver process(es)"


def _launcher_at(words: Sequence[Word]) -> int | None:
    for i, word in enumerate(words):
        if os.path.basename(word.text) == _LAUNCHER and (
                i == 0 or is_python(words[i - 1].text) or
                words[i - 1].text.startswith("-")):
            return i
    return None


def _orchestrator(value: object) -> bool:
    """Whether the backend reads ``value`` as orchestrator mode: C's ``atoi`` of it (its
    leading digits, after blanks and a sign) is not 0."""
    found = re.match(r"\s*[+-]?(\d{1,18})", value) if isinstance(value, str) else None
    return found is not None and int(found.group(1)) != 0


def trtllm_image(image: str | None) -> bool:
    """Whether ``image`` is a TensorRT-LLM Triton image: NVIDIA's (``-trtllm-python-py3``,
    :func:`~kvlint.manifests.images.engine_from_image`), or one whose name says TensorRT-LLM
    (a local build, ``triton-tensorrt-llm-server``; an Apptainer file
    ``tritonserver_24.05-trtllm-python-py3.sif``)."""
    if not image:
        return False
    return engine_from_image(image)[0] == "trtllm" or _EVIDENCE.search(image) is not None


def vllm_image(image: str | None) -> bool:
    """Whether ``image`` is NVIDIA's vLLM Triton image (``-vllm-python-py3``), or a Triton
    image whose name says vLLM (``triton-vllm:local``)."""
    if not image:
        return False
    low = image.lower()
    return "triton" in low and _VLLM_EVIDENCE.search(low) is not None


def triton_launch(words: Sequence[Word], *, image: str | None = None,
                  env: Env | None = None) -> TritonLaunch | None:
    """The Triton server of TensorRT-LLM engines ``words`` runs (module doc), or ``None``:
    no ``tritonserver``/launcher, or no evidence that its backend is TensorRT-LLM.
    ``image``: the image the command runs in, where the caller knows it; ``env``: the
    process's environment (its values expand the options read, and it says whether
    ``TRTLLM_ORCHESTRATOR`` is set)."""
    words = list(words[:MAX_WORDS])
    if only_mentions([w.text for w in words]):
        return None  # pkill tritonserver, echo ..., which tritonserver
    launcher = _launcher_at(words)
    if launcher is not None:
        size = _flag(words, ("--world_size",), launcher + 1, env)
        repo = _flag(words, ("--model_repo",), launcher + 1, env)
        world: Located[int] | Unresolved | None = None
        if size is not None:
            world = Located(int(size.text), size.line, size.column,
                            f"{_LAUNCHER} --world_size") if _COUNT.fullmatch(size.text) \
                else Unresolved(f"{_LAUNCHER} --world_size {size.text} is not a number kvlint "
                                "can read", size.line, size.column, size.text)
        return TritonLaunch(launcher, words[launcher].line, repo.text if repo else "", world,
                            f"{_LAUNCHER} (the TensorRT-LLM backend's launcher: one "
                            "tritonserver rank per --world_size)")
    program = next((i for i, w in enumerate(words)
                    if os.path.basename(w.text) == "tritonserver"), None)
    if program is None:
        return None
    repo = _flag(words, ("--model-repository", "--model-store", "--model_repository"),
                 program + 1, env)
    if not trtllm_image(image) and not any(_EVIDENCE.search(w.text) for w in words):
        if not vllm_image(image) and not any(_VLLM_EVIDENCE.search(w.text) for w in words):
            return None
        return TritonLaunch(program, words[program].line, repo.text if repo else "", None,
                            "tritonserver with the vLLM backend", engine="vllm")
    mpi = _mpi_world(words, program)
    line = words[program].line
    if mpi is not None:
        world = Located(mpi[0], line, None, mpi[1])
    elif env is not None and _orchestrator(env.get("TRTLLM_ORCHESTRATOR")):
        world = Unresolved("TRTLLM_ORCHESTRATOR is set: the TensorRT-LLM backend spawns the "
                           "engines' ranks itself, one per gpu_device_ids entry of the model "
                           "repository's config", line, None, "TRTLLM_ORCHESTRATOR")
    else:
        world = None
    return TritonLaunch(program, line, repo.text if repo else "", world,
                        "tritonserver with the TensorRT-LLM backend")


def triton_args(launch: TritonLaunch) -> EngineArgs:
    """The engine arguments a Triton launch settles: its engines' model, unresolved (the
    repository is not read), and its world size as tp (for the vLLM backend, the
    repository's ``model.json`` holds both)."""
    repo = launch.repository
    if launch.engine == "vllm":
        where = repo or "(not given)"
        return EngineArgs("vllm", model=Unresolved(
            f"Triton's vLLM backend serves the model named by model.json in its model "
            f"repository {where}; kvlint does not read Triton model repositories",
            launch.line, None, repo or "tritonserver"),
            tp=Unresolved(f"tensor_parallel_size is set in model.json of the repository "
                          f"{where}", launch.line, None, "model.json"),
            notes=(f"{launch.how}: the vLLM engine arguments (model, tensor_parallel_size, "
                   "gpu_memory_utilization, max_model_len) are in each model's model.json",))
    model = Unresolved(f"Triton serves the TensorRT-LLM engines built into its model "
                       f"repository {repo or '(not given)'}; kvlint does not read Triton model "
                       "repositories", launch.line, None, repo or "tritonserver")
    return EngineArgs("trtllm", model=model, tp=launch.world,
                      notes=(f"{launch.how}: the engines' tp x pp is fixed when they are "
                             "built; the world size is read as tp",))
