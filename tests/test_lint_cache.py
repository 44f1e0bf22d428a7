"""`kvlint lint`'s result cache: reused only while nothing that changes findings changed."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kvlint.cache import results as result_cache
from kvlint.cli import main
from kvlint.lint import cache as lint_cache
from kvlint.lint import runner as manifest_linter
from kvlint.lint.options import LintOptions
from tests.helpers import CONFIGS, framed

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args:
            - --model=../models/llama
            - --tensor-parallel-size={tp}
          resources:
            limits:
              nvidia.com/gpu: "{tp}"
"""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with one manifest (deploy/app.yaml) serving a local Llama-3.1-8B config
    (models/llama, 8 KV heads) at
    tp=3 (KV202), the cache in a directory of its own, the cache turned on."""
    root = tmp_path / "repo"
    (root / "deploy").mkdir(parents=True)
    (root / "models" / "llama").mkdir(parents=True)
    (root / "deploy" / "app.yaml").write_text(MANIFEST.format(tp=3), encoding="utf-8")
    config = json.loads((CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    (root / "models" / "llama" / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(root)
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "kvlint-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # --offline is an option tested
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    return root


@pytest.fixture
def extracted(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The files each run parsed (a cached file is not parsed)."""
    runs: list[list[str]] = []
    real = manifest_linter.extract_iter

    def spy(files: list[Path], *args: Any) -> Any:
        runs.append([f.as_posix() for f in files])
        return real(files, *args)

    monkeypatch.setattr(manifest_linter, "extract_iter", spy)
    return runs


def lint(*args: str) -> Result:
    return CliRunner().invoke(main, ["lint", "deploy", "--no-plugins", *args])


def codes(result: Result) -> list[str]:
    data = json.loads(result.stdout)
    return sorted(f["code"] for r in data["results"] for f in r["findings"])


def cache_files(repo: Path) -> list[Path]:
    return sorted((repo.parent / "kvlint-cache" / "lint").glob("*.pickle"))


HEADER = b"kvlint-lint-cache\n"


def read_cache(file: Path) -> tuple[Any, Any, dict[str, Any]]:
    """``(format, fingerprint, entries)`` of a cache file (written by the run: trusted)."""
    fmt, fingerprint, entries, _ = pickle.loads(file.read_bytes()[len(HEADER) + 32:])
    return fmt, fingerprint, entries


def read_stats(file: Path) -> dict[str, Any]:
    """The stat index of a cache file: path -> (signature, key)."""
    stats: dict[str, Any] = pickle.loads(file.read_bytes()[len(HEADER) + 32:])[3]
    return stats


def write_cache(file: Path, body: bytes) -> None:
    """A cache file holding the pickle ``body``, as a hostile hand would write it."""
    file.write_bytes(framed(HEADER, body))


def test_second_run_hits_the_cache_with_identical_output(repo: Path,
                                                         extracted: list[list[str]]) -> None:
    for fmt in ("json", "text", "sarif"):
        first, second = lint("--format", fmt), lint("--format", fmt)
        assert first.exit_code == second.exit_code == 1, first.output
        assert first.stdout == second.stdout
    assert extracted == [["deploy/app.yaml"], [], [], [], [], []]
    assert "KV202" in codes(lint("--format", "json"))
    (file,) = cache_files(repo)
    assert len(file.stem) == 64 and all(c in "0123456789abcdef" for c in file.stem)


def test_a_cached_run_equals_an_uncached_one(repo: Path) -> None:
    lint("--format", "json")
    cached = lint("--format", "json")
    uncached = lint("--format", "json", "--no-cache")
    assert cached.stdout == uncached.stdout


def test_changing_the_file_invalidates(repo: Path, extracted: list[list[str]]) -> None:
    assert "KV202" in codes(lint("--format", "json"))
    (repo / "deploy" / "app.yaml").write_text(MANIFEST.format(tp=2), encoding="utf-8")
    assert "KV202" not in codes(lint("--format", "json"))
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


@pytest.mark.parametrize("options", [("--select", "KV1"), ("--gpu", "H100-80GB"),
                                     ("--gpu-memory", "40"), ("--offline",),
                                     ("--model-map", "x=y")])
def test_changing_the_options_invalidates(repo: Path, extracted: list[list[str]],
                                          options: tuple[str, ...]) -> None:
    plain = lint("--format", "json")
    changed = lint("--format", "json", *options)
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]
    assert changed.stdout == lint("--format", "json", *options, "--no-cache").stdout
    if options[0] in ("--select", "--gpu"):
        assert changed.stdout != plain.stdout


def test_changing_the_settings_invalidates(repo: Path, extracted: list[list[str]]) -> None:
    lint("--format", "json")
    (repo / "pyproject.toml").write_text('[tool.kvlint]\nselect = ["KV1"]\n')
    assert "KV202" not in codes(lint("--format", "json"))
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


def test_changing_the_model_config_invalidates(repo: Path,
                                               extracted: list[list[str]]) -> None:
    assert "KV202" in codes(lint("--format", "json"))
    config_file = repo / "models" / "llama" / "config.json"
    config = json.loads(config_file.read_text())
    config["num_key_value_heads"] = 3  # tp=3 now divides the KV heads
    config_file.write_text(json.dumps(config))
    assert "KV202" not in codes(lint("--format", "json"))
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


def test_removing_the_model_config_invalidates(repo: Path) -> None:
    assert "KV902" not in codes(lint("--format", "json"))
    (repo / "models" / "llama" / "config.json").unlink()
    assert "KV902" in codes(lint("--format", "json"))


def test_no_cache_option_env_and_setting_bypass(repo: Path, extracted: list[list[str]],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    lint("--no-cache")
    assert cache_files(repo) == []
    monkeypatch.setenv("KVLINT_NO_CACHE", "1")
    lint()
    assert cache_files(repo) == []
    monkeypatch.delenv("KVLINT_NO_CACHE")
    (repo / ".kvlint.toml").write_text("cache = false\n")
    lint()
    assert cache_files(repo) == []
    (repo / ".kvlint.toml").unlink()
    lint()
    assert len(cache_files(repo)) == 1
    lint("--no-cache")  # a primed cache is not read either
    monkeypatch.setenv("KVLINT_NO_CACHE", "yes")
    lint()
    assert extracted == [["deploy/app.yaml"]] * 6


def test_a_corrupt_cache_file_is_ignored(repo: Path, extracted: list[list[str]]) -> None:
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    data = file.read_bytes()
    for garbage in (b"", b"not a cache", data[: len(data) // 2], data[:-7] + b"\x00" * 7,
                    data[:40] + b"\xff" * 40 + data[80:]):
        file.write_bytes(garbage)
        result = lint("--format", "json")
        assert result.exit_code == 1, result.output
        assert result.stdout == expected
    assert extracted == [["deploy/app.yaml"]] * 6


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def test_a_foreign_cache_file_runs_nothing(repo: Path, tmp_path: Path,
                                           extracted: list[list[str]]) -> None:
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    marker = tmp_path / "pwned"
    body = pickle.dumps((lint_cache.FORMAT, file.stem, {"0" * 64: _Payload(marker)}, {}))
    write_cache(file, body)
    assert lint("--format", "json").stdout == expected
    assert not marker.exists()
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


def test_an_entry_of_the_wrong_shape_is_ignored(repo: Path,
                                                extracted: list[list[str]]) -> None:
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    fmt, fingerprint, entries = read_cache(file)
    (key, entry), = entries.items()
    (record, result), = entry.records
    finding = result.findings[0]
    odd = finding.__class__(**{**finding.__dict__, "severity": "error"})
    broken = [entry.__class__(entry.path, entry.dependencies, (("x", "y"),), entry.markers),
              entry.__class__(entry.path, "deps", entry.records, entry.markers),
              entry.__class__(entry.path, entry.dependencies, entry.records, entry.markers,
                              files=(("/dev/zero",),)),
              entry.__class__(entry.path, entry.dependencies, ((record, result.__class__(
                  result.target, result.plan, result.analysis, (odd,))),), entry.markers)]
    for bad in broken:
        write_cache(file, pickle.dumps((fmt, fingerprint, {key: bad}, {})))
        assert lint("--format", "json").stdout == expected
    assert len(extracted) == 1 + len(broken)
    # a referenced file recorded with a state it does not have: the file is linted again
    write_cache(file, pickle.dumps((fmt, fingerprint, {
        key: entry.__class__(entry.path, entry.dependencies, entry.records, entry.markers,
                             files=(("/dev/zero", "0" * 64),))}, {})))
    assert lint("--format", "json").stdout == expected
    assert len(extracted) == 2 + len(broken) and extracted[-1] == ["deploy/app.yaml"]


def test_suppressions_are_applied_to_cached_results(repo: Path,
                                                    extracted: list[list[str]]) -> None:
    text = MANIFEST.format(tp=3).replace(
        "            - --tensor-parallel-size=3",
        "            # kvlint: ignore[KV202] measured: fine for us\n"
        "            - --tensor-parallel-size=3\n"
        "            # kvlint: ignore[KV101] nothing to suppress here")
    (repo / "deploy" / "app.yaml").write_text(text, encoding="utf-8")
    first = lint("--format", "json", "--extend-select", "KV901")
    second = lint("--format", "json", "--extend-select", "KV901")
    assert first.stdout == second.stdout
    assert "KV202" not in codes(second)
    assert codes(second).count("KV901") == 1  # the KV101 suppression matched nothing
    assert extracted == [["deploy/app.yaml"], []]
    # per-file-ignores come from the settings: applied on a hit too
    (repo / "pyproject.toml").write_text(
        '[tool.kvlint]\nper-file-ignores = { "deploy/*.yaml" = ["KV203"] }\n')
    assert "KV203" in codes(second)
    lint("--format", "json")
    third = lint("--format", "json")
    assert "KV203" not in codes(third)
    assert extracted[-1] == []
    assert third.stdout == lint("--format", "json", "--no-cache").stdout


def test_a_model_that_did_not_load_is_not_cached(repo: Path,
                                                 extracted: list[list[str]]) -> None:
    text = MANIFEST.format(tp=3).replace("../models/llama", "org/not-in-the-cache")
    (repo / "deploy" / "app.yaml").write_text(text, encoding="utf-8")
    assert lint("--offline").exit_code == 2  # offline without a cached copy
    assert lint("--offline").exit_code == 2
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


def serve_config(repo: Path, reference: str) -> None:
    """deploy/serve.yaml, a Ray Serve config naming the LLM config file ``reference``, in
    place of deploy/app.yaml."""
    (repo / "deploy" / "app.yaml").unlink()
    (repo / "deploy" / "serve.yaml").write_text(
        "applications:\n"
        "  - name: llm\n"
        "    import_path: ray.serve.llm:build_openai_app\n"
        "    args:\n"
        "      llm_configs:\n"
        f"        - {reference}\n", encoding="utf-8")


def test_a_file_that_reads_another_file_is_cached_while_that_file_reads_the_same(
        repo: Path, extracted: list[list[str]]) -> None:
    serve_config(repo, "../other/llm.yaml")
    (repo / "other").mkdir()
    llm = repo / "other" / "llm.yaml"
    llm.write_text("model_loading_config:\n  model_id: org/llama\n", encoding="utf-8")
    mapped = ("--model-map", f"org/llama={repo / 'models' / 'llama' / 'config.json'}")
    first, second = lint(*mapped), lint(*mapped)
    assert first.exit_code == second.exit_code == 0, first.output
    assert "1 served model" in first.stdout and first.stdout == second.stdout
    assert extracted == [["deploy/serve.yaml"], []]
    # the LLM config changes (tp 3 on 8 KV heads): the serve config is parsed again
    llm.write_text("model_loading_config:\n  model_id: org/llama\n"
                   "engine_kwargs:\n  tensor_parallel_size: 3\n", encoding="utf-8")
    third = lint(*mapped, "--format", "json")
    assert extracted[-1] == ["deploy/serve.yaml"] and "KV202" in codes(third)
    assert lint(*mapped, "--format", "json").stdout == third.stdout
    assert extracted[-1] == []
    # ... and disappears: a problem, found again; the same answer on the next run
    llm.unlink()
    fourth = lint(*mapped)
    assert extracted[-1] == ["deploy/serve.yaml"], fourth.output
    assert "llm config ../other/llm.yaml: cannot read" in fourth.stdout
    assert lint(*mapped).stdout == fourth.stdout
    # ... and comes back as a link out of the tree: not read, and not reused either
    outside = repo.parent / "outside.yaml"
    outside.write_text("model_loading_config:\n  model_id: org/llama\n", encoding="utf-8")
    llm.symlink_to(outside)
    fifth = lint(*mapped)
    assert extracted[-1] == ["deploy/serve.yaml"] and "outside the linted tree" in \
        fifth.stdout, fifth.output


def test_a_config_linted_alone_and_through_a_serve_config_is_reported_once_and_cached(
        repo: Path, extracted: list[list[str]]) -> None:
    serve_config(repo, "configs/llm.yaml")
    (repo / "deploy" / "configs").mkdir()
    (repo / "deploy" / "configs" / "llm.yaml").write_text(
        "model_loading_config:\n  model_id: org/llama\n", encoding="utf-8")
    mapped = ("--model-map", f"org/llama={repo / 'models' / 'llama' / 'config.json'}")
    first, second = lint(*mapped), lint(*mapped)
    assert "1 served model in 1 file" in first.stdout, first.output
    assert first.stdout == second.stdout
    assert sorted(extracted[0]) == ["deploy/configs/llm.yaml", "deploy/serve.yaml"]
    assert extracted[1] == []
    # the serve config goes: the LLM config's own entry still holds its own result
    (repo / "deploy" / "serve.yaml").unlink()
    third = lint(*mapped)
    assert extracted[-1] == [] and "1 served model in 1 file" in third.stdout, third.output
    assert third.stdout == CliRunner().invoke(
        main, ["lint", "deploy", "--no-plugins", "--no-cache", *mapped]).stdout


def test_a_model_that_cannot_load_for_good_is_cached_until_that_changes(
        repo: Path, extracted: list[list[str]]) -> None:
    text = MANIFEST.format(tp=3).replace("../models/llama", "org/name:with-a-tag")
    (repo / "deploy" / "app.yaml").write_text(text, encoding="utf-8")
    first, second = lint("--offline"), lint("--offline")
    assert first.exit_code == second.exit_code == 0 and first.stdout == second.stdout
    assert "KV902" in first.stdout and "not a Hugging Face repo id" in first.stdout
    assert extracted == [["deploy/app.yaml"]] * 1 + [[]]

    # a local config that does not parse: cached with its error, linted again once fixed
    (repo / "deploy" / "app.yaml").write_text(MANIFEST.format(tp=3), encoding="utf-8")
    config = repo / "models" / "llama" / "config.json"
    good = config.read_text()
    config.write_text("{not json", encoding="utf-8")
    third, fourth = lint(), lint()
    assert extracted[-2:] == [["deploy/app.yaml"], []] and third.stdout == fourth.stdout
    assert "KV902" in third.stdout, third.output
    config.write_text(good, encoding="utf-8")
    fifth = lint()
    assert extracted[-1] == ["deploy/app.yaml"] and "KV902" not in fifth.stdout
    assert "KV202" in fifth.stdout


def test_the_cache_is_bounded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result_cache, "MAX_ENTRIES", 2)
    for tp in (1, 2, 3, 4):
        (repo / "deploy" / "app.yaml").write_text(MANIFEST.format(tp=tp), encoding="utf-8")
        lint()
    (file,) = cache_files(repo)
    _, _, entries = read_cache(file)
    assert len(entries) == 2
    monkeypatch.setattr(result_cache, "MAX_FILES", 2)
    for select in ("KV1", "KV2", "KV3"):
        lint("--select", select)
    assert len(cache_files(repo)) == 2


def test_a_third_party_plugin_turns_the_cache_off(repo: Path,
                                                   extracted: list[list[str]]) -> None:
    from kvlint.plugins import get_plugin_manager
    from kvlint.registry import Registry

    pm = get_plugin_manager(load_entry_points=False)

    class Outside:  # a plugin object defined outside kvlint (as an entry point would be)
        pass

    pm.register(Outside(), name="kvlint.looks-like-ours")
    rules = tuple(Registry.from_plugins(pm).select(None, [], []))
    for _ in range(2):
        manifest_linter.lint_paths(["deploy"], LintOptions(rules=rules, pm=pm, cache=True))
    assert cache_files(repo) == []
    assert extracted == [["deploy/app.yaml"]] * 2


def test_a_manifest_from_stdin_is_not_cached(repo: Path) -> None:
    text = (repo / "deploy" / "app.yaml").read_text(encoding="utf-8")
    for _ in range(2):
        result = CliRunner().invoke(main, ["lint", "-", "--stdin-filename", "deploy/app.yaml",
                                           "--no-plugins", "--format", "json"], input=text)
        assert result.exit_code == 1, result.output
        assert "KV202" in codes(result)
    assert cache_files(repo) == []


def test_a_crafted_fraction_or_position_is_refused(repo: Path,
                                                   extracted: list[list[str]]) -> None:
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    fmt, fingerprint, entries = read_cache(file)
    (key, entry), = entries.items()
    # Fraction("1e999999999") would take forever: only two integers are accepted
    slow = b"\x80\x05cfractions\nFraction\n\x8c\x0b1e999999999\x85R."
    (record, result), = entry.records
    finding = result.findings[0]
    huge = result.__class__(result.target, result.plan, result.analysis,
                            (finding.__class__(**{**finding.__dict__, "line": 10**5000}),))
    for body in (slow, pickle.dumps((fmt, fingerprint, {key: entry.__class__(
            entry.path, entry.dependencies, ((record, huge),), entry.markers)}, {}))):
        write_cache(file, body)
        assert lint("--format", "json").stdout == expected
    assert len(extracted) == 3


def test_the_source_stamp_follows_content_not_file_times(tmp_path: Path) -> None:
    package = tmp_path / "kvlint"
    shutil.copytree(Path(lint_cache.__file__).parents[1], package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    stamp = lint_cache.source_stamp(package)
    assert stamp == lint_cache.source_stamp()  # the same files, copied (new times)
    module = package / "lint" / "cache.py"
    os.utime(module, (1, 1))
    assert lint_cache.source_stamp(package) == stamp
    module.write_text(module.read_text() + "\n# an edit\n")
    assert lint_cache.source_stamp(package) != stamp


def test_a_fifo_in_place_of_the_cache_file_is_ignored(repo: Path,
                                                      extracted: list[list[str]]) -> None:
    """A FIFO where the cache file belongs is not opened for reading (that would block
    until a writer came): it is ignored like a corrupt file, and the run lints as usual."""
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    file.unlink()
    os.mkfifo(file)
    assert lint_cache.LintCache.open(file.stem, file.parent).entries == {}
    assert lint("--format", "json").stdout == expected
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The manifests the lint read (through ``read_bytes``) while looking up the cache."""
    seen: list[str] = []
    real = manifest_linter.read_bytes

    def spy(path: Any, limit: int) -> bytes:
        seen.append(str(path))
        return real(path, limit)

    monkeypatch.setattr(manifest_linter, "read_bytes", spy)
    return seen


def test_an_unchanged_file_is_known_by_its_stat_and_not_read(
        repo: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str],
        extracted: list[list[str]]) -> None:
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # the file was written just now
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    (held,) = read_stats(file).values()
    info = os.stat("deploy/app.yaml")
    assert held[0] == (info.st_dev, info.st_ino, info.st_mode, info.st_size,
                       info.st_mtime_ns, info.st_ctime_ns)
    reads.clear()
    assert lint("--format", "json").stdout == expected
    assert reads == [] and extracted == [["deploy/app.yaml"], []]


def test_a_file_changed_just_before_the_run_is_always_read(
        repo: Path, reads: list[str], extracted: list[list[str]]) -> None:
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    assert read_stats(file) == {}  # written within RACY_NS of the run: racily clean
    reads.clear()
    assert lint("--format", "json").stdout == expected
    assert reads == ["deploy/app.yaml"] and extracted == [["deploy/app.yaml"], []]


def test_an_edit_that_keeps_size_and_mtime_is_seen(
        repo: Path, monkeypatch: pytest.MonkeyPatch, extracted: list[list[str]]) -> None:
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    manifest = repo / "deploy" / "app.yaml"
    assert "KV202" in codes(lint("--format", "json"))
    before = os.stat(manifest)
    manifest.write_text(MANIFEST.format(tp=8), encoding="utf-8")  # same size: 3 -> 8
    os.utime(manifest, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(manifest)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert "KV202" not in codes(lint("--format", "json"))  # its change time moved
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]


def test_a_crafted_stat_index_is_checked_before_use(
        repo: Path, monkeypatch: pytest.MonkeyPatch, extracted: list[list[str]]) -> None:
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    expected = lint("--format", "json").stdout
    (file,) = cache_files(repo)
    fmt, fingerprint, entries = read_cache(file)
    ((path, (sig, key)),) = read_stats(file).items()
    other = {"0" * 64: next(iter(entries.values()))}  # a key that is not this file's
    for stats in ({path: ("x", "y")}, {path: (sig[:3], key)}, {path: (sig, 7)},
                  {path: (sig, "0" * 64)}, {path: None}, {path: ((1.5,) * 6, key)}):
        write_cache(file, pickle.dumps((fmt, fingerprint, {**entries, **other}, stats)))
        assert lint("--format", "json").stdout == expected
    # each of these was found by reading and hashing the file: it was never linted again
    assert extracted == [["deploy/app.yaml"]] + [[]] * 6


def test_a_link_to_a_manifest_in_the_tree_is_reported_once(repo: Path) -> None:
    (repo / "deploy" / "alias.yaml").symlink_to("app.yaml")
    runs = [json.loads(lint("--format", "json").stdout) for _ in range(2)]
    for data in runs:  # linted, then from the cache: the two names are one file
        assert [r["target"]["path"] for r in data["results"]] == ["deploy/alias.yaml"]
    assert runs[0] == runs[1]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_file_replaced_by_a_fifo_is_not_taken_from_the_cache(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    lint()
    lint()  # its signature is known now
    manifest = repo / "deploy" / "app.yaml"
    manifest.unlink()
    os.mkfifo(manifest)  # nothing ever writes to it: reading it would block
    result = lint("--format", "json")
    assert result.exit_code == 1, result.output
    assert "KV202" not in codes(result) and "not a regular file" in result.stdout


def test_a_service_file_beside_a_vllm_deployment_is_a_dependency(
        repo: Path, extracted: list[list[str]]) -> None:
    """A Service named ``vllm`` beside the Deployment sets its VLLM_PORT (KV702): the folder's
    listing and the files beside it are what the cached result depends on."""
    first, second = lint("--format", "json"), lint("--format", "json")
    assert "KV702" not in codes(first) and first.stdout == second.stdout
    assert extracted == [["deploy/app.yaml"], []]
    (repo / "deploy" / "svc.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n", encoding="utf-8")
    third = lint("--format", "json")   # a new file beside it: parsed again, no Service vllm
    assert "deploy/app.yaml" in extracted[-1] and "KV702" not in codes(third)
    assert lint("--format", "json").stdout == third.stdout and extracted[-1] == []
    (repo / "deploy" / "svc.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: vllm\n", encoding="utf-8")
    fourth = lint("--format", "json")  # the same file now names the Service vllm
    assert "deploy/app.yaml" in extracted[-1] and "KV702" in codes(fourth)


def test_a_configmap_file_beside_a_deployment_is_a_dependency(
        repo: Path, extracted: list[list[str]]) -> None:
    """The tp a Deployment takes from a ConfigMap in a file beside it follows that file: a
    changed ConfigMap is read again, not answered from the cache."""
    (repo / "deploy" / "app.yaml").write_text(
        MANIFEST.format(tp=3).replace("--tensor-parallel-size=3", "--tensor-parallel-size=$(TP)")
        .replace("          resources:", "          envFrom: [{configMapRef: {name: tp}}]\n"
                                         "          resources:"),
        encoding="utf-8")
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tp\ndata:\n  TP: '{}'\n"
    (repo / "deploy" / "tp.yaml").write_text(config_map.format(3), encoding="utf-8")
    first = lint("--format", "json")
    assert "KV202" in codes(first)                   # tp 3 over 8 KV heads
    assert lint("--format", "json").stdout == first.stdout and extracted[-1] == []
    (repo / "deploy" / "tp.yaml").write_text(config_map.format(4), encoding="utf-8")
    second = lint("--format", "json")
    assert "deploy/app.yaml" in extracted[-1] and "KV202" not in codes(second)


def test_the_dockerfile_a_compose_service_builds_is_a_dependency(
        repo: Path, extracted: list[list[str]]) -> None:
    """A compose service that builds its image runs its Dockerfile's command: a changed
    Dockerfile is read again, not answered from the cache."""
    (repo / "deploy" / "app.yaml").unlink()
    (repo / "deploy" / "compose.yaml").write_text(
        "services:\n  llm:\n    build: .\n    deploy:\n      resources:\n        reservations:\n"
        "          devices: [{driver: nvidia, count: 3, capabilities: [gpu]}]\n",
        encoding="utf-8")
    dockerfile = ('FROM vllm/vllm-openai:v0.8.5\nENTRYPOINT ["vllm", "serve", '
                  '"../models/llama", "--tensor-parallel-size", "{}"]\n')
    (repo / "deploy" / "Dockerfile").write_text(dockerfile.format(3), encoding="utf-8")
    def compose_codes(result: Result) -> list[str]:
        return sorted(f["code"] for r in json.loads(result.stdout)["results"]
                      if str(r["target"]["path"]).endswith("compose.yaml")
                      for f in r["findings"])

    first = lint("--format", "json")
    assert "KV202" in compose_codes(first)           # tp 3 over 8 KV heads
    assert lint("--format", "json").stdout == first.stdout and extracted[-1] == []
    (repo / "deploy" / "Dockerfile").write_text(dockerfile.format(1), encoding="utf-8")
    second = lint("--format", "json")
    assert "deploy/compose.yaml" in extracted[-1]
    assert "KV202" not in compose_codes(second) and "KV206" in compose_codes(second)


def test_a_finding_that_could_not_see_a_checkpoint_file_is_not_cached(
        repo: Path, extracted: list[list[str]]) -> None:
    """``--quantization awq`` on a config whose checkpoint kvlint looks in for the
    format's own file (a warning on a bare config.json, an error with weights and no such
    file, none once the file is there): the file may come or go with the manifest and the
    config unchanged, so every run lints the manifest again."""
    text = MANIFEST.format(tp=2).replace("            - --tensor-parallel-size=2\n",
                                         "            - --tensor-parallel-size=2\n"
                                         "            - --quantization=awq\n")
    (repo / "deploy" / "app.yaml").write_text(text, encoding="utf-8")
    first, second = lint("--format", "json"), lint("--format", "json")
    assert first.stdout == second.stdout and "KV702" in codes(first)
    assert extracted == [["deploy/app.yaml"], ["deploy/app.yaml"]]
    (repo / "models" / "llama" / "model.safetensors").write_bytes(b"\x02" + b"\x00" * 7 + b"{}")
    assert lint("--format", "json").exit_code == 1
    (repo / "models" / "llama" / "quant_config.json").write_text("{}", encoding="utf-8")
    assert "KV702" not in codes(lint("--format", "json"))
    assert extracted[2:] == [["deploy/app.yaml"], ["deploy/app.yaml"]]
