"""Values of bjw-s's ``app-template`` chart (the ``common`` library chart of
bjw-s-labs/helm-charts, 4.x), the usual way a GitOps home or lab cluster runs a container
that has no chart of its own, an engine among them.

The values name Kubernetes objects by keys, and the library renders them (read from
``charts/library/common`` @dfaf83d1: ``values.yaml``, ``templates/lib/container/fields/``
``_image.tpl``, ``_command.tpl``, ``_args.tpl``, ``_env.tpl``, ``lib/pod/fields/
_containers.tpl``):

* ``controllers.<id>`` is one workload (``type`` deployment by default; ``enabled: false``
  renders none; ``replicas``), its pod options ``pod`` over the file's
  ``defaultPodOptions`` (``defaultPodOptionsStrategy: overwrite``, the default: a key the
  controller sets replaces the default's);
* ``controllers.<id>.containers.<id>`` is one container: ``image.repository`` and
  ``image.tag`` render ``repository:tag`` (only when both are set); ``command`` and
  ``args`` are lists (a string is one item); ``env`` is a list of Kubernetes items, or a map
  of ``NAME: value`` or ``NAME: {value|valueFrom: ...}``; ``resources`` as Kubernetes has
  it; a key the container does not set comes from the controller's
  ``defaultContainerOptions``; ``enabled: false`` drops it.

Each container is then the Kubernetes container it renders, read with the pod machinery
(:func:`~kvlint.manifests.kubernetes.pod_models`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvlint.manifests.base import DocumentContext, ManifestParser, ServedModel
from kvlint.manifests.engine_launch import Origin
from kvlint.manifests.kubernetes import pod_models, replicas_notes
from kvlint.manifests.yaml_values import get_map, lstr, plain_map, scalar_text, value_line

__all__ = ["AppTemplateValuesParser", "is_app_template"]

MAX_CONTAINERS = 64
"""Containers read per file (controllers times their containers)."""
CONTAINER_OPTIONS = ("image", "command", "args", "env", "envFrom", "resources",
                     "securityContext")
"""The container keys ``defaultContainerOptions`` may give (values.yaml@dfaf83d1)."""


def _containers(controller: object) -> dict[str, Any]:
    found = get_map(controller, "containers") if isinstance(controller, Mapping) else None
    return found or {}


def is_app_template(document: object) -> bool:
    """Whether ``document`` is app-template values: ``controllers`` whose containers name
    an ``image`` map."""
    if not plain_map(document) or not isinstance(document, dict):
        return False
    controllers = document.get("controllers")
    return isinstance(controllers, dict) and any(
        isinstance(c, Mapping) and isinstance(c.get("image"), Mapping)
        for controller in controllers.values() for c in _containers(controller).values())


def _image(container: Mapping[str, Any]) -> str | None:
    """``repository:tag`` (``_image.tpl``: nothing unless both are set)."""
    image = container.get("image")
    if not isinstance(image, Mapping):
        return None
    repo, tag = image.get("repository"), image.get("tag")
    if not repo or tag is None or str(tag).strip() == "":
        return None
    return lstr(f"{str(repo).strip()}:{scalar_text(tag).strip()}",
                value_line(image, "repository"))


def _env(values: object) -> list[Any]:
    """``env`` as the Kubernetes list ``_env.tpl`` renders (a map's ``dependsOn`` only
    orders the items)."""
    if isinstance(values, list):
        return [item for item in values if isinstance(item, Mapping)]
    if not isinstance(values, Mapping):
        return []
    out: list[Any] = []
    for name, value in values.items():
        if isinstance(value, Mapping):
            out.append({"name": str(name),
                        **{k: v for k, v in value.items() if k != "dependsOn"}})
        elif value is not None:
            out.append({"name": str(name), "value": value})
    return out


def _as_list(value: object) -> list[Any] | None:
    """``command``/``args``: a list as it is, a string as one item, nothing when empty."""
    if isinstance(value, list):
        return value or None
    if isinstance(value, str) and value:
        return [value]
    return None


def _container(name: str, values: Mapping[str, Any], defaults: Mapping[str, Any]
               ) -> dict[str, Any] | None:
    """The Kubernetes container ``values`` renders (the controller's
    ``defaultContainerOptions`` for a key it leaves out), or ``None`` without an image."""
    merged = {**{k: v for k, v in defaults.items() if k in CONTAINER_OPTIONS},
              **{k: v for k, v in values.items() if v not in (None, [], {}, "")}}
    image = _image(merged)
    if image is None:
        return None
    out: dict[str, Any] = {"name": name, "image": image, "env": _env(merged.get("env"))}
    for key in ("command", "args"):
        items = _as_list(merged.get(key))
        if items is not None:
            out[key] = items
    for key in ("envFrom", "resources", "securityContext", "ports"):
        if merged.get(key) is not None:
            out[key] = merged[key]
    return out


def app_template_models(document: dict[str, Any], ctx: DocumentContext, fmt: str,
                        notes: list[str] | None = None) -> list[ServedModel]:
    """Every served model the controllers of app-template values run."""
    defaults = get_map(document, "defaultPodOptions") or {}
    merge = str(document.get("defaultPodOptionsStrategy") or "overwrite") == "merge"
    out: list[ServedModel] = []
    read = 0
    for controller_id, controller in (get_map(document, "controllers") or {}).items():
        if not isinstance(controller, dict) or controller.get("enabled") is False:
            continue
        pod_options = get_map(controller, "pod") or {}
        pod: dict[str, Any] = {**defaults, **pod_options} if not merge else \
            {**defaults, **{k: ({**defaults[k], **v} if isinstance(defaults.get(k), dict)
                                and isinstance(v, dict) else v)
                            for k, v in pod_options.items()}}
        container_defaults = get_map(controller, "defaultContainerOptions") or {}
        containers = []
        for container_id, values in _containers(controller).items():
            if read >= MAX_CONTAINERS:
                break
            if not isinstance(values, dict) or values.get("enabled") is False:
                continue
            read += 1
            container = _container(str(container_id), values, container_defaults)
            if container is not None:
                containers.append(container)
        if not containers:
            continue
        pod["containers"] = containers
        kind = str(controller.get("type") or "deployment")
        more = [*(notes or []), f"app-template controller {controller_id} ({kind}): its "
                "containers are read as the library chart renders them",
                *replicas_notes(controller, what=f"{kind} replicas")]
        out.extend(pod_models(Origin(ctx, fmt, name=str(controller_id)), pod, notes=more))
    return out


class AppTemplateValuesParser(ManifestParser):
    """Values of bjw-s's app-template chart: each controller's engine containers (module
    doc)."""

    name = "helm-app-template"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_app_template(document)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        return app_template_models(document, ctx, self.name)
