"""``kvlint lint``: find the served models in manifests, resolve them, and run the rules.

One result per served model per document and role, located at the line of the model (or of
the engine command); each finding is moved to the line of the flag or key it is about.
Model ids are resolved through the core loader (Hub cache, ``--offline``). A reference no
network could resolve (a placeholder, a local path without a config, a repo that does not
exist) is a KV902 finding; a model the Hub could not be asked about (network, deadline, auth,
offline without a cached copy) is listed in ``LintRun.unavailable`` and the run exits 2.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from kvlint.cascades import without_cascades
from kvlint.diagnostics import Finding
from kvlint.engines import UNKNOWN_VERSION
from kvlint.errors import UsageError
from kvlint.lint.discovery import Resolved, discover
from kvlint.lint.extraction import bulk_collection, extract_iter, extract_text
from kvlint.lint.options import LintOptions
from kvlint.lint.resolver import ModelResolver
from kvlint.linter import LintRun, ModelResult, Target, default_config_defaults, lint_config
from kvlint.loaders.files import (
    MAX_MANIFEST_BYTES,
    UnreadableFile,
    read_bytes,
    read_referenced,
    read_text,
)
from kvlint.loaders.hf_config import ConfigDefaults
from kvlint.loaders.models import LoadedConfig
from kvlint.manifests.base import (
    COMMENT_SOURCE,
    DERIVED_GPUS,
    Located,
    ManifestProblem,
    ServedModel,
    Unresolved,
    trust_given,
)
from kvlint.manifests.images import official_vllm
from kvlint.model.gpu_memory import gpu_memory_bytes
from kvlint.model.kv import ParallelLayout
from kvlint.model.limits import MAX_SIZE
from kvlint.model.lora import LoraSlots
from kvlint.model.serving import EngineStart, ServingPlan
from kvlint.rules.base import Rule
from kvlint.suppress import MARKERS as SUPPRESSION_MARKERS
from kvlint.suppress import apply as apply_suppressions

if TYPE_CHECKING:
    from kvlint.lint.cache import Dependency as LintDependency
    from kvlint.lint.cache import Entry as LintEntry
    from kvlint.lint.cache import LintCache, Signature

ANCHORS: Mapping[str, tuple[str, ...]] = {
    "KV201": ("tp",), "KV202": ("tp",), "KV203": ("tp",), "KV204": ("tp", "dp_attention"),
    "KV205": ("pp",), "KV206": ("gpus", "tp"), "KV301": ("engine_version", "engine", "image"),
    "KV302": ("kv_cache_dtype",), "KV303": ("engine_version", "engine", "image"),
    "KV304": ("engine_version", "image", "engine"), "KV305": ("engine_version", "image", "engine"),
    "KV501": ("max_model_len",),
    "KV502": ("max_num_seqs",), "KV503": ("gpus", "tp"), "KV703": ("max_model_len",),
    "KV902": ("model",),
}
"""Which extracted value a finding is about: it is reported on that value's line (else on
the model's line)."""


def _int(value: Located[int] | Unresolved | None, default: int = 1) -> int:
    given = _given_int(value)
    return given.value if given is not None else default


def _given_int(value: Located[int] | Unresolved | None) -> Located[int] | None:
    """``value`` when it is a positive integer the manifest states, else ``None``."""
    return value if isinstance(value, Located) and isinstance(value.value, int) \
        and value.value > 0 else None


def _engine_start(served: ServedModel) -> EngineStart | None:
    """The engine start-up options a manifest states (``None`` when it states none)."""
    def number(value: Located[int] | Unresolved | None, low: int) -> int | None:
        ok = isinstance(value, Located) and isinstance(value.value, int) and \
            low <= value.value <= MAX_SIZE
        return value.value if ok and isinstance(value, Located) else None

    speculative = served.speculative
    start = EngineStart(
        chunked_prefill_size=number(served.prefill_chunk, -1),
        cuda_graph_max_bs=number(served.graph_batch, 1),
        cuda_graph_off=isinstance(served.graph_off, Located) and served.graph_off.value is True,
        page_size=number(served.page_size, 1),
        attention_windows=served.attention_windows.value
        if isinstance(served.attention_windows, Located) else None,
        speculative_algorithm=speculative.value.upper()
        if isinstance(speculative, Located) and isinstance(speculative.value, str) else None,
        backend=served.backend.value.lower() if isinstance(served.backend, Located)
        and isinstance(served.backend.value, str) else None,
        swa_full_tokens_ratio=float(served.swa_ratio.value)
        if isinstance(served.swa_ratio, Located) and isinstance(served.swa_ratio.value, float)
        and 0 < served.swa_ratio.value <= 1 else None)
    return start if start != EngineStart() else None


def plan_for(served: ServedModel, base: ServingPlan) -> ServingPlan:
    """The serving plan a manifest describes; values it does not set come from ``base``."""
    dp_attention = bool(served.dp_attention.value) if served.dp_attention else False
    tp, pp, dp = _int(served.tp), _int(served.pp), _int(served.dp)
    if dp_attention and served.dp is None:  # the version's default DP size
        from kvlint.manifests.sglang_layout import sglang_dp_defaults_to_tp

        if sglang_dp_defaults_to_tp(served.engine, served.engine_version):
            dp = tp
    if dp_attention and tp % dp:
        dp_attention = False  # an impossible combination: the engine refuses it
    version = served.engine_version
    gpu, gpu_source = base.gpu, base.gpu_source
    memory, memory_source = base.gpu_memory_bytes, base.gpu_memory_source
    named = _smallest_alternative(served.gpu_type)
    if named is not None and base.gpu is not None and named.source == COMMENT_SOURCE:
        named = None  # --gpu (or a setting) wins over a GPU only a comment names
    if named is not None and _known_gpu(named.value):  # the manifest's GPU wins: --gpu and
        gpu, gpu_source = named.value, _where(named, "the manifest")  # settings are defaults
        if base.gpu is None or not _same_gpu(base.gpu, named.value):
            memory = memory_source = None  # ... and so does its memory in the GPU table
    kv_bytes = _given_int(served.kv_cache_memory_bytes)
    tokens_cap = _given_int(served.kv_tokens_cap)
    overrides = served.config_overrides if isinstance(served.config_overrides, Located) \
        else None
    quantization = served.quantization if isinstance(served.quantization, Located) and \
        isinstance(served.quantization.value, str) else None
    gguf = _gguf_quantization(served, quantization)
    if gguf is not None:
        quantization = gguf
    stated = served.gpu_memory
    if stated is not None:  # a memory the manifest states wins over the table's and defaults
        memory, memory_source = gpu_memory_bytes(stated.value), _where(stated, "the manifest")
    return replace(
        base,
        layout=ParallelLayout(tp=tp, pp=pp, dp=dp, dp_attention=dp_attention),
        engine=served.engine.value if served.engine else base.engine,
        engine_version=(version.value if isinstance(version, Located) else UNKNOWN_VERSION)
        if served.engine else base.engine_version,
        kv_cache_dtype=_kv_dtype(served) or base.kv_cache_dtype,
        dtype=served.dtype.value if isinstance(served.dtype, Located) and
        isinstance(served.dtype.value, str) else base.dtype,
        max_model_len=_int(served.max_model_len, 0) or base.max_model_len,
        max_num_seqs=_int(served.max_num_seqs, 0) or base.max_num_seqs,
        max_num_batched_tokens=_int(served.max_num_batched_tokens, 0)
        or base.max_num_batched_tokens,
        kv_cache_memory_bytes=kv_bytes.value if kv_bytes else base.kv_cache_memory_bytes,
        kv_cache_memory_source=_where(kv_bytes, "the manifest") if kv_bytes
        else base.kv_cache_memory_source,
        extensible_kv_cache=served.extensible_kv_cache.value
        if isinstance(served.extensible_kv_cache, Located)
        and isinstance(served.extensible_kv_cache.value, bool) else base.extensible_kv_cache,
        engine_start=_engine_start(served) or base.engine_start,
        kv_tokens_cap=tokens_cap.value if tokens_cap else base.kv_tokens_cap,
        kv_tokens_cap_source=_where(tokens_cap, "the manifest") if tokens_cap
        else base.kv_tokens_cap_source,
        gpu_memory_utilization=_fraction(served.gpu_memory_utilization)
        or base.gpu_memory_utilization,
        gpu=gpu, gpu_source=gpu_source if gpu else None,
        gpu_memory_bytes=memory, gpu_memory_source=memory_source,
        env=tuple(sorted((name, str(value.value) if isinstance(value, Located) else None)
                         for name, value in served.env.items())) or base.env,
        official_image=official_vllm(served.image.value) if served.image is not None
        else base.official_image,
        config_overrides=overrides.value if overrides else base.config_overrides,
        config_overrides_source=_where(overrides, "the manifest") if overrides
        else base.config_overrides_source,
        quantization=quantization.value if quantization else base.quantization,
        quantization_source=_where(quantization, "the manifest") if quantization
        else base.quantization_source, trust_remote_code=trust_given(served),
        **_lora(served, base),
        **_offload(served, base),
    )


def _lora(served: ServedModel, base: ServingPlan) -> dict[str, Any]:
    """vLLM's LoRA slots as the command sets them (``--enable-lora`` turns them on; without
    it vLLM ignores ``--max-loras`` and the rest); the plan's own otherwise."""
    on = served.lora
    if not (isinstance(on, Located) and on.value is True):
        return {"lora": base.lora, "lora_source": base.lora_source}
    sharded = served.lora_sharded
    return {"lora": LoraSlots.given(_int(served.max_loras, 0), _int(served.max_lora_rank, 0),
                                    isinstance(sharded, Located) and sharded.value is True),
            "lora_source": _where(on, "the manifest")}


def _offload(served: ServedModel, base: ServingPlan) -> dict[str, Any]:
    """``--cpu-offload-gb`` as the command sets it (a non-negative number of GiB); the
    plan's own otherwise."""
    given = served.cpu_offload
    if isinstance(given, Located) and isinstance(given.value, float) and \
            0 <= given.value <= 65_536:
        return {"cpu_offload_gb": given.value or None,
                "cpu_offload_source": _where(given, "the manifest") if given.value else None}
    return {"cpu_offload_gb": base.cpu_offload_gb, "cpu_offload_source": base.cpu_offload_source}


def _gguf_quantization(served: ServedModel, given: Located[str] | None
                       ) -> Located[str] | None:
    """``gguf:<type>`` for a model that is a GGUF file whose name gives its type
    (``...-Q4_K_M.gguf``, ``-hf repo:Q5_K_M``), unless another method is given: its weights
    are sized at llama.cpp's bits per weight for the type (:mod:`kvlint.model.gguf`)."""
    from kvlint.model.gguf import gguf_type

    model = served.model
    if not isinstance(model, Located) or not isinstance(model.value, str) or (
            given is not None and given.value.strip().lower() != "gguf"):
        return None
    kind = gguf_type(model.value)
    if kind is None:
        return None
    return Located(f"gguf:{kind}", model.line, model.column,
                   f"the GGUF file's name ({model.value.rsplit('/', 1)[-1]})")


def _fraction(value: Located[float] | Unresolved | None) -> float | None:
    """A memory fraction the engine accepts, else ``None`` (a bad value is reported by the
    rules about engine options, and the engine's default is sized instead)."""
    if not isinstance(value, Located) or isinstance(value.value, bool) or \
            not isinstance(value.value, int | float):
        return None
    number = float(value.value)
    return number if 0 < number <= 1 else None


def _where(value: Located[Any], what: str) -> str:
    """``resources.gpu (line 8)``: how a value was read, and where."""
    text = value.source or what
    return f"{text} (line {value.line})" if value.line else text


def _same_gpu(one: str, other: str) -> bool:
    from kvlint.model.hardware import find_gpu

    return find_gpu(one).name == find_gpu(other).name if _known_gpu(one) else False


def _smallest_alternative(named: Located[str] | None) -> Located[str] | None:
    """GPU types given as alternatives (SkyPilot's ``{L4: 1, T4: 1}``, read ``L4 | T4``: the
    launcher may place the server on any): the one with the least memory, where the server
    must start too; ``named`` as it is when one of them is unknown."""
    names = [n.strip() for n in str(named.value).split(" | ")] if named else []
    if named is None or len(names) < 2 or not all(map(_known_gpu, names)):
        return named
    from kvlint.model.hardware import find_gpu

    least = min(names, key=lambda n: find_gpu(n).memory_bytes)
    return replace(named, value=least, source=f"{named.source or 'the manifest'}: {least}, "
                   f"the smallest of {' | '.join(names)}")


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


def _located_of(served: ServedModel, name: str) -> Located[Any] | Unresolved | None:
    value: Any = getattr(served, name, None)
    if isinstance(value, (Located, Unresolved)) and value.line is not None:
        return value
    return None


def _anchor(finding: Finding, served: ServedModel) -> Finding:
    """``finding`` on the line of the value it is about (else the model's line), at the
    column of its flag or key, spanning to the value's line when that is another line."""
    names = ANCHORS.get(finding.code, ()) or (
        (finding.data["about"],) if isinstance(finding.data.get("about"), str) else ())
    about = next((v for name in names if (v := _located_of(served, name)) is not None), None)
    if about is None:
        if finding.line is not None:  # placed by its rule (e.g. on an option's word)
            column = finding.column
            option = finding.data.get("option")
            if column is None and isinstance(option, str) and option:
                column = _word_column(served.path, finding.line, option)
            return _placed(finding, path=served.path,
                           column=column or _key_column(served.path, finding.line))
        # about the model as a whole: at the flag or key that names it on its line
        model = _located_of(served, "model")
        flag = model.source if isinstance(model, Located) and model.line == served.line \
            else ""
        column = next((c for word in flag.split() if word.startswith("-")
                       and (c := _word_column(served.path, served.line or 0, word))), None)
        return _placed(finding, path=served.path, line=served.line,
                       column=column or _key_column(served.path, served.line))
    line = about.line
    column = about.column or _column(served.path, line, about) or \
        _key_column(served.path, line)
    value_line = about.value_line if isinstance(about, Located) else None
    end_line = value_line if value_line is not None and line is not None and \
        value_line > line else None
    return _placed(finding, path=served.path, line=line, column=column, end_line=end_line)


def _placed(finding: Finding, **where: str | int | None) -> Finding:
    """``finding`` at another place (``path``, ``line``, ``column``, ``end_line``): what
    ``dataclasses.replace`` gives, without re-running ``__init__`` for each of the thousands
    of findings a large tree places."""
    moved = object.__new__(Finding)
    moved.__dict__.update(finding.__dict__, **where)
    return moved


def _column(path: str, line: int | None, about: Located[Any] | Unresolved) -> int | None:
    """The 1-based column of the flag (as ``source`` spells it) or of the value on ``line``
    of ``path``, for values whose parser knows only the line (shell words); ``None`` when
    neither is written there."""
    if line is None:
        return None
    text = _source_line(path, line)
    if not text:
        return None
    source = about.source if isinstance(about, Located) else ""
    # the flag as written (`--tensor-parallel-size`), or the expansion that gave the value
    # (`positional $MODEL_NAME`), then the value itself
    candidates = [w for w in source.split() if w.startswith("-") or "$" in w]
    raw = about.value if isinstance(about, Located) else about.text
    if isinstance(raw, str) and raw.strip():
        candidates.append(raw.strip())
    for candidate in candidates:
        for start in _word_starts(text, candidate):
            return start + 1
    return None


def _word_column(path: str, line: int, word: str) -> int | None:
    """The 1-based column of ``word`` on ``line`` of ``path`` when it is written there once
    (an option word inside a shell string, whose parser knows only the line); ``None`` when
    it is absent or repeated on that line (which occurrence is meant is then unknown)."""
    found = list(itertools.islice(_word_starts(_source_line(path, line), word), 2))
    return found[0] + 1 if len(found) == 1 else None


def _word_starts(text: str, word: str) -> Iterator[int]:
    """The 0-based starts of ``word`` in ``text`` where neither neighbour is a word
    character, a dot or a dash, left to right and not overlapping: what the regex
    ``(?<![\\w.-])WORD(?![\\w.-])`` finds, without compiling one per word (a large tree
    has thousands of distinct values)."""
    if not word:
        return
    size = len(word)
    at = text.find(word)
    while at >= 0:
        end = at + size
        if (at == 0 or not _joins(text[at - 1])) and (end == len(text) or
                                                      not _joins(text[end])):
            yield at
            at = text.find(word, end)
        else:
            at = text.find(word, at + 1)


def _joins(char: str) -> bool:
    """Whether ``char`` continues a word: what the regex ``[\\w.-]`` matches."""
    return char.isalnum() or char in "_.-"


_KEY = re.compile(r"\s*(?:-\s+)*")
"""What precedes a line's key or flag: indentation and YAML sequence dashes (``- --model``)."""


def _key_column(path: str, line: int | None) -> int | None:
    """The 1-based column of the key or flag that starts ``line`` of ``path`` (after the
    indentation and any ``- `` of a YAML sequence): where a finding about that line points
    when neither its value nor its flag can be found on it; ``None`` for a blank line."""
    if line is None:
        return None
    text = _source_line(path, line)
    start = _KEY.match(text)
    end = start.end() if start else 0
    return end + 1 if end < len(text) else None


_LINES: dict[str, list[str]] = {}
"""Source lines of the files read for columns, for the run (cleared by lint_paths)."""
_TEXTS: dict[str, str] = {}
"""... and their text, read once for columns and suppressions (cleared by lint_paths)."""


def _source_text(path: str) -> str:
    """The text of the manifest ``path`` (empty when it cannot be read), read once."""
    text = _TEXTS.get(path)
    if text is None:
        try:
            text = read_text(path, MAX_MANIFEST_BYTES)
        except UnreadableFile:
            text = ""
        _TEXTS[path] = text
    return text


def _source_line(path: str, line: int) -> str:
    if path not in _LINES:
        _LINES[path] = _source_text(path).splitlines()
    lines = _LINES[path]
    return lines[line - 1] if 0 < line <= len(lines) else ""


def lint_served(served: ServedModel, resolver: ModelResolver, base: ServingPlan,
                rules: Sequence[type[Rule]], defaults: ConfigDefaults) -> ModelResult:
    loaded = resolver.resolve(served)
    ref = served.model.value if isinstance(served.model, Located) else (
        served.model.text if isinstance(served.model, Unresolved) else "")
    target = Target(ref or "(unknown model)", "manifest", None, served.path, served.line)
    # what the manifest requests: a count kvlint derived from the engine's own degrees (a
    # host's every GPU, a command no container limits) is not a request KV206 can judge
    gpus = served.gpus.value if isinstance(served.gpus, Located) and \
        isinstance(served.gpus.value, int) and served.gpus.value >= 0 and \
        not served.gpus.source.startswith(DERIVED_GPUS) else None
    if gpus == 0 and isinstance(served.gpu_type, Located) and \
            str(served.gpu_type.value).startswith("CPU"):
        gpus = None  # a CPU build's image: no GPU to request
    where = served.gpus.source if gpus is not None and isinstance(served.gpus, Located) \
        else None
    refused = served.engine_problems
    try:
        plan = plan_for(served, base)
    except ValueError as err:  # a parallel layout no deployment has (pp=10**9)
        result = lint_config(target, None, base, rules, model_problem=f"{target.ref}: {err}",
                             gpus_requested=gpus, gpus_source=where, engine_problems=refused)
        return replace(result, findings=tuple(_anchor(f, served) for f in result.findings),
                       notes=served.notes)
    key = _result_key(target.ref, loaded, plan, (gpus, where), refused)
    known = resolver.results.get(key) if key is not None else None
    if known is None:
        known = _lint_loaded(target, loaded, plan, (gpus, where), refused, resolver, rules,
                             defaults)
        if key is not None:
            resolver.results[key] = known
    kept, skipped = without_cascades(known.findings, served)
    return replace(known, target=target,
                   findings=tuple(_anchor(f, served) for f in kept),
                   notes=(*served.notes, *skipped))


def _result_key(ref: str, loaded: LoadedConfig | str, plan: ServingPlan,
                gpus: tuple[int | None, str | None],
                refused: tuple[Any, ...]) -> tuple[object, ...] | None:
    """What :func:`lint_config` computes a manifest's result from besides the run's rules,
    defaults and lock (the target's path and line only locate it): manifests that serve
    the same model under the same plan share it. ``None`` when it cannot be hashed."""
    key = (ref, id(loaded) if isinstance(loaded, LoadedConfig) else loaded, plan, gpus,
           refused)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _lint_loaded(target: Target, loaded: LoadedConfig | str, plan: ServingPlan,
                 request: tuple[int | None, str | None], refused: tuple[Any, ...],
                 resolver: ModelResolver, rules: Sequence[type[Rule]],
                 defaults: ConfigDefaults) -> ModelResult:
    """One model's result; ``request``: the GPUs the manifest requests and where it says so."""
    gpus, where = request
    try:
        if resolver.is_unavailable(loaded):
            # Not KV902: nothing says the reference is wrong; the run exits 2 (LintRun).
            return replace(lint_config(target, None, plan, rules, gpus_requested=gpus,
                                       gpus_source=where, engine_problems=refused),
                           config_error=str(loaded))
        if isinstance(loaded, str):
            return lint_config(target, None, plan, rules, model_problem=loaded,
                               gpus_requested=gpus, gpus_source=where, engine_problems=refused)
        return lint_config(target, loaded.config, plan, rules, source=loaded.source,
                           defaults=defaults, offline=resolver.offline,
                           gpus_requested=gpus, gpus_source=where,
                           geometry=resolver.geometry(loaded),
                           lock=resolver.lock,
                           weights_of=Target(loaded.ref, "model", loaded.revision,
                                             loaded.path),
                           engine_problems=refused)
    except UsageError as err:  # e.g. an fp8_ds_mla cache on a non-MLA model
        return lint_config(target, None, plan, rules, model_problem=str(err),
                           gpus_requested=gpus, gpus_source=where, engine_problems=refused)


def problem_result(problem: ManifestProblem, rules: Sequence[type[Rule]]) -> ModelResult:
    target = Target(problem.path, "manifest", None, problem.path, problem.line)
    result = lint_config(target, None, ServingPlan(), rules,
                         manifest_problem=(problem.kind, problem.message))
    column = _key_column(problem.path, problem.line) \
        if problem.kind not in ("unreadable", "outside-tree") else None
    findings = tuple(_placed(f, path=problem.path, line=problem.line, column=column)
                     for f in result.findings)
    return replace(result, findings=findings)


@bulk_collection()
def lint_paths(paths: Iterable[str], options: LintOptions) -> LintRun:
    """``kvlint lint``: every served model of every manifest under ``paths``, with the
    suppressions written in the files and the settings' ``policy`` applied; KV901 findings
    (from the ``unused_suppression`` template) for suppressions that did nothing. The run's
    settings, the manifest from stdin and the caller's walk are in ``options``
    (:class:`~kvlint.lint.options.LintOptions`)."""
    o = options
    rules, pm, stdin = o.rules, o.pm, o.stdin
    real_paths = o.resolved or Resolved()
    if o.discovery_problems is None:
        problems: list[ManifestProblem] = []
        files = discover(paths, o.include, o.exclude, problems, real_paths)
    else:  # the caller's walk
        problems, files = list(o.discovery_problems), list(paths)
    _LINES.clear()
    _TEXTS.clear()
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    defaults = default_config_defaults()
    resolver = ModelResolver(offline=o.offline, model_map=dict(o.model_map or {}),
                             defaults=defaults, lock=o.lock)
    plan = o.base or ServingPlan()
    results: list[ModelResult] = []
    texts: dict[str, str] = {}
    seen: set[tuple[object, ...]] = set()
    real_of: dict[str, str] = {}  # a file has many models: each path is resolved once
    results.extend(problem_result(problem, rules) for problem in problems)
    store = _open_cache(rules, pm, plan, resolver, o.cache_context) if o.cache and files \
        else None
    if store is not None:
        gc.freeze()  # its entries live as long as the run: no collection need scan them
    lookups = [_lookup(store, file, resolver) for file in files] if store is not None \
        else [_NOT_LOOKED_UP] * len(files)
    misses = [Path(file) for file, looked in zip(files, lookups, strict=True)
              if looked.entry is None]
    fresh = extract_iter(misses, pm, parsers)  # parsed while the first ones are checked
    if stdin is not None:
        name, stdin_text = str(Path(stdin[0])), stdin[1]
        files, texts[name] = [*files, name], stdin_text
        _LINES[name] = stdin_text.splitlines()
        fresh = itertools.chain(fresh, [extract_text(stdin_text, Path(name), pm, parsers)])
        lookups.append(_NOT_LOOKED_UP)

    def served_key(path: str, rest: tuple[object, ...]) -> tuple[object, ...]:
        if path not in real_of:
            real_of[path] = real_paths.real(path)
        return (real_of[path], *rest)

    for file, looked in zip(files, lookups, strict=True):
        key, hit, data = looked.key, looked.entry, looked.data
        if hit is not None:  # the cached results of an unchanged file
            for record, result in hit.records:
                if record is None:
                    results.append(result)
                elif (full := served_key(record[0], record[1:])) not in seen:
                    seen.add(full)
                    results.append(result)
            if hit.markers and (text := _text_with_suppressions(file)) is not None:
                texts[file] = text
            continue
        found = next(fresh)
        entry: list[tuple[tuple[Any, ...] | None, ModelResult]] | None = \
            [] if key is not None else None
        dependencies: list[LintDependency] = []
        read_files: tuple[tuple[str, str], ...] = ()
        if isinstance(found, ManifestProblem):
            result = problem_result(found, rules)
            results.append(result)
            if entry is not None and found.kind not in ("unreadable", "outside-tree"):
                entry.append((None, result))
            else:
                entry = None
        else:
            if getattr(found, "reads_other_files", True):
                entry = None
            read_files = getattr(found, "read_files", ())
            if (source := getattr(found, "source", None)) is not None:
                _TEXTS.setdefault(*source)  # the text the worker parsed: not read again
            for served in found:
                # A file referenced by another (Ray Serve llm_configs) is reported once; its
                # results are still computed for this file's cache entry.
                rest = (served.line, served.document, served.role, str(served.model))
                full = served_key(served.path, rest)
                reported = full in seen
                if reported and entry is None:
                    continue
                result = lint_served(served, resolver, plan, rules, defaults)
                if not reported:
                    seen.add(full)
                    results.append(result)
                if entry is not None:
                    entry = _record(entry, dependencies, served, file, rest, result,
                                    resolver, read_files)
            for problem in getattr(found, "problems", ()):
                # a document that cannot be read beside others that can, an engine command
                # that yields no served model: reported, never a silent pass
                result = problem_result(problem, rules)
                results.append(result)
                if entry is not None:
                    entry.append((None, result))
        suppressible = not isinstance(found, ManifestProblem)
        if suppressible and file not in texts:
            text = _text_with_suppressions(file, data)
            if text is not None:
                texts[file] = text
        if store is not None and entry is not None and not _provisional(entry):
            _store(store, file, looked, entry, dependencies, suppressible, read_files)
        # placed and checked: its text is not kept for the rest of a large run (a Ray Serve
        # config whose results are placed in it reads it again)
        for done in (file, str(Path(file))):
            _TEXTS.pop(done, None)
            _LINES.pop(done, None)
    final = apply_suppressions(results, texts, policy=o.policy, unused=o.unused_suppression)
    unavailable = tuple(r.target.ref for r in final if r.config_error is not None
                        and resolver.is_unavailable(r.config_error))
    if store is not None:
        store.save()
    return LintRun(tuple(final), o.fail_on, tuple(rules),
                   unavailable=tuple(dict.fromkeys(unavailable)))


def _open_cache(rules: Sequence[type[Rule]], pm: pluggy.PluginManager, plan: ServingPlan,
                resolver: ModelResolver, context: Sequence[object]) -> LintCache | None:
    """The run's cache; ``None`` when a third-party plugin is loaded (its parsers and rules
    may depend on anything, so nothing is cached)."""
    from kvlint.lint.cache import LintCache, fingerprint

    plugins = sorted(_module_of(plugin) for _, plugin in pm.list_name_plugin())
    if any(name != "kvlint" and not name.startswith("kvlint.") for name in plugins):
        return None
    lock = resolver.lock
    parts = (
        tuple((r.code, r.name, r.__module__, r.__qualname__) for r in rules),
        tuple(plugins), repr(plan), sorted(resolver.model_map.items()), resolver.offline,
        (str(lock.path), lock.required, repr(lock.lockfile)) if lock is not None else None,
        _kind(resolver.defaults), os.getcwd(), tuple(repr(c) for c in context),
    )
    return LintCache.open(fingerprint(parts))


def _module_of(plugin: object) -> str:
    """The module a plugin (a module, a class or an object) is defined in."""
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__
    owner = plugin if isinstance(plugin, type) else type(plugin)
    return str(getattr(owner, "__module__", "") or "")


def _kind(value: object) -> str:
    """``module.Class`` of ``value`` (its repr may hold an address)."""
    return f"{type(value).__module__}.{type(value).__qualname__}"


@dataclass(frozen=True)
class _Lookup:
    """What the cache lookup of a file found."""

    data: bytes | None = None
    """Its bytes, when it was read."""
    key: str | None = None
    """Its key in the cache (``None``: it cannot be read, or was not looked up)."""
    entry: LintEntry | None = None
    """Its cached results, when they are usable."""
    sig: Signature | None = None
    """Its signature before it was read."""


_NOT_LOOKED_UP = _Lookup()


def _lookup(store: LintCache, file: str, resolver: ModelResolver) -> _Lookup:
    """The bytes, key, entry and signature of ``file``: its entry when it is cached and its
    models resolve as they did (``None`` when not); no key when it cannot be read. A file
    whose signature is the one the cache holds for it is not read (no bytes)."""
    from kvlint.lint.cache import signature

    sig = signature(file)  # before the file is read: a change while it is read shows
    known = store.known(file, sig)
    if known is not None and (entry := _usable(store, known, file, resolver)) is not None:
        return _Lookup(None, known, entry, sig)
    try:
        data = read_bytes(file, MAX_MANIFEST_BYTES)
    except UnreadableFile:
        return _NOT_LOOKED_UP
    key = store.key(file, data)
    entry = _usable(store, key, file, resolver)
    if entry is not None:
        store.note(file, sig, key)
    return _Lookup(data, key, entry, sig)


def _usable(store: LintCache, key: str, file: str, resolver: ModelResolver
            ) -> LintEntry | None:
    """The entry ``key`` of ``file`` when its models resolve as they did and the other files
    it read read the same (then it counts as a hit)."""
    entry = store.get(key)
    if entry is None or entry.path != file:
        return None
    for dep in entry.dependencies:
        if resolver.dependency_identity(dep.model, dep.path, dep.sized) != dep.identity:
            return None
    for path, state in entry.files:
        if read_referenced(path, entry.path).state != state:
            return None
    store.touch(key)
    return entry


def _record(entry: list[tuple[tuple[Any, ...] | None, ModelResult]],
            dependencies: list[LintDependency], served: ServedModel, path: str,
            rest: tuple[object, ...], result: ModelResult, resolver: ModelResolver,
            read_files: tuple[tuple[str, str], ...] = ()
            ) -> list[tuple[tuple[Any, ...] | None, ModelResult]] | None:
    """``entry`` with ``result`` added; ``None`` when it must not be cached (the model is
    in another file the parser did not record reading, or its load may be transient)."""
    from kvlint.lint.cache import Dependency

    if served.path != path and all(os.path.normpath(read) != served.path
                                   for read, _ in read_files):
        return None
    sized = result.plan.sizes_gpu
    identity = resolver.identity(served, sized)
    if identity is None:
        return None
    dependencies.append(Dependency(served.model, served.path, sized, identity))
    entry.append(((served.path, *rest), result))
    return entry


def _provisional(records: list[tuple[tuple[Any, ...] | None, ModelResult]]) -> bool:
    """Whether a result depends on a checkpoint file outside the cache's key
    (``ModelResult.unsettled``: KV702 looked for a format's own file): that file may come or
    go with the manifest and config unchanged, so the manifest is not cached."""
    return any(result.unsettled for _, result in records)


def _store(store: LintCache, file: str, looked: _Lookup,
           records: list[tuple[tuple[Any, ...] | None, ModelResult]],
           dependencies: list[LintDependency], suppressible: bool,
           read_files: tuple[tuple[str, str], ...] = ()) -> None:
    """Cache ``file``'s results under the key ``looked`` found, unless it was not read (no
    key or bytes) or changed while it was linted (``looked.sig``: its signature before it
    was read)."""
    from kvlint.lint.cache import Entry

    key, data = looked.key, looked.data
    if key is None or data is None:
        return
    try:
        now = read_bytes(file, MAX_MANIFEST_BYTES)
    except UnreadableFile:
        return
    if now != data:
        return
    store.put(key, Entry(file, tuple(dependencies), tuple(records),
                         suppressible and _has_markers(data), files=read_files))
    store.note(file, looked.sig, key)


def _has_markers(data: bytes) -> bool:
    return any(marker.encode() in data for marker in SUPPRESSION_MARKERS)


def _text_with_suppressions(file: str, data: bytes | None = None) -> str | None:
    """The text of ``file`` when it holds a suppression marker (``data``: its bytes, when
    they were read: a file without a marker is not read again)."""
    if data is not None and not _has_markers(data):
        return None
    text = _TEXTS.get(file)  # read for columns already
    if text is None:
        try:
            text = read_text(file, MAX_MANIFEST_BYTES)
        except UnreadableFile:
            return None
    return text if any(marker in text for marker in SUPPRESSION_MARKERS) else None
