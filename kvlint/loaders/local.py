"""Read a ``config.json`` from disk: a file, or a model directory that holds one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvlint.errors import InputError

CONFIG_NAME = "config.json"


def config_path(path: Path) -> Path:
    """The config file for ``path``: itself, or ``path/config.json`` for a directory."""
    if path.is_dir():
        candidate = path / CONFIG_NAME
        if not candidate.is_file():
            raise InputError(f"{path}: directory has no {CONFIG_NAME}")
        return candidate
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return path


def read_json(path: Path) -> Any:
    """Parse ``path`` as JSON, with a one-line error naming the file and position."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        ) from None


def read_config(path: Path) -> dict[str, Any]:
    """The JSON object of a config file or model directory."""
    file = config_path(path)
    value = read_json(file)
    if not isinstance(value, dict):
        raise InputError(f"{file}: expected a JSON object, got {type(value).__name__}")
    return value
