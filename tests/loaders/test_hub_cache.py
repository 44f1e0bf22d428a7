"""kvlint.loaders.hub_cache: the Hub cache read by path, without huggingface_hub.

The cache is populated by huggingface_hub itself (through kvlint's Hub client, against the
loopback Hub of tests/hub_server.py); it is then read back in a fresh interpreter where
huggingface_hub must stay out of ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.loaders.checkpoint import hub_checkpoint_size
from kvlint.loaders.hub import download_config
from kvlint.loaders.hub_cache import cache_dir, cached_absent, cached_file
from tests.hub_server import FakeHub

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.dumps({"model_type": "llama", "num_key_value_heads": 8}).encode()
CONFIG_V2 = json.dumps({"model_type": "llama", "num_key_value_heads": 4}).encode()
SHA_A = "a" * 40
SHA_B = "b" * 40

READ_BACK = """
import json, sys
from kvlint.loaders.hub import download_config
out = []
for repo, rev, offline in json.loads(sys.argv[1]):
    got = download_config(repo, revision=rev, offline=offline)
    out.append([got.commit, got.path.read_text()])
assert "huggingface_hub" not in sys.modules, "huggingface_hub was imported"
print(json.dumps(out))
"""


def _read_back(requests: list[list[object]]) -> list[list[str]]:
    proc = subprocess.run([sys.executable, "-c", READ_BACK, json.dumps(requests)],
                          capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(),
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: list[list[str]] = json.loads(proc.stdout)
    return result


def test_cache_written_by_huggingface_hub_is_read_without_it(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, branch="dev", commit=SHA_B)
    fake_hub.add_repo("gpt2", {"config.json": CONFIG})
    download_config("org/model")  # huggingface_hub writes refs/main and the snapshot
    download_config("org/model", revision="dev")
    gpt2 = download_config("gpt2")
    fake_hub.clear_requests()
    got = _read_back([["org/model", None, True], ["org/model", "dev", True],
                      ["org/model", SHA_A, False],  # a sha: read by path even online
                      ["org/model", SHA_B, True], ["gpt2", "main", True]])
    assert got == [[SHA_A, CONFIG.decode()], [SHA_B, CONFIG_V2.decode()],
                   [SHA_A, CONFIG.decode()], [SHA_B, CONFIG_V2.decode()],
                   [gpt2.commit, CONFIG.decode()]]
    assert fake_hub.requests == []


def test_cached_file_mirrors_try_to_load_from_cache(fake_hub: FakeHub, tmp_path: Path) -> None:
    from huggingface_hub import try_to_load_from_cache

    fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, branch="refs/pr/1", commit=SHA_B)
    download_config("org/model")
    download_config("org/model", revision="refs/pr/1")
    cache = tmp_path / "hf-cache"
    assert cache_dir() == cache
    for revision in (None, "main", "refs/pr/1", SHA_A, SHA_B, "dev", "c" * 40):
        theirs = try_to_load_from_cache("org/model", "config.json", cache_dir=str(cache),
                                        revision=revision)
        ours = cached_file("org/model", "config.json", revision)
        assert (str(ours[0]) if ours else None) == (theirs if isinstance(theirs, str) else None)
    assert cached_file("org/other", "config.json") is None
    assert cached_file("org/model", "missing.json") is None


@pytest.mark.parametrize(("repo", "filename", "revision"), [
    ("org/model", "config.json", "../../../etc"),
    ("org/model", "../config.json", None),
    ("../org", "config.json", None),
    ("org/model", "/etc/passwd", None),
    ("a/b/c", "config.json", None),
    ("org/model", "config.json", "refs/../../x"),
])
def test_hostile_names_never_leave_the_cache(
    fake_hub: FakeHub, repo: str, filename: str, revision: str | None
) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    download_config("org/model")
    assert cached_file(repo, filename, revision) is None


def test_ref_file_with_garbage_is_no_hit(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    download_config("org/model")
    ref = tmp_path / "hf-cache" / "models--org--model" / "refs" / "main"
    ref.write_text("../../../../etc\n")
    assert cached_file("org/model", "config.json") is None


@pytest.mark.parametrize(("env", "expected"), [
    ({"HF_HUB_CACHE": "/x/hub-cache", "HF_HOME": "/y"}, "/x/hub-cache"),
    ({"HUGGINGFACE_HUB_CACHE": "/x/legacy", "HF_HOME": "/y"}, "/x/legacy"),
    ({"HF_HOME": "/y"}, "/y/hub"),
    ({"XDG_CACHE_HOME": "/z"}, "/z/huggingface/hub"),
])
def test_cache_dir_follows_huggingface_hub_variables(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cache_dir() == Path(expected)


def test_no_exist_marker_left_by_huggingface_hub_is_read_by_path(fake_hub: FakeHub) -> None:
    """An online 404 leaves ``.no_exist/<commit>/<file>``; offline, the checkpoint size of a
    repo without a weight index is then known to be absent without huggingface_hub."""
    fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    download_config("org/model")
    assert hub_checkpoint_size("org/model") is None  # the Hub's 404, cached as a marker
    assert cached_absent("org/model", "model.safetensors.index.json")
    assert cached_absent("org/model", "model.safetensors.index.json", SHA_A)
    assert not cached_absent("org/model", "config.json")
    code = ("import sys\n"
            "from kvlint.loaders.checkpoint import hub_checkpoint_size\n"
            "assert hub_checkpoint_size('org/model', offline=True) is None\n"
            "assert 'huggingface_hub' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=os.environ.copy(), check=True,
                   timeout=60)
