"""Tags an engine's own image repository never publishes: the pull fails before the engine runs.

Only repositories whose tag grammar is read from the release job that pushes them are judged,
and only for two shapes no release job writes:

* a release number without its ``v`` (``vllm/vllm-openai:0.10.1.1``): vLLM's release job strips
  a leading ``v`` from the release version and tags ``vllm/vllm-openai:v${RELEASE_VERSION}``
  and ``latest`` (with arch/CUDA suffixes; ``.buildkite/scripts/annotate-release.sh`` on
  vLLM's main branch, 2026); SGLang's tags ``lmsysorg/sglang:v${version}-${cuda_tag}`` and
  ``latest`` (``.github/workflows/release-docker.yml``@01d2a3d). No release tag of either
  repository on Docker Hub lacks the ``v``;
* a tag in upper case only (``REPLACE_WITH_TESTED_VERSION``, ``TAG``, ``VERSION``): no tag
  those jobs write has no lower-case letter (versions, ``latest``, ``nightly``, hexadecimal
  commits, ``cu129``), so such a tag is a placeholder left in the file. A tag that mixes cases
  is not judged: SGLang also pushes model-specific development tags (``dev-Ling-3.0-flash``).

An image pinned by digest (``name:tag@sha256:...``) is pulled by its digest, so its tag is not
judged; neither is a mirror in another registry, whose tags are its owner's.
"""

from __future__ import annotations

import re

from kvlint.manifests.images import split_image

__all__ = ["unpublished_tag"]

_OWN_TAGS: dict[str, str] = {
    "vllm/vllm-openai": "vLLM's release job tags v<version> (v0.10.1.1), latest and nightly",
    "lmsysorg/sglang": "SGLang's release job tags v<version>-<cuda> (v0.5.4-cu129) and latest",
}
"""Repository (on Docker Hub) -> what its release job publishes."""

_HUB = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_.-]*")
_BARE_RELEASE = re.compile(r"\d+\.\d+(?:\.\d+)*(?:\.?(?:post|rc|dev)\d*)*(?:-[a-z0-9_.]+)*")


def unpublished_tag(image: str) -> tuple[str, str] | None:
    """``(tag, why)`` when ``image`` names a tag its engine's own repository never publishes
    (module doc); ``None`` otherwise, or when the tag is not judged."""
    name, tag, digest = split_image(image)
    if tag is None or digest is not None or "$" in tag or "{" in tag:
        return None
    for hub in _HUB:
        if name.startswith(hub):
            name = name[len(hub):]
            break
    publishes = _OWN_TAGS.get(name)
    if publishes is None:
        return None
    if _PLACEHOLDER.fullmatch(tag):
        return tag, (f"{name} publishes no tag {tag}: {publishes}, none of them in upper case "
                     f"only, so {tag} reads as a placeholder never replaced; the pull fails "
                     "(manifest unknown, ErrImagePull) and the engine never starts. Name a "
                     "release tag")
    if _BARE_RELEASE.fullmatch(tag):
        return tag, (f"{name} publishes no tag {tag}: {publishes}, so the release is "
                     f"v{tag}; the pull fails (manifest unknown, ErrImagePull) and the engine "
                     f"never starts. Write {name}:v{tag}")
    return None
