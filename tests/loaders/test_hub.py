"""kvlint.loaders.hub against a real HTTP server speaking the Hub protocol (tests/hub_server.py).

huggingface_hub is not mocked: every download goes through hf_hub_download over loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvlint.errors import HubError, HubUnavailableError, KvlintError
from kvlint.loaders.hub import HubConfig, download_config, looks_like_hub_id, split_hub_ref
from tests.hub_server import FakeHub, git_blob_sha

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.dumps({"model_type": "llama", "num_key_value_heads": 8}).encode()
CONFIG_V2 = json.dumps({"model_type": "llama", "num_key_value_heads": 4}).encode()
SHA_A = "a" * 40
SHA_B = "b" * 40


def hub_error(**kwargs: object) -> str:
    """Call download_config, expect a HubError, return its (checked one-line) message."""
    repo_id = kwargs.pop("repo_id")
    assert isinstance(repo_id, str)
    with pytest.raises(HubError) as info:
        download_config(repo_id, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert message, "empty message"
    assert "\n" not in message and "\r" not in message, message
    assert "Traceback" not in message
    return message


def _raised(**kwargs: object) -> HubError:
    repo_id = kwargs.pop("repo_id")
    assert isinstance(repo_id, str)
    with pytest.raises(HubError) as info:
        download_config(repo_id, **kwargs)  # type: ignore[arg-type]
    return info.value


# ------------------------------------------------------------------------------ pure helpers
def test_import_does_not_import_huggingface_hub() -> None:
    code = "import kvlint.loaders.hub, sys; assert 'huggingface_hub' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("org/name@rev", ("org/name", "rev")),
        ("org/name", ("org/name", None)),
        ("gpt2", ("gpt2", None)),
        ("gpt2@v1.0", ("gpt2", "v1.0")),
        ("org/name@refs/pr/1", ("org/name", "refs/pr/1")),
        (f"org/name@{SHA_A}", ("org/name", SHA_A)),
        ("org/name@", ("org/name", None)),
        ("  org/name@main  ", ("org/name", "main")),
    ],
)
def test_split_hub_ref(ref: str, expected: tuple[str, str | None]) -> None:
    assert split_hub_ref(ref) == expected


@pytest.mark.parametrize(
    "ref",
    [
        "gpt2",
        "meta-llama/Llama-3.1-8B",
        "deepseek-ai/DeepSeek-V2",
        "Qwen/Qwen2.5-7B-Instruct",
        "org_1/model.v2",
        "org/name@main",
        "org/name@refs/pr/1",
        f"org/name@{SHA_A}",
        "a/" + "b" * 96,
    ],
)
def test_looks_like_hub_id_accepts(ref: str) -> None:
    assert looks_like_hub_id(ref)


@pytest.mark.parametrize(
    "ref",
    [
        "",
        "/abs/path/config.json",
        "./model",
        "../model",
        "~/models/x",
        "a/b/c",
        "org/",
        "/name",
        "org/-name",
        "org/name-",
        "org/.name",
        "org/na--me",
        "org/na..me",
        "org/name.git",
        "org/na me",
        "org/name@",
        "org/name@a b",
        "org/café",
        "C:\\models\\x",
        "config.json",
        "deploy/values.yaml",
        "a/" + "b" * 97,
    ],
)
def test_looks_like_hub_id_rejects(ref: str) -> None:
    assert not looks_like_hub_id(ref)


def test_hub_error_is_a_kvlint_error() -> None:
    assert issubclass(HubError, KvlintError)
    assert HubError.exit_code == 2


# --------------------------------------------------------------------------------- downloads
def test_download_returns_bytes_and_commit(fake_hub: FakeHub, tmp_path: Path) -> None:
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG})
    result = download_config("org/model")
    assert isinstance(result, HubConfig)
    assert result == HubConfig("org/model", None, commit, result.path)
    assert result.path.read_bytes() == CONFIG
    assert result.path.name == "config.json"
    assert result.path.is_relative_to(tmp_path / "hf-cache")
    assert result.path.parent.name == commit
    # HEAD /resolve/main -> 307 to the immutable resolve-cache URL (followed), then GET it.
    assert [method for method, _ in fake_hub.requests] == ["HEAD", "HEAD", "GET"]
    assert fake_hub.requests[0][1] == "/org/model/resolve/main/config.json"


def test_download_without_redirect(fake_hub: FakeHub) -> None:
    fake_hub.redirect_branches = False
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG})
    result = download_config("org/model")
    assert (result.commit, result.path.read_bytes()) == (commit, CONFIG)
    assert fake_hub.requests == [
        ("HEAD", "/org/model/resolve/main/config.json"),
        ("GET", "/org/model/resolve/main/config.json"),
    ]


def test_single_segment_repo_id(fake_hub: FakeHub) -> None:
    commit = fake_hub.add_repo("gpt2", {"config.json": CONFIG})
    assert download_config("gpt2").commit == commit


def test_second_download_is_served_from_cache_after_a_head(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    first = download_config("org/model")
    fake_hub.clear_requests()
    second = download_config("org/model")
    assert second == first
    assert all(method == "HEAD" for method, _ in fake_hub.requests)


def test_ref_with_branch_revision(fake_hub: FakeHub) -> None:
    main = fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    dev = fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, branch="dev", commit=SHA_B)
    repo_id, revision = split_hub_ref("org/model@dev")
    result = download_config(repo_id, revision=revision)
    assert (result.repo_id, result.revision, result.commit) == ("org/model", "dev", dev)
    assert result.path.read_bytes() == CONFIG_V2
    assert download_config("org/model").commit == main


def test_revision_with_a_slash_is_quoted(fake_hub: FakeHub) -> None:
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, branch="refs/pr/1")
    repo_id, revision = split_hub_ref("org/model@refs/pr/1")
    result = download_config(repo_id, revision=revision)
    assert (result.revision, result.commit) == ("refs/pr/1", commit)
    assert fake_hub.requests[0][1] == "/org/model/resolve/refs%2Fpr%2F1/config.json"


def test_commit_sha_revision(fake_hub: FakeHub) -> None:
    old = fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    new = fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, commit=SHA_B)  # main moves
    assert download_config("org/model").commit == new
    result = download_config("org/model", revision=old)
    assert (result.revision, result.commit, result.path.read_bytes()) == (old, old, CONFIG)
    # A sha is immutable: no redirect, the file is fetched directly.
    assert ("GET", f"/org/model/resolve/{old}/config.json") in fake_hub.requests


def test_other_filename(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG, "generation_config.json": b"{}"})
    result = download_config("org/model", filename="generation_config.json")
    assert result.path.read_bytes() == b"{}"


def test_etag_is_the_git_blob_sha(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    download_config("org/model")
    blobs = list((tmp_path / "hf-cache" / "models--org--model" / "blobs").iterdir())
    assert [blob.name for blob in blobs] == [git_blob_sha(CONFIG)]


def test_environment_is_read_at_call_time(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.add_repo("org/one", {"config.json": CONFIG})
    download_config("org/one")  # imports huggingface_hub with the first endpoint
    with FakeHub() as other:
        commit = other.add_repo("org/two", {"config.json": CONFIG_V2})
        monkeypatch.setenv("HF_ENDPOINT", other.url + "/")
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "second-cache"))
        result = download_config("org/two")
        assert result.commit == commit
        assert result.path.is_relative_to(tmp_path / "second-cache")
        assert len(other.requests) == 3


def test_cache_dir_defaults_to_hf_home(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HUB_CACHE")
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    result = download_config("org/model")
    assert result.path.is_relative_to(tmp_path / "hf-home" / "hub")


# ---------------------------------------------------------------------------------- offline
def test_offline_after_cache_hit_makes_no_requests(fake_hub: FakeHub) -> None:
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG})
    online = download_config("org/model")
    fake_hub.clear_requests()
    offline = download_config("org/model", offline=True)
    assert offline == online
    assert offline.commit == commit
    assert offline.path.read_bytes() == CONFIG
    assert fake_hub.requests == []


def test_offline_branch_and_sha_revisions(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG}, commit=SHA_A)
    fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, branch="dev", commit=SHA_B)
    download_config("org/model", revision="dev")
    download_config("org/model", revision=SHA_A)
    fake_hub.clear_requests()
    dev = download_config("org/model", revision="dev", offline=True)
    pinned = download_config("org/model", revision=SHA_A, offline=True)
    assert (dev.commit, dev.path.read_bytes()) == (SHA_B, CONFIG_V2)
    assert (pinned.commit, pinned.path.read_bytes()) == (SHA_A, CONFIG)
    assert fake_hub.requests == []


@pytest.mark.parametrize("value", ["1", "true", "YES", "on"])
def test_hf_hub_offline_env(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG})
    download_config("org/model")
    fake_hub.clear_requests()
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert download_config("org/model").commit == commit
    assert fake_hub.requests == []


def test_offline_switch_frozen_at_import_does_not_stick(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub reads HF_HUB_OFFLINE once, when imported; a process that imported it
    offline (an earlier offline run) must still download once the variable is unset."""
    from huggingface_hub import constants

    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG})
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert download_config("org/model").commit == commit
    assert fake_hub.requests != []


def test_offline_without_cache(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    message = hub_error(repo_id="org/model", offline=True)
    assert "not in the local Hugging Face cache" in message
    assert str(tmp_path / "hf-cache") in message
    assert "--offline" in message and "online" in message
    assert fake_hub.requests == []


def test_env_offline_without_cache(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = hub_error(repo_id="org/model", revision="dev")
    assert "not in the local Hugging Face cache" in message
    assert "HF_HUB_OFFLINE" in message and "revision dev" in message
    assert fake_hub.requests == []


def test_transformers_offline_env_is_honoured(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    message = hub_error(repo_id="org/model")
    assert "TRANSFORMERS_OFFLINE" in message and "not in the local" in message
    assert fake_hub.requests == []


def test_offline_other_revision_not_cached(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    fake_hub.add_repo("org/model", {"config.json": CONFIG_V2}, branch="dev")
    download_config("org/model")
    assert "not in the local" in hub_error(repo_id="org/model", revision="dev", offline=True)


# ----------------------------------------------------------------------------------- errors
def test_repo_not_found(fake_hub: FakeHub) -> None:
    message = hub_error(repo_id="org/x")
    assert message == (
        "Hugging Face repo 'org/x' not found (check the id; private repos need a token:"
        " run 'hf auth login' or set HF_TOKEN)"
    )
    assert fake_hub.requests == [("HEAD", "/org/x/resolve/main/config.json")]


def test_private_repo(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    commit = fake_hub.add_repo("org/private", {"config.json": CONFIG}, private_token="hf_secret")
    assert "not found" in hub_error(repo_id="org/private")
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    assert "not visible to your token" in hub_error(repo_id="org/private")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    assert download_config("org/private").commit == commit


def test_gated_repo_without_token(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/gated", {"config.json": CONFIG}, gated=True, private_token="hf_ok")
    message = hub_error(repo_id="org/gated")
    assert "gated" in message and "not authenticated" in message
    assert "hf auth login" in message and "HF_TOKEN" in message
    assert f"licence at {fake_hub.url}/org/gated" in message
    assert fake_hub.request_headers[0].get("authorization") is None


def test_gated_repo_with_a_token_without_access(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.add_repo("org/gated", {"config.json": CONFIG}, gated=True, private_token="hf_ok")
    monkeypatch.setenv("HF_TOKEN", "hf_other")
    message = hub_error(repo_id="org/gated")
    assert "gated" in message and "no access" in message and "licence" in message


def test_gated_repo_with_matching_token(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    commit = fake_hub.add_repo(
        "org/gated", {"config.json": CONFIG}, gated=True, private_token="hf_ok"
    )
    monkeypatch.setenv("HF_TOKEN", "hf_ok")
    result = download_config("org/gated")
    assert (result.commit, result.path.read_bytes()) == (commit, CONFIG)
    assert fake_hub.request_headers[0]["authorization"] == "Bearer hf_ok"


def test_saved_login_token_is_used(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.add_repo("org/gated", {"config.json": CONFIG}, gated=True, private_token="hf_saved")
    token_file = tmp_path / "hf-home" / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("hf_saved\n")
    assert download_config("org/gated").path.read_bytes() == CONFIG


def test_gated_repo_cached_then_offline(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hub.add_repo("org/gated", {"config.json": CONFIG}, gated=True, private_token="hf_ok")
    monkeypatch.setenv("HF_TOKEN", "hf_ok")
    download_config("org/gated")
    monkeypatch.delenv("HF_TOKEN")
    assert download_config("org/gated", offline=True).path.read_bytes() == CONFIG


def test_revision_not_found(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    message = hub_error(repo_id="org/model", revision="v9")
    assert message == (
        "Revision 'v9' not found in Hugging Face repo 'org/model' (check the branch, tag or"
        " commit sha)"
    )


def test_entry_not_found(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/x", {"README.md": b"# no config"})
    assert hub_error(repo_id="org/x") == "org/x has no config.json at revision main"


def test_entry_not_found_at_revision(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/x", {"config.json": CONFIG})
    fake_hub.add_repo("org/x", {"README.md": b""}, branch="docs")
    assert (
        hub_error(repo_id="org/x", revision="docs") == "org/x has no config.json at revision docs"
    )


def test_invalid_repo_id(fake_hub: FakeHub) -> None:
    message = hub_error(repo_id="org/na--me")
    assert "not a valid Hugging Face repo id" in message
    assert fake_hub.requests == []


def test_unreachable_endpoint(dead_endpoint: str, no_backoff_sleep: list[float]) -> None:
    started = time.monotonic()
    message = hub_error(repo_id="org/model")
    assert time.monotonic() - started < 10
    assert message.startswith(f"Could not reach the Hugging Face Hub at {dead_endpoint}")
    assert "--offline" in message
    # huggingface_hub would retry with backoff (1+2+4+8+8 s); kvlint's guard stops that.
    assert no_backoff_sleep == []
    assert isinstance(_raised(repo_id="org/other"), HubUnavailableError)


def test_unreachable_endpoint_offline_reads_cache_only(dead_endpoint: str) -> None:
    assert "not in the local" in hub_error(repo_id="org/model", offline=True)


def test_unreachable_after_caching_falls_back_to_cache(
    fake_hub: FakeHub, no_backoff_sleep: list[float]
) -> None:
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG})
    download_config("org/model")
    fake_hub.close()  # same HF_ENDPOINT, nothing listening any more
    result = download_config("org/model")
    assert (result.commit, result.path.read_bytes()) == (commit, CONFIG)
    assert no_backoff_sleep == []  # a cached copy makes huggingface_hub skip its retries


@pytest.mark.parametrize(("status", "needle"), [(503, "HTTP 503"), (429, "rate-limited")])
def test_hub_outage(
    fake_hub: FakeHub, no_backoff_sleep: list[float], status: int, needle: str
) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    fake_hub.outage = status
    message = hub_error(repo_id="org/model")
    assert needle in message and "--offline" in message
    # huggingface_hub would try again 6 times with backoff; the guard lets one through,
    # and a second model on the same endpoint sends nothing.
    assert len(fake_hub.requests) == 1 and no_backoff_sleep == []
    assert needle in hub_error(repo_id="org/other")
    assert len(fake_hub.requests) == 1


def test_endpoint_that_is_not_a_hub(fake_hub: FakeHub) -> None:
    fake_hub.not_a_hub = True
    message = hub_error(repo_id="org/model")
    assert "did not answer like a Hugging Face Hub" in message and "HF_ENDPOINT" in message


def test_endpoint_without_scheme(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed HF_ENDPOINT is a usage error (exit 2), not a per-model Hub error."""
    from kvlint.errors import UsageError

    monkeypatch.setenv("HF_ENDPOINT", fake_hub.url.removeprefix("http://"))
    with pytest.raises(UsageError, match=r"^HF_ENDPOINT='127\.0\.0\.1:\d+' is not a usable "
                                         r"URL \(no scheme"):
        download_config("org/model")


def test_unwritable_cache(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("HF_HUB_CACHE", str(blocker / "cache"))
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    message = hub_error(repo_id="org/model")
    assert message.startswith(f"Cannot use the Hugging Face cache at {blocker / 'cache'}")
    assert "HF_HUB_CACHE" in message
