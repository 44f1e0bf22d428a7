"""A loopback fake of the Hugging Face Hub, enough for ``huggingface_hub.hf_hub_download``.

It speaks the protocol huggingface_hub 2.x uses to fetch one file:

1. ``HEAD {endpoint}/{repo_id}/resolve/{revision}/{filename}`` (revision URL-quoted with
   ``safe=""``, so ``refs/pr/1`` arrives as ``refs%2Fpr%2F1``). The client reads ``X-Repo-Commit``
   (required), ``X-Linked-Etag`` or ``ETag`` (required) and ``X-Linked-Size`` or
   ``Content-Length`` from the final response. Like huggingface.co, a branch answers
   ``307`` with a relative ``Location`` to an immutable ``/api/resolve-cache/...`` URL, which the
   client follows because it is on the same host; a full commit sha answers ``200`` directly.
2. ``GET`` of the location the HEAD ended on, streaming the bytes.

Errors are classified by the client from ``X-Error-Code`` (``RepoNotFound``, ``GatedRepo``,
``RevisionNotFound``, ``EntryNotFound``) and ``X-Error-Message`` headers (see
``huggingface_hub.utils._http.hf_raise_for_status``), with the status codes huggingface.co uses:

- unknown or private repo: 401 without a token, 404 with one (the Hub hides existence);
- gated repo: 401 without a token, 403 with a token that has no access;
- unknown revision / file: 404. ``EntryNotFound`` also carries ``X-Repo-Commit``.

Nothing here imports huggingface_hub.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote, urlsplit

_RESOLVE_CACHE_PREFIX = "/api/resolve-cache/models/"


def git_blob_sha(content: bytes) -> str:
    """The git blob id of ``content``: what the Hub sends as ETag for a non-LFS file."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def random_commit() -> str:
    return secrets.token_hex(20)


@dataclass
class FakeRepo:
    repo_id: str
    gated: bool = False
    private_token: str | None = None
    # commit sha -> {filename: content}
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    # branch or tag name -> commit sha
    refs: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> str | None:
        """A branch/tag name or a full commit sha -> commit sha (None if unknown)."""
        if revision in self.refs:
            return self.refs[revision]
        if revision in self.commits:
            return revision
        return None


class FakeHub:
    """Repos served over HTTP on 127.0.0.1 (random port) by a daemon thread.

    ``requests`` lists every request as ``(method, path)``, ``request_headers`` their headers
    (lower-cased names), in order. Set ``outage`` to an HTTP status (503, 429...) to make every
    request fail with it, or ``not_a_hub`` to answer like a plain web server (no Hub headers).
    Set ``misbehave`` to make file downloads hostile: ``"huge"`` announces 10 GB for every file
    (``X-Linked-Size`` and ``Content-Length``) and streams zeros until the client hangs up;
    ``"endless"`` announces the true size but the GET streams zeros (chunked) forever;
    ``"trickle"`` sends the GET body one byte every 0.2 s, forever.
    """

    def __init__(self, *, redirect_branches: bool = True) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[tuple[str, str]] = []
        self.request_headers: list[dict[str, str]] = []
        self.redirect_branches = redirect_branches
        self.outage: int | None = None
        self.not_a_hub = False
        self.misbehave: str | None = None
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.hub = self
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-hub-{port}",
            daemon=True,
        )
        self._thread.start()

    # ----------------------------------------------------------------------------- data model
    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        branch: str = "main",
        commit: str | None = None,
        gated: bool = False,
        private_token: str | None = None,
    ) -> str:
        """Add a commit with ``files`` to ``repo_id`` (created if new) and point ``branch`` at it.

        Calling it again for the same repo adds another revision (other branch, or a newer commit
        on the same branch; the older commit stays reachable by its sha). ``gated`` and
        ``private_token`` apply to the whole repo: a private repo is visible only with
        ``private_token``; a gated repo grants access only to ``private_token`` (nobody when None).
        Returns the commit sha.
        """
        commit = commit or random_commit()
        if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
            raise ValueError(f"commit must be 40 lowercase hex characters, got {commit!r}")
        with self._lock:
            repo = self.repos.get(repo_id)
            if repo is None:
                repo = self.repos[repo_id] = FakeRepo(repo_id)
            repo.gated = repo.gated or gated
            repo.private_token = private_token if private_token is not None else repo.private_token
            repo.commits[commit] = dict(files)
            repo.refs[branch] = commit
        return commit

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.request_headers.clear()

    def record(self, method: str, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append((method, path))
            self.request_headers.append(headers)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._server.close_connections()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    hub: FakeHub

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Close keep-alive connections still open, so handler threads end with the server."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


@dataclass
class _Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Iterator[bytes] | None = None
    """A body streamed until it ends or the client hangs up (chunked unless a length is set)."""


HUGE = 10 * 1024**3
"""What the ``huge`` misbehaviour announces: 10 GB."""


def _zeros(size: int = 1 << 16) -> Iterator[bytes]:
    while True:
        yield b"\0" * size


def _trickle() -> Iterator[bytes]:
    while True:
        yield b" "
        time.sleep(0.2)


def _hostile(mode: str, commit: str, content: bytes) -> _Reply:
    meta = {"X-Repo-Commit": commit, "ETag": f'"{git_blob_sha(content)}"',
            "Content-Type": "application/json"}
    if mode == "huge":
        return _Reply(200, {**meta, "Content-Length": str(HUGE), "X-Linked-Size": str(HUGE)},
                      chunks=_zeros())
    if mode == "endless":
        return _Reply(200, {**meta, "X-Linked-Size": str(len(content))}, chunks=_zeros())
    if mode == "trickle":
        return _Reply(200, {**meta, "X-Linked-Size": str(len(content))}, chunks=_trickle())
    raise ValueError(f"unknown misbehaviour {mode!r}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"
    timeout = 10  # idle keep-alive connections end after this
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    # --------------------------------------------------------------------------------- routing
    def _serve(self, *, head: bool) -> None:
        hub = self.server.hub
        headers = {k.lower(): v for k, v in self.headers.items()}
        hub.record(self.command, self.path, headers)
        reply = self._route(hub, headers)
        self.send_response(reply.status)
        reply.headers.setdefault("X-Request-Id", f"fake-{secrets.token_hex(4)}")
        if reply.chunks is not None and "Content-Length" not in reply.headers:
            reply.headers["Transfer-Encoding"] = "chunked"
        elif reply.chunks is None:
            reply.headers.setdefault("Content-Length", str(len(reply.body)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not head and reply.chunks is not None:
            chunked = reply.headers.get("Transfer-Encoding") == "chunked"
            with contextlib.suppress(OSError):  # the client hung up: what the test wants
                for chunk in reply.chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked
                                     else chunk)
                    self.wfile.flush()
            self.close_connection = True
        elif not head and reply.body:
            self.wfile.write(reply.body)

    def _route(self, hub: FakeHub, headers: dict[str, str]) -> _Reply:
        if hub.outage is not None:
            return _error(hub.outage, None, "Service unavailable (fake outage)")
        path = urlsplit(self.path).path
        if hub.not_a_hub:
            return _Reply(200, {"Content-Type": "text/html"}, b"<html>not a hub</html>")
        token = _bearer(headers)
        if path.startswith(_RESOLVE_CACHE_PREFIX):
            # /api/resolve-cache/models/{repo_id}/{commit}/{filename}
            rest = path[len(_RESOLVE_CACHE_PREFIX) :]
            parts = rest.split("/")
            for split in (1, 2):  # repo ids have one or two segments
                if len(parts) > split + 1 and _is_sha(parts[split]):
                    repo_id = "/".join(parts[:split])
                    commit = parts[split]
                    filename = unquote("/".join(parts[split + 1 :]))
                    return self._file(hub, repo_id, commit, filename, token, via_cache=True)
            return _error(404, None, "Not found")
        if "/resolve/" in path:
            repo_part, _, rest = path.lstrip("/").partition("/resolve/")
            revision, _, filename = rest.partition("/")
            return self._file(hub, unquote(repo_part), unquote(revision), unquote(filename), token)
        return _error(404, None, "Not found")

    def _file(
        self,
        hub: FakeHub,
        repo_id: str,
        revision: str,
        filename: str,
        token: str | None,
        *,
        via_cache: bool = False,
    ) -> _Reply:
        repo = hub.repos.get(repo_id)
        authorised = repo is not None and token is not None and token == repo.private_token
        if repo is None or (repo.private_token is not None and not repo.gated and not authorised):
            # The Hub does not reveal whether a private repo exists.
            if token is None:
                return _error(401, "RepoNotFound", "Invalid username or password.")
            return _error(404, "RepoNotFound", "Repository not found")
        if repo.gated and not authorised:
            if token is None:
                return _error(
                    401,
                    "GatedRepo",
                    f"Access to model {repo_id} is restricted. You must have access to it and be"
                    " authenticated to access it. Please log in.",
                )
            return _error(
                403,
                "GatedRepo",
                f"Access to model {repo_id} is restricted and you are not in the authorized list."
                f" Visit {hub.url}/{repo_id} to ask for access.",
            )
        commit = repo.resolve(revision)
        if commit is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        files = repo.commits[commit]
        if filename not in files:
            reply = _error(404, "EntryNotFound", f'{filename} does not exist on "{revision}"')
            reply.headers["X-Repo-Commit"] = commit
            return reply
        content = files[filename]
        if hub.misbehave is not None and (via_cache or revision == commit or
                                          not hub.redirect_branches):
            return _hostile(hub.misbehave, commit, content)
        meta = {
            "X-Repo-Commit": commit,
            "ETag": f'"{git_blob_sha(content)}"',
            "Accept-Ranges": "bytes",
        }
        if hub.redirect_branches and not via_cache and revision != commit:
            location = f"{_RESOLVE_CACHE_PREFIX}{repo_id}/{commit}/{quote(filename)}"
            size = HUGE if hub.misbehave == "huge" else len(content)
            return _Reply(307, {**meta, "Location": location, "X-Linked-Size": str(size)})
        return _Reply(200, {**meta, "Content-Type": "application/json"}, content)


def _error(status: int, code: str | None, message: str) -> _Reply:
    headers = {"Content-Type": "application/json", "X-Error-Message": message}
    if code is not None:
        headers["X-Error-Code"] = code
    return _Reply(status, headers, json.dumps({"error": message}).encode())


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization")
    if value and value.lower().startswith("bearer "):
        return value[len("bearer ") :].strip() or None
    return None


def _is_sha(value: str) -> bool:
    return len(value) == 40 and all(c in "0123456789abcdef" for c in value)


class StallServer:
    """Accepts TCP connections on 127.0.0.1 and never answers (a Hub that hangs).

    ``connections`` counts the connections accepted; sockets stay open until :meth:`close`.
    """

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.connections = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="stall-server", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            self._held.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in [*self._held, self._listener]:
            with contextlib.suppress(OSError):
                conn.close()

    def __enter__(self) -> StallServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def unused_port() -> int:
    """A 127.0.0.1 port with nothing listening on it (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
