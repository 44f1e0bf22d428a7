"""Which engine versions accept which options and values: data for the KV701/KV702 checks.

``cli_option_tables.OPTION_TABLES`` holds the union of every version below. This module says, per
engine, which versions the union was read from and which of its options each version lacks,
so that an option can be judged against the version a manifest pins (unpinned: the newest
version here) and a message can say "in vLLM 0.33.0, not in 0.8.5".

Read once from the engines' own artefacts (PyPI wheels, ``pip download --no-deps``), with
``ast`` and no engine imported; the union of each engine's versions equals ``OPTION_TABLES``
exactly:

- vLLM 0.8.5, 0.11.0, 0.33.0 and 0.34.0: option strings of the ``add_argument`` calls in
  ``vllm/engine/arg_utils.py``, ``vllm/entrypoints/cli/serve.py`` and
  ``vllm/entrypoints/openai/cli_args.py`` (0.8.5, 0.11.0) /
  ``vllm/entrypoints/common/cli_args.py`` (0.33.0, 0.34.0); ``FrontendArgs`` dataclass fields
  become ``--field-name`` options (0.11.0, 0.33.0, 0.34.0). Choices: ``CacheDType`` of
  ``vllm/config.py`` (0.8.5) / ``vllm/config/cache.py`` (0.11.0, 0.33.0, 0.34.0: unchanged);
  ``--dtype`` ``choices`` (0.8.5 ``arg_utils.py``) / ``ModelDType``
  (``vllm/config/model.py``). Parallel sizes: ``ParallelConfig`` fields are
  ``Field(default=1, ge=1)`` in 0.33.0 and 0.34.0 ``vllm/config/parallel.py`` (a plain
  ``int = 1`` in 0.11.0: not judged there). 0.34.0 adds seven options to 0.33.0's and
  removes none (the same ``ast`` read of both wheels, which gives 0.33.0's set exactly).
- SGLang 0.2.15, 0.3.6, 0.4.3.post2, 0.4.6.post1, 0.4.10.post1, 0.5.5.post3 and every
  release from 0.5.6 to 0.5.23: generated data,
  ``kvlint/engines/sglang_options.json`` (:mod:`kvlint.generators.sglang_options`: the
  ``add_argument`` calls of ``sglang/srt/server_args.py``, and the ``A[type, Arg(...)]``
  fields of ``ServerArgs`` (0.5.14-0.5.19) and of ``sglang/srt/arg_groups/fields/*.py``
  (0.5.20 on), each with the runs of releases that take it; an option a release declares
  with an action that stops the parse is refused there, its message kept). Options that only
  releases
  between two read ones had (``--disable-piecewise-cuda-graph``, 0.5.10-0.5.19) are known
  for that reason. Choices: the ``choices`` of ``--kv-cache-dtype`` release by release, and
  of ``--dtype`` (the same in every release read).
- LMDeploy 0.7.3 and 0.18.0: ``add_parser_api_server`` of ``lmdeploy/cli/serve.py`` and the
  ``ArgumentHelper`` methods it calls (``lmdeploy/cli/utils.py``). ``--dtype`` choices from
  ``ArgumentHelper.dtype``; ``--quant-policy`` is ``type=int, choices=[0, 4, 8]`` in 0.7.3.
- TGI (``launcher/src/main.rs``@db931fcf), TensorRT-LLM (``tensorrt_llm/commands/serve.py``
  @00209af1) and llama.cpp (``common/arg.cpp``): one source each, so no version history;
  choices from the launcher's clap ``ValueEnum``s (``Dtype``, ``KVCacheDtype``) and
  llama.cpp's ``kv_cache_types`` (``common/arg.cpp``@v0.5.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvlint.manifests.cli_option_tables import OPTION_TABLES, VLLM_EARLY, VLLM_EARLY_ONLY


def _sglang_table() -> dict[str, Any]:
    """``kvlint/engines/sglang_options.json`` (:mod:`kvlint.generators.sglang_options`)."""
    path = Path(__file__).resolve().parent.parent / "engines" / SGLANG_OPTIONS_FILE
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


SGLANG_OPTIONS_FILE = "sglang_options.json"
_SGLANG = _sglang_table()
_SGLANG_VERSIONS: tuple[str, ...] = tuple(_SGLANG["versions"])


def _sglang_absent() -> dict[str, str]:
    """Release → the options of the table that release does not declare."""
    index = {v: i for i, v in enumerate(_SGLANG_VERSIONS)}
    present: dict[str, set[str]] = {v: set() for v in _SGLANG_VERSIONS}
    for option, runs in _SGLANG["options"].items():
        for first, last in runs:
            for version in _SGLANG_VERSIONS[index[first]:index[last] + 1]:
                present[version].add(option)
    every = set(_SGLANG["options"])
    return {v: " ".join(sorted(every - present[v])) for v in _SGLANG_VERSIONS}


_VLLM_EARLY_VERSIONS = tuple(str(v) for v in VLLM_EARLY["versions"])

KINDS: dict[str, dict[str, dict[str, str]]] = {"vllm": {
    version: {option: VLLM_EARLY["kinds"].get(version, {}).get(option,
                                                               VLLM_EARLY["options"][option])
              for option in present}
    for version, present in VLLM_EARLY["present"].items()}}
"""Engine -> version -> option -> its kind in that release, where it differs by release and
kvlint read each one (vLLM 0.2.7-0.7.3: ``--enable-chunked-prefill`` a flag in 0.4.3,
``StoreBoolean`` with an optional True/False from 0.5.5); ``OPTION_TABLES`` holds the
latest kind."""

VERSIONS: dict[str, tuple[str, ...]] = {
    "vllm": (*_VLLM_EARLY_VERSIONS, "0.8.5", "0.11.0", "0.33.0", "0.34.0"),
    "sglang": _SGLANG_VERSIONS,
    "lmdeploy": ("0.7.3", "0.18.0"),
}
"""Engine → the versions ``OPTION_TABLES`` was read from, oldest first."""

REFUSED: dict[str, dict[str, dict[str, str]]] = {
    "sglang": {option: dict(by_release)
               for option, by_release in _SGLANG.get("refused", {}).items()},
}
"""Engine -> option -> release -> the message the release stops with: options a release
declares only to refuse them (SGLang's ``DeprecatedAction`` that raises, in 0.3.6 and
0.4.6.post1; a ``Deprecated...Action`` given an ``error_message``), absent from
:data:`ABSENT`'s accepted sets of those releases."""

ABSENT: dict[str, dict[str, str]] = {
    "sglang": _sglang_absent(),
    "vllm": {
        "0.8.5": """
            --cache-aware-admission-threshold --cache-aware-admission-window
            --checkpoint-prepare-on-startup --enable-extensible-kv-cache
            --headless-client-handshake-address --max-num-inflight-kv-loads
            --shuffle-safetensors-files
            --aggregate-engine-logging --all2all-backend --allow-deprecated-quantization
            --allowed-media-domains --anthropic-disabled-thinking-effort
            --api-server-count --async-scheduling --attention-backend --attention-config
            --aux-output-config --cohere-format --cohere-is-reasoning-model --convert
            --cp-kv-cache-interleave-size --cpu-distributed-timeout-seconds
            --cpu-offload-params --cuda-graph-sizes --cudagraph-capture-sizes
            --cudagraph-metrics --custom-histogram-buckets --data-parallel-address
            --data-parallel-backend --data-parallel-external-lb
            --data-parallel-hybrid-lb --data-parallel-multi-port-external-lb
            --data-parallel-rank --data-parallel-rpc-port --data-parallel-size-local
            --data-parallel-start-rank --data-parallel-supervisor-port
            --dbo-decode-token-threshold --dbo-prefill-token-threshold
            --dcp-comm-backend --dcp-kv-cache-interleave-size --dcp-q-replicate
            --decode-context-parallel-size --default-chat-template-kwargs
            --default-mm-loras --device-ids --device-memory-utilization
            --diffusion-config --disable-access-log-for-endpoints
            --disable-hybrid-kv-cache-manager --disable-nccl-for-dp-synchronization
            --distributed-timeout-seconds --dp-supervisor-probe-failure-threshold
            --dp-supervisor-probe-interval-s --dp-supervisor-probe-timeout-s
            --dp-sync-interval --ec-manager-config --ec-transfer-config
            --elastic-ep-max-dp-size --enable-batch-sharded-sampling
            --enable-cumem-allocator --enable-dbo --enable-elastic-ep
            --enable-ep-weight-filter --enable-eplb --enable-fault-tolerance
            --enable-flash-late-interaction --enable-flashinfer-autotune
            --enable-force-include-usage --enable-hc-sp --enable-layerwise-nvtx-tracing
            --enable-log-deltas --enable-log-outputs --enable-log-requests
            --enable-logging-iteration-details --enable-mamba-cache-stochastic-rounding
            --enable-mamba-shared-prefix-checkpoint --enable-mfu-metrics
            --enable-mixed-moe-lora-format --enable-mm-embeds --enable-moe-shared-loras
            --enable-multimodal-encoder-data-parallel --enable-nccl-comm-suspend
            --enable-offline-docs --enable-per-request-metrics --enable-prompt-embeds
            --enable-return-routed-experts --enable-scale-out --enable-shm-tensor-arena
            --enable-tokenizer-info-endpoint --enable-tower-connector-lora
            --enable-trace-replay --engram-config --eplb-config --eplb-log-balancedness
            --eplb-step-interval --eplb-window-size
            --exclude-tools-when-tool-choice-none --expert-placement-strategy
            --fail-on-environ-validation --fault-tolerance-config --fingerprint-mode
            --fingerprint-value --gdn-prefill-backend --grpc --grpc-port
            --h11-max-header-count --h11-max-incomplete-event-size --headless
            --interleave-mm-strings --io-processor-plugin --ir-op-priority
            --jit-monitor-mode --jit-monitor-verbose --kda-decode-backend
            --kda-prefill-backend --kernel-config --kv-cache-dtype-skip-layers
            --kv-cache-memory-bytes --kv-cache-metrics --kv-cache-metrics-sample
            --kv-events-config --kv-offloading-backend --kv-offloading-size
            --kv-sharing-fast-prefill --language-model-only --linear-backend
            --log-config-file --log-error-stack --log-level --logging-config
            --logits-processors --logprobs-mode --long-prefill-token-threshold-adaptive
            --lora-target-modules --mamba-backend --mamba-block-size --mamba-cache-dtype
            --mamba-cache-mode --mamba-cache-philox-rounds --mamba-ssm-cache-dtype
            --mamba-ssu-algorithm --master-addr --master-port
            --max-cudagraph-capture-size --max-lora-cls-labels --max-num-active-seqs
            --max-num-queued-reqs --max-num-queued-tokens --max-num-scheduled-tokens
            --media-io-kwargs --mm-device-do-normalize --mm-encoder-attn-backend
            --mm-encoder-attn-dtype --mm-encoder-fp8-scale-path
            --mm-encoder-fp8-scale-save-margin --mm-encoder-fp8-scale-save-path
            --mm-encoder-only --mm-encoder-tp-mode --mm-hasher-algorithm
            --mm-ipc-gpu-memory-gb --mm-processor-cache-gb --mm-processor-cache-type
            --mm-processor-device --mm-shm-cache-max-object-size-mb --mm-tensor-ipc
            --model-class-overrides --moe-backend --monokernel --nnodes --node-rank
            --num-redundant-experts --numa-bind --numa-bind-cpus --numa-bind-nodes
            --offload-backend --offload-group-size --offload-num-in-group
            --offload-params --offload-prefetch-step --optimization-level
            --override-attention-dtype --per-request-spec-decode-metrics
            --performance-mode --pooler-config --prefill-context-parallel-size
            --prefill-schedule-interval --prefix-cache-retention-interval
            --prefix-match-unit --profiler-config --pt-load-map-location
            --quantization-config --reasoning-config --reasoning-effort-map
            --reasoning-parser-plugin --renderer-num-workers --replayssm-buffer-len
            --return-sampling-mask --runner --safetensors-load-strategy
            --safetensors-prefetch-block-size --safetensors-prefetch-num-threads
            --scheduler-reserve-full-isl --shutdown-timeout --skip-mm-profiling
            --sleep-mode-backend --sleep-mode-offload-cudagraph
            --sleep-preserve-parameter-names --sparse-indexer-topk-backend --spec-method
            --spec-model --spec-tokens --specialize-active-lora
            --sse-keep-alive-interval --ssl-ciphers --stream-interval
            --structured-outputs-config --swa-bounded-replay --tokens-only --tool-server
            --tool-strict-level --trust-request-chat-template --trust-request-mm-kwargs
            --ubatch-size --uds --use-fp64-gumbel --use-replayssm --video-pruning-method
            --video-pruning-rate --watchdog-config --watermark --watermark-config
            --weight-transfer-config -ac -asc -cc -dc -dcp -dpa -dpb -dpe -dph -dpl -dpm
            -dpn -dpp -dpr -ep -n -pcp -r -sc
        """,
        "0.11.0": """
            --cache-aware-admission-threshold --cache-aware-admission-window
            --checkpoint-prepare-on-startup --enable-extensible-kv-cache
            --headless-client-handshake-address --max-num-inflight-kv-loads
            --shuffle-safetensors-files
            --aggregate-engine-logging --all2all-backend --allow-deprecated-quantization
            --anthropic-disabled-thinking-effort --attention-backend --attention-config
            --aux-output-config --cohere-format --cohere-is-reasoning-model
            --cp-kv-cache-interleave-size --cpu-distributed-timeout-seconds
            --cpu-offload-params --cudagraph-capture-sizes --cudagraph-metrics
            --custom-histogram-buckets --data-parallel-external-lb
            --data-parallel-multi-port-external-lb --data-parallel-supervisor-port
            --dcp-comm-backend --dcp-kv-cache-interleave-size --dcp-q-replicate
            --default-chat-template-kwargs --device --device-ids
            --device-memory-utilization --diffusion-config
            --disable-access-log-for-endpoints --disable-async-output-proc
            --disable-nccl-for-dp-synchronization --distributed-timeout-seconds
            --dp-supervisor-probe-failure-threshold --dp-supervisor-probe-interval-s
            --dp-supervisor-probe-timeout-s --dp-sync-interval --ec-manager-config
            --ec-transfer-config --elastic-ep-max-dp-size
            --enable-batch-sharded-sampling --enable-cumem-allocator --enable-elastic-ep
            --enable-ep-weight-filter --enable-fault-tolerance
            --enable-flash-late-interaction --enable-flashinfer-autotune --enable-hc-sp
            --enable-layerwise-nvtx-tracing --enable-log-deltas
            --enable-logging-iteration-details --enable-mamba-cache-stochastic-rounding
            --enable-mamba-shared-prefix-checkpoint --enable-mfu-metrics
            --enable-mixed-moe-lora-format --enable-mm-embeds --enable-moe-shared-loras
            --enable-nccl-comm-suspend --enable-offline-docs
            --enable-per-request-metrics --enable-prompt-adapter --enable-reasoning
            --enable-return-routed-experts --enable-scale-out --enable-shm-tensor-arena
            --enable-tower-connector-lora --enable-trace-replay --engram-config
            --fail-on-environ-validation --fault-tolerance-config --fingerprint-mode
            --fingerprint-value --gdn-prefill-backend --grpc --grpc-port
            --guided-decoding-backend --ir-op-priority --jit-monitor-mode
            --jit-monitor-verbose --kda-decode-backend --kda-prefill-backend
            --kernel-config --kv-cache-dtype-skip-layers --kv-cache-metrics
            --kv-cache-metrics-sample --kv-offloading-backend --kv-offloading-size
            --language-model-only --linear-backend --log-level --logging-config
            --long-lora-scaling-factors --long-prefill-token-threshold-adaptive
            --lora-target-modules --mamba-backend --mamba-block-size --mamba-cache-mode
            --mamba-cache-philox-rounds --mamba-ssu-algorithm --master-addr
            --master-port --max-cudagraph-capture-size --max-lora-cls-labels
            --max-num-active-seqs --max-num-queued-reqs --max-num-queued-tokens
            --max-num-scheduled-tokens --max-prompt-adapter-token --max-prompt-adapters
            --max-seq-len-to-capture --mm-device-do-normalize --mm-encoder-attn-backend
            --mm-encoder-attn-dtype --mm-encoder-fp8-scale-path
            --mm-encoder-fp8-scale-save-margin --mm-encoder-fp8-scale-save-path
            --mm-encoder-only --mm-hasher-algorithm --mm-ipc-gpu-memory-gb
            --mm-processor-device --mm-tensor-ipc --model-class-overrides --moe-backend
            --monokernel --multi-step-stream-outputs --nnodes --node-rank
            --num-scheduler-steps --numa-bind --numa-bind-cpus --numa-bind-nodes
            --offload-backend --offload-group-size --offload-num-in-group
            --offload-params --offload-prefetch-step --optimization-level
            --override-neuron-config --per-request-spec-decode-metrics
            --performance-mode --preemption-mode --prefill-context-parallel-size
            --prefill-schedule-interval --prefix-cache-retention-interval
            --prefix-match-unit --profiler-config --prompt-adapters
            --qlora-adapter-name-or-path --quantization-config --reasoning-config
            --reasoning-effort-map --reasoning-parser-plugin --renderer-num-workers
            --replayssm-buffer-len --return-sampling-mask
            --safetensors-prefetch-block-size --safetensors-prefetch-num-threads
            --scheduler-delay-factor --scheduler-reserve-full-isl --shutdown-timeout
            --sleep-mode-backend --sleep-mode-offload-cudagraph
            --sleep-preserve-parameter-names --sparse-indexer-topk-backend --spec-method
            --spec-model --spec-tokens --specialize-active-lora
            --sse-keep-alive-interval --ssl-ciphers --stream-interval
            --swa-bounded-replay --tokenizer-pool-extra-config --tokenizer-pool-size
            --tokenizer-pool-type --tokens-only --tool-strict-level
            --trust-request-mm-kwargs --ubatch-size --use-fp64-gumbel --use-replayssm
            --use-v2-block-manager --video-pruning-method --watchdog-config --watermark
            --watermark-config --weight-transfer-config -ac -cc -dc -dpe -dph -dpm -ep
            -n -pcp -r -sc
        """,
        "0.33.0": """
            --cache-aware-admission-threshold --cache-aware-admission-window
            --checkpoint-prepare-on-startup --enable-extensible-kv-cache
            --headless-client-handshake-address --max-num-inflight-kv-loads
            --shuffle-safetensors-files
            --calculate-kv-scales --cuda-graph-sizes --device
            --disable-async-output-proc --disable-frontend-multiprocessing
            --disable-log-requests --disable-mm-preprocessor-cache --enable-lora-bias
            --enable-multimodal-encoder-data-parallel --enable-prompt-adapter
            --enable-reasoning --eplb-log-balancedness --eplb-step-interval
            --eplb-window-size --guided-decoding-backend --logits-processor-pattern
            --long-lora-scaling-factors --lora-extra-vocab-size
            --max-long-partial-prefills --max-num-partial-prefills
            --max-prompt-adapter-token --max-prompt-adapters --max-seq-len-to-capture
            --multi-step-stream-outputs --num-lookahead-slots --num-redundant-experts
            --num-scheduler-steps --override-attention-dtype --override-neuron-config
            --override-pooler-config --preemption-mode --prompt-adapters
            --qlora-adapter-name-or-path --rope-scaling --rope-theta
            --scheduler-delay-factor --swap-space --task --tokenizer-pool-extra-config
            --tokenizer-pool-size --tokenizer-pool-type --use-v2-block-manager -O
        """,
        "0.34.0": """
            --calculate-kv-scales --cuda-graph-sizes --device
            --disable-async-output-proc --disable-frontend-multiprocessing
            --disable-log-requests --disable-mm-preprocessor-cache --enable-lora-bias
            --enable-multimodal-encoder-data-parallel --enable-prompt-adapter
            --enable-reasoning --eplb-log-balancedness --eplb-step-interval
            --eplb-window-size --guided-decoding-backend --logits-processor-pattern
            --long-lora-scaling-factors --lora-extra-vocab-size
            --max-long-partial-prefills --max-num-partial-prefills
            --max-prompt-adapter-token --max-prompt-adapters --max-seq-len-to-capture
            --multi-step-stream-outputs --num-lookahead-slots --num-redundant-experts
            --num-scheduler-steps --override-attention-dtype --override-neuron-config
            --override-pooler-config --preemption-mode --prompt-adapters
            --qlora-adapter-name-or-path --rope-scaling --rope-theta
            --scheduler-delay-factor --swap-space --task --tokenizer-pool-extra-config
            --tokenizer-pool-size --tokenizer-pool-type --use-v2-block-manager -O
        """,
    },
    "lmdeploy": {
        "0.7.3": """
            --allow-terminate-by-client --allowed-media-domains --async --cp
            --cudagraph-capture-batch-sizes --disable-metrics --dist-init-addr
            --distributed-executor-backend --dllm-block-length
            --dllm-confidence-threshold --dllm-denoising-steps --dllm-unmasking-strategy
            --dp --empty-init --enable-abort-handling --enable-eplb --enable-microbatch
            --enable-return-routed-experts --ep --generation-config --hf-overrides
            --kernel-block-size --kv-transfer-config --language-model-only
            --logprobs-mode --migration-backend --moe-a2a-backend --nnodes --node-rank
            --num-gpu-blocks --piecewise-cudagraph-max-tokens
            --prefix-cache-decode-state-interval --prefix-cache-state-budget --role
            --speculative-algorithm --speculative-dflash-block-size
            --speculative-draft-model --speculative-num-draft-tokens --trust-remote-code
        """,
        "0.18.0": """

        """,
    },
}
"""Engine → version → the options of ``OPTION_TABLES[engine]`` that version does not have."""


def _with_early_vllm_absent() -> None:
    """vLLM's releases before 0.8.5 (:data:`~.cli_option_tables.VLLM_EARLY`): each lacks
    the union's options it does not list; the later releases lack the options only they
    had."""
    vllm = ABSENT["vllm"]
    for version in vllm:
        vllm[version] += " " + " ".join(sorted(VLLM_EARLY_ONLY))
    union = {name for text in OPTION_TABLES["vllm"].values() for name in text.split()}
    for version, present in VLLM_EARLY["present"].items():
        vllm[str(version)] = " ".join(sorted(union - set(present)))


_with_early_vllm_absent()

CHOICES: dict[str, dict[str, dict[str, str]]] = {
    "vllm": {
        "--kv-cache-dtype": {
            "0.8.5": "auto fp8 fp8_e4m3 fp8_e5m2",
            "0.11.0": "auto bfloat16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc",
            "0.33.0": """auto float16 bfloat16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla
                         nvfp4_ds_mla turboquant_k8v4 turboquant_4bit_nc turboquant_k3v4_nc
                         turboquant_3bit_nc octave_k3v4 octave_k3v3 octave_k3v3_compact
                         ultraquant_4bit int4_per_token_head int8_per_token_head
                         fp8_per_token_head nvfp4 nvfp4_4over6""",
            "0.34.0": """auto float16 bfloat16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla
                         nvfp4_ds_mla turboquant_k8v4 turboquant_4bit_nc turboquant_k3v4_nc
                         turboquant_3bit_nc octave_k3v4 octave_k3v3 octave_k3v3_compact
                         ultraquant_4bit int4_per_token_head int8_per_token_head
                         fp8_per_token_head nvfp4 nvfp4_4over6""",
        },
        "--dtype": {"*": "auto half float16 bfloat16 float float32"},
    },
    "sglang": {
        "--kv-cache-dtype": dict(_SGLANG["choices"]["--kv-cache-dtype"]),
        "--dtype": {"*": "auto half float16 bfloat16 float float32"},
    },
    "lmdeploy": {
        "--dtype": {"*": "auto float16 bfloat16"},
        "--quant-policy": {
            "0.7.3": "0 4 8",
            "0.18.0": "0 4 8 16 17 42 none int4 int8 fp8 fp8_e5m2 turbo_quant fp8_e4m3",
        },
    },
    "tgi": {
        "--dtype": {"*": "float16 bfloat16"},
        "--kv-cache-dtype": {"*": "fp8_e4m3fn fp8_e5m2"},
    },
    "llamacpp": {
        "--cache-type-k": {"*": "f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1"},
        "--cache-type-v": {"*": "f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1"},
        "-ctk": {"*": "f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1"},
        "-ctv": {"*": "f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1"},
    },
}
"""Engine → canonical option → version (``*``: every version kvlint knows) → the values the
engine's parser accepts. A version missing from the mapping is not judged."""
CHOICES["vllm"]["--kv-cache-dtype"].update(
    {str(v): " ".join(c) for v, c in VLLM_EARLY["kv_cache_dtype"].items()})

CASELESS = frozenset({("lmdeploy", "--quant-policy")})
"""Options whose parser lower-cases the value before the check (LMDeploy 0.18.0
``ArgumentHelper.quant_policy._parse``)."""

POSITIVE: dict[str, dict[str, str]] = {
    "vllm": {"0.33.0": """--tensor-parallel-size -tp --pipeline-parallel-size -pp
                          --data-parallel-size -dp""",
             "0.34.0": """--tensor-parallel-size -tp --pipeline-parallel-size -pp
                          --data-parallel-size -dp"""},
}
"""Engine → version → options whose value must be at least 1 (vLLM 0.33.0 and 0.34.0
``vllm/config/parallel.py`` ``ParallelConfig``: ``Field(default=1, ge=1)``, lines 140-147
and 148-155)."""
