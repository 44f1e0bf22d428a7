"""``kvlint scan``: find materialised GQA and naive MLA in Python sources.

Sources are files and directories, an installed distribution (``--package``: located through
importlib metadata, never imported) or a Hub repository's remote code (``--hub``: its ``*.py``
downloaded into the Hugging Face cache, never executed). One result per file with findings;
``# kvlint: ignore[KV401] reason`` suppressions work as in manifests. A large tree (200
files or more) is analysed by forked worker processes; the report is the same as one
process's, in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.diagnostics import Finding, Severity
from kvlint.errors import InputError
from kvlint.linter import LintRun, ModelResult, Target
from kvlint.loaders.files import MAX_SOURCE_BYTES, UnreadableFile, read_bytes, read_source
from kvlint.model.serving import ServingPlan
from kvlint.rules.base import Rule
from kvlint.scan.cache import FileOutcome
from kvlint.suppress import MARKERS, Directive, Policy, directives, may_have_directives
from kvlint.suppress import apply as apply_suppressions

if TYPE_CHECKING:
    from kvlint.scan.cache import ScanCache

SKIPPED_DIRS = frozenset({".git", ".hg", "__pycache__", ".venv", "venv", "node_modules",
                          ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build",
                          "dist"})


def python_files(paths: Iterable[str]) -> list[Path]:
    """``.py`` files given or under the given directories, in a stable order."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
                found.extend(Path(root) / f for f in sorted(files) if f.endswith(".py"))
        else:
            raise InputError(f"{raw}: no such file or directory")
    return found


def package_files(name: str) -> list[Path]:
    """The ``.py`` files of an installed distribution (or package, dotted names included),
    by metadata or by the path finders; nothing is imported, not even a parent package."""
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except (metadata.PackageNotFoundError, ValueError):
        dist = None
    if dist is not None and dist.files:
        files = [Path(str(dist.locate_file(f))) for f in dist.files if str(f).endswith(".py")]
        existing = sorted(f for f in files if f.is_file())
        if existing:
            return existing
    roots = locate_package(name)
    if roots is None:
        raise InputError(f"package {name!r} is not installed (pip show {name})")
    return python_files(roots)


def locate_package(name: str) -> list[str] | None:
    """Where the module or package ``name`` lives, found segment by segment with
    :class:`importlib.machinery.PathFinder` on the parent's search locations, as the
    import system would, but without importing anything (``importlib.util.find_spec``
    imports ``pkg`` to find ``pkg.sub``). A package gives its directories, a module its
    file; ``None`` when it is not found."""
    import sys
    from importlib.machinery import PathFinder

    parts = name.replace("-", "_").split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    search: list[str] | None = None
    for index in range(len(parts)):
        full = ".".join(parts[: index + 1])
        spec = PathFinder.find_spec(full, search if search is not None else sys.path)
        if spec is None:
            return None
        locations = list(spec.submodule_search_locations or [])
        if index == len(parts) - 1:
            if locations:
                return locations
            return [spec.origin] if spec.origin and spec.origin.endswith(".py") else None
        if not locations:
            return None  # a module has no submodules
        search = locations
    return None


def hub_files(repo_id: str, *, revision: str | None = None, offline: bool = False) -> list[Path]:
    """A Hub repository's ``*.py`` files (remote code), downloaded into the Hugging Face
    cache with huggingface_hub (through kvlint's Hub guard: timeouts, deadline, size cap);
    they are read as text, never executed."""
    from kvlint.loaders.hub import download_python_files

    return python_files([str(download_python_files(repo_id, revision=revision,
                                                   offline=offline))])


PARALLEL_MIN_FILES = 200
"""From this many files on, ``scan`` analyses them in worker processes (as ``lint`` extracts
manifests, :data:`kvlint.lint.runner.PARALLEL_MIN_FILES`); below, a second process costs
more than it saves."""


def analyse_file(file: Path) -> FileOutcome:
    """Read and analyse one file. Every failure is that file's problem, never an exception:
    one bad file (or an analyzer bug on it) does not stop the scan, in this process or in a
    worker. The file is parsed, never imported or run."""
    try:
        return _analyse(file)
    except Exception as err:  # a bug in kvlint's analyzer: that file's problem, not a crash
        return FileOutcome(problem=f"{file}:0: kvlint could not analyse this file "
                                   f"({type(err).__name__}: {err}); please report it",
                           reusable=False)


def _analyse(file: Path) -> FileOutcome:
    from kvlint.scan.analyzer import scan_source

    path = str(file)
    try:
        text = read_source(file, MAX_SOURCE_BYTES)
    except UnreadableFile as err:  # a FIFO, a huge or undecodable file: a finding
        return FileOutcome(problem=f"{path}: {err}", reusable=False)
    try:
        found = scan_source(text, path)
    except ValueError as err:  # invalid Python: report it, keep scanning the rest
        return FileOutcome(problem=str(err))
    except (RecursionError, MemoryError):  # ast.parse of an absurdly nested expression
        return FileOutcome(problem=f"{path}:0: invalid Python: nesting too deep to parse",
                           reusable=False)  # the limit is the interpreter's, not the file's
    if not any(marker in text for marker in MARKERS):
        return FileOutcome(findings=tuple(found))
    read = directives(path, text) if may_have_directives(text) else []
    return FileOutcome(findings=tuple(found), suppressions=read)


def _analyse_chunk(files: list[Path]) -> list[FileOutcome]:
    return [analyse_file(f) for f in files]


def default_jobs() -> int:
    """Worker processes for a large tree: the CPUs, at most 8 (as ``lint``)."""
    return min(os.cpu_count() or 1, 8)


def analyse_files(files: Sequence[Path], jobs: int | None = None) -> list[FileOutcome]:
    """:func:`analyse_file` of every file, in order. With :data:`PARALLEL_MIN_FILES` files or
    more, ``jobs`` (default :func:`default_jobs`) of at least 2, and the ``fork`` start
    method (POSIX), the files are analysed in chunks by forked worker processes; the
    outcomes come back in the files' order, so the report is the same as one process's.
    A chunk whose worker fails (the pool breaks) is analysed in this process."""
    workers = default_jobs() if jobs is None else jobs
    if len(files) < PARALLEL_MIN_FILES or workers < 2:
        return [analyse_file(f) for f in files]
    import multiprocessing  # only a tree big enough for workers pays for it

    if "fork" not in multiprocessing.get_all_start_methods():
        return [analyse_file(f) for f in files]
    from concurrent.futures import ProcessPoolExecutor

    size = max(8, len(files) // (workers * 16))  # small chunks: files differ in cost
    chunks = [list(files[i : i + size]) for i in range(0, len(files), size)]
    outcomes: list[FileOutcome] = []
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(_analyse_chunk, chunk) for chunk in chunks]
        for chunk, future in zip(chunks, futures, strict=True):
            try:
                outcomes.extend(future.result())
            except Exception:  # the pool broke (a worker died): do that chunk here
                outcomes.extend(_analyse_chunk(chunk))
    finally:  # on Ctrl-C, drop the chunks not started instead of finishing the scan
        pool.shutdown(wait=True, cancel_futures=True)
    return outcomes


def cached_outcomes(files: Sequence[Path], jobs: int | None = None) -> list[FileOutcome]:
    """:func:`analyse_files`, with each file's outcome reused from ``scan``'s result cache
    (:mod:`kvlint.scan.cache`) while the file and kvlint are unchanged, and stored for the
    next run otherwise."""
    from kvlint.cache.results import Signature, signature
    from kvlint.scan.cache import ScanCache, ScanEntry, scan_fingerprint

    store = ScanCache.open(scan_fingerprint())
    outcomes: list[FileOutcome | None] = []
    keys: list[str | None] = []  # a key of the bytes read (a miss is read again after)
    signatures: list[Signature | None] = []
    for file in files:
        path = str(file)
        sig = signature(path)  # before the file is read: a change while it is read shows
        key = store.known(path, sig)
        outcome = store.outcome(key, path)
        if outcome is None:
            key = _content_key(store, file)
            outcome = store.outcome(key, path)
            if outcome is not None and key is not None:
                store.note(path, sig, key)
        outcomes.append(outcome)
        keys.append(key)
        signatures.append(sig)
    misses = [file for file, outcome in zip(files, outcomes, strict=True) if outcome is None]
    fresh = iter(analyse_files(misses, jobs))
    done: list[FileOutcome] = []
    for file, outcome, key, sig in zip(files, outcomes, keys, signatures, strict=True):
        if outcome is None:
            outcome = next(fresh)
            # stored only when the file still holds the bytes it had before the analysis
            if key is not None and outcome.reusable and _content_key(store, file) == key:
                store.put(key, ScanEntry(str(file), outcome))
                store.note(str(file), sig, key)
        done.append(outcome)
    store.save()
    return done


def _content_key(store: ScanCache, file: Path) -> str | None:
    """The cache key of ``file``'s path and present bytes; ``None`` when it cannot be read
    (it is then analysed, and reported, as without the cache)."""
    try:
        return store.key(str(file), read_bytes(file, MAX_SOURCE_BYTES))
    except UnreadableFile:
        return None


def scan_files(files: Sequence[Path], rules: Sequence[type[Rule]], *, fail_on: str = "error",
               policy: Policy | None = None, unused_suppression: Finding | None = None,
               jobs: int | None = None, cache: bool = False) -> LintRun:
    """Scan ``files`` (see :func:`analyse_files` for ``jobs``) and apply suppressions.
    ``cache``: reuse and store each file's outcome (:func:`cached_outcomes`)."""
    active = {r.code: r for r in rules}
    results: list[ModelResult] = []
    read: dict[str, list[Directive]] = {}
    outcomes = cached_outcomes(files, jobs) if cache and files else analyse_files(files, jobs)
    for file, outcome in zip(files, outcomes, strict=True):
        path = str(file)
        if outcome.problem is not None:
            results.append(_result(path, (_problem(outcome.problem, path, rules),)))
            continue
        findings = tuple(
            replace(active[f.code]().finding(f.message, function=f.function,
                                             variable=f.variable, **f.data),
                    path=path, line=f.line, column=f.column)
            for f in outcome.findings if f.code in active)
        if findings:
            results.append(_result(path, findings))
        if outcome.suppressions is not None:  # fresh copies: applying them marks them used
            read[path] = [replace(d, used=set()) for d in outcome.suppressions]
    final = apply_suppressions(results, {}, policy=policy, unused=unused_suppression,
                               read=read)
    return LintRun(tuple(final), fail_on, tuple(rules))


def _result(path: str, findings: tuple[Finding, ...]) -> ModelResult:
    return ModelResult(Target(path, "source", None, path, None), ServingPlan(), None, findings)


def _problem(message: str, path: str, rules: Sequence[type[Rule]]) -> Finding:
    """Invalid Python is reported like an unreadable manifest (KV903), never a traceback."""
    rule = next((r for r in rules if r.code == "KV903"), None)
    base = rule().finding(message) if rule else Finding("KV903", "manifest-unparsable",
                                                        Severity.ERROR, message)
    return replace(base, path=path)
