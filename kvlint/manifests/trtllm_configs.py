"""TensorRT-LLM configuration files: the LLM-API options YAML (``trtllm-serve --config`` /
``--extra_llm_api_options``) and ``trtllm-serve disaggregated -c FILE`` configs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.engine_launch import Hardware, Origin, served_model
from kvlint.manifests.flat_configs import engine_config_kind
from kvlint.manifests.yaml_values import (
    doc_line,
    get_list,
    get_map,
    key_line,
    loc_float,
    loc_int,
    model_value,
    plain_map,
    scalar_text,
    to_bool,
    value_line,
)


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
    # the profiling run's tokens (kvlint/model/trtllm_memory.py MAX_NUM_TOKENS)
    out["max_num_batched_tokens"] = num("max_num_tokens")
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
            # the pool's token cap and block size (kvlint/model/trtllm_memory.py)
            for field, key in (("kv_tokens_cap", "max_tokens"), ("page_size", "tokens_per_block")):
                if out.get(field) is None:
                    out[field] = loc_int(kv, key, prefix + key)
            if out.get("attention_windows") is None and \
                    kv.get("max_attention_window") is not None:
                out["attention_windows"] = _windows(kv, prefix + "max_attention_window")
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


MAX_WINDOWS = 4096
"""Entries of ``max_attention_window`` read (a model has at most a few hundred layers)."""


def _windows(kv: Mapping[str, Any], source: str) -> Located[tuple[int, ...]] | Unresolved:
    """``kv_cache_config.max_attention_window``: a list of at least one positive integer
    (TensorRT-LLM's ``KvCacheConfig.max_attention_window: Optional[List[PositiveInt]] =
    Field(default=None, min_length=1)``, tensorrt_llm/llmapi/llm_args.py in the code index's
    1.x copy, file id 7019226376; pydantic refuses anything else), repeated over the layers by
    the KV manager (kvlint/model/trtllm_windows.py)."""
    raw = kv.get("max_attention_window")
    line = key_line(kv, "max_attention_window")
    if isinstance(raw, list) and 0 < len(raw) <= MAX_WINDOWS and all(
            isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in raw):
        return Located(tuple(raw), line, None, source)
    return Unresolved(f"{source} is not a list of positive integers, which TensorRT-LLM's "
                      "KvCacheConfig requires", line, None, str(raw)[:80])


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
        return [served_model(Origin(ctx, self.name, line=doc_line(document)), engine=engine,
                             hardware=Hardware(gpus=_gpus_from(settings, "tensor_parallel_size x "
                                                               "pipeline_parallel_size")),
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
            gpus = _gpus_from(settings, f"{key}: tensor_parallel_size x "
                              "pipeline_parallel_size per instance")
            out.append(served_model(
                Origin(ctx, self.name, name=key, role=role, line=key_line(document, key)),
                engine=engine, notes=notes, hardware=Hardware(gpus=gpus), **settings))
        return out
