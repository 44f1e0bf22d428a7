"""Which engine versions accept which options and values: data for the KV701/KV702 checks.

``cli_options.OPTION_TABLES`` holds the union of every version below. This module says, per
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
- SGLang 0.4.6.post1, 0.5.5.post3 and 0.5.23: ``add_argument`` calls of
  ``sglang/srt/server_args.py`` (0.4.6.post1, 0.5.5.post3); ``A[type, Arg(...)]`` and
  ``A[type, "help"]`` fields of ``sglang/srt/arg_groups/fields/*.py`` (``cli_name``,
  ``aliases``, ``no_cli``) plus ``server_args.py`` (0.5.23). Choices: the ``choices`` of
  ``--kv-cache-dtype`` and ``--dtype``.
- LMDeploy 0.7.3 and 0.18.0: ``add_parser_api_server`` of ``lmdeploy/cli/serve.py`` and the
  ``ArgumentHelper`` methods it calls (``lmdeploy/cli/utils.py``). ``--dtype`` choices from
  ``ArgumentHelper.dtype``; ``--quant-policy`` is ``type=int, choices=[0, 4, 8]`` in 0.7.3.
- TGI (``launcher/src/main.rs``@db931fcf), TensorRT-LLM (``tensorrt_llm/commands/serve.py``
  @00209af1) and llama.cpp (``common/arg.cpp``): one source each, so no version history;
  choices from the launcher's clap ``ValueEnum``s (``Dtype``, ``KVCacheDtype``) and
  llama.cpp's ``kv_cache_types`` (``common/arg.cpp``@v0.5.0).
"""

from __future__ import annotations

VERSIONS: dict[str, tuple[str, ...]] = {
    "vllm": ("0.8.5", "0.11.0", "0.33.0", "0.34.0"),
    "sglang": ("0.4.6.post1", "0.5.5.post3", "0.5.23"),
    "lmdeploy": ("0.7.3", "0.18.0"),
}
"""Engine → the versions ``OPTION_TABLES`` was read from, oldest first."""

ABSENT: dict[str, dict[str, str]] = {
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
    "sglang": {
        "0.4.6.post1": """
            --abort-on-priority-when-disabled --admin-api-key --allowed-media-domains
            --asr-max-buffer-seconds --asr-max-concurrent-sessions
            --attention-context-parallel-size --attention-data-parallel-size
            --attn-cp-size --attn-dp-size --batch-notify-size --bf16-gemm-backend
            --boundary-reduction --bucket-e2e-request-latency
            --bucket-inter-token-latency --bucket-time-to-first-token --c128-page-size
            --checkpoint-engine-wait-weights-before-ready --collect-tokens-histogram
            --config --constrained-json-disable-any-whitespace
            --constrained-json-max-whitespace-cnt --context-bucket --cp-strategy
            --crash-dump-folder --cuda-graph-backend-decode --cuda-graph-backend-prefill
            --cuda-graph-bs-decode --cuda-graph-bs-prefill --cuda-graph-config
            --cuda-graph-max-bs-decode --cuda-graph-max-bs-prefill
            --cuda-graph-max-seq-len-prefill --cuda-graph-prefill-max-context
            --custom-weight-loader --dcp-comm-backend --dcp-replicate-q-proj --dcp-size
            --debug-cuda-graph --debug-tensor-dump-layers --decode-attention-backend
            --decode-context-parallel-size --decoupled-spec-bind-endpoint
            --decoupled-spec-connect-endpoints --decoupled-spec-rank
            --decoupled-spec-role --decrypted-config-file --decrypted-draft-config-file
            --deepep-config --deepep-dispatcher-output-dtype --deepep-v2-mode
            --default-chat-template-kwargs --default-priority-value
            --detokenizer-worker-num --disable-aiter-allreduce-fusion-in-decode
            --disable-aiter-allreduce-fusion-in-prefill --disable-attn-tp-gather
            --disable-decode-cuda-graph --disable-flashinfer-autotune
            --disable-flashinfer-cutlass-moe-fp4-allgather --disable-hybrid-swa-memory
            --disable-prefill-cuda-graph --disable-priority-preemption
            --disable-shared-experts-fusion --disable-tokenizer-batch-decode
            --disaggregation-decode-allocation-policy --disaggregation-decode-dp
            --disaggregation-decode-enable-offload-kvcache
            --disaggregation-decode-enable-radix-cache
            --disaggregation-decode-extra-slots
            --disaggregation-decode-host-receive-threshold
            --disaggregation-decode-polling-interval
            --disaggregation-decode-retraction-backup --disaggregation-decode-tp
            --disaggregation-enable-kv-checksum --disaggregation-prefill-pp
            --dllm-algorithm --dllm-algorithm-config --dllm-fdfo --dsa-decode-backend
            --dsa-paged-mqa-logits-backend --dsa-prefill-backend --dsa-topk-backend
            --dsa-triton-union --dsv4-attn-backend --dsv4-prefill-backend --dwdp-size
            --dynamic-batch-tokenizer-batch-size --dynamic-batch-tokenizer-batch-timeout
            --elastic-ep-backend --elastic-ep-initial-size --elastic-ep-join-mode
            --elastic-ep-join-rank-offset --elastic-ep-scale-timeout
            --enable-adaptive-dispatch-to-encoder --enable-aiter-allreduce-fusion
            --enable-amd-monokernel --enable-attn-tp-input-scattered
            --enable-broadcast-mm-inputs-process --enable-cp-decode-attn-tp
            --enable-cudagraph-gc --enable-decoder-swa-bounded-replay
            --enable-deepseek-v4-fp4-indexer --enable-dense-mlp-attn-tp
            --enable-deterministic-inference
            --enable-dp-attention-local-control-broadcast --enable-dp-lm-head
            --enable-draft-weights-cpu-backup --enable-dsa-cache-layer-split
            --enable-dsa-fused-indexer --enable-dynamic-batch-tokenizer
            --enable-dynamic-chunking --enable-elastic-expert-backup
            --enable-encoder-swa-bounded-replay --enable-eplb
            --enable-expert-distribution-metrics --enable-flashinfer-allreduce-fusion
            --enable-flexkv --enable-forward-pass-metrics --enable-fp32-lm-head
            --enable-fused-moe-sum-all-reduce --enable-fused-qk-norm-rope
            --enable-hicache --enable-hisparse --enable-http-worker-reuseport
            --enable-http2 --enable-int8-mamba-checkpoint --enable-kv-cache-sharding
            --enable-layernorm-sp --enable-layerwise-nvtx-marker --enable-lean-attention
            --enable-linear-replayssm --enable-linear-replayssm-spec
            --enable-linker-mla-dedup --enable-lmcache --enable-lora
            --enable-lora-overlap-loading --enable-mamba-cache-stochastic-rounding
            --enable-megamoe-for-layernorm-sp --enable-metrics-for-all-schedulers
            --enable-mfu-metrics --enable-mis --enable-mm-global-cache --enable-mscclpp
            --enable-multi-layer-eagle --enable-nvidia-megakernel
            --enable-page-major-kv-layout --enable-paged-experts --enable-pd-role-switch
            --enable-pdmux --enable-piecewise-cuda-graph
            --enable-precise-embedding-interpolation --enable-prefill-cp
            --enable-prefill-delayer --enable-prefix-mm-cache
            --enable-priority-scheduling --enable-profile-cuda-graph
            --enable-quant-communications --enable-request-time-stats-logging
            --enable-response-store --enable-return-aux-hidden-states
            --enable-return-hidden-states --enable-return-indexer-topk
            --enable-return-routed-experts --enable-scattered-sconv
            --enable-session-radix-cache --enable-shared-experts-attn-tp
            --enable-single-batch-overlap --enable-ssl-refresh
            --enable-streaming-session --enable-strict-thinking --enable-symm-mem
            --enable-tf32-matmul --enable-torch-compile-debug-mode
            --enable-torch-symm-mem --enable-tp-lm-head-all-to-all --enable-trace
            --enable-two-batch-overlap --enable-unified-cache-external-linker
            --enable-unified-memory --enable-w4a4-mxfp4-megamoe --enable-waterfill
            --enable-watermark --enable-weights-cpu-backup --encoder-bootstrap-port
            --encoder-only --encoder-register-urls --encoder-transfer-backend
            --encoder-urls --enforce-disable-flashinfer-allreduce-fusion
            --enforce-shared-experts-fusion --engine-info-bootstrap-port --ep
            --ep-dispatch-algorithm --ep-num-redundant-experts --eplb-algorithm
            --eplb-min-rebalancing-utilization-threshold
            --eplb-rebalance-layers-per-chunk --eplb-rebalance-num-iterations
            --expert-balancedness-report-mode --expert-distribution-recorder-buffer-size
            --expert-distribution-recorder-mode --experts-shared-outer-loras
            --export-metrics-to-file --export-metrics-to-file-dir --extra-metric-labels
            --fastapi-root-path --flashinfer-a2a-dispatch-type
            --flashinfer-allreduce-fusion-backend --flashinfer-autotune-skip-ops
            --flashinfer-mxfp4-moe-precision --flexkv-config-file --forward-hooks
            --forward-pass-metrics-ipc-name --forward-pass-metrics-worker-id
            --fp4-gemm-backend --fp8-gemm-backend --fuseep-mode --gated-launch-port
            --gc-threshold --gc-warning-threshold-secs --generation-tokens-buckets
            --grpc-http-sidecar-port --grpc-mode --grpc-port
            --grpc-response-timeout-secs --hf-chat-template-name
            --hicache-host-memory-fraction --hicache-host-memory-mode
            --hicache-io-backend --hicache-mem-layout --hicache-storage-backend
            --hicache-storage-backend-extra-config --hicache-storage-prefetch-policy
            --hicache-storage-prefetch-retry-max-attempts
            --hicache-storage-prefetch-retry-poll-interval
            --hierarchical-sparse-attention-extra-config --hisparse-config
            --http2-initial-connection-window-size --http2-max-concurrent-streams
            --hybrid-kvcache-ratio --image-processor-backend
            --incremental-streaming-output --init-expert-location --int8-mamba-ckpt-size
            --keep-mm-feature-on-device --kt-cpuinfer
            --kt-max-deferred-experts-per-token --kt-method --kt-num-gpu-experts
            --kt-threadpool-count --kt-weight-path --kv-canary --kv-canary-real-data
            --kv-canary-sweep-interval --kv-events-config --language-model-only
            --language-only --limit-mm-data-per-request --linear-attn-backend
            --linear-attn-decode-backend --linear-attn-prefill-backend
            --linear-attn-verify-backend --linear-replayssm-cache-len
            --lmcache-config-file --load-publish-endpoint
            --load-snapshot-publish-interval --load-watch-interval --log-requests-format
            --log-requests-target --lora-drain-wait-threshold --lora-eviction-policy
            --lora-strict-loading --lora-target-modules --lora-use-virtual-experts
            --mamba-backend --mamba-cache-philox-rounds --mamba-full-memory-ratio
            --mamba-max-states-per-path --mamba-radix-cache-strategy --mamba-ssm-dtype
            --mamba-track-interval --max-ep-size --max-loaded-loras
            --max-lora-chunk-size --max-lora-rank --max-mamba-cache-size
            --max-queued-requests --media-url-max-file-size-mb --min-free-slots-delay
            --mlx-enable-sampling --mm-attention-backend --mm-enable-dp-encoder
            --mm-feature-transport --mm-global-cache-backend --mm-io-worker-num
            --mm-max-concurrent-calls --mm-per-request-timeout
            --mm-preprocess-cache-size-mb --mm-process-config --mm-processor-worker-num
            --model --model-checksum --model-config-parser --model-impl
            --model-loader-extra-config --modelexpress-config
            --modelopt-checkpoint-restore-path --modelopt-checkpoint-save-path
            --modelopt-export-path --modelopt-quant --moe-a2a-backend
            --moe-data-parallel-size --moe-dp-size --moe-runner-backend
            --monokernel-backend --mooncake-ib-device --msprobe-dump-config
            --multi-item-scoring-delimiter --nccl-port --nsa-decode-backend
            --nsa-prefill-backend --num-reserved-decode-tokens --numa-node
            --offload-group-size --offload-mode --offload-num-in-group
            --offload-prefetch-step --optimistic-prefill-attempts --otlp-service-name
            --otlp-traces-endpoint --paged-experts-num-resident --pdmux-config-path
            --piecewise-cuda-graph-compiler --piecewise-cuda-graph-max-tokens
            --piecewise-cuda-graph-tokens --pipeline-parallel-size --ple-offload-backend
            --ple-offload-dir --ple-offload-embedding --pp-async-batch-depth
            --pp-max-micro-batch-size --pp-size --pre-warm-nccl
            --preferred-sampling-params --prefill-attention-backend
            --prefill-decode-interval --prefill-decode-interval-min-bs
            --prefill-delayer-forward-passes-buckets --prefill-delayer-max-delay-ms
            --prefill-delayer-max-delay-passes --prefill-delayer-queue-min-ratio
            --prefill-delayer-token-usage-low-watermark
            --prefill-delayer-wait-seconds-buckets --prefill-kv-cache-dequant-dtype
            --prefill-max-requests --prefill-only-disable-kv-cache
            --prefill-round-robin-balance --priority-scheduling-preemption-threshold
            --prompt-tokens-buckets --qsa-indexer-dtype --quantize-and-serve
            --radix-cache-backend --radix-eviction-policy --radix-eviction-policy-config
            --remote-instance-weight-loader-backend
            --remote-instance-weight-loader-seed-instance-ip
            --remote-instance-weight-loader-seed-instance-service-port
            --remote-instance-weight-loader-send-weights-group-ports
            --remote-instance-weight-loader-start-seed-via-transfer-engine
            --retraction-policy --return-aux-hidden-state-layer-ids
            --return-hidden-states-mode --return-input-ids --return-output-ids
            --rl-on-policy-target --rl-quant-profile --sampling-defaults
            --sampling-mask-max-tokens --schedule-low-priority-values-first
            --scheduler-recv-interval --shared-experts-tp-size --sidecar --sidecar-args
            --skip-server-warmup --sleep-on-idle --sm-group-num --smg-grpc-mode
            --smg-http-sidecar-port --soft-watchdog-timeout --spec-trace-dir
            --speculative-adaptive --speculative-adaptive-config
            --speculative-attention-mode --speculative-dflash-block-size
            --speculative-domino-candidate-pool-size
            --speculative-draft-attention-backend --speculative-draft-kv-cache-dtype
            --speculative-draft-load-format --speculative-draft-model
            --speculative-draft-model-quantization --speculative-draft-model-revision
            --speculative-draft-sink-size --speculative-draft-window-size
            --speculative-dsa-topk-backend
            --speculative-dspark-align-verify-tokens-to-graph-tier
            --speculative-dspark-block-size --speculative-dspark-confidence-sts-path
            --speculative-dspark-sps-table-path --speculative-enable-w4a4-mxfp4-megamoe
            --speculative-moe-a2a-backend --speculative-moe-runner-backend
            --speculative-ngram-branch-length --speculative-ngram-capacity
            --speculative-ngram-external-corpus-max-tokens
            --speculative-ngram-external-corpus-path
            --speculative-ngram-external-sam-budget --speculative-ngram-match-type
            --speculative-ngram-max-bfs-breadth
            --speculative-ngram-max-match-window-size --speculative-ngram-max-trie-depth
            --speculative-ngram-min-bfs-breadth
            --speculative-ngram-min-match-window-size
            --speculative-use-block-verification --speculative-use-rejection-sampling
            --ssl-ca-certs --ssl-certfile --ssl-keyfile --ssl-keyfile-password
            --startup-weight-load-mode --stream-response-default-include-usage
            --strip-thinking-cache --swa-full-tokens-ratio --swa-prefix-tails
            --tbo-token-distribution-threshold --tokenizer-backend
            --tokenizer-metrics-allowed-custom-labels
            --tokenizer-metrics-custom-labels-header --tokenizer-worker-num
            --tool-server --trace-modules --triton-attention-split-tile-size
            --trust-mm-content-hashes --trust-request-chat-template
            --unified-cache-external-linker-backend
            --unified-cache-external-linker-config --uno-lora-path --use-ray
            --uvicorn-access-log-exclude-prefixes --watermark-config --weight-cache-mode
            --weight-cache-socket --weight-cache-timeout --weight-loader-disable-mmap
            --weight-loader-drop-cache-after-load --weight-loader-prefetch-checkpoints
            --weight-loader-prefetch-num-threads --weight-version
        """,
        "0.5.5.post3": """
            --admin-api-key --allowed-media-domains --asr-max-buffer-seconds
            --asr-max-concurrent-sessions --attention-context-parallel-size
            --attention-data-parallel-size --attn-cp-size --attn-dp-size
            --batch-notify-size --bf16-gemm-backend --boundary-reduction
            --c128-page-size --constrained-json-max-whitespace-cnt --context-bucket
            --cp-strategy --cuda-graph-backend-decode --cuda-graph-backend-prefill
            --cuda-graph-bs-decode --cuda-graph-bs-prefill --cuda-graph-config
            --cuda-graph-max-bs-decode --cuda-graph-max-bs-prefill
            --cuda-graph-max-seq-len-prefill --cuda-graph-prefill-max-context
            --dcp-comm-backend --dcp-replicate-q-proj --dcp-size --debug-cuda-graph
            --decode-context-parallel-size --decoupled-spec-bind-endpoint
            --decoupled-spec-connect-endpoints --decoupled-spec-rank
            --decoupled-spec-role --deepep-dispatcher-output-dtype --deepep-v2-mode
            --default-chat-template-kwargs --default-priority-value
            --detokenizer-worker-num --disable-aiter-allreduce-fusion-in-decode
            --disable-aiter-allreduce-fusion-in-prefill --disable-attn-tp-gather
            --disable-decode-cuda-graph --disable-flashinfer-autotune
            --disable-prefill-cuda-graph --disable-priority-preemption
            --disaggregation-decode-allocation-policy
            --disaggregation-decode-enable-radix-cache
            --disaggregation-decode-extra-slots
            --disaggregation-decode-host-receive-threshold
            --disaggregation-decode-retraction-backup
            --disaggregation-enable-kv-checksum --dllm-algorithm --dllm-algorithm-config
            --dllm-fdfo --dsa-decode-backend --dsa-paged-mqa-logits-backend
            --dsa-prefill-backend --dsa-topk-backend --dsa-triton-union
            --dsv4-attn-backend --dsv4-prefill-backend --dwdp-size
            --elastic-ep-initial-size --elastic-ep-join-mode
            --elastic-ep-join-rank-offset --elastic-ep-scale-timeout
            --enable-adaptive-dispatch-to-encoder --enable-aiter-allreduce-fusion
            --enable-amd-monokernel --enable-cp-decode-attn-tp
            --enable-decoder-swa-bounded-replay --enable-deepep-moe
            --enable-deepseek-v4-fp4-indexer --enable-dense-mlp-attn-tp
            --enable-dp-attention-local-control-broadcast --enable-dsa-cache-layer-split
            --enable-dsa-fused-indexer --enable-dynamic-chunking
            --enable-elastic-expert-backup --enable-encoder-swa-bounded-replay
            --enable-ep-moe --enable-flashinfer-mla --enable-flashmla --enable-flexkv
            --enable-forward-pass-metrics --enable-fused-moe-sum-all-reduce
            --enable-fused-qk-norm-rope --enable-hicache --enable-hisparse
            --enable-http-worker-reuseport --enable-http2 --enable-int8-mamba-checkpoint
            --enable-kv-cache-sharding --enable-layernorm-sp --enable-lean-attention
            --enable-linear-replayssm --enable-linear-replayssm-spec
            --enable-linker-mla-dedup --enable-lora-overlap-loading
            --enable-mamba-cache-stochastic-rounding --enable-megamoe-for-layernorm-sp
            --enable-mfu-metrics --enable-mis --enable-mm-global-cache
            --enable-multi-layer-eagle --enable-nvidia-megakernel
            --enable-page-major-kv-layout --enable-paged-experts --enable-pd-role-switch
            --enable-precise-embedding-interpolation --enable-prefill-cp
            --enable-prefill-delayer --enable-prefix-mm-cache
            --enable-quant-communications --enable-response-store
            --enable-return-aux-hidden-states --enable-return-indexer-topk
            --enable-return-routed-experts --enable-scattered-sconv
            --enable-session-radix-cache --enable-shared-experts-attn-tp
            --enable-ssl-refresh --enable-streaming-session --enable-strict-thinking
            --enable-tf32-matmul --enable-torch-compile-debug-mode
            --enable-tp-lm-head-all-to-all --enable-unified-cache-external-linker
            --enable-unified-memory --enable-w4a4-mxfp4-megamoe --enable-waterfill
            --enable-watermark --encoder-bootstrap-port --encoder-only
            --encoder-register-urls --encoder-transfer-backend --encoder-urls
            --enforce-disable-flashinfer-allreduce-fusion
            --enforce-shared-experts-fusion --engine-info-bootstrap-port
            --expert-balancedness-report-mode --experts-shared-outer-loras
            --extra-metric-labels --fastapi-root-path --flashinfer-a2a-dispatch-type
            --flashinfer-allreduce-fusion-backend --flashinfer-autotune-skip-ops
            --flexkv-config-file --forward-hooks --forward-pass-metrics-ipc-name
            --forward-pass-metrics-worker-id --fp4-gemm-backend --fp8-gemm-backend
            --fuseep-mode --gated-launch-port --gc-threshold --grpc-http-sidecar-port
            --grpc-port --grpc-response-timeout-secs --hf-chat-template-name
            --hicache-host-memory-fraction --hicache-host-memory-mode
            --hicache-storage-prefetch-retry-max-attempts
            --hicache-storage-prefetch-retry-poll-interval
            --hierarchical-sparse-attention-extra-config --hisparse-config
            --http2-initial-connection-window-size --http2-max-concurrent-streams
            --image-processor-backend --incremental-streaming-output
            --int8-mamba-ckpt-size --kv-canary --kv-canary-real-data
            --kv-canary-sweep-interval --language-model-only --language-only
            --limit-mm-data-per-request --linear-attn-backend
            --linear-attn-decode-backend --linear-attn-prefill-backend
            --linear-attn-verify-backend --linear-replayssm-cache-len
            --lmcache-config-file --load-publish-endpoint
            --load-snapshot-publish-interval --log-requests-format --log-requests-target
            --lora-drain-wait-threshold --lora-strict-loading --lora-use-virtual-experts
            --mamba-backend --mamba-cache-philox-rounds --mamba-max-states-per-path
            --mamba-radix-cache-strategy --mamba-track-interval --max-ep-size
            --media-url-max-file-size-mb --min-free-slots-delay --mlx-enable-sampling
            --mm-enable-dp-encoder --mm-feature-transport --mm-global-cache-backend
            --mm-io-worker-num --mm-preprocess-cache-size-mb --mm-process-config
            --mm-processor-worker-num --model-checksum --model-config-parser
            --modelexpress-config --moe-data-parallel-size --moe-dp-size
            --monokernel-backend --msprobe-dump-config --n-share-experts-fusion
            --optimistic-prefill-attempts --otlp-service-name
            --paged-experts-num-resident --ple-offload-backend --ple-offload-dir
            --ple-offload-embedding --pp-async-batch-depth --pre-warm-nccl
            --prefill-decode-interval --prefill-decode-interval-min-bs
            --prefill-delayer-forward-passes-buckets --prefill-delayer-max-delay-ms
            --prefill-delayer-max-delay-passes --prefill-delayer-queue-min-ratio
            --prefill-delayer-token-usage-low-watermark
            --prefill-delayer-wait-seconds-buckets --prefill-kv-cache-dequant-dtype
            --prefill-max-requests --prefill-only-disable-kv-cache --qsa-indexer-dtype
            --radix-cache-backend --radix-eviction-policy-config
            --remote-instance-weight-loader-backend
            --remote-instance-weight-loader-start-seed-via-transfer-engine
            --retraction-policy --return-aux-hidden-state-layer-ids
            --return-hidden-states-mode --return-input-ids --return-output-ids
            --rl-quant-profile --sampling-mask-max-tokens --shared-experts-tp-size
            --sidecar --sidecar-args --smg-grpc-mode --smg-http-sidecar-port
            --soft-watchdog-timeout --spec-trace-dir --speculative-adaptive
            --speculative-adaptive-config --speculative-dflash-block-size
            --speculative-domino-candidate-pool-size
            --speculative-draft-attention-backend --speculative-draft-kv-cache-dtype
            --speculative-draft-model-quantization --speculative-draft-sink-size
            --speculative-draft-window-size --speculative-dsa-topk-backend
            --speculative-dspark-align-verify-tokens-to-graph-tier
            --speculative-dspark-block-size --speculative-dspark-confidence-sts-path
            --speculative-dspark-sps-table-path --speculative-enable-w4a4-mxfp4-megamoe
            --speculative-moe-a2a-backend --speculative-ngram-external-corpus-max-tokens
            --speculative-ngram-external-corpus-path
            --speculative-ngram-external-sam-budget --speculative-ngram-max-trie-depth
            --speculative-use-block-verification --speculative-use-rejection-sampling
            --ssl-ca-certs --ssl-certfile --ssl-keyfile --ssl-keyfile-password
            --startup-weight-load-mode --stream-response-default-include-usage
            --strip-thinking-cache --swa-prefix-tails --tokenizer-backend
            --trace-modules --trust-mm-content-hashes --trust-request-chat-template
            --unified-cache-external-linker-backend
            --unified-cache-external-linker-config --uno-lora-path --use-ray
            --uvicorn-access-log-exclude-prefixes --watermark-config --weight-cache-mode
            --weight-cache-socket --weight-cache-timeout
            --weight-loader-drop-cache-after-load --weight-loader-prefetch-checkpoints
            --weight-loader-prefetch-num-threads
        """,
        "0.5.23": """
            --collect-tokens-histogram --cuda-graph-bs --cuda-graph-max-bs
            --debug-tensor-dump-inject --disaggregation-decode-dp
            --disaggregation-decode-tp --disaggregation-prefill-pp
            --ds-channel-config-path --ds-heavy-channel-num --ds-heavy-channel-type
            --ds-heavy-token-num --ds-sparse-decode-threshold --enable-deepep-moe
            --enable-double-sparsity --enable-ep-moe
            --enable-expert-distribution-metrics --enable-flashinfer-mla
            --enable-flashmla --enable-nan-detection --enable-piecewise-cuda-graph
            --hybrid-kvcache-ratio --keep-mm-feature-on-device --load-watch-interval
            --mm-max-concurrent-calls --mm-per-request-timeout
            --multi-item-scoring-delimiter --n-share-experts-fusion --nsa-decode-backend
            --nsa-prefill-backend --piecewise-cuda-graph-compiler
            --piecewise-cuda-graph-max-tokens --piecewise-cuda-graph-tokens
            --prefill-round-robin-balance --speculative-ngram-branch-length
            --speculative-ngram-max-match-window-size
            --speculative-ngram-min-match-window-size --stream-output --torchao-config
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
        "--kv-cache-dtype": {
            "0.4.6.post1": "auto fp8_e5m2 fp8_e4m3",
            "0.5.5.post3": "auto fp8_e5m2 fp8_e4m3 bf16 bfloat16 fp4_e2m1",
            "0.5.23": "auto fp8_e5m2 fp8_e4m3 mxfp8 bf16 bfloat16 nvfp4 fp4_mx_block16",
        },
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
