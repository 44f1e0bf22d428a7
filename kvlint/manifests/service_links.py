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
* ``vllm/envs.py``@v0.8.5: ``int(os.getenv('VLLM_PORT', '0'))``, a ``ValueError``;

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
from functools import lru_cache
from pathlib import Path
from typing import Any

from kvlint.manifests.base import DocumentContext, Documents
from kvlint.manifests.yaml_values import get_list, get_map, get_str, key_line
from kvlint.model.engine_args import EngineArgProblem

__all__ = ["service_link_problem"]

LINKED = "vllm"
"""The Service name whose link variables include ``VLLM_PORT``."""
MAX_SIBLINGS = 64
"""YAML files read beside the manifest (a deployment folder holds a handful)."""


def _services(documents: tuple[object, ...]) -> Iterator[tuple[object, str | None]]:
    for doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == "Service":
            meta = get_map(doc, "metadata") or {}
            if get_str(meta, "name") == LINKED:
                yield meta, get_str(meta, "namespace")


def _siblings(ctx: DocumentContext) -> Iterator[tuple[str, tuple[str | None, ...]]]:
    """The YAML files beside ``ctx.path`` that define a Service named ``vllm``, with the
    namespaces they put it in. The folder's listing and every file read are recorded
    (:meth:`Documents.note_read`): the result cache keeps the manifest's results while they
    read the same."""
    from kvlint.loaders.files import read_referenced

    if not ctx.path or ctx.path in ("-", "<stdin>"):
        return
    here = Path(ctx.path)
    folder = read_referenced(str(here.parent), ctx.path)
    if isinstance(ctx.documents, Documents):
        ctx.documents.note_read(str(here.parent), folder.state)
    if folder.outside or folder.problem:
        return
    try:
        names = sorted(p for p in here.parent.iterdir()
                       if p.suffix in (".yaml", ".yml") and p.name != here.name)
    except OSError:
        return
    for path in names[:MAX_SIBLINGS]:
        try:
            stat = path.stat()
        except OSError:
            continue
        # keyed by the folder, not the manifest: every manifest beside it reads it once
        state, spaces = _linked_namespaces(str(path), str(here.parent), stat.st_mtime_ns,
                                           stat.st_size)
        if isinstance(ctx.documents, Documents):
            ctx.documents.note_read(str(path), state)
        if spaces:
            yield path.name, spaces


@lru_cache(maxsize=4096)
def _linked_namespaces(path: str, folder: str, mtime: int, size: int
                       ) -> tuple[str, tuple[str | None, ...]]:
    """The read state of the YAML file ``path`` (in ``folder``, whose tree it must stay in)
    and the namespaces of the Services named ``vllm`` in it, read once per run for every
    manifest beside it (``mtime`` and ``size`` key a changed file)."""
    from kvlint.loaders.files import read_referenced
    from kvlint.manifests.yaml_marks import load_documents

    read = read_referenced(path, folder)
    if read.text is None or "Service" not in read.text or LINKED not in read.text:
        return read.state, ()
    docs = load_documents(read.text, path)
    if not isinstance(docs, list):
        return read.state, ()
    return read.state, tuple(space for _, space in _services(tuple(docs)))


def service_link_problem(engine: str, pod: Any, container: Any, ctx: DocumentContext,
                         line: int | None) -> EngineArgProblem | None:
    """The ``VLLM_PORT`` a Service named ``vllm`` injects into this vLLM ``container`` of
    ``pod`` (the workload ``ctx.documents[ctx.index]``), placed on ``line``; ``None`` when
    no such Service shares its namespace, or the pod or container keeps it out."""
    if engine != "vllm" or not isinstance(pod, dict) or pod.get("enableServiceLinks") is False:
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
