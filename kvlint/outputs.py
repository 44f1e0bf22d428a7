"""Report files: written whole or not at all, never over an input, never twice.

A report replaces its file atomically: it is written to a temporary file in the same
directory and renamed over the target (:func:`os.replace`), so a failed render or write
leaves an existing report as it was, and a reader never sees half a report. An output that
is also an input of the run (``kvlint check cfg.json -o cfg.json``), or the same file named
twice, is refused before anything runs.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence

from kvlint.errors import UsageError
from kvlint.reporters.escape import printable


def _same(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name one file: the same inode when both exist, else the same
    resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _reads(inputs: Iterable[str]) -> list[str]:
    """The files the inputs stand for: each file, and a model directory's ``config.json``."""
    found: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            found.append(os.path.join(item, "config.json"))
        elif os.path.exists(item):
            found.append(item)
    return found


def check_outputs(outputs: Sequence[str], inputs: Iterable[str]) -> None:
    """:class:`UsageError` when an output is also an input, or two outputs are one file."""
    reads = _reads(inputs)
    for index, output in enumerate(outputs):
        for source in reads:
            if os.path.exists(source) and _same(output, source):
                raise UsageError(f"--output {printable(output)}: is an input of this run "
                                 f"({printable(source)}); write the report elsewhere")
        for earlier in outputs[:index]:
            if _same(output, earlier):
                raise UsageError(f"--output {printable(output)}: given twice (as "
                                 f"{printable(earlier)}); each report needs its own file")


def write_report(output: str, data: bytes) -> None:
    """Write ``data`` to ``output`` atomically (the file a symlink names is replaced, the
    link kept); a device or FIFO (``/dev/stdout``) is written in place. The new file gets
    the old one's permissions, else the umask's."""
    try:
        mode = os.stat(output).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise UsageError(f"{printable(output)}: cannot write: {err.strerror or err}") from None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise UsageError(f"{printable(output)}: cannot write: is a directory")
        try:
            with open(output, "wb") as handle:
                handle.write(data)
        except OSError as err:
            raise UsageError(f"{printable(output)}: cannot write: {err.strerror or err}"
                             ) from None
        return
    target = os.path.realpath(output)
    folder, name = os.path.split(target)
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        os.replace(temp, target)
        temp = None
    except OSError as err:
        raise UsageError(f"{printable(output)}: cannot write: {err.strerror or err}") from None
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current
