"""kvlint's Hub client against a hostile endpoint (issue 31): every behaviour below is generated
at run time by a raw loopback server (no internet), and every test runs under a hard time
bound (SIGALRM) besides the bound it asserts.

* **Deadline.** A server that trickles its headers (or body) one byte a second never trips a
  per-read timeout; ``KVLINT_HUB_DEADLINE`` must still end the request on time.
* **Compression.** A few MB of gzip or deflate that inflates to 4 GiB is refused once the
  *decoded* size passes ``KVLINT_HUB_MAX_BYTES``; the disk gets at most the cap and memory
  stays small (tracemalloc). A well-formed compressed answer still reads back intact.
* **Secrets.** A server that echoes ``HF_TOKEN``, the password of ``HF_ENDPOINT``, its Basic-auth
  form and the credentialed URL in its error header and body gets none of them printed,
  in-process or through the CLI's stderr and ``--format json``.
* **Escaping.** ANSI escapes, C1 controls, bidi overrides and forged newlines in an error
  header or body come out escaped, on one line.
* **HF_ENDPOINT.** Malformed values are one-line usage errors (exit 2, no traceback).
* **Redirects.** A redirect to ``file:``, ``ftp:``... is refused by a message that names it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from kvlint.errors import HubError, HubUnavailableError, UsageError
from kvlint.loaders import hub_guard
from kvlint.loaders.hub import download_config
from tests.conftest import _isolate_hf_env

ROOT = Path(__file__).resolve().parents[2]
CONFIG = b'{"model_type": "llama", "num_key_value_heads": 8}'
COMMIT = "c0ffee" + "0" * 34
BOUND_S = 45
"""Hard wall-clock bound of every test here."""

Responder = Callable[[str, str, dict[str, str], socket.socket, threading.Event], None]


@pytest.fixture(autouse=True)
def _time_bound() -> Iterator[None]:
    """Fail (not hang) a test that runs past ``BOUND_S``."""
    if not hasattr(signal, "setitimer"):  # pragma: no cover - POSIX only
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"test ran past its {BOUND_S} s bound")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, BOUND_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- raw server
class RawServer:
    """127.0.0.1, one request per connection, answered by ``respond`` with any bytes."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[tuple[str, str]] = []
        self.stop = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._accept, daemon=True, name="raw-hub")
        self._thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in
                       (line.partition(":") for line in lines[1:])}
            self.requests.append((method, path))
            self.respond(method, path, headers, conn, self.stop)

    def close(self) -> None:
        self.stop.set()
        self._thread.join(timeout=5)
        self._listener.close()


def reply(conn: socket.socket, status: int, headers: dict[str, str | bytes],
          body: bytes = b"", *, method: str = "GET") -> None:
    head = [f"HTTP/1.1 {status} X".encode()]
    for name, value in {"Connection": "close", **headers}.items():
        head.append(name.encode() + b": " + (value if isinstance(value, bytes) else
                                             value.encode("latin-1")))
    conn.sendall(b"\r\n".join(head) + b"\r\n\r\n" + (b"" if method == "HEAD" else body))


def hub_meta(content: bytes = CONFIG) -> dict[str, str | bytes]:
    """What huggingface_hub needs from a HEAD to go on to the GET."""
    return {"X-Repo-Commit": COMMIT, "ETag": '"0123abcd"', "Content-Length": str(len(content)),
            "Content-Type": "application/json"}


@pytest.fixture
def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Responder],
                                                                                  RawServer]]:
    """Start a :class:`RawServer` and point HF_ENDPOINT at it (empty cache, no token)."""
    servers: list[RawServer] = []

    def start(respond: Responder) -> RawServer:
        server = RawServer(respond)
        servers.append(server)
        _isolate_hf_env(monkeypatch, tmp_path, server.url)
        return server

    yield start
    for server in servers:
        server.close()


def failure(repo_id: str = "org/model") -> tuple[HubError, float]:
    started = time.monotonic()
    with pytest.raises(HubError) as info:
        download_config(repo_id)
    return info.value, time.monotonic() - started


def assert_printable(message: str) -> None:
    """One line, every character printable: no control, escape, bidi or format character."""
    bad = sorted({f"U+{ord(c):04X}" for c in message if not c.isprintable()})
    assert not bad, f"unescaped {bad} in {message!r}"


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


# ------------------------------------------------------------------------ 1. the deadline
def _trickle(conn: socket.socket, stop: threading.Event, data: bytes) -> None:
    for byte in data:  # one byte a second: never a per-read timeout
        if stop.wait(1.0):
            return
        conn.sendall(bytes([byte]))


@pytest.mark.parametrize("phase", ["head-headers", "get-headers", "get-body"])
def test_trickle_is_stopped_by_the_deadline(serve: Callable[[Responder], RawServer],
                                            monkeypatch: pytest.MonkeyPatch,
                                            phase: str) -> None:
    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        if phase == "head-headers" or (phase == "get-headers" and method == "GET"):
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            _trickle(conn, stop, b"X-Slow: " + b"a" * 10_000)
        elif method == "HEAD":
            reply(conn, 200, hub_meta(), method="HEAD")
        else:
            reply(conn, 200, {**hub_meta(), "Content-Length": "10000"})
            _trickle(conn, stop, b" " * 10_000)

    server = serve(respond)
    monkeypatch.setenv("KVLINT_HUB_DEADLINE", "2")  # the per-read timeout stays 5 s
    error, seconds = failure()
    assert isinstance(error, HubUnavailableError)
    assert "kvlint's 2 s for Hub access in this run are spent (KVLINT_HUB_DEADLINE)" \
        in str(error), error
    # the deadline, not the trickle (about 100 s) or the 5 s read timeout, ends it; the
    # upper bound is loose so that a loaded machine does not fail it
    assert 1.8 < seconds < 15, seconds
    sent = len(server.requests)
    second, seconds = failure("org/other")  # the run's Hub time is spent: no new request
    assert "KVLINT_HUB_DEADLINE" in str(second) and seconds < 5
    assert len(server.requests) == sent


# ------------------------------------------------------------------- 2. decoded size cap
@pytest.mark.parametrize("resolver", ["slow", "slow-then-answers"])
def test_a_slow_name_lookup_is_stopped_by_the_deadline(
        serve: Callable[[Responder], RawServer], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, resolver: str) -> None:
    """``getaddrinfo`` takes no timeout: a resolver that stalls (a black-holed DNS server)
    is waited for only until the deadline."""
    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        reply(conn, 200, hub_meta(), CONFIG, method=method)

    server = serve(respond)
    real = socket.getaddrinfo
    release = threading.Event()

    def stalling(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "hub.stalls.test":
            release.wait(30 if resolver == "slow" else 0.2)
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", stalling)
    _isolate_hf_env(monkeypatch, tmp_path, f"http://hub.stalls.test:{server.port}")
    monkeypatch.setenv("KVLINT_HUB_DEADLINE", "2")
    try:
        if resolver == "slow":
            error, seconds = failure()
            assert "KVLINT_HUB_DEADLINE" in str(error), error
            assert 1.8 < seconds < 15, seconds
            assert not server.requests
        else:  # a lookup inside the deadline connects to what it found
            assert download_config("org/model")
            assert server.requests
    finally:
        release.set()


def _compressor(coding: str) -> zlib._Compress:
    return zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)


def bomb(coding: str) -> tuple[bytes, bytes, int]:
    """(start, piece, count): ``start + piece * (count - 1)`` is a ~4 MB ``coding`` stream that
    inflates to 4 GiB of zeros. Each full-flushed 1 MiB block compresses to the same piece, so
    neither side ever holds more than one."""
    block = bytes(1 << 20)
    compressor = _compressor(coding)
    start = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH) == piece
    return start, piece, 4096


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_compression_bomb_is_cut_at_the_decoded_cap(serve: Callable[[Responder], RawServer],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path, coding: str) -> None:
    start, piece, count = bomb(coding)
    wire = len(start) + len(piece) * (count - 1)
    cap = 8 << 20
    assert wire < cap < count << 20  # only the decoded size can pass the cap

    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        meta = {**hub_meta(), "Content-Length": str(wire), "Content-Encoding": coding}
        reply(conn, 200, meta, method=method)
        if method == "GET":
            conn.sendall(start)
            for _ in range(count - 1):
                if stop.is_set():
                    return
                conn.sendall(piece)

    serve(respond)
    monkeypatch.setenv("KVLINT_HUB_MAX_BYTES", str(cap))
    hub_guard.install()  # imports out of the memory measurement
    import huggingface_hub.file_download  # noqa: F401

    tracemalloc.start()
    try:
        error, seconds = failure()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(error, HubUnavailableError)
    assert f"sent a {coding} body that inflates past the 8,388,608-byte cap" \
        " (KVLINT_HUB_MAX_BYTES)" in str(error), error
    assert disk_bytes(tmp_path / "hf-cache") <= cap
    assert peak < 32 << 20, f"peak {peak:,} bytes traced"  # httpx alone: 64 MiB per chunk
    assert seconds < 20


@pytest.mark.parametrize("coding", ["gzip", "deflate", "x-gzip"])
def test_compressed_config_still_reads_back(serve: Callable[[Responder], RawServer],
                                            coding: str) -> None:
    compressor = _compressor("gzip" if coding == "x-gzip" else coding)
    body = compressor.compress(CONFIG) + compressor.flush()
    asked: list[str | None] = []

    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        asked.append(headers.get("accept-encoding"))
        meta = {**hub_meta(), "Content-Encoding": coding}
        if method == "GET":
            meta["Content-Length"] = str(len(body))
        reply(conn, 200, meta, body, method=method)

    serve(respond)
    assert download_config("org/model").path.read_bytes() == CONFIG
    assert asked == ["gzip, deflate", "gzip, deflate"]  # only what the guard inflates


@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, gzip", "compress"])
def test_encoding_kvlint_cannot_bound_is_refused(serve: Callable[[Responder], RawServer],
                                                 coding: str) -> None:
    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        reply(conn, 200, {**hub_meta(), "Content-Encoding": coding}, CONFIG, method=method)

    serve(respond)
    error, _ = failure()
    assert f"Content-Encoding '{coding}', which kvlint does not accept" in str(error), error


# ------------------------------------------------------------- 3, 4. secrets and escaping
TOKEN = "hf_" + secrets.token_hex(17)
USER, PASSWORD = "kvuser", "pw-" + secrets.token_hex(8)
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
HOSTILE = "\x1b[2J\x1b]0;pwned\x07 \u202eevil\u2066 \x9b31m \r\nkvlint: error: forged\u2028x"
"""Terminal and bidi controls plus a forged second line."""


def leaked(text: str) -> list[str]:
    found = [s for s in (TOKEN, TOKEN[3:15], PASSWORD, PASSWORD[3:], BASIC) if s in text]
    return found + (["user-info"] if f"{USER}:" in text else [])


def echoing(status: int, where: str) -> Responder:
    """Answers ``status``, quoting the Authorization it got, the secrets and HOSTILE, in the
    X-Error-Message header (ASCII only there: h11 refuses control bytes) and/or the body."""
    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        if where == "body" and method == "HEAD":
            reply(conn, 200, hub_meta(), method="HEAD")
            return
        echo = (f"denied: got authorization {headers.get('authorization')!s} token={TOKEN}"
                f" basic={BASIC} from http://{USER}:{PASSWORD}@127.0.0.1/{path}")
        meta: dict[str, str | bytes] = {"Content-Type": "application/json"}
        if where == "header":
            # UTF-8 bidi override and a lone C1 CSI (obs-text: h11 lets them through)
            meta["X-Error-Message"] = (echo + " \u202egpj.exe").encode() + b" \x9b2J"
        body = json.dumps({"error": f"{echo} {HOSTILE}"}).encode()
        meta["Content-Length"] = str(len(body))
        reply(conn, status, meta, body, method=method)

    return respond


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> Callable[[RawServer], None]:
    def put(server: RawServer) -> None:
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setenv("HF_ENDPOINT", f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}")

    return put


@pytest.mark.parametrize("status", [400, 401, 403, 404])
@pytest.mark.parametrize("where", ["header", "body"])
def test_echoed_secrets_and_controls_never_reach_a_message(
    serve: Callable[[Responder], RawServer], credentials: Callable[[RawServer], None],
    status: int, where: str,
) -> None:
    server = serve(echoing(status, where))
    credentials(server)
    error, _ = failure()
    message = str(error)
    assert not leaked(message), (leaked(message), message)
    assert_printable(message)
    assert "\n" not in message and "\r" not in message


def test_secrets_are_redacted_before_truncation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long server message cut at 200 characters must not keep a prefix of the token."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    for pad in range(180, 200):
        text = hub_guard._reason(RuntimeError("x" * pad + TOKEN), {"connect": 1, "read": 1})
        assert TOKEN[3:9] not in text, text


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    text = (ROOT / "fixtures" / "cases" / "vllm-phi3-medium-tp8.yaml").read_text()
    root = tmp_path / "deploy"
    root.mkdir()
    (root / "model.yaml").write_text(text.replace("microsoft/Phi-3-medium-4k-instruct",
                                                  "org/model"))
    return root


def kvlint(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("HF_", "HUGGING", "KVLINT_HUB", "TRANSFORMERS_OFFLINE"))}
    environ.update(PYTHONPATH=str(ROOT), HF_HOME=str(tmp_path / "hf"),
                   HF_HUB_DISABLE_PROGRESS_BARS="1", **env)
    return subprocess.run([sys.executable, "-m", "kvlint", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=BOUND_S - 10)


@pytest.mark.parametrize("status", [400, 403])
def test_cli_prints_no_secret_and_no_control_in_stderr_or_json(
    serve: Callable[[Responder], RawServer], tmp_path: Path, manifests: Path, status: int,
) -> None:
    server = serve(echoing(status, "body"))
    proc = kvlint(["lint", str(manifests), "--format", "json", "--isolated"], tmp_path,
                  HF_TOKEN=TOKEN, HF_ENDPOINT=f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}")
    assert server.requests, proc.stderr  # the server was asked, and echoed
    assert "Traceback" not in proc.stderr
    assert not leaked(proc.stdout + proc.stderr), proc.stdout + proc.stderr
    for line in proc.stderr.splitlines():
        assert_printable(line)
    report = json.loads(proc.stdout)

    def strings(node: object) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for value in node.values():
                yield from strings(value)
        elif isinstance(node, list):
            for value in node:
                yield from strings(value)

    texts = list(strings(report))
    assert any("denied: got authorization" in text for text in texts), texts  # it was shown
    for text in texts:
        assert_printable(text)


# ------------------------------------------------------------------------- 5. HF_ENDPOINT
@pytest.mark.parametrize("endpoint", [
    "huggingface.co", "127.0.0.1:8080", "ftp://mirror.example/hf", "file:///srv/hub",
    "javascript:alert(1)", "http://", "https://exa mple.com", "http://host:99999",
    "http://host:port", "http://[::1", "https://hub.example/?token=1", "\x1b[31mhttp://x",
    "ftp://someone:hunter2-secret@mirror.example", "::::", "https:huggingface.co",
])
def test_malformed_endpoint_is_a_one_line_usage_error(dead_endpoint: str,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     endpoint: str) -> None:
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    for offline in (False, True):
        with pytest.raises(UsageError) as info:
            download_config("org/model", offline=offline)
        message = str(info.value)
        assert message.startswith("HF_ENDPOINT=") and "is not a usable URL" in message
        assert_printable(message)
        assert "hunter2-secret" not in message
    assert hub_guard.GUARD.requests == {}  # nothing was sent anywhere


def test_cli_malformed_endpoint_exits_2_on_one_line(tmp_path: Path) -> None:
    proc = kvlint(["check", "org/model"], tmp_path,
                  HF_ENDPOINT="ftp://someone:hunter2-secret@mirror.example")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("kvlint: error: HF_ENDPOINT='ftp://***@mirror.example' is not"
                                  " a usable URL (the scheme is 'ftp', not http or https)")


@pytest.mark.parametrize("endpoint", ["https://huggingface.co", "http://127.0.0.1:8080/",
                                      "https://user:pw@hub.example:8443/mirror/hf"])
def test_good_endpoints_are_accepted(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    from kvlint.loaders.hub import _endpoint

    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    assert _endpoint() == endpoint.rstrip("/")


# ---------------------------------------------------------------------------- 6. redirects
@pytest.mark.parametrize("location", ["file:///etc/passwd", "ftp://127.0.0.1/config.json",
                                      "gopher://127.0.0.1:70/1", "FILE:///etc/shadow",
                                      "data:application/json,{}"])
@pytest.mark.parametrize("phase", ["HEAD", "GET"])
def test_redirect_to_a_non_http_scheme_is_refused(serve: Callable[[Responder], RawServer],
                                                  location: str, phase: str) -> None:
    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        if method == phase:
            reply(conn, 302, {**hub_meta(), "Location": location, "Content-Length": "0"},
                  method=method)
        else:
            reply(conn, 200, hub_meta(), CONFIG, method=method)

    serve(respond)
    error, seconds = failure()
    message = str(error)
    scheme = location.split(":", 1)[0].lower()
    assert isinstance(error, HubUnavailableError)
    assert f"redirected to '{location}', a {scheme}: URL (only http and https are followed)" \
        in message, message
    assert seconds < 10


def test_refused_redirect_location_is_escaped(serve: Callable[[Responder], RawServer]) -> None:
    def respond(method: str, path: str, headers: dict[str, str], conn: socket.socket,
                stop: threading.Event) -> None:
        location = "file:///tmp/\u202enosj.exe".encode() + b"\x9b2J"
        reply(conn, 302, {**hub_meta(), "Location": location, "Content-Length": "0"},
              method=method)

    serve(respond)
    message = str(failure()[0])
    assert "a file: URL" in message
    assert_printable(message)
