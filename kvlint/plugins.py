"""The plugin manager: built-in bundles first, then third-party entry points (group ``kvlint``)."""

from __future__ import annotations

import importlib
import os

import pluggy

from kvlint import hookspecs
from kvlint.errors import PluginError

BUILTIN_PLUGINS = (
    "kvlint.rules.attention",
    "kvlint.rules.parallelism",
    "kvlint.rules.engines",
    "kvlint.rules.capacity",
    "kvlint.rules.manifest",
    "kvlint.rules.engine_options",
    "kvlint.rules.source",
    "kvlint.rules.probe",
    "kvlint.rules.config",
    "kvlint.rules.limits",
    "kvlint.reporters.text",
    "kvlint.reporters.json",
    "kvlint.reporters.sarif",
    "kvlint.reporters.github",
    "kvlint.reporters.markdown",
    "kvlint.reporters.junit",
    "kvlint.loaders.manifests.builtin",
)
"""Modules registered on every manager, through the same hooks third parties implement."""

ENTRY_POINT_GROUP = hookspecs.PROJECT
DISABLE_ENV = "KVLINT_DISABLE_PLUGIN_AUTOLOAD"


DISTRIBUTIONS: dict[str, str] = {}
"""Plugin name -> ``distribution version`` that installed it (for error messages)."""


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Register every ``kvlint`` entry point; one that fails to import stops the run
    (exit 2) naming its distribution. Plugins come from installed distributions only,
    never from the linted repository."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "an unknown distribution"
        if pm.get_plugin(ep.name) is not None:
            continue
        try:
            plugin = ep.load()
        except Exception as err:
            raise PluginError(f"kvlint plugin {ep.name!r} from {dist} failed to load: "
                              f"{type(err).__name__}: {err}") from None
        try:
            pm.register(plugin, name=ep.name)
        except Exception as err:
            raise PluginError(f"kvlint plugin {ep.name!r} from {dist} is invalid: {err}") \
                from None
        DISTRIBUTIONS[ep.name] = dist


def describe(plugin_name: str) -> str:
    """``plugin 'example' (kvlint-example-plugin 0.1.0)`` or ``built-in module``."""
    dist = DISTRIBUTIONS.get(plugin_name)
    return f"plugin {plugin_name!r} ({dist})" if dist else f"{plugin_name}"


def get_plugin_manager(*, load_entry_points: bool = True) -> pluggy.PluginManager:
    """A fresh manager with the built-ins and, unless disabled (``--no-plugins`` or
    ``KVLINT_DISABLE_PLUGIN_AUTOLOAD``), every installed ``kvlint`` plugin."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    if load_entry_points and not os.environ.get(DISABLE_ENV):
        _load_entry_points(pm)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as err:
        raise PluginError(f"plugin {err.plugin!r} is invalid: {err}") from None
    return pm
