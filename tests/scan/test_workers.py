"""``scan`` in worker processes: a tree at or above the threshold gives exactly the report of
one process (codes, paths, lines, columns, messages, data, order), a failure on one file is
that file's problem, and a small scan never imports multiprocessing."""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvlint.linter import LintRun
from kvlint.plugins import get_plugin_manager
from kvlint.registry import Registry
from kvlint.rules.base import Rule
from kvlint.scan import analyzer
from kvlint.scan import scanner as source_scanner
from tests.helpers import GQA_SOURCE, ROOT

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="worker processes need the fork start method")

SUPPRESSED = GQA_SOURCE.replace(
    "self.num_key_value_groups)\n        value_states",
    "self.num_key_value_groups)  # noqa: KV401\n"
    "        value_states", 1)
REAL_SCAN_SOURCE = analyzer.scan_source
PLAIN = "def add(a, b):\n    return a + b\n"
MLA = (ROOT / "fixtures" / "sources" / "mla_not_absorbed.py").read_text(encoding="utf-8")


def _rules() -> tuple[type[Rule], ...]:
    return Registry.from_plugins(get_plugin_manager(load_entry_points=False)).select()


def _tree(root: Path, count: int) -> list[Path]:
    """``count`` files: mostly plain, some that trigger KV401 or KV404, one with a
    suppression, one syntax error, one unreadable (not UTF-8)."""
    root.mkdir()
    for i in range(count):
        sub = root / f"pkg{i % 7}"
        sub.mkdir(exist_ok=True)
        text = GQA_SOURCE if i % 23 == 0 else MLA if i % 31 == 0 else PLAIN
        (sub / f"mod{i:04d}.py").write_text(text, encoding="utf-8")
    (root / "pkg1" / "broken.py").write_text("def f(:\n    pass\n", encoding="utf-8")
    (root / "pkg2" / "suppressed.py").write_text(SUPPRESSED, encoding="utf-8")
    (root / "pkg3" / "latin1.py").write_bytes(b"x = '\xe9'\n")
    return source_scanner.python_files([str(root)])


def _report(run: LintRun) -> list[tuple[Any, ...]]:
    return [(r.target.path, f.code, f.path, f.line, f.column, f.message,
             json.dumps(f.data, sort_keys=True, default=str))
            for r in run.results for f in r.findings]


class _CountingPool(concurrent.futures.ProcessPoolExecutor):
    submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        type(self).submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def counting_pool(monkeypatch: pytest.MonkeyPatch) -> type[_CountingPool]:
    _CountingPool.submitted = 0
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _CountingPool)
    return _CountingPool


def test_workers_give_the_serial_report(tmp_path: Path,
                                        counting_pool: type[_CountingPool]) -> None:
    files = _tree(tmp_path / "tree", source_scanner.PARALLEL_MIN_FILES + 40)
    assert len(files) >= source_scanner.PARALLEL_MIN_FILES
    rules = _rules()
    serial = source_scanner.scan_files(files, rules, jobs=1)
    assert counting_pool.submitted == 0
    parallel = source_scanner.scan_files(files, rules, jobs=2)
    assert counting_pool.submitted > 1  # the tree really went to the workers
    assert _report(parallel) == _report(serial)
    report = _report(serial)
    codes = {row[1] for row in report}
    assert {"KV401", "KV404", "KV903"} <= codes
    broken = [row for row in report if row[2].endswith("broken.py")]
    assert [(row[1], "broken.py:1: invalid Python" in row[5]) for row in broken] == [
        ("KV903", True)]
    assert any(row[2].endswith("latin1.py") and row[1] == "KV903" for row in report)
    suppressed = [row for row in report if row[2].endswith("suppressed.py")]
    assert [row[3] for row in suppressed] == [13]  # line 12's finding is suppressed


def test_a_small_tree_stays_in_this_process(tmp_path: Path,
                                            counting_pool: type[_CountingPool]) -> None:
    files = _tree(tmp_path / "tree", 20)
    source_scanner.scan_files(files, _rules(), jobs=2)
    assert counting_pool.submitted == 0


def _failing_scan_source(text: str, path: str) -> list[Any]:
    if path.endswith("mod0046.py"):
        raise RuntimeError("analyzer bug")
    return REAL_SCAN_SOURCE(text, path)


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_analyzer_error_is_that_files_problem(tmp_path: Path, jobs: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path / "tree", source_scanner.PARALLEL_MIN_FILES)
    monkeypatch.setattr(analyzer, "scan_source", _failing_scan_source)
    report = _report(source_scanner.scan_files(files, _rules(), jobs=jobs))
    [problem] = [row for row in report if row[2].endswith("mod0046.py")]
    assert problem[1] == "KV903"
    assert "kvlint could not analyse this file (RuntimeError: analyzer bug)" in problem[5]
    assert sum(row[1] == "KV401" for row in report) > 5  # the other files were scanned


def test_a_dead_worker_leaves_its_chunks_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path / "tree", source_scanner.PARALLEL_MIN_FILES + 40)
    rules = _rules()
    serial = _report(source_scanner.scan_files(files, rules, jobs=1))
    parent = os.getpid()

    def dying(text: str, path: str) -> list[Any]:
        if os.getpid() != parent and path.endswith("mod0100.py"):
            os._exit(3)  # a worker killed mid-chunk (OOM killer, a crash)
        return REAL_SCAN_SOURCE(text, path)

    monkeypatch.setattr(analyzer, "scan_source", dying)
    assert _report(source_scanner.scan_files(files, rules, jobs=2)) == serial


def test_a_small_scan_imports_no_multiprocessing(tmp_path: Path) -> None:
    (tmp_path / "attn.py").write_text(GQA_SOURCE, encoding="utf-8")
    code = (
        "import sys, json\n"
        "from click.testing import CliRunner\n"
        "from kvlint.cli import main\n"
        f"r = CliRunner().invoke(main, ['scan', {str(tmp_path)!r}, '--isolated',\n"
        "                               '--no-plugins', '--format', 'json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(json.dumps(list(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=120)
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert "kvlint.scan.analyzer" in loaded
    assert not {m for m in loaded
                if m.startswith(("multiprocessing", "concurrent.futures.process"))}
