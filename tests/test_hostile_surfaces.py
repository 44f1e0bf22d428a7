"""Adversarial tests of the surfaces issue 31 hardens: the engine-table cache, the result
caches, stdin, the GitHub Action's files and ``--vllm-log``. Every malicious fixture (links,
FIFOs, /dev/zero, oversized and deeply nested inputs, poisoned cache entries) is made at run
time; every test is time-bounded (an alarm in process, a timeout and a memory cap in a
child process)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint import cache
from kvlint import engines as engines_module
from kvlint.cli import main
from kvlint.loaders.files import MAX_MANIFEST_BYTES
from tests.helpers import CONFIGS, ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX special files")

LLAMA = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
MEMORY_CAP = 2 << 30


@pytest.fixture(autouse=True)
def _time_bound() -> Iterator[None]:
    """Each test ends within 60 s: a hang (a FIFO opened for blocking) fails it."""
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError("test exceeded its time bound (a hang?)")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            **extra}


def kvlint(*args: str, cwd: Path, timeout: float = 45, **env: str
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvlint", *args], cwd=cwd,
                          env=child_env(**env), capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_cap_memory, check=False)


def one_line_exit_2(code: int, stderr: str, *words: str) -> None:
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr and "internal error" not in stderr, \
        stderr
    assert all(w in lines[0] for w in words), lines[0]


# ============================================================ 1. the engine-table cache
def _parse_shipped() -> str:
    import tomllib

    text = (ROOT / "kvlint" / "engines" / "engines.toml").read_text("utf-8")
    return json.dumps(tomllib.loads(text))


SHIPPED = _parse_shipped()


def _shipped() -> dict[str, Any]:
    """The shipped table as parsed (a fresh copy)."""
    data: dict[str, Any] = json.loads(SHIPPED)
    return data


def _table_file(directory: Path) -> Path:
    text = (ROOT / "kvlint" / "engines" / "engines.toml").read_text("utf-8")
    return directory / f"engines-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"


def _poisoned() -> dict[str, Any]:
    """The shipped table with every engine's KV sharding flipped (a KV202 becomes KV201)."""
    data = _shipped()
    for engine in data["engines"].values():
        engine["kv_sharding"] = "replicate" if engine.get("kv_sharding") != "replicate" \
            else "shard"
        engine.pop("kv_sharding_by_version", None)
    return data


@pytest.fixture
def table_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "kvlint-cache"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(directory))
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    engines_module.load_engines.cache_clear()
    yield directory
    engines_module.load_engines.cache_clear()


def test_the_engine_cache_is_used_when_bound_to_the_shipped_table(
        table_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert engines_module._read_table() == _shipped()
    file = _table_file(table_dir)
    assert file.is_file() and file.stat().st_mode & 0o077 == 0
    monkeypatch.setattr(engines_module.tomllib, "loads", _refuse)  # read back, not parsed
    assert engines_module._read_table() == _shipped()


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the TOML was parsed: the cache was not used")


@pytest.mark.parametrize("forge", ["plain-json", "edited-body", "sha256-header"])
def test_an_edited_or_forged_engine_cache_is_not_used(table_dir: Path, forge: str) -> None:
    file = _table_file(table_dir)
    body = json.dumps(_poisoned()).encode()
    if forge == "plain-json":  # the old format: bare JSON
        file.write_bytes(body)
    else:
        engines_module._read_table()  # a genuine copy, then edited
        head = file.read_bytes().partition(b"\n")[0]
        if forge == "sha256-header":  # a self-consistent digest without the key
            head = b"kvlint-engines-1 " + hashlib.sha256(body).hexdigest().encode()
        file.write_bytes(head + b"\n" + body)
    os.chmod(file, 0o600)
    assert engines_module._read_table() == _shipped()
    sharding = {k: e.kv_sharding for k, e in engines_module.load_engines().items()}
    assert sharding == {k: engines_module._engine(k, v).kv_sharding
                        for k, v in _shipped()["engines"].items()
                        if k in sharding}


def _genuine(table_dir: Path) -> bytes:
    engines_module._read_table()
    return _table_file(table_dir).read_bytes()


def test_an_engine_cache_that_is_a_link_is_not_read_nor_written_through(
        table_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _genuine(table_dir)
    file = _table_file(table_dir)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(data)
    file.unlink()
    file.symlink_to(elsewhere)
    monkeypatch.setattr(cache, "read_private", _spy_read(cache.read_private))
    assert engines_module._read_table() == _shipped()
    assert elsewhere.read_bytes() == data  # the link was replaced, its target untouched
    assert not file.is_symlink()


def _spy_read(real: Any) -> Any:
    def spy(path: Path, limit: int) -> bytes:
        result: bytes = real(path, limit)
        raise AssertionError(f"{path} was read ({len(result)} bytes)")

    return spy


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_group_or_world_writable_engine_cache_is_ignored(table_dir: Path, mode: int,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    _genuine(table_dir)
    os.chmod(_table_file(table_dir), mode)
    monkeypatch.setattr(engines_module.tomllib, "loads", _counting(engines_module.tomllib.loads))
    assert engines_module._read_table() == _shipped()
    assert _counting.calls == 1  # parsed again: the copy was not trusted


def _counting(real: Any) -> Any:
    _counting.calls = 0  # type: ignore[attr-defined]

    def count(text: str) -> Any:
        _counting.calls += 1  # type: ignore[attr-defined]
        return real(text)

    return count


def test_an_engine_cache_in_a_world_writable_directory_is_neither_read_nor_written(
        table_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _genuine(table_dir)
    file = _table_file(table_dir)
    genuine = file.read_bytes()
    os.chmod(table_dir, 0o1777)
    monkeypatch.setattr(cache, "read_private", _spy_read(cache.read_private))
    file.unlink()
    assert engines_module._read_table() == _shipped()
    assert not file.exists() and genuine  # not written into it either


@pytest.mark.parametrize("special", ["fifo", "huge", "dev-zero", "directory"])
def test_a_special_or_huge_engine_cache_does_not_block_or_load(table_dir: Path,
                                                               special: str) -> None:
    file = _table_file(table_dir)
    if special == "fifo":
        os.mkfifo(file, 0o600)
    elif special == "huge":
        with open(file, "wb") as handle:
            handle.truncate(engines_module.MAX_TABLE_CACHE_BYTES + 1)
    elif special == "dev-zero":
        file.symlink_to("/dev/zero")
    else:
        file.mkdir()
    assert engines_module._read_table() == _shipped()


@pytest.mark.parametrize("how", ["env", "flag"])
def test_no_cache_reads_nothing_under_the_cache_directory(
        table_dir: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    file = _table_file(table_dir)
    file.write_bytes(b"poisoned")
    monkeypatch.setattr(cache, "read_private", _spy_read(cache.read_private))
    monkeypatch.setattr(cache, "write_private", _refuse)
    if how == "env":
        monkeypatch.setenv("KVLINT_NO_CACHE", "1")
        assert engines_module._read_table() == _shipped()
    else:
        with cache.scope(no_cache=True):
            assert engines_module._read_table() == _shipped()
        assert not cache.flag_disabled()  # restored after the command
    assert file.read_bytes() == b"poisoned"


def test_a_poisoned_engine_cache_does_not_change_a_verdict(tmp_path: Path) -> None:
    """End to end: the KV202 of an 8-KV-head model at tp=3 stays, whatever was planted."""
    directory = tmp_path / "kvlint-cache"
    directory.mkdir(mode=0o700)
    env = {"KVLINT_CACHE_DIR": str(directory), "KVLINT_NO_CACHE": ""}
    clean = kvlint("check", str(LLAMA), "--tp", "3", "--format", "json", cwd=tmp_path, **env)
    assert "KV202" in clean.stdout and clean.returncode == 1, clean.stderr
    file = _table_file(directory)
    assert file.is_file(), clean.stderr
    body = json.dumps(_poisoned()).encode()
    for planted in (body, b"kvlint-engines-1 " + hashlib.sha256(body).hexdigest().encode()
                    + b"\n" + body):
        file.write_bytes(planted)
        again = kvlint("check", str(LLAMA), "--tp", "3", "--format", "json", cwd=tmp_path,
                       **env)
        assert (again.returncode, again.stdout) == (clean.returncode, clean.stdout)


# ============================================================ 2. the result caches
GQA = "import torch\n\ndef f(x):\n    return x\n"


@pytest.fixture
def scan_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    from kvlint.cache import results as result_cache

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text(GQA, encoding="utf-8")
    directory = tmp_path / "kvlint-cache"
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(directory))
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    monkeypatch.chdir(tmp_path)
    return src, directory


def _analysed(src: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many files a cached scan of ``src`` analysed (0: all from the cache)."""
    from kvlint.scan import scanner as source_scanner

    seen: list[int] = []
    real = source_scanner.analyse_files

    def spy(files: list[Path], jobs: int | None = None) -> Any:
        seen.append(len(files))
        return real(files, jobs)

    monkeypatch.setattr(source_scanner, "analyse_files", spy)
    source_scanner.cached_outcomes(sorted(src.glob("*.py")))
    monkeypatch.setattr(source_scanner, "analyse_files", real)
    return sum(seen)


def _scan_file(directory: Path) -> Path:
    (file,) = (directory / "scan").glob("*.pickle")
    return file


def test_the_scan_cache_is_reused_when_trusted(scan_tree: tuple[Path, Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    src, directory = scan_tree
    assert _analysed(src, monkeypatch) == 1
    assert _analysed(src, monkeypatch) == 0
    assert _scan_file(directory).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("change", ["file-g+w", "file-o+w", "dir-o+w", "dir-link",
                                    "file-link", "in-repository"])
def test_an_untrusted_result_cache_is_not_read(scan_tree: tuple[Path, Path], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               change: str) -> None:
    src, directory = scan_tree
    _analysed(src, monkeypatch)
    file = _scan_file(directory)
    kind = directory / "scan"
    if change == "file-g+w":
        os.chmod(file, 0o620)
    elif change == "file-o+w":
        os.chmod(file, 0o602)
    elif change == "dir-o+w":
        os.chmod(kind, 0o777)
    elif change == "dir-link":
        moved = tmp_path / "planted"
        kind.rename(moved)
        kind.symlink_to(moved)
    elif change == "file-link":
        moved = tmp_path / "planted.pickle"
        file.rename(moved)
        file.symlink_to(moved)
    else:  # the cache sits inside the linted repository
        (tmp_path / ".git").mkdir()
    assert _analysed(src, monkeypatch) == 1  # analysed again: the cache was not trusted
    if change == "file-link":
        assert not file.is_symlink()  # replaced by the write, never written through


def test_a_result_cache_inside_a_linted_path_is_not_trusted(
        scan_tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    src, _directory = scan_tree
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(src / ".kvlint-cache"))
    with cache.scope(linted=[str(src)]):
        _analysed(src, monkeypatch)
        assert not (src / ".kvlint-cache" / "scan").exists() or \
            not list((src / ".kvlint-cache" / "scan").glob("*.pickle"))


@pytest.mark.parametrize("body", [b"", b"garbage", b"kvlint-scan-cache\n\x80\x05N.",
                                  b"kvlint-scan-cache\n" + b"(" * 100_000])
def test_a_malformed_result_cache_is_dropped(scan_tree: tuple[Path, Path],
                                             monkeypatch: pytest.MonkeyPatch,
                                             body: bytes) -> None:
    src, directory = scan_tree
    _analysed(src, monkeypatch)
    file = _scan_file(directory)
    file.write_bytes(body)
    assert _analysed(src, monkeypatch) == 1
    assert _analysed(src, monkeypatch) == 0  # rewritten whole


def test_a_fifo_or_huge_result_cache_does_not_block(scan_tree: tuple[Path, Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from kvlint.cache import results as result_cache

    src, directory = scan_tree
    _analysed(src, monkeypatch)
    file = _scan_file(directory)
    file.unlink()
    os.mkfifo(file, 0o600)
    assert _analysed(src, monkeypatch) == 1
    monkeypatch.setattr(result_cache, "MAX_BYTES", 64)
    assert _analysed(src, monkeypatch) == 1  # larger than the bound: neither read nor kept


def test_no_cache_flag_reads_no_result_cache(scan_tree: tuple[Path, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    src, _directory = scan_tree
    _analysed(src, monkeypatch)
    monkeypatch.setattr(cache, "read_private", _spy_read(cache.read_private))
    from kvlint.cache import results as result_cache

    monkeypatch.setattr(result_cache, "read_private", _spy_read(cache.read_private))
    with cache.scope(no_cache=True):
        assert _analysed(src, monkeypatch) == 1


def test_scan_no_cache_reads_nothing_under_the_cache_directory(
        scan_tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """``kvlint scan --no-cache``, end to end: neither the result cache nor the engine
    table's copy is read, and the command still scans (a clean verdict, exit 0)."""
    from click.testing import CliRunner

    from kvlint.cache import results as result_cache
    from kvlint.cli import main

    src, _directory = scan_tree
    _analysed(src, monkeypatch)  # a primed cache
    monkeypatch.setattr(cache, "read_private", _spy_read(cache.read_private))
    monkeypatch.setattr(result_cache, "read_private", _spy_read(cache.read_private))
    result = CliRunner().invoke(main, ["scan", str(src), "--no-cache", "--isolated",
                                       "--no-plugins", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"results": []' in result.output
    assert not cache.flag_disabled()  # restored after the command


# ============================================================ 3. stdin
def test_stdin_beyond_the_manifest_limit_is_refused(tmp_path: Path) -> None:
    """``yes | kvlint lint -``: a generator that never stops writing; one line, exit 2."""
    generator = subprocess.Popen(
        [sys.executable, "-c", "import sys\nwhile True: sys.stdout.buffer.write(b'y\\n' * 65536)"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        done = subprocess.run([sys.executable, "-m", "kvlint", "lint", "-", "--isolated",
                               "--no-plugins"], cwd=tmp_path, env=child_env(),
                              stdin=generator.stdout, capture_output=True, timeout=45,
                              preexec_fn=_cap_memory, check=False)
    finally:
        generator.kill()
        generator.wait(10)
        if generator.stdout is not None:
            generator.stdout.close()
    one_line_exit_2(done.returncode, done.stderr.decode(), "stdin",
                    f"{MAX_MANIFEST_BYTES >> 20} MiB")


def test_stdin_at_the_limit_is_read(tmp_path: Path) -> None:
    text = b"# padding\n" * ((MAX_MANIFEST_BYTES - 64) // 10)
    done = subprocess.run([sys.executable, "-m", "kvlint", "lint", "-", "--isolated",
                           "--no-plugins"], cwd=tmp_path, env=child_env(), input=text,
                          capture_output=True, timeout=45, preexec_fn=_cap_memory, check=False)
    assert b"larger than" not in done.stderr and b"Traceback" not in done.stderr


# ============================================================ 4. the GitHub Action's files
def action(env: dict[str, str], *args: str) -> tuple[int, str]:
    full = {"GITHUB_EVENT_NAME": "push", "GITHUB_OUTPUT": "", "GITHUB_STEP_SUMMARY": "",
            "GITHUB_EVENT_PATH": "", **env}
    result = CliRunner().invoke(main, ["github-action", *args], env=full)
    assert not isinstance(result.exception, Exception) or \
        isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def _special(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
        return str(path)
    if kind == "directory":
        return str(tmp_path)
    if kind == "dev-zero":
        return "/dev/zero"
    if kind == "link":
        target = tmp_path / "elsewhere"
        target.write_text("")
        link = tmp_path / "link"
        link.symlink_to(target)
        return str(link)
    if kind == "dangling-link":
        link = tmp_path / "dangling"
        link.symlink_to(tmp_path / "nowhere" / "x")
        return str(link)
    return str(tmp_path / "missing-dir" / "out")  # unwritable: no such directory


KINDS = ["fifo", "directory", "dev-zero", "link", "dangling-link", "unwritable"]


@pytest.mark.parametrize("variable", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_unusable_action_output_file_is_one_line_exit_2(tmp_path: Path, variable: str,
                                                           kind: str,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.chdir(tmp_path)
    target = _special(kind, tmp_path)
    code, err = action({variable: target})
    one_line_exit_2(code, err, variable)
    if kind == "link":
        assert (tmp_path / "elsewhere").read_text() == ""  # nothing written through


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev-zero", "unwritable"])
def test_an_unusable_event_file_is_one_line_exit_2(tmp_path: Path, kind: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = action({"GITHUB_EVENT_NAME": "pull_request",
                        "GITHUB_EVENT_PATH": _special(kind, tmp_path)})
    one_line_exit_2(code, err)


@pytest.mark.parametrize("payload", ["nested-open", "nested-closed", "huge"])
def test_a_nested_or_endless_event_payload_is_refused(tmp_path: Path, payload: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    event = tmp_path / "event.json"
    if payload == "nested-open":
        event.write_text('{"pull_request": ' + "[" * 200_000)
    elif payload == "nested-closed":
        event.write_text('{"pull_request": ' + "[" * 500 + "]" * 500 + "}")
    else:
        with open(event, "wb") as handle:  # sparse: 64 GiB of nothing
            handle.truncate(64 << 30)
    code, err = action({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)})
    one_line_exit_2(code, err, "GITHUB_EVENT_PATH")


# ============================================================ 5. --vllm-log
def test_a_fifo_log_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "vllm.log"
    os.mkfifo(fifo)
    done = kvlint("probe", str(LLAMA), "--vllm-log", str(fifo), cwd=tmp_path, timeout=30)
    one_line_exit_2(done.returncode, done.stderr, "vllm.log", "regular file")


@pytest.mark.parametrize("text", ["", "GET /v1/completions HTTP/1.1 200\nhello\n",
                                  "\0" * 4096, "INFO 01-01 00:00:00 api_server.py:1] ok\n"])
def test_a_log_with_nothing_comparable_is_never_ok(tmp_path: Path, text: str) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(text)
    done = kvlint("probe", str(LLAMA), "--vllm-log", str(log), "--format", "json",
                  cwd=tmp_path, timeout=30)
    one_line_exit_2(done.returncode, done.stderr, "nothing comparable")


def test_a_device_log_is_refused(tmp_path: Path) -> None:
    done = kvlint("probe", str(LLAMA), "--vllm-log", "/dev/zero", cwd=tmp_path, timeout=30)
    one_line_exit_2(done.returncode, done.stderr, "regular file")
