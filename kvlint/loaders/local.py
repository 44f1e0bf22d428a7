"""Read a ``config.json`` from disk: a file, or a model directory that holds one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from kvlint.errors import InputError
from kvlint.loaders.files import MAX_CONFIG_BYTES, UnreadableFile, read_text

CONFIG_NAME = "config.json"


def config_path(path: Path) -> Path:
    """The config file for ``path``: itself, or ``path/config.json`` for a directory."""
    if path.is_dir():
        candidate = path / CONFIG_NAME
        if not os.path.lexists(candidate):  # anything else there is refused by read_json
            raise InputError(f"{path}: directory has no {CONFIG_NAME}")
        return candidate
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return path


def read_json(path: Path) -> Any:
    """Parse ``path`` as JSON, with a one-line error naming the file and position. Only a
    regular file of at most :data:`~kvlint.loaders.files.MAX_CONFIG_BYTES` is read; a UTF-8
    byte-order mark is allowed."""
    try:
        text = read_text(path, MAX_CONFIG_BYTES)
    except UnreadableFile as err:
        raise InputError(f"{path}: {err}") from None
    return parse_json(text, str(path))


def parse_json(text: str, source: str) -> Any:
    """``json.loads`` with one-line errors naming ``source``, for hostile text too: nesting
    deeper than Python's stack, or an integer longer than Python converts."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"{source}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        ) from None
    except RecursionError:
        raise InputError(f"{source}: invalid JSON: nested too deeply to read") from None
    except ValueError as err:  # int(): "Exceeds the limit (4300 digits) ..."
        detail = f"a number longer than {_digits_limit()} digits" if "digits" in str(err) \
            else " ".join(str(err).split())
        raise InputError(f"{source}: invalid JSON: {detail}") from None


def _digits_limit() -> int:
    """Python's limit on the digits of an integer read from text (4,300 by default)."""
    limit: int = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
    return limit


def read_config(path: Path) -> dict[str, Any]:
    """The JSON object of a config file or model directory."""
    file = config_path(path)
    value = read_json(file)
    if not isinstance(value, dict):
        raise InputError(f"{file}: expected a JSON object, got {type(value).__name__}")
    return value
