"""The settings of one ``kvlint lint`` run (:func:`kvlint.lint.runner.lint_paths`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvlint.lint.discovery import DEFAULT_INCLUDE

if TYPE_CHECKING:
    import pluggy

    from kvlint.diagnostics import Finding
    from kvlint.lint.discovery import Resolved
    from kvlint.lock.files import ModelLock
    from kvlint.manifests.base import ManifestProblem
    from kvlint.model.serving import ServingPlan
    from kvlint.rules.base import Rule
    from kvlint.suppress import Policy


@dataclass(frozen=True, kw_only=True)
class LintOptions:
    """What a lint run checks with, and how: everything but the paths it is given."""

    rules: Sequence[type[Rule]]
    pm: pluggy.PluginManager
    """The plugin manager (its manifest parsers; its plugins are part of the cache's key)."""
    base: ServingPlan | None = None
    """The plan values a manifest does not set come from (``ServingPlan()`` when ``None``)."""
    include: Sequence[str] = DEFAULT_INCLUDE
    exclude: Sequence[str] = ()
    offline: bool = False
    model_map: Mapping[str, str] | None = None
    fail_on: str = "error"
    policy: Policy | None = None
    """The settings' suppression policy (per-file ignores, severities)."""
    unused_suppression: Finding | None = None
    """The KV901 template for suppressions that did nothing (``None``: not reported)."""
    stdin: tuple[str, str] | None = None
    """``(name, text)`` of a manifest read from standard input, linted as if it were the
    file ``name`` (``-`` when unnamed)."""
    lock: ModelLock | None = None
    """Hub models it holds are read from it."""
    discovery_problems: Sequence[ManifestProblem] | None = None
    """Given, the paths linted are the files the caller's own :func:`discover` returned (they
    are not walked and checked again) and these are the problems it reported."""
    cache: bool = False
    """Reuse and store each file's results (:mod:`kvlint.lint.cache`)."""
    cache_context: Sequence[object] = ()
    """What else the caller knows changes findings (the settings), part of the cache's key."""
    resolved: Resolved | None = None
    """The real paths the caller's walk resolved."""
