"""kvlint's Hub guard (kvlint/loaders/hub_guard.py) against loopback servers that refuse,
stall, fail, announce 10 GB, stream forever or trickle: each endpoint fails once per run,
later lookups fail at once with the same reason, nothing big is written, the run's deadline
holds. huggingface_hub is not mocked: requests really go over 127.0.0.1."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvlint.errors import HubError, HubUnavailableError, UsageError
from kvlint.loaders import hub_guard
from kvlint.loaders.hub import download_config, download_python_files
from tests.conftest import _isolate_hf_env
from tests.hub_server import HUGE, FakeHub, StallServer

CONFIG = b'{"model_type": "llama"}'


def failure(repo_id: str) -> tuple[HubError, float]:
    started = time.monotonic()
    with pytest.raises(HubError) as info:
        download_config(repo_id)
    message = str(info.value)
    assert message and "\n" not in message, message
    return info.value, time.monotonic() - started


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.fixture
def stall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          no_backoff_sleep: list[float]) -> Iterator[StallServer]:
    server = StallServer()
    try:
        _isolate_hf_env(monkeypatch, tmp_path, server.url)
        yield server
    finally:
        server.close()


def test_refused_endpoint_is_tried_once_per_run(dead_endpoint: str,
                                                no_backoff_sleep: list[float]) -> None:
    first, _ = failure("org/a")
    second, seconds = failure("org/b")
    assert isinstance(first, HubUnavailableError) and isinstance(second, HubUnavailableError)
    assert "Connection refused" in str(first)
    assert str(second) == str(first).replace("org/a", "org/b")  # the same reason
    assert seconds < 0.5
    assert hub_guard.GUARD.requests == {hub_guard.origin_of(dead_endpoint): 1}
    assert no_backoff_sleep == []  # huggingface_hub's 1+2+4+8+8 s backoff never starts


def test_stalled_endpoint_times_out_once(stall: StallServer,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVLINT_HUB_TIMEOUT", "1")
    first, seconds = failure("org/a")
    assert 0.9 < seconds < 5
    assert "no answer within 1 s (ReadTimeout)" in str(first)
    second, seconds = failure("org/b")
    assert seconds < 0.5 and "no answer within 1 s (ReadTimeout)" in str(second)
    assert stall.connections == 1  # huggingface_hub alone: 6 tries of up to 60 s each


def test_stall_after_caching_falls_back_to_the_cache(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    download_config("org/model")
    with StallServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("KVLINT_HUB_TIMEOUT", "0.5")
        assert download_config("org/model").path.read_bytes() == CONFIG
        assert download_config("org/model").path.read_bytes() == CONFIG  # endpoint down now
        assert server.connections == 1


def test_outage_marks_the_endpoint_down(fake_hub: FakeHub,
                                        no_backoff_sleep: list[float]) -> None:
    fake_hub.add_repo("org/a", {"config.json": CONFIG})
    fake_hub.outage = 502
    assert "HTTP 502" in str(failure("org/a")[0])
    fake_hub.outage = None  # a recovered Hub is not asked again in this run
    assert "HTTP 502" in str(failure("org/a")[0])
    assert len(fake_hub.requests) == 1 and no_backoff_sleep == []
    hub_guard.reset()  # a new run asks again
    assert download_config("org/a").path.read_bytes() == CONFIG


def test_announced_10_gb_is_refused_before_downloading(fake_hub: FakeHub,
                                                       tmp_path: Path) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    fake_hub.misbehave = "huge"
    error, seconds = failure("org/model")
    assert isinstance(error, HubUnavailableError)
    assert f"announced {HUGE:,} bytes, over the {hub_guard.DEFAULT_MAX_BYTES:,}-byte cap" \
        in str(error)
    assert [method for method, _ in fake_hub.requests] == ["HEAD"]  # no GET at all
    assert disk_bytes(tmp_path / "hf-cache") == 0
    assert seconds < 10


def test_endless_body_is_cut_at_the_cap(fake_hub: FakeHub, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVLINT_HUB_MAX_BYTES", str(1 << 20))
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    fake_hub.misbehave = "endless"  # announces 23 bytes, streams zeros forever
    error, seconds = failure("org/model")
    assert "sent more than the 1,048,576-byte cap (KVLINT_HUB_MAX_BYTES)" in str(error)
    assert disk_bytes(tmp_path / "hf-cache") <= 1 << 20
    assert seconds < 10


def test_deadline_stops_a_trickle(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVLINT_HUB_DEADLINE", "1.5")
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    fake_hub.misbehave = "trickle"  # one byte every 0.2 s: never a read timeout
    error, seconds = failure("org/model")
    assert "kvlint's 1.5 s for Hub access in this run are spent (KVLINT_HUB_DEADLINE)" \
        in str(error)
    assert 1.4 < seconds < 4
    count = len(fake_hub.requests)
    second, seconds = failure("org/other")
    assert "KVLINT_HUB_DEADLINE" in str(second) and seconds < 0.5
    assert len(fake_hub.requests) == count


def test_cache_hits_do_not_spend_the_deadline(fake_hub: FakeHub,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    download_config("org/model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spent = hub_guard.GUARD.spent_s
    for _ in range(20):
        download_config("org/model")
    assert hub_guard.GUARD.spent_s - spent < 0.5


@pytest.mark.parametrize(("name", "value"), [("KVLINT_HUB_DEADLINE", "soon"),
                                             ("KVLINT_HUB_TIMEOUT", "0"),
                                             ("KVLINT_HUB_MAX_BYTES", "1.5")])
def test_bad_limits_are_one_line_usage_errors(fake_hub: FakeHub,
                                              monkeypatch: pytest.MonkeyPatch,
                                              name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=rf"^{name}='{value}': expected a positive"):
        download_config("org/model")


def test_guard_leaves_other_huggingface_hub_users_alone(
    fake_hub: FakeHub, no_backoff_sleep: list[float]
) -> None:
    fake_hub.add_repo("org/a", {"config.json": CONFIG})
    fake_hub.outage = 503
    failure("org/a")  # installs the guard and marks the endpoint down for kvlint
    fake_hub.outage = None
    from huggingface_hub import get_session

    session = get_session()
    assert type(session._transport).__name__ == "_GuardedTransport"
    response = session.head(f"{fake_hub.url}/org/a/resolve/main/config.json")
    assert response.status_code == 200  # not refused: no kvlint call is active


def test_telemetry_is_off(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": CONFIG})
    download_config("org/model")
    assert os.environ["HF_HUB_DISABLE_TELEMETRY"] == "1"
    from huggingface_hub import constants

    assert constants.HF_HUB_DISABLE_TELEMETRY is True
    assert not any(path.startswith("/api/agent-harnesses") for _, path in fake_hub.requests)


def test_scan_hub_goes_through_the_guard(dead_endpoint: str,
                                         no_backoff_sleep: list[float]) -> None:
    for repo in ("org/a", "org/b"):
        with pytest.raises(HubUnavailableError, match="Could not reach the Hugging Face Hub"):
            download_python_files(repo)
    assert hub_guard.GUARD.requests == {hub_guard.origin_of(dead_endpoint): 1}
    assert no_backoff_sleep == []


def test_checkpoint_index_goes_through_the_guard(fake_hub: FakeHub, tmp_path: Path) -> None:
    from kvlint.loaders.checkpoint import INDEX_NAME, hub_checkpoint_size

    fake_hub.add_repo("org/model", {"config.json": CONFIG, INDEX_NAME: b"{}"})
    fake_hub.misbehave = "huge"
    with pytest.raises(HubUnavailableError, match=f"Refused {INDEX_NAME} of org/model"):
        hub_checkpoint_size("org/model")
    assert disk_bytes(tmp_path / "hf-cache") == 0
