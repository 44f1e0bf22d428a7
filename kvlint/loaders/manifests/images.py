"""Which engine (and version) a container image or a pip requirement provides.

:func:`engine_from_image` classifies an image reference by its name and tag only; the caller
lets an engine command in the manifest win over it (images are often reused as base images).
Versions are returned as the engine's own version strings (``0.8.5``, ``0.4.6.post1``,
llama.cpp ``b5415``); ``"latest"`` for rolling tags (``latest``, ``nightly``, ``main``, commit
shas, llama.cpp ``server``); ``None`` when the tag names something else (a date, an llm-d,
Dynamo, LMCache or Triton release, a custom tag).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["ENTRYPOINT_IMAGES", "engine_from_image", "engine_from_pip", "entrypoint_engine",
           "split_image"]

_VERSION = re.compile(
    r"v?(\d+(?:\.\d+){1,3}(?:\.?(?:post|rc|dev|a|b)\d*)*)(?=$|[-_+])", re.IGNORECASE)
_ROLLING = frozenset({"latest", "nightly", "main", "master", "head", "dev", "edge", "stable"})
_SHA = re.compile(r"(sha-)?[0-9a-f]{7,40}", re.IGNORECASE)
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2}|\d{8})([-_.].*)?")
_SGLANG_IN_TAG = re.compile(r"(?:^|[-_])sglang[-_]?v?(\d+(?:\.\d+){1,3}(?:\.?post\d+)?)",
                            re.IGNORECASE)
_VLLM_IN_TAG = re.compile(r"(?:^|[-_])vllm[-_]?v?(\d+(?:\.\d+){1,3}(?:\.?post\d+)?)",
                          re.IGNORECASE)
_TGI_DLC = re.compile(r"text-generation-inference-(?:cu\d+|gpu|tpu|neuronx?)\.(\d+)-(\d+)"
                      r"(?:-(\d+))?(?:\.|$)")
_LLAMACPP_BUILD = re.compile(r"(?:^|[-_])b(\d{3,6})(?:$|[-_])")


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """``(name, tag, digest)`` of an image reference (``docker:`` prefix removed); ``name``
    keeps its registry and path."""
    ref = image.strip().strip("'\"")
    if ref.startswith("docker:"):
        ref = ref[len("docker:"):]
    digest = None
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    tag = None
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        ref, tag = ref[:colon], ref[colon + 1:]
    return ref, tag or None, digest


def _tag_version(tag: str | None, what: str) -> tuple[str | None, str]:
    """A version (or "latest") from a tag, with a note when it names none."""
    if tag is None:
        return "latest", "no tag: Docker pulls latest"
    low = tag.lower()
    if low in _ROLLING:
        return "latest", ""
    if low.startswith(("nightly", "latest-", "main-", "dev-")):
        return "latest", f"{tag} is a rolling build, not a release"
    if _DATE.fullmatch(tag):
        return None, f"{what} tag {tag} is a date, not a version"
    match = _VERSION.match(tag)
    if match:
        return match.group(1), ""
    if _SHA.fullmatch(tag):
        return "latest", f"{what} tag {tag} is a commit build, not a release"
    return None, f"{what} tag {tag} does not name a version"


@lru_cache(maxsize=4096)  # a pure function of the text; a tree repeats its images
def engine_from_image(image: str) -> tuple[str | None, str | None, str]:
    """``(engine key or None, version or "latest" or None, note)`` for a container image.

    Knows the official images (``vllm/vllm-openai``, ``vllm/vllm-tpu``, ``lmsysorg/sglang``,
    ``ghcr.io/huggingface/text-generation-inference`` and Google's TGI DLCs, whose version is
    in the image NAME, ``openmmlab/lmdeploy``, NVIDIA's TensorRT-LLM and Triton TRT-LLM
    images, ``ghcr.io/ggml-org/llama.cpp``), composite tags (``...-sglang0.5.5.post3-...``),
    and images whose tag is not the engine's version (llm-d, NVIDIA Dynamo runtimes,
    LMCache's vLLM images, ``rocm/vllm-dev``). Not LLM engines: text-embeddings-inference,
    Ray images, routing sidecars and plain OS images (``None``)."""
    name, tag, digest = split_image(image)
    if not name or "${" in image or "{{" in image or name.startswith("<"):
        return None, None, f"{image} is a placeholder, not an image"
    low = name.lower()
    last = low.rsplit("/", 1)[-1]
    tag_low = (tag or "").lower()

    if "text-embeddings-inference" in low or "text-embeddings-router" in low:
        return None, None, "text-embeddings-inference is not an LLM engine"
    if "routing-sidecar" in last or "inference-scheduler" in last or last == "epp":
        return None, None, f"{last} is a router, not an engine"
    if (last.startswith("ray") and "rayproject" in low) or last in ("ray", "ray-ml"):
        return None, None, "a Ray image: the engine is installed separately"

    # Composite tags name the engine version themselves.
    match = _SGLANG_IN_TAG.search(tag or "")
    if match:
        return "sglang", match.group(1), (
            f"SGLang {match.group(1)} read from the composite tag {tag}")

    if "ai-dynamo" in low or (last.endswith("-runtime") and "dynamo" in low):
        engine = ("vllm" if "vllm" in last else "sglang" if "sglang" in last
                  else "trtllm" if "tensorrt" in last or "trtllm" in last else None)
        return engine, None, (f"NVIDIA Dynamo image: tag {tag} is a Dynamo release, not an "
                              "engine version")
    if last.startswith("llm-d") or "/llm-d/" in low:
        return "vllm", None, (f"llm-d image: tag {tag} is an llm-d release (or build), not a "
                              "vLLM version")
    if "huggingfaceserver" in low or low.endswith("kserve/huggingfaceserver"):
        return "vllm", None, ("KServe huggingfaceserver (vLLM backend): its tag "
                              f"{tag} is not a vLLM version")

    if "text-generation-inference" in low or last == "tgi":
        dlc = _TGI_DLC.search(last)
        if dlc:
            dlc_version = ".".join(p for p in dlc.groups() if p is not None)
            return "tgi", dlc_version, (f"TGI {dlc_version} read from the image name (Google "
                                        f"DLC); the tag {tag} is the DLC's")
        version, note = _tag_version(tag, "TGI")
        return "tgi", version, note

    if "vllm" in last:
        if low.startswith("rocm/") or "vllm-dev" in last:
            version, note = _tag_version(tag, "ROCm vLLM dev")
            base = ("ROCm vLLM development image, also used as a base for other engines: "
                    "the command decides")
            return "vllm", version, f"{base}; {note}" if note else base
        if low.startswith("lmcache/"):
            composite = _VLLM_IN_TAG.search(tag or "")
            if composite:
                return "vllm", composite.group(1), f"vLLM version from the tag {tag}"
            lm_version, note = _tag_version(tag, "LMCache")
            if lm_version == "latest":
                return "vllm", "latest", note
            return "vllm", None, (note if lm_version is None else
                                  f"LMCache image: tag {tag} is an LMCache release, not a "
                                  "vLLM version")
        if last == "pytorch-vllm-serve" or "vertex" in low:
            vertex, note = _tag_version(tag, "Vertex AI vLLM")
            return "vllm", "latest" if vertex == "latest" else None, (
                note or f"Vertex AI Model Garden image: tag {tag} is not a vLLM version")
        version, note = _tag_version(tag, "vLLM")
        if digest and tag is None:
            return "vllm", None, "pinned by digest; the vLLM version is not in the reference"
        return "vllm", version, note

    if "sglang" in last:
        version, note = _tag_version(tag, "SGLang")
        return "sglang", version, note

    if last == "lmdeploy" or last.startswith("lmdeploy"):
        version, note = _tag_version(tag, "LMDeploy")
        return "lmdeploy", version, note

    if last == "tritonserver" and "trtllm" in tag_low:
        return "trtllm", None, (f"Triton container {tag}: the TensorRT-LLM version follows "
                                "from the container release (not in the tag)")
    if "tensorrt-llm" in low or "tensorrt_llm" in low or "trtllm" in last:
        version, note = _tag_version(tag, "TensorRT-LLM")
        return "trtllm", version, note

    if "llama.cpp" in low or "llama-cpp" in last or "llamacpp" in last or last == "llama-server":
        official = "ggml-org/llama.cpp" in low or "ggerganov/llama.cpp" in low
        build = _LLAMACPP_BUILD.search(tag_low)
        if build:
            return "llamacpp", f"b{build.group(1)}", ""
        if official:
            return "llamacpp", "latest", (f"llama.cpp tag {tag} is a rolling image"
                                          if tag else "")
        return "llamacpp", None, (f"custom llama.cpp image {last}: the tag does not name a "
                                  "llama.cpp build")

    if "mlc-llm" in low or "mlc_llm" in low:
        version, note = _tag_version(tag, "MLC-LLM")
        return "mlc-llm", version, note

    return None, None, ""


_PIP_ENGINES = {
    "vllm": "vllm",
    "sglang": "sglang",
    "lmdeploy": "lmdeploy",
    "tensorrt-llm": "trtllm",
    "mlc-llm": "mlc-llm",
    "mlc-llm-nightly": "mlc-llm",
}


@lru_cache(maxsize=4096)  # a pure function of the text; parsing a requirement is slow
def engine_from_pip(spec: str) -> tuple[str, str | None] | None:
    """``(engine, pinned version or None)`` for a pip requirement that installs an engine
    (``vllm==0.6.1.post2`` → ``("vllm", "0.6.1.post2")``; ``vllm>=0.10.0`` and
    ``sglang[all]>=0.4.2.post4`` pin nothing → version ``None``); ``None`` for other
    packages or text that is not a requirement."""
    text = spec.strip().strip("'\"").strip()
    if not text or text.startswith("-"):
        return None
    # imported here: packaging.requirements (markers, tags, subprocess) costs more than
    # the rest of this module, and only pip-installing manifests need it
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    engine = _PIP_ENGINES.get(canonicalize_name(requirement.name))
    if engine is None:
        return None
    specifiers = list(requirement.specifier)
    if len(specifiers) == 1 and specifiers[0].operator in ("==", "===") and (
            "*" not in specifiers[0].version):
        return engine, specifiers[0].version
    return engine, None


ENTRYPOINT_IMAGES = (("tgi", re.compile(r"text-generation-inference")),
                     ("vllm", re.compile(r"(^|/)vllm-openai(-rocm)?(:|$)")),
                     ("llamacpp", re.compile(r"llama\.cpp:(full-|light-)?server|llama-server")))


def entrypoint_engine(image: str | None) -> str | None:
    """The engine whose server is the default entrypoint of ``image`` (so that container
    ``args`` are that server's flags), when the image is one of the engines' own."""
    if not image:
        return None
    for engine, pattern in ENTRYPOINT_IMAGES:
        if pattern.search(image):
            return engine
    return None
