"""`kvlint.lock` as hostile input (issue 31): verification against the Hugging Face cache,
duplicate keys, huge numbers, links, special files, discovery bounded by the repository.

Every fixture is generated at run time: a fake Hugging Face cache (huggingface_hub's layout,
``models--org--name/snapshots/<commit>/config.json``), a repository holding ``.git``, edited
locks. The network is never used: ``HF_HUB_OFFLINE`` is set and ``HF_ENDPOINT`` points at a
closed loopback port. Each test is bounded in time (SIGALRM).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.cli import main
from tests.hub_server import unused_port

REPO = "org/model"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"
CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
    "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16", "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False,
}
WEIGHT_BYTES = 16_060_522_496
SECRET = "hf_SECRETxSECRETxSECRET"
MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: m
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          command: ["vllm", "serve", "/models/m"]
          args: ["--tensor-parallel-size", "2"]
          resources:
            limits:
              nvidia.com/gpu: "2"
"""


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


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hugging Face cache holding ``org/model`` at :data:`COMMIT` (``main`` points at it):
    its config.json and safetensors index. No network: offline, closed endpoint."""
    cache = tmp_path / "hf-cache"
    repo_dir = cache / "models--org--model"
    snapshot = repo_dir / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(CONFIG, indent=2))
    (snapshot / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": WEIGHT_BYTES}, "weight_map": {}}))
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("KVLINT_DISABLE_PLUGIN_AUTOLOAD", "1")
    return cache


@pytest.fixture
def repo(tmp_path: Path, hf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (it holds ``.git``) whose settings map a local name to ``org/model``."""
    root = tmp_path / "outer" / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "deploy").mkdir()
    (root / "deploy" / "m.yaml").write_text(MANIFEST)
    (root / "pyproject.toml").write_text(
        '[tool.kvlint]\ngpu = "H100-80GB"\n\n[tool.kvlint.models]\n'
        f'"/models/m" = "{REPO}"\n')
    monkeypatch.chdir(root)
    return root


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--no-plugins"])


def one_line_error(result: Result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kvlint: error: "), lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""
    return lines[0]


def locked(root: Path) -> dict[str, Any]:
    """Lock the repository from the cache and return the lock's data."""
    result = cli("lock", "--offline")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((root / "kvlint.lock").read_text())
    return data


def rewrite(root: Path, data: dict[str, Any]) -> None:
    (root / "kvlint.lock").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


# --- lock --check verifies the configs -------------------------------------------------


def test_a_true_lock_is_verified_in_sync(repo: Path) -> None:
    data = locked(repo)
    assert data["models"][REPO] == {"checkpoint-bytes": WEIGHT_BYTES, "commit": COMMIT,
                                    "config": CONFIG}
    for args in (("lock", "--check"), ("lock", "--check", "--offline")):
        result = cli(*args)
        assert (result.exit_code, result.stdout) == (0, "kvlint.lock: in sync (1 model)\n")


@pytest.mark.parametrize(("edit", "field"), [
    (lambda c: c.update(num_key_value_heads=32), "'config.num_key_value_heads'"),
    (lambda c: c["rope_scaling"].update(factor=1.0), "'config.rope_scaling.factor'"),
    (lambda c: c.update(hidden_size=4096.0), "'config.hidden_size'"),  # 4096 vs 4096.0
    (lambda c: c.update(tie_word_embeddings=0), "'config.tie_word_embeddings'"),
    (lambda c: c.pop("vocab_size"), "'config.vocab_size'"),
    (lambda c: c.update(sliding_window=4096), "'config.sliding_window'"),
    (lambda c: c["architectures"].append("X"), "'config.architectures[1]'"),
])
def test_an_edited_config_with_its_commit_kept_fails_the_check(repo: Path, edit: Any,
                                                                field: str) -> None:
    data = locked(repo)
    edit(data["models"][REPO]["config"])
    rewrite(repo, data)
    for args in (("lock", "--check"), ("lock", "--check", "--offline")):
        result = cli(*args)
        assert result.exit_code == 1, result.output
        assert "in sync" not in result.output
        line = next(li for li in result.stdout.splitlines() if REPO in li)
        assert "differs from the model repo at its commit (the Hugging Face cache)" in line
        assert line.endswith(f"first at {field}"), line


def test_an_edited_checkpoint_size_fails_the_check(repo: Path) -> None:
    data = locked(repo)
    data["models"][REPO]["checkpoint-bytes"] = 1
    rewrite(repo, data)
    result = cli("lock", "--check")
    assert result.exit_code == 1, result.output
    assert f"{REPO} differs" in result.stdout
    assert "first at 'checkpoint-bytes'" in result.stdout


def test_a_commit_in_neither_the_cache_nor_the_hub_is_never_in_sync(repo: Path,
                                                                    hf_cache: Path) -> None:
    data = locked(repo)
    data["models"][REPO]["commit"] = OTHER_COMMIT  # nothing cached at this commit
    rewrite(repo, data)
    for args in (("lock", "--check"), ("lock", "--check", "--offline")):
        line = one_line_error(cli(*args), "kvlint.lock: cannot verify org/model",
                              OTHER_COMMIT, "not in the Hugging Face cache")
        assert "in sync" not in line


def test_online_with_an_unreachable_hub_says_it_could_not_verify(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = locked(repo)
    data["models"][REPO]["commit"] = OTHER_COMMIT
    rewrite(repo, data)
    monkeypatch.delenv("HF_HUB_OFFLINE")  # the endpoint is a closed loopback port
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    one_line_error(cli("lock", "--check"), "cannot verify org/model",
                   "the Hub did not give it")


def test_a_special_config_in_the_cache_is_not_a_verdict(
        repo: Path, hf_cache: Path) -> None:
    locked(repo)
    snapshot = hf_cache / "models--org--model" / "snapshots" / COMMIT / "config.json"
    snapshot.unlink()
    os.mkfifo(snapshot)
    one_line_error(cli("lock", "--check", "--offline"), "cannot verify org/model",
                   "not in the Hugging Face cache")


def test_a_mismatch_and_an_out_of_sync_lock_are_reported_together(repo: Path) -> None:
    data = locked(repo)
    data["models"][REPO]["config"]["num_hidden_layers"] = 1
    data["models"]["org/gone"] = {"checkpoint-bytes": None, "commit": OTHER_COMMIT,
                                  "config": {}}
    rewrite(repo, data)
    result = cli("lock", "--check", "--offline")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert "kvlint.lock holds org/gone, which nothing names any more" in lines
    assert any("org/model differs" in li and "'config.num_hidden_layers'" in li
               for li in lines)
    assert any(li.startswith("kvlint.lock: cannot verify org/gone") for li in lines)
    assert lines[-1] == "run `kvlint lock --upgrade` to lock the models again"


# --- duplicate keys, huge numbers, no quoted contents ------------------------------------


def lock_text(models: str) -> str:
    return '{"lock-version": 1, "models": {' + models + "}}"


def entry(config: str = "{}", size: str = "null") -> str:
    return f'{{"checkpoint-bytes": {size}, "commit": "{COMMIT}", "config": {config}}}'


@pytest.mark.parametrize(("text", "key"), [
    (lock_text(f'"{REPO}": {entry()}, "{REPO}": {entry()}'), "'org/model'"),
    ('{"lock-version": 1, "models": {}, "models": {}}', "'models'"),
    (lock_text(f'"{REPO}": ' + entry(config='{"a": 1, "a": 2}')), "'a'"),
    (lock_text(f'"{REPO}": {{"commit": "{COMMIT}", "commit": "{OTHER_COMMIT}", '
               '"config": {}}'), "'commit'"),
])
def test_duplicate_keys_are_refused(repo: Path, text: str, key: str) -> None:
    (repo / "kvlint.lock").write_text(text)
    for args in (("lock", "--check"), ("lint", "deploy"), ("lock", "--offline")):
        one_line_error(cli(*args), "kvlint.lock: ", f"duplicate key {key}")


@pytest.mark.parametrize("digits", [4301, 200_000])
def test_huge_integers_are_refused_whatever_python_allows(repo: Path, digits: int) -> None:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # as PYTHONINTMAXSTRDIGITS=0: Python itself has no limit
    try:
        config = '{"n": ' + "9" * digits + "}"
        (repo / "kvlint.lock").write_text(lock_text(f'"{REPO}": ' + entry(config=config)))
        one_line_error(cli("lock", "--check"), "kvlint.lock: ",
                       "a number longer than 4300 digits")
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize("size", [str(2**64), "-1", "1.5", '"16"', "true"])
def test_checkpoint_bytes_are_bounded(repo: Path, size: str) -> None:
    (repo / "kvlint.lock").write_text(lock_text(f'"{REPO}": {entry(size=size)}'))
    one_line_error(cli("lock", "--check"), "kvlint.lock: ",
                   "'models.org/model.checkpoint-bytes'")


@pytest.mark.parametrize("text", [
    lock_text(f'"{REPO}": {{"commit": "{SECRET}", "config": {{}}}}'),
    f'{{"lock-version": "{SECRET}", "models": {{}}}}',
    lock_text(f'"{REPO}": {{"commit": "{COMMIT}", "config": "{SECRET}"}}'),
    lock_text(f'"{REPO}": {entry(size=chr(34) + SECRET + chr(34))}'),
    '{"lock-version": 1, "models": {}, "//": "x", "//": "' + SECRET + '"}',
])
def test_errors_never_quote_the_lock_contents(repo: Path, text: str) -> None:
    (repo / "kvlint.lock").write_text(text)
    for args in (("lock", "--check"), ("lint", "deploy")):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert SECRET not in result.output


def test_a_long_or_control_character_key_is_named_bounded_and_escaped(repo: Path) -> None:
    key = "org/" + "\x1b[31m" + "x" * 500
    text = lock_text(f'{json.dumps(key)}: {entry()}, {json.dumps(key)}: {entry()}')
    (repo / "kvlint.lock").write_text(text)
    line = one_line_error(cli("lock", "--check"), "duplicate key 'org/\\x1b[31mxxx")
    assert "\x1b" not in line and len(line) < 200


# --- writes: atomic, never through a link, never a special file ---------------------------


def test_a_committed_partial_link_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched\n")
    (repo / ".kvlint.lock.partial").symlink_to(outside)
    data = locked(repo)
    assert outside.read_text() == "untouched\n"
    assert not (repo / "kvlint.lock").is_symlink()
    assert data["models"][REPO]["commit"] == COMMIT
    assert sorted(p.name for p in repo.iterdir() if p.name.endswith(".partial")) == [
        ".kvlint.lock.partial"]  # left as it was; no temporary file left behind


def test_a_failed_rename_leaves_the_old_lock_and_no_temporary_file(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "kvlint.lock").write_text(lock_text(""))
    before = (repo / "kvlint.lock").read_bytes()

    def failing(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing)
    one_line_error(cli("lock", "--offline"), "kvlint.lock: cannot write",
                   "No space left on device")
    assert (repo / "kvlint.lock").read_bytes() == before
    assert [p.name for p in repo.iterdir() if p.name.endswith(".partial")] == []


def test_a_lock_that_is_a_link_is_refused_not_written_through(repo: Path) -> None:
    target = repo / "locks" / "real.lock"
    target.parent.mkdir()
    target.write_text(lock_text(""))
    (repo / "kvlint.lock").symlink_to(target)
    one_line_error(cli("lock", "--offline"), "kvlint.lock: is a symbolic link; not written")
    assert target.read_text() == lock_text("")
    assert (repo / "kvlint.lock").is_symlink()


def test_a_lock_linked_outside_the_repository_is_not_read(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.lock"
    outside.write_text('{"lock-version": 1, "models": {"' + SECRET + '": 1}}')
    (repo / "kvlint.lock").symlink_to(outside)
    for args in (("lock", "--check"), ("lint", "deploy"), ("lock", "--offline")):
        line = one_line_error(cli(*args), "kvlint.lock: leads outside its repository")
        assert SECRET not in line


def test_a_linked_directory_leading_outside_is_not_written(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-dir"
    outside.mkdir()
    (repo / "locks").symlink_to(outside)
    one_line_error(cli("lock", "--offline", "--lock", "locks/kvlint.lock"),
                   "leads outside its repository", "not written")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_special_lock_is_refused_in_one_line(repo: Path, kind: str) -> None:
    path = repo / "kvlint.lock"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        if not os.path.exists("/dev/null"):
            pytest.skip("no /dev/null")
        path.symlink_to("/dev/null")
    for args in (("lock", "--offline"), ("lock", "--check"), ("lint", "deploy")):
        line = one_line_error(cli(*args), "kvlint.lock")
        assert ("not a regular file" in line or "leads outside its repository" in line
                or "symbolic link" in line), line
    assert path.exists() or path.is_symlink()


def test_a_special_file_is_refused_on_write_too(repo: Path) -> None:
    """`write` is refused by lstat before any open: a FIFO never blocks it."""
    from kvlint.errors import InputError
    from kvlint.lock.files import write

    os.mkfifo(repo / "x.lock")
    with pytest.raises(InputError, match=r"not a regular file \(a FIFO\); not written"):
        write(repo / "x.lock", "{}")
    (repo / "d.lock").mkdir()
    with pytest.raises(InputError, match=r"not a regular file \(a directory\)"):
        write(repo / "d.lock", "{}")


def test_a_rewrite_keeps_the_file_mode(repo: Path) -> None:
    (repo / "kvlint.lock").write_text(lock_text(""))
    os.chmod(repo / "kvlint.lock", 0o640)
    locked(repo)
    assert (repo / "kvlint.lock").stat().st_mode & 0o777 == 0o640


# --- discovery stops at the repository root ----------------------------------------------


@pytest.mark.parametrize("git", ["directory", "file"])
def test_a_lock_above_the_repository_is_not_found(tmp_path: Path, hf_cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  git: str) -> None:
    outer = tmp_path / "outer"
    inner = outer / "repo"
    (inner / "deploy").mkdir(parents=True)
    if git == "directory":
        (inner / ".git").mkdir()
    else:
        (inner / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repo\n")
    (outer / "kvlint.lock").write_text('{"lock-version": 1, "models": {}, "models": {}}')
    monkeypatch.chdir(inner / "deploy")
    result = cli("lint", ".")
    assert "kvlint.lock" not in result.output, result.output
    check = cli("lock", "--check")
    assert check.exit_code == 0, check.output
    assert check.stdout == "kvlint.lock: in sync (0 models)\n"  # the cwd's, not outer's
    assert not (outer / "kvlint.lock").read_text().endswith("\n")


def test_settings_above_the_repository_do_not_place_the_lock(
        tmp_path: Path, hf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outer = tmp_path / "outer"
    inner = outer / "repo"
    (inner / ".git").mkdir(parents=True)
    (outer / "pyproject.toml").write_text('[tool.kvlint]\ngpu = "H100-80GB"\n')
    (outer / "kvlint.lock").write_text('{"lock-version": 1, "models": {}, "models": {}}')
    monkeypatch.chdir(inner)
    check = cli("lock", "--check")
    assert (check.exit_code, check.stdout) == (0, "kvlint.lock: in sync (0 models)\n")
    assert cli("lock", "--offline").exit_code == 0
    assert (inner / "kvlint.lock").is_file()
    assert (outer / "kvlint.lock").read_text().endswith("}}")  # untouched


def test_the_lock_at_the_repository_root_is_found_from_below(repo: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    locked(repo)
    data = json.loads((repo / "kvlint.lock").read_text())
    data["models"][REPO]["config"]["vocab_size"] = 1
    rewrite(repo, data)
    (repo / "pyproject.toml").rename(repo / "settings.bak")  # found by the lock search
    monkeypatch.chdir(repo / "deploy")
    result = cli("lock", "--check", "--model-map", f"m={REPO}")
    assert result.exit_code == 1, result.output
    assert "kvlint.lock: org/model differs" in result.stdout.replace("../", "")


# --- the pure parts ----------------------------------------------------------------------


def test_first_difference() -> None:
    from kvlint.lock.format import first_difference

    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) is None
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == "a[1].b"
    assert first_difference({"a": 1}, {"a": True}) == "a"
    assert first_difference({"a": 1}, {"a": 1.0}) == "a"
    assert first_difference({"a": float("nan")}, {"a": float("nan")}) is None
    assert first_difference([1], [1, 2]) == "[1]"
    assert first_difference({}, []) == ""
    assert first_difference({"b": 1, "a": 1}, {"b": 2, "a": 2}) == "a"  # sorted order


# --- locked runs -------------------------------------------------------------------------


def test_a_locked_run_refuses_a_config_the_cache_contradicts(repo: Path) -> None:
    locked(repo)
    ok = cli("lint", "deploy", "--locked")
    assert ok.exit_code in (0, 1), ok.output
    data = json.loads((repo / "kvlint.lock").read_text())
    data["models"][REPO]["config"]["num_key_value_heads"] = 32
    rewrite(repo, data)
    for args in (("lint", "deploy", "--locked"), ("lint", "deploy"),
                 ("check", REPO, "--locked", "--offline", "--tp", "2")):
        one_line_error(cli(*args), "kvlint.lock: differs from config.json at the locked "
                       "commit in the Hugging Face cache: org/model (first at "
                       "'config.num_key_value_heads')", "kvlint lock --check")


def test_a_locked_run_without_the_cache_reads_the_lock_alone(repo: Path,
                                                             hf_cache: Path) -> None:
    locked(repo)
    data = json.loads((repo / "kvlint.lock").read_text())
    data["models"][REPO]["config"]["num_key_value_heads"] = 32
    rewrite(repo, data)
    import shutil

    shutil.rmtree(hf_cache)  # CI without a cache: nothing to compare with, the lock is read
    result = cli("lint", "deploy", "--locked")
    assert result.exit_code in (0, 1), result.output


# --- properties --------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(config=st.dictionaries(st.text(max_size=8), JSON, max_size=6),
       size=st.none() | st.integers(min_value=0, max_value=2**64 - 1))
def test_a_written_lock_reads_back_equal_and_verifies(config: dict[str, Any],
                                                      size: int | None) -> None:
    from kvlint.lock.format import LockedModel, Lockfile, first_difference, loads

    lock = Lockfile({REPO: LockedModel(REPO, COMMIT, config, size)})
    back = loads(lock.dumps(), "kvlint.lock")
    assert back == lock
    assert first_difference(back.models[REPO].config, config) is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200) | st.builds(
    lambda a, b: '{"lock-version": 1, "models": {' + a + "}}" + b,
    st.text(alphabet='{}[]":,0123456789e-.abc/ ', max_size=80), st.text(max_size=5)))
def test_any_text_is_a_lock_or_one_line_input_error(text: str) -> None:
    from kvlint.errors import InputError
    from kvlint.lock.format import loads

    try:
        loads(text, "kvlint.lock")
    except InputError as err:
        assert "\n" not in str(err) and str(err).startswith("kvlint.lock: ")
