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
2) or whose checkpoint size lookup failed other than with "not cached"; runs with third-party
plugins (their parsers and rules may read anything). Network answers enter the key by
content (the config's bytes), so a success is safe to reuse, and a failure to reach the Hub
is never stored.

An unchanged file is found without reading it: the cache also keeps, per path, the file's
:func:`signature` (device, inode, mode, size, modification and change times, as ``stat`` gives
them) and its entry's key, and a file whose signature is the same is not read and hashed
again. A signature is kept only for a file last changed at least :data:`RACY_NS` before the
run began (a file changed again within the same tick of a coarse clock would keep its
signature; git calls such files "racily clean"); its change time cannot be set back by
anyone editing the file. Not guarded against: a filesystem whose clock runs more than that
behind this machine's, and, on Windows, an edit that restores the file's size and
modification time (there ``st_ctime`` is the creation time).

Entries live in one file per fingerprint under ``cache_dir()/lint`` (file names are hex
digests, never derived from a manifest's text), written atomically (a temporary file, then
``os.replace``). A file that cannot be read, is not ours, or is corrupt is ignored and
replaced; it is unpickled by an unpickler that builds only kvlint's dataclasses, enums and
located strings (and fractions of two integers), and its structure is checked before use
(lines and columns included: a number no report can print is refused).
Bounded: ``MAX_ENTRIES`` entries per file, ``MAX_FILES`` files, ``MAX_BYTES`` per file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import gc
import hashlib
import io
import os
import pickle
import stat
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from kvlint.cache import cache_dir
from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.linter import ModelResult, Target
from kvlint.loaders.files import UnreadableFile, read_bytes
from kvlint.loaders.manifests.base import Located, Unresolved
from kvlint.model.capacity import Capacity
from kvlint.model.serving import KvAnalysis, ServingPlan

FORMAT = 3
"""Bumped when an entry's layout changes (old files are then ignored)."""
RACY_NS = 2_000_000_000
"""A file changed less than this long (in ns) before the run began is always read."""
MAX_ENTRIES = 20_000
MAX_FILES = 8
MAX_BYTES = 256 * 1024 * 1024
_MAGIC = b"kvlint-lint-cache\n"


def digest(*parts: object) -> str:
    """A hex SHA-256 of ``parts`` (bytes as they are, anything else as its ``repr``)."""
    return str(_hashed(hashlib.sha256(), parts).hexdigest())


def _hashed(h: Any, parts: Iterable[object]) -> Any:
    """``h`` (a hashlib object) updated with ``parts`` as :func:`digest` hashes them."""
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode("utf-8",
                                                                      "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h


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


Signature = tuple[int, int, int, int, int, int]


def signature(path: str) -> Signature | None:
    """``(device, inode, mode, size, mtime_ns, ctime_ns)`` of the regular file at ``path``
    (links followed); ``None`` when it cannot be stat'ed or is not a regular file."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns,
            info.st_ctime_ns)


def source_stamp(root: Path | None = None) -> str:
    """A digest of the name and content of every file of the installed kvlint package (or
    the directory ``root``): an edited checkout (an editable install keeps its version)
    never reuses old results, and a reinstall of the same code (a fresh CI runner, a rebuilt
    pre-commit environment, whose files all have new times) still does."""
    root = root or Path(__file__).resolve().parent
    h = hashlib.sha256()
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(base, name)
            try:
                with open(full, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            _hashed(h, (os.path.relpath(full, root), data))
    return str(h.hexdigest())


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
    """The run's fingerprint: ``parts`` (what the caller knows changes findings) and what
    every run shares (kvlint's version and files, Python, transformers)."""
    from kvlint import __version__

    return digest(FORMAT, __version__, sys.version_info[:3], sys.implementation.name,
                  _transformers_stamp(), source_stamp(), *parts)


# ----------------------------------------------------------------------------- reading back
def _fraction(numerator: object, denominator: object = 1) -> Fraction:
    """``Fraction`` as pickle rebuilds it (from two integers), and from nothing else (a
    string such as ``"1e999999999"`` would take forever to convert)."""
    if type(numerator) is not int or type(denominator) is not int or denominator == 0:
        raise pickle.UnpicklingError("not a fraction of two integers")
    return Fraction(numerator, denominator)


class _Unpickler(pickle.Unpickler):
    """Builds kvlint's dataclasses, enums and located strings only (and fractions of two
    integers): a cache file someone else wrote cannot make it call anything else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("fractions", "Fraction"):
            return _fraction
        if module == "kvlint" or (module.startswith("kvlint.") and "." not in name):
            found = super().find_class(module, name)
            if isinstance(found, type) and (
                    dataclasses.is_dataclass(found) or issubclass(found, enum.Enum)
                    or (issubclass(found, str) and found is not str)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a kvlint cache")


def _optional(value: object, kind: type | tuple[type, ...]) -> bool:
    return value is None or isinstance(value, kind)


def _position(value: object) -> bool:
    """A line or column: ``None`` or an integer a report can print."""
    return value is None or (type(value) is int and 0 <= value < 10**9)


def _valid_finding(finding: object) -> bool:
    if type(finding) is not Finding:
        return False
    f = finding.__dict__  # every field at once (a missing one fails the check)
    return isinstance(f["code"], str) and isinstance(f["name"], str) and \
        type(f["severity"]) is Severity and isinstance(f["message"], str) and \
        (f["path"] is None or isinstance(f["path"], str)) and _position(f["line"]) and \
        _position(f["column"]) and _position(f["end_line"]) and type(f["data"]) is dict \
        and _valid_suggestion(f["suggestion"])


def _valid_suggestion(suggestion: object) -> bool:
    return suggestion is None or (type(suggestion) is Suggestion and isinstance(
        suggestion.message, str) and type(suggestion.serving) is dict)


def _valid_result(result: object) -> bool:
    if type(result) is not ModelResult:
        return False
    t = result.target
    return type(t) is Target and isinstance(t.ref, str) and \
        (t.path is None or isinstance(t.path, str)) and _position(t.line) and \
        type(result.plan) is ServingPlan and _optional(result.analysis, KvAnalysis) and \
        _optional(result.capacity, Capacity) and _optional(result.config_error, str) and \
        result.probe is None and type(result.notes) is tuple and \
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


def _checked_entry(key: object, entry: object) -> bool:
    """:func:`_valid_entry`, and ``False`` where the check itself fails."""
    try:
        return _valid_entry(key, entry)
    except Exception:
        return False


def _held_key(held: object) -> str | None:
    """The entry key of a well-formed ``(signature, key)`` pair of the stat index (read from
    a file: checked before use), else ``None``."""
    if type(held) is not tuple or len(held) != 2 or type(held[0]) is not tuple or \
            len(held[0]) != 6 or not all(type(n) is int for n in held[0]) or \
            type(held[1]) is not str:
        return None
    return held[1]


# ----------------------------------------------------------------------------- the cache
@dataclass
class LintCache:
    """The entries of one fingerprint, loaded once, saved once at the end of the run."""

    fingerprint: str
    directory: Path = field(default_factory=lambda: cache_dir() / "lint")
    entries: dict[str, Entry] = field(default_factory=dict)
    stats: dict[str, tuple[Signature, str]] = field(default_factory=dict)
    """Path -> (its :func:`signature`, its entry's key), for files not changed since."""
    started_ns: int = field(default_factory=time.time_ns)
    changed: bool = False
    hits: int = 0
    misses: int = 0
    _used: set[str] = field(default_factory=set)
    _checked: set[str] = field(default_factory=set)
    _prefix: Any = None

    @property
    def file(self) -> Path:
        return self.directory / f"{self.fingerprint}.pickle"

    @classmethod
    def open(cls, fingerprint: str, directory: Path | None = None) -> LintCache:
        cache = cls(fingerprint) if directory is None else cls(fingerprint, directory)
        cache.entries, cache.stats = cache._read()
        return cache

    def _read(self) -> tuple[dict[str, Entry], dict[str, tuple[Signature, str]]]:
        try:  # a regular file only, bounded (a FIFO put in its place does not block)
            data = read_bytes(self.file, MAX_BYTES)
        except UnreadableFile:
            return {}, {}
        if not data.startswith(_MAGIC):
            return {}, {}
        collecting = gc.isenabled()
        gc.disable()  # tens of thousands of new objects, no cycles: the collector only costs
        try:
            loaded = _Unpickler(io.BytesIO(data[len(_MAGIC):])).load()
        except Exception:
            return {}, {}
        finally:
            if collecting:
                gc.enable()
        if not (type(loaded) is tuple and len(loaded) == 4 and loaded[0] == FORMAT
                and loaded[1] == self.fingerprint and type(loaded[2]) is dict
                and type(loaded[3]) is dict):
            return {}, {}
        return loaded[2], loaded[3]  # each is checked when it is first used (or saved)

    def key(self, path: str, data: bytes) -> str:
        """The entry key of the file ``path`` holding ``data``: ``digest(fingerprint, path,
        data)``, the fingerprint hashed once per run."""
        if self._prefix is None:
            self._prefix = _hashed(hashlib.sha256(), (self.fingerprint,))
        return str(_hashed(self._prefix.copy(), (path, data)).hexdigest())

    def get(self, key: str) -> Entry | None:
        """The entry of ``key``, once its structure is checked (an entry that fails the
        check is dropped)."""
        entry = self.entries.get(key)
        if entry is None or key in self._checked:
            return entry
        if not _checked_entry(key, entry):
            del self.entries[key]
            self.changed = True
            return None
        self._checked.add(key)
        return entry

    def known(self, path: str, sig: Signature | None) -> str | None:
        """The key of ``path``'s entry when its signature is still ``sig`` (then it need not
        be read); ``None`` when unknown."""
        held = self.stats.get(path)
        key = _held_key(held)  # checked first: the index was read from a file
        return key if key is not None and held is not None and held[0] == sig else None

    def note(self, path: str, sig: Signature | None, key: str) -> None:
        """Remember that ``path``, with signature ``sig`` (taken before it was read), holds
        the bytes of entry ``key``: unless it changed too recently to tell
        (:data:`RACY_NS`)."""
        if sig is None or max(sig[4], sig[5]) >= self.started_ns - RACY_NS:
            if self.stats.pop(path, None) is not None:
                self.changed = True
            return
        if self.stats.get(path) != (sig, key):
            self.stats[path] = (sig, key)
            self.changed = True

    def touch(self, key: str) -> None:
        """Count a hit; its entry's time of use is renewed when the file is next written (a
        run that only hits writes nothing)."""
        self.hits += 1
        self._used.add(key)

    def put(self, key: str, entry: Entry) -> None:
        self.misses += 1
        self.entries[key] = entry
        self._used.add(key)
        self._checked.add(key)
        self.changed = True

    def save(self) -> None:
        """Write the entries (the most recently used ``MAX_ENTRIES``), atomically, and keep
        at most ``MAX_FILES`` cache files; a cache that cannot be written is skipped."""
        if not self.changed:
            return
        now = time.time()
        entries = {key: dataclasses.replace(entry, used=now) if key in self._used else entry
                   for key, entry in self.entries.items()
                   if key in self._checked or _checked_entry(key, entry)}
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda kv: kv[1].used)[-MAX_ENTRIES:]
            entries = dict(newest)
        stats = {path: held for path, held in self.stats.items()
                 if type(path) is str and _held_key(held) in entries}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            data = _MAGIC + pickle.dumps((FORMAT, self.fingerprint, entries, stats),
                                         protocol=5)
            if len(data) > MAX_BYTES:
                return
            import tempfile

            fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".pickle",
                                        dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temp, self.file)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except (OSError, pickle.PicklingError, RecursionError, TypeError, AttributeError):
            return
        self._prune()

    def _prune(self) -> None:
        try:
            files = [(p.stat().st_mtime, p) for p in self.directory.glob("*.pickle")
                     if len(p.stem) == 64]
        except OSError:
            return
        for _, old in sorted(files, key=lambda item: item[0])[:-MAX_FILES]:
            with contextlib.suppress(OSError):
                old.unlink()
