"""The built-in manifest parsers, registered through the same hooks as third-party ones.

The parser modules are imported when the hooks are first called (by ``kvlint lint``), so
commands that never read manifests do not pay for them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

from kvlint.hookspecs import hookimpl
from kvlint.loaders.manifests.base import DocumentContext, ManifestParser

MODULES = (
    "kvlint.loaders.manifests.kubernetes",
    "kvlint.loaders.manifests.kubernetes_crds",
    "kvlint.loaders.manifests.helm",
    "kvlint.loaders.manifests.compose",
    "kvlint.loaders.manifests.launchers",
    "kvlint.loaders.manifests.engine_configs",
)
"""Kubernetes objects first: they are recognised by apiVersion/kind, the others by keys."""


def _parsers(module: ModuleType) -> list[type[ManifestParser]]:
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, ManifestParser)
            and value is not ManifestParser and value.name
            and value.__module__ == module.__name__]


@hookimpl
def kvlint_manifest_parsers() -> Sequence[type[ManifestParser]]:
    return [p for name in MODULES for p in _parsers(importlib.import_module(name))]


@hookimpl(trylast=True)
def kvlint_manifest_format(
    document: object, ctx: DocumentContext, parsers: Sequence[ManifestParser]
) -> str | None:
    """The first parser whose ``detect`` accepts the document."""
    for parser in parsers:
        if parser.detect(document, ctx):
            return parser.name
    return None
