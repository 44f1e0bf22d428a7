"""``kvlint scan``'s result cache: an unchanged file is not analysed again, the report is the
one an uncached scan gives, and a cache file is checked before anything in it is used."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kvlint.cache import results as result_cache
from kvlint.cli import main
from kvlint.scan import cache as scan_cache
from kvlint.scan import scanner as source_scanner
from kvlint.scan.findings import SourceFinding
from kvlint.suppress import Directive
from tests.helpers import GQA_SOURCE, framed

HEADER = b"kvlint-scan-cache\n"
UNUSED = "def add(a, b):  # kvlint: ignore[KV401] never materialised here\n    return a + b\n"
USED = GQA_SOURCE.replace(
    "        key_states = repeat_kv(key_states, self.num_key_value_groups)\n",
    "        # kvlint: ignore[KV401] reference implementation, never served\n"
    "        key_states = repeat_kv(key_states, self.num_key_value_groups)\n")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``src/`` with a GQA module (KV401), a module with a used and one with an unused
    suppression, a syntax error and a plain module; the cache in a directory of its own,
    turned on, and files counted as old enough to be known by ``stat``."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "attn.py").write_text(GQA_SOURCE, encoding="utf-8")
    (src / "used.py").write_text(USED, encoding="utf-8")
    (src / "unused.py").write_text(UNUSED, encoding="utf-8")
    (src / "broken.py").write_text("def f(:\n", encoding="utf-8")
    (src / "plain.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "kvlint-cache"))
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # the files were written just now
    return src


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The files each run analysed (a cached file is not)."""
    runs: list[list[str]] = []
    monkeypatch.setattr(source_scanner, "analyse_files",
                        _spy(source_scanner.analyse_files, runs))
    return runs


def _spy(real: Any, runs: list[list[str]]) -> Any:
    def spy(files: list[Path], jobs: int | None = None) -> Any:
        runs.append(sorted(f.name for f in files))
        return real(files, jobs)

    return spy


def scan(*args: str) -> Result:
    result = CliRunner().invoke(main, ["scan", "src", "--isolated", "--no-plugins",
                                       "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result


def findings(result: Result) -> list[tuple[str, str, int]]:
    data = json.loads(result.stdout)
    return sorted((Path(f["path"]).name, f["code"], f["line"]) for r in data["results"]
                  for f in r["findings"])


def cache_file(tmp_path: Path) -> Path:
    (file,) = (tmp_path / "kvlint-cache" / "scan").glob("*.pickle")
    return file


def read_cache(file: Path) -> tuple[Any, ...]:
    """``(layout, fingerprint, entries, stats)`` of a cache file the run wrote (trusted)."""
    loaded: tuple[Any, ...] = pickle.loads(file.read_bytes()[len(HEADER) + 32:])
    return loaded


ALL = ["attn.py", "broken.py", "plain.py", "unused.py", "used.py"]


def test_an_unchanged_tree_is_not_analysed_again(tree: Path, tmp_path: Path,
                                                 analysed: list[list[str]]) -> None:
    first, second = scan(), scan()
    assert analysed == [ALL, []]
    assert first.stdout == second.stdout == scan("--no-cache").stdout
    assert ("broken.py", "KV903") in [f[:2] for f in findings(second)]  # cached too
    assert ("attn.py", "KV401", 12) in findings(second)
    # the used suppression still hides its finding; the unused one is still reported
    assert [f for f in findings(second) if f[0] == "used.py"] == [("used.py", "KV401", 14)]
    assert ("unused.py", "KV901", 1) in findings(second)
    assert scan().stdout == first.stdout  # applying suppressions did not change the cache
    _, _, entries, stats = read_cache(cache_file(tmp_path))
    assert len(entries) == len(stats) == 5


def test_an_edited_file_is_analysed_again(tree: Path, analysed: list[list[str]]) -> None:
    scan()
    (tree / "plain.py").write_text(GQA_SOURCE, encoding="utf-8")
    result = scan()
    assert analysed[-1] == ["plain.py"]
    assert ("plain.py", "KV401", 12) in findings(result)
    assert result.stdout == scan("--no-cache").stdout


def test_a_same_size_same_mtime_edit_is_seen(tree: Path, analysed: list[list[str]]) -> None:
    scan()
    file = tree / "plain.py"
    info = file.stat()
    file.write_text("y = 2\n", encoding="utf-8")  # same size
    os.utime(file, ns=(info.st_atime_ns, info.st_mtime_ns))
    scan()
    assert analysed[-1] == ["plain.py"]


def test_the_selection_and_settings_apply_to_cached_findings(
        tree: Path, analysed: list[list[str]]) -> None:
    scan()
    ignored = scan("--ignore", "KV401")
    assert analysed[-1] == []
    assert not any(code == "KV401" for _, code, _ in findings(ignored))
    (tree.parent / ".kvlint.toml").write_text("ignore = ['KV401']\n", encoding="utf-8")
    configured = CliRunner().invoke(main, ["scan", "src", "--no-plugins", "--format", "json"])
    assert analysed[-1] == []
    assert findings(configured) == findings(ignored) != findings(scan())


def test_unreadable_files_and_failed_analyses_are_not_cached(
        tree: Path, tmp_path: Path, analysed: list[list[str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "latin1.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8: unreadable
    real = source_scanner._analyse

    def failing(file: Path) -> Any:
        if file.name == "plain.py":
            raise RuntimeError("an analyzer bug")
        return real(file)

    monkeypatch.setattr(source_scanner, "_analyse", failing)
    first = scan()
    assert "kvlint could not analyse this file" in first.stdout
    monkeypatch.setattr(source_scanner, "_analyse", real)
    second = scan()
    assert analysed[-1] == ["latin1.py", "plain.py"]
    assert "kvlint could not analyse this file" not in second.stdout
    _, _, entries, _ = read_cache(cache_file(tmp_path))
    assert sorted(Path(e.path).name for e in entries.values()) == ALL


def test_a_file_changed_while_it_is_analysed_is_not_cached(
        tree: Path, analysed: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    real = source_scanner.analyse_files  # the spy

    def editing(files: list[Path], jobs: int | None = None) -> Any:
        outcomes = real(files, jobs)
        with (tree / "attn.py").open("a", encoding="utf-8") as handle:
            handle.write("# edited during the scan\n")
        return outcomes

    monkeypatch.setattr(source_scanner, "analyse_files", editing)
    scan()
    monkeypatch.setattr(source_scanner, "analyse_files", real)  # the spy again
    scan()
    assert analysed == [ALL, ["attn.py"]]


def test_no_cache_option_env_and_setting_bypass(tree: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "kvlint-cache" / "scan"
    scan("--no-cache")
    assert not directory.exists()
    monkeypatch.setenv("KVLINT_NO_CACHE", "1")
    scan()
    assert not directory.exists()
    monkeypatch.delenv("KVLINT_NO_CACHE")
    (tree.parent / ".kvlint.toml").write_text("cache = false\n", encoding="utf-8")
    CliRunner().invoke(main, ["scan", "src", "--no-plugins"])
    assert not directory.exists()
    (tree.parent / ".kvlint.toml").unlink()
    scan()
    assert len(list(directory.glob("*.pickle"))) == 1


def _bad_entries(good: scan_cache.ScanEntry) -> list[object]:
    """Entries a hostile hand could write in place of ``good`` (one of attn.py's)."""
    outcome = good.outcome
    finding = outcome.findings[0]

    def with_finding(**changes: object) -> object:
        bad = dataclasses.replace(finding, **changes)  # type: ignore[arg-type]
        return dataclasses.replace(good, outcome=dataclasses.replace(
            outcome, findings=(bad,)))

    directive = Directive(good.path, 3, ("KV401",), "reason", "line", (3, 3))
    return [
        "not an entry",
        dataclasses.replace(good, path=7),  # type: ignore[arg-type]
        dataclasses.replace(good, used="yesterday"),  # type: ignore[arg-type]
        dataclasses.replace(good, outcome=dataclasses.replace(outcome, reusable=False)),
        dataclasses.replace(good, outcome=dataclasses.replace(outcome, problem=3)),  # type: ignore[arg-type]
        dataclasses.replace(good, outcome=dataclasses.replace(
            outcome, findings=list(outcome.findings))),  # type: ignore[arg-type]
        with_finding(code="KV101"),  # not the analyzer's: would become another rule's
        with_finding(line=10**12),
        with_finding(column=-1),
        with_finding(message=None),
        with_finding(data={"message": "a keyword the rule's finding() takes"}),
        with_finding(data={"helper": ["not", "a", "scalar"]}),
        dataclasses.replace(good, outcome=dataclasses.replace(
            outcome, suppressions=[dataclasses.replace(directive, path="elsewhere.py")])),
        dataclasses.replace(good, outcome=dataclasses.replace(
            outcome, suppressions=[dataclasses.replace(
                directive, span=(1, 2, 3))])),  # type: ignore[arg-type]
        dataclasses.replace(good, outcome=dataclasses.replace(
            outcome, suppressions=[dataclasses.replace(directive, scope="everywhere")])),
        dataclasses.replace(good, outcome=dataclasses.replace(
            outcome, suppressions=(directive,))),  # type: ignore[arg-type]
    ]


def test_a_crafted_entry_is_dropped_and_the_file_analysed_again(
        tree: Path, tmp_path: Path, analysed: list[list[str]]) -> None:
    expected = scan().stdout
    file = cache_file(tmp_path)
    layout, fingerprint, entries, stats = read_cache(file)
    key, good = next((k, e) for k, e in entries.items() if e.path.endswith("attn.py"))
    assert isinstance(good.outcome.findings[0], SourceFinding)
    for bad in _bad_entries(good):
        file.write_bytes(framed(HEADER, pickle.dumps((layout, fingerprint,
                                                      {**entries, key: bad}, stats))))
        result = scan()
        assert analysed[-1] == ["attn.py"], bad
        assert result.stdout == expected, bad


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_foreign_cache_file_runs_nothing(tree: Path, tmp_path: Path) -> None:
    expected = scan().stdout
    file = cache_file(tmp_path)
    layout, fingerprint, _, _ = read_cache(file)
    marker = tmp_path / "pwned"
    for body in (pickle.dumps((layout, fingerprint, {"0" * 64: _Payload(marker)}, {})),
                 pickle.dumps(_Payload(marker)), b"garbage", b""):
        file.write_bytes(framed(HEADER, body))
        assert scan().stdout == expected
        assert not marker.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="worker processes need fork")
def test_a_large_tree_in_workers_gives_the_uncached_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "kvlint-cache"))
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    root = tmp_path / "big"
    root.mkdir()
    for i in range(source_scanner.PARALLEL_MIN_FILES + 20):
        text = GQA_SOURCE if i % 9 == 0 else USED if i % 13 == 0 else f"x = {i}\n"
        (root / f"m{i:04d}.py").write_text(text, encoding="utf-8")
    files = source_scanner.python_files([str(root)])
    from kvlint.plugins import get_plugin_manager
    from kvlint.registry import Registry

    rules = Registry.from_plugins(get_plugin_manager(load_entry_points=False)).select()

    def report(**options: Any) -> list[tuple[Any, ...]]:
        run = source_scanner.scan_files(files, rules, jobs=2, **options)
        return [(f.path, f.code, f.line, f.column, f.message) for r in run.results
                for f in r.findings]

    uncached = report()
    assert report(cache=True) == uncached  # fills the cache
    (root / "m0001.py").write_text(GQA_SOURCE, encoding="utf-8")
    uncached = report()
    assert report(cache=True) == uncached  # one file again, the rest from the cache
    assert report(cache=True) == uncached
