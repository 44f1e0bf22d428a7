"""kvlint's cache directory for small derived data (never required: losing it costs time).

Nothing read back from it is trusted blindly: a cache directory restored from somewhere else
(a CI cache a pull request could write), planted in the linted repository, or writable by
another user could otherwise change a verdict. So:

- :func:`trusted_dir` accepts only a real directory (not a link) that the user owns, that no
  group or other user may write, and that does not lie inside the linted tree (the
  repository of the working directory, and any tree :func:`scope` names);
- :func:`read_private` reads only a regular file (not a link, opened without following one
  and without blocking) that the user owns, that no group or other user may write, and that
  is not larger than a bound;
- :func:`write_private` writes atomically (a new temporary file, created exclusively, in the
  same directory, then ``os.replace``, which replaces a link itself, never its target),
  readable by its owner only;
- :func:`reads_disabled`: with ``--no-cache`` or ``KVLINT_NO_CACHE`` nothing under the
  cache directory is read (or written).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path


def cache_dir() -> Path:
    """``KVLINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvlint``, else ``~/.cache/kvlint``."""
    explicit = os.environ.get("KVLINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kvlint"


NO_CACHE_ENV = "KVLINT_NO_CACHE"
"""Set (to anything but empty, ``0``, ``false`` or ``no``): ``kvlint lint`` and ``kvlint scan``
neither read nor write their result caches (:mod:`kvlint.lint.cache`,
:mod:`kvlint.scan.cache`), as with ``--no-cache``; nor is the parsed engine table read from
or written to the cache directory."""


def result_cache_disabled() -> bool:
    """Whether ``KVLINT_NO_CACHE`` turns the result caches off."""
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false", "no")


_DISABLED = False
_LINTED: tuple[str, ...] = ()


@contextlib.contextmanager
def scope(*, no_cache: bool = False, linted: Iterable[str | os.PathLike[str]] = ()
          ) -> Iterator[None]:
    """For the length of one command: with ``no_cache`` (``--no-cache``) nothing under the
    cache directory is read or written; the ``linted`` paths (and their repositories) may
    not hold a trusted cache. Restored afterwards (commands run in one process in tests)."""
    global _DISABLED, _LINTED
    saved = (_DISABLED, _LINTED)
    _DISABLED = _DISABLED or no_cache
    _LINTED = tuple(dict.fromkeys((*_LINTED, *(os.path.realpath(p) for p in linted))))
    try:
        yield
    finally:
        _DISABLED, _LINTED = saved


def flag_disabled() -> bool:
    """Whether ``--no-cache`` was given to the running command."""
    return _DISABLED


def reads_disabled() -> bool:
    """Whether nothing under the cache directory may be read (``--no-cache``,
    ``KVLINT_NO_CACHE``)."""
    return _DISABLED or result_cache_disabled()


def _repository(path: str) -> str | None:
    """The nearest directory at or above ``path`` that holds ``.git``."""
    here = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def linted_trees() -> tuple[str, ...]:
    """The trees a cache must not lie in: the working directory's repository, each noted
    path and its repository."""
    trees: list[str] = []
    with contextlib.suppress(OSError):
        repo = _repository(os.path.realpath(os.getcwd()))
        if repo is not None:
            trees.append(repo)
    for path in _LINTED:
        trees.append(path)
        repo = _repository(path)
        if repo is not None:
            trees.append(repo)
    return tuple(dict.fromkeys(trees))


def _private(info: os.stat_result) -> bool:
    """Owned by the user and writable by nobody else."""
    owner = getattr(os, "geteuid", None)
    if owner is not None and info.st_uid != owner():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def trusted_dir(path: Path) -> bool:
    """Whether the existing directory ``path`` may hold kvlint's cache: a real directory
    (not a link), the user's own, writable by nobody else, outside the linted tree."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return False
    if not stat.S_ISDIR(info.st_mode) or not _private(info):
        return False
    real = os.path.realpath(path)
    return not any(_under(real, tree) for tree in linted_trees())


def ensure_dir(path: Path) -> bool:
    """Create ``path`` (owner-only) when missing; whether it is then :func:`trusted_dir`."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, ValueError):
        return False
    return trusted_dir(path)


class CacheFileError(Exception):
    """A cache file that is not read (missing, a link, not ours, too large...)."""


def read_private(path: Path, limit: int) -> bytes:
    """The content of the cache file ``path``: a regular file, not a link, the user's own,
    writable by nobody else, at most ``limit`` bytes; :class:`CacheFileError` otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):  # where O_NOFOLLOW is missing
            raise CacheFileError("a link")
        fd = os.open(path, flags)
    except (OSError, ValueError) as err:
        raise CacheFileError(str(err)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_size > limit:
            raise CacheFileError("not a private regular file within bounds")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise CacheFileError("larger than its bound")
        return b"".join(chunks)
    except OSError as err:
        raise CacheFileError(str(err)) from None
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically (a temporary file created exclusively in the
    same directory, then renamed over ``path``: a link at ``path`` is replaced, never
    followed), owner-only; only into a :func:`trusted_dir`. Whether it was written."""
    import tempfile

    if not ensure_dir(path.parent):
        return False
    try:
        fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError):
            return False
        raise
    return True
