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
    "kvlint.rules.config",
    "kvlint.reporters.text",
    "kvlint.reporters.json",
    "kvlint.loaders.manifests.builtin",
)
"""Modules registered on every manager, through the same hooks third parties implement."""

ENTRY_POINT_GROUP = hookspecs.PROJECT
DISABLE_ENV = "KVLINT_DISABLE_PLUGIN_AUTOLOAD"


def get_plugin_manager(*, load_entry_points: bool = True) -> pluggy.PluginManager:
    """A fresh manager with the built-ins and, unless disabled (``--no-plugins`` or
    ``KVLINT_DISABLE_PLUGIN_AUTOLOAD``), every installed ``kvlint`` plugin."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    if load_entry_points and not os.environ.get(DISABLE_ENV):
        try:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except Exception as err:
            raise PluginError(f"a kvlint plugin failed to load: {type(err).__name__}: {err}") \
                from None
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as err:
        raise PluginError(f"plugin {err.plugin!r} is invalid: {err}") from None
    return pm
