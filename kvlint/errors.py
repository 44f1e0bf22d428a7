"""Errors kvlint reports to the user: one line, exit code 2, never a traceback."""

from __future__ import annotations


class KvlintError(Exception):
    """An error the user can act on. ``str(error)`` is the one-line message."""

    exit_code = 2


class UsageError(KvlintError):
    """A bad command line: an unknown option value, rule code or combination."""


class InputError(KvlintError):
    """A file that cannot be read or parsed (missing, not JSON, wrong shape)."""


class ConfigError(KvlintError):
    """A config.json whose attention geometry cannot be determined.

    ``field`` names the offending field, ``source`` the file or Hub reference.
    """

    def __init__(self, detail: str, *, field: str | None = None, source: str | None = None):
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.source = source

    def __str__(self) -> str:
        return f"{self.source}: {self.detail}" if self.source else self.detail


class HubError(KvlintError):
    """The Hugging Face Hub could not provide the config (not found, gated, offline...)."""


class HubUnavailableError(HubError):
    """The Hub could not be asked or would not answer: the network failed or timed out, the
    run's deadline for Hub access is spent, a token was refused or the repo is gated, the
    server is not a Hub or sent too much, or ``--offline`` without a cached copy. The model
    may well exist: nothing was checked, so a run that meets one exits 2."""


class HubNotCachedError(HubUnavailableError):
    """Offline (``--offline``, ``HF_HUB_OFFLINE``) and the file is not in the local cache."""


class PluginError(KvlintError):
    """A plugin failed to load or registered something invalid."""
