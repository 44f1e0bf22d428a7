"""Property tests (hypothesis) for the decoders of the trust surfaces: the result cache's
entry decoder and the vLLM log reader. Whatever bytes a cache file or a log holds, the
decoder returns (an empty cache, a log with fewer figures) or refuses in one line; it never
raises, never hangs, and a cache file can never change a verdict.
(The lock's properties are in tests/test_lock_hostile.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import signal
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.cache import results as result_cache
from kvlint.cache.conform import MAX_INT_BITS, conforms
from kvlint.cli import main
from kvlint.lint import cache as lint_cache
from kvlint.loaders.vllm_log import VllmLog, parse_text
from tests.helpers import CONFIGS, framed
from tests.loaders.test_vllm_log_formats import ENTRIES, PREFIX, _line
from tests.test_lint_cache import MANIFEST as LINT_CACHE_MANIFEST

HEADER = b"kvlint-lint-cache\n"
MANIFEST = LINT_CACHE_MANIFEST.format(tp=3)  # tp=3 of 8 KV heads: KV202


@contextlib.contextmanager
def bounded(seconds: int) -> Iterator[None]:
    """A wall-clock bound on one example (a hang fails the test instead of stalling CI)."""
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"not done within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ============================================================ the result cache's decoder
@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, str]:
    """A checkout linted once with the cache on: (the checkout, the cache file's bytes,
    the uncached JSON report)."""
    root = tmp_path_factory.mktemp("repo")
    (root / "deploy").mkdir()
    (root / "models" / "llama").mkdir(parents=True)
    (root / "deploy" / "app.yaml").write_text(MANIFEST, encoding="utf-8")
    (root / "models" / "llama" / "config.json").write_text(
        (CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, root)
        clean = _lint(root, "--no-cache")
        assert clean.exit_code == 1 and "KV202" in clean.stdout, clean.output
        _lint(root)
        files = sorted((root.parent / f"{root.name}-cache" / "lint").glob("*.pickle"))
        assert len(files) == 1
        return root, files[0].read_bytes(), clean.stdout


def _environment(mp: pytest.MonkeyPatch, root: Path) -> None:
    cache = root.parent / f"{root.name}-cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    mp.chdir(root)
    mp.setenv("KVLINT_CACHE_DIR", str(cache))
    mp.setenv("HF_HUB_CACHE", str(root.parent / "hf-cache"))
    mp.delenv("KVLINT_NO_CACHE", raising=False)
    mp.setattr(result_cache, "RACY_NS", 0)


def _lint(root: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["lint", "deploy", "--no-plugins", "--isolated",
                                     "--format", "json", *args])


def _edited(data: bytes, edits: list[tuple[int, bytes, int]]) -> bytes:
    """``data`` with each ``(position, inserted, deleted)`` applied (positions wrap)."""
    for position, inserted, deleted in edits:
        at = position % (len(data) + 1)
        data = data[:at] + inserted + data[at + deleted:]
    return data


EDITS = st.lists(st.tuples(st.integers(0, 1 << 20), st.binary(max_size=6),
                           st.integers(0, 6)), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_an_edited_cache_file_never_changes_the_report(
        genuine: tuple[Path, bytes, str], edits: list[tuple[int, bytes, int]]) -> None:
    """Bytes flipped, inserted or cut anywhere in a genuine cache file: its digest no longer
    holds, so nothing of it is unpickled and the report is the uncached one, byte for byte
    (an edited memo index once asked the C unpickler for gigabytes)."""
    root, data, clean = genuine
    file = next((root.parent / f"{root.name}-cache" / "lint").glob("*.pickle"))
    edited = _edited(data, edits)
    with pytest.MonkeyPatch.context() as mp, bounded(60):
        _environment(mp, root)
        file.write_bytes(edited)
        again = _lint(root)
    assert again.exception is None or isinstance(again.exception, SystemExit), again.output
    assert (again.exit_code, again.stdout) == (1, clean)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_the_decoder_returns_only_entries_that_conform(
        genuine: tuple[Path, bytes, str], edits: list[tuple[int, bytes, int]],
        tmp_path_factory: Any) -> None:
    """The decoder alone, many more edits of the genuine file: ``open`` never raises; every
    entry ``get`` returns conforms to its declared type."""
    _root, data, _clean = genuine
    fingerprint = pickle.loads(data[len(HEADER) + 32:])[1]
    directory = tmp_path_factory.mktemp("c")
    directory.chmod(0o700)
    file = directory / f"{fingerprint}.pickle"
    file.write_bytes(_edited(data, edits))
    file.chmod(0o600)
    with bounded(20):
        cache = lint_cache.LintCache.open(fingerprint, directory)
        for key in list(cache.entries):
            entry = cache.get(key) if isinstance(key, str) else None
            assert entry is None or conforms(entry, lint_cache.Entry)


# Arbitrary structures the restricted unpickler can build: plain data, fractions, kvlint's
# enums and dataclasses (a Located wrapping anything).
def _located(value: Any) -> Any:
    from kvlint.manifests.base import Located

    return Located(value)


LEAVES = (st.none() | st.booleans() | st.integers() | st.integers(min_value=1 << 200)
          | st.floats(allow_nan=True) | st.text(max_size=20) | st.binary(max_size=8)
          | st.builds(Fraction, st.integers(), st.integers(min_value=1)))
TREES = st.recursive(LEAVES, lambda inner: (
    st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4) | inner.map(_located)),
    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(entries=st.dictionaries(st.text(min_size=64, max_size=64) | st.text(max_size=3),
                               TREES, max_size=4),
       stats=st.dictionaries(st.text(max_size=8), TREES, max_size=4))
def test_any_structure_in_a_cache_file_is_dropped_or_conforms(
        entries: dict[str, Any], stats: dict[str, Any], tmp_path_factory: Any) -> None:
    directory = tmp_path_factory.mktemp("c")
    directory.chmod(0o700)
    body = pickle.dumps((lint_cache.FORMAT, "f" * 64, entries, stats), protocol=5)
    file = directory / ("f" * 64 + ".pickle")
    file.write_bytes(framed(HEADER, body))
    file.chmod(0o600)
    with bounded(20):
        cache = lint_cache.LintCache.open("f" * 64, directory)
        for key in list(cache.entries):
            assert cache.get(key) is None  # none of these is an Entry
        assert cache.known("x", None) is None
        cache.save()  # a malformed entry is never written back


@pytest.mark.parametrize("value", [Fraction(1 << (MAX_INT_BITS + 1), 3),
                                   Fraction(1, 1 << (MAX_INT_BITS + 1))])
def test_a_fraction_beyond_the_bound_is_refused_by_the_unpickler(value: Fraction) -> None:
    data = pickle.dumps(value, protocol=5)
    with pytest.raises(pickle.UnpicklingError):
        result_cache._Unpickler(io.BytesIO(data)).load()


def test_bounds_of_conform() -> None:
    assert conforms(1 << 64, int) and not conforms(1 << (MAX_INT_BITS + 1), int)
    assert not conforms(True, int) and not conforms(1, str) and conforms(None, int | None)
    assert conforms((1, 2), tuple[int, ...]) and not conforms([1, 2], tuple[int, ...])
    assert not conforms({"a": "b"}, dict[str, int]) and conforms({"a": 1}, dict[str, int])
    nested: Any = 1
    for _ in range(100):
        nested = [nested]
    assert not conforms(nested, Any)  # nesting is bounded


# ============================================================ the vLLM log reader
GENUINE_LINES = [PREFIX + _line(entry)[0] for entry in ENTRIES]
JUNK = st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
NUMBERS = st.from_regex(r"-?[0-9]{1,40}(\.[0-9]{0,40})?", fullmatch=True)


def _mutated(line: str, number: str, cut: int) -> str:
    """A genuine line with its first number replaced and its tail cut at ``cut``."""
    import re

    return re.sub(r"-?\d+(\.\d+)?", number, line, count=1)[:cut or None]


LOG_LINES = (st.sampled_from(GENUINE_LINES) | JUNK
             | st.builds(_mutated, st.sampled_from(GENUINE_LINES), NUMBERS,
                         st.integers(0, 200)))


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(LOG_LINES, max_size=30))
def test_any_log_text_is_read_without_error(lines: list[str]) -> None:
    """Genuine start-up lines, mutated ones and junk in any order: the reader returns a
    log (perhaps with no figures), never raises."""
    with bounded(20):
        log = parse_text("\n".join(lines))
    assert isinstance(log, VllmLog)
    tokens = log.capacity_tokens
    assert tokens is None or isinstance(tokens, int)


@settings(max_examples=40, deadline=None)
@given(line=st.sampled_from(GENUINE_LINES), digits=st.integers(10_000, 200_000))
def test_long_numbers_in_any_line_are_read_in_bounded_time(line: str, digits: int) -> None:
    """A number of up to 200,000 digits in place of each figure: a quadratic reader would
    need minutes; the bound is generous and only catches that."""
    with bounded(30):
        parse_text(_mutated(line, "9" * digits + "." + "9" * digits, 0) * 2)


@settings(max_examples=100, deadline=None)
@given(quoted=st.sampled_from(GENUINE_LINES), prefix=st.sampled_from([
    'INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 200 OK ',
    'INFO 10-03 16:22:18 [logger.py:43] Received request cmpl-1: prompt: ',
    "INFO 10-03 16:22:18 [logger.py:39] Received request chat-2: prompt: 'user says ",
]))
def test_figures_never_come_from_request_text(quoted: str, prefix: str) -> None:
    """A request log that quotes a start-up line gives no figure."""
    body = quoted[len(PREFIX):]
    log = parse_text(prefix + json.dumps(body) + "\n" + prefix + body + "'")
    assert not log.has_kv_figures()
