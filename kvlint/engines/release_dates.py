"""The day each engine release was published (``release_dates.json``, generated from PyPI by
:mod:`kvlint.generators.release_dates`), to date a start-up log that prints no version.

A log whose lines carry a date (SGLang's ``[2025-10-16 09:06:10 TP0]``, LMDeploy's
``2024-09-26 08:44:22,123 - lmdeploy``, TensorRT-LLM's ``[10/16/2025-09:06:10]``; vLLM's
``INFO 10-16`` has no year) cannot come from a release published after that day. Within the
release range the log's wording allows, kvlint models the newest release published by then:
an upper bound on what the poster ran, and the usual case (people install the current
release). A guess all the same; the note says so and ``--engine-version`` overrides it.
"""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from importlib import resources

from packaging.version import InvalidVersion, Version

DATES_FILE = "release_dates.json"


@cache
def _table() -> dict[str, tuple[tuple[Version, str, date], ...]]:
    raw = json.loads(resources.files("kvlint.engines").joinpath(DATES_FILE)
                     .read_text(encoding="utf-8"))
    out: dict[str, tuple[tuple[Version, str, date], ...]] = {}
    for key, entry in raw["engines"].items():
        rows = []
        for text, day in entry["releases"].items():
            try:
                rows.append((Version(text), text, date.fromisoformat(day)))
            except (InvalidVersion, ValueError):
                continue
        out[key] = tuple(sorted(rows))
    return out


def released(engine_key: str, version: str) -> date | None:
    """The day ``version`` of ``engine_key`` was published (``None``: not in the table)."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    return next((day for v, _, day in _table().get(engine_key, ()) if v == wanted), None)


def newest_released(engine_key: str, day: date, low: str | None = None,
                    high: str | None = None) -> str | None:
    """The newest release of ``engine_key`` published on or before ``day`` and within
    ``[low, high]`` (either bound may be ``None``: open). ``None``: no release fits (the
    log's date is older than every release its wording allows, or the engine is not in the
    table)."""
    lo = _version(low)
    hi = _version(high)
    fitting = [text for v, text, published in _table().get(engine_key, ())
               if published <= day and (lo is None or v >= lo) and (hi is None or v <= hi)]
    return fitting[-1] if fitting else None


def next_release(engine_key: str, after: str) -> str | None:
    """The oldest release of ``engine_key`` newer than ``after`` (``None``: none in the
    table, or ``after`` is not a version)."""
    low = _version(after)
    if low is None:
        return None
    return next((text for v, text, _ in sorted(_table().get(engine_key, ()))
                 if v > low), None)


def _version(text: str | None) -> Version | None:
    if text is None:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def newest_allowed(engine_key: str, specifier: str) -> str | None:
    """The newest final release of ``engine_key`` that a pip specifier allows (``==0.6.*``
    -> ``0.6.6.post1``), as pip installs it today; ``None`` when none in the table does, the
    specifier is not one, or the engine is not in the table."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        allowed = SpecifierSet(specifier)
    except InvalidSpecifier:
        return None
    fitting = [text for v, text, _ in _table().get(engine_key, ()) if v in allowed]
    return fitting[-1] if fitting else None


def releases(engine_key: str) -> tuple[str, ...]:
    """Every release of ``engine_key`` in the table, oldest first."""
    return tuple(text for _, text, _ in _table().get(engine_key, ()))


def newest(engine_key: str) -> str | None:
    """The newest release of ``engine_key`` in the table."""
    rows = _table().get(engine_key, ())
    return rows[-1][1] if rows else None
