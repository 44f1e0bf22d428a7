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


NO_CACHE_ENV = "KVLINT_NO_CACHE"
"""Set (to anything but empty, ``0``, ``false`` or ``no``): ``kvlint lint`` and ``kvlint scan``
neither read nor write their result caches (:mod:`kvlint.lint_cache`,
:mod:`kvlint.scan_cache`), as with ``--no-cache``."""


def result_cache_disabled() -> bool:
    """Whether ``KVLINT_NO_CACHE`` turns the result caches off."""
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false", "no")
