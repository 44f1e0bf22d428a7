"""The engine release a project pins for the commands it runs on the host.

A script that runs ``uv run vllm serve`` or ``vllm serve`` from the project's environment
(no container image, no ``pip install`` of its own) runs the release the project's lock or
requirements pin. kvlint reads them beside the manifest and in its parent folders up to the
linted tree's root (at most :data:`MAX_LEVELS` folders): ``uv.lock`` (uv's ``[[package]]``
``name``/``version``), ``pylock.toml`` (PEP 751's ``[[packages]]``), ``poetry.lock``,
``Pipfile.lock`` (``default`` -> package -> ``version: "==X"``), ``requirements*.txt`` /
``requirements.lock`` (``vllm==X`` lines) and ``pyproject.toml`` (an exact ``==`` pin in
``project.dependencies`` or a Poetry table). The nearest file that pins the engine exactly
decides; a lock pins exactly by nature, a requirement range pins nothing. The files are read
as manifests are (inside the tree, bounded, recorded for the result cache); one that does
not parse is passed over.

Docs: uv's lockfile (``uv.lock``, https://docs.astral.sh/uv/concepts/projects/layout/), PEP
751 (``pylock.toml``), Poetry's and Pipenv's lock files, pip's requirements file format.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from kvlint.manifests.base import DocumentContext
from kvlint.manifests.images import engine_from_pip
from kvlint.manifests.siblings import read_named

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = ["LOCK_FILES", "project_pin"]

LOCK_FILES = ("uv.lock", "pylock.toml", "poetry.lock", "Pipfile.lock", "requirements.lock",
              "requirements.txt", "pyproject.toml")
"""The files read in each folder, most exact first."""
MAX_LEVELS = 4
"""Folders read: the manifest's and up to three above it, inside the linted tree."""
MAX_LINES = 20_000
"""Requirement lines read per file."""


def project_pin(ctx: DocumentContext, engine: str) -> tuple[str, str] | None:
    """``(version, file)``: the release of ``engine`` the project's nearest lock or
    requirements pin exactly (the file relative to the manifest's folder); ``None`` when
    none does, or the manifest is not a file in a tree."""
    if not ctx.path or ctx.path in ("-", "<stdin>"):
        return None
    from kvlint.loaders.files import tree_root

    root = tree_root(ctx.path)
    folder = os.path.realpath(Path(ctx.path).parent)
    for level in range(MAX_LEVELS):
        prefix = "../" * level
        for name in LOCK_FILES:
            text = read_named(ctx, prefix + name)
            if text is None:
                continue
            version = _pinned(name, text, engine)
            if version is not None:
                return version, prefix + name
        if folder == root or not folder.startswith(root.rstrip(os.sep) + os.sep):
            break
        folder = os.path.dirname(folder)
    return None


def _pinned(name: str, text: str, engine: str) -> str | None:
    try:
        if name in ("uv.lock", "pylock.toml", "poetry.lock"):
            return _locked(tomllib.loads(text), engine)
        if name == "Pipfile.lock":
            return _pipfile(json.loads(text), engine)
        if name == "pyproject.toml":
            return _pyproject(tomllib.loads(text), engine)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None
    return _requirements(text.splitlines()[:MAX_LINES], engine)


def _exact(requirement: str, engine: str) -> str | None:
    found = engine_from_pip(requirement)
    if found is None or found[0] != engine or not found[1] or "==" not in requirement:
        return None
    return found[1]


def _locked(data: Any, engine: str) -> str | None:
    """A lock's package table (uv, Poetry: ``package``; PEP 751: ``packages``)."""
    if not isinstance(data, dict):
        return None
    for key in ("package", "packages"):
        packages = data.get(key)
        if not isinstance(packages, list):
            continue
        for package in packages[:MAX_LINES]:
            if isinstance(package, dict) and isinstance(package.get("name"), str) and \
                    isinstance(package.get("version"), str):
                version = _exact(f"{package['name']}=={package['version']}", engine)
                if version is not None:
                    return version
    return None


def _pipfile(data: Any, engine: str) -> str | None:
    default = data.get("default") if isinstance(data, dict) else None
    if not isinstance(default, dict):
        return None
    for package, spec in list(default.items())[:MAX_LINES]:
        version = spec.get("version") if isinstance(spec, dict) else None
        if isinstance(package, str) and isinstance(version, str):
            found = _exact(package + version, engine)
            if found is not None:
                return found
    return None


def _pyproject(data: Any, engine: str) -> str | None:
    project = data.get("project") if isinstance(data, dict) else None
    deps = project.get("dependencies") if isinstance(project, dict) else None
    if isinstance(deps, list):
        version = _requirements([d for d in deps[:MAX_LINES] if isinstance(d, str)], engine)
        if version is not None:
            return version
    tool = data.get("tool") if isinstance(data, dict) else None
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    table = poetry.get("dependencies") if isinstance(poetry, dict) else None
    if isinstance(table, dict):
        for package, spec in list(table.items())[:MAX_LINES]:
            if isinstance(package, str) and isinstance(spec, str) and \
                    spec.strip()[:1].isdigit():  # Poetry's bare "0.10.0" is an exact pin
                found = _exact(f"{package}=={spec.strip()}", engine)
                if found is not None:
                    return found
    return None


def _requirements(lines: list[str], engine: str) -> str | None:
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if not text or text.startswith("-"):
            continue
        version = _exact(text.split(";", 1)[0].strip(), engine)
        if version is not None:
            return version
    return None
