"""Which engine (and version) a container image or a pip requirement provides.

:func:`engine_from_image` classifies an image reference by its name and tag only; the caller
lets an engine command in the manifest win over it (images are often reused as base images).
Versions are returned as the engine's own version strings (``0.8.5``, ``0.4.6.post1``,
llama.cpp ``b5415``); ``"latest"`` for rolling tags (``latest``, ``nightly``, ``main``, commit
shas, llama.cpp ``server``); ``None`` when the tag names something else (a date, a dated
nightly, an llm-d, Dynamo, LMCache, Triton, NGC (``YY.MM``) or cloud-vendor container release,
a custom tag). ``None`` means "unknown": it is never replaced by the newest version here. A
container release maps to an engine version only through the cited tables of
:mod:`kvlint.manifests.image_releases`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import PurePosixPath

from kvlint.manifests.image_refs import split_image
from kvlint.manifests.image_releases import NGC_VLLM, TRITON_TRTLLM, TRITON_VLLM, Release
from kvlint.manifests.runpod_workers import runpod_worker, worker_release

__all__ = [
    "ENTRYPOINT_IMAGES",
    "engine_from_image",
    "engine_from_pip",
    "entrypoint_clash",
    "entrypoint_engine",
    "pip_package",
    "split_image",
    "tools_server",
]

_VERSION = re.compile(
    r"v?(\d+(?:\.\d+){1,3}(?:\.?(?:post|rc|dev|a|b)\d*)*)(?=$|[-_+]|\.[a-z])", re.IGNORECASE)
"""A release at the start of a tag, before a ``-``/``_``/``+`` suffix or a vendor's dotted
word (``v0.7.3.self.post1``: AIBrix's build of vLLM 0.7.3)."""
_ROLLING = frozenset({"latest", "nightly", "main", "master", "head", "dev", "edge", "stable"})
_SHA = re.compile(r"sha-[0-9a-f]{7,40}(?:[-_].*)?|[0-9a-f]{7,40}", re.IGNORECASE)
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2}|\d{8})([-_.].*)?")
_DATED = re.compile(r"(?:^|[-_.])(20\d{2}-?[01]\d-?[0-3]\d)(?=$|[-_.])")
#: ``YY.MM``: NVIDIA NGC (and other vendors') container releases, not engine versions
_CALENDAR = re.compile(r"(1[89]|[2-9]\d)\.(0[1-9]|1[0-2])(?=$|[-_.])")
_IN_TAG = r"(?:^|[-_]){}[-_]?v?(\d+(?:\.\d+){{1,3}}(?:\.?(?:post|rc|dev)\d*)*)(?=$|[-_+])"
_SGLANG_IN_TAG = re.compile(_IN_TAG.format("sglang"), re.IGNORECASE)
_VLLM_IN_TAG = re.compile(_IN_TAG.format("vllm"), re.IGNORECASE)
_TGI_IN_TAG = re.compile(_IN_TAG.format("tgi"), re.IGNORECASE)
_LMI_IN_TAG = re.compile(_IN_TAG.format("lmi"), re.IGNORECASE)
_TRTLLM_IN_TAG = re.compile(_IN_TAG.format("(?:tensorrt-?llm|trtllm)"), re.IGNORECASE)
_TGI_DLC = re.compile(r"text-generation-inference-(?:cu\d+|gpu|tpu|neuronx?)\.(\d+)-(\d+)"
                      r"(?:-(\d+))?(?:\.|$)")
_LLAMACPP_BUILD = re.compile(r"(?:^|[-_])b(\d{3,6})(?:$|[-_])")
_ROCM_ROLLING = frozenset({"latest", "nightly", "main"})


def _is_sha(tag: str) -> bool:
    """A commit-build tag: ``sha-<hex>`` (optionally suffixed) or a bare hex sha with a letter
    (an all-digit tag is a build number or a date, not a sha)."""
    return bool(_SHA.fullmatch(tag)) and (tag.lower().startswith("sha-")
                                          or any(c in "abcdef" for c in tag.lower()))


ROLLING_VERSIONS = ("latest", "nightly")
"""The versions :func:`engine_from_image` reports for a tag that names no release and pulls
the newest build: ``latest`` (the newest release, or no tag) and ``nightly`` (the newest
nightly build, newer than every release). Rules judge both by the newest release kvlint
knows (:data:`kvlint.engines.UNPINNED`); the report keeps the word the tag used."""

FIXED_BUILD = "image tag (one fixed build, not a release)"
"""The source of a ``latest`` version read from a :func:`fixed_build` image."""
_COMMIT_SUFFIX = re.compile(r"[a-z]+-[0-9a-f]{7,40}", re.IGNORECASE)


def fixed_build(image: str) -> bool:
    """Whether ``image`` names one fixed build although its tag names no release: a digest
    (``@sha256:...``), a commit tag (``sha-1a2b3c4``, a bare sha) or a nightly of one commit
    (``nightly-<sha>``). Unlike ``latest`` or ``nightly``, a later pull gets the same build."""
    _, tag, digest = split_image(image.strip())
    if digest:
        return True
    return tag is not None and (_is_sha(tag) or (
        _COMMIT_SUFFIX.fullmatch(tag) is not None and
        any(c in "abcdef" for c in tag.rsplit("-", 1)[-1].lower())))


def _tag_version(tag: str | None, what: str) -> tuple[str | None, str]:
    """A version (or "latest") from a tag, with a note when it names none. A tag that names
    no version it can read gives ``None``, never "latest"."""
    if tag is None:
        return "latest", "no tag: Docker pulls latest"
    low = tag.lower()
    if low in _ROLLING:
        return ("nightly" if low == "nightly" else "latest"), ""
    if low.startswith(("nightly", "latest-", "main-", "dev-")):
        dated = _DATED.search(low)
        if dated:
            return None, (f"{what} tag {tag} is a nightly build of {dated.group(1)}: its "
                          "version is not in the tag")
        return ("nightly" if low.startswith("nightly") else "latest"), \
            f"{tag} is a rolling build, not a release"
    if _DATE.fullmatch(tag):
        return None, f"{what} tag {tag} is a date, not a version"
    if _CALENDAR.match(tag):
        return None, (f"{what} tag {tag} is a YY.MM container release, not an engine "
                      "version")
    match = _VERSION.match(tag)
    if match:
        return match.group(1), ""
    if _is_sha(tag):
        return "latest", f"{what} tag {tag} is a commit build, not a release"
    return None, f"{what} tag {tag} does not name a version"


def _release_version(tag: str | None, table: Mapping[str, Release], container: str,
                     engine: str) -> tuple[str | None, str]:
    """The engine version of a ``YY.MM`` container release, from a cited table only."""
    match = _CALENDAR.match(tag or "")
    if match is None:
        return None, (f"{container} tag {tag} is not a YY.MM container release: the "
                      f"{engine} version is unknown")
    release = table.get(match.group(0))
    if release is None:
        return None, (f"{container} release {match.group(0)} is a YY.MM release, not the "
                      f"{engine} version, and kvlint has no cited release note giving its "
                      f"{engine} version")
    return release.version, (f"{container} release {match.group(0)} ships {engine} "
                             f"{release.version} ({release.source})")


def _rocm_vllm(tag: str | None) -> tuple[str | None, str]:
    """``rocm/vllm`` and ``rocm/vllm-dev``: the vLLM version when the tag names it
    (``..._vllm_0.6.4``), "latest" only for a rolling tag (nightly/main/latest, undated)."""
    base = ("ROCm vLLM image, also used as a base for other engines: the command decides")
    composite = _VLLM_IN_TAG.search(tag or "")
    if composite:
        return composite.group(1), f"{base}; vLLM {composite.group(1)} read from the tag {tag}"
    if tag is None:
        return "latest", f"{base}; no tag: Docker pulls latest"
    words = set(re.split(r"[-_.]", tag.lower()))
    if words & _ROCM_ROLLING and not _DATED.search(tag) and not _VERSION.search(tag):
        return ("nightly" if "nightly" in words else "latest"), f"{base}; {tag} is a rolling tag"
    why = ("is a date or a dated build" if _DATED.search(tag) or _DATE.fullmatch(tag) else
           "does not name a vLLM version")
    return None, f"{base}; ROCm vLLM tag {tag} {why}"


_SIF_FILE = re.compile(r"(?:[^\s:]*/)?([\w.+-]+)\.(?:sif|simg)", re.IGNORECASE)
"""An Apptainer/Singularity image file, given by its path."""
_SIF_RELEASE = re.compile(r"(.+?)[-_]v?(\d+(?:\.\d+){1,3}(?:\.?(?:post|rc|dev)\d*)*)$",
                          re.IGNORECASE)


def _sif_image(stem: str) -> tuple[str | None, str | None, str]:
    """An image file (``tensorrt-llm-release-1.3.0rc18.sif``, ``vllm-openai_v0.8.5.sif``):
    one fixed build, never a pull of ``latest``; the engine is the one its name says, the
    release the version its name ends with, if any."""
    named = _SIF_RELEASE.fullmatch(stem)
    base, version = (named.group(1), named.group(2)) if named else (stem, None)
    engine = engine_from_image(f"{base}:latest")[0] or engine_from_image(f"{stem}:latest")[0]
    if engine is None:
        return None, None, ""
    if version is None:
        return engine, None, (f"image file {stem}: its name gives no {engine} release (a "
                              "fixed build, not a pull of latest)")
    if re.fullmatch(r"v?\d+\.\d+", version):
        # the engines' releases have three parts (0.6.3, 3.3.6, 1.3.0rc18): two are a site's
        # or a container registry's own numbering (an NGC release is YY.MM)
        return engine, None, (f"image file {stem}: {version} is no {engine} release (they "
                              "have three parts; YY.MM is an NGC container release): undated")
    return engine, version, f"{engine} {version} from the image file's name {stem}"


@lru_cache(maxsize=4096)  # a pure function of the text; a tree repeats its images
def engine_from_image(image: str) -> tuple[str | None, str | None, str]:
    """``(engine key or None, version or "latest" or None, note)`` for a container image.

    Knows the official images (``vllm/vllm-openai``, ``vllm/vllm-tpu``, ``lmsysorg/sglang``,
    ``ghcr.io/huggingface/text-generation-inference`` and Google's TGI DLCs, whose version is
    in the image NAME, ``openmmlab/lmdeploy``, NVIDIA's TensorRT-LLM and Triton TRT-LLM
    images, ``ghcr.io/ggml-org/llama.cpp``), composite tags (``...-sglang0.5.5.post3-...``,
    ``...-tgi2.3.1-...``, ``..._vllm_0.6.4``), ROCm images (``rocm/vllm``, ``rocm/vllm-dev``,
    ``rocm/sgl-dev``), NVIDIA NGC containers (``nvcr.io/nvidia/vllm:25.10-py3``: a ``YY.MM``
    release, mapped through a cited table), AWS TGI and LMI containers, and images whose tag
    is not the engine's version (llm-d, NVIDIA Dynamo runtimes, LMCache's vLLM images, Vertex
    AI Model Garden). Not LLM engines: text-embeddings-inference, Ray images, routing
    sidecars and plain OS images (``None``)."""
    sif = _SIF_FILE.fullmatch(image.strip())
    if sif is not None:
        return _sif_image(sif.group(1))
    name, tag, digest = split_image(image)
    if name and tag and ("${" in tag or "{{" in tag) and "${" not in name and \
            "{{" not in name and not name.startswith("<"):
        # the repository is written out, only the tag is a variable: the engine is the
        # repository's, its release unknown
        engine = engine_from_image(f"{name}:latest")[0]
        if engine is not None:
            return engine, None, (f"{image}: the tag is set by a variable ({tag}), so the "
                                  f"{engine} release is unknown")
    if not name or "${" in image or "{{" in image or name.startswith("<"):
        return None, None, f"{image} is a placeholder, not an image"
    low = name.lower()
    last = low.rsplit("/", 1)[-1]
    tag_low = (tag or "").lower()
    ngc = low.startswith("nvcr.io/")
    vertex = "vertex-ai/" in low or "model-garden" in low or (
        last.startswith("pytorch-") and last.endswith("-serve"))

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
    if vertex and any(e in last for e in ("vllm", "sglang", "tgi")):
        engine = "vllm" if "vllm" in last else "sglang" if "sglang" in last else "tgi"
        shown = {"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI"}[engine]
        dated = "dated " if _DATE.fullmatch(tag or "") or _DATED.search(tag or "") else ""
        return engine, None, (f"Vertex AI Model Garden image {last}: its tag {tag} is a "
                              f"{dated}Model Garden build, not the {shown} version")

    if "text-generation-inference" in low or last == "tgi":
        dlc = _TGI_DLC.search(last)
        if dlc:
            dlc_version = ".".join(p for p in dlc.groups() if p is not None)
            return "tgi", dlc_version, (f"TGI {dlc_version} read from the image name (Google "
                                        f"DLC); the tag {tag} is the DLC's")
        version, note = _tag_version(tag, "TGI")
        return "tgi", version, note
    if re.search(r"(?:^|-)tgi(?:-|$)", last):  # AWS huggingface-pytorch-tgi-inference
        composite = _TGI_IN_TAG.search(tag or "")
        if composite:
            return "tgi", composite.group(1), (f"TGI {composite.group(1)} read from the "
                                               f"vendor container tag {tag}")
        return "tgi", None, (f"vendor TGI container {last}: its tag {tag} does not name a "
                             "TGI version (the leading version is PyTorch's)")

    if last.startswith("djl-") or "djl-serving" in low:  # AWS LMI (DJL Serving)
        trtllm = _TRTLLM_IN_TAG.search(tag or "")
        if trtllm:
            return "trtllm", trtllm.group(1), (f"TensorRT-LLM {trtllm.group(1)} read from "
                                               f"the LMI container tag {tag}")
        lmi = _LMI_IN_TAG.search(tag or "")
        if lmi or re.search(r"(?:^|[-_])lmi(?:$|[-_])", tag_low):
            which = f"LMI {lmi.group(1)}" if lmi else "LMI"
            return "vllm", None, (f"AWS {which} container (DJL Serving, vLLM-based "
                                  "backends): the tag does not name the bundled vLLM and "
                                  "kvlint has no cited table for it")
        return None, None, f"DJL Serving container {tag}: no LLM engine named in the tag"

    if ngc and last == "vllm":
        version, note = _release_version(tag, NGC_VLLM, "NGC vLLM container", "vLLM")
        return "vllm", version, note
    if ngc and last == "sglang":
        version, note = _release_version(tag, {}, "NGC SGLang container", "SGLang")
        return "sglang", version, note

    worker = worker_release(image)
    if worker is not None:  # RunPod's workers: the tag is the worker's release
        return worker

    if "vllm" in last:
        if low.startswith("rocm/") or "vllm-dev" in last:
            version, note = _rocm_vllm(tag)
            return "vllm", version, note
        composite = _VLLM_IN_TAG.search(tag or "")
        if composite:
            return "vllm", composite.group(1), f"vLLM version from the tag {tag}"
        if low.startswith("lmcache/"):
            lm_version, note = _tag_version(tag, "LMCache")
            if lm_version in ROLLING_VERSIONS:
                return "vllm", lm_version, note
            return "vllm", None, (note if lm_version is None else
                                  f"LMCache image: tag {tag} is an LMCache release, not a "
                                  "vLLM version")
        version, note = _tag_version(tag, "vLLM")
        if digest and tag is None:
            return "vllm", None, "pinned by digest; the vLLM version is not in the reference"
        # vLLM's own images, or a mirror of them (a mirror keeps the repository's name)
        # vLLM's CPU image is its own too (.buildkite/scripts/push-nightly-builds-cpu.sh:
        # vllm/vllm-openai-cpu:nightly, nightly-<commit>, beside the CPU release images)
        official = last in ("vllm-openai", "vllm-tpu", "vllm-openai-cpu")
        if not official and version not in (None, *ROLLING_VERSIONS) and \
                not str(version).startswith("0."):
            # every vLLM release is 0.x: a vendor build's tag (opea/vllm-gaudi:1.22.0, the
            # Gaudi software release) names its own release, not vLLM's
            return "vllm", None, (f"vendor vLLM build {last}: its tag {tag} is not a vLLM "
                                  "version (vLLM releases are 0.x)")
        if not official and version is not None and re.fullmatch(r"\d+\.\d+", version):
            # every vLLM release has three parts (0.4.3, 0.10.1.1): a team's own build
            # numbered 0.1 or 1.2 names its own release
            return "vllm", None, (f"{name}:{tag} is a build that is not vLLM's own image, and "
                                  f"{tag} is no vLLM release (they are 0.x.y)")
        if not official and version in ROLLING_VERSIONS:
            # a vendor's or a team's own build: its newest build is not vLLM's newest release
            return "vllm", None, (f"{name}:{tag or 'latest'} is a rolling tag of a build "
                                  "that is not vLLM's own image: the vLLM in it is not dated")
        return "vllm", version, note

    if "sglang" in last or last == "sgl-dev":
        version, note = _tag_version(tag, "SGLang")
        if last == "sgl-dev":
            base = "ROCm SGLang development image"
            return "sglang", version, f"{base}; {note}" if note else base
        return "sglang", version, note

    if last == "lmdeploy" or last.startswith("lmdeploy"):
        version, note = _tag_version(tag, "LMDeploy")
        return "lmdeploy", version, note

    if last == "tritonserver" and "vllm" in tag_low:
        version, note = _release_version(tag, TRITON_VLLM, "Triton vLLM container", "vLLM")
        return "vllm", version, note
    if last == "tritonserver" and "trtllm" in tag_low:
        version, note = _release_version(tag, TRITON_TRTLLM, "Triton TRT-LLM container",
                                         "TensorRT-LLM")
        return "trtllm", version, note
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
    # TGI's Python server, versioned with the launcher's release (server/pyproject.toml
    # @01b82b58, huggingface/text-generation-inference: version = "2.0.5-dev0", the repo's)
    "text-generation-server": "tgi",
}


def _wheel_pin(text: str) -> tuple[str, str] | None:
    """``(engine, version)`` of a wheel file installed by path
    (``$DIR/text_generation_server-1.4.4-py3-none-any.whl[bnb]``): the version its file name
    carries (the wheel file-name convention); ``None`` for other text or a glob."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    name = text.rsplit("/", 1)[-1].split("[", 1)[0]
    if not name.endswith(".whl") or "*" in name:
        return None
    try:
        project, version, _, _ = parse_wheel_filename(name)
    except (InvalidWheelFilename, ValueError):
        return None
    engine = _PIP_ENGINES.get(canonicalize_name(project))
    return (engine, _normalized(str(version))) if engine else None


@lru_cache(maxsize=4096)  # a pure function of the text; parsing a requirement is slow
def pip_package(engine: str | None) -> str | None:
    """The package ``pip install`` takes for ``engine`` (the first of :data:`_PIP_ENGINES`
    that installs it: ``trtllm`` -> ``tensorrt-llm``), or ``None``."""
    return next((package for package, named in _PIP_ENGINES.items() if named == engine), None)


def engine_from_pip(spec: str) -> tuple[str, str | None] | None:
    """``(engine, pinned version or None)`` for a pip requirement that installs an engine
    (``vllm==0.6.1.post2`` → ``("vllm", "0.6.1.post2")``; ``vllm>=0.10.0`` and
    ``sglang[all]>=0.4.2.post4`` pin nothing → version ``None``, the newest release; a range
    that leaves the newest release out, ``vllm==0.6.*`` or ``vllm<0.7``, → the newest
    release it allows, from ``kvlint/engines/release_dates.json``); ``None`` for other
    packages or text that is not a requirement."""
    text = spec.strip().strip("'\"").strip()
    if not text or text.startswith("-"):
        return None
    # imported here: packaging.requirements (markers, tags, subprocess) costs more than
    # the rest of this module, and only pip-installing manifests need it
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wheel = _wheel_pin(text)
    if wheel is not None:
        return wheel
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
        return engine, _normalized(specifiers[0].version)
    if specifiers:
        # a range that leaves out the newest release (vllm==0.6.*, vllm<0.7): pip installs
        # the newest release it allows, not the newest release
        from kvlint.engines.release_dates import newest, newest_allowed

        allowed = newest_allowed(engine, str(requirement.specifier))
        if allowed is not None and allowed != newest(engine):
            return engine, allowed
    return engine, None


def _normalized(version: str) -> str:
    """A pinned version as pip reads it (PEP 440 normal form: ``0.6.3post1`` is
    ``0.6.3.post1``); as written when it is not a PEP 440 version."""
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(version))
    except InvalidVersion:
        return version


ENTRYPOINT_IMAGES = (("tgi", re.compile(r"text-generation-inference")),
                     # vllm-openai and its rebuilds (-rocm, -ubi9...) keep the image's
                     # ENTRYPOINT, the OpenAI server (vllm-project/vllm docker/Dockerfile)
                     ("vllm", re.compile(r"(^|/)vllm-openai[\w.-]*(:|@|$)")),
                     ("llamacpp", re.compile(r"llama\.cpp:(full-|light-)?server|llama-server")))


_LLAMACPP_MODEL_ENV = ("LLAMA_ARG_MODEL", "LLAMA_ARG_HF_REPO", "LLAMA_ARG_MODEL_URL")
"""Variables only llama.cpp's server reads its model from (common/arg.cpp ``set_env``)."""


_ARGS_ONLY_ENGINES = frozenset({"vllm", "sglang", "tgi", "llamacpp"})


def model_then_options(words: Sequence[str]) -> bool:
    """Whether a container's arguments are a model reference and then options
    (``Qwen/Qwen3-8B --max-model-len 8192``, or one variable then options: ``${HF_MODEL}
    --max-model-len 8192``): what ``vllm serve``, the entrypoint of vLLM's own images, takes;
    no program, shell or Python starts that way."""
    if len(words) < 2 or not words[1].startswith("-"):
        return False
    first = words[0]
    if re.fullmatch(r"\$\{?[A-Za-z_]\w{0,63}\}?", first) or \
            re.fullmatch(r"\$\{[A-Za-z_]\w{0,63}:?[-=?][^\s{}$`;&|]{0,512}\}", first):
        # ${HF_MODEL} --tensor-parallel-size 2: a model the deploy sets (or its default,
        # ${MODEL:-Qwen/Qwen3-8B})
        return True
    return "/" in first and not first.startswith(("-", "/bin/", "/usr/")) and \
        not any(c in first for c in " ;&|$`") and \
        first.rsplit("/", 1)[-1] not in ("python", "python3", "bash", "sh", "vllm")


_OWN_IMAGES = re.compile(
    r"(^|/)(vllm/vllm-openai[\w.-]*|vllm/vllm-tpu|lmsysorg/sglang|huggingface/"
    r"text-generation-inference|ggml-org/llama\.cpp|ggerganov/llama\.cpp|openmmlab/lmdeploy|"
    r"nvidia/tensorrt-llm/[\w.-]+|nvidia/tritonserver|nvidia/vllm|nvidia/sglang|rocm/vllm|"
    r"rocm/vllm-dev|rocm/sgl-dev|rocm/sglang)(:|@|$)")
"""The engines' own images and their vendors' builds (NGC, ROCm), whose tags name what
they hold; anything else running an engine is a team's or a fork's build."""


def engine_own_image(image: str) -> bool:
    """Whether ``image`` is an engine project's own image or a vendor's build of it
    (:data:`_OWN_IMAGES`), rather than a team's or a fork's build."""
    return _OWN_IMAGES.search(image.strip().lower()) is not None


def official_vllm(image: str) -> bool:
    """Whether ``image`` is vLLM's own OpenAI image (``vllm/vllm-openai``, any registry, tag
    or ``-cu`` variant): the image the project builds from docker/Dockerfile."""
    return re.search(r"(^|/)vllm/vllm-openai[\w.-]*(:|@|$)", image) is not None


SERVE_ENTRYPOINT_SINCE = "0.12.0"
"""The first vLLM release whose ``vllm-openai`` image runs ``vllm serve`` (docker/Dockerfile of
the sdist, target ``vllm-openai``: ``ENTRYPOINT ["vllm", "serve"]`` @0.12.0, 0.13.0, 0.20.0,
0.25.0; ``ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]`` @0.8.5 through
0.11.0)."""


def pinned_official_vllm(image: str) -> bool:
    """Whether ``image`` is vLLM's own OpenAI image at a tag that names a release older than
    :data:`SERVE_ENTRYPOINT_SINCE` (or one kvlint cannot order): its entrypoint is the OpenAI
    api_server, which takes no model as a positional argument. ``latest``, ``nightly`` and
    releases from 0.12.0 run ``vllm serve``."""
    from packaging.version import InvalidVersion, Version

    if not official_vllm(image):
        return False
    version = engine_from_image(image)[1]
    if version is None or version in ROLLING_VERSIONS:
        return False
    try:
        return Version(version) < Version(SERVE_ENTRYPOINT_SINCE)
    except InvalidVersion:
        return True


_PROGRAMS = frozenset({"vllm", "python", "python3", "sh", "bash", "dash", "env",
                       "text-generation-launcher", "llama-server", "sglang"})
"""Programs a command names first: given to an image whose entrypoint is an engine's server,
they become that server's arguments."""
_SERVERS = (("vllm", official_vllm, "the vLLM OpenAI server"),
            ("tgi", lambda i: re.search(r"(^|/)huggingface/text-generation-inference(:|@|$)", i)
             is not None, "text-generation-launcher"),
            ("llamacpp", lambda i: re.search(r"(^|/)(ggml-org|ggerganov)/llama\.cpp:server", i)
             is not None, "llama-server"))


def entrypoint_clash(image: str, words: Sequence[str]) -> tuple[str, str] | None:
    """``(engine, its server)`` when ``words``, the arguments a container gives an engine's
    own image without replacing its entrypoint (compose ``command:``, ``docker run IMAGE
    ...``), start with a program (``vllm serve ...``, ``/bin/sh -c ...``): the image's
    ENTRYPOINT, that engine's server (vllm-project/vllm docker/Dockerfile: the OpenAI
    api_server, later ``vllm serve``; TGI's Dockerfile ``text-generation-launcher``;
    llama.cpp's ``.devops`` server images ``/app/llama-server``), receives them as its
    arguments and exits at start on the first one it does not take."""
    if not words:
        return None
    first = PurePosixPath(words[0]).name
    if words[0] == "serve" and official_vllm(image):
        # vllm serve's own subcommand word: "vllm serve serve MODEL" takes "serve" for the
        # model and refuses MODEL; the older api_server entrypoint takes no positional at all
        return "vllm", "the vLLM OpenAI server"
    if words[0].startswith("-") or not (first in _PROGRAMS or re.fullmatch(
            r"python3?(\.\d+)?", first)):
        return None
    for engine, official, server in _SERVERS:
        if official(image):
            return engine, server
    return None


def tools_server(image: str | None, words: Sequence[str]) -> bool:
    """Whether ``words``, the arguments of a llama.cpp ``full`` image (or one whose tag a
    variable sets), start with its ``tools.sh`` server switch: the ``full`` images'
    ENTRYPOINT runs ``llama-server`` with the rest for ``-s``/``--server``
    (``.devops/tools.sh``@9f89d7d8, ggerganov/llama.cpp: ``--server|-s) exec ./llama-server
    "$@"``); in the ``light`` and ``server`` images ``-s`` is the seed option."""
    if not image or not words or words[0] not in ("-s", "--server"):
        return False
    name, tag, _ = split_image(image)
    if not name or not re.search(r"llama[.-]cpp", name):
        return False
    return tag is not None and (tag.startswith("full") or "${" in tag)


def entrypoint_engine(image: str | None, env: Iterable[str] = (),
                      args_only: bool = False) -> str | None:
    """The engine whose server is the default entrypoint of ``image`` (so that container
    ``args`` are that server's flags), when the image is one of the engines' own; or a
    llama.cpp build (``llama-cpp-docker``) whose environment (``env``: the names the
    container sets) gives llama-server its model, which nothing else reads; or, when the
    container gives only options (``args_only``: ``--model ...``, no program), a custom
    build named for an engine (``kloudchat-vllm:local``, ``acme/vllm-custom``): nothing but
    that engine's server entrypoint takes its options. SGLang's own images start no server,
    so ``lmsysorg/sglang`` given options alone is not read as one."""
    if not image:
        return None
    for engine, pattern in ENTRYPOINT_IMAGES:
        if pattern.search(image):
            return engine
    worker = runpod_worker(image)
    if worker is not None:  # its entrypoint starts the engine from the environment
        return worker[0]
    named = engine_from_image(image)[0]
    if any(name in _LLAMACPP_MODEL_ENV for name in env) and named == "llamacpp":
        return "llamacpp"
    if args_only and named in _ARGS_ONLY_ENGINES and "lmsysorg/sglang" not in image and \
            "tritonserver" not in image:  # Triton's entrypoint runs tritonserver
        return named
    return None
