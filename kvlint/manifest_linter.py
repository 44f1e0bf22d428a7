"""``kvlint lint``: find the served models in manifests, resolve them, and run the rules.

One result per served model per document and role, located at the line of the model (or of
the engine command); each finding is moved to the line of the flag or key it is about.
Model ids are resolved through the core loader (Hub cache, ``--offline``); anything that
cannot be resolved is a KV902 finding, never a crash, so the pre-commit hook works offline.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import pluggy

from kvlint.diagnostics import Finding
from kvlint.errors import ConfigError, HubError, InputError, UsageError
from kvlint.linter import LintRun, ModelResult, Target, default_config_defaults, lint_config
from kvlint.loaders.files import (
    MAX_MANIFEST_BYTES,
    UnreadableFile,
    inside,
    read_text,
    tree_root,
)
from kvlint.loaders.hf_config import ConfigDefaults, resolve_geometry
from kvlint.loaders.manifests.base import (
    DocumentContext,
    Documents,
    Located,
    ManifestParser,
    ManifestProblem,
    ServedModel,
    Unresolved,
)
from kvlint.loaders.manifests.yaml_marks import load_documents
from kvlint.loaders.models import LoadedConfig, load_config
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import ServingPlan
from kvlint.rules.base import Rule
from kvlint.suppress import MARKERS as SUPPRESSION_MARKERS
from kvlint.suppress import Policy
from kvlint.suppress import apply as apply_suppressions

DEFAULT_INCLUDE = ("*.yaml", "*.yml", "*.json")
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                          ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache"})

ANCHORS: Mapping[str, tuple[str, ...]] = {
    "KV201": ("tp",), "KV202": ("tp",), "KV203": ("tp",), "KV204": ("tp", "dp_attention"),
    "KV205": ("pp",), "KV206": ("gpus", "tp"), "KV301": ("engine_version", "engine", "image"),
    "KV302": ("kv_cache_dtype",), "KV303": ("engine_version", "engine", "image"),
    "KV304": ("engine_version", "image", "engine"), "KV501": ("max_model_len",),
    "KV502": ("max_num_seqs",), "KV503": ("gpus", "tp"), "KV902": ("model",),
}
"""Which extracted value a finding is about: it is reported on that value's line (else on
the model's line)."""


def discover(paths: Iterable[str], include: Sequence[str] = DEFAULT_INCLUDE,
             exclude: Sequence[str] = (),
             problems: list[ManifestProblem] | None = None) -> list[Path]:
    """Files to lint: files given explicitly, and matching files under directories.

    Nothing outside the linted tree (:func:`~kvlint.loaders.files.tree_root`) is returned:
    links to directories are not followed, and a path given, or a file found, that resolves
    outside the tree is left out with an ``outside-tree`` problem; a directory that cannot be
    listed is an ``unreadable`` problem. Problems go to ``problems`` (dropped when it is
    ``None``). Something that is not a regular file (a FIFO, a device, a dangling link) is
    returned: reading it gives an ``unreadable`` problem."""
    found: list[Path] = []
    sink: list[ManifestProblem] = [] if problems is None else problems
    for raw in paths:
        path = Path(raw)
        if not _contained(path, tree_root(path), sink):
            continue
        if path.is_file():
            if not _excluded(path, exclude):
                found.append(path)
        elif path.is_dir():
            found.extend(_files_under(path, include, exclude, sink))
        elif os.path.lexists(path):  # a FIFO, a device, a link loop: reported when read
            if not _excluded(path, exclude):
                found.append(path)
        else:
            raise InputError(f"{raw}: no such file or directory")
    return found


def _files_under(top: Path, include: Sequence[str], exclude: Sequence[str],
                 problems: list[ManifestProblem]) -> list[Path]:
    """Matching files under the directory ``top``, in a stable order, without following
    links to directories; files that are links out of the tree are problems."""
    root = tree_root(top)
    found: list[Path] = []

    def unreadable(err: OSError) -> None:
        where = str(err.filename) if err.filename else str(top)
        problems.append(ManifestProblem(
            where, None, f"{where}: cannot read this directory ({err.strerror or err}); "
            "its files are not linted", "unreadable"))

    for base, dirs, files in os.walk(top, onerror=unreadable, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            file = Path(base) / name
            if any(fnmatch.fnmatch(name, g) for g in include) and \
                    not _excluded(file, exclude) and \
                    (not os.path.islink(file) or _contained(file, root, problems)):
                found.append(file)
    return found


def _contained(path: Path, root: str, problems: list[ManifestProblem]) -> bool:
    """Whether ``path`` resolves inside ``root``; an ``outside-tree`` problem when not."""
    if inside(path, root):
        return True
    problems.append(ManifestProblem(
        str(path), None, f"{path} is a link that leads outside the linted tree; links are "
        "not followed out of the tree, so it is not read", "outside-tree"))
    return False


def _excluded(path: Path, exclude: Sequence[str]) -> bool:
    text = path.as_posix()
    return any(fnmatch.fnmatch(text, g) or fnmatch.fnmatch(path.name, g) for g in exclude)


def extract(path: Path, pm: pluggy.PluginManager,
            parsers: Sequence[ManifestParser]) -> list[ServedModel] | ManifestProblem:
    """Every served model in ``path``, or why the file cannot be read."""
    try:
        text = read_text(path, MAX_MANIFEST_BYTES)
    except UnreadableFile as err:
        return ManifestProblem(str(path), None, f"{path}: {err}", "unreadable")
    documents = load_documents(text, str(path))
    if isinstance(documents, ManifestProblem):
        return documents
    by_name = {p.name: p for p in parsers}
    models: list[ServedModel] = []
    every = Documents(documents)  # one tuple for every document's context: linear
    for index, document in enumerate(documents):
        if document is None:
            continue
        ctx = DocumentContext(str(path), index, every)
        fmt = pm.hook.kvlint_manifest_format(document=document, ctx=ctx, parsers=parsers)
        if fmt is not None and fmt in by_name:
            models.extend(by_name[fmt].parse(document, ctx))
    return models


@dataclass
class ModelResolver:
    """Manifest model names -> configs, cached for the run."""

    offline: bool = False
    model_map: Mapping[str, str] = field(default_factory=dict)
    defaults: ConfigDefaults | None = None
    _cache: dict[str, LoadedConfig | str] = field(default_factory=dict)
    _geometry: dict[str, AttentionGeometry | None] = field(default_factory=dict)

    def geometry(self, loaded: LoadedConfig) -> AttentionGeometry | None:
        """The resolved geometry of ``loaded``, once per model (``None``: the config does not
        resolve, and lint_config reports KV900)."""
        if loaded.source not in self._geometry:
            try:
                self._geometry[loaded.source] = resolve_geometry(
                    loaded.config, defaults=self.defaults or default_config_defaults())
            except ConfigError:
                self._geometry[loaded.source] = None
        return self._geometry[loaded.source]

    def resolve(self, served: ServedModel) -> LoadedConfig | str:
        """The config of ``served``'s model, or a one-line reason it is unresolved."""
        model = served.model
        if model is None:
            return "the manifest names no model"
        if isinstance(model, Unresolved):
            mapped = self.model_map.get(model.text)
            return self._load(mapped, served) if mapped else \
                f"model {model.text or '(unknown)'} is unresolved: {model.reason}"
        name = model.value
        mapped = self.model_map.get(name)
        if mapped:
            return self._load(mapped, served)
        if _looks_local(name):
            local = (Path(served.path).parent / name) if not Path(name).is_absolute() \
                else Path(name)
            if os.path.lexists(local) and not inside(local, tree_root(served.path)):
                return (f"model {name} is a local path outside the linted tree (it is not "
                        f"read); map it to a Hub id or a config with --model-map "
                        f"{name}=ORG/NAME")
            if (local / "config.json").is_file() or (local.is_file() and
                                                     local.suffix == ".json"):
                return self._load(str(local), served)
            return (f"model {name} is a local path; map it to a Hub id or a config with "
                    f"--model-map {name}=ORG/NAME")
        return self._load(name, served)

    def _load(self, ref: str, served: ServedModel) -> LoadedConfig | str:
        if ref not in self._cache:
            try:
                self._cache[ref] = load_config(ref, offline=self.offline)
            except (HubError, InputError) as err:
                self._cache[ref] = str(err)
        return self._cache[ref]


def _looks_local(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name.count("/") > 1 or \
        name.endswith((".gguf", ".safetensors")) or ("/" not in name and "." in name)


def _int(value: Located[int] | Unresolved | None, default: int = 1) -> int:
    return value.value if isinstance(value, Located) and isinstance(value.value, int) \
        and value.value > 0 else default


def plan_for(served: ServedModel, base: ServingPlan) -> ServingPlan:
    """The serving plan a manifest describes; values it does not set come from ``base``."""
    dp_attention = bool(served.dp_attention.value) if served.dp_attention else False
    tp, pp, dp = _int(served.tp), _int(served.pp), _int(served.dp)
    if dp_attention and tp % dp:
        dp_attention = False  # an impossible combination: the engine refuses it
    version = served.engine_version
    return replace(
        base,
        layout=ParallelLayout(tp=tp, pp=pp, dp=dp, dp_attention=dp_attention),
        engine=served.engine.value if served.engine else base.engine,
        engine_version=(version.value if isinstance(version, Located) else "latest")
        if served.engine else base.engine_version,
        kv_cache_dtype=_kv_dtype(served) or base.kv_cache_dtype,
        max_model_len=_int(served.max_model_len, 0) or base.max_model_len,
        max_num_seqs=_int(served.max_num_seqs, 0) or base.max_num_seqs,
        gpu=served.gpu_type.value if served.gpu_type and base.gpu is None and
        _known_gpu(served.gpu_type.value) else base.gpu,
    )


@cache
def _known_gpu(name: str) -> bool:
    from kvlint.model.hardware import find_gpu

    try:
        find_gpu(name)
    except (KeyError, ValueError):
        return False
    return True


def _kv_dtype(served: ServedModel) -> str | None:
    value = served.kv_cache_dtype
    if not isinstance(value, Located):
        return None
    text = str(value.value).lower()
    aliases = {"fp8_e4m3fn": "fp8_e4m3", "bf16": "bfloat16", "fp16": "float16"}
    return aliases.get(text, text)


def _line_of(served: ServedModel, name: str) -> int | None:
    value: Any = getattr(served, name, None)
    return getattr(value, "line", None)


def _anchor(finding: Finding, served: ServedModel) -> Finding:
    line = next((ln for name in ANCHORS.get(finding.code, ())
                 if (ln := _line_of(served, name)) is not None), served.line)
    return replace(finding, path=served.path, line=line)


def lint_served(served: ServedModel, resolver: ModelResolver, base: ServingPlan,
                rules: Sequence[type[Rule]], defaults: ConfigDefaults) -> ModelResult:
    loaded = resolver.resolve(served)
    ref = served.model.value if isinstance(served.model, Located) else (
        served.model.text if isinstance(served.model, Unresolved) else "")
    target = Target(ref or "(unknown model)", "manifest", None, served.path, served.line)
    plan = plan_for(served, base)
    gpus = _int(served.gpus, 0) or None
    try:
        if isinstance(loaded, str):
            result = lint_config(target, None, plan, rules, model_problem=loaded,
                                 gpus_requested=gpus)
        else:
            result = lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                 defaults=defaults, offline=resolver.offline,
                                 gpus_requested=gpus, geometry=resolver.geometry(loaded))
    except UsageError as err:  # e.g. an fp8_ds_mla cache on a non-MLA model
        result = lint_config(target, None, plan, rules, model_problem=str(err),
                             gpus_requested=gpus)
    return replace(result, findings=tuple(_anchor(f, served) for f in result.findings),
                   notes=served.notes)


def problem_result(problem: ManifestProblem, rules: Sequence[type[Rule]]) -> ModelResult:
    target = Target(problem.path, "manifest", None, problem.path, problem.line)
    result = lint_config(target, None, ServingPlan(), rules,
                         manifest_problem=(problem.kind, problem.message))
    findings = tuple(replace(f, path=problem.path, line=problem.line) for f in result.findings)
    return replace(result, findings=findings)


_EXTRACT: tuple[pluggy.PluginManager, list[ManifestParser]] | None = None
PARALLEL_MIN_FILES = 200
"""Below this many files a second process costs more than it saves."""


def _extract_chunk(files: list[Path]) -> list[list[ServedModel] | ManifestProblem]:
    assert _EXTRACT is not None
    pm, parsers = _EXTRACT
    return [extract(f, pm, parsers) for f in files]


def extract_all(files: list[Path], pm: pluggy.PluginManager,
                parsers: list[ManifestParser]) -> list[list[ServedModel] | ManifestProblem]:
    """Extract every file, in order. Parsing dominates the cost of a large tree, so on POSIX
    with several cores it runs in forked workers (ServedModel records are small to send
    back); resolving models and running rules stays in this process, where the model and
    geometry caches live."""
    global _EXTRACT
    import multiprocessing

    workers = min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_MIN_FILES or workers < 2 or \
            "fork" not in multiprocessing.get_all_start_methods():
        return [extract(f, pm, parsers) for f in files]
    size = max(16, len(files) // (workers * 4))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    _EXTRACT = (pm, parsers)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            done = pool.map(_extract_chunk, chunks)
    finally:
        _EXTRACT = None
    return [item for chunk in done for item in chunk]


def lint_paths(
    paths: Iterable[str],
    rules: Sequence[type[Rule]],
    pm: pluggy.PluginManager,
    *,
    base: ServingPlan | None = None,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
    offline: bool = False,
    model_map: Mapping[str, str] | None = None,
    fail_on: str = "error",
    policy: Policy | None = None,
    unused_suppression: Finding | None = None,
) -> LintRun:
    """``kvlint lint``: every served model of every manifest under ``paths``, with the
    suppressions written in the files and the settings' ``policy`` applied; KV901 findings
    (from the ``unused_suppression`` template) for suppressions that did nothing."""
    problems: list[ManifestProblem] = []
    files = discover(paths, include, exclude, problems)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    defaults = default_config_defaults()
    resolver = ModelResolver(offline=offline, model_map=dict(model_map or {}),
                             defaults=defaults)
    plan = base or ServingPlan()
    results: list[ModelResult] = []
    texts: dict[str, str] = {}
    seen: set[tuple[object, ...]] = set()
    results.extend(problem_result(problem, rules) for problem in problems)
    for file, found in zip(files, extract_all(files, pm, parsers), strict=True):
        if isinstance(found, ManifestProblem):
            results.append(problem_result(found, rules))
            continue
        for served in found:
            # A file referenced by another (Ray Serve llm_configs) is reported once.
            key = (Path(served.path).resolve(), served.line, served.document, served.role,
                   str(served.model))
            if key not in seen:
                seen.add(key)
                results.append(lint_served(served, resolver, plan, rules, defaults))
        text = _text_with_suppressions(file)
        if text is not None:
            texts[str(file)] = text
    final = apply_suppressions(results, texts, policy=policy, unused=unused_suppression)
    return LintRun(tuple(final), fail_on, tuple(rules))


def _text_with_suppressions(file: Path) -> str | None:
    try:
        text = read_text(file, MAX_MANIFEST_BYTES)
    except UnreadableFile:
        return None
    return text if any(marker in text for marker in SUPPRESSION_MARKERS) else None
