"""The result cache of ``kvlint lint``: each manifest's results, reused while nothing that
can change them has changed (like ruff's cache).

A file's entry is found by a digest of the run's *fingerprint* (kvlint's version and the
content of every file of the installed package, the Python and transformers versions,
the selected rules, the base serving plan, the models map, ``--offline``, the lock, the
settings, the working directory and the plugins), the file's path and its bytes. It holds
the file's results (before suppressions, which are applied on every run) and what the
file's models resolved to: for each served model the digest of the config it loaded (its
bytes, source, revision and path), and when a GPU was sized, of the checkpoint size found.
An entry is used only when every model of the file resolves to the same digests in this run
(each distinct model is resolved once per run, as without the cache), and every other file
its parser read (a Ray Serve config's LLM config files) reads the same (its text, or why it
could not be read, and whether it stays inside the tree). A model that failed to load for good
(a malformed config, a name that is no repo id) resolves to a digest of its error: the entry
is used while it fails the same way.

Never stored: a file that could not be read; a file whose parser read another file without
recording which; a file any of whose models could not be asked about (the Hub unreachable,
offline without a cached copy: that may change without the file changing, and the run exits
2) or whose checkpoint size lookup failed other than with "not cached"; a file with a
result that looked for a checkpoint file outside the key (KV702's ``--quantization``); runs
with third-party plugins (their parsers and rules may read anything). Network answers enter
the key by content (the config's bytes), so a success is safe to reuse, and a failure to
reach the Hub is never stored.

Entries live in one file per fingerprint under ``cache_dir()/lint``, read and written as
:mod:`kvlint.cache.results` describes (bounded, atomic, a restricted unpickler, unchanged files
found by ``stat``); each entry's structure is checked before use (lines and columns
included: a number no report can print is refused).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from kvlint.cache.conform import conforms
from kvlint.cache.results import (
    ResultCache,
    Signature,
    digest,
    position,
    signature,
    source_stamp,
)
from kvlint.cache.results import fingerprint as _fingerprint
from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.linter import ModelResult, Target
from kvlint.manifests.base import Located, Unresolved
from kvlint.model.capacity import Capacity
from kvlint.model.serving import KvAnalysis, ServingPlan

__all__ = ["FORMAT", "Dependency", "Entry", "LintCache", "Signature", "digest",
           "fingerprint", "signature", "source_stamp"]

FORMAT = 3
"""Bumped when an entry's layout changes (old files are then ignored)."""


@dataclass(frozen=True)
class Dependency:
    """One served model of a file and what it resolved to."""

    model: Located[str] | Unresolved | None
    """``ServedModel.model``."""
    path: str
    """``ServedModel.path`` (local model paths are relative to it)."""
    sized: bool
    """Whether its plan sized a GPU (then the checkpoint size is part of ``identity``)."""
    identity: str


@dataclass(frozen=True)
class Entry:
    """The cached results of one file."""

    path: str
    dependencies: tuple[Dependency, ...]
    records: tuple[tuple[tuple[Any, ...] | None, ModelResult], ...]
    """``(served key, result)`` per served model (the key de-duplicates models another file
    also names: ``(path, line, document, role, model)``); ``None`` for a problem result."""
    markers: bool
    """Whether the file holds a suppression marker (then it is read for suppressions)."""
    used: float = 0.0
    files: tuple[tuple[str, str], ...] = ()
    """``(path, state)`` of each other file its parser read (a Ray Serve config's LLM
    config files, :func:`~kvlint.loaders.files.read_referenced`): the entry is used only
    while each reads the same."""


def _transformers_stamp() -> tuple[str, str] | None:
    """Where the installed transformers is, and a digest of its ``__init__.py`` (which holds
    its version): found without importing it or reading every package's metadata. Config
    defaults kvlint's table lacks come from it."""
    from importlib.util import find_spec

    try:
        spec = find_spec("transformers")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        with open(spec.origin, "rb") as handle:
            return spec.origin, digest(handle.read())
    except OSError:
        return None


def fingerprint(parts: Iterable[object]) -> str:
    """The run's fingerprint: ``parts`` (what the caller knows changes findings), the installed
    transformers (config defaults kvlint's table lacks come from it) and what every cache
    shares (:func:`kvlint.cache.results.fingerprint`)."""
    return _fingerprint("lint", FORMAT, (_transformers_stamp(), *parts))


# ----------------------------------------------------------------------------- reading back
def _optional(value: object, kind: type | tuple[type, ...]) -> bool:
    return value is None or isinstance(value, kind)


def _valid_finding(finding: object) -> bool:
    if type(finding) is not Finding:
        return False
    f = finding.__dict__  # every field at once (a missing one fails the check)
    return isinstance(f["code"], str) and isinstance(f["name"], str) and \
        type(f["severity"]) is Severity and isinstance(f["message"], str) and \
        (f["path"] is None or isinstance(f["path"], str)) and position(f["line"]) and \
        position(f["column"]) and position(f["end_line"]) and type(f["data"]) is dict \
        and _valid_suggestion(f["suggestion"])


def _valid_suggestion(suggestion: object) -> bool:
    return suggestion is None or (type(suggestion) is Suggestion and isinstance(
        suggestion.message, str) and type(suggestion.serving) is dict)


def _valid_result(result: object) -> bool:
    if type(result) is not ModelResult:
        return False
    t = result.target
    return type(t) is Target and isinstance(t.ref, str) and \
        (t.path is None or isinstance(t.path, str)) and position(t.line) and \
        type(result.plan) is ServingPlan and _optional(result.analysis, KvAnalysis) and \
        _optional(result.capacity, Capacity) and _optional(result.config_error, str) and \
        result.probe is None and result.unsettled is False and \
        type(result.notes) is tuple and \
        all(isinstance(n, str) for n in result.notes) and \
        type(result.findings) is tuple and all(map(_valid_finding, result.findings))


def _valid_entry(key: object, entry: object) -> bool:
    if not isinstance(key, str) or len(key) != 64 or not isinstance(entry, Entry):
        return False
    if not isinstance(entry.path, str) or not isinstance(entry.markers, bool) or \
            not isinstance(entry.used, float) or not isinstance(entry.dependencies, tuple) \
            or not isinstance(entry.records, tuple):
        return False
    for dep in entry.dependencies:
        if not isinstance(dep, Dependency) or not isinstance(dep.path, str) or \
                not isinstance(dep.sized, bool) or not isinstance(dep.identity, str):
            return False
        model = dep.model
        if not (model is None or (isinstance(model, Located) and isinstance(model.value, str))
                or (isinstance(model, Unresolved) and isinstance(model.text, str)
                    and isinstance(model.reason, str))):
            return False
    if not isinstance(entry.files, tuple) or not all(
            isinstance(f, tuple) and len(f) == 2 and isinstance(f[0], str)
            and isinstance(f[1], str) for f in entry.files):
        return False
    for record in entry.records:
        if not isinstance(record, tuple) or len(record) != 2:
            return False
        served, result = record
        if served is not None and not (isinstance(served, tuple) and len(served) == 5
                                       and isinstance(served[0], str)):
            return False
        if not _valid_result(result):
            return False
    return True


@dataclass
class LintCache(ResultCache[Entry]):
    """The lint entries of one fingerprint (:class:`~kvlint.cache.results.ResultCache`)."""

    KIND: ClassVar[str] = "lint"
    LAYOUT: ClassVar[int] = FORMAT

    def valid(self, key: str, entry: object) -> bool:
        # the checks a report relies on, then every field as declared, bounded
        return _valid_entry(key, entry) and conforms(entry, Entry)

    def renewed(self, entry: Entry, now: float) -> Entry:
        return dataclasses.replace(entry, used=now)

    def last_used(self, entry: Entry) -> float:
        return entry.used
