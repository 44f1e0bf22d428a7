"""The image a compose service builds: the command in its Dockerfile.

A service with ``build:`` runs the image its Dockerfile makes (Compose Specification,
``build``: ``context`` is the directory, relative to the compose file, ``dockerfile`` a path
relative to the context, default ``Dockerfile``). When it sets no ``command`` (or no
``entrypoint``), the image's ``CMD`` (``ENTRYPOINT``) runs, with the image's ``ENV`` under
the service's ``environment``. kvlint reads that Dockerfile when it lies inside the linted
tree (bounded, as manifests are; recorded for the result cache): its last stage (see
:mod:`.dockerfiles`). The words are placed on the compose file's ``build:`` line, since they
are written in another file; a remote context (a Git URL) or an inline Dockerfile is not
read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from kvlint.manifests.base import DocumentContext
from kvlint.manifests.dockerfiles import Stage, last_stage
from kvlint.manifests.shell_words import Word
from kvlint.manifests.siblings import read_named
from kvlint.manifests.yaml_values import key_line

__all__ = ["built_stage", "moved"]


def _dockerfile(service: Mapping[str, Any]) -> str | None:
    """The Dockerfile a service builds, relative to the compose file's directory."""
    build = service.get("build")
    if isinstance(build, str):
        context, dockerfile = build, "Dockerfile"
    elif isinstance(build, dict) and "dockerfile_inline" not in build:
        context, dockerfile = build.get("context", "."), build.get("dockerfile", "Dockerfile")
    else:
        return None
    if not isinstance(context, str) or not isinstance(dockerfile, str) or \
            "://" in context or context.startswith("git@") or not dockerfile.strip():
        return None
    return dockerfile if dockerfile.startswith("/") else \
        str(PurePosixPath(context) / dockerfile)


def built_stage(service: Mapping[str, Any], ctx: DocumentContext
                ) -> tuple[Stage, int | None, str] | None:
    """``(last stage, the build: line, the Dockerfile's path as written)`` of the image the
    service builds, or ``None`` (no build, outside the tree, unreadable, no ``FROM``)."""
    relative = _dockerfile(service)
    text = read_named(ctx, relative) if relative is not None else None
    stage = last_stage(text) if text is not None and relative is not None else None
    if stage is None or relative is None:
        return None
    return stage, key_line(service, "build"), relative


def moved(words: Sequence[Word], line: int | None) -> list[Word]:
    """Words of another file placed on ``line`` of this one (quoting kept)."""
    return [Word(w.text, line, split=w.split, literal=w.literal) for w in words]
