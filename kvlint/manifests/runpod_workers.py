"""RunPod's serverless worker images, which start an engine configured by environment
variables: ``runpod/worker-v1-vllm`` (``runpod/worker-vllm`` before v1.1) runs vLLM,
``runpod/worker-sglang`` runs SGLang. The worker takes no command-line arguments; it writes
the engine's options from its environment. :func:`worker_command` writes them out as the
engine command the worker runs, so the engine's own argument grammar and option tables judge
them; :func:`worker_release` gives the engine version of a worker release.

Read (the notes cite each line): runpod-workers/worker-vllm@7a925039a53a10eab38d1764eb717a2ea5bdee07
(v2.25.2) ``src/args_builder.py`` (from v2.24.0: an environment variable named as a flag in
upper snake case is that flag, from an allow-list; aliases ``MODEL_NAME``, ``MODEL_REVISION``,
``TOKENIZER_NAME``, ``OPENAI_SERVED_MODEL_NAME_OVERRIDE``, ``VLLM_CONFIG_FILE``; then
``VLLM_EXTRA_ARGS``), ``src/engine_args.py`` at v2.23.0 (76f345be) and v2.13.0 (5f0fc69d: an
explicit table; both default ``gpu_memory_utilization`` to 0.95 and set the tensor-parallel
size to the number of visible GPUs when more than one is visible); runpod-workers/worker-sglang
@1b924c9de8b90e5cf47c974c556f6dd403939243 ``engine.py`` (an explicit table of options and
boolean flags; ``MODEL_PATH`` in 1.0.0-1.2.0@ec910bd; ``--host``/``--port`` always passed, from
``HOST`` and ``PORT`` with defaults 0.0.0.0 and 30000).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from kvlint.manifests.base import Unresolved
from kvlint.manifests.image_refs import split_image
from kvlint.manifests.image_releases import RUNPOD_SGLANG, RUNPOD_VLLM, WorkerRange
from kvlint.model.engine_args import EngineArgProblem

if TYPE_CHECKING:  # images.py reads worker releases on a cached lint, which parses nothing
    from kvlint.manifests.shell_env import Env
    from kvlint.manifests.shell_words import Word

__all__ = ["WorkerCommand", "runpod_worker", "worker_command", "worker_release"]

_IMAGES = {"runpod/worker-v1-vllm": "vllm", "runpod/worker-vllm": "vllm",
           "runpod/worker-sglang": "sglang"}
_RELEASE = re.compile(r"v?\.?(\d{1,9}(?:\.\d{1,9}){0,2})(?:stable|dev)?(?:-cuda[\d.]+)?$",
                      re.IGNORECASE)
"""A worker release in a tag (``v2.9.4``, ``v.2.15.0``, ``v2.6.0stable-cuda12.1.0``,
``2.0.1``); each number bounded, so a hostile tag is no release rather than an error."""

_VLLM_CLI_SINCE = Version("2.24.0")
"""From this worker release the worker runs ``vllm serve`` with flags built from the
environment (src/args_builder.py); before it, vLLM's engine ran inside the worker."""
_VLLM_OWN_DEFAULTS = (Version("1.1"), Version("2.23.0"))
"""Releases whose ``DEFAULT_ARGS`` set ``gpu_memory_utilization`` 0.95 (vLLM's is 0.9) and the
tensor-parallel size to the number of visible GPUs when more than one is visible
(src/engine_args.py@5f0fc69d, @76f345be)."""
_SGLANG_MODEL_PATH = (Version("1.0.0"), Version("1.2.99"))
"""Releases that read the model from ``MODEL_PATH`` (engine.py@ec910bd); the others from
``MODEL_NAME`` (engine.py@1b924c9, commit 78dcd24)."""

_VLLM_OPTIONS = (
    ("SERVED_MODEL_NAME", "--served-model-name"), ("TOKENIZER", "--tokenizer"),
    ("TENSOR_PARALLEL_SIZE", "--tensor-parallel-size"),
    ("PIPELINE_PARALLEL_SIZE", "--pipeline-parallel-size"),
    ("DATA_PARALLEL_SIZE", "--data-parallel-size"), ("MAX_MODEL_LEN", "--max-model-len"),
    ("GPU_MEMORY_UTILIZATION", "--gpu-memory-utilization"),
    ("KV_CACHE_DTYPE", "--kv-cache-dtype"), ("QUANTIZATION", "--quantization"),
    ("DTYPE", "--dtype"), ("MAX_NUM_SEQS", "--max-num-seqs"),
    ("MAX_NUM_BATCHED_TOKENS", "--max-num-batched-tokens"), ("BLOCK_SIZE", "--block-size"),
    ("CPU_OFFLOAD_GB", "--cpu-offload-gb"), ("KV_CACHE_MEMORY_BYTES", "--kv-cache-memory-bytes"),
    ("HF_OVERRIDES", "--hf-overrides"), ("SPECULATIVE_CONFIG", "--speculative-config"),
    ("LOAD_FORMAT", "--load-format"),
    # the aliases come after the generic names and win over them (args_builder.py)
    ("MODEL_NAME", "--model"), ("MODEL_REVISION", "--revision"),
    ("TOKENIZER_NAME", "--tokenizer"),
    ("OPENAI_SERVED_MODEL_NAME_OVERRIDE", "--served-model-name"),
    ("VLLM_CONFIG_FILE", "--config"))
"""The worker's variables that change what kvlint checks, in the order the worker writes them
(its allow-list has about 160 flags; the others change nothing kvlint reads)."""
_VLLM_BOOLEANS = (("TRUST_REMOTE_CODE", "--trust-remote-code"),
                  ("ENFORCE_EAGER", "--enforce-eager"),
                  ("ENABLE_PREFIX_CACHING", "--enable-prefix-caching"),
                  ("ENABLE_CHUNKED_PREFILL", "--enable-chunked-prefill"),
                  ("ENABLE_EXPERT_PARALLEL", "--enable-expert-parallel"))
_SGLANG_OPTIONS = (
    ("TOKENIZER_PATH", "--tokenizer-path"), ("LOAD_FORMAT", "--load-format"),
    ("DTYPE", "--dtype"), ("CONTEXT_LENGTH", "--context-length"),
    ("QUANTIZATION", "--quantization"), ("SERVED_MODEL_NAME", "--served-model-name"),
    ("MEM_FRACTION_STATIC", "--mem-fraction-static"),
    ("MAX_RUNNING_REQUESTS", "--max-running-requests"),
    ("MAX_TOTAL_TOKENS", "--max-total-tokens"),
    ("CHUNKED_PREFILL_SIZE", "--chunked-prefill-size"),
    ("MAX_PREFILL_TOKENS", "--max-prefill-tokens"),
    ("TENSOR_PARALLEL_SIZE", "--tensor-parallel-size"),
    ("DATA_PARALLEL_SIZE", "--data-parallel-size"),
    ("ATTENTION_BACKEND", "--attention-backend"))
_SGLANG_BOOLEANS = (("TRUST_REMOTE_CODE", "--trust-remote-code"),
                    ("DISABLE_RADIX_CACHE", "--disable-radix-cache"),
                    ("DISABLE_CUDA_GRAPH", "--disable-cuda-graph"),
                    ("ENABLE_TORCH_COMPILE", "--enable-torch-compile"))
_IGNORED = {
    "vllm": ("CONTEXT_LENGTH", "MEM_FRACTION_STATIC", "TP_SIZE", "MODEL"),
    "sglang": ("MAX_MODEL_LEN", "GPU_MEMORY_UTILIZATION", "KV_CACHE_DTYPE", "TP_SIZE", "DP_SIZE",
               "ENABLE_DP_ATTENTION", "EP_SIZE", "CUDA_GRAPH_MAX_BS", "PAGE_SIZE")}
"""Variables a user sets for the engine that the worker never passes on (the other
engine's names, or names outside its table): each is noted, since the engine runs without it."""
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


@dataclass(frozen=True)
class WorkerCommand:
    """The engine command a worker image runs: ``engine``, the arguments after its program
    (``words``), notes, and the settings the worker refuses (``problems``)."""

    engine: str
    words: tuple[Word, ...]
    notes: tuple[str, ...]
    problems: tuple[EngineArgProblem, ...] = ()


def runpod_worker(image: str) -> tuple[str, Version | None] | None:
    """``(engine, worker release or None)`` for a RunPod worker image, else ``None``."""
    name, tag, _ = split_image(image)
    engine = _IMAGES.get(name.lower().removeprefix("docker.io/"))
    if engine is None:
        return None
    match = _RELEASE.match(tag or "")
    try:
        return engine, Version(match.group(1)) if match else None
    except InvalidVersion:
        return engine, None


def _in(release: Version, rows: Sequence[WorkerRange]) -> WorkerRange | None:
    return next((row for row in rows if Version(row.first) <= release <= Version(row.last)),
                None)


def worker_release(image: str) -> tuple[str, str | None, str] | None:
    """``(engine, engine version or None, note)`` for a RunPod worker image: the engine the
    worker release installs (:data:`~.image_releases.RUNPOD_VLLM`, ``RUNPOD_SGLANG``), never
    the worker's own number; ``None`` for any other image."""
    found = runpod_worker(image)
    if found is None:
        return None
    engine, release = found
    tag = split_image(image)[1]
    what = f"RunPod {engine} worker {tag or 'latest'}"
    if release is None:
        return engine, None, (f"{what}: the tag names no worker release, so the {engine} in "
                              "it is unknown")
    if engine == "sglang" and release < Version("1.0.0"):
        # the first worker releases were tagged after the SGLang they installed
        return engine, str(release), (f"{what}: tagged after the SGLang it installed "
                                      "(worker-config.json@ec910bd)")
    row = _in(release, RUNPOD_VLLM if engine == "vllm" else RUNPOD_SGLANG)
    if row is None:
        return engine, None, (f"{what}: a worker release kvlint has no record of, so the "
                              f"{engine} in it is unknown")
    if row.version is None:
        return engine, None, f"{what}: the {engine} version is unknown ({row.source})"
    return engine, row.version, f"{what} installs {engine} {row.version} ({row.source})"


def _value(env: Env, name: str) -> str | Unresolved | None:
    value = env.get(name)
    if isinstance(value, str) and not value.strip():
        return None  # the worker skips an empty value
    return value


def _option(env: Env, name: str, flag: str) -> list[Word]:
    """``flag`` with the variable's value (a reference to the variable where the manifest
    does not hold its value, so that it stays unresolved)."""
    from kvlint.manifests.shell_words import Word

    line = env.line_of(name)
    value = env.get(name)
    return [Word(flag, line), Word(value if isinstance(value, str) else "${" + name + "}", line)]


def worker_command(image: str, env: Env, line: int | None) -> WorkerCommand | None:
    """The engine command a RunPod worker image runs with the environment ``env`` (``line``:
    the image's), or ``None`` when ``image`` is no RunPod worker."""
    from kvlint.manifests.shell_words import Word

    found = runpod_worker(image)
    if found is None:
        return None
    engine, release = found
    words: list[Word] = []
    notes: list[str] = [f"{image} is RunPod's {engine} worker: it starts {engine} with "
                        "options written from its environment variables"]
    problems: list[EngineArgProblem] = []
    if engine == "vllm":
        cli = release is None or release >= _VLLM_CLI_SINCE
        own = release is not None and _VLLM_OWN_DEFAULTS[0] <= release <= _VLLM_OWN_DEFAULTS[1]
        for name, flag in _VLLM_OPTIONS:
            value = _value(env, name)
            if value is None:
                continue
            if name == "MAX_MODEL_LEN" and value == "0" and not cli:
                continue  # the in-process worker reads 0 as "the model's length"
            words += _option(env, name, flag)
        for name, flag in _VLLM_BOOLEANS:
            value = _value(env, name)
            if not isinstance(value, str):
                continue
            text = value.strip().lower()
            if text in _TRUE:
                words.append(Word(flag, env.line_of(name)))
            elif cli and text in _FALSE:
                words.append(Word("--no-" + flag[2:], env.line_of(name)))
            elif cli:
                problems.append(EngineArgProblem(
                    "value", flag, f"{name}={value}: the worker accepts true/false, 1/0, "
                    "yes/no or on/off for this flag and stops at start on anything else "
                    "(src/args_builder.py)", env.line_of(name), None,
                    {"reason": "runpod-boolean", "env": name}))
        if own and _value(env, "GPU_MEMORY_UTILIZATION") is None:
            words += [Word("--gpu-memory-utilization", line), Word("0.95", line)]
            notes.append("the worker's own default gpu_memory_utilization 0.95 applies (vLLM's "
                         "is 0.9)")
        if not cli:
            notes.append("this worker release sets the tensor-parallel size to the number of "
                         "visible GPUs when more than one is visible, over "
                         "TENSOR_PARALLEL_SIZE")
        extra = _value(env, "VLLM_EXTRA_ARGS")
        if extra is not None and cli:
            words.append(Word("$VLLM_EXTRA_ARGS", env.line_of("VLLM_EXTRA_ARGS"), split=True))
        if release is None:
            notes.append("the worker release is not in the tag: read as the newest worker does")
    else:
        old = release is not None and _SGLANG_MODEL_PATH[0] <= release <= _SGLANG_MODEL_PATH[1]
        model_names = ("MODEL_PATH",) if old else (
            ("MODEL_NAME", "MODEL_PATH") if release is None else ("MODEL_NAME",))
        model = next((n for n in model_names if _value(env, n) is not None), None)
        if model is not None:
            words += _option(env, model, "--model-path")
        # the worker always passes its address: HOST (0.0.0.0) and PORT (30000), engine.py
        for name, flag, default in (("HOST", "--host", "0.0.0.0"), ("PORT", "--port", "30000")):
            words += _option(env, name, flag) if _value(env, name) is not None else \
                [Word(flag, line), Word(default, line)]
        for name, flag in _SGLANG_OPTIONS:
            if _value(env, name) is not None:
                words += _option(env, name, flag)
        for name, flag in _SGLANG_BOOLEANS:
            value = _value(env, name)
            if isinstance(value, str) and value.strip().lower() in _TRUE[:3]:
                words.append(Word(flag, env.line_of(name)))
    ignored = [name for name in _IGNORED[engine] if _value(env, name) is not None]
    if ignored:
        notes.append(f"the worker ignores {', '.join(ignored)}: {engine} never receives "
                     f"{'it' if len(ignored) == 1 else 'them'}")
    return WorkerCommand(engine, tuple(words), tuple(notes), tuple(problems))
