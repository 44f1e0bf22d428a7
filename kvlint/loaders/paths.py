"""Questions about a path named by input (a model reference, a manifest's model), answered
without raising: a 300-character name (ENAMETOOLONG), an embedded NUL or an unreadable
directory is simply not an existing file."""

from __future__ import annotations

from pathlib import Path

from kvlint.hub_refs import looks_like_hub_id, split_hub_ref


def exists(path: Path) -> bool:
    """``path.exists()``, False where the OS refuses the name."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    """``path.is_file()``, False where the OS refuses the name."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """``path.is_dir()``, False where the OS refuses the name."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def hub_reference(ref: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` when ``ref`` names a Hub model, as the config loader reads it
    (an existing path is a local model, a name with path syntax is not a Hub id)."""
    if not ref or exists(Path(ref)) or not looks_like_hub_id(ref):
        return None
    return split_hub_ref(ref)
