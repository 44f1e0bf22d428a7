"""Standalone engine configuration files: vLLM and SGLang ``--config`` YAML, TensorRT-LLM
``--config``/``--extra_llm_api_options`` YAML, ``trtllm-serve disaggregated`` configs and Ray
Serve LLM configs (``serve run`` files and ``LLMConfig`` files).

None of these carries a Kubernetes ``kind``: they are recognised by key signatures, with the file
path as a tie-breaker only. The first half of the module holds the helpers the Helm, compose and
launcher parsers share (reading line-aware YAML, turning YAML into argument words, walking shell
scripts, settling the engine version).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from kvlint.loaders.files import read_referenced
from kvlint.manifests.base import (
    DocumentContext,
    Documents,
    Located,
    ManifestParser,
    ManifestProblem,
    ServedModel,
    Unresolved,
)
from kvlint.manifests.cli_options import OPTION_TABLES
from kvlint.manifests.engine_env import engine_invocations, with_env
from kvlint.manifests.engine_options import engine_problems
from kvlint.manifests.images import engine_from_image, engine_from_pip
from kvlint.manifests.shell import (
    EngineArgs,
    Env,
    Word,
    env_args_llamacpp,
    env_args_tgi,
    find_engine,
    parse_engine_args,
    split_env_prefix,
    split_script,
)
from kvlint.manifests.yaml_marks import LStr, load_documents

# ============================================================================================
# Shared helpers (used by helm.py, compose.py and launchers.py too)
# ============================================================================================

K8S_MARKERS = ("apiVersion", "kind")


def plain_map(obj: object) -> bool:
    """A mapping that is not a Kubernetes object (no ``apiVersion``/``kind``)."""
    return isinstance(obj, dict) and not any(k in obj for k in K8S_MARKERS)


def get_map(obj: Any, key: str) -> dict[str, Any] | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else None


def get_list(obj: Any, key: str) -> list[Any] | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else None


def get_str(obj: Any, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def node_line(obj: object) -> int | None:
    line = getattr(obj, "line", None)
    return line if isinstance(line, int) else None


def key_line(obj: Any, key: object) -> int | None:
    """Line of ``key`` in a line-aware mapping (else of the mapping itself)."""
    lines = getattr(obj, "key_lines", None)
    if isinstance(lines, dict) and key in lines:
        return int(lines[key][0])
    return node_line(obj)


def key_col(obj: Any, key: object) -> int | None:
    lines = getattr(obj, "key_lines", None)
    if isinstance(lines, dict) and key in lines:
        return int(lines[key][1])
    return None


def value_line(obj: Any, key: object) -> int | None:
    """Line where the value of ``key`` starts (the key's line when unknown)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    line = node_line(value)
    if line is not None:
        return line
    lines = getattr(obj, "value_lines", None)
    if isinstance(lines, dict) and key in lines:
        return int(lines[key][0])
    return key_line(obj, key)


def item_line(obj: Any, index: int) -> int | None:
    lines = getattr(obj, "item_lines", None)
    if isinstance(lines, list) and 0 <= index < len(lines):
        return int(lines[index][0])
    item = obj[index] if isinstance(obj, list) and 0 <= index < len(obj) else None
    return node_line(item) or node_line(obj)


def lstr(text: str, line: int | None, column: int = 0, style: str | None = None) -> str:
    """A string that remembers where it was read (``yaml_marks.LStr``)."""
    return LStr(text, line or 0, column, style)


def env_of(obj: Any) -> dict[str, str | None]:
    """An environment written as a mapping or as a ``KEY=VALUE`` / bare ``KEY`` list; values
    remember their line; a bare key or a null value is set but unknown (``None``)."""
    env: dict[str, str | None] = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            if value is None or isinstance(value, dict | list):
                env[str(key)] = None
            else:
                env[str(key)] = lstr(scalar_text(value), value_line(obj, key),
                                     key_col(obj, key) or 0)
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            if not isinstance(item, str):
                continue
            name, eq, value = item.partition("=")
            env[name.strip()] = lstr(value, item_line(obj, i)) if eq else None
    return env


T = TypeVar("T")


def to_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+]?\d+\s*", value):
        return int(value)
    return None


def to_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def to_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def scalar_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _loc_number(obj: Any, key: str, source: str, convert: Callable[[object], T | None],
                what: str) -> Located[T] | Unresolved | None:
    """A number read from ``obj[key]`` with ``convert``, on the key's line."""
    if not isinstance(obj, dict) or obj.get(key) is None:
        return None
    value, line = obj[key], key_line(obj, key)
    number = convert(value)
    if number is None:
        return Unresolved(f"{source} is not {what}", line, key_col(obj, key),
                          scalar_text(value))
    return Located(number, line, key_col(obj, key), source)


def loc_int(obj: Any, key: str, source: str) -> Located[int] | Unresolved | None:
    """An integer setting read from ``obj[key]``, on the key's line."""
    return _loc_number(obj, key, source, to_int, "an integer")


def loc_float(obj: Any, key: str, source: str) -> Located[float] | Unresolved | None:
    return _loc_number(obj, key, source, to_float, "a number")


def loc_str(obj: Any, key: str, source: str) -> Located[str] | None:
    if not isinstance(obj, dict) or obj.get(key) is None or isinstance(obj[key], dict | list):
        return None
    return Located(scalar_text(obj[key]), value_line(obj, key), key_col(obj, key), source)


TEMPLATE = re.compile(r"\{\{.*?\}\}|<[A-Za-z][^<>]*>")


def model_value(text: str, line: int | None, source: str,
                column: int | None = None) -> Located[str] | Unresolved:
    """A model named in a manifest: a placeholder (``{{ }}``, ``<...>``) is Unresolved."""
    stripped = text.strip()
    if not stripped or TEMPLATE.search(stripped):
        return Unresolved(f"{source} is a placeholder", line, column, stripped)
    return Located(stripped, line, column, source)


def words_of_list(items: Sequence[Any]) -> list[Word]:
    """One word per YAML list item (an exec-form command), on the item's line; string items
    stay line-aware (an ``sh -c`` script in a block scalar keeps its lines)."""
    return [Word(item if isinstance(item, str) else scalar_text(item), item_line(items, i),
                 column=getattr(item, "column", None) or None)
            for i, item in enumerate(items)
            if item is not None and not isinstance(item, dict | list)]


def words_of_scalar(text: str, line: int | None = None) -> list[Word]:
    """A command written as one string, split shell-style into words (docker and compose
    split exec strings the same way; operators are not interpreted)."""
    if line is not None and line != node_line(text):
        commands = split_script(str(text), line=line, style=getattr(text, "style", None))
    else:
        commands = split_script(text)
    return [w for command in commands for w in command]


def words_of(value: Any, line: int | None = None) -> list[Word]:
    if isinstance(value, list):
        return words_of_list(value)
    if isinstance(value, str):
        return words_of_scalar(value, line)
    return []


FIELDS = ("model", "served_name", "tp", "pp", "dp", "dp_attention", "ep", "kv_cache_dtype",
          "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
          "extensible_kv_cache", "kv_tokens_cap", "gpu_memory_utilization", "dtype",
          "quantization", "config_overrides", "node_rank")
"""EngineArgs fields that are ServedModel fields too."""
MERGED = (*FIELDS, "config_file", "expert_parallel", "dp_local", "nnodes")


def merge_args(primary: EngineArgs | None, fallback: EngineArgs | None) -> EngineArgs | None:
    """Field by field: ``primary``'s value where it sets one, else ``fallback``'s."""
    if primary is None:
        return fallback
    if fallback is None:
        return primary
    changes: dict[str, Any] = {name: getattr(fallback, name) for name in MERGED
                               if getattr(primary, name) is None
                               and getattr(fallback, name) is not None}
    extra = tuple(n for n in fallback.notes if n not in primary.notes)
    if extra:
        changes["notes"] = primary.notes + extra
    if any(name not in primary.env for name in fallback.env):
        changes["env"] = {**fallback.env, **primary.env}
    return replace(primary, **changes) if changes else primary


SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ash"})


@dataclass
class Launch:
    """An engine command found in a command line or script."""

    engine: str
    line: int | None
    args: EngineArgs
    env: Env


@dataclass
class Pin:
    engine: str
    version: str | None
    spec: str
    line: int | None


@dataclass
class Script:
    """What reading a command line or script finds: engine launches, pip pins, model
    downloads."""

    launches: list[Launch] = field(default_factory=list)
    pins: list[Pin] = field(default_factory=list)
    downloads: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Script) -> None:
        self.launches.extend(other.launches)
        self.pins.extend(other.pins)
        self.downloads.update(other.downloads)
        self.notes.extend(other.notes)


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _expand(env: Env, text: str) -> str | None:
    out = env.expand(text)
    return out if isinstance(out, str) else None


PIP_VALUE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-f",
                               "--find-links", "-i", "--index-url", "--extra-index-url",
                               "-t", "--target", "--prefix", "--python", "-e", "--editable",
                               "--root", "--src", "--upgrade-strategy", "--platform",
                               "--python-version", "--implementation", "--abi", "--only-binary",
                               "--no-binary", "--index-strategy", "--torch-backend"})


def pip_pins(words: Sequence[Word], env: Env) -> list[Pin]:
    """Engine requirements in a ``pip install``/``uv pip install`` command."""
    texts = [w.text for w in words]
    start = next((i for i in range(len(texts) - 1)
                  if _basename(texts[i]).startswith("pip") and texts[i + 1] == "install"), None)
    if start is None:
        return []
    pins: list[Pin] = []
    skip = False
    for word in words[start + 2:]:
        if skip:
            skip = False
            continue
        if word.text.startswith("-"):
            skip = word.text in PIP_VALUE_OPTIONS
            continue
        spec = _expand(env, word.text) or word.text
        found = engine_from_pip(spec)
        if found is not None:
            pins.append(Pin(found[0], found[1], spec, word.line))
    return pins


def _download(words: Sequence[Word], env: Env) -> tuple[str, str] | None:
    """``huggingface-cli download REPO --local-dir DIR`` (or ``hf download``) -> (DIR, REPO)."""
    texts = [_expand(env, w.text) or w.text for w in words]
    if len(texts) < 3 or _basename(texts[0]) not in ("huggingface-cli", "hf") or \
            texts[1] != "download":
        return None
    repo = next((t for t in texts[2:] if not t.startswith("-")), None)
    local = None
    for i, text in enumerate(texts):
        if text == "--local-dir" and i + 1 < len(texts):
            local = texts[i + 1]
        elif text.startswith("--local-dir="):
            local = text.split("=", 1)[1]
    if repo is None or local is None or "/" not in repo:
        return None
    return local, repo


def engine_args(engine: str, words: Sequence[Word], env: Env,
                process: Env | None = None) -> EngineArgs:
    """Flags of ``engine`` (words after the executable, expanded with ``env``); when the
    engine process sees another environment (``process``: compose expands exec-form words with
    its own variables, not the container's), the settings TGI and llama.cpp read from env vars
    come from that one (flags win)."""
    args = with_env(parse_engine_args(engine, words, env), process or env)
    if process is not None and process is not env:
        if engine == "tgi":
            return merge_args(args, env_args_tgi(process)) or args
        if engine == "llamacpp":
            return merge_args(args, env_args_llamacpp(process)) or args
    return args


def _shell_script(words: Sequence[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` (``bash -lc``, ``/bin/sh -ec``...)."""
    if not words or _basename(words[0].text) not in SHELLS:
        return None
    for i, word in enumerate(words[1:], 1):
        text = word.text
        if text.startswith("--") or not text.startswith("-"):
            return None
        if "c" in text[1:]:
            return words[i + 1] if i + 1 < len(words) else None
    return None


def launch_in_argv(words: Sequence[Word], env: Env, *, expand: Env | None = None,
                   depth: int = 0) -> Script:
    """The engine started by one exec-form command line; ``sh -c SCRIPT`` is followed into
    the script. ``env`` is the process environment; ``expand``, when given, is what the
    words of the command line itself are expanded with."""
    found = Script()
    if not words or depth > 2:
        return found
    prefix, rest = split_env_prefix(list(words))
    process = env.assign(prefix) if prefix else env
    hit = find_engine([w.text for w in rest])
    if hit is not None:
        engine, index = hit
        word_env = expand if expand is not None else process
        program = rest[index - 1] if index else rest[0]
        found.launches.append(Launch(engine, program.line,
                                     engine_args(engine, rest[index:], word_env, process),
                                     process))
        return found
    script = _shell_script(rest)
    if script is not None:
        commands = split_script(script.text) if isinstance(script.text, LStr) and \
            script.line == script.text.line else split_script(script.text, line=script.line)
        found.extend(walk_script(commands, process, depth=depth + 1))
    return found


def walk_script(commands: Sequence[list[Word]], env: Env, *, depth: int = 0) -> Script:
    """Read a shell script: the engine launches (with the assignments made before each,
    through ``shell.engine_invocations``), ``pip install`` pins, Hub downloads into local
    directories, and ``sh -c`` scripts it runs."""
    found = Script()
    for invocation in engine_invocations(commands, env):
        found.launches.append(Launch(invocation.engine, invocation.line, invocation.args,
                                     invocation.env))
    for command in commands:
        rest = split_env_prefix(list(command))[1]
        if not rest:
            continue
        found.pins.extend(pip_pins(rest, env))
        download = _download(rest, env)
        if download is not None:
            found.downloads[download[0].rstrip("/")] = (download[1], rest[0].line)
        elif depth < 2 and _shell_script(rest) is not None:
            found.extend(launch_in_argv(rest, env, depth=depth + 1))
    return found


def resolve_download(model: Located[str] | Unresolved | None,
                     downloads: Mapping[str, tuple[str, int | None]]
                     ) -> tuple[Located[str] | Unresolved | None, str | None]:
    """A local model directory the same script downloaded from the Hub -> the Hub id."""
    if not isinstance(model, Located):
        return model, None
    local = model.value.rstrip("/")
    local = local[2:] if local.startswith("./") else local
    if local in downloads:
        repo, line = downloads[local]
        where = f" (line {line})" if line else ""
        return (Located(repo, model.line, model.column,
                        f"{model.value}, downloaded from the Hub repo {repo}{where}"),
                f"model directory {model.value} is a download of {repo}{where}")
    return model, None


def image_engine(image: str | None) -> tuple[str | None, str | None, str]:
    if not image:
        return None, None, ""
    return engine_from_image(image)


def settle_version(engine: str | None, image: Located[str] | None,
                   pins: Sequence[Pin] = ()) -> tuple[Located[str] | Unresolved | None,
                                                      list[str]]:
    """The engine version: an exact pip pin of the engine installed at start-up, else the image
    tag when the image is that engine's, else an unpinned requirement (``latest``). An image of
    another engine (a base image) says nothing: the version stays unknown, with a note."""
    notes: list[str] = []
    if engine is None:
        return None, notes
    mine = [p for p in pins if p.engine == engine]
    exact = next((p for p in mine if p.version and p.version != "latest"), None)
    if exact is not None and exact.version:
        return Located(exact.version, exact.line, None, f"pip {exact.spec}"), notes
    if image is not None:
        img_engine, img_version, note = image_engine(image.value)
        if img_engine == engine and img_version:
            if note:
                notes.append(note)
            return Located(img_version, image.line, image.column, "image tag"), notes
        if img_engine is not None and img_engine != engine:
            notes.append(f"image {image.value} is a {img_engine} image, but the engine is "
                         f"{engine}: the image says nothing about the {engine} version")
        elif note:
            notes.append(note)
    if mine:
        pin = mine[0]
        return Located("latest", pin.line, None,
                       f"pip {pin.spec} (not pinned: the newest release is assumed)"), notes
    return None, notes


def served_model(
    ctx: DocumentContext,
    fmt: str,
    *,
    line: int | None,
    name: str = "",
    role: str | None = None,
    engine: Located[str] | None = None,
    args: EngineArgs | None = None,
    image: Located[str] | None = None,
    version: Located[str] | Unresolved | None = None,
    gpus: Located[int] | Unresolved | None = None,
    gpu_type: Located[str] | None = None,
    notes: Iterable[str] = (),
    path: str | None = None,
    served_name: str | None = None,
    **overrides: Any,
) -> ServedModel:
    """A ServedModel from engine arguments plus what the manifest says around them
    (``overrides`` replace single fields)."""
    values: dict[str, Any] = {key: getattr(args, key) for key in FIELDS} if args else {}
    all_notes = list(notes)
    if args is not None:
        all_notes.extend(args.notes)
        if isinstance(args.config_file, Located | Unresolved):
            ref = args.config_file.value if isinstance(args.config_file, Located) else \
                args.config_file.text
            all_notes.append(f"engine config file {ref} is not read from here (lint that "
                             "file too)")
        if values.get("ep") is None and isinstance(args.expert_parallel, Located) and \
                args.expert_parallel.value:
            tp, dp = values.get("tp"), values.get("dp")
            tp_n = tp.value if isinstance(tp, Located) else 1
            dp_n = dp.value if isinstance(dp, Located) else 1
            if not isinstance(tp, Unresolved) and not isinstance(dp, Unresolved):
                values["ep"] = Located(tp_n * dp_n, args.expert_parallel.line, None,
                                       f"{args.expert_parallel.source or 'expert parallel'}"
                                       " (EP size = tp x dp)")
    values.update(overrides)
    model = values.get("model")
    sname = values.pop("served_name", None)
    if served_name is None and isinstance(sname, Located):
        names_ = sname.value if isinstance(sname.value, list) else [sname.value]
        served_name = str(names_[0]) if names_ else None
    model_line = model.line if isinstance(model, Located | Unresolved) else None
    first = model_line or (engine.line if engine else None) or line or \
        node_line(ctx.documents[ctx.index] if ctx.index < len(ctx.documents) else None) or 1
    unique: list[str] = []
    for note in all_notes:
        if note and note not in unique:
            unique.append(note)
    problems = engine_problems(engine.value, version, args.uses) \
        if args is not None and engine is not None else ()
    return ServedModel(
        path=path or ctx.path, line=first, format=fmt, document=ctx.index, name=name,
        role=role, served_name=served_name, engine=engine, engine_version=version,
        image=image, gpus=gpus, gpu_type=gpu_type, notes=tuple(unique),
        env=dict(args.env) if args is not None else {}, engine_problems=problems, **values)


def first_launch(script: Script) -> tuple[Launch | None, list[str]]:
    notes: list[str] = []
    if not script.launches:
        return None, notes
    if len({launch.engine for launch in script.launches}) > 1:
        notes.append("several engines are started: " + ", ".join(
            sorted({launch.engine for launch in script.launches})) + "; the first is reported")
    return script.launches[0], notes


# ============================================================================================
# vLLM / SGLang --config files
# ============================================================================================

def names(text: str) -> frozenset[str]:
    """Whitespace-separated names."""
    return frozenset(text.split())


def _options(engine: str) -> frozenset[str]:
    """Long option names of ``engine``'s server CLI, without dashes, ``_`` spelled ``-``."""
    table = OPTION_TABLES.get(engine, {})
    return frozenset(_dash(name) for kind in table.values() for name in kind.split()
                     if name.startswith("--"))


def _dash(key: object) -> str:
    return str(key).strip().lstrip("-").replace("_", "-").lower()


VLLM_KEYS = _options("vllm") | {"model"}
SGLANG_KEYS = _options("sglang") | {"model"}
VLLM_PREFERRED = frozenset({"tensor-parallel-size", "pipeline-parallel-size",
                            "data-parallel-size"})
"""vLLM's own spellings of options SGLang accepts only as aliases (of ``--tp-size``...)."""
VLLM_ONLY = (VLLM_KEYS - SGLANG_KEYS) | VLLM_PREFERRED
SGLANG_ONLY = SGLANG_KEYS - VLLM_KEYS
TRT_KEYS = names("""
max_batch_size max_num_tokens max_seq_len max_input_len max_beam_width tensor_parallel_size
pipeline_parallel_size moe_expert_parallel_size moe_tensor_parallel_size context_parallel_size
moe_cluster_parallel_size enable_attention_dp kv_cache_config cuda_graph_config
speculative_config backend trust_remote_code stream_interval disable_overlap_scheduler
enable_chunked_prefill print_iter_log enable_iter_perf_stats moe_config attn_backend
pytorch_backend_config enable_layerwise_nvtx_marker kv_cache_free_gpu_memory_fraction
cache_transceiver_config scheduler_config torch_compile_config load_format model tokenizer
skip_tokenizer_init dtype revision gpus_per_node allreduce_strategy enable_min_latency
batch_wait_timeout_ms batch_wait_max_tokens_ratio sampler_type checkpoint_format
enable_autotuner garbage_collection_gen0_threshold num_postprocess_workers
postprocess_tokenizer_dir reasoning_parser build_config quant_config lora_config
peft_cache_config decoding_config guided_decoding_backend enable_lora
mm_encoder_only stream_interval attention_dp_config moe_backend use_cuda_graph
cuda_graph_batch_sizes cuda_graph_padding_enabled free_gpu_memory_fraction
""")
TRT_ONLY = names("""
max_batch_size max_num_tokens max_seq_len max_beam_width moe_expert_parallel_size
moe_tensor_parallel_size moe_cluster_parallel_size enable_attention_dp kv_cache_config
cuda_graph_config pytorch_backend_config disable_overlap_scheduler print_iter_log
enable_iter_perf_stats moe_config attn_backend kv_cache_free_gpu_memory_fraction
cache_transceiver_config torch_compile_config enable_layerwise_nvtx_marker gpus_per_node
allreduce_strategy enable_min_latency checkpoint_format enable_autotuner attention_dp_config
use_cuda_graph cuda_graph_batch_sizes cuda_graph_padding_enabled build_config
""")
NOT_ENGINE = frozenset({"apiVersion", "kind", "services", "jobs", "on", "repos", "steps",
                        "applications", "resources", "run", "setup", "envs", "commands",
                        "image", "type", "spec", "metadata", "stages", "include",
                        "context_servers", "generation_servers", "llm_configs",
                        "model_loading_config", "engine_kwargs", "dependencies", "version"})


def _known(key: str, keys: frozenset[str]) -> bool:
    return key in keys or (key.startswith("no-") and key[3:] in keys)


def _path_hint(path: str) -> str | None:
    name = path.replace("\\", "/").lower()
    hits = [e for e, words in (("vllm", ("vllm",)), ("sglang", ("sglang",)),
                               ("trtllm", ("trtllm", "tensorrt", "trt-llm", "trt_llm")))
            if any(w in name for w in words)]
    return hits[0] if len(hits) == 1 else None


def engine_config_kind(document: object, path: str) -> str | None:
    """Which engine's flat config file ``document`` is (``vllm``, ``sglang``, ``trtllm``), by
    its keys: every key must be an option of that engine, and at least one must be
    distinctive (an option only that engine has, or the engine's own spelling of a shared
    one). The path breaks ties only."""
    if not plain_map(document):
        return None
    assert isinstance(document, dict)
    keys = [k for k in document if isinstance(k, str)]
    if len(keys) < 2 or len(keys) != len(document) or any(k in NOT_ENGINE for k in keys):
        return None
    scores: dict[str, int] = {}
    trt_keys = [k.strip() for k in keys]
    if all(k in TRT_KEYS for k in trt_keys):
        scores["trtllm"] = sum(k in TRT_ONLY for k in trt_keys)
        if any(isinstance(document.get(k), dict) for k in ("kv_cache_config",
                                                           "cuda_graph_config")):
            scores["trtllm"] += 2
    dashed = [_dash(k) for k in keys]
    if all(_known(k, VLLM_KEYS) for k in dashed):
        scores["vllm"] = sum(_known(k, VLLM_ONLY) for k in dashed)
    if all(_known(k, SGLANG_KEYS) for k in dashed):
        scores["sglang"] = sum(_known(k, SGLANG_ONLY) for k in dashed)
    if not scores:
        return None
    best = max(scores.values())
    winners = [e for e, s in scores.items() if s == best]
    if best > 0 and len(winners) == 1:
        return winners[0]
    hint = _path_hint(path)
    if hint in winners and (best > 0 or len(keys) >= 3):
        return hint
    return None


def config_words(document: Mapping[str, Any]) -> list[Word]:
    """A flat ``--config`` YAML as the command-line words the engine turns it into (``true``
    becomes a bare flag, ``false`` sets nothing, lists repeat values, mappings become JSON),
    as vLLM's and SGLang's config-file loaders do."""
    words: list[Word] = []
    for key, value in document.items():
        if value is None:
            continue
        line = key_line(document, key)
        flag = "--" + _dash(key)
        if isinstance(value, bool):
            if value:
                words.append(Word(flag, line))
            continue
        if isinstance(value, list):
            if not value:
                continue
            words.append(Word(flag, line))
            words.extend(Word(scalar_text(v), item_line(value, i)) for i, v in enumerate(value)
                         if not isinstance(v, dict | list))
            continue
        text = json.dumps(value) if isinstance(value, dict) else scalar_text(value)
        words.append(Word(flag, line))
        words.append(Word(text, value_line(document, key)))
    return words


def config_args(engine: str, document: Mapping[str, Any], where: str = "") -> EngineArgs:
    """``engine``'s arguments from a flat config mapping, each value's source named by the
    key it was read from (``where`` + key)."""
    args = parse_engine_args(engine, config_words(document), Env({}, k8s=False))
    keys = {"--" + _dash(k): f"{where}{k}" for k in document}
    changes: dict[str, Any] = {}
    for name in MERGED:
        value = getattr(args, name)
        if isinstance(value, Located) and value.source in keys:
            changes[name] = replace(value, source=keys[value.source])
    return replace(args, **changes) if changes else args


def _doc_line(document: object) -> int:
    return node_line(document) or 1


class VllmConfigParser(ManifestParser):
    """A vLLM ``--config`` YAML (``vllm serve --config FILE``): CLI options as keys, dash or
    underscore spelling, ``no-``-prefixed negations."""

    name = "vllm-config"
    engine = "vllm"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return engine_config_kind(document, ctx.path) == self.engine

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        args = config_args(self.engine, document)
        notes = []
        if args.model is None:
            notes.append("the config names no model: it is given on the command line "
                         f"(`{'vllm serve MODEL' if self.engine == 'vllm' else 'sglang'} "
                         "--config FILE`)")
        engine = Located(self.engine, None, None, f"{self.name} file")
        return [served_model(ctx, self.name, line=_doc_line(document), engine=engine,
                             args=args, notes=notes)]


class SglangConfigParser(VllmConfigParser):
    """An SGLang ``--config`` YAML (``python -m sglang.launch_server --config FILE``)."""

    name = "sglang-config"
    engine = "sglang"


# ============================================================================================
# TensorRT-LLM
# ============================================================================================


def trt_settings(conf: Mapping[str, Any], base: Mapping[str, Any] | None = None,
                 where: str = "") -> dict[str, Any]:
    """ServedModel fields from TensorRT-LLM LLM-API YAML keys; ``base`` supplies keys a role
    does not set (``trtllm-serve disaggregated`` top level)."""
    def pick(key: str) -> tuple[Mapping[str, Any], str] | None:
        if conf.get(key) is not None:
            return conf, where + key
        if base is not None and base.get(key) is not None:
            return base, key
        return None

    def num(key: str) -> Located[int] | Unresolved | None:
        found = pick(key)
        return loc_int(found[0], key, found[1]) if found else None

    out: dict[str, Any] = {}
    out["tp"] = num("tensor_parallel_size")
    out["pp"] = num("pipeline_parallel_size")
    out["ep"] = num("moe_expert_parallel_size")
    out["max_num_seqs"] = num("max_batch_size")
    out["max_model_len"] = num("max_seq_len")
    found = pick("enable_attention_dp")
    if found is not None:
        flag = to_bool(found[0]["enable_attention_dp"])
        line = key_line(found[0], "enable_attention_dp")
        if flag is not None:
            out["dp_attention"] = Located(flag, line, None, found[1])
            tp = out["tp"]
            if flag and isinstance(tp, Located) and tp.value > 1:
                out["dp"] = Located(tp.value, line, None,
                                    f"{found[1]}: attention DP size = tensor_parallel_size")
    kv_dtype = gpu_util = None
    for source in (conf, base or {}):
        kv = source.get("kv_cache_config")
        prefix = (where if source is conf else "") + "kv_cache_config."
        if isinstance(kv, dict):
            if kv_dtype is None and kv.get("dtype") is not None:
                kv_dtype = Located(scalar_text(kv["dtype"]), key_line(kv, "dtype"), None,
                                   prefix + "dtype")
            if gpu_util is None:
                gpu_util = loc_float(kv, "free_gpu_memory_fraction",
                                     prefix + "free_gpu_memory_fraction")
        if gpu_util is None:
            for key in ("kv_cache_free_gpu_memory_fraction", "free_gpu_memory_fraction"):
                gpu_util = gpu_util or loc_float(source, key,
                                                 (where if source is conf else "") + key)
    out["kv_cache_dtype"] = kv_dtype
    out["gpu_memory_utilization"] = gpu_util
    model = pick("model")
    if model is not None and isinstance(model[0]["model"], str):
        out["model"] = model_value(model[0]["model"], value_line(model[0], "model"), model[1])
    return {k: v for k, v in out.items() if v is not None}


def _gpus_from(settings: Mapping[str, Any], source: str) -> Located[int] | None:
    tp, pp = settings.get("tp"), settings.get("pp")
    tp_n = tp.value if isinstance(tp, Located) else 1
    pp_n = pp.value if isinstance(pp, Located) else 1
    line = tp.line if isinstance(tp, Located) else None
    return Located(tp_n * pp_n, line, None, source)


FREE_FRACTION_NOTE = ("TensorRT-LLM's free_gpu_memory_fraction is a share of the memory left "
                      "after weights, not of the whole GPU")


class TrtllmConfigParser(ManifestParser):
    """A TensorRT-LLM LLM-API YAML (``trtllm-serve --config``/``--extra_llm_api_options``)."""

    name = "trtllm-config"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return engine_config_kind(document, ctx.path) == "trtllm"

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        settings = trt_settings(document)
        notes = []
        if "model" not in settings:
            notes.append("the config names no model: it is given on the command line "
                         "(`trtllm-serve MODEL --config FILE`)")
        if "gpu_memory_utilization" in settings:
            notes.append(FREE_FRACTION_NOTE)
        engine = Located("trtllm", None, None, "TensorRT-LLM LLM-API options file")
        return [served_model(ctx, self.name, line=_doc_line(document), engine=engine,
                             gpus=_gpus_from(settings, "tensor_parallel_size x "
                                             "pipeline_parallel_size"),
                             notes=notes, **settings)]


DISAGG_ROLES = (("context_servers", "prefill"), ("generation_servers", "decode"))


class TrtllmDisaggParser(ManifestParser):
    """A ``trtllm-serve disaggregated -c FILE`` config: a model and per-role server groups."""

    name = "trtllm-disagg"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document):
            return False
        roles = [get_map(document, key) for key, _ in DISAGG_ROLES]
        return any(r is not None and any(k in r for k in ("num_instances", "urls",
                                                          "tensor_parallel_size"))
                   for r in roles)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        out = []
        for key, role in DISAGG_ROLES:
            conf = get_map(document, key)
            if conf is None:
                continue
            settings = trt_settings(conf, document, f"{key}.")
            notes = [f"{key}: trtllm-serve disaggregated role ({role})"]
            instances = loc_int(conf, "num_instances", f"{key}.num_instances")
            if isinstance(instances, Located) and instances.value != 1:
                notes.append(f"{key}.num_instances {instances.value}: {instances.value} servers"
                             " of this role, each with the GPUs reported")
            urls = get_list(conf, "urls")
            if urls and isinstance(instances, Located) and len(urls) != instances.value:
                notes.append(f"{key} lists {len(urls)} urls for num_instances "
                             f"{instances.value}")
            if "gpu_memory_utilization" in settings:
                notes.append(FREE_FRACTION_NOTE)
            if "model" not in settings:
                notes.append("the config names no model")
            engine = Located("trtllm", None, None, "trtllm-serve disaggregated config")
            out.append(served_model(
                ctx, self.name, line=key_line(document, key), name=key, role=role,
                engine=engine, notes=notes,
                gpus=_gpus_from(settings, f"{key}: tensor_parallel_size x "
                                "pipeline_parallel_size per instance"),
                **settings))
        return out


# ============================================================================================
# Ray Serve LLM
# ============================================================================================

def _is_llm_config(obj: object) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("model_loading_config"), dict) and \
        any(k in obj["model_loading_config"] for k in ("model_id", "model_source"))


def _is_serve_config(obj: object) -> bool:
    apps = get_list(obj, "applications")
    if not apps:
        return False
    for app in apps:
        if not isinstance(app, dict):
            continue
        path = get_str(app, "import_path") or ""
        args = get_map(app, "args") or {}
        if "ray.serve.llm" in path or "llm_configs" in args or "llm_config" in args or \
                any(_is_llm_config(args.get(k)) for k in ("prefill_config", "decode_config")):
            return True
    return False


def _runtime_pins(holder: Any) -> list[Pin]:
    """Engine pins in a Ray ``runtime_env.pip`` (a list, or ``{packages: [...]}``)."""
    pip = (get_map(holder, "runtime_env") or {}).get("pip")
    if isinstance(pip, dict):
        pip = pip.get("packages")
    pins: list[Pin] = []
    for i, spec in enumerate(pip if isinstance(pip, list) else []):
        if isinstance(spec, str):
            found = engine_from_pip(spec)
            if found is not None:
                pins.append(Pin(found[0], found[1], spec, item_line(pip, i)))
    return pins


@dataclass
class _Ref:
    """An LLMConfig and the file it was read from."""

    config: Any
    path: str
    line: int | None
    role: str | None = None
    problem: str | None = None


class RayServeParser(ManifestParser):
    """Ray Serve LLM: a ``serve run`` config whose applications build ``ray.serve.llm`` apps
    (``llm_configs`` inline or as relative paths, ``llm_config``, ``prefill_config``/
    ``decode_config``), or a standalone ``LLMConfig`` YAML. The engine is vLLM."""

    name = "ray-serve"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document):
            return False
        return _is_serve_config(document) or _is_llm_config(document)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        if _is_llm_config(document):
            return [self._one(_Ref(document, ctx.path, _doc_line(document)), ctx, None, "")]
        out: list[ServedModel] = []
        for app in get_list(document, "applications") or []:
            if not isinstance(app, dict):
                continue
            import_path = get_str(app, "import_path") or ""
            args = get_map(app, "args") or {}
            for ref in self._refs(args, ctx):
                out.append(self._one(ref, ctx, app, import_path))
        return out

    def _refs(self, args: dict[str, Any], ctx: DocumentContext) -> list[_Ref]:
        refs: list[_Ref] = []
        configs = get_list(args, "llm_configs") or []
        for i, item in enumerate(configs):
            if isinstance(item, dict):
                refs.append(_Ref(item, ctx.path, item_line(configs, i)))
            elif isinstance(item, str):
                refs.append(self._read(item, ctx, item_line(configs, i)))
        for key, role in (("llm_config", None), ("prefill_config", "prefill"),
                          ("decode_config", "decode")):
            value = args.get(key)
            if isinstance(value, dict):
                refs.append(_Ref(value, ctx.path, value_line(args, key), role))
            elif isinstance(value, str):
                ref = self._read(value, ctx, value_line(args, key))
                ref.role = role
                refs.append(ref)
        return refs

    @staticmethod
    def _read(reference: str, ctx: DocumentContext, line: int | None) -> _Ref:
        """An LLMConfig file referenced by a path relative to the serve config's directory."""
        if "://" in reference or os.path.isabs(reference) or reference.startswith("~"):
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is not a "
                        "relative path: it is not read")
        if not reference.lower().endswith((".yaml", ".yml", ".json")):
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is not a "
                        "YAML or JSON file: it is not read")
        target = str(Path(ctx.path).parent / reference)
        read = read_referenced(target, ctx.path)
        if isinstance(ctx.documents, Documents):
            ctx.documents.note_read(target, read.state)  # results depend on another file
        if read.outside:
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is outside the "
                        "linted tree (a link or ..): it is not read")
        if read.text is None:
            return _Ref(None, ctx.path, line, problem=f"llm config {reference}: {read.problem}")
        docs = load_documents(read.text, target)
        if isinstance(docs, ManifestProblem):
            return _Ref(None, ctx.path, line, problem=f"llm config {reference}: {docs.message}")
        config = next((d for d in docs if isinstance(d, dict)), None)
        if config is None:
            return _Ref(None, ctx.path, line, problem=f"llm config {reference} is empty")
        return _Ref(config, os.path.normpath(target), _doc_line(config))

    def _one(self, ref: _Ref, ctx: DocumentContext, app: dict[str, Any] | None,
             import_path: str) -> ServedModel:
        app_name = (get_str(app, "name") or "") if app else ""
        source_file = "" if ref.path == ctx.path else f" in {ctx.path}"
        engine = Located("vllm", key_line(app, "import_path") if app and not source_file
                         else None, None,
                         f"{import_path or 'ray.serve.llm LLMConfig'}{source_file} (vLLM)")
        if ref.config is None:
            missing = Unresolved(ref.problem or "llm config not read", ref.line)
            return served_model(ctx, self.name, line=ref.line, name=app_name, role=ref.role,
                                engine=engine, model=missing, notes=[ref.problem or ""])
        conf = ref.config
        notes: list[str] = []
        if ref.path != ctx.path:
            notes.append(f"LLM config read from {ref.path}, referenced by {ctx.path}")
        loading = get_map(conf, "model_loading_config") or {}
        model_id = get_str(loading, "model_id")
        model_source = loading.get("model_source")
        served_name = model_id
        model: Located[str] | Unresolved | None = None
        if isinstance(model_source, str):
            model = model_value(model_source, value_line(loading, "model_source"),
                                "model_loading_config.model_source")
        elif isinstance(model_source, dict):
            uri = get_str(model_source, "bucket_uri") or ""
            model = Unresolved("the weights are loaded from a bucket",
                               value_line(loading, "model_source"), None,
                               model_id or uri)
            notes.append(f"model_source is a bucket ({uri or 'unknown uri'})")
        elif model_id is not None:
            model = model_value(model_id, value_line(loading, "model_id"),
                                "model_loading_config.model_id")
            served_name = None
        engine_kw = get_map(conf, "engine_kwargs") or {}
        args = config_args("vllm", engine_kw, "engine_kwargs.")
        args = replace(args, model=None, served_name=None)
        llm_engine = get_str(conf, "llm_engine")
        if llm_engine and llm_engine.lower() != "vllm":
            notes.append(f"llm_engine {llm_engine}: only vLLM is modelled")
        if app is not None and "build_dp_openai_app" in import_path:
            notes.append("build_dp_openai_app: each Serve replica is one data-parallel rank")
        gpu_type = loc_str(conf, "accelerator_type", "accelerator_type")
        deployment = get_map(conf, "deployment_config") or {}
        replicas = loc_int(deployment, "num_replicas", "deployment_config.num_replicas")
        dp = args.dp
        tp_n = args.tp.value if isinstance(args.tp, Located) else 1
        pp_n = args.pp.value if isinstance(args.pp, Located) else 1
        dp_n = dp.value if isinstance(dp, Located) else 1
        gpus = Located(tp_n * pp_n * dp_n, args.tp.line if isinstance(args.tp, Located) else
                       None, None, "engine_kwargs tensor_parallel_size x pipeline_parallel_size"
                       + (" x data_parallel_size" if dp_n > 1 else ""))
        if isinstance(replicas, Located):
            if dp_n > 1:
                notes.append(
                    f"deployment_config.num_replicas {replicas.value} with data_parallel_size "
                    f"{dp_n}: Ray releases differ on whether this means {replicas.value} "
                    f"groups of {dp_n} ranks ({replicas.value * tp_n * pp_n * dp_n} GPUs) or "
                    f"{replicas.value} ranks in all; GPUs are reported for one DP group")
            elif replicas.value != 1:
                notes.append(f"deployment_config.num_replicas {replicas.value}: "
                             f"{replicas.value} replicas, each with the GPUs reported")
        autoscaling = get_map(deployment, "autoscaling_config")
        if autoscaling is not None:
            bounds = {k: autoscaling.get(k) for k in ("min_replicas", "max_replicas")
                      if autoscaling.get(k) is not None}
            if bounds:
                notes.append("autoscaling " + ", ".join(f"{k} {v}" for k, v in bounds.items()))
        pins = _runtime_pins(conf) + (_runtime_pins(app) if app and not source_file else [])
        version, more = settle_version("vllm", None, pins)
        notes.extend(more)
        line = model.line if isinstance(model, Located | Unresolved) and model.line else \
            ref.line
        return served_model(ctx, self.name, line=line, name=app_name or (model_id or ""),
                            role=ref.role, engine=engine, args=args, gpus=gpus,
                            version=version,
                            gpu_type=gpu_type, notes=notes, path=ref.path,
                            served_name=served_name, model=model)
