"""The plugin manager: built-in bundles first, then third-party entry points (group ``kvlint``)."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pluggy

from kvlint import hookspecs
from kvlint.errors import PluginError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

BUILTIN_PLUGINS = (
    "kvlint.rules.attention",
    "kvlint.rules.parallelism",
    "kvlint.rules.model_tp",
    "kvlint.rules.engines",
    "kvlint.rules.architectures",
    "kvlint.rules.capacity",
    "kvlint.rules.manifest",
    "kvlint.rules.engine_options",
    "kvlint.rules.source",
    "kvlint.rules.probe",
    "kvlint.rules.config",
    "kvlint.rules.limits",
    "kvlint.reporters.builtin",
    "kvlint.manifests.builtin",
)
"""Modules registered on every manager, through the same hooks third parties implement."""

ENTRY_POINT_GROUP = hookspecs.PROJECT
DISABLE_ENV = "KVLINT_DISABLE_PLUGIN_AUTOLOAD"


DISTRIBUTIONS: dict[str, str] = {}
"""Plugin name -> ``distribution version`` that installed it (for error messages)."""


def trusted_path(path: list[str] | None = None) -> list[str]:
    """``sys.path`` without the entries that name the working directory (``''``, ``.``, the
    cwd itself): a repository being linted is not a place plugins or modules come from."""
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed: nothing can name it
        cwd = None
    entries = sys.path if path is None else path
    return [entry for entry in entries
            if entry and not (cwd is not None and os.path.realpath(entry) == cwd)]


@contextmanager
def _safe_sys_path() -> Iterator[None]:
    """Imports under this block search only :func:`trusted_path` (restored afterwards)."""
    saved = sys.path[:]
    sys.path[:] = trusted_path(saved)
    try:
        yield
    finally:
        sys.path[:] = saved


_GROUP_LINE = re.compile(rf"^\s*\[\s*{re.escape(ENTRY_POINT_GROUP)}\s*\]\s*$", re.MULTILINE)


def _entry_point_files(entry: str) -> Iterator[str] | None:
    """The ``entry_points.txt`` files of the distributions in the ``sys.path`` entry
    ``entry`` (the layouts ``importlib.metadata`` reads: ``*.dist-info``, ``*.egg-info``,
    ``*.egg/EGG-INFO``); ``None`` when ``entry`` is not a directory that can be listed
    (a zip archive: only ``importlib.metadata`` can tell)."""
    try:
        names = os.listdir(entry)
    except NotADirectoryError:
        return None if os.path.exists(entry) else iter(())
    except OSError:
        return iter(())
    return (os.path.join(entry, name, *(("EGG-INFO",) if name.endswith(".egg") else ()),
                         "entry_points.txt")
            for name in names if name.endswith((".dist-info", ".egg-info", ".egg")))


def may_have_entry_points(path: list[str] | None = None) -> bool:
    """Whether any distribution on ``path`` (default :func:`trusted_path`) declares a
    ``[kvlint]`` entry-point group: a directory listing and a few small reads, so a run
    with no kvlint plugin installed never parses every distribution's metadata."""
    for entry in trusted_path() if path is None else path:
        files = _entry_point_files(entry)
        if files is None:
            return True
        for file in files:
            try:
                with open(file, encoding="utf-8", errors="replace") as handle:
                    if _GROUP_LINE.search(handle.read()):
                        return True
            except OSError:
                continue
    return False


def entry_points_of_installed() -> list[EntryPoint]:
    """The ``kvlint`` entry points of the distributions installed on :func:`trusted_path`,
    the first distribution of each name winning (as ``importlib.metadata`` does)."""
    if not may_have_entry_points():
        return []
    from importlib.metadata import distributions

    seen: set[str] = set()
    found: list[EntryPoint] = []
    for dist in distributions(path=trusted_path()):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        found.extend(ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)
    return found


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Register every ``kvlint`` entry point; one that fails to import stops the run
    (exit 2) naming its distribution. Plugins come from installed distributions only,
    never from the working directory or the linted repository: neither the metadata nor
    the plugin's module is looked up there."""
    for ep in entry_points_of_installed():
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "an unknown distribution"
        if pm.get_plugin(ep.name) is not None:
            continue
        try:
            with _safe_sys_path():
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
