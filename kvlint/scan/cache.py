"""The result cache of ``kvlint scan``: each Python file's analysis, reused while the file and
kvlint are unchanged (like ruff's cache).

What the analyzer finds in a file depends on the file's bytes and path alone (it reads no
other file, and the rules selected, the settings and suppressions are applied to its findings
afterwards, on every run). So an entry is found by a digest of the fingerprint (kvlint's
version and the content of every file of the installed package, the Python version, whose
``ast`` parses the file) and the file's path and bytes, and an unchanged file is found by its
``stat`` signature without reading it (:mod:`kvlint.cache.results`). An entry holds the
file's :class:`FileOutcome`: its findings, or why it is not valid
Python, and its suppression comments.

Never stored: a file that could not be read, an analysis that failed (a kvlint bug, or memory
run out), a file that changed while it was analysed. A cache file is checked entry by entry
before use: only the analyzer's codes, its data fields and printable lines and columns
(:func:`_valid_outcome`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from kvlint.cache.conform import conforms
from kvlint.cache.results import ResultCache, fingerprint, position
from kvlint.scan.findings import CODES, SourceFinding
from kvlint.suppress import Directive

LAYOUT = 1
"""Bumped when an entry's layout changes (old files are then ignored)."""


@dataclass(frozen=True)
class FileOutcome:
    """What analysing one file gave: a problem (unreadable, invalid Python, an analyzer
    failure) or its findings, and its suppression comments when it has a suppression marker
    (``None`` when it has none). Small and picklable: a worker process sends it back."""

    problem: str | None = None
    findings: tuple[SourceFinding, ...] = ()
    suppressions: list[Directive] | None = None
    reusable: bool = True
    """Whether it follows from the file's bytes alone (not for a file that could not be
    read or an analysis that failed): only then is it cached."""

_DATA_FIELDS = frozenset({"consumer_line", "consumer", "cache_line", "cache_write", "helper",
                          "fallback", "factor"})
"""The keys of a :class:`SourceFinding`'s data (kvlint/scan/findings.py): passed on to the
rule as keywords, so nothing else is let through from a cache file."""
_SCOPES = frozenset({"line", "file", "object", "noqa"})


@dataclass(frozen=True)
class ScanEntry:
    """The cached analysis of one file."""

    path: str
    outcome: FileOutcome
    used: float = 0.0


def scan_fingerprint() -> str:
    """The fingerprint of ``scan``'s entries: what every cache shares (kvlint's files,
    Python's version) and nothing else (the rules and settings apply afterwards)."""
    return fingerprint("scan", LAYOUT, ())


def _scalar(value: object) -> bool:
    return value is None or type(value) in (str, int, bool)


def _valid_finding(finding: object) -> bool:
    if type(finding) is not SourceFinding:
        return False
    f = finding.__dict__  # every field at once (a missing one fails the check)
    data = f["data"]
    return type(f["code"]) is str and f["code"] in CODES and position(f["line"]) and \
        position(f["column"]) and type(f["message"]) is str and \
        type(f["function"]) is str and type(f["variable"]) is str and type(data) is dict \
        and all(type(k) is str and k in _DATA_FIELDS and _scalar(v) for k, v in data.items())


def _valid_directive(directive: object, path: str) -> bool:
    if type(directive) is not Directive:
        return False
    d = directive.__dict__
    span = d["span"]
    return d["path"] == path and type(d["path"]) is str and position(d["line"]) and \
        type(d["codes"]) is tuple and all(type(c) is str for c in d["codes"]) and \
        type(d["reason"]) is str and d["scope"] in _SCOPES and type(span) is tuple and \
        len(span) == 2 and position(span[0]) and position(span[1]) and \
        type(d["used"]) is set


def _valid_outcome(outcome: object, path: str) -> bool:
    if type(outcome) is not FileOutcome or outcome.reusable is not True:
        return False
    suppressions = outcome.suppressions
    return (outcome.problem is None or type(outcome.problem) is str) and \
        type(outcome.findings) is tuple and all(map(_valid_finding, outcome.findings)) and \
        (suppressions is None or (type(suppressions) is list and all(
            _valid_directive(d, path) for d in suppressions)))


@dataclass
class ScanCache(ResultCache[ScanEntry]):
    """The scan entries of one fingerprint (:class:`~kvlint.cache.results.ResultCache`)."""

    KIND: ClassVar[str] = "scan"
    LAYOUT: ClassVar[int] = LAYOUT

    def valid(self, key: str, entry: object) -> bool:
        return type(entry) is ScanEntry and type(entry.path) is str and \
            type(entry.used) is float and _valid_outcome(entry.outcome, entry.path) and \
            conforms(entry, ScanEntry)

    def renewed(self, entry: ScanEntry, now: float) -> ScanEntry:
        return dataclasses.replace(entry, used=now)

    def last_used(self, entry: ScanEntry) -> float:
        return entry.used

    def outcome(self, key: str | None, path: str) -> FileOutcome | None:
        """The cached outcome of ``path`` under ``key`` (then it counts as a hit)."""
        if key is None:
            return None
        entry = self.get(key)
        if entry is None or entry.path != path:
            return None
        self.touch(key)
        return entry.outcome
