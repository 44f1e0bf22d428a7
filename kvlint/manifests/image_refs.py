"""Container image references, split into their parts: below every module that reads images
(:mod:`.images`, :mod:`.runpod_workers`), so each splits a reference the same way."""

from __future__ import annotations

__all__ = ["split_image"]


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
