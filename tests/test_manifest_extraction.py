"""Manifests parsed in worker processes: the same served models, in the same order, as in
one process; parsers prepared once in the parent before the fork; the collector's settings
back as they were after a lint."""

from __future__ import annotations

import gc
import os
import shutil
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from kvlint.lint import extraction as manifest_extraction
from kvlint.manifests.base import DocumentContext, ManifestParser, ServedModel
from kvlint.plugins import get_plugin_manager
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="worker processes need the fork start method")

CORPUS = ROOT / "fixtures" / "manifests"


def _tree(root: Path) -> list[Path]:
    """Copies of the fixture corpus, enough files for the worker path."""
    copies = manifest_extraction.PARALLEL_MIN_FILES // 40 + 1
    for i in range(copies):
        shutil.copytree(CORPUS, root / f"copy{i}")
    files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    assert len(files) >= manifest_extraction.PARALLEL_MIN_FILES
    return files


class _Recording(ManifestParser):
    """A parser that serves nothing and records where it was prepared."""

    name = "recording"
    prepared: ClassVar[list[int]] = []

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return False

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        return []

    def prepare(self) -> None:
        self.prepared.append(os.getpid())


def test_workers_extract_what_one_process_does(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path / "tree")
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    monkeypatch.setattr(manifest_extraction.os, "cpu_count", lambda: 2)
    _Recording.prepared = []
    recording = _Recording()
    workers = manifest_extraction.extract_all(files, pm, [*parsers, recording])
    assert _Recording.prepared == [os.getpid()]  # once, here, before the fork
    monkeypatch.setattr(manifest_extraction, "PARALLEL_MIN_FILES", 10**9)
    alone = manifest_extraction.extract_all(files, pm, [*parsers, recording])
    assert _Recording.prepared == [os.getpid()]  # one process: nothing to prepare for
    assert [repr(x) for x in workers] == [repr(x) for x in alone]
    assert [getattr(x, "read_files", None) for x in workers] == \
        [getattr(x, "read_files", None) for x in alone]
    assert sum(len(x) for x in alone if isinstance(x, list)) > len(files)


def test_bulk_collection_restores_the_collector() -> None:
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    with manifest_extraction.bulk_collection():
        assert gc.get_threshold()[0] == max(threshold[0], manifest_extraction.BULK_THRESHOLD)
        assert gc.get_freeze_count() >= frozen
        with manifest_extraction.bulk_collection():  # nested: the outer one restores
            pass
        assert gc.get_threshold()[0] == max(threshold[0], manifest_extraction.BULK_THRESHOLD)
    assert gc.get_threshold() == threshold and gc.get_freeze_count() == 0


def test_the_linting_process_does_not_read_a_parsed_file_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kvlint.lint import runner as manifest_linter
    from kvlint.lint.options import LintOptions
    from kvlint.registry import Registry

    files = _tree(tmp_path / "tree")
    pm = get_plugin_manager(load_entry_points=False)
    rules = tuple(Registry.from_plugins(pm).select())
    monkeypatch.setattr(manifest_extraction.os, "cpu_count", lambda: 2)
    read: list[str] = []
    real = manifest_linter.read_text

    def spy(path: object, limit: int) -> str:
        read.append(str(path))
        return real(path, limit)  # type: ignore[arg-type]

    monkeypatch.setattr(manifest_linter, "read_text", spy)
    run = manifest_linter.lint_paths([str(f) for f in files],
                                     LintOptions(rules=rules, pm=pm, offline=True))
    assert any(f.column for r in run.results for f in r.findings)  # columns were placed
    # ... in the text each worker parsed: only a file that is no manifest (a Helm template,
    # invalid YAML) is read again, to place its problem
    problems = {r.target.path for r in run.results
                if any(f.code == "KV903" for f in r.findings) and r.analysis is None}
    assert read and set(read) <= problems


def test_objects_the_process_froze_itself_stay_frozen() -> None:
    gc.freeze()  # as a server embedding kvlint might, before forking its own workers
    try:
        frozen = gc.get_freeze_count()
        with manifest_extraction.bulk_collection():
            pass
        assert gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()
