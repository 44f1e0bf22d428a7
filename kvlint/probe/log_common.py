"""What the start-up log probes of every engine share (:mod:`.run` for vLLM,
:mod:`.engine_log` for SGLang): the model's config and geometry, its target, and the engine
version a log is modelled at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvlint.errors import ConfigError, UsageError
from kvlint.linter import Target, default_config_defaults
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.loaders.models import LoadedConfig, load_config
from kvlint.model.geometry import AttentionGeometry

__all__ = ["loaded_config", "log_version", "target_of"]


def loaded_config(ref: str, revision: str | None, offline: bool
                  ) -> tuple[LoadedConfig, AttentionGeometry | None]:
    """The config and its geometry (``None`` when unresolvable: KV900 then says why)."""
    loaded = load_config(ref, revision=revision, offline=offline)
    try:
        return loaded, resolve_geometry(loaded.config, defaults=default_config_defaults())
    except ConfigError:
        return loaded, None


def target_of(loaded: LoadedConfig) -> Target:
    return Target(loaded.ref, "model", loaded.revision, loaded.path)


def log_version(engine_key: str, given: str | None, printed: str | None, notes: list[str],
                wording: tuple[str, str] | None = None, dated: str | None = None,
                config: Mapping[str, Any] | None = None) -> str | None:
    """The engine version a log is modelled at: the option's (a bad one is a usage error),
    else the version the log prints, else the release its lines allow (one kvlint cannot read
    is noted and the newest known used).

    A log that prints no version is placed by two things. Its wording: the reader's version
    range, from the engine's own format strings, so a V0 log is never modelled as the newest
    vLLM. Its date, where its lines carry a year (``dated``): no release published after it
    can have written it. With a date, kvlint models the newest release published by then
    within the wording's range (:func:`~kvlint.engines.release_dates.newest_released`);
    without one, the oldest release of the range: a line, once added, is printed by every
    later release until it is reworded, so a range's upper end is mostly "still printed
    today", while its lower end is set by the newest wording the log contains. Either way
    the note says what was assumed.

    The model (``config``) narrows the wording's range from below: the engine ran it, so the
    release serves its architecture; a range whose oldest release kvlint knows does not serve
    it starts at the oldest release kvlint read that does."""
    from kvlint.engines import load_engines, parse_version

    engine = load_engines()[engine_key]
    name = engine.display
    if given is None and printed is None and wording is not None and config is not None:
        wording = _serving(engine_key, name, wording, config, notes)
    if given is not None:
        try:
            parse_version(engine, given)
        except ValueError as err:
            raise UsageError(str(err)) from None
        return given
    if printed is None and dated is not None:
        found = _dated_version(engine_key, name, dated, wording, notes)
        if found is not None:
            return found
    if printed is None and wording is not None:
        low, high = wording
        notes.append(f"the log prints no {name} version; its wording is that of {name} {low} "
                     f"to {high}: kvlint modelled {low}, the oldest (give --engine-version)")
        try:
            parse_version(engine, low)
        except ValueError:
            return None
        return low
    if printed is None:
        notes.append(f"the log prints no {name} version: kvlint used the newest it knows "
                     "(give --engine-version)")
        return None
    try:
        parse_version(engine, printed)
    except ValueError:
        notes.append(f"the log's {name} version {printed!r} is not one kvlint reads: it used "
                     "the newest it knows (give --engine-version)")
        return None
    return printed


def _serving(engine_key: str, name: str, wording: tuple[str, str], config: Mapping[str, Any],
             notes: list[str]) -> tuple[str, str]:
    """``wording`` from the first release after the newest one kvlint read that does not
    serve the model, where the range's own oldest release does not serve it
    (:func:`kvlint.engines.architectures.judge`): the release that added it lies between
    that one and the oldest read that serves it. Its newest release when that bound is
    past the range."""
    from packaging.version import InvalidVersion, Version

    from kvlint.engines.architectures import judge, load
    from kvlint.engines.release_dates import next_release
    from kvlint.loaders.hf_config import text_part

    text, _ = text_part(dict(config))
    archs = config.get("architectures") or text.get("architectures") or []
    model_type = text.get("model_type") or config.get("model_type")
    low, high = wording
    verdict = judge(engine_key, low, [a for a in archs if isinstance(a, str)],
                    model_type if isinstance(model_type, str) else None)
    if verdict is None or verdict.status != "not-yet" or verdict.first is None:
        return wording
    try:
        first = Version(verdict.first)
        known = [Version(v) for v in load()["engines"][engine_key]["versions"] if v != "*"]
        before = max((v for v in known if v < first), default=None)
        bound = next_release(engine_key, str(before)) if before is not None else None
        if bound is None or Version(bound) <= Version(low):
            return wording
        past = Version(bound) > Version(high)
    except (InvalidVersion, KeyError):
        return wording
    start = high if past else bound
    notes.append(f"{name} {before} does not serve {verdict.arch} and {verdict.first} does "
                 f"(the releases kvlint read): the log's range starts at {start}"
                 + (", the newest its wording allows" if past else ""))
    return start, high


def _dated_version(engine_key: str, name: str, dated: str, wording: tuple[str, str] | None,
                   notes: list[str]) -> str | None:
    """The newest release published by the log's day within its wording's range (``None``
    where the table has no such release: the caller falls back to the wording alone)."""
    from datetime import date

    from kvlint.engines.release_dates import newest_released

    try:
        day = date.fromisoformat(dated)
    except ValueError:
        return None
    low, high = wording if wording is not None else (None, None)
    found = newest_released(engine_key, day, low, high)
    if found is None:
        return None
    worded = f" and worded as {name} {low} to {high}" if wording is not None else ""
    notes.append(f"the log prints no {name} version; its lines are dated {dated}{worded}: "
                 f"kvlint modelled {found}, the newest release published by then (PyPI's "
                 "release dates; give --engine-version)")
    return found
