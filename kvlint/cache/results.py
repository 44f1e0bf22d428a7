"""What kvlint's per-file result caches share (``kvlint lint``'s, :mod:`kvlint.lint.cache`,
and ``kvlint scan``'s, :mod:`kvlint.scan.cache`): the file they live in, its bounds, the
unpickler that reads it and the index of unchanged files.

Each cache keeps entries of one *fingerprint* (a digest of what every entry depends on: the
kind of cache, its layout, kvlint's version and the content of every file of the installed
package, Python's version, and what the caller adds) in one file under ``cache_dir()/KIND``,
named by that fingerprint (a hex digest, never derived from a scanned file's text). An entry
is found by a digest of the fingerprint, the file's path and its bytes
(:meth:`ResultCache.key`).

An unchanged file is found without reading it: the cache also keeps, per path, the file's
:func:`signature` (device, inode, mode, size, modification and change times, as ``stat`` gives
them) and its entry's key, and a file whose signature is the same is not read and hashed
again. A signature is kept only for a file last changed at least :data:`RACY_NS` before the
run began (a file changed again within the same tick of a coarse clock would keep its
signature; git calls such files "racily clean"); its change time cannot be set back by
anyone editing the file. Not guarded against: a filesystem whose clock runs more than that
behind this machine's, and, on Windows, an edit that restores the file's size and
modification time (there ``st_ctime`` is the creation time).

The file carries the SHA-256 of its pickle, checked before anything is unpickled: a damaged
or edited file is dropped whole (the C unpickler sizes its memo by the largest index a
``LONG_BINPUT`` names, so one changed byte could ask for gigabytes). The file is written
atomically (a temporary file created exclusively in the same directory,
then ``os.replace``: never through a link), readable by its owner only. The directory is used
only when it is a real directory (not a link) of the user's own, writable by no one else,
and outside the linted tree (:func:`kvlint.cache.trusted_dir`); a file that cannot be read,
is a link, is not ours, is writable by others, or is corrupt is ignored and replaced; it is
read as a regular file only, without blocking, bounded, and unpickled by an unpickler that
builds only kvlint's dataclasses, enums and located strings (and fractions of two integers);
each entry's structure is checked (by the cache's kind) before it is used or saved again. A cache
directory restored from somewhere else (a CI cache a pull request could write) can hand
kvlint anything: nothing in it is trusted before these checks.
Bounded: ``MAX_ENTRIES`` entries per file (the most recently used are kept), ``MAX_FILES``
files per kind, ``MAX_BYTES`` per file.
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
from typing import Any, ClassVar, Generic, TypeVar

from kvlint.cache import (
    CacheFileError,
    cache_dir,
    flag_disabled,
    read_private,
    trusted_dir,
    write_private,
)
from kvlint.cache.conform import MAX_INT_BITS

RACY_NS = 2_000_000_000
"""A file changed less than this long (in ns) before the run began is always read."""
MAX_ENTRIES = 20_000
MAX_FILES = 8
MAX_BYTES = 256 * 1024 * 1024
MAX_INDEX = 8 * MAX_ENTRIES
"""The most paths the index of unchanged files may name (several paths may share an entry)."""


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
    root = root or Path(__file__).resolve().parents[1]  # the kvlint package
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


def fingerprint(kind: str, layout: int, parts: Iterable[object]) -> str:
    """The fingerprint of a run's cache of ``kind`` (entries of ``layout``): ``parts`` (what
    the caller knows changes its results) and what every run shares (kvlint's version and
    files, Python)."""
    from kvlint import __version__

    return digest(kind, layout, __version__, sys.version_info[:3], sys.implementation.name,
                  source_stamp(), *parts)


# ----------------------------------------------------------------------------- reading back
def _fraction(numerator: object, denominator: object = 1) -> Fraction:
    """``Fraction`` as pickle rebuilds it (from two integers), and from nothing else (a
    string such as ``"1e999999999"`` would take forever to convert)."""
    if type(numerator) is not int or type(denominator) is not int or denominator == 0 or \
            max(numerator.bit_length(), denominator.bit_length()) > MAX_INT_BITS:
        raise pickle.UnpicklingError("not a fraction of two bounded integers")
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


def position(value: object) -> bool:
    """A line or column: ``None`` or an integer a report can print."""
    return value is None or (type(value) is int and 0 <= value < 10**9)


def _held_key(held: object) -> str | None:
    """The entry key of a well-formed ``(signature, key)`` pair of the stat index (read from
    a file: checked before use), else ``None``."""
    if type(held) is not tuple or len(held) != 2 or type(held[0]) is not tuple or \
            len(held[0]) != 6 or not all(type(n) is int for n in held[0]) or \
            type(held[1]) is not str:
        return None
    return held[1]


# ----------------------------------------------------------------------------- the cache
E = TypeVar("E")
C = TypeVar("C", bound="ResultCache[Any]")


@dataclass
class ResultCache(Generic[E]):
    """The entries of one fingerprint, loaded once, saved once at the end of the run. A kind
    of cache names its directory and file header, and checks its entries (:meth:`valid`)."""

    KIND: ClassVar[str] = ""
    """The cache's subdirectory of ``cache_dir()``."""
    LAYOUT: ClassVar[int] = 0
    """Bumped when an entry's layout changes (old files are then ignored)."""

    fingerprint: str
    directory: Path
    """Where its file lives (:meth:`open`: ``cache_dir()/KIND`` unless told)."""
    entries: dict[str, E] = field(default_factory=dict)
    stats: dict[str, tuple[Signature, str]] = field(default_factory=dict)
    """Path -> (its :func:`signature`, its entry's key), for files not changed since."""
    started_ns: int = field(default_factory=time.time_ns)
    changed: bool = False
    hits: int = 0
    misses: int = 0
    _used: set[str] = field(default_factory=set)
    _checked: set[str] = field(default_factory=set)
    _prefix: Any = None

    # --- what each kind defines
    def valid(self, key: str, entry: object) -> bool:
        """Whether ``entry`` (read from a file) is a well-formed entry of this kind."""
        raise NotImplementedError

    def renewed(self, entry: E, now: float) -> E:
        """``entry`` marked as used at ``now`` (entries used least recently go first)."""
        raise NotImplementedError

    def last_used(self, entry: E) -> float:
        raise NotImplementedError

    # --- shared
    @classmethod
    def magic(cls) -> bytes:
        return f"kvlint-{cls.KIND}-cache\n".encode()

    @classmethod
    def framed(cls, payload: bytes) -> bytes:
        """A cache file's bytes: the header, the SHA-256 of ``payload``, ``payload``."""
        return cls.magic() + hashlib.sha256(payload).digest() + payload

    @classmethod
    def payload_of(cls, data: bytes) -> bytes | None:
        """The pickle a cache file holds, when its header and digest are intact: a file cut
        short, with bytes changed or inserted, never reaches the unpickler (whose memo an
        edited index could grow to gigabytes)."""
        magic = cls.magic()
        if not data.startswith(magic):
            return None
        digest_, payload = data[len(magic):len(magic) + 32], data[len(magic) + 32:]
        return payload if hashlib.sha256(payload).digest() == digest_ else None

    @property
    def file(self) -> Path:
        return self.directory / f"{self.fingerprint}.pickle"

    @classmethod
    def open(cls: type[C], fingerprint: str, directory: Path | None = None) -> C:
        """The cache of ``fingerprint`` as saved in ``directory`` (default
        ``cache_dir()/KIND``); empty when there is none or it cannot be used."""
        cache = cls(fingerprint, directory if directory is not None
                    else cache_dir() / cls.KIND)
        cache.entries, cache.stats = cache._read()
        return cache

    def _read(self) -> tuple[dict[str, E], dict[str, tuple[Signature, str]]]:
        # --no-cache: nothing under the cache directory is read. Otherwise only a trusted
        # directory (ours, a real directory, writable by no one else, outside the linted
        # tree) and a private regular file in it (not a link; a FIFO does not block), bounded
        if flag_disabled() or not trusted_dir(self.directory):
            return {}, {}
        try:
            data = read_private(self.file, MAX_BYTES)
        except CacheFileError:
            return {}, {}
        payload = self.payload_of(data)
        if payload is None:
            return {}, {}
        collecting = gc.isenabled()
        gc.disable()  # tens of thousands of new objects, no cycles: the collector only costs
        try:
            loaded = _Unpickler(io.BytesIO(payload)).load()
        except Exception:
            return {}, {}
        finally:
            if collecting:
                gc.enable()
        if not (type(loaded) is tuple and len(loaded) == 4 and loaded[0] == self.LAYOUT
                and loaded[1] == self.fingerprint and type(loaded[2]) is dict
                and type(loaded[3]) is dict and len(loaded[2]) <= MAX_ENTRIES
                and len(loaded[3]) <= MAX_INDEX):
            return {}, {}
        return loaded[2], loaded[3]  # each is checked when it is first used (or saved)

    def _checked_entry(self, key: object, entry: object) -> bool:
        """:meth:`valid` of a string key, and ``False`` where the check itself fails."""
        if not isinstance(key, str) or len(key) != 64:
            return False
        try:
            return self.valid(key, entry)
        except Exception:
            return False

    def key(self, path: str, data: bytes) -> str:
        """The entry key of the file ``path`` holding ``data``: ``digest(fingerprint, path,
        data)``, the fingerprint hashed once per run."""
        if self._prefix is None:
            self._prefix = _hashed(hashlib.sha256(), (self.fingerprint,))
        return str(_hashed(self._prefix.copy(), (path, data)).hexdigest())

    def get(self, key: str) -> E | None:
        """The entry of ``key``, once its structure is checked (an entry that fails the
        check is dropped)."""
        entry = self.entries.get(key)
        if entry is None or key in self._checked:
            return entry
        if not self._checked_entry(key, entry):
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

    def put(self, key: str, entry: E) -> None:
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
        entries = {key: self.renewed(entry, now) if key in self._used else entry
                   for key, entry in self.entries.items()
                   if key in self._checked or self._checked_entry(key, entry)}
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda kv: self.last_used(kv[1]))
            entries = dict(newest[-MAX_ENTRIES:])
        stats = {path: held for path, held in self.stats.items()
                 if type(path) is str and _held_key(held) in entries}
        if len(stats) > MAX_INDEX:  # what a later run can read back (the rest is re-read)
            stats = dict(list(stats.items())[-MAX_INDEX:])
        if flag_disabled():
            return
        try:
            data = self.framed(pickle.dumps(
                (self.LAYOUT, self.fingerprint, entries, stats), protocol=5))
        except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
            return
        # atomic, owner-only, never through a link, only into a trusted directory
        if len(data) > MAX_BYTES or not write_private(self.file, data):
            return
        self._prune()

    def _prune(self) -> None:
        try:
            files = [(p.lstat().st_mtime, p) for p in self.directory.glob("*.pickle")
                     if len(p.stem) == 64]
        except OSError:
            return
        for _, old in sorted(files, key=lambda item: item[0])[:-MAX_FILES]:
            with contextlib.suppress(OSError):
                old.unlink()
