"""Which files ``kvlint lint`` reads: files given explicitly, and matching files under
directories, never following a link out of the linted tree."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from kvlint.errors import InputError
from kvlint.loaders.files import inside, tree_root
from kvlint.loaders.paths import is_dir, is_file
from kvlint.manifests.base import ManifestProblem

DEFAULT_INCLUDE = ("*.yaml", "*.yml", "*.json", "config.pbtxt")
"""File names read under directories: YAML and JSON manifests, and Triton model configs."""
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                          ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache"})


def discover(paths: Iterable[str], include: Sequence[str] = DEFAULT_INCLUDE,
             exclude: Sequence[str] = (),
             problems: list[ManifestProblem] | None = None,
             resolved: Resolved | None = None) -> list[str]:
    """Files to lint: files given explicitly, and matching files under directories.

    Nothing outside the linted tree (:func:`~kvlint.loaders.files.tree_root`) is returned:
    links to directories are not followed, and a path given, or a file found, that resolves
    outside the tree is left out with an ``outside-tree`` problem; a directory that cannot be
    listed is an ``unreadable`` problem. Problems go to ``problems`` (dropped when it is
    ``None``). Something that is not a regular file (a FIFO, a device, a dangling link) is
    returned: reading it gives an ``unreadable`` problem. ``resolved``: where real paths are
    resolved, told which files the walk found not to be links (it need not ask again)."""
    found: list[str] = []
    sink: list[ManifestProblem] = [] if problems is None else problems
    resolved = Resolved() if resolved is None else resolved
    for raw in paths:
        path = Path(raw)
        if not _contained(path, resolved.root(path), sink, resolved.real(path)):
            continue
        if is_file(path):
            if not _excluded(str(path), exclude):
                found.append(str(path))
        elif is_dir(path):
            found.extend(_files_under(str(path), include, exclude, sink, resolved))
        elif os.path.lexists(path):  # a FIFO, a device, a link loop: reported when read
            if not _excluded(str(path), exclude):
                found.append(str(path))
        else:
            raise InputError(f"{raw}: no such file or directory")
    return found


def _files_under(top: str, include: Sequence[str], exclude: Sequence[str],
                 problems: list[ManifestProblem], resolved: Resolved) -> list[str]:
    """Matching files under the directory ``top``, in a stable order (a directory's files,
    then its subdirectories, by name), without following links to directories; files that
    are links out of the tree are problems."""
    root = tree_root(top)
    found: list[str] = []
    patterns = [re.compile(fnmatch.translate(os.path.normcase(g))) for g in include]

    stack = [top if top != os.curdir else ""]  # a stack: a tree of any depth is walked
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory or os.curdir) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as err:
            where = str(err.filename) if err.filename else (directory or os.curdir)
            problems.append(ManifestProblem(
                where, None, f"{where}: cannot read this directory "
                f"({err.strerror or err}); its files are not linted", "unreadable"))
            continue
        subdirs: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            path = os.path.join(directory, entry.name) if directory else entry.name
            if is_dir:  # a link to a directory is not followed (nor linted)
                if entry.name not in SKIPPED_DIRS and not entry.is_symlink():
                    subdirs.append(path)
                continue
            name = os.path.normcase(entry.name)
            if any(p.match(name) for p in patterns) and not _excluded(path, exclude):
                if not entry.is_symlink():
                    resolved.plain.add(path)
                elif not _contained(Path(path), root, problems):
                    continue
                found.append(path)
        stack.extend(reversed(subdirs))  # the first subdirectory is walked next
    return found


class Resolved:
    """:func:`tree_root` and real paths of many files in few directories, each directory
    resolved once: a file that is not a link resolves to its directory's real path joined
    with its name (which is what ``os.path.realpath`` computes, component by component)."""

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}
        self._roots: dict[str, str] = {}
        self.plain: set[str] = set()
        """Paths a directory walk found not to be links (their type came with the listing)."""

    @staticmethod
    def _split(path: str | Path) -> tuple[str, str] | None:
        """``(directory, name)`` of a plain file name, else ``None``."""
        head, tail = os.path.split(str(path))
        return None if tail in ("", os.curdir, os.pardir) else (head, tail)

    def root(self, path: str | Path) -> str:
        parts = self._split(path)
        if parts is None or not os.path.isfile(path):
            return tree_root(path)
        if parts[0] not in self._roots:  # a file's tree depends only on its directory
            self._roots[parts[0]] = tree_root(path)
        return self._roots[parts[0]]

    def real(self, path: str | Path) -> str:
        parts = self._split(path)
        if parts is None or (path not in self.plain and os.path.islink(path)):
            return os.path.realpath(path)
        head, tail = parts
        return os.path.join(self._dirs.get(head) or self._real_dir(head), tail)

    def _real_dir(self, head: str) -> str:
        """The real path of the directory ``head``: its parent's (resolved once) joined
        with its name when it is not a link, else ``os.path.realpath``; a loop, not
        recursion (a tree may be deep)."""
        chain: list[tuple[str, str, str]] = []
        directory = head
        while directory not in self._dirs:
            parent, name = os.path.split(directory)
            if name in ("", os.curdir, os.pardir) or parent == directory or \
                    os.path.islink(directory):
                self._dirs[directory] = os.path.realpath(directory or os.curdir)
                break
            chain.append((directory, parent, name))
            directory = parent
        for directory, parent, name in reversed(chain):
            self._dirs[directory] = os.path.join(self._dirs[parent], name)
        return self._dirs[head]


def _contained(path: Path, root: str, problems: list[ManifestProblem],
               real: str | None = None) -> bool:
    """Whether ``path`` (whose real path is ``real``, when known) resolves inside ``root``;
    an ``outside-tree`` problem when not."""
    if inside(path, root) if real is None else \
            (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
        return True
    problems.append(ManifestProblem(
        str(path), None, f"{path} is a link that leads outside the linted tree; links are "
        "not followed out of the tree, so it is not read", "outside-tree"))
    return False


def _excluded(path: str, exclude: Sequence[str]) -> bool:
    if not exclude:
        return False
    text = path.replace(os.sep, "/") if os.sep != "/" else path
    name = os.path.basename(path)
    return any(fnmatch.fnmatch(text, g) or fnmatch.fnmatch(name, g) for g in exclude)
