"""Container releases whose tag is not the engine's version, mapped to the engine version they
ship -- only where a vendor's release notes say so.

NVIDIA's NGC containers are tagged by the container release (``YY.MM``: ``nvcr.io/nvidia/vllm:
25.10-py3`` is NOT vLLM 25.10). :mod:`kvlint.manifests.images` reads the engine version
from these tables and from nothing else: a release missing here stays unknown (``None``). Every
row names its source; add a row only with a source that states the version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["NGC_VLLM", "RUNPOD_SGLANG", "RUNPOD_VLLM", "TRITON_TRTLLM", "TRITON_VLLM", "Release",
           "WorkerRange"]


@dataclass(frozen=True, slots=True)
class Release:
    """The engine version one container release ships, and where that is written."""

    version: str
    source: str


_VLLM_NOTES = "https://docs.nvidia.com/deeplearning/frameworks/vllm-release-notes/rel-{}.html"

#: NGC vLLM container release (``nvcr.io/nvidia/vllm:YY.MM-py3``) -> the vLLM it ships, from the
#: "Contents of the vLLM container" section of NVIDIA's vLLM release notes. Releases whose notes
#: were not found (25.09, 25.11, 25.12, 26.02, 26.04, 26.06-26.09) are left out: unknown.
NGC_VLLM: Mapping[str, Release] = MappingProxyType({
    "25.10": Release("0.10.2", _VLLM_NOTES.format("25-10")),
    "26.01": Release("0.11.1", _VLLM_NOTES.format("26-01")),
    "26.03": Release("0.17.1", _VLLM_NOTES.format("26-03")),
    "26.05": Release("0.20.1", _VLLM_NOTES.format("26-05")),
    "26.10": Release("0.31.0", _VLLM_NOTES.format("26-10")),
})

_TRITON_MATRIX = ("https://docs.nvidia.com/deeplearning/triton-inference-server/user-guide/docs/"
                  "introduction/compatibility.html (Release Compatibility Matrix, "
                  "trtllm-python-py3)")
_TRITON_MATRIX_2540 = ("https://docs.nvidia.com/deeplearning/triton-inference-server/archives/"
                       "triton-inference-server-2540/user-guide/docs/introduction/"
                       "compatibility.html (Release Compatibility Matrix, trtllm-python-py3)")

#: Triton release of ``nvcr.io/nvidia/tritonserver:YY.MM-trtllm-python-py3`` -> the TensorRT-LLM
#: version of its TensorRT-LLM backend, from Triton's Release Compatibility Matrix. Left out:
#: releases before 24.05 (the matrix found does not list them), 25.02-25.05 (not in the copies
#: found), and 25.11, whose matrix row reads "1.0.3.2510", not a TensorRT-LLM release.
TRITON_TRTLLM: Mapping[str, Release] = MappingProxyType({
    "24.05": Release("0.9.0", _TRITON_MATRIX_2540),
    "24.06": Release("0.10.0", _TRITON_MATRIX_2540),
    "24.07": Release("0.11.0", _TRITON_MATRIX_2540),
    "24.08": Release("0.12.0", _TRITON_MATRIX_2540),
    "24.09": Release("0.13.0", _TRITON_MATRIX_2540),
    "24.10": Release("0.14.0", _TRITON_MATRIX_2540),
    "24.11": Release("0.15.0", _TRITON_MATRIX_2540),
    "24.12": Release("0.16.0", _TRITON_MATRIX_2540),
    "25.01": Release("0.17.0", _TRITON_MATRIX_2540),
    "25.06": Release("0.20.0", _TRITON_MATRIX),
    "25.07": Release("0.20.0", _TRITON_MATRIX),
    "25.08": Release("0.21.0", _TRITON_MATRIX),
    "25.09": Release("1.0.0", _TRITON_MATRIX),
    "25.10": Release("1.0.0", _TRITON_MATRIX),
    "25.12": Release("1.1.0", _TRITON_MATRIX),
})


def _build_py(tag: str) -> str:
    return (f"triton-inference-server/server build.py@{tag} (the vLLM the vllm-python-py3 "
            "image installs)")


_TRITON_VLLM_MATRIX = ("triton-inference-server/server docs/introduction/compatibility.md@r26.08 "
                       "(6fa22ae028e6), vllm-python-py3 column")

#: Triton release of ``nvcr.io/nvidia/tritonserver:YY.MM-vllm-python-py3`` -> the vLLM of its
#: vLLM backend: ``build.py``'s pin at the release tag up to 26.02 (from 25.02 NVIDIA's own build
#: of that release, ``0.7.0+<sha>.nv25.2``), then the compatibility matrix, whose rows from 26.03
#: match the ``nvcr.io/nvidia/vllm`` image the container is built on. Left out: 24.08 (the tag
#: pins 0.5.3.post1, the matrix says 0.5.0.post1), 25.06-25.07 (a 0.9.0rc1 build, which no
#: release names) and 26.09 onward (not found).
TRITON_VLLM: Mapping[str, Release] = MappingProxyType({
    "23.10": Release("0.2.0", _build_py("v2.39.0")),
    "23.11": Release("0.2.1.post1", _build_py("v2.40.0")),
    "23.12": Release("0.2.3", _build_py("v2.41.0")),
    "24.01": Release("0.2.3", _build_py("v2.42.0")),
    "24.02": Release("0.3.0", _build_py("v2.43.0")),
    "24.03": Release("0.3.0", _build_py("v2.44.0")),
    "24.04": Release("0.4.0.post1", _build_py("v2.45.0")),
    "24.05": Release("0.4.0.post1", _build_py("v2.46.0")),
    "24.06": Release("0.4.3", _build_py("v2.47.0")),
    "24.07": Release("0.5.0.post1", _build_py("v2.48.0")),
    "24.09": Release("0.5.3.post1", _build_py("v2.50.0")),
    "24.10": Release("0.5.5", _build_py("v2.51.0")),
    "24.11": Release("0.5.5", _build_py("v2.52.0")),
    "24.12": Release("0.5.5", _build_py("v2.53.0")),
    "25.01": Release("0.6.3.post1", _build_py("v2.54.0")),
    "25.02": Release("0.7.0", _build_py("v2.55.0")),
    "25.03": Release("0.7.3", _build_py("v2.56.0")),
    "25.04": Release("0.8.1", _build_py("v2.57.0")),
    "25.05": Release("0.8.4", _build_py("v2.58.0")),
    "25.08": Release("0.9.2", _build_py("v2.60.0")),
    "25.09": Release("0.10.1.1", _build_py("v2.61.0")),
    "25.10": Release("0.10.2", _build_py("v2.62.0")),
    "25.11": Release("0.11.0", _build_py("v2.63.0")),
    "25.12": Release("0.11.1", _build_py("v2.64.0")),
    "26.01": Release("0.13.0", _build_py("v2.65.0")),
    "26.02": Release("0.15.1", _build_py("v2.66.0")),
    "26.03": Release("0.17.1", _TRITON_VLLM_MATRIX),
    "26.04": Release("0.19.0", _TRITON_VLLM_MATRIX),
    "26.05": Release("0.19.0", _TRITON_VLLM_MATRIX),
    "26.06": Release("0.22.1", _TRITON_VLLM_MATRIX),
    "26.07": Release("0.24.0", _TRITON_VLLM_MATRIX),
    "26.08": Release("0.27.1", _TRITON_VLLM_MATRIX),
})

@dataclass(frozen=True, slots=True)
class WorkerRange:
    """Worker releases ``first`` to ``last`` (inclusive) ship engine ``version``; ``None``
    where the releases disagree with themselves (the reason is ``source``)."""

    first: str
    last: str
    version: str | None
    source: str


_WORKER_VLLM = ("runpod-workers/worker-vllm Dockerfile at the git tag (pip install vllm==X, "
                "from v2.24.0 FROM vllm/vllm-openai:${VLLM_VERSION}); HEAD 7a925039a53a10eab38d"
                "1764eb717a2ea5bdee07 = v2.25.2")
_WORKER_SGLANG = ("runpod-workers/worker-sglang Dockerfile FROM at the git tag; HEAD 1b924c9de8b9"
                  "0e5cf47c974c556f6dd403939243 = 2.0.1")

#: RunPod's vLLM worker (``runpod/worker-v1-vllm:<release>``, also ``v2.6.0stable-cuda12.1.0``)
#: -> the vLLM it installs. v2.5.x and v2.7.0 are left unknown: the release's
#: worker-config.json (0.8.5, 0.9.1) and its Dockerfile (0.8.4, 0.9.0.1) disagree.
RUNPOD_VLLM: tuple[WorkerRange, ...] = (
    WorkerRange("1.1", "1.2.0", "0.5.3.post1", _WORKER_VLLM),
    WorkerRange("1.3.0", "1.3.0", "0.5.4", _WORKER_VLLM),
    WorkerRange("1.3.1", "1.4.0", "0.5.5", _WORKER_VLLM),
    WorkerRange("1.5.0", "1.5.0", "0.6.2", _WORKER_VLLM),
    WorkerRange("1.6.0", "1.6.0", "0.6.3", _WORKER_VLLM),
    WorkerRange("1.7.0", "1.7.0", "0.6.4", _WORKER_VLLM),
    WorkerRange("1.8.0", "1.8.0", "0.6.6.post1", _WORKER_VLLM),
    WorkerRange("1.9.0", "1.9.0", "0.7.0", _WORKER_VLLM),
    WorkerRange("2.1.0", "2.1.0", "0.7.3", _WORKER_VLLM),
    WorkerRange("2.2.0", "2.2.2", "0.8.2", _WORKER_VLLM),
    WorkerRange("2.3.0", "2.3.2", "0.8.3", _WORKER_VLLM),
    WorkerRange("2.4.0", "2.4.99", "0.8.4", _WORKER_VLLM),
    WorkerRange("2.5.0", "2.5.99", None, "worker-config.json says vLLM 0.8.5, the Dockerfile "
                "at the tag 0.8.4"),
    WorkerRange("2.6.0", "2.6.99", "0.9.0.1", _WORKER_VLLM),
    WorkerRange("2.7.0", "2.7.99", None, "worker-config.json says vLLM 0.9.1, the Dockerfile "
                "at the tag 0.9.0.1"),
    WorkerRange("2.8.0", "2.9.4", "0.10.0", _WORKER_VLLM),
    WorkerRange("2.9.5", "2.11.99", "0.11.0", _WORKER_VLLM),
    WorkerRange("2.12.0", "2.13.0", "0.15.0", _WORKER_VLLM),
    WorkerRange("2.13.1", "2.13.99", "0.15.1", _WORKER_VLLM),
    WorkerRange("2.14.0", "2.15.99", "0.16.0", _WORKER_VLLM),
    WorkerRange("2.16.0", "2.16.99", "0.17.1", _WORKER_VLLM),
    WorkerRange("2.17.0", "2.17.99", "0.18.1", _WORKER_VLLM),
    WorkerRange("2.18.0", "2.18.99", "0.19.1", _WORKER_VLLM),
    WorkerRange("2.19.0", "2.20.99", "0.20.2", _WORKER_VLLM),
    WorkerRange("2.21.0", "2.21.99", "0.21.0", _WORKER_VLLM),
    WorkerRange("2.22.0", "2.22.3", "0.22.1", _WORKER_VLLM),
    WorkerRange("2.22.4", "2.22.99", "0.20.2", _WORKER_VLLM + " (v2.22.4 reverted to 0.20.2)"),
    WorkerRange("2.23.0", "2.23.99", "0.23.0", _WORKER_VLLM),
    WorkerRange("2.24.0", "2.24.99", "0.26.0", _WORKER_VLLM),
    WorkerRange("2.25.0", "2.25.0", "0.27.0", _WORKER_VLLM),
    WorkerRange("2.25.1", "2.25.2", "0.27.1", _WORKER_VLLM),
)

#: RunPod's SGLang worker (``runpod/worker-sglang:<release>``) -> the SGLang of its base image.
#: The first releases were tagged after the SGLang they installed unpinned (``v0.4.1stable``,
#: worker-config.json@ec910bd91b9777eef9b310999eddf1bd179258cd): read as that SGLang.
RUNPOD_SGLANG: tuple[WorkerRange, ...] = (
    WorkerRange("1.0.0", "1.2.99", "0.4.6.post4", _WORKER_SGLANG),
    WorkerRange("1.3.0", "2.0.1", "0.5.2", _WORKER_SGLANG),
)
