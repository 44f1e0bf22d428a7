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

Hardening against a hostile endpoint (issue 31), and why each holds:

* **One wall-clock deadline covers connect, headers and body.** Per-request timeouts bound
  each ``recv``, not the whole answer: a server trickling its headers one byte a second never
  trips a 5 s read timeout and held kvlint for minutes. The guard wraps the connection pool's
  network backend (:class:`_DeadlineBackend`), so every connect, TLS handshake, ``send`` and
  ``recv`` of a guarded request gets at most what is left of ``KVLINT_HUB_DEADLINE``, and one
  started with nothing left raises :class:`DeadlineExceeded`. The bound is enforced in the
  thread doing the I/O: no watchdog closes sockets from outside. Name resolution is
  covered too: ``getaddrinfo`` takes no timeout, so it runs in a daemon thread that is
  waited for only until the deadline (:func:`_resolved`).
* **Decoded bytes count against the size cap.** httpx inflates ``Content-Encoding`` after the
  transport, so a cap on the wire counted a 6 MB gzip answer that wrote 6 GiB. The guard asks
  for ``gzip, deflate`` only, inflates those itself in bounded pieces (``zlib`` with
  ``max_length``), counts both the wire and the inflated bytes against ``KVLINT_HUB_MAX_BYTES``
  and hands httpx the decoded body without the encoding header; any other or a stacked
  encoding is refused. At most one piece (64 KiB) past the cap is ever held.
* **A redirect to a non-HTTP scheme is refused** (:class:`RefusedRedirect`) before anyone
  follows it, naming the scheme and the location.
* **Secrets and server text are made safe to print** (:func:`safe_text`): ``HF_TOKEN``, the
  saved login token and the credentials of ``HF_ENDPOINT`` (raw, percent-decoded and as the
  Basic-auth value), URL user-info, and ``Bearer``/``Basic``/``hf_`` token shapes are replaced
  by ``***``; then every non-printable character (C0/C1 controls, ANSI escapes, bidi overrides
  and other format characters) is written as a Python escape. Redaction runs before any
  truncation, so no cut-off prefix of a secret survives.

This module imports nothing heavy at import time.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urljoin, urlsplit

from kvlint.errors import UsageError

__all__ = [
    "GUARD",
    "DeadlineExceeded",
    "EndpointDown",
    "GuardError",
    "HubGuard",
    "RefusedRedirect",
    "TooLarge",
    "install",
    "origin_of",
    "reset",
    "safe_text",
]

DEFAULT_DEADLINE_S = 30.0
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""config.json is a few KB; the largest safetensors index known (DeepSeek-V3) about 9 MB."""
_RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""The answers huggingface_hub retries with backoff (``_DEFAULT_RETRY_ON_STATUS_CODES``)."""
_DECODABLE = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
              "deflate": zlib.MAX_WBITS}
"""Content-Encodings the guard inflates itself (with a bound); others are refused."""
_PIECE = 1 << 16
"""Most bytes one inflation step may produce."""
_SLACK_S = 0.01
"""A request that failed with less than this left of the deadline failed on the deadline."""


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

    def __init__(self, origin: str, size: int, cap: int, announced: bool,
                 encoding: str | None = None) -> None:
        what = f"announced {size:,} bytes, over" if announced else "sent more than"
        if encoding is not None:
            what = f"sent a {encoding} body that inflates past"
        super().__init__(origin, f"the server {what} the {cap:,}-byte cap"
                                 " (KVLINT_HUB_MAX_BYTES)")
        self.size = size
        self.cap = cap


class RefusedRedirect(GuardError):
    """A redirect to a URL that is not http(s) (``file:``, ``ftp:``...)."""

    def __init__(self, origin: str, location: str, scheme: str) -> None:
        shown = safe_text(location)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        super().__init__(origin, f"the server redirected to '{shown}', a {safe_text(scheme)}:"
                                 " URL (only http and https are followed)")
        self.location = location
        self.scheme = scheme


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
            raise self.deadline_error(origin)

    def deadline_error(self, origin: str) -> DeadlineExceeded:
        return DeadlineExceeded(
            origin, f"kvlint's {(self.deadline_s or DEFAULT_DEADLINE_S):g} s for Hub access in"
                    " this run are spent (KVLINT_HUB_DEADLINE)")

    def bound(self, timeout: float | None) -> float | None:
        """``timeout`` for one socket operation, cut to what is left of the deadline while a
        kvlint Hub call is active (:class:`DeadlineExceeded` when nothing is left)."""
        if not self.active:
            return timeout
        left = self.remaining()
        if left <= 0:
            raise self.deadline_error("")
        return left if timeout is None else min(timeout, left)

    def failed(self, origin: str, err: BaseException, limits: dict[str, float]) -> GuardError:
        """The guard's error for an httpx failure: the deadline when it is (all but) spent,
        else the endpoint marked down."""
        if self.remaining() <= _SLACK_S:
            return self.deadline_error(origin)
        return self.mark_down(origin, _reason(err, limits))

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
    text = safe_text(str(err)) or name
    return text if len(text) <= 200 else text[:197] + "..."


# ------------------------------------------------------------------------- printable text
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@")
_AUTH_VALUE = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}")
_HF_TOKEN_SHAPE = re.compile(r"\bhf_[A-Za-z0-9]{16,}")
_MIN_SECRET = 4
"""Shorter values are not replaced wherever they occur (they would mangle the message); URL
user-info is still redacted by shape."""


def _secrets() -> list[str]:
    """What must never be printed: the tokens kvlint or huggingface_hub may send, and the
    credentials of ``HF_ENDPOINT`` in every form they travel in; longest first."""
    found = {os.environ.get(name, "").strip() for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    hf = sys.modules.get("huggingface_hub")
    if hf is not None:
        with contextlib.suppress(Exception):  # the saved login, used when HF_TOKEN is unset
            found.add(str(hf.get_token() or ""))
    try:
        parts = urlsplit(os.environ.get("HF_ENDPOINT", "").strip())
        user, password = parts.username, parts.password
    except ValueError:
        user = password = None
    for raw in (user, password):
        if raw:
            found.update({raw, unquote(raw)})
    if user is not None and password is not None:
        for pair in (f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"):
            found.update({pair, base64.b64encode(pair.encode()).decode()})
    secrets = {s for s in found if len(s) >= _MIN_SECRET}
    secrets |= {quote(s, safe="") for s in secrets}
    return sorted(secrets, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with tokens and URL credentials replaced by ``***``."""
    for secret in _secrets():
        text = text.replace(secret, "***")
    text = _URL_USERINFO.sub(r"\1***@", text)
    text = _AUTH_VALUE.sub(r"\1\2***", text)
    return _HF_TOKEN_SHAPE.sub("hf_***", text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else \
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe_text(text: str) -> str:
    """``text`` fit for one line of kvlint's output: secrets redacted, whitespace runs
    (newlines included) made one space, every other non-printable character (controls, ANSI
    escapes, bidi overrides, format characters) escaped as ``\\xNN``/``\\uNNNN``."""
    text = " ".join(redact(text).split())
    return "".join(c if c.isprintable() else _escape(c) for c in text)


# ------------------------------------------------------------------------------- transport
def _announced_size(headers: Any) -> int | None:
    for name in ("x-linked-size", "content-length"):
        value = headers.get(name)
        if value is not None and str(value).strip().isdigit():
            return int(str(value).strip())
    return None


class _DeadlineStream:
    """An httpcore network stream whose every operation ends by the run's deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._inner.read(max_bytes, GUARD.bound(timeout))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, GUARD.bound(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _DeadlineStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     GUARD.bound(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _resolved(host: str, port: int) -> list[str]:
    """The addresses of ``host``, looked up within what is left of the deadline.

    ``getaddrinfo`` takes no timeout, so it runs in a daemon thread the caller stops
    waiting for when the deadline is spent (the lookup itself is then abandoned, not
    killed). An address literal is returned as it is; a failed lookup returns ``[host]``, so
    that the connection fails as it would have, with the resolver's own reason (answered
    from the resolver's negative cache, or bounded by the per-request timeout). TLS still
    names ``host`` (httpcore passes the origin's name to ``start_tls``)."""
    import ipaddress
    import socket
    import threading

    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    found: list[str] = []
    done = threading.Event()

    def look_up() -> None:
        try:
            for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
                address = str(info[4][0])
                if address not in found:
                    found.append(address)
        except (OSError, UnicodeError, ValueError):
            pass
        finally:
            done.set()

    threading.Thread(target=look_up, daemon=True, name="kvlint-resolve").start()
    left = GUARD.remaining() if GUARD.active else None
    if not done.wait(left if left is None or left > 0 else 0):
        raise GUARD.deadline_error(host)
    return list(found) or [host]


class _DeadlineBackend:
    """An httpcore network backend whose connections and streams end by the deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None, socket_options: Any = None) -> Any:
        failure: Exception | None = None
        for address in _resolved(host, port):  # each address in turn, as create_connection
            try:
                return _DeadlineStream(self._inner.connect_tcp(
                    address, port, GUARD.bound(timeout), local_address=local_address,
                    socket_options=socket_options))
            except DeadlineExceeded:
                raise
            except Exception as err:  # httpcore's ConnectError/ConnectTimeout: try the next
                failure = err
        assert failure is not None
        raise failure

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> Any:
        return _DeadlineStream(self._inner.connect_unix_socket(
            path, GUARD.bound(timeout), socket_options=socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _bound_pool(transport: Any) -> None:
    """Put the deadline under ``transport``'s connection pool (httpx's ``HTTPTransport`` keeps
    it in ``_pool``, httpcore's pools their backend in ``_network_backend``; a transport
    without them, e.g. a user's own, keeps the per-request timeouts only)."""
    pool: Any = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None and not isinstance(backend, _DeadlineBackend):
        pool._network_backend = _DeadlineBackend(backend)


class _Inflater:
    """One Content-Encoding (gzip or deflate) inflated in pieces of at most ``_PIECE`` bytes."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._zlib = zlib.decompressobj(_DECODABLE[coding])
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while not self._zlib.eof:
            try:
                piece = self._zlib.decompress(data, _PIECE)
            except zlib.error:
                if self.coding != "deflate" or self._started:
                    raise
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as httpx
                self._started = True
                continue
            self._started = True
            data = self._zlib.unconsumed_tail
            if piece:
                yield piece
            if not data and len(piece) < _PIECE:
                return  # all input used and nothing pending: more comes with the next chunk


def _content_coding(headers: Any) -> str | None:
    """The one Content-Encoding to inflate (``None``: identity); raises ``ValueError`` for
    one the guard cannot inflate with a bound, or more than one."""
    raw = str(headers.get("content-encoding") or "")
    codings = [c.strip().lower() for c in raw.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in _DECODABLE:
        raise ValueError(raw)
    return codings[0]


def _guarded_transport(inner: Any) -> Any:
    """``inner`` (an httpx2 transport) behind the guard."""
    import httpx2

    _bound_pool(inner)
    # Connection refused/reset, timeouts, a broken protocol, a failing proxy (not a bad URL).
    failures = (httpx2.TimeoutException, httpx2.NetworkError, httpx2.ProtocolError,
                httpx2.ProxyError)

    class _CappedStream(httpx2.SyncByteStream):
        """The body, inflated here when encoded, cut at the cap on the wire and decoded."""

        def __init__(self, stream: Any, origin: str, guard: HubGuard,
                     limits: dict[str, float], coding: str | None) -> None:
            self._stream = stream
            self._origin = origin
            self._guard = guard
            self._limits = limits
            self._coding = coding

        def __iter__(self) -> Iterator[bytes]:
            cap = self._guard.max_bytes
            wire = decoded = 0
            inflater = None if self._coding is None else _Inflater(self._coding)
            try:
                for chunk in self._stream:
                    wire += len(chunk)
                    if wire > cap:
                        raise TooLarge(self._origin, cap, cap, announced=False)
                    for piece in (chunk,) if inflater is None else inflater.feed(chunk):
                        decoded += len(piece)
                        if decoded > cap:
                            raise TooLarge(self._origin, cap, cap, announced=False,
                                           encoding=self._coding)
                        self._guard.check(self._origin)
                        yield piece
            except failures as err:
                raise self._guard.failed(self._origin, err, self._limits) from err
            except zlib.error as err:
                raise GuardError(self._origin, f"the server sent a {self._coding} body that"
                                 f" does not inflate ({safe_text(str(err))})") from err

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
            request.headers["Accept-Encoding"] = "gzip, deflate"  # what the guard inflates
            try:
                response = self._inner.handle_request(request)
            except failures as err:
                raise guard.failed(origin, err, limits) from err
            try:
                return self._checked(request, response, origin, guard, limits)
            except BaseException:
                response.close()
                raise

        def _checked(self, request: Any, response: Any, origin: str, guard: HubGuard,
                     limits: dict[str, float]) -> Any:
            status = response.status_code
            if status in _RETRIED_STATUSES:
                raise guard.mark_down(origin, f"HTTP {status}", status)
            location = response.headers.get("location")
            if 300 <= status < 400 and location is not None:
                target = urljoin(str(request.url), location.strip())
                scheme = urlsplit(target).scheme.lower()
                if scheme not in ("http", "https"):
                    raise RefusedRedirect(origin, location, scheme or "scheme-less")
            size = _announced_size(response.headers)
            if size is not None and size > guard.max_bytes:
                raise TooLarge(origin, size, guard.max_bytes, announced=True)
            headers = response.headers
            coding = None
            if request.method != "HEAD":
                try:
                    coding = _content_coding(headers)
                except ValueError as err:
                    raise GuardError(origin, "the server sent a body in Content-Encoding"
                                             f" '{safe_text(str(err))}', which kvlint does"
                                             " not accept (only gzip or deflate)") from None
            if coding is not None:  # inflated here: httpx must not inflate it again
                headers = httpx2.Headers([
                    (name, value) for name, value in headers.raw
                    if name.lower() not in (b"content-encoding", b"content-length")])
            return httpx2.Response(status_code=status, headers=headers,
                                   stream=_CappedStream(response.stream, origin, guard, limits,
                                                        coding),
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
