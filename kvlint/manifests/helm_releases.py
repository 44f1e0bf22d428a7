"""GitOps objects that install a Helm chart with values written inline: Flux's
``HelmRelease`` and Argo CD's ``Application``.

* **Flux** (``helm.toolkit.fluxcd.io`` v2, the HelmRelease API reference): ``spec.values``
  holds the chart's values as a map; ``spec.valuesFrom`` merges values from ConfigMaps and
  Secrets (not read: a note says so); ``${VAR}`` is a Flux post-build substitution,
  unresolved here.
* **Argo CD** (``argoproj.io/v1alpha1`` ``Application``, the Helm section of the
  Application specification): ``spec.source.helm`` (or each of ``spec.sources``) holds the
  values as a map (``valuesObject``) or as a YAML string (``values``); ``valuesObject``
  wins where both are set.

The values are then read as a values file of the same chart would be: bjw-s's app-template
(:mod:`.app_template`), else the first of kvlint's Helm values parsers that recognises them
(production-stack, llm-d, the vLLM and TGI charts, the generic keys of
:mod:`.helm_keys`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvlint.manifests.app_template import app_template_models, is_app_template
from kvlint.manifests.base import DocumentContext, ManifestParser, ServedModel
from kvlint.manifests.kubernetes_containers import embedded_yaml
from kvlint.manifests.yaml_values import get_list, get_map, get_str, is_object, object_name

__all__ = ["ArgoApplicationParser", "FluxHelmReleaseParser", "values_models"]


def values_models(values: dict[str, Any], ctx: DocumentContext, fmt: str,
                  notes: list[str]) -> list[ServedModel]:
    """The served models of a chart's ``values`` written inside another object."""
    if is_app_template(values):
        return app_template_models(values, ctx, fmt, notes)
    from kvlint.manifests.builtin import LAZY_PARSERS  # the values parsers, in their order

    for cls in LAZY_PARSERS:
        if not cls.name.startswith("helm-") or cls.name == "helm-app-template":
            continue
        parser = cls()
        if parser.detect(values, ctx):
            return [replace(s, notes=(*notes, *s.notes)) for s in parser.parse(values, ctx)]
    return []


class FluxHelmReleaseParser(ManifestParser):
    """A Flux HelmRelease: its inline ``spec.values`` (module doc)."""

    name = "flux-helmrelease"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("helm.toolkit.fluxcd.io/",), ("HelmRelease",)) and \
            isinstance(get_map(get_map(document, "spec"), "values"), dict)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        spec = get_map(document, "spec") or {}
        values = get_map(spec, "values")
        if values is None:
            return []
        chart = get_str(get_map(get_map(spec, "chart"), "spec"), "chart") or \
            get_str(get_map(spec, "chartRef"), "name") or "its chart"
        notes = [f"Flux HelmRelease {object_name(document)}: spec.values of {chart}"]
        sources = [get_str(item, "name") or "?" for item in get_list(spec, "valuesFrom") or []
                   if isinstance(item, dict)]
        if sources:
            notes.append("spec.valuesFrom merges values kvlint does not read (from "
                         + ", ".join(sources[:4]) + ")")
        return values_models(values, ctx, self.name, notes)


class ArgoApplicationParser(ManifestParser):
    """An Argo CD Application: the Helm values of its source(s) (module doc)."""

    name = "argocd-application"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_object(document, ("argoproj.io/",), ("Application",)) and \
            any(self._values(s, ctx)[0] is not None for s in self._sources(document))

    @staticmethod
    def _sources(document: object) -> list[dict[str, Any]]:
        spec = get_map(document, "spec") or {}
        found = [s for s in get_list(spec, "sources") or [] if isinstance(s, dict)]
        single = get_map(spec, "source")
        return [single, *found] if single is not None else found

    @staticmethod
    def _values(source: dict[str, Any], ctx: DocumentContext
                ) -> tuple[dict[str, Any] | None, str]:
        helm = get_map(source, "helm") or {}
        inline = get_map(helm, "valuesObject")
        if inline is not None:
            return inline, "helm.valuesObject"
        if isinstance(helm.get("values"), str):
            found, _ = embedded_yaml(helm["values"], ctx.path)
            return found, "helm.values"
        return None, ""

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        out: list[ServedModel] = []
        for source in self._sources(document):
            values, key = self._values(source, ctx)
            if values is None:
                continue
            chart = get_str(source, "chart") or get_str(source, "path") or \
                get_str(source, "repoURL") or "its chart"
            out.extend(values_models(values, ctx, self.name, [
                f"Argo CD Application {object_name(document)}: {key} of {chart}"]))
        return out
