"""Questions about a path named by input (a model reference, a manifest's model), answered
without raising: a 300-character name (ENAMETOOLONG), an embedded NUL or an unreadable
directory is simply not an existing file."""

from __future__ import annotations

from pathlib import Path


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
