"""Every reporter test runs offline with an empty Hub cache and kvlint cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reporters import isolate


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)
