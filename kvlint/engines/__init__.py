"""The engine capability table (``engines.toml``) with typed, version-aware lookup.

Each fact in the table names its source and an evidence mark (V read in source, D docs or
PR, I inferred/unverified). :func:`behaviour` resolves the facts that matter for one model
on one engine version into a pure :class:`~kvlint.model.serving.EngineBehaviour`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from kvlint.engine_names import ENGINES
from kvlint.model.kv import KV_SHARDINGS, MLA_CACHES, is_latent
from kvlint.model.serving import EngineBehaviour

UNPINNED = ("latest", "nightly", "main", "master", "head", "unknown")
"""Version spellings that name no version: the newest known is assumed (KV304)."""

UNKNOWN_VERSION = "unknown"
"""A manifest's engine whose version nothing names (a custom tag, another engine's image):
the newest known is assumed, and KV305 judges it by every version kvlint knows."""


class EngineDataError(ValueError):
    """engines.toml is malformed (a packaging bug, caught by the tests)."""


@dataclass(frozen=True)
class Fact:
    """One versioned entry of the table: the first entry whose versions (and model types)
    match decides."""

    versions: SpecifierSet
    values: Mapping[str, Any]
    source: str
    evidence: str
    note: str = ""
    model_types: tuple[str, ...] = ("*",)

    def matches(self, version: Version, model_type: str | None = None) -> bool:
        if not self.versions.contains(version, prereleases=True):
            return False
        return model_type is None or "*" in self.model_types or model_type in self.model_types

    @property
    def verified(self) -> bool:
        return self.evidence in ("V", "D")


@dataclass(frozen=True)
class Engine:
    key: str
    display: str
    latest: Version
    latest_source: str
    kv_sharding: tuple[Fact, ...]
    mla: tuple[Fact, ...]
    fp8_mla: tuple[Fact, ...]
    sliding_window: tuple[Fact, ...]
    flags: Mapping[str, tuple[str, ...]]
    env: Mapping[str, tuple[str, ...]]
    dp_attention: Mapping[str, Any]
    gpu_memory_utilization: float | None
    memory_fraction_semantics: str | None
    pipeline_parallel: bool
    allocates_shared_kv_layers: bool = False
    """Whether the engine gives layers that reuse another layer's cache (Gemma-3n/Gemma-4
    ``num_kv_shared_layers``) a cache of their own anyway (sized for every layer)."""
    context_limit: tuple[Fact, ...] = ()
    """How the engine derives a model's maximum sequence length, by version (KV703)."""
    utilization_by_version: tuple[Fact, ...] = ()
    """The default ``gpu_memory_utilization`` by version, where it changed
    (``gpu_memory_utilization_by_version``); :attr:`gpu_memory_utilization` otherwise."""
    kv_cache_dtype: tuple[Fact, ...] = ()
    """KV cache dtypes the engine refuses, by version and backend (``kv_cache_dtype``:
    ``refuses``, ``backends``)."""
    checked: str = ""
    """What of kvlint's figures for the engine were checked against the engine's own code
    run here, and what rests on reading its source (``checked``; the README's table)."""

    def gpu_memory_utilization_at(self, version: str | None) -> float | None:
        """The engine's default memory fraction at ``version`` (the newest known when
        ``None`` or unpinned): the by-version table's entry, else the engine's one value."""
        try:
            parsed, _ = parse_version(self, version)
        except ValueError:
            parsed = self.latest
        fact = self._first(self.utilization_by_version, parsed)
        if fact is not None and isinstance(fact.values.get("value"), int | float):
            return float(fact.values["value"])
        return self.gpu_memory_utilization

    def _first(self, facts: Sequence[Fact], version: Version,
               model_type: str | None = None) -> Fact | None:
        return next((f for f in facts if f.matches(version, model_type)), None)

    def kv_sharding_at(self, version: Version) -> Fact:
        fact = self._first(self.kv_sharding, version)
        if fact is None:  # pragma: no cover - the data tests require a catch-all entry
            raise EngineDataError(f"{self.key}: no kv_sharding entry for {version}")
        return fact

    def mla_at(self, version: Version, model_type: str) -> Fact | None:
        return self._first(self.mla, version, model_type)

    def fp8_mla_at(self, version: Version) -> Fact | None:
        return self._first(self.fp8_mla, version)

    def sliding_window_at(self, version: Version) -> Fact | None:
        return self._first(self.sliding_window, version)

    def context_limit_at(self, version: Version) -> Fact | None:
        return self._first(self.context_limit, version)

    def kv_cache_dtype_at(self, version: Version, backend: str | None = None) -> Fact | None:
        """The first ``kv_cache_dtype`` entry for ``version`` whose ``backends`` (none listed:
        every backend) contain ``backend``; an entry that names backends is skipped when the
        backend is not known (``None``)."""
        for fact in self.kv_cache_dtype:
            if not fact.matches(version):
                continue
            backends = _strings(fact.values.get("backends"))
            if not backends or (backend is not None and backend.lower() in backends):
                return fact
        return None

    def judging_versions(self) -> tuple[str, ...]:
        """One version in each range of versions over which the table's facts are constant
        (each fact's lower bounds and exact versions, the oldest range's start, the newest
        known), oldest first: an engine whose version is unknown is judged by all of them."""
        found = {self.latest, Version("0")}
        for facts in (self.kv_sharding, self.mla, self.fp8_mla, self.sliding_window,
                      self.context_limit, self.kv_cache_dtype):
            for fact in facts:
                for spec in fact.versions:
                    if spec.operator in (">=", "==", "===") and "*" not in spec.version:
                        found.add(Version(spec.version))
        return tuple(str(v) for v in sorted(v for v in found if v <= self.latest))

    def latent_versions(self, model_type: str) -> SpecifierSet | None:
        """The versions in which this engine caches ``model_type``'s MLA latent."""
        specs = [f.versions for f in self.mla
                 if f.values.get("cache") == "latent"
                 and ("*" in f.model_types or model_type in f.model_types)]
        return specs[0] if specs else None


CONTEXT_LIMIT_KEYS = ("derivation", "keys", "unscaled_rope_types", "yarn_from_original",
                      "refuses", "override_env", "override_values")


def _spec(value: Any, where: str) -> SpecifierSet:
    try:
        return SpecifierSet(value or "")
    except (InvalidSpecifier, TypeError) as err:
        raise EngineDataError(f"{where}: bad version specifier {value!r}: {err}") from None


def _version(value: Any, where: str) -> Version:
    try:
        return Version(str(value))
    except InvalidVersion as err:
        raise EngineDataError(f"{where}: bad version {value!r}: {err}") from None


def _facts(entries: Any, where: str, value_keys: tuple[str, ...]) -> tuple[Fact, ...]:
    facts = []
    for i, entry in enumerate(entries or []):
        here = f"{where}[{i}]"
        if not isinstance(entry, Mapping) or "source" not in entry:
            raise EngineDataError(f"{here}: every entry needs a source")
        facts.append(Fact(
            versions=_spec(entry.get("versions", ""), here),
            values={k: entry[k] for k in value_keys if k in entry},
            source=str(entry["source"]),
            evidence=str(entry.get("evidence", "I")),
            note=str(entry.get("note", "")),
            model_types=tuple(entry.get("model_types", ["*"])),
        ))
    return tuple(facts)


def _engine(key: str, data: Mapping[str, Any]) -> Engine:
    where = f"engines.toml [engines.{key}]"
    sharding = list(data.get("kv_sharding_by_version", []))
    sharding.append({"versions": "", "kv_sharding": data.get("kv_sharding"),
                     "source": data.get("kv_sharding_source", ""),
                     "evidence": data.get("kv_sharding_evidence", "I")})
    kv_sharding = _facts(sharding, f"{where}.kv_sharding", ("kv_sharding",))
    for fact in kv_sharding:
        if fact.values.get("kv_sharding") not in KV_SHARDINGS:
            raise EngineDataError(f"{where}: kv_sharding must be one of {KV_SHARDINGS}")
    mla = _facts(data.get("mla"), f"{where}.mla", ("cache",))
    for fact in mla:
        if fact.values.get("cache") not in MLA_CACHES:
            raise EngineDataError(f"{where}.mla: cache must be one of {MLA_CACHES}")
    flags = data.get("flags", {})
    env = flags.get("env", {}) if isinstance(flags, Mapping) else {}
    return Engine(
        key=key,
        display=str(data.get("display", key)),
        latest=_version(data.get("latest"), f"{where}.latest"),
        latest_source=str(data.get("latest_source", "")),
        kv_sharding=kv_sharding,
        mla=mla,
        fp8_mla=_facts(data.get("fp8_mla"), f"{where}.fp8_mla", ("supported",)),
        sliding_window=_facts(data.get("sliding_window"), f"{where}.sliding_window",
                              ("windowed", "full_pool_model_types", "pool_share",
                               "windowed_architectures")),
        flags={k: tuple(v) for k, v in flags.items() if isinstance(v, list)},
        env={k: tuple(v) for k, v in env.items()},
        dp_attention=dict(data.get("dp_attention", {})),
        gpu_memory_utilization=data.get("gpu_memory_utilization"),
        memory_fraction_semantics=data.get("memory_fraction_semantics"),
        pipeline_parallel=bool(data.get("pipeline_parallel", True)),
        allocates_shared_kv_layers=bool(data.get("allocates_shared_kv_layers", False)),
        context_limit=_facts(data.get("context_limit"), f"{where}.context_limit",
                             CONTEXT_LIMIT_KEYS),
        utilization_by_version=_facts(data.get("gpu_memory_utilization_by_version"),
                                      f"{where}.gpu_memory_utilization_by_version",
                                      ("value",)),
        kv_cache_dtype=_facts(data.get("kv_cache_dtype"), f"{where}.kv_cache_dtype",
                              ("refuses", "backends")),
        checked=str(data.get("checked", "")),
    )


MAX_TABLE_CACHE_BYTES = 4 * 1024 * 1024
"""The cached copy of the parsed table (about 50 KB) is not read when larger."""
_TABLE_MAGIC = b"kvlint-engines-1 "


def _table_key(text: str) -> bytes:
    """The key that binds a cached copy of the parsed table to the shipped ``engines.toml``
    of this installation: its text and the identity of the installed file (device, inode,
    change time in ns: a copy written by another installation, such as a CI cache restored
    on a fresh runner, does not match, and a change time cannot be set back)."""
    import hashlib

    here = resources.files("kvlint.engines").joinpath("engines.toml")
    parts = [hashlib.sha256(text.encode()).digest()]
    try:
        info = os.stat(os.fspath(here))  # type: ignore[call-overload]
        parts.append(f"{info.st_dev}:{info.st_ino}:{info.st_ctime_ns}".encode())
    except (OSError, TypeError):
        parts.append(b"no-file")
    return hashlib.sha256(b"\0".join(parts)).digest()


def _read_table() -> dict[str, Any]:
    """engines.toml as data.

    Parsing TOML costs ~20 ms of every run (importing tomllib and parsing), so the parsed
    table is kept as JSON in kvlint's cache dir (``engines-<hash>.json``). The cached copy is
    used only when it is bound to the shipped table: its first line carries an HMAC of the
    JSON that follows, keyed by the shipped file's text and the installed file's identity
    (:func:`_table_key`), checked on read. It is read only as a private regular file of the
    user in a trusted directory (:func:`kvlint.cache.read_private`,
    :func:`kvlint.cache.trusted_dir`), bounded, and never under ``--no-cache`` /
    ``KVLINT_NO_CACHE``; it is written atomically, never through a link."""
    import hashlib
    import hmac
    import json

    from kvlint import cache

    text = resources.files("kvlint.engines").joinpath("engines.toml").read_text("utf-8")
    data: dict[str, Any]
    if cache.reads_disabled():
        data = tomllib.loads(text)
        return data
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    directory = cache.cache_dir()
    cached = directory / f"engines-{digest}.json"
    key = _table_key(text)
    if cache.trusted_dir(directory):
        try:
            raw = cache.read_private(cached, MAX_TABLE_CACHE_BYTES)
            head, _, body = raw.partition(b"\n")
            mac = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
            if head.startswith(_TABLE_MAGIC) and \
                    hmac.compare_digest(head[len(_TABLE_MAGIC):], mac):
                loaded = json.loads(body)
                if isinstance(loaded, dict) and isinstance(loaded.get("engines"), dict):
                    data = loaded
                    return data
        except (cache.CacheFileError, ValueError, RecursionError):
            pass
    data = tomllib.loads(text)
    try:
        body = json.dumps(data, separators=(",", ":")).encode()
    except (TypeError, ValueError):  # pragma: no cover - TOML dates are not in the table
        return data
    mac = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
    cache.write_private(cached, _TABLE_MAGIC + mac + b"\n" + body)
    return data


@cache
def load_engines() -> Mapping[str, Engine]:
    """Every engine of the shipped table, by key."""
    table = _read_table().get("engines", {})
    missing = [key for key in ENGINES if key not in table]
    if missing:
        raise EngineDataError(f"engines.toml lacks {', '.join(missing)}")
    return {key: _engine(key, table[key]) for key in ENGINES}


def parse_version(engine: Engine, version: str | None) -> tuple[Version, bool]:
    """``(version, pinned)``: the given version, or the newest known when none/latest.
    Raises ``ValueError`` for a string that is not a version."""
    if version is None or version.strip().lower() in UNPINNED:
        return engine.latest, False
    text = version.strip()
    text = text[1:] if text[:1] in ("v", "b") and text[1:2].isdigit() else text
    try:
        return Version(text), True
    except InvalidVersion:
        raise ValueError(
            f"--engine-version {version!r} is not a version (like 0.6.3, v0.6.3, latest)"
        ) from None


def _spec_text(display: str, spec: SpecifierSet | None) -> str | None:
    if spec is None:
        return None
    text = str(spec) or "all versions"
    return f"{display} {text.replace('>=', '≥ ').replace('<=', '≤ ').replace(',', ', ')}"


def behaviour(engine_key: str | None, version: str | None, model_type: str,
              *, is_mla: bool, architecture: str | None = None) -> EngineBehaviour:
    """What ``engine_key`` at ``version`` does with a model of ``model_type``.

    ``architecture`` (the config's ``architectures[0]``, when known) decides the sliding
    window where one model type is served by two builders (``windowed_architectures``).

    No engine: the newest vLLM kvlint knows. Raises ``ValueError`` for an unknown engine or
    an unparsable version.
    """
    named = engine_key is not None
    key = (engine_key or "vllm").lower()
    if key not in ENGINES:
        raise ValueError(f"unknown engine {engine_key!r}; expected one of {', '.join(ENGINES)}")
    engine = load_engines()[key]
    parsed, pinned = parse_version(engine, version)
    sharding = engine.kv_sharding_at(parsed)
    facts: dict[str, Fact] = {"kv_sharding": sharding}
    mla_cache = "latent"
    if is_mla:
        mla = engine.mla_at(parsed, model_type)
        if mla is not None:
            facts["mla"] = mla
            mla_cache = str(mla.values["cache"])
    fp8 = engine.fp8_mla_at(parsed) if is_mla else None
    if fp8 is not None:
        facts["fp8_mla"] = fp8
    window = engine.sliding_window_at(parsed)
    if window is not None:
        facts["sliding_window"] = window
    fp8_supported = fp8.values.get("supported") if fp8 is not None else None
    return EngineBehaviour(
        engine=key,
        display=engine.display,
        version=str(parsed),
        pinned=pinned,
        named=named,
        unknown=version is not None and version.strip().lower() == UNKNOWN_VERSION,
        kv_sharding=str(sharding.values["kv_sharding"]),
        pipeline_parallel=engine.pipeline_parallel,
        allocates_shared_kv_layers=engine.allocates_shared_kv_layers,
        mla_cache=mla_cache,
        mla_latent_versions=_spec_text(engine.display, engine.latent_versions(model_type)),
        mla_alternatives=latent_engines(model_type) if not is_latent(mla_cache) else (),
        fp8_mla=bool(fp8_supported) if isinstance(fp8_supported, bool) else None,
        fp8_mla_versions=_spec_text(engine.display, next(
            (f.versions for f in engine.fp8_mla if f.values.get("supported") is True), None)),
        windowed_sliding_cache=_windowed(window, model_type, architecture) if window else True,
        windowed_pool_share=_share(window.values.get("pool_share")) if window else None,
        windowed_versions=_spec_text(engine.display, next(
            (f.versions for f in engine.sliding_window if f.values.get("windowed") is True
             and _windowed(f, model_type, architecture)),
            None)),
        unverified=tuple(name for name, fact in facts.items() if not fact.verified),
        sources=tuple((name, fact.source) for name, fact in facts.items()),
    )


def _share(value: object) -> Fraction | None:
    """A table's share (0 < share <= 1) as an exact fraction of its decimal text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return Fraction(str(value))
    return None


def _windowed(fact: Fact, model_type: str, architecture: str | None) -> bool:
    """Whether the sliding-window entry ``fact`` keeps windowed caches for this model: its
    ``windowed``, unless the model type has a full-length pool (``full_pool_model_types``)
    and the architecture is not one of ``windowed_architectures``."""
    if not bool(fact.values.get("windowed", True)):
        return False
    if model_type not in _strings(fact.values.get("full_pool_model_types")):
        return True
    return architecture is not None and \
        architecture in _strings(fact.values.get("windowed_architectures"))


def refused_kv_cache_dtype(engine_key: str, version: str | None, dtype: str,
                           *, backend: str | None = None) -> Fact | None:
    """The ``kv_cache_dtype`` entry by which ``engine_key`` at ``version`` (the newest known
    when ``None`` or unpinned) on ``backend`` refuses the KV cache dtype ``dtype`` (kvlint's
    ``--kv-cache-dtype`` name), or ``None`` when it accepts it or the table says nothing.
    ``backend`` ``None``: entries that name backends do not apply. Raises ``ValueError`` for
    an unknown engine or an unparsable version."""
    key = engine_key.lower()
    if key not in ENGINES:
        raise ValueError(f"unknown engine {engine_key!r}; expected one of {', '.join(ENGINES)}")
    engine = load_engines()[key]
    parsed, _ = parse_version(engine, version)
    fact = engine.kv_cache_dtype_at(parsed, backend)
    if fact is None or dtype.strip().lower() not in _strings(fact.values.get("refuses")):
        return None
    return fact


def default_backend(engine_key: str, version: str | None,
                    architecture: str | None) -> str | None:
    """The backend ``lmdeploy serve`` picks for ``architecture`` at ``version`` when no
    ``--backend`` is given: ``turbomind`` where TurboMind serves it (``architectures.json``'s
    ``turbomind`` list; ``lmdeploy/archs.py`` ``autoget_backend``), else ``pytorch``. A version
    between two known ones is judged by both (``None`` when they differ); ``None`` for other
    engines, an unknown architecture or an unparsable version."""
    if engine_key.lower() != "lmdeploy" or not architecture:
        return None
    from kvlint.engines import architectures

    known = architectures.load().get("engines", {}).get("lmdeploy", {}).get("versions", {})
    if not known:
        return None
    try:
        parsed, _ = parse_version(load_engines()["lmdeploy"], version)
    except ValueError:
        return None
    picks = {"turbomind" if architecture in known[v].get("turbomind", ()) else "pytorch"
             for v in architectures.bracket(list(known), parsed)}
    return picks.pop() if len(picks) == 1 else None


def _strings(value: object) -> tuple[str, ...]:
    """A table's list of names (anything else: none)."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def latent_engines(model_type: str) -> tuple[str, ...]:
    """``vLLM ≥ 0.7.1``-style texts of every engine whose newest version caches this MLA
    model type's latent (for KV301's fix)."""
    out = []
    for engine in load_engines().values():
        fact = engine.mla_at(engine.latest, model_type)
        if fact is not None and fact.values.get("cache") == "latent":
            out.append(_spec_text(engine.display, engine.latent_versions(model_type)) or "")
    return tuple(t for t in out if t)
