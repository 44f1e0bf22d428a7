"""Fail fast on the Hub: short per-request timeouts, one failure per endpoint per run, an
overall deadline for Hub access, a size cap on what is downloaded, telemetry off.

What huggingface_hub 2.4 does on its own (read in ``file_download.py`` and ``utils/_http.py``):

* ``hf_hub_download`` sends a HEAD with ``etag_timeout`` and no retry. When it fails with a
  connection error, a timeout or a 408/429/5xx answer and no cached copy exists, it asks again
  with ``etag_timeout=60`` and ``retry_on_errors=True``: ``http_backoff`` retries 5 more times,
  sleeping 1, 2, 4, 8, 8 s. A refused connection costs ~23 s per file; a server that accepts
  and never answers 6 x 60 s + 23 s (~383 s) per file.
* The GET (``http_get``) reads with ``HF_HUB_DOWNLOAD_TIMEOUT`` (frozen at import) and resumes
  up to 5 times after a connect error, timeout or protocol error, sleeping 1 s each time. It
  refuses nothing below 50 GB.
* Unless ``HF_HUB_DISABLE_TELEMETRY`` is set when it is imported, building the user agent
  fetches ``{endpoint}/api/agent-harnesses`` and reads it whole.

kvlint installs, through huggingface_hub's public ``set_client_factory``, a client whose
transports pass each request through :data:`GUARD` while a kvlint Hub call is active (other
users of huggingface_hub in the process are left alone). The guard

* gives each request connect/read timeouts of ``KVLINT_HUB_TIMEOUT`` seconds (default 5; the
  smaller of that, what huggingface_hub asked for, and what is left of the deadline);
* records the first connection failure, timeout, protocol error or 408/429/5xx answer of an
  endpoint (scheme, host, port) and refuses every later request to it at once, with the same
  reason;
* stops all Hub access once ``KVLINT_HUB_DEADLINE`` seconds (default 30) have been spent in
  Hub calls in this run;
* refuses a file whose announced size (``X-Linked-Size``/``Content-Length``) exceeds
  ``KVLINT_HUB_MAX_BYTES`` (default 64 MiB) and stops a body that grows past it.

Its errors (:class:`GuardError`) are not httpx errors, so huggingface_hub neither retries them
nor mistakes them for "offline, use the cache": they propagate to :mod:`kvlint.loaders.hub`,
which falls back to the cache itself and reports one line.

This module imports nothing heavy at import time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kvlint.errors import UsageError

__all__ = [
    "GUARD",
    "DeadlineExceeded",
    "EndpointDown",
    "GuardError",
    "HubGuard",
    "TooLarge",
    "install",
    "origin_of",
    "reset",
]

DEFAULT_DEADLINE_S = 30.0
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""config.json is a few KB; the largest safetensors index known (DeepSeek-V3) about 9 MB."""
_RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""The answers huggingface_hub retries with backoff (``_DEFAULT_RETRY_ON_STATUS_CODES``)."""


class GuardError(Exception):
    """A request the guard refused or gave up on (never an httpx error: not retried)."""

    def __init__(self, origin: str, reason: str) -> None:
        super().__init__(reason)
        self.origin = origin
        self.reason = reason


class EndpointDown(GuardError):
    """The endpoint refused, timed out, broke the protocol or answered 408/429/5xx."""

    def __init__(self, origin: str, reason: str, status: int | None = None) -> None:
        super().__init__(origin, reason)
        self.status = status


class DeadlineExceeded(GuardError):
    """The run's time for Hub access is spent."""


class TooLarge(GuardError):
    """A file announced or sent more bytes than the cap."""

    def __init__(self, origin: str, size: int, cap: int, announced: bool) -> None:
        what = f"announced {size:,} bytes, over" if announced else "sent more than"
        super().__init__(origin, f"the server {what} the {cap:,}-byte cap"
                                 " (KVLINT_HUB_MAX_BYTES)")
        self.size = size
        self.cap = cap


def origin_of(url: object) -> str:
    """``scheme://host:port`` of a URL (the default port made explicit)."""
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or {"http": 80, "https": 443}.get(scheme, 0)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def _env_number(name: str, default: float, *, integer: bool = False) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(int(raw)) if integer else float(raw)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        kind = "a positive integer" if integer else "a positive number of seconds"
        raise UsageError(f"{name}={raw!r}: expected {kind}")
    return value


@dataclass
class HubGuard:
    """Per-run state of Hub access (one per process; :func:`reset` starts a new run)."""

    down: dict[str, EndpointDown] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    """Requests sent per origin in this run (what the tests count)."""
    spent_s: float = 0.0
    deadline_s: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = DEFAULT_MAX_BYTES
    _active: int = 0
    _entered: float = 0.0
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # ----------------------------------------------------------------------------- run state
    def configure(self) -> None:
        """Read the limits from the environment, once per run (at the first Hub call)."""
        if self.deadline_s is None:
            self.timeout_s = _env_number("KVLINT_HUB_TIMEOUT", DEFAULT_TIMEOUT_S)
            self.max_bytes = int(_env_number("KVLINT_HUB_MAX_BYTES", DEFAULT_MAX_BYTES,
                                             integer=True))
            self.deadline_s = _env_number("KVLINT_HUB_DEADLINE", DEFAULT_DEADLINE_S)

    @property
    def active(self) -> bool:
        return self._active > 0

    def remaining(self) -> float:
        """Seconds of Hub access left in this run."""
        with self._lock:
            spent = self.spent_s + (time.monotonic() - self._entered if self._active else 0.0)
            return (self.deadline_s or DEFAULT_DEADLINE_S) - spent

    @contextmanager
    def session(self) -> Iterator[None]:
        """While inside, requests through kvlint's client are guarded and their time counts
        against the deadline (nested and threaded use count once)."""
        self.configure()
        with self._lock:
            if self._active == 0:
                self._entered = time.monotonic()
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    self.spent_s += time.monotonic() - self._entered

    def check(self, origin: str) -> None:
        """Raise at once when ``origin`` is known to be down or the deadline is spent."""
        known = self.down.get(origin)
        if known is not None:
            raise EndpointDown(origin, known.reason, known.status)
        if self.remaining() <= 0:
            raise DeadlineExceeded(
                origin, f"kvlint's {self.deadline_s:g} s for Hub access in this run are spent"
                        " (KVLINT_HUB_DEADLINE)")

    def mark_down(self, origin: str, reason: str, status: int | None = None) -> EndpointDown:
        with self._lock:
            first = self.down.setdefault(origin, EndpointDown(origin, reason, status))
        return EndpointDown(origin, first.reason, first.status)

    def timeouts(self, asked: Any) -> dict[str, float]:
        """Per-request timeouts: the smallest of kvlint's, huggingface_hub's and the time left."""
        left = max(self.remaining(), 0.001)
        result: dict[str, float] = {}
        for key in ("connect", "read", "write", "pool"):
            value = asked.get(key) if isinstance(asked, dict) else None
            limit = min(self.timeout_s, left)
            result[key] = min(value, limit) if isinstance(value, (int, float)) else limit
        return result

    def count(self, origin: str) -> None:
        with self._lock:
            self.requests[origin] = self.requests.get(origin, 0) + 1


GUARD = HubGuard()


def reset() -> None:
    """Start a new run: forget down endpoints, the time spent and the limits read."""
    global GUARD
    GUARD = HubGuard()


def _reason(err: BaseException, limits: dict[str, float]) -> str:
    """One line for the first failure of an endpoint (repeated for every later request)."""
    name = type(err).__name__
    if "Timeout" in name:
        seconds = limits["connect"] if "Connect" in name else limits["read"]
        return f"no answer within {seconds:.3g} s ({name})"
    text = " ".join(str(err).split()) or name
    return text if len(text) <= 200 else text[:197] + "..."


# ------------------------------------------------------------------------------- transport
def _announced_size(headers: Any) -> int | None:
    for name in ("x-linked-size", "content-length"):
        value = headers.get(name)
        if value is not None and str(value).strip().isdigit():
            return int(str(value).strip())
    return None


def _guarded_transport(inner: Any) -> Any:
    """``inner`` (an httpx2 transport) behind the guard."""
    import httpx2

    # Connection refused/reset, timeouts, a broken protocol, a failing proxy (not a bad URL).
    failures = (httpx2.TimeoutException, httpx2.NetworkError, httpx2.ProtocolError,
                httpx2.ProxyError)

    class _CappedStream(httpx2.SyncByteStream):
        def __init__(self, stream: Any, origin: str, guard: HubGuard,
                     limits: dict[str, float]) -> None:
            self._stream = stream
            self._origin = origin
            self._guard = guard
            self._limits = limits

        def __iter__(self) -> Iterator[bytes]:
            total = 0
            try:
                for chunk in self._stream:
                    total += len(chunk)
                    if total > self._guard.max_bytes:
                        raise TooLarge(self._origin, self._guard.max_bytes,
                                       self._guard.max_bytes, announced=False)
                    self._guard.check(self._origin)
                    yield chunk
            except failures as err:
                raise self._guard.mark_down(self._origin, _reason(err, self._limits)) from err

        def close(self) -> None:
            self._stream.close()

    class _GuardedTransport(httpx2.BaseTransport):
        def __init__(self, wrapped: Any) -> None:
            self._inner = wrapped

        def handle_request(self, request: Any) -> Any:
            guard = GUARD
            if not guard.active:
                return self._inner.handle_request(request)
            origin = origin_of(request.url)
            guard.check(origin)
            guard.count(origin)
            limits = guard.timeouts(request.extensions.get("timeout"))
            request.extensions = {**request.extensions, "timeout": limits}
            try:
                response = self._inner.handle_request(request)
            except failures as err:
                raise guard.mark_down(origin, _reason(err, limits)) from err
            status = response.status_code
            if status in _RETRIED_STATUSES:
                response.close()
                raise guard.mark_down(origin, f"HTTP {status}", status)
            size = _announced_size(response.headers)
            if size is not None and size > guard.max_bytes:
                response.close()
                raise TooLarge(origin, size, guard.max_bytes, announced=True)
            return httpx2.Response(status_code=status, headers=response.headers,
                                   stream=_CappedStream(response.stream, origin, guard, limits),
                                   extensions=response.extensions)

        def close(self) -> None:
            self._inner.close()

    return _GuardedTransport(inner)


_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def install() -> None:
    """Turn huggingface_hub's telemetry off and route its client through the guard (once per
    process; the client factory in place before, e.g. one a user set, is kept and wrapped)."""
    global _INSTALLED
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"  # read when huggingface_hub is imported
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        from huggingface_hub import constants, set_client_factory
        from huggingface_hub.utils import _http

        constants.HF_HUB_DISABLE_TELEMETRY = True  # it may have been imported before
        previous = getattr(_http, "_GLOBAL_CLIENT_FACTORY", _http.default_client_factory)

        def factory() -> Any:
            client = previous()
            client._transport = _guarded_transport(client._transport)
            client._mounts = {pattern: None if transport is None
                              else _guarded_transport(transport)
                              for pattern, transport in client._mounts.items()}
            return client

        set_client_factory(factory)
        _INSTALLED = True
