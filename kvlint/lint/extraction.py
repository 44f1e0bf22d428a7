"""The served models of manifest files: each file read, its YAML documents composed, and the
format's parser run on each; on a large tree, in forked worker processes.

Parsing dominates what an uncached ``kvlint lint`` costs, and it allocates hundreds of
container objects per file, none of them in reference cycles. So while a tree is extracted
(:func:`bulk_collection`) the objects that exist already (imported modules, tables) are frozen
out of the cyclic collector and collections run less often: without that, about a sixth of the
parsing time went to the collector re-scanning the same long-lived objects. Workers are forked
after the parsers' :meth:`~kvlint.manifests.base.ManifestParser.prepare`, so the
modules and tables every worker needs are built once, in the parent, and shared.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pluggy

from kvlint.loaders.files import MAX_MANIFEST_BYTES, UnreadableFile, read_text
from kvlint.manifests.base import (
    DocumentContext,
    Documents,
    Located,
    ManifestParser,
    ManifestProblem,
    ServedModel,
)
from kvlint.manifests.engine_markers import first_engine_line

__all__ = ["PARALLEL_MIN_FILES", "Extracted", "bulk_collection", "extract", "extract_all",
           "extract_iter", "extract_text"]

class Extracted(list[ServedModel]):
    """The served models of one file; ``read_files``: the other files a parser read for them
    and what it found (:attr:`Documents.read_files`): the results depend on those files
    too; ``reads_other_files``: a parser read another file without saying which (then the
    results are not cached); ``source``: ``(path, text)`` of the file, so that the process
    that places the findings in it need not read it again."""

    reads_other_files: bool = False
    read_files: tuple[tuple[str, str], ...] = ()
    source: tuple[str, str] | None = None
    problems: tuple[ManifestProblem, ...] = ()
    """What the file holds besides its served models that a finding reports: a document
    that cannot be read while the others can (``PartialDocuments``), an engine command that
    yields no served model (``engine-not-understood``)."""


def extract(path: Path, pm: pluggy.PluginManager,
            parsers: Sequence[ManifestParser]) -> list[ServedModel] | ManifestProblem:
    """Every served model in ``path``, or why the file cannot be read."""
    try:
        text = read_text(path, MAX_MANIFEST_BYTES)
    except UnreadableFile as err:
        return ManifestProblem(str(path), None, f"{path}: {err}", "unreadable")
    return extract_text(text, path, pm, parsers)


def extract_text(text: str, path: Path, pm: pluggy.PluginManager,
                 parsers: Sequence[ManifestParser]) -> list[ServedModel] | ManifestProblem:
    """Every served model in ``text``, a manifest read from ``path`` (or from stdin, named
    ``path``)."""
    from kvlint.manifests.batch_files import batch_models, is_batch
    from kvlint.manifests.dockerfiles import dockerfile_models, is_dockerfile
    from kvlint.manifests.makefiles import is_makefile, makefile_models
    from kvlint.manifests.powershell_scripts import is_powershell, powershell_models
    from kvlint.manifests.python_apps import is_python, python_models
    from kvlint.manifests.shell_scripts import is_script, script_models
    from kvlint.manifests.supervisor_programs import is_supervisor_config, supervisor_models
    from kvlint.manifests.systemd_units import is_systemd_unit, systemd_models, systemd_problems
    from kvlint.manifests.triton_configs import is_triton_config, triton_config_models
    from kvlint.manifests.yaml_marks import load_documents  # not for cached files

    # a shell script, a Dockerfile or a Makefile: the commands it runs, not YAML documents
    commands = script_models if is_script(str(path), text) else \
        dockerfile_models if is_dockerfile(str(path)) else \
        makefile_models if is_makefile(str(path)) else \
        python_models if is_python(str(path)) else \
        batch_models if is_batch(str(path)) else \
        powershell_models if is_powershell(str(path)) else \
        systemd_models if is_systemd_unit(str(path)) else \
        supervisor_models if is_supervisor_config(str(path), text) else None
    if commands is not None:
        found = Extracted(commands(text, str(path)))
        _beyond_keys(found, text)
        found.source = (str(path), text)
        if commands is systemd_models:
            found.problems = tuple(systemd_problems(text, str(path)))
        if not found and not found.problems:
            unread = engine_not_understood(text, str(path))
            found.problems = (unread,) if unread is not None else ()
        return found
    if is_triton_config(str(path)):  # protobuf text, never YAML
        found = Extracted(triton_config_models(text, str(path)))
        found.source = (str(path), text)
        _beyond_keys(found, text)
        return found
    if _source_file(path):  # program source, prose or a build file: never YAML
        found = Extracted()
        found.source = (str(path), text)
        unread = engine_not_understood(text, str(path)) or ManifestProblem(
            path=str(path), line=None, kind="not-a-manifest",
            message=f"{path.name} is not a manifest format kvlint reads (YAML, JSON or a "
                    "shell script): nothing in it was checked")
        found.problems = (unread,)
        return found
    documents = load_documents(text, str(path))
    if isinstance(documents, ManifestProblem):
        return documents
    by_name = {p.name: p for p in parsers}
    models = Extracted()
    every = Documents(documents)  # one tuple for every document's context: linear
    for index, document in enumerate(documents):
        if document is None:
            continue
        ctx = DocumentContext(str(path), index, every)
        fmt = pm.hook.kvlint_manifest_format(document=document, ctx=ctx, parsers=parsers)
        if fmt is not None and fmt in by_name:
            models.extend(by_name[fmt].parse(document, ctx))
    models.reads_other_files = every.reads_other_files
    models.read_files = tuple(sorted((every.read_files or {}).items()))
    models.source = (str(path), text)
    _fold_node_ranks(models)
    _beyond_keys(models, text)
    problems = [*getattr(documents, "problems", ()), *(every.problems or ())]
    if not models and not any(p.kind in ("invalid-yaml", "invalid-object") for p in problems):
        unread = engine_not_understood(text, str(path))
        if unread is not None:
            problems.append(unread)
    models.problems = tuple(problems)
    return models


def _beyond_keys(models: Extracted, text: str) -> None:
    """Each served model's GPU type from what the file says beyond its own keys (the
    image's family, a cloud VM type's GPU, else the one GPU its comments name), and an
    undated engine's release from its comments."""
    _image_families(models)
    _instance_gpus(models)
    _variable_families(models, text)
    _comment_gpus(models, text)
    _comment_versions(models, text)


def _image_families(models: Extracted) -> None:
    """A served model whose manifest names no GPU type gets the accelerator family its image
    is built for (:func:`~kvlint.manifests.accelerators.image_family`); a ROCm image that
    names the Instinct generation refines a bare "AMD GPU" the device resource gave."""
    from kvlint.manifests.accelerators import GENERIC_AMD, image_family

    for i, served in enumerate(models):
        named = served.gpu_type
        if named is not None and named.value != GENERIC_AMD:
            continue
        family = image_family(served.image)
        if family is None or (named is not None and
                              not family.value.startswith("AMD Instinct")):
            continue
        models[i] = replace(served, gpu_type=family)


def _instance_gpus(models: Extracted) -> None:
    """A GPU type that names a cloud VM (``node.kubernetes.io/instance-type: g5.2xlarge``)
    becomes the GPU model the VM carries
    (:func:`~kvlint.manifests.instance_types.instance_gpu`)."""
    from kvlint.manifests.instance_types import instance_gpu

    for i, served in enumerate(models):
        named = served.gpu_type
        if named is None or not isinstance(named.value, str):
            continue
        gpu = instance_gpu(named.value)
        if gpu is not None:
            what = "Google Cloud's name for the" if named.value.strip().lower().startswith(
                "nvidia-") else "a VM with"
            models[i] = replace(served, gpu_type=replace(
                named, value=gpu, source=f"{named.source} {named.value} ({what} {gpu})"))


def _file_gpu_type(models: Extracted, text: str,
                   find: Callable[[str], Located[str] | None]) -> None:
    """Every served model whose manifest names no GPU type gets the one ``find`` reads from
    the whole file, when it reads one."""
    if not models or all(served.gpu_type is not None for served in models):
        return
    named = find(text)
    if named is None:
        return
    for i, served in enumerate(models):
        if served.gpu_type is None:
            models[i] = replace(served, gpu_type=named)


def _variable_families(models: Extracted, text: str) -> None:
    """The family the file's device-visibility variables select (ROCm's
    ``HIP_VISIBLE_DEVICES``, Habana's ``HABANA_VISIBLE_DEVICES``:
    :func:`~kvlint.manifests.accelerators.variable_family`)."""
    from kvlint.manifests.accelerators import variable_family

    _file_gpu_type(models, text, variable_family)


def _comment_gpus(models: Extracted, text: str) -> None:
    """The one GPU model the file's comments name
    (:func:`~kvlint.manifests.comment_gpus.comment_gpu`), said to come from a comment."""
    from kvlint.manifests.comment_gpus import comment_gpu, gpus_by_line

    if any(served.gpu_type is None for served in models) and "#" in text:
        by_line = gpus_by_line(text)
        for i, served in enumerate(models):  # the comment beside a model's own GPU count
            line = served.gpus.line if isinstance(served.gpus, Located) else None
            if served.gpu_type is None and line in by_line:
                models[i] = replace(served, gpu_type=by_line[line])
    _file_gpu_type(models, text, comment_gpu)


def _comment_versions(models: Extracted, text: str) -> None:
    """A served model whose manifest dates its engine nowhere (no image tag, pin or
    ``latest``) gets the one release of that engine the file's comments name
    (:func:`~kvlint.manifests.comment_versions.comment_version`), said to come from a
    comment."""
    if not models or all(served.engine_version is not None for served in models):
        return
    from kvlint.manifests.comment_versions import comment_version

    for i, served in enumerate(models):
        if served.engine_version is None and served.engine is not None:
            named = comment_version(text, served.engine.value)
            if named is not None:
                models[i] = replace(served, engine_version=named)


def _fold_node_ranks(models: Extracted) -> None:
    """The commands of one multi-node SGLang server (``--nnodes N --node-rank R``) written in
    one file are one served model: node 0's, which serves the requests; the others are
    removed (said in its notes). A rank above 0 whose node 0 is not in the file stays."""
    def key(served: ServedModel) -> tuple[object, ...]:
        model, tp = served.model, served.tp
        return (served.engine.value if served.engine else None,
                model.value if isinstance(model, Located) else None, served.role,
                tp.value if isinstance(tp, Located) else None)

    def rank(served: ServedModel) -> int:
        value = served.node_rank
        return value.value if isinstance(value, Located) and isinstance(value.value, int) \
            else 0

    leads = {key(s): i for i, s in enumerate(models) if rank(s) == 0}
    folded: dict[int, list[int]] = {}
    for i, served in enumerate(models):
        lead = leads.get(key(served))
        if rank(served) > 0 and lead is not None:
            folded.setdefault(lead, []).append(i)
    if not folded:
        return
    for lead, others in folded.items():
        ranks = ", ".join(f"{rank(models[i])} (line {models[i].line})" for i in others)
        models[lead] = replace(models[lead], notes=(
            *models[lead].notes, f"node ranks {ranks} of this multi-node server are in this "
            "file too: one served model"))
    for i in sorted((i for others in folded.values() for i in others), reverse=True):
        del models[i]


SOURCE_SUFFIXES = frozenset({".py", ".ipynb", ".ps1", ".psm1", ".bat", ".cmd", ".js", ".ts",
                             ".go", ".rs", ".java", ".rb", ".md", ".rst", ".ini", ".cfg",
                             ".conf", ".toml", ".tf", ".tfvars", ".hcl", ".nomad", ".jsonnet",
                             ".libsonnet", ".cue", ".nix"})
"""Files that are program source, prose or another program's configuration (INI, TOML,
Terraform/HCL and Nomad, Jsonnet, CUE, Nix, an nginx ``.conf``; a supervisord ``.conf`` with
``[program:...]`` is read before this), never a manifest: named on the command line they are
not parsed as YAML (a Modal app in Python is not "invalid YAML"); one that runs an engine
gets KV904, any other an info that nothing was checked."""
SOURCE_NAMES = ("Makefile", "makefile", "Dockerfile", "dockerfile", "Containerfile",
                "Justfile", "justfile")
"""The same by file name (build files): ``Dockerfile``, ``Dockerfile.cuda``,
``vllm.Dockerfile``, ``GNUmakefile``."""


def _source_file(path: Path) -> bool:
    name = path.name
    return path.suffix.lower() in SOURCE_SUFFIXES or name.endswith(SOURCE_NAMES) or \
        name.startswith(tuple(f"{n}." for n in SOURCE_NAMES))


def engine_not_understood(text: str, path: str) -> ManifestProblem | None:
    """A problem on the first line of ``text`` that runs an engine (:mod:`.engine_markers`),
    for a file in which no parser found a served model: a format kvlint does not read never
    passes in silence. ``None`` when no line runs one."""
    found = first_engine_line(text)
    if found is None:
        return None
    line, words = found
    return ManifestProblem(
        path=path, line=line, kind="engine-not-understood",
        message=(f"this file runs or configures an engine ({words!r}) but kvlint found no "
                 "served model in it: its format or command is not one kvlint reads, so "
                 "nothing here was checked"))


BULK_THRESHOLD = 20_000
"""While a tree is extracted, the collector's youngest generation holds this many allocations
before it is collected (Python's default is 700)."""


_BULK_DEPTH = 0


@contextmanager
def bulk_collection() -> Iterator[None]:
    """Freeze what exists now out of the cyclic collector and collect less often, until the
    outermost such block ends (then the old settings are back and the frozen objects are
    collectable again); an inner block only freezes what was built since. Memory stays
    bounded: collections still run, every :data:`BULK_THRESHOLD` allocations. A process
    that had frozen objects itself (a server that forks workers, embedding kvlint) keeps
    them frozen: nothing is unfrozen then, since the collector cannot tell whose they are."""
    global _BULK_DEPTH
    threshold = gc.get_threshold()
    outermost = _BULK_DEPTH == 0
    already_frozen = gc.get_freeze_count() > 0
    gc.freeze()
    if outermost:
        gc.set_threshold(max(threshold[0], BULK_THRESHOLD), *threshold[1:])
    _BULK_DEPTH += 1
    try:
        yield
    finally:
        _BULK_DEPTH -= 1
        if outermost:
            gc.set_threshold(*threshold)
            if not already_frozen:
                gc.unfreeze()


_EXTRACT: tuple[pluggy.PluginManager, list[ManifestParser]] | None = None
PARALLEL_MIN_FILES = 200
"""Below this many files a second process costs more than it saves."""


_CHUNKS_PER_WORKER = 8
_MIN_CHUNK = 16
"""Files go to the workers in chunks of about ``files / (workers x _CHUNKS_PER_WORKER)``
(at least ``_MIN_CHUNK``)."""


def _extract_chunk(files: list[Path]) -> list[list[ServedModel] | ManifestProblem]:
    assert _EXTRACT is not None
    pm, parsers = _EXTRACT
    return [extract(f, pm, parsers) for f in files]


def extract_all(files: list[Path], pm: pluggy.PluginManager,
                parsers: list[ManifestParser]) -> list[list[ServedModel] | ManifestProblem]:
    """Extract every file, in order (:func:`extract_iter`, all at once)."""
    return list(extract_iter(files, pm, parsers))


def extract_iter(files: list[Path], pm: pluggy.PluginManager, parsers: list[ManifestParser]
                 ) -> Iterator[list[ServedModel] | ManifestProblem]:
    """Extract every file, in order, as the results come. Parsing dominates the cost of a
    large tree, so on POSIX with several cores it runs in forked workers (ServedModel
    records are small to send back), in chunks the caller can use while the next ones are
    parsed; resolving models and running rules stays in this process, where the model and
    geometry caches live. Before the workers are forked, every parser is prepared
    (:meth:`ManifestParser.prepare`) and the YAML loader imported, and the heap is frozen
    out of the collector (so a collection in a worker does not copy the parent's pages)."""
    global _EXTRACT
    workers = min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_MIN_FILES or workers < 2:
        yield from (extract(f, pm, parsers) for f in files)
        return
    import multiprocessing  # only a tree big enough for workers pays for it

    if "fork" not in multiprocessing.get_all_start_methods():
        yield from (extract(f, pm, parsers) for f in files)
        return
    from kvlint.manifests import yaml_marks  # noqa: F401 - imported once, shared

    for parser in parsers:
        parser.prepare()
    size = max(_MIN_CHUNK, len(files) // (workers * _CHUNKS_PER_WORKER))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    _EXTRACT = (pm, parsers)
    try:  # what prepare() built is frozen too: shared with the workers, never scanned there
        with bulk_collection(), multiprocessing.get_context("fork").Pool(workers) as pool:
            for chunk in pool.imap(_extract_chunk, chunks):
                yield from chunk
    finally:
        _EXTRACT = None
