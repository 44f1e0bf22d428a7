"""A Kubernetes Service named ``vllm`` beside a vLLM pod: the pod's ``VLLM_PORT``.

For every Service in a pod's namespace, the kubelet puts Docker-link style variables into
the pod's containers unless the pod spec sets ``enableServiceLinks: false`` (Kubernetes docs,
"Service / Discovering services / Environment variables": ``{SVCNAME}_SERVICE_HOST``,
``{SVCNAME}_PORT=tcp://IP:PORT``..., the name upper-cased with dashes as underscores). A
Service named ``vllm`` therefore sets ``VLLM_PORT=tcp://10.x.y.z:8000`` in the vLLM
container, and vLLM reads ``VLLM_PORT`` as its own integer port:

* ``vllm/envs.py``@v0.10.1.1..v0.34.0 ``get_vllm_port``: ``ValueError: VLLM_PORT
  'tcp://...' appears to be a URI. This may be caused by a Kubernetes service discovery
  issue``;
* ``vllm/envs.py``@v0.4.3..v0.8.5: ``int(os.getenv('VLLM_PORT', '0'))``, a ``ValueError``;
* before v0.4.3 vLLM reads no ``VLLM_PORT`` (no ``vllm/envs.py``, and ``get_open_port`` in
  ``vllm/utils.py``@v0.4.1 and @v0.4.2 binds a free port): a release that old is not judged;

and every start reads it: the executor's ``get_open_port()`` (``vllm/utils.py``@v0.8.5,
``vllm/utils/network_utils.py``@v0.20.0) sizes the distributed init address even at tp 1
(``v1/executor/uniproc_executor.py``@v0.20.0). A value the container's own ``env`` sets wins
over the injected one.

The Services looked at are those of the same file and of the YAML files beside it (a
``k8s/`` folder is applied as one, ``kubectl apply -f k8s/``), in the same namespace (none
named on both sides counts as the same). The result then depends on the folder's listing
and those files, which are recorded as read for the result cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, Unresolved
from kvlint.manifests.siblings import sibling_documents
from kvlint.manifests.yaml_values import get_list, get_map, get_str, key_line
from kvlint.model.engine_args import EngineArgProblem

__all__ = ["service_link_problem"]

LINKED = "vllm"
"""The Service name whose link variables include ``VLLM_PORT``."""

READ_SINCE = "0.4.3"
"""The first vLLM release that reads ``VLLM_PORT`` (vllm/envs.py@v0.4.3 line 103)."""


def _before(version: str, since: str) -> bool:
    from packaging.version import Version

    from kvlint.model.memory import release_version

    parsed = release_version(version)
    return parsed is not None and parsed < Version(since)


def _services(documents: tuple[object, ...]) -> Iterator[tuple[object, str | None]]:
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "Service":
            meta = get_map(doc, "metadata") or {}
            if get_str(meta, "name") == LINKED:
                yield meta, get_str(meta, "namespace")


def _siblings(ctx: DocumentContext) -> Iterator[tuple[str, tuple[str | None, ...]]]:
    """The YAML files beside ``ctx.path`` that define a Service named ``vllm``, with the
    namespaces they put it in (:func:`~kvlint.manifests.siblings.sibling_documents`)."""
    for name, documents in sibling_documents(ctx):
        spaces = tuple(space for _, space in _services(documents))
        if spaces:
            yield name, spaces


def service_link_problem(engine: str, pod: Any, container: Any, ctx: DocumentContext,
                         line: int | None,
                         version: Located[str] | Unresolved | None = None
                         ) -> EngineArgProblem | None:
    """The ``VLLM_PORT`` a Service named ``vllm`` injects into this vLLM ``container`` of
    ``pod`` (the workload ``ctx.documents[ctx.index]``), placed on ``line``; ``None`` when
    no such Service shares its namespace, the pod or container keeps it out, or the release
    (``version``) reads no ``VLLM_PORT``."""
    if engine != "vllm" or not isinstance(pod, dict) or pod.get("enableServiceLinks") is False:
        return None
    if isinstance(version, Located) and _before(str(version.value), READ_SINCE):
        return None
    if any(isinstance(e, dict) and e.get("name") == "VLLM_PORT"
           for e in get_list(container, "env") or []):
        return None
    workload = ctx.documents[ctx.index] if ctx.index < len(ctx.documents) else None
    namespace = get_str(get_map(workload, "metadata") or {}, "namespace") \
        if isinstance(workload, dict) else None
    where: str | None = None
    for meta, space in _services(ctx.documents):
        if space == namespace:
            where = f"line {key_line(meta, 'name')} of this file"
            break
    if where is None:
        where = next((name for name, spaces in _siblings(ctx) if namespace in spaces), None)
    if where is None:
        return None
    return EngineArgProblem(
        "value", "VLLM_PORT",
        f"the Service named 'vllm' ({where}) shares this pod's namespace and the pod does not "
        "set enableServiceLinks: false, so Kubernetes puts VLLM_PORT=tcp://<service IP>:<port> "
        "into the container; vLLM reads VLLM_PORT as its own port number and exits at start "
        "('VLLM_PORT ... appears to be a URI', vllm/envs.py). Set enableServiceLinks: false in "
        "the pod spec, or rename the Service",
        line, None, {"engine": "vllm", "reason": "service-link-vllm-port", "service": where})
