"""Shared test helpers: fixture paths and geometry from fixture configs."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from kvlint.loaders.hf_config import resolve_geometry
from kvlint.loaders.transformers_defaults import TransformersDefaults
from kvlint.model.geometry import AttentionGeometry

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "fixtures" / "configs"
EXPECTED = CONFIGS / "expected.json"


def fixture_config(name: str) -> dict[str, Any]:
    """A fixture config by file name, with or without ``.json``."""
    file = CONFIGS / (name if name.endswith(".json") else f"{name}.json")
    value: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return value


@cache
def geometry(name: str) -> AttentionGeometry:
    return resolve_geometry(fixture_config(name), defaults=TransformersDefaults())


def expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXPECTED.read_text(encoding="utf-8"))
    data.pop("_about")
    return data
