"""Fetch a model's ``config.json`` from the Hugging Face Hub (or its local cache).

This is the only module that talks to the Hub. huggingface_hub is imported lazily, inside
:func:`download_config`, so ``kvlint`` commands that never touch the Hub do not pay for it.

huggingface_hub reads ``HF_ENDPOINT``, ``HF_HUB_CACHE``/``HF_HOME`` and ``HF_HUB_OFFLINE`` once,
when it is first imported; kvlint reads them at call time and passes them explicitly, so the
environment seen by each call is the one that counts. Every failure becomes a one-line
:class:`~kvlint.errors.HubError` that says what to do; a failure that says nothing about the
model (network, deadline, auth, offline without a cached copy) is a
:class:`~kvlint.errors.HubUnavailableError`.

Every request goes through :mod:`kvlint.loaders.hub_guard`: short timeouts, one failure per
endpoint per run, a deadline for Hub access per run, a size cap, telemetry off.

What a hostile endpoint cannot do (issue 31), and where each guarantee rests:

* **Leak a secret or drive the terminal through a message.** Every message this module
  raises passes :func:`_translate` (or :func:`_endpoint`), which runs it through
  :func:`kvlint.loaders.hub_guard.safe_text`: ``HF_TOKEN``, the saved login and
  ``HF_ENDPOINT``'s credentials are redacted, and control characters, ANSI escapes and bidi
  overrides in an echoed error body or header are escaped. The messages are what both stderr
  and ``--format json`` show (``unavailable``, KV902), so one choke point covers both; server
  text is also redacted before :func:`_reason` cuts it to 200 characters. huggingface_hub's
  own logger is silenced during a call, so it prints no server text of its own.
* **Be reached through a malformed ``HF_ENDPOINT``.** :func:`_endpoint` accepts only an
  ``http(s)://host[:port][/path]`` URL; anything else (no scheme, ``ftp:``, garbage, a query)
  is a one-line :class:`~kvlint.errors.UsageError` (exit 2), raised before huggingface_hub
  sees it, never a per-model finding or a traceback.
* **Hold kvlint past the deadline, fill the disk through compression, or redirect kvlint to
  a local file**: enforced in the transport, see :mod:`kvlint.loaders.hub_guard`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from kvlint.errors import HubError, HubNotCachedError, HubUnavailableError, UsageError
from kvlint.hub_refs import looks_like_hub_id, split_hub_ref
from kvlint.loaders import hub_cache

if TYPE_CHECKING:
    from kvlint.loaders import hub_guard

__all__ = ["HubConfig", "download_config", "download_python_files", "looks_like_hub_id",
           "split_hub_ref"]

_DEFAULT_ENDPOINT = "https://huggingface.co"
_DEFAULT_ETAG_TIMEOUT = 10.0

_TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class HubConfig:
    """A ``config.json`` resolved from the Hub, as a file in the local cache."""

    repo_id: str
    revision: str | None  # what the user asked for (None = default branch)
    commit: str | None  # commit sha the file came from, when known
    path: Path  # local path of the cached config.json


def download_config(
    repo_id: str,
    *,
    revision: str | None = None,
    offline: bool = False,
    filename: str = "config.json",
) -> HubConfig:
    """Return the cached ``filename`` of ``repo_id`` at ``revision``, downloading it if needed.

    ``offline=True`` (``--offline``) or a truthy ``HF_HUB_OFFLINE`` reads the local cache only and
    makes no request. Raises :class:`HubError` with a one-line message on any failure.
    """
    # huggingface_hub also honours TRANSFORMERS_OFFLINE; name whichever switch is on.
    env_switch = next(
        (name for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if _env_true(name)), None
    )
    context = _Context(
        repo_id=repo_id,
        revision=revision,
        filename=filename,
        endpoint=_endpoint(),
        cache_dir=_cache_dir(),
        offline_switch="--offline" if offline else env_switch,
    )
    if context.offline_switch is not None or (revision and _COMMIT_SHA.fullmatch(revision)):
        # Offline, or a commit sha (immutable: huggingface_hub itself answers it from the
        # cache without a request): read the cache by path, without importing huggingface_hub.
        hit = _cached_by_path(context)
        if hit is not None:
            return hit
        if context.offline_switch is not None and _surely_not_cached(context):
            # huggingface_hub's own lookup reads the same paths and would raise
            # LocalEntryNotFoundError (translated to this): its import (~100 ms) is saved.
            raise _offline_missing(context, context.offline_switch)
    from kvlint.loaders import hub_guard  # only what may make a request needs the guard

    try:
        hub_guard.install()  # before the import below: it turns telemetry off
        from huggingface_hub import hf_hub_download
    except ImportError as exc:  # pragma: no cover - huggingface_hub is a dependency
        raise HubError(
            "reading models from the Hugging Face Hub needs huggingface_hub:"
            " pip install huggingface_hub"
        ) from exc

    if context.offline_switch is not None:
        # Offline: a cache hit is a file lookup (~0.2 ms, against ~10 ms for the full
        # download path); a miss goes through hf_hub_download for its precise error.
        hit = _cached(context)
        if hit is not None:
            return hit

    token = os.environ.get("HF_TOKEN") or None  # None: huggingface_hub finds the saved login

    def fetch() -> HubConfig:
        path = Path(hf_hub_download(
            repo_id,
            filename,
            revision=revision,
            cache_dir=str(context.cache_dir),
            endpoint=context.endpoint,
            local_files_only=context.offline_switch is not None,
            etag_timeout=_etag_timeout(),
            token=token,
        ))
        return HubConfig(repo_id=repo_id, revision=revision, commit=_commit_from_path(path),
                         path=path)

    # huggingface_hub falls back to its cache only for the httpx errors it retries; the
    # guard's errors skip that, so the fallback is done here.
    return _guarded(context, fetch, lambda: _cached(context))


def download_python_files(
    repo_id: str, *, revision: str | None = None, offline: bool = False
) -> Path:
    """The cached snapshot directory of ``repo_id``'s ``*.py`` files (remote code, never
    executed), downloaded through the same guard and error translation as configs."""
    context = _Context(repo_id=repo_id, revision=revision, filename="*.py",
                       endpoint=_endpoint(), cache_dir=_cache_dir(),
                       offline_switch="--offline" if offline else None)
    from kvlint.loaders import hub_guard

    try:
        hub_guard.install()
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - a runtime dependency
        raise HubError("scanning Hub code needs huggingface_hub") from exc
    def fetch(local_only: bool) -> Path:
        return Path(snapshot_download(repo_id, revision=revision, allow_patterns=["*.py"],
                                      cache_dir=str(context.cache_dir),
                                      endpoint=context.endpoint, local_files_only=local_only,
                                      etag_timeout=_etag_timeout(),
                                      token=os.environ.get("HF_TOKEN") or None))

    def cached() -> Path | None:
        try:
            return None if offline else fetch(True)
        except Exception:
            return None

    return _guarded(context, lambda: fetch(offline), cached)


T = TypeVar("T")


def _sync_offline(ctx: _Context) -> None:
    """huggingface_hub reads ``HF_HUB_OFFLINE`` once, at import: a process that imported it
    while the variable was set (an earlier offline run, a test) would refuse every later
    request with its own "offline mode is enabled" error. Set its switch from this call's
    environment and options instead."""
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = ctx.offline_switch is not None or any(
        _env_true(name) for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _guarded(ctx: _Context, fetch: Callable[[], T], cached: Callable[[], T | None]) -> T:
    """``fetch()`` under the Hub guard (an endpoint known to be down, or a spent deadline,
    fails before any work), huggingface_hub's retry warnings muted (kvlint's one-line error
    says what happened); when the guard stopped it, ``cached()``'s copy if there is one;
    every failure translated to a one-line :class:`HubError`."""
    import logging

    from kvlint.loaders import hub_guard

    hf_logger = logging.getLogger("huggingface_hub")
    level = hf_logger.level
    hf_logger.setLevel(logging.CRITICAL + 1)  # kvlint's one line says what went wrong
    _sync_offline(ctx)
    try:
        with hub_guard.GUARD.session():
            if ctx.offline_switch is None:
                hub_guard.GUARD.check(hub_guard.origin_of(ctx.endpoint))
            return fetch()
    except Exception as exc:
        if _guard_error(exc) is not None:
            hit = cached()
            if hit is not None:
                return hit
        error = _translate(exc, ctx)
        if error is None:
            raise
        raise error from exc
    finally:
        hf_logger.setLevel(level)


def _cached_by_path(ctx: _Context) -> HubConfig | None:
    """The cached copy of ``ctx``'s file read by path (:mod:`kvlint.loaders.hub_cache`)."""
    hit = hub_cache.cached_file(ctx.repo_id, ctx.filename, ctx.revision, cache=ctx.cache_dir)
    if hit is None:
        return None
    return HubConfig(repo_id=ctx.repo_id, revision=ctx.revision, commit=hit[1], path=hit[0])


def _surely_not_cached(ctx: _Context) -> bool:
    """Offline, whether huggingface_hub could only answer "not in the cache": a valid repo
    id whose file is neither cached (checked by the caller) nor recorded as absent (a
    ``.no_exist`` marker: huggingface_hub answers that differently)."""
    return looks_like_hub_id(ctx.repo_id) and "@" not in ctx.repo_id and \
        not hub_cache.cached_absent(ctx.repo_id, ctx.filename, ctx.revision,
                                    cache=ctx.cache_dir)


def _cached(ctx: _Context) -> HubConfig | None:
    """The cached copy of ``ctx``'s file, or ``None`` (a file lookup, no request)."""
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(ctx.repo_id, ctx.filename, cache_dir=str(ctx.cache_dir),
                                    revision=ctx.revision)
    if not isinstance(cached, str):
        return None
    path = Path(cached)
    return HubConfig(repo_id=ctx.repo_id, revision=ctx.revision,
                     commit=_commit_from_path(path), path=path)


# ------------------------------------------------------------------------------ environment
def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE_VALUES


def _endpoint() -> str:
    """``HF_ENDPOINT`` (or huggingface.co), checked: a usage error unless it is an http(s)
    URL with a host, an optional port and path, and nothing else."""
    raw = os.environ.get("HF_ENDPOINT") or _DEFAULT_ENDPOINT
    endpoint = raw.strip().rstrip("/")
    problem = _endpoint_problem(endpoint)
    if problem is not None:
        from kvlint.loaders.hub_guard import safe_text

        shown = safe_text(repr(raw))
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        raise UsageError(f"HF_ENDPOINT={shown} is not a usable URL ({problem}); set it to an"
                         f" http(s) URL such as {_DEFAULT_ENDPOINT}, or unset it")
    return endpoint


def _endpoint_problem(endpoint: str) -> str | None:
    if not endpoint.isprintable() or any(c.isspace() for c in endpoint):
        return "it contains spaces or control characters"
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError as exc:
        return f"it does not parse: {exc}"
    scheme = parts.scheme.lower()
    if "://" not in endpoint or not scheme:
        return "no scheme: it must start with https:// or http://"
    if scheme not in ("http", "https"):
        return f"the scheme is '{scheme}', not http or https"
    if not parts.hostname:
        return "no host"
    if port == 0:
        return "port 0"
    if parts.query or parts.fragment or "?" in endpoint or "#" in endpoint:
        return "it has a query or fragment"
    return None


def _cache_dir() -> Path:
    """The hub cache huggingface_hub would use with the current environment."""
    return hub_cache.cache_dir()


def _etag_timeout() -> float:
    try:
        value = float(os.environ.get("HF_HUB_ETAG_TIMEOUT", ""))
    except ValueError:
        return _DEFAULT_ETAG_TIMEOUT
    return value if value > 0 else _DEFAULT_ETAG_TIMEOUT


def _commit_from_path(path: Path) -> str | None:
    """``.../snapshots/<40-hex>/config.json`` -> the sha (works online and offline)."""
    parts = path.parts
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] == "snapshots" and _COMMIT_SHA.fullmatch(parts[index + 1]):
            return parts[index + 1]
    return None


# ----------------------------------------------------------------------------------- errors
@dataclass(frozen=True)
class _Context:
    repo_id: str
    revision: str | None
    filename: str
    endpoint: str
    cache_dir: Path
    offline_switch: str | None  # "--offline", the offline env variable, or None (online)

    @property
    def rev(self) -> str:
        return self.revision or "main"

    @property
    def repo_url(self) -> str:
        return f"{self.endpoint}/{self.repo_id}"


def _one_line(text: str) -> str:
    """``text`` safe to print on one line: secrets redacted, server text escaped."""
    from kvlint.loaders.hub_guard import safe_text

    return safe_text(text)


def _reason(exc: BaseException) -> str:
    """A short, single-line description of ``exc`` for the end of a message (redacted and
    escaped before it is cut, so no prefix of a secret survives the cut)."""
    server_message = getattr(exc, "server_message", None)
    text = server_message if isinstance(server_message, str) and server_message else str(exc)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    reason = _one_line(lines[0]) if lines else type(exc).__name__
    return reason if len(reason) <= 200 else reason[:197] + "..."


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _http_client_errors(*names: str) -> tuple[type[BaseException], ...]:
    """Exception classes of the HTTP libraries huggingface_hub may use (httpx2, httpx, requests).

    Looked up among already imported modules: huggingface_hub imported its client before raising.
    """
    found: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx", "requests", "requests.exceptions"):
        module = sys.modules.get(module_name)
        for name in names:
            cls = getattr(module, name, None) if module is not None else None
            if isinstance(cls, type) and issubclass(cls, BaseException):
                found.append(cls)
    return tuple(found)


def _offline_missing(ctx: _Context, switch: str) -> HubError:
    undo = "drop --offline" if switch == "--offline" else f"unset {switch}"
    return HubNotCachedError(
        f"{ctx.repo_id}: {ctx.filename} at revision {ctx.rev} is not in the local Hugging Face"
        f" cache ({ctx.cache_dir}) and {switch} forbids downloading it; run once online to cache"
        f" it ({undo})"
    )


def _unreachable(ctx: _Context, reason: str) -> HubError:
    return HubUnavailableError(
        f"Could not reach the Hugging Face Hub at {ctx.endpoint} to fetch {ctx.repo_id} ({reason});"
        f" check your network, proxy or HF_ENDPOINT, or pass --offline to read the local cache"
        f" ({ctx.cache_dir})"
    )


def _sent_token(exc: BaseException) -> bool:
    """Whether the failed request carried a token (read from the response: in huggingface_hub
    2.x, ``HfHubHTTPError.request`` is an httpx2 property that raises when unset)."""
    try:
        headers = exc.response.request.headers  # type: ignore[attr-defined]
        return headers.get("authorization") is not None
    except Exception:
        return False


def _from_status(exc: BaseException, status: int, ctx: _Context) -> HubError:
    """A Hub HTTP error without a more specific class."""
    reason = _reason(exc)
    if status == 401:
        if "invalid credentials" in reason.lower():
            return HubUnavailableError(
                f"The Hugging Face Hub rejected your token for '{ctx.repo_id}' (401 invalid"
                " credentials); run 'hf auth login' again or set HF_TOKEN to a valid token"
            )
        return HubUnavailableError(
            f"The Hugging Face Hub refused '{ctx.repo_id}' as unauthorised (401: {reason});"
            " authenticate with 'hf auth login' or set HF_TOKEN"
        )
    if status == 403:
        return HubUnavailableError(
            f"The Hugging Face Hub forbids access to '{ctx.repo_id}' (403: {reason}); use a token"
            " with read access ('hf auth login' or HF_TOKEN) and accept the licence at"
            f" {ctx.repo_url} if the model is gated"
        )
    if status == 429:
        return HubUnavailableError(
            f"The Hugging Face Hub rate-limited the request for '{ctx.repo_id}' (429); wait and"
            " retry, authenticate ('hf auth login' or HF_TOKEN) for higher limits, or pass"
            " --offline to read the local cache"
        )
    if status >= 500 or status == 408:
        return HubUnavailableError(
            f"The Hugging Face Hub at {ctx.endpoint} failed with HTTP {status} for"
            f" '{ctx.repo_id}' and it is not in the local cache; retry later, or pass --offline"
            " to read the local cache"
        )
    return HubError(
        f"The Hugging Face Hub answered HTTP {status} for '{ctx.repo_id}' ({ctx.filename} at"
        f" revision {ctx.rev}): {reason}"
    )


def _in_cache(exc: OSError, ctx: _Context) -> bool:
    """Whether ``exc`` is about a path inside the cache (not writable, not a directory...)."""
    filename = exc.filename
    if not isinstance(filename, str):
        return False
    try:
        return Path(filename).resolve().is_relative_to(ctx.cache_dir.resolve())
    except (OSError, ValueError):
        return False


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _translate(exc: Exception, ctx: _Context) -> HubError | None:
    """Map what ``hf_hub_download`` raised to a one-line HubError (None: not ours to handle)."""
    error = _translate_raw(exc, ctx)
    return None if error is None else type(error)(_one_line(str(error)))


def _guard_error(exc: BaseException) -> hub_guard.GuardError | None:
    from kvlint.loaders import hub_guard

    return next((c for c in _causes(exc) if isinstance(c, hub_guard.GuardError)), None)


def _from_guard(err: hub_guard.GuardError, ctx: _Context) -> HubError:
    from kvlint.loaders import hub_guard

    if isinstance(err, hub_guard.EndpointDown):
        if err.status is not None:
            return _from_status(err, err.status, ctx)
        return _unreachable(ctx, err.reason)
    if isinstance(err, hub_guard.DeadlineExceeded):
        return HubUnavailableError(
            f"Gave up fetching {ctx.repo_id} from the Hugging Face Hub at {ctx.endpoint}:"
            f" {err.reason}; raise it, or pass --offline to read the local cache"
            f" ({ctx.cache_dir})"
        )
    # Too large, a redirect to a non-HTTP URL, an encoding kvlint does not inflate.
    return HubUnavailableError(
        f"Refused {ctx.filename} of {ctx.repo_id} from {ctx.endpoint}: {err.reason}"
    )


def _translate_raw(exc: Exception, ctx: _Context) -> HubError | None:
    guarded = _guard_error(exc)
    if guarded is not None:
        return _from_guard(guarded, ctx)
    from huggingface_hub.errors import (
        DisabledRepoError,
        EntryNotFoundError,
        FileMetadataError,
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    timeouts = _http_client_errors("TimeoutException", "Timeout")
    bad_urls = _http_client_errors(
        "InvalidURL", "UnsupportedProtocol", "MissingSchema", "InvalidSchema"
    )
    transport = _http_client_errors("TransportError", "RequestError", "ConnectionError")

    # Order matters: GatedRepoError subclasses RepositoryNotFoundError, RemoteEntryNotFoundError
    # and every Hub error subclass HfHubHTTPError, LocalEntryNotFoundError is a FileNotFoundError.
    if isinstance(exc, GatedRepoError):
        if _status(exc) == 403 or _sent_token(exc):
            return HubUnavailableError(
                f"Hugging Face repo '{ctx.repo_id}' is gated and your token has no access to it;"
                f" accept its licence at {ctx.repo_url} with the account that owns the token, or"
                " use another token ('hf auth login' or HF_TOKEN)"
            )
        return HubUnavailableError(
            f"Hugging Face repo '{ctx.repo_id}' is gated and the request was not authenticated;"
            f" accept its licence at {ctx.repo_url}, then run 'hf auth login' or set HF_TOKEN"
        )
    if isinstance(exc, DisabledRepoError):
        return HubError(f"Hugging Face repo '{ctx.repo_id}' has been disabled by its owner")
    if isinstance(exc, RepositoryNotFoundError):
        if _sent_token(exc):
            return HubError(
                f"Hugging Face repo '{ctx.repo_id}' not found or not visible to your token (check"
                " the id; private repos need a token with read access: run 'hf auth login' or"
                " set HF_TOKEN)"
            )
        return HubError(
            f"Hugging Face repo '{ctx.repo_id}' not found (check the id; private repos need a"
            " token: run 'hf auth login' or set HF_TOKEN)"
        )
    if isinstance(exc, RevisionNotFoundError):
        return HubError(
            f"Revision '{ctx.rev}' not found in Hugging Face repo '{ctx.repo_id}' (check the"
            " branch, tag or commit sha)"
        )
    if isinstance(exc, LocalEntryNotFoundError):
        # The Hub could not be asked (offline, unreachable, error) and the cache has no copy:
        # what went wrong is the exception it was raised from.
        if ctx.offline_switch is not None:
            return _offline_missing(ctx, ctx.offline_switch)
        for cause in _causes(exc)[1:]:
            if isinstance(cause, OfflineModeIsEnabled):
                return _offline_missing(ctx, "HF_HUB_OFFLINE")
            if isinstance(cause, FileMetadataError):
                return HubUnavailableError(
                    f"{ctx.endpoint} did not answer like a Hugging Face Hub for {ctx.repo_id} (no"
                    " X-Repo-Commit/ETag headers); check HF_ENDPOINT and your proxy settings, or"
                    " pass --offline to read the local cache"
                )
            status = _status(cause)
            if isinstance(cause, HfHubHTTPError) and status is not None:
                return _from_status(cause, status, ctx)
            if timeouts and isinstance(cause, timeouts):
                return _unreachable(ctx, f"timed out: {_reason(cause)}")
            if transport and isinstance(cause, transport):
                return _unreachable(ctx, _reason(cause))
        return _unreachable(ctx, "no connection and no cached copy")
    if isinstance(exc, EntryNotFoundError):
        return HubError(f"{ctx.repo_id} has no {ctx.filename} at revision {ctx.rev}")
    if isinstance(exc, HfHubHTTPError):
        status = _status(exc)
        if status is not None:
            return _from_status(exc, status, ctx)
        return HubError(f"Hugging Face Hub request for '{ctx.repo_id}' failed: {_reason(exc)}")
    if isinstance(exc, OfflineModeIsEnabled):
        return _offline_missing(ctx, ctx.offline_switch or "HF_HUB_OFFLINE")
    if bad_urls and isinstance(exc, bad_urls):
        return HubError(
            f"HF_ENDPOINT '{ctx.endpoint}' is not a usable URL ({_reason(exc)}); set it to"
            f" something like {_DEFAULT_ENDPOINT} or unset it"
        )
    if timeouts and isinstance(exc, timeouts):
        return _unreachable(ctx, f"timed out: {_reason(exc)}")
    if transport and isinstance(exc, transport):
        return _unreachable(ctx, _reason(exc))
    http_errors = _http_client_errors("HTTPError", "RequestException")
    if http_errors and isinstance(exc, http_errors):
        return HubError(f"Hugging Face Hub request for '{ctx.repo_id}' failed: {_reason(exc)}")
    if isinstance(exc, HFValidationError):
        return HubError(
            f"'{ctx.repo_id}' is not a valid Hugging Face repo id ({_reason(exc)}); expected"
            " 'name' or 'org/name'"
        )
    if isinstance(exc, OSError) and (isinstance(exc, PermissionError) or _in_cache(exc, ctx)):
        return HubUnavailableError(
            f"Cannot use the Hugging Face cache at {ctx.cache_dir} ({_reason(exc)}); set"
            " HF_HUB_CACHE to a writable directory"
        )
    if isinstance(exc, ConnectionError):
        return _unreachable(ctx, _reason(exc))
    if isinstance(exc, OSError):
        return HubError(
            f"Could not fetch {ctx.filename} of {ctx.repo_id} from the Hugging Face Hub:"
            f" {_reason(exc)}"
        )
    if isinstance(exc, ValueError):
        return HubError(
            f"Invalid Hugging Face request for '{ctx.repo_id}' (revision {ctx.rev}): {_reason(exc)}"
        )
    return None
