"""Flat engine configuration files: vLLM and SGLang ``--config`` YAML (CLI options as keys).

None of these carries a Kubernetes ``kind``: :func:`engine_config_kind` recognises a flat
config by its keys (vLLM, SGLang or TensorRT-LLM options; :mod:`.trtllm_configs` reads the
last), with the file path as a tie-breaker only. :func:`config_args` reads such a mapping as
the engine's arguments wherever one appears (a ConfigMap, Ray Serve ``engine_kwargs``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel
from kvlint.manifests.cli_option_tables import OPTION_TABLES
from kvlint.manifests.engine_command import EngineArgs, parse_engine_args
from kvlint.manifests.engine_launch import MERGED, Origin, served_model
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word
from kvlint.manifests.yaml_values import (
    doc_line,
    item_line,
    key_line,
    names,
    plain_map,
    scalar_text,
    value_line,
)


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


def _switches(engine: str) -> frozenset[str]:
    """``engine``'s options that take no value (a bare flag, or one with a ``--no-`` form)."""
    table = OPTION_TABLES.get(engine, {})
    return frozenset(name for kind in ("flag", "negatable")
                     for name in table.get(kind, "").split())


def config_words(document: Mapping[str, Any], kwargs_of: str | None = None) -> list[Word]:
    """A flat ``--config`` YAML as the command-line words the engine turns it into (``true``
    becomes a bare flag, ``false`` sets nothing, lists repeat values, mappings become JSON),
    as vLLM's and SGLang's config-file loaders do. With ``kwargs_of`` (an engine), the keys
    are that engine's Python keyword arguments, which no parser reads: a switch given a
    string or a number is on when Python finds the value true (``"true"``, ``"false"`` and
    ``1`` alike), off when empty or zero."""
    words: list[Word] = []
    switches = _switches(kwargs_of) if kwargs_of else frozenset()
    for key, value in document.items():
        if value is None:
            continue
        line = key_line(document, key)
        flag = "--" + _dash(key)
        if kwargs_of and isinstance(value, str | int | float) and not isinstance(
                value, bool) and (flag in switches or str(value).strip().lower() in
                                  ("true", "false")):
            value = bool(value)  # AsyncEngineArgs(flag="false") is on, as Python reads it
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


def config_args(engine: str, document: Mapping[str, Any], where: str = "",
                kwargs: bool = False) -> EngineArgs:
    """``engine``'s arguments from a flat config mapping, each value's source named by the
    key it was read from (``where`` + key); with ``kwargs``, the mapping is the engine's
    Python keyword arguments (:func:`config_words`)."""
    words = config_words(document, engine if kwargs else None)
    args = parse_engine_args(engine, words, Env({}, k8s=False))
    keys = {"--" + _dash(k): f"{where}{k}" for k in document}
    changes: dict[str, Any] = {}
    for name in MERGED:
        value = getattr(args, name)
        if isinstance(value, Located) and value.source in keys:
            changes[name] = replace(value, source=keys[value.source])
    return replace(args, **changes) if changes else args


TRITON_VLLM_FILE = "model.json"
"""The file of a Triton vLLM-backend model (``<repository>/<model>/1/model.json``): its keys
are vLLM's engine arguments as Python keyword arguments (``AsyncEngineArgs(**config)``,
triton-inference-server/vllm_backend src/model.py@0b18982f)."""


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
        kwargs = self.engine == "vllm" and \
            ctx.path.replace("\\", "/").rsplit("/", 1)[-1] == TRITON_VLLM_FILE
        args = config_args(self.engine, document, kwargs=kwargs)
        notes = []
        if kwargs:
            notes.append(f"{TRITON_VLLM_FILE}: Triton's vLLM backend passes its keys to "
                         "AsyncEngineArgs as keyword arguments (vllm_backend src/model.py), "
                         "so a switch's string value is Python's truth, not a word for "
                         "vLLM's parser")
        if args.model is None:
            notes.append("the config names no model: it is given on the command line "
                         f"(`{'vllm serve MODEL' if self.engine == 'vllm' else 'sglang'} "
                         "--config FILE`)")
        engine = Located(self.engine, None, None, f"{self.name} file")
        return [served_model(Origin(ctx, self.name, line=doc_line(document)), engine=engine,
                             args=args, notes=notes)]


class SglangConfigParser(VllmConfigParser):
    """An SGLang ``--config`` YAML (``python -m sglang.launch_server --config FILE``)."""

    name = "sglang-config"
    engine = "sglang"
