"""How kvlint reads the engines' command lines: each field's option spellings, each parser's
conventions, and the option tables (:mod:`.cli_option_tables`, generated from the engines'
sources; which version has which option: :mod:`.option_versions`).
"""

from __future__ import annotations

import functools

from kvlint.manifests.cli_option_tables import OPTION_TABLES

# --- how kvlint reads the options: each field's spellings, each parser's conventions -------
# (the grammar that uses these tables is kvlint.manifests.engine_command)

GRAMMAR_RULES = {
    # engine: (underscore→dash, argparse unique prefixes, positional model)
    "vllm": (True, True, True),
    "sglang": (False, True, False),
    "lmdeploy": (False, True, True),
    "trtllm": (False, False, True),
    "tgi": (False, False, False),
    "llamacpp": (True, False, False),  # common/arg.cpp: '_' -> '-' in "--" arguments
}
"""Each engine's parser conventions, for :mod:`.engine_command`'s grammar."""
TAKES_ANY_VALUE = frozenset({"trtllm", "llamacpp"})
"""click (``trtllm-serve``) and llama.cpp (``common/arg.cpp``: ``argv[++i]``) take the word
after a value-taking option as its value even when it starts with ``-``."""

FIELD_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "model": ("--model",), "served_name": ("--served-model-name",),
        "tp": ("--tensor-parallel-size", "-tp"), "pp": ("--pipeline-parallel-size", "-pp"),
        "dp": ("--data-parallel-size", "-dp"), "dp_local": ("--data-parallel-size-local",
                                                          "-dpl"),
        "expert_parallel": ("--enable-expert-parallel", "-ep"),
        "kv_cache_dtype": ("--kv-cache-dtype",), "max_model_len": ("--max-model-len",),
        "max_num_seqs": ("--max-num-seqs",),
        "max_num_batched_tokens": ("--max-num-batched-tokens",),
        "kv_cache_memory_bytes": ("--kv-cache-memory-bytes",),
        "extensible_kv_cache": ("--enable-extensible-kv-cache",),
        "gpu_memory_utilization": ("--gpu-memory-utilization",), "config_file": ("--config",),
        "dtype": ("--dtype",), "quantization": ("--quantization", "-q"),
        "lora": ("--enable-lora",), "max_loras": ("--max-loras",),
        "max_lora_rank": ("--max-lora-rank",), "lora_sharded": ("--fully-sharded-loras",),
        "cpu_offload": ("--cpu-offload-gb",), "trust_remote_code": ("--trust-remote-code",),
    },
    "sglang": {
        "model": ("--model-path", "--model"), "served_name": ("--served-model-name",),
        "tp": ("--tp-size", "--tensor-parallel-size"),
        "pp": ("--pp-size", "--pipeline-parallel-size"),
        "dp": ("--dp-size", "--data-parallel-size"),
        "attn_dp": ("--attn-dp-size", "--attention-data-parallel-size"),
        "dp_attention": ("--enable-dp-attention",),
        "ep": ("--ep-size", "--expert-parallel-size"),
        "expert_parallel": ("--enable-ep-moe", "--enable-deepep-moe"),
        "kv_cache_dtype": ("--kv-cache-dtype",), "max_model_len": ("--context-length",),
        "max_num_seqs": ("--max-running-requests",),
        "gpu_memory_utilization": ("--mem-fraction-static",), "config_file": ("--config",),
        "nnodes": ("--nnodes",), "dtype": ("--dtype",),
        "kv_tokens_cap": ("--max-total-tokens",), "quantization": ("--quantization",),
        "node_rank": ("--node-rank",), "prefill_chunk": ("--chunked-prefill-size",),
        "graph_batch": ("--cuda-graph-max-bs",), "page_size": ("--page-size",),
        "speculative": ("--speculative-algorithm",), "graph_off": ("--disable-cuda-graph",),
        "swa_ratio": ("--swa-full-tokens-ratio",), "cpu_offload": ("--cpu-offload-gb",),
        "trust_remote_code": ("--trust-remote-code",),
    },
    "trtllm": {
        "model": ("--model-path", "--model"), "served_name": ("--served-model-name",),
        "tp": ("--tensor_parallel_size", "--tp_size", "--tensor-parallel-size"),
        "pp": ("--pipeline_parallel_size", "--pp_size", "--pipeline-parallel-size"),
        "ep": ("--moe_expert_parallel_size", "--ep_size", "--expert-parallel-size"),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_model_len": ("--max_seq_len", "--max-seq-len"),
        "max_num_seqs": ("--max_batch_size", "--max-batch-size"),
        "max_num_batched_tokens": ("--max_num_tokens", "--max-num-tokens"),
        "gpu_memory_utilization": ("--free_gpu_memory_fraction",
                                   "--kv_cache_free_gpu_memory_fraction",
                                   "--free-gpu-memory-fraction"),
        "config_file": ("--config", "--extra_llm_api_options", "--extra-engine-args"),
    },
    "tgi": {
        "model": ("--model-id",), "served_name": ("--served-model-name",),
        "tp": ("--num-shard",), "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_model_len": ("--max-total-tokens",),
        "max_num_seqs": ("--max-batch-size", "--max-concurrent-requests"),
        "gpu_memory_utilization": ("--cuda-memory-fraction",), "dtype": ("--dtype",),
        "quantization": ("--quantize",),
    },
    "lmdeploy": {
        "served_name": ("--model-name",), "tp": ("--tp",), "dp": ("--dp",), "ep": ("--ep",),
        "backend": ("--backend",),
        "kv_cache_dtype": ("--quant-policy",), "max_model_len": ("--session-len",),
        "max_num_seqs": ("--max-batch-size",),
        "gpu_memory_utilization": ("--cache-max-entry-count",), "nnodes": ("--nnodes",),
        "dtype": ("--dtype",), "quantization": ("--model-format",),
    },
    "llamacpp": {
        "model": ("-hf", "-hfr", "--hf-repo", "-m", "--model"),
        "served_name": ("-a", "--alias"), "kv_cache_dtype": ("-ctk", "--cache-type-k"),
        "max_model_len": ("-c", "--ctx-size"), "max_num_seqs": ("-np", "--parallel"),
    },
}
"""Engine → ``EngineArgs`` field → the option spellings that set it (the last one given
wins); :mod:`.engine_command` adds the spellings of ``engines.toml``."""

INT_FIELDS = frozenset({"tp", "pp", "dp", "dp_local", "ep", "max_num_seqs", "max_model_len",
                        "max_num_batched_tokens", "kv_cache_memory_bytes", "kv_tokens_cap",
                        "nnodes", "attn_dp", "node_rank", "prefill_chunk", "graph_batch",
                        "page_size", "max_loras", "max_lora_rank"})
BOOL_FIELDS = frozenset({"dp_attention", "expert_parallel", "extensible_kv_cache",
                         "graph_off", "lora", "lora_sharded", "trust_remote_code"})
LMDEPLOY_QUANT_POLICY = {"0": "auto", "none": "auto", "4": "int4", "int4": "int4",
                         "8": "int8", "int8": "int8", "16": "fp8", "fp8": "fp8",
                         "17": "fp8_e5m2", "fp8_e5m2": "fp8_e5m2", "42": "turbo_quant",
                         "turbo_quant": "turbo_quant", "fp8_e4m3": "fp8"}
"""lmdeploy/cli/utils.py@1263d5cd ``--quant-policy`` choices (numbers and names; ``fp8_e4m3``
is an alias of ``fp8`` in the lmdeploy 0.18.0 wheel's ``ArgumentHelper.quant_policy``)."""

TABLE_FIELDS = {"model": "model", "tp": "tp", "pp": "pp", "dp": "dp",
                "kv_cache_dtype": "kv_cache_dtype", "max_model_len": "max_model_len",
                "max_num_seqs": "max_num_seqs",
                "gpu_memory_utilization": "gpu_memory_utilization", "config": "config_file"}
"""``engines.toml`` ``[engines.X.flags]`` key → the ``EngineArgs`` field its spellings set."""

TGI_ENV = {"NUM_SHARD": "--num-shard", "MAX_TOTAL_TOKENS": "--max-total-tokens",
           "MAX_BATCH_SIZE": "--max-batch-size",
           "MAX_CONCURRENT_REQUESTS": "--max-concurrent-requests",
           "KV_CACHE_DTYPE": "--kv-cache-dtype", "CUDA_MEMORY_FRACTION": "--cuda-memory-fraction",
           "DTYPE": "--dtype", "QUANTIZE": "--quantize"}
LLAMACPP_ENV = {"LLAMA_ARG_CTX_SIZE": "--ctx-size", "LLAMA_ARG_N_PARALLEL": "--parallel",
                "LLAMA_ARG_CACHE_TYPE_K": "--cache-type-k"}
"""Environment variables TGI and llama.cpp read as options → the option each stands for."""

HUMAN_READABLE = frozenset({"max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"})
"""vLLM fields its parser reads as ``human_readable_int`` (``25.6k``, ``1G``...)."""
PLAIN_INT_AT = {"0.8.5": frozenset({"max_num_batched_tokens"})}
"""vLLM versions whose parser reads these fields as a plain ``int`` (``scheduler_kwargs`` of
vllm/engine/arg_utils.py@v0.8.5 line 826; ``--max-model-len`` is ``human_readable_int``
there, line 477)."""
NO_AUTO_OR_TERA = frozenset({"0.8.5", "0.11.0"})
"""vLLM versions whose ``human_readable_int`` knows neither ``t``/``T`` (its multipliers stop
at ``g``/``G``: arg_utils.py@v0.8.5 lines 1676-1700, @v0.11.0 lines 1740-1772) nor ``auto``
for ``--max-model-len`` (``human_readable_int_or_auto`` from 0.33.0: arg_utils.py@v0.33.0
lines 404-406)."""

SHARED_OPTIONS = frozenset({"--model", "--dtype", "--quantization", "--host", "--port",
                            "--revision", "--tokenizer", "--trust-remote-code", "--seed",
                            "--api-key", "--served-model-name", "--log-level", "--device",
                            "--version", "--help", "--name", "--verbose", "--config"})
"""Options several engines share, or any program has (``--version``, ``--help``, and the
``name``/``version`` keys of a ``model:`` map read as options): they never say which engine
runs."""


def engine_of_options(names: list[str]) -> str | None:
    """The one engine of :data:`OPTION_TABLES` whose own option (one no other engine has, and
    not one of :data:`SHARED_OPTIONS`) appears in ``names`` (``--name`` or ``--name=value``);
    ``None`` when none does or the options point at two engines."""
    found: set[str] = set()
    owners = _option_owners()
    for raw in names[:MAX_OPTION_WORDS]:
        name = raw.split("=", 1)[0]
        engines = owners.get(name, ()) if name not in SHARED_OPTIONS else ()
        if len(engines) == 1:
            found.update(engines)
    return found.pop() if len(found) == 1 else None


MAX_OPTION_WORDS = 512
"""Words :func:`engine_of_options` reads (a real command has a few dozen)."""


@functools.cache
def _option_owners() -> dict[str, tuple[str, ...]]:
    """Every long option of :data:`OPTION_TABLES`, as each engine's parser accepts it
    written (``--trust_remote_code`` for vLLM, whose parser turns ``_`` into ``-``:
    :data:`GRAMMAR_RULES`) -> the engines that take it."""
    out: dict[str, list[str]] = {}
    for engine, table in OPTION_TABLES.items():
        names = {n for text in table.values() for n in text.split() if n.startswith("--")}
        if GRAMMAR_RULES.get(engine, (False,))[0]:
            names |= {"--" + n[2:].replace("-", "_") for n in names}
        for name in names:
            if engine not in out.setdefault(name, []):
                out[name].append(engine)
    return {name: tuple(engines) for name, engines in out.items()}
