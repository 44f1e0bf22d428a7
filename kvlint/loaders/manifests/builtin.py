"""The built-in manifest parsers, registered through the same hooks as third-party ones."""

from __future__ import annotations

from collections.abc import Sequence

from kvlint.hookspecs import hookimpl
from kvlint.loaders.manifests import (
    compose,
    engine_configs,
    helm,
    kubernetes,
    kubernetes_crds,
    launchers,
)
from kvlint.loaders.manifests.base import DocumentContext, ManifestParser


def _parsers(module: object) -> list[type[ManifestParser]]:
    found = [value for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, ManifestParser)
             and value is not ManifestParser and value.name
             and value.__module__ == getattr(module, "__name__", "")]
    return found


@hookimpl
def kvlint_manifest_parsers() -> Sequence[type[ManifestParser]]:
    # Kubernetes objects first: they are recognised by apiVersion/kind, the others by keys.
    return [p for m in (kubernetes, kubernetes_crds, helm, compose, launchers, engine_configs)
            for p in _parsers(m)]


@hookimpl(trylast=True)
def kvlint_manifest_format(
    document: object, ctx: DocumentContext, parsers: Sequence[ManifestParser]
) -> str | None:
    """The first parser whose ``detect`` accepts the document."""
    for parser in parsers:
        if parser.detect(document, ctx):
            return parser.name
    return None
