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

__all__ = ["NGC_VLLM", "TRITON_TRTLLM", "Release"]


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
