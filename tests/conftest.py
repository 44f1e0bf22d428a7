"""Shared pytest fixtures."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hub_server import FakeHub, unused_port


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports as a pipe gets them, whatever the shell running the tests sets: no forced
    colour (FORCE_COLOR is common in CI), no pre-commit default format."""
    for name in ("FORCE_COLOR", "NO_COLOR", "PRE_COMMIT"):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------- Hugging Face Hub fakes
def _isolate_hf_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str) -> None:
    """Point huggingface_hub at ``endpoint`` with an empty cache, no token and online mode."""
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "5")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "5")
    for name in (
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_OIDC_RESOURCE",
    ):
        monkeypatch.delenv(name, raising=False)
    # huggingface_hub freezes these settings when first imported. If an earlier test imported it
    # (under a CI-wide HF_HUB_OFFLINE=1, or with a developer's saved login), align them too.
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))


@pytest.fixture
def no_backoff_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Make ``time.sleep`` return at once and record the delays asked for.

    huggingface_hub retries an unreachable Hub or a 5xx with exponential backoff (1+2+4+8+8 s)
    before it gives up; the requests still really happen, only the waiting is skipped.
    """
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    return sleeps


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A loopback Hub (``tests/hub_server.py``); HF_ENDPOINT points at it, caches are empty."""
    hub = FakeHub()
    try:
        _isolate_hf_env(monkeypatch, tmp_path, hub.url)
        yield hub
    finally:
        hub.close()


@pytest.fixture
def dead_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_backoff_sleep: list[float]
) -> str:
    """HF_ENDPOINT set to a 127.0.0.1 port with nothing listening (connection refused)."""
    url = f"http://127.0.0.1:{unused_port()}"
    _isolate_hf_env(monkeypatch, tmp_path, url)
    return url


@pytest.fixture(autouse=True)
def _new_hub_run() -> None:
    """Each test is a new run for the Hub guard: no endpoint known down, no time spent."""
    from kvlint.loaders import hub_guard

    hub_guard.reset()


# --------------------------------------------------------------------- kvlint's own cache
@pytest.fixture(autouse=True, scope="session")
def _kvlint_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep kvlint's derived-data cache (transformers' model types) out of the user's home."""
    import os

    old = os.environ.get("KVLINT_CACHE_DIR")
    os.environ["KVLINT_CACHE_DIR"] = str(tmp_path_factory.mktemp("kvlint-cache"))
    yield
    if old is None:
        os.environ.pop("KVLINT_CACHE_DIR", None)
    else:
        os.environ["KVLINT_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def _no_lint_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kvlint lint``'s result cache is off in every test (results reused across tests would
    hide what a test changed by patching); tests/test_lint_cache.py turns it on, in a
    directory of its own."""
    monkeypatch.setenv("KVLINT_NO_CACHE", "1")
