"""The YAML files beside a manifest, for the objects a folder applied as one defines.

A deployment folder is applied whole (``kubectl apply -f k8s/``, a kustomization listing its
files), so a Deployment's ``envFrom`` may name a ConfigMap of ``configmap.yaml`` and a Service
of ``service.yaml`` may put link variables into its pods. The files read are the folder's own
YAML files (not its sub-folders), at most :data:`MAX_SIBLINGS` of them, each as manifests are
read (inside the scanned tree, size-bounded); the folder's listing and every file read are
recorded (:meth:`~kvlint.manifests.base.Documents.note_read`), so the result cache keeps a
manifest's results only while they read the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from kvlint.manifests.base import DocumentContext, Documents

__all__ = ["MAX_SIBLINGS", "read_named", "sibling_documents"]

MAX_SIBLINGS = 64
"""YAML files read beside the manifest (a deployment folder holds a handful)."""
_KINDS = ("ConfigMap", "Service")
"""The kinds looked up beside a manifest: a file holding neither is not parsed."""


def sibling_documents(ctx: DocumentContext) -> Iterator[tuple[str, tuple[object, ...]]]:
    """``(file name, documents)`` of each YAML file beside ``ctx.path`` that holds a
    ConfigMap or a Service, in name order (none for standard input)."""
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
        state, documents = _documents(str(path), str(here.parent), stat.st_mtime_ns,
                                      stat.st_size)
        if isinstance(ctx.documents, Documents):
            ctx.documents.note_read(str(path), state)
        if documents:
            yield path.name, documents


@lru_cache(maxsize=256)
def _documents(path: str, folder: str, mtime: int, size: int
               ) -> tuple[str, tuple[object, ...]]:
    """The read state of the YAML file ``path`` (in ``folder``, whose tree it must stay in)
    and its documents when it names a kind looked up beside a manifest; read once per run
    for every manifest beside it (``mtime`` and ``size`` key a changed file)."""
    from kvlint.loaders.files import read_referenced
    from kvlint.manifests.yaml_marks import load_documents

    read = read_referenced(path, folder)
    if read.text is None or not any(kind in read.text for kind in _KINDS):
        return read.state, ()
    docs = load_documents(read.text, path)
    return read.state, tuple(docs) if isinstance(docs, list) else ()


def read_named(ctx: DocumentContext, relative: str) -> str | None:
    """The text of the file ``relative`` (to the manifest's folder) a manifest names (a
    mounted start script, a Dockerfile it builds, the ``.env`` Compose reads), read as
    manifests are (inside the linted tree, bounded) and recorded for the result cache;
    ``None`` for standard input or a file that is missing, outside the tree or unreadable."""
    from kvlint.loaders.files import read_referenced

    if not ctx.path or ctx.path in ("-", "<stdin>"):
        return None
    host = Path(ctx.path).parent / relative
    if not host.is_file():
        return None
    read = read_referenced(str(host), ctx.path)
    if isinstance(ctx.documents, Documents):
        ctx.documents.note_read(str(host), read.state)  # results depend on another file
    return read.text
