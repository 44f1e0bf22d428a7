"""Reading files a pull request or a Hub repo may have planted: only regular files, never more
than a cap, never past the linted tree.

Every file kvlint reads as input (a config.json, a manifest, a settings file, a scanned source)
goes through :func:`read_bytes`: it opens the path without blocking (``O_NONBLOCK``, so a FIFO
with no writer does not hang the open), checks with ``fstat`` on the opened descriptor that it
is a regular file (so ``/dev/zero``, a FIFO, a socket or a link to one is refused, whatever
the link chain), and reads at most ``limit + 1`` bytes (so a file that grows while it is read
still cannot exhaust memory).

:func:`inside` and :func:`tree_root` decide whether a path stays inside the linted tree once
its symbolic links are resolved; ``kvlint lint`` reads nothing that does not.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

MiB = 1024 * 1024

MAX_CONFIG_BYTES = 16 * MiB
"""A model's config.json (the largest real ones are well under 1 MiB)."""
MAX_MANIFEST_BYTES = 16 * MiB
"""A manifest under ``kvlint lint`` (a rendered Helm chart of a large cluster is a few MiB)."""
MAX_SETTINGS_BYTES = 16 * MiB
"""A ``pyproject.toml`` / ``.kvlint.toml``."""
MAX_SOURCE_BYTES = 16 * MiB
MAX_LOCK_BYTES = 16 * MiB
"""A Python source under ``kvlint scan``."""


class UnreadableFile(Exception):
    """A file kvlint refuses or fails to read. ``str()`` is the reason, one line, without
    the path (callers write ``f"{path}: {err}"``)."""


def read_bytes(path: str | os.PathLike[str], limit: int, *, truncate: bool = False) -> bytes:
    """The content of the regular file at ``path`` (links followed), at most ``limit`` bytes;
    :class:`UnreadableFile` when it is not a regular file, is larger, or cannot be read.
    ``truncate``: a larger file is not refused; its first ``limit + 1`` bytes are returned
    (the caller sees it was larger)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | \
        getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise UnreadableFile(_reason(err)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"not a regular file ({_kind(info.st_mode)}); not read")
        if info.st_size > limit and not truncate:
            raise UnreadableFile(_too_large(limit))
        data = read_bounded(fd, limit)
        if len(data) > limit and not truncate:
            raise UnreadableFile(_too_large(limit))
        return data
    except OSError as err:
        raise UnreadableFile(_reason(err)) from None
    finally:
        os.close(fd)


def read_bounded(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the open descriptor ``fd``, read a MiB at a time (one
    byte more than ``limit`` says the file is larger, even one that grows while read)."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, MiB))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_text(path: str | os.PathLike[str], limit: int) -> str:
    """:func:`read_bytes` decoded as UTF-8; a leading byte-order mark is dropped."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise UnreadableFile(f"not UTF-8 text (byte {err.start})") from None


MAX_REFERENCED_BYTES = MiB
"""A file a manifest names for its settings (a Ray Serve LLM config)."""


@dataclass(frozen=True)
class Referenced:
    """What a manifest that names another file (a Ray Serve LLM config) gets from it."""

    text: str | None
    """The file's text; ``None`` when it is not read (see ``outside`` and ``problem``)."""
    outside: bool
    """It leads outside the referring manifest's tree (a link or ``..``): not read."""
    problem: str | None
    """Why it could not be read (:class:`UnreadableFile`'s reason)."""
    state: str
    """A digest of all of the above: ``kvlint lint``'s result cache keeps the referring
    manifest's results only while reading the file gives the same state."""


MAX_LISTED = 10_000
"""Names of a folder's YAML files a listing state covers."""


def read_referenced(path: str, referrer: str) -> Referenced:
    """The file ``path`` named by the manifest ``referrer``, read as manifests are (inside
    the referrer's tree, at most :data:`MAX_REFERENCED_BYTES`); for a folder (looked in for
    files beside the manifest), no text and a state of its YAML files' names."""
    import hashlib

    def state(*parts: str) -> str:
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    if not inside(path, tree_root(referrer)):
        return Referenced(None, True, None, state("outside"))
    if os.path.isdir(path):  # a folder looked in for files: its YAML files' names
        try:
            names = sorted(n for n in os.listdir(path) if n.endswith((".yaml", ".yml")))
        except OSError as err:
            return Referenced(None, False, _reason(err), state("unlistable", _reason(err)))
        return Referenced(None, False, None, state("folder", *names[:MAX_LISTED]))
    try:
        text = read_text(path, MAX_REFERENCED_BYTES)
    except UnreadableFile as err:
        return Referenced(None, False, str(err), state("unreadable", str(err)))
    return Referenced(text, False, None, state("text", text))


def read_source(path: str | os.PathLike[str], limit: int) -> str:
    """A Python source, decoded as Python does (PEP 263 coding line, BOM, else UTF-8)."""
    import io
    import tokenize

    data = read_bytes(path, limit)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError) as err:  # a bad or unknown coding declaration
        raise UnreadableFile(f"bad source encoding: {_one_line(str(err))}") from None
    except UnicodeDecodeError as err:
        raise UnreadableFile(f"not {encoding} text (byte {err.start})") from None


def tree_root(path: str | os.PathLike[str], cwd: str | None = None) -> str:
    """The tree a linted ``path`` belongs to, links resolved: the working directory when
    ``path`` is written inside it (a repository checkout, under CI and pre-commit); else the
    directory given (or the directory of the file given)."""
    here = os.path.abspath(cwd or os.getcwd())
    absolute = os.path.abspath(path)
    if absolute == here or absolute.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.realpath(here)
    return os.path.realpath(absolute if os.path.isdir(absolute) else
                            os.path.dirname(absolute))


def inside(path: str | os.PathLike[str], root: str) -> bool:
    """Whether ``path``, every link resolved, is ``root`` or lies under it (``root`` is a
    :func:`tree_root`). A link loop resolves to itself and counts as inside: reading it then
    fails with a plain error."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _too_large(limit: int) -> str:
    return f"larger than {limit // MiB} MiB; not read"


def _reason(err: OSError) -> str:
    return f"cannot read: {err.strerror or _one_line(str(err)) or type(err).__name__}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"

