"""Container image references, split into their parts: below every module that reads images
(:mod:`.images`, :mod:`.runpod_workers`), so each splits a reference the same way."""

from __future__ import annotations

import re
from datetime import date

__all__ = ["split_image", "tag_date"]

_TAG_DATE = re.compile(r"(?<![0-9])(20[2-9][0-9])[-.]?(0[1-9]|1[0-2])[-.]?(0[1-9]|[12][0-9]|3[01])"
                       r"(?![0-9])")


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


def tag_date(image: str) -> date | None:
    """The day an image's tag names, when it names one (``20250312_0916_RC01``,
    ``nightly-2025-06-12``, ``dev-20251001``): a build from that day. ``None`` otherwise."""
    tag = split_image(image)[1]
    found = _TAG_DATE.search(tag) if tag else None
    if found is None:
        return None
    try:
        return date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        return None
