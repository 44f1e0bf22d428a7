"""Read a file from the Hugging Face Hub cache by path, without importing huggingface_hub.

The cache layout is huggingface_hub's documented format
(https://huggingface.co/docs/huggingface_hub/guides/manage-cache)::

    <cache>/models--<org>--<name>/refs/<branch or ref>      the commit sha the ref points at
    <cache>/models--<org>--<name>/snapshots/<sha>/<file>    the file at that commit

``<cache>`` is found from the environment as huggingface_hub finds it (``HF_HUB_CACHE``, the
legacy ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``), read at call time.
A revision is a ref name under ``refs/`` or a commit sha. The lookup mirrors
``huggingface_hub.try_to_load_from_cache``; importing huggingface_hub costs more than the rest
of ``kvlint lint`` on a locked model, so :mod:`kvlint.loaders.hub` asks this module first and
imports huggingface_hub only to download.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

__all__ = ["cache_dir", "cached_absent", "cached_file", "commit_of"]

_COMMIT: Final = re.compile(r"[0-9a-f]{40}")


def _expand(path: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(path)))


def cache_dir() -> Path:
    """The hub cache huggingface_hub would use with the current environment."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(name)
        if value:
            return _expand(value)
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface"
    )
    return _expand(home) / "hub"


def _safe_parts(text: str) -> bool:
    """A relative path of plain segments (no ``..``, no absolute path, no empty segment)."""
    parts = text.split("/")
    return bool(text) and not text.startswith("/") and "\\" not in text and \
        all(p not in ("", ".", "..") for p in parts)


def commit_of(repo_dir: Path, revision: str) -> str | None:
    """The commit sha ``revision`` (a ref under ``refs/`` or a sha) names in ``repo_dir``."""
    if not _safe_parts(revision):
        return None
    ref = repo_dir / "refs" / revision
    if ref.is_file():
        try:
            text = ref.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return text if _COMMIT.fullmatch(text) else None
    return revision if _COMMIT.fullmatch(revision) else None


def cached_file(repo_id: str, filename: str, revision: str | None = None, *,
                cache: Path | None = None) -> tuple[Path, str] | None:
    """``(path, commit)`` of ``filename`` of model repo ``repo_id`` at ``revision`` (default
    ``main``) in the cache, or ``None`` when it is not cached (a file lookup, no request)."""
    if not (_safe_parts(repo_id) and repo_id.count("/") <= 1 and _safe_parts(filename)):
        return None
    repo_dir = (cache or cache_dir()) / f"models--{repo_id.replace('/', '--')}"
    commit = commit_of(repo_dir, revision or "main")
    if commit is None:
        return None
    path = repo_dir / "snapshots" / commit / filename
    return (path, commit) if path.is_file() else None


def cached_absent(repo_id: str, filename: str, revision: str | None = None, *,
                  cache: Path | None = None) -> bool:
    """Whether the cache records that ``filename`` does not exist at ``revision`` (the
    ``.no_exist/<commit>/<file>`` marker huggingface_hub leaves after a 404)."""
    if not (_safe_parts(repo_id) and repo_id.count("/") <= 1 and _safe_parts(filename)):
        return False
    repo_dir = (cache or cache_dir()) / f"models--{repo_id.replace('/', '--')}"
    commit = commit_of(repo_dir, revision or "main")
    return commit is not None and (repo_dir / ".no_exist" / commit / filename).is_file()
