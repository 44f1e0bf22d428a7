"""kvlint's cache directory for small derived data (never required: losing it costs time)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``KVLINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvlint``, else ``~/.cache/kvlint``."""
    explicit = os.environ.get("KVLINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kvlint"
