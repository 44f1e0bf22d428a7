"""Option tables of the engines' command lines (pure data, for ``engine_command.parse_engine_args``
through :mod:`.cli_options`).

Generated once from the engines' own sources and pasted here as data (no engine is imported):

- vLLM: the union of ``vllm serve``'s options in the vllm 0.34.0, 0.33.0, 0.11.0 and 0.8.5
  wheels (PyPI), and of the OpenAI server's in 0.2.7 to 0.7.3 (generated data,
  ``kvlint/engines/vllm_early_options.json``, :mod:`kvlint.generators.vllm_early_options`:
  its options no later release has are added to the kinds below as it reads them), read
  with ``ast`` from ``vllm/engine/arg_utils.py`` (``add_cli_args``: option strings, and the
  type of the config-dataclass field each ``**x_kwargs["field"]`` refers to: ``bool`` →
  ``argparse.BooleanOptionalAction``, list/tuple/set → ``nargs="+"``),
  ``vllm/entrypoints/common/cli_args.py`` / ``openai/cli_args.py`` (``FrontendArgs``) and
  ``vllm/entrypoints/cli/serve.py``. vLLM's ``FlexibleArgumentParser``
  (``vllm/utils/argparse_utils.py``) turns ``_`` into ``-`` in long option names before
  argparse sees them, and argparse accepts unique prefixes (no ``allow_abbrev=False``
  anywhere in the 0.8.5, 0.11.0 or 0.33.0 wheel); a repeated option only logs "Found
  duplicate keys" (0.33.0) and the last value wins.
- SGLang: the union of the options taken by the sglang 0.2.15, 0.3.6, 0.4.3.post2,
  0.4.6.post1, 0.4.10.post1, 0.5.5.post3 and 0.5.6-0.5.23 wheels (the releases of
  ``kvlint/engines/sglang_options.json``): ``A[type, Arg(...)]`` fields of
  ``ServerArgs`` and of ``sglang/srt/arg_groups/fields/*.py`` (``bool`` → ``store_true``,
  ``List`` → ``nargs="+"``, ``cli_name``/``aliases``) and the ``add_argument`` calls of
  ``sglang/srt/server_args.py`` (their ``action``/``nargs``; a deprecated flag's custom
  action, ``DeprecatedStoreTrueAction`` or ``DeprecatedStoreConstAction``, takes no value).
  A custom action is read by its ``nargs``: ``--disable-cuda-graph`` is a flag in every
  release (``store_true`` to 0.5.5.post3, ``DeprecatedStoreTrueAction``, ``nargs=0``, at
  0.5.23: server_args.py@0.5.23 line 410 and
  sglang/srt/arg_groups/argparse_actions.py@0.5.23), not an option that takes a value.
  ``prepare_server_args`` uses a plain ``argparse.ArgumentParser``: unique prefixes are accepted
  (``--tp`` → ``--tp-size``), underscores are NOT turned into dashes.
- LMDeploy: ``lmdeploy serve api_server`` in the lmdeploy 0.18.0 wheel
  (``lmdeploy/cli/serve.py`` ``add_parser_api_server`` and the ``ArgumentHelper`` methods it
  calls in ``lmdeploy/cli/utils.py``); plain argparse (prefixes yes, underscores no).
- TensorRT-LLM: ``trtllm-serve serve`` click options of ``tensorrt_llm/commands/serve.py``
  @00209af1 (click: exact names only, underscore spellings), plus the dash spellings of
  ``python -m dynamo.trtllm`` (ai-dynamo/dynamo ``components/src/dynamo/trtllm`` argparse).
- TGI: ``text-generation-launcher`` clap options of ``launcher/src/main.rs`` (clap: exact long
  names, no abbreviations; ``bool`` fields are flags).
- llama.cpp: every option ``llama-server`` accepts in any of three ggml-org/llama.cpp
  ``common/arg.cpp`` revisions, 4227c9be (Aug 2025), 7c158fbb4 and 0c1e57098 (the copies
  vendored in the llama-cpp-python 0.3.16, 0.3.26 and 0.3.36 sdists on PyPI): the
  ``common_arg`` definitions whose examples include the server (or all tools), with the words
  each consumes (exact names only, ``_`` turned into ``-`` in ``--`` arguments, no
  ``--name=value`` form, the next word is the value whatever it looks like, the last repeat
  wins). An option whose arity changed between them (``-fa``/``--flash-attn``, a flag in
  4227c9be, ``on|off|auto`` later; ``--log-colors``) or that an earlier read listed as a flag
  (``-fit``) is ``optional``; ``--lora-scaled`` and the like take two words (``many``).
  ``--grp-attn-n``, ``--grp-attn-w`` and ``--mem`` are kept from an earlier read. The union,
  so an option of an older or newer build is never called unknown (``--no-mmap`` and
  ``--mlock``, gone at 0c1e57098, included).

Which version has which option: :mod:`.option_versions`.

Kinds: ``flag`` takes no value; ``negatable`` is a flag that also has a ``--no-`` form;
``optional`` takes a value only when one follows; ``many`` takes one or more values;
``value`` takes exactly one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["OPTION_TABLES", "VLLM_EARLY", "VLLM_EARLY_ONLY"]

VLLM_EARLY: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent.parent / "engines" / "vllm_early_options.json")
    .read_text(encoding="utf-8"))
"""vLLM 0.2.7-0.7.3's server options (:mod:`kvlint.generators.vllm_early_options`)."""

OPTION_TABLES: dict[str, dict[str, str]] = {
    "vllm": {
        "flag": """
            --enable-multimodal-encoder-data-parallel
            --aggregate-engine-logging --data-parallel-multi-port-external-lb
            --disable-async-output-proc --disable-frontend-multiprocessing
            --disable-log-requests --disable-log-stats --disable-mm-preprocessor-cache
            --enable-reasoning --grpc --headless --use-v2-block-manager -dpm
        """,
        "negatable": """
            --checkpoint-prepare-on-startup --enable-extensible-kv-cache --shuffle-safetensors-files
            --eplb-log-balancedness
            --allow-credentials --allow-deprecated-quantization --async-scheduling
            --calculate-kv-scales --cohere-is-reasoning-model --cudagraph-metrics
            --data-parallel-external-lb --data-parallel-hybrid-lb --dcp-q-replicate
            --disable-cascade-attn --disable-chunked-mm-input --disable-custom-all-reduce
            --disable-fastapi-docs --disable-hybrid-kv-cache-manager
            --disable-nccl-for-dp-synchronization --disable-sliding-window
            --disable-uvicorn-access-log --enable-auto-tool-choice
            --enable-batch-sharded-sampling --enable-chunked-prefill
            --enable-cumem-allocator --enable-dbo --enable-elastic-ep
            --enable-ep-weight-filter --enable-eplb --enable-expert-parallel
            --enable-fault-tolerance --enable-flash-late-interaction
            --enable-flashinfer-autotune --enable-force-include-usage --enable-hc-sp
            --enable-layerwise-nvtx-tracing --enable-log-deltas --enable-log-outputs
            --enable-log-requests --enable-logging-iteration-details --enable-lora
            --enable-lora-bias --enable-mamba-cache-stochastic-rounding
            --enable-mamba-shared-prefix-checkpoint --enable-mfu-metrics
            --enable-mixed-moe-lora-format --enable-mm-embeds --enable-moe-shared-loras
            --enable-nccl-comm-suspend --enable-offline-docs --enable-per-request-metrics
            --enable-prefix-caching --enable-prompt-adapter --enable-prompt-embeds
            --enable-prompt-tokens-details --enable-request-id-headers
            --enable-return-routed-experts --enable-scale-out
            --enable-server-load-tracking --enable-shm-tensor-arena --enable-sleep-mode
            --enable-ssl-refresh --enable-tokenizer-info-endpoint
            --enable-tower-connector-lora --enable-trace-replay --enforce-eager
            --exclude-tools-when-tool-choice-none --fail-on-environ-validation
            --fully-sharded-loras --interleave-mm-strings --jit-monitor-verbose
            --kv-cache-metrics --kv-sharing-fast-prefill --language-model-only
            --log-error-stack --long-prefill-token-threshold-adaptive
            --mm-device-do-normalize --mm-encoder-only --monokernel
            --multi-step-stream-outputs --numa-bind --ray-workers-use-nsight
            --return-sampling-mask --return-tokens-as-token-ids
            --scheduler-reserve-full-isl --skip-mm-profiling --skip-tokenizer-init
            --sleep-mode-offload-cudagraph --specialize-active-lora --swa-bounded-replay
            --tokens-only --trust-remote-code --trust-request-chat-template
            --trust-request-mm-kwargs --use-fp64-gumbel --use-replayssm --use-tqdm-on-load
            -dpe -dph -ep
        """,
        "optional": """
            --hf-token
        """,
        "many": """
            --cuda-graph-sizes
            --allowed-headers --allowed-media-domains --allowed-methods --allowed-origins
            --api-key --collect-detailed-traces --cpu-offload-params
            --cudagraph-capture-sizes --custom-histogram-buckets --ignore-patterns
            --kv-cache-dtype-skip-layers --logits-processors --long-lora-scaling-factors
            --lora-modules --lora-target-modules --middleware --numa-bind-cpus
            --numa-bind-nodes --offload-params --prompt-adapters --served-model-name
            --sleep-preserve-parameter-names
        """,
        "value": """
            --cache-aware-admission-threshold --cache-aware-admission-window
            --headless-client-handshake-address --max-num-inflight-kv-loads
            --eplb-step-interval --eplb-window-size --num-redundant-experts
            --override-attention-dtype
            --additional-config --all2all-backend --allowed-local-media-path
            --anthropic-disabled-thinking-effort --api-server-count --attention-backend
            --attention-config --aux-output-config --block-size --chat-template
            --chat-template-content-format --code-revision --cohere-format
            --compilation-config --config --config-format --convert
            --cp-kv-cache-interleave-size --cpu-distributed-timeout-seconds
            --cpu-offload-gb --data-parallel-address --data-parallel-backend
            --data-parallel-rank --data-parallel-rpc-port --data-parallel-size
            --data-parallel-size-local --data-parallel-start-rank
            --data-parallel-supervisor-port --dbo-decode-token-threshold
            --dbo-prefill-token-threshold --dcp-comm-backend
            --dcp-kv-cache-interleave-size --decode-context-parallel-size
            --default-chat-template-kwargs --default-mm-loras --device --device-ids
            --device-memory-utilization --diffusion-config
            --disable-access-log-for-endpoints --distributed-executor-backend
            --distributed-timeout-seconds --download-dir
            --dp-supervisor-probe-failure-threshold --dp-supervisor-probe-interval-s
            --dp-supervisor-probe-timeout-s --dp-sync-interval --dtype --ec-manager-config
            --ec-transfer-config --elastic-ep-max-dp-size --engram-config --eplb-config
            --expert-placement-strategy --fault-tolerance-config --fingerprint-mode
            --fingerprint-value --gdn-prefill-backend --generation-config
            --gpu-memory-utilization --grpc-port --guided-decoding-backend
            --h11-max-header-count --h11-max-incomplete-event-size --hf-config-path
            --hf-overrides --host --io-processor-plugin --ir-op-priority
            --jit-monitor-mode --kda-decode-backend --kda-prefill-backend --kernel-config
            --kv-cache-dtype --kv-cache-memory-bytes --kv-cache-metrics-sample
            --kv-events-config --kv-offloading-backend --kv-offloading-size
            --kv-transfer-config --limit-mm-per-prompt --linear-backend --load-format
            --log-config-file --log-level --logging-config --logits-processor-pattern
            --logprobs-mode --long-prefill-token-threshold --lora-dtype
            --lora-extra-vocab-size --mamba-backend --mamba-block-size --mamba-cache-dtype
            --mamba-cache-mode --mamba-cache-philox-rounds --mamba-ssm-cache-dtype
            --mamba-ssu-algorithm --master-addr --master-port --max-cpu-loras
            --max-cudagraph-capture-size --max-log-len --max-logprobs
            --max-long-partial-prefills --max-lora-cls-labels --max-lora-rank --max-loras
            --max-model-len --max-num-active-seqs --max-num-batched-tokens
            --max-num-partial-prefills --max-num-queued-reqs --max-num-queued-tokens
            --max-num-scheduled-tokens --max-num-seqs --max-parallel-loading-workers
            --max-prompt-adapter-token --max-prompt-adapters --max-seq-len-to-capture
            --media-io-kwargs --mm-encoder-attn-backend --mm-encoder-attn-dtype
            --mm-encoder-fp8-scale-path --mm-encoder-fp8-scale-save-margin
            --mm-encoder-fp8-scale-save-path --mm-encoder-tp-mode --mm-hasher-algorithm
            --mm-ipc-gpu-memory-gb --mm-processor-cache-gb --mm-processor-cache-type
            --mm-processor-device --mm-processor-kwargs --mm-shm-cache-max-object-size-mb
            --mm-tensor-ipc --model --model-class-overrides --model-impl
            --model-loader-extra-config --moe-backend --nnodes --node-rank
            --num-gpu-blocks-override --num-lookahead-slots --num-scheduler-steps
            --offload-backend --offload-group-size --offload-num-in-group
            --offload-prefetch-step --optimization-level --otlp-traces-endpoint
            --override-generation-config --override-neuron-config --override-pooler-config
            --per-request-spec-decode-metrics --performance-mode --pipeline-parallel-size
            --pooler-config --port --preemption-mode --prefill-context-parallel-size
            --prefill-schedule-interval --prefix-cache-retention-interval
            --prefix-caching-hash-algo --prefix-match-unit --profiler-config
            --pt-load-map-location --qlora-adapter-name-or-path --quantization
            --quantization-config --reasoning-config --reasoning-effort-map
            --reasoning-parser --reasoning-parser-plugin --renderer-num-workers
            --replayssm-buffer-len --response-role --revision --root-path --rope-scaling
            --rope-theta --runner --safetensors-load-strategy
            --safetensors-prefetch-block-size --safetensors-prefetch-num-threads
            --scheduler-cls --scheduler-delay-factor --scheduling-policy --seed
            --show-hidden-metrics-for-version --shutdown-timeout --sleep-mode-backend
            --sparse-indexer-topk-backend --spec-method --spec-model --spec-tokens
            --speculative-config --sse-keep-alive-interval --ssl-ca-certs --ssl-cert-reqs
            --ssl-certfile --ssl-ciphers --ssl-keyfile --stream-interval
            --structured-outputs-config --swap-space --task --tensor-parallel-size
            --tokenizer --tokenizer-mode --tokenizer-pool-extra-config
            --tokenizer-pool-size --tokenizer-pool-type --tokenizer-revision
            --tool-call-parser --tool-parser-plugin --tool-server --tool-strict-level
            --ubatch-size --uds --uvicorn-log-level --video-pruning-method
            --video-pruning-rate --watchdog-config --watermark --watermark-config
            --weight-transfer-config --worker-cls --worker-extension-cls -O -ac -asc -cc
            -dc -dcp -dp -dpa -dpb -dpl -dpn -dpp -dpr -n -pcp -pp -q -r -sc -tp
        """,
    },
    "sglang": {
        "flag": """
            --debug-tensor-dump-prefill-only --disable-disk-cache --disable-flashinfer
            --disable-flashinfer-sampling --disable-jump-forward --disable-mla
            --disable-nan-detection --disable-regex-jump-forward --efficient-weight-load
            --enable-flashinfer-cutlass-moe --enable-flashinfer-trtllm-moe --enable-mla
            --enable-triton-kernel-moe --return-hidden-states
            --disable-hicache-numa-detect --disable-piecewise-cuda-graph
            --disaggregation-decode-enable-fake-auto --elastic-ep-rejoin
            --enable-breakable-cuda-graph --enable-deepep-waterfill
            --enable-dsa-prefill-context-parallel --enable-flashinfer-autotune
            --enable-gdn-replayssm-spec --enable-nsa-prefill-context-parallel
            --enable-prefill-context-parallel --enforce-piecewise-cuda-graph
            --speculative-skip-dp-mlp-sync
            --disable-cuda-graph
            --collect-tokens-histogram --enable-expert-distribution-metrics
            --enable-piecewise-cuda-graph --keep-mm-feature-on-device
            --prefill-round-robin-balance
            --abort-on-priority-when-disabled --allow-auto-truncate
            --checkpoint-engine-wait-weights-before-ready
            --constrained-json-disable-any-whitespace --debug-cuda-graph
            --delete-ckpt-after-loading --disable-aiter-allreduce-fusion-in-decode
            --disable-aiter-allreduce-fusion-in-prefill --disable-attn-tp-gather
            --disable-chunked-prefix-cache --disable-cuda-graph-padding
            --disable-custom-all-reduce --disable-decode-cuda-graph
            --disable-fast-image-processor --disable-flashinfer-autotune
            --disable-flashinfer-cutlass-moe-fp4-allgather --disable-hybrid-swa-memory
            --disable-outlines-disk-cache --disable-overlap-schedule
            --disable-prefill-cuda-graph --disable-priority-preemption
            --disable-radix-cache --disable-shared-experts-fusion
            --disable-tokenizer-batch-decode
            --disaggregation-decode-enable-offload-kvcache
            --disaggregation-decode-enable-radix-cache --disaggregation-enable-kv-checksum
            --enable-adaptive-dispatch-to-encoder --enable-aiter-allreduce-fusion
            --enable-amd-monokernel --enable-attn-tp-input-scattered
            --enable-broadcast-mm-inputs-process --enable-cache-report
            --enable-cp-decode-attn-tp --enable-cudagraph-gc
            --enable-custom-logit-processor --enable-deepep-moe
            --enable-deepseek-v4-fp4-indexer --enable-dense-mlp-attn-tp
            --enable-deterministic-inference --enable-double-sparsity
            --enable-dp-attention --enable-dp-attention-local-control-broadcast
            --enable-dp-lm-head --enable-draft-weights-cpu-backup
            --enable-dsa-cache-layer-split --enable-dynamic-batch-tokenizer
            --enable-dynamic-chunking --enable-elastic-expert-backup
            --enable-encoder-swa-bounded-replay --enable-ep-moe --enable-eplb
            --enable-flashinfer-allreduce-fusion --enable-flexkv
            --enable-forward-pass-metrics --enable-fp32-lm-head
            --enable-fused-moe-sum-all-reduce --enable-hicache --enable-hierarchical-cache
            --enable-hisparse --enable-http-worker-reuseport --enable-http2
            --enable-int8-mamba-checkpoint --enable-kv-cache-sharding
            --enable-layernorm-sp --enable-layerwise-nvtx-marker --enable-lean-attention
            --enable-linear-replayssm --enable-linear-replayssm-spec
            --enable-linker-mla-dedup --enable-lmcache --enable-lora
            --enable-lora-overlap-loading --enable-mamba-cache-stochastic-rounding
            --enable-megamoe-for-layernorm-sp --enable-memory-saver --enable-metrics
            --enable-metrics-for-all-schedulers --enable-mfu-metrics --enable-mis
            --enable-mixed-chunk --enable-mm-global-cache --enable-mscclpp
            --enable-multi-layer-eagle --enable-multimodal --enable-nan-detection
            --enable-nccl-nvls --enable-nvidia-megakernel --enable-p2p-check
            --enable-page-major-kv-layout --enable-paged-experts --enable-pd-role-switch
            --enable-pdmux --enable-precise-embedding-interpolation --enable-prefill-cp
            --enable-prefill-delayer --enable-prefix-mm-cache --enable-priority-scheduling
            --enable-profile-cuda-graph --enable-quant-communications
            --enable-request-time-stats-logging --enable-response-store
            --enable-return-aux-hidden-states --enable-return-hidden-states
            --enable-return-indexer-topk --enable-return-routed-experts
            --enable-scattered-sconv --enable-session-radix-cache
            --enable-shared-experts-attn-tp --enable-single-batch-overlap
            --enable-ssl-refresh --enable-streaming-session --enable-strict-thinking
            --enable-symm-mem --enable-tokenizer-batch-encode --enable-torch-compile
            --enable-torch-compile-debug-mode --enable-torch-symm-mem --enable-trace
            --enable-two-batch-overlap --enable-unified-cache-external-linker
            --enable-unified-memory --enable-w4a4-mxfp4-megamoe --enable-waterfill
            --enable-watermark --enable-weights-cpu-backup --encoder-only
            --enforce-disable-flashinfer-allreduce-fusion --enforce-shared-experts-fusion
            --export-metrics-to-file --flashinfer-mla-disable-ragged --grpc-mode
            --incremental-streaming-output --is-embedding --language-model-only
            --language-only --log-requests --lora-use-virtual-experts
            --mlx-enable-sampling --pre-warm-nccl --prefill-only-disable-kv-cache
            --quantize-and-serve
            --remote-instance-weight-loader-start-seed-via-transfer-engine
            --return-input-ids --return-output-ids --schedule-low-priority-values-first
            --show-time-cost --skip-server-warmup --skip-tokenizer-init --sleep-on-idle
            --smg-grpc-mode --speculative-adaptive
            --speculative-dspark-align-verify-tokens-to-graph-tier
            --speculative-use-block-verification --speculative-use-rejection-sampling
            --stream-output --stream-response-default-include-usage --strip-thinking-cache
            --triton-attention-reduce-in-fp32 --trust-mm-content-hashes
            --trust-remote-code --trust-request-chat-template --use-ray
            --weight-loader-disable-mmap --weight-loader-drop-cache-after-load
            --weight-loader-prefetch-checkpoints
        """,
        "negatable": """
            --record-nolora-graph
            --dcp-replicate-q-proj --dllm-fdfo --enable-decoder-swa-bounded-replay
            --enable-dsa-fused-indexer --enable-fused-qk-norm-rope --enable-tf32-matmul
            --enable-tp-lm-head-all-to-all --experts-shared-outer-loras
            --lora-strict-loading --mm-enable-dp-encoder --ple-offload-embedding
            --speculative-enable-w4a4-mxfp4-megamoe
        """,
        "optional": """
            --hybrid-kvcache-ratio
            --model-checksum
        """,
        "many": """
            --additional-ports
            --allowed-media-domains --bucket-e2e-request-latency
            --bucket-inter-token-latency --bucket-time-to-first-token --cuda-graph-bs
            --cuda-graph-bs-decode --cuda-graph-bs-prefill --custom-weight-loader
            --debug-tensor-dump-layers --encoder-register-urls --encoder-urls
            --flashinfer-autotune-skip-ops --gc-threshold --generation-tokens-buckets
            --log-requests-target --lora-target-modules --numa-node
            --prefill-delayer-forward-passes-buckets
            --prefill-delayer-wait-seconds-buckets --prompt-tokens-buckets
            --return-aux-hidden-state-layer-ids --tokenizer-metrics-allowed-custom-labels
            --uvicorn-access-log-exclude-prefixes
        """,
        "value": """
            --file-storage-pth --max-micro-batch-size --max-num-reqs --pdlb-url
            --prefill-only-one-req
            --cuda-graph-tc-compiler --custom-sigquit-handler --dllm-block-size
            --dsa-prefill-cp-mode --mamba-scheduler-strategy --nsa-prefill-cp-mode
            --optimistic-prefill-retries --prefill-cp-mode
            --speculative-dflash-draft-window-size
            --disaggregation-decode-dp --disaggregation-decode-tp
            --disaggregation-prefill-pp --load-watch-interval --mm-max-concurrent-calls
            --mm-per-request-timeout --multi-item-scoring-delimiter --nsa-decode-backend
            --nsa-prefill-backend --piecewise-cuda-graph-compiler
            --piecewise-cuda-graph-max-tokens --piecewise-cuda-graph-tokens
            --speculative-ngram-branch-length --speculative-ngram-max-match-window-size
            --speculative-ngram-min-match-window-size
            --admin-api-key --api-key --asr-max-buffer-seconds
            --asr-max-concurrent-sessions --attention-backend
            --attention-context-parallel-size --attention-data-parallel-size
            --attn-cp-size --attn-dp-size --base-gpu-id --batch-notify-size
            --bf16-gemm-backend --boundary-reduction --c128-page-size --chat-template
            --chunked-prefill-size --completion-template --config
            --constrained-json-max-whitespace-cnt --constrained-json-whitespace-pattern
            --context-bucket --context-length --cp-strategy --cpu-offload-gb
            --crash-dump-folder --cuda-graph-backend-decode --cuda-graph-backend-prefill
            --cuda-graph-config --cuda-graph-max-bs --cuda-graph-max-bs-decode
            --cuda-graph-max-bs-prefill --cuda-graph-max-seq-len-prefill
            --cuda-graph-prefill-max-context --data-parallel-size --dcp-comm-backend
            --dcp-size --debug-tensor-dump-inject --debug-tensor-dump-input-file
            --debug-tensor-dump-output-folder --decode-attention-backend
            --decode-context-parallel-size --decode-log-interval
            --decoupled-spec-bind-endpoint --decoupled-spec-connect-endpoints
            --decoupled-spec-rank --decoupled-spec-role --decrypted-config-file
            --decrypted-draft-config-file --deepep-config --deepep-dispatcher-output-dtype
            --deepep-mode --deepep-v2-mode --default-chat-template-kwargs
            --default-priority-value --detokenizer-worker-num --device
            --disaggregation-bootstrap-port
            --disaggregation-decode-allocation-policy --disaggregation-decode-extra-slots
            --disaggregation-decode-host-receive-threshold
            --disaggregation-decode-polling-interval
            --disaggregation-decode-retraction-backup --disaggregation-ib-device
            --disaggregation-mode --disaggregation-transfer-backend --dist-init-addr
            --dist-timeout --dllm-algorithm --dllm-algorithm-config --download-dir
            --dp-size --ds-channel-config-path --ds-heavy-channel-num
            --ds-heavy-channel-type --ds-heavy-token-num --ds-sparse-decode-threshold
            --dsa-decode-backend --dsa-paged-mqa-logits-backend --dsa-prefill-backend
            --dsa-topk-backend --dsa-triton-union --dsv4-attn-backend
            --dsv4-prefill-backend --dtype --dwdp-size
            --dynamic-batch-tokenizer-batch-size --dynamic-batch-tokenizer-batch-timeout
            --elastic-ep-backend --elastic-ep-initial-size --elastic-ep-join-mode
            --elastic-ep-join-rank-offset --elastic-ep-scale-timeout
            --enable-flashinfer-mla  --encoder-bootstrap-port
            --encoder-transfer-backend --engine-info-bootstrap-port --ep
            --ep-dispatch-algorithm --ep-num-redundant-experts --ep-size --eplb-algorithm
            --eplb-min-rebalancing-utilization-threshold --eplb-rebalance-layers-per-chunk
            --eplb-rebalance-num-iterations --expert-balancedness-report-mode
            --expert-distribution-recorder-buffer-size --expert-distribution-recorder-mode
            --expert-parallel-size --export-metrics-to-file-dir --extra-metric-labels
            --fastapi-root-path --file-storage-path --flashinfer-a2a-dispatch-type
            --flashinfer-allreduce-fusion-backend --flashinfer-mxfp4-moe-precision
            --flexkv-config-file --forward-hooks --forward-pass-metrics-ipc-name
            --forward-pass-metrics-worker-id --fp4-gemm-backend --fp8-gemm-backend
            --fuseep-mode --gated-launch-port --gc-warning-threshold-secs --gpu-id-step
            --grammar-backend --grpc-http-sidecar-port --grpc-port
            --grpc-response-timeout-secs --hf-chat-template-name
            --hicache-host-memory-fraction --hicache-host-memory-mode --hicache-io-backend
            --hicache-mem-layout --hicache-ratio --hicache-size --hicache-storage-backend
            --hicache-storage-backend-extra-config --hicache-storage-prefetch-policy
            --hicache-storage-prefetch-retry-max-attempts
            --hicache-storage-prefetch-retry-poll-interval --hicache-write-policy
            --hierarchical-sparse-attention-extra-config --hisparse-config --host
            --http2-initial-connection-window-size --http2-max-concurrent-streams
            --image-processor-backend --init-expert-location --int8-mamba-ckpt-size
            --json-model-override-args --kt-cpuinfer --kt-max-deferred-experts-per-token
            --kt-method --kt-num-gpu-experts --kt-threadpool-count --kt-weight-path
            --kv-cache-dtype --kv-canary --kv-canary-real-data --kv-canary-sweep-interval
            --kv-events-config --limit-mm-data-per-request --linear-attn-backend
            --linear-attn-decode-backend --linear-attn-prefill-backend
            --linear-attn-verify-backend --linear-replayssm-cache-len
            --lmcache-config-file --load-balance-method --load-format
            --load-publish-endpoint --load-snapshot-publish-interval --log-level
            --log-level-http --log-requests-format --log-requests-level --lora-backend
            --lora-drain-wait-threshold --lora-eviction-policy --lora-paths
            --mamba-backend --mamba-cache-philox-rounds --mamba-full-memory-ratio
            --mamba-max-states-per-path --mamba-radix-cache-strategy --mamba-ssm-dtype
            --mamba-track-interval --max-ep-size --max-loaded-loras --max-lora-chunk-size
            --max-lora-rank --max-loras-per-batch --max-mamba-cache-size
            --max-prefill-tokens --max-queued-requests --max-running-requests
            --max-total-tokens --media-url-max-file-size-mb --mem-fraction-static
            --min-free-slots-delay --mm-attention-backend --mm-feature-transport
            --mm-global-cache-backend --mm-io-worker-num --mm-preprocess-cache-size-mb
            --mm-process-config --mm-processor-worker-num --model --model-config-parser
            --model-impl --model-loader-extra-config --model-path --modelexpress-config
            --modelopt-checkpoint-restore-path --modelopt-checkpoint-save-path
            --modelopt-export-path --modelopt-quant --moe-a2a-backend
            --moe-data-parallel-size --moe-dense-tp-size --moe-dp-size
            --moe-runner-backend --monokernel-backend --mooncake-ib-device
            --msprobe-dump-config --n-share-experts-fusion --nccl-init-addr --nccl-port
            --nnodes --node-rank --num-continuous-decode-steps
            --num-reserved-decode-tokens --offload-group-size --offload-mode
            --offload-num-in-group --offload-prefetch-step --optimistic-prefill-attempts
            --otlp-service-name --otlp-traces-endpoint --page-size
            --paged-experts-num-resident --pdmux-config-path --pipeline-parallel-size
            --ple-offload-backend --ple-offload-dir --port --pp-async-batch-depth
            --pp-max-micro-batch-size --pp-size --preferred-sampling-params
            --prefill-attention-backend --prefill-decode-interval
            --prefill-decode-interval-min-bs --prefill-delayer-max-delay-ms
            --prefill-delayer-max-delay-passes --prefill-delayer-queue-min-ratio
            --prefill-delayer-token-usage-low-watermark --prefill-kv-cache-dequant-dtype
            --prefill-max-requests --priority-scheduling-preemption-threshold
            --qsa-indexer-dtype --quantization --quantization-param-path
            --radix-cache-backend --radix-eviction-policy --radix-eviction-policy-config
            --random-seed --reasoning-parser --remote-instance-weight-loader-backend
            --remote-instance-weight-loader-seed-instance-ip
            --remote-instance-weight-loader-seed-instance-service-port
            --remote-instance-weight-loader-send-weights-group-ports --retraction-policy
            --return-hidden-states-mode --revision --rl-on-policy-target
            --rl-quant-profile --sampling-backend --sampling-defaults
            --sampling-mask-max-tokens --schedule-conservativeness --schedule-policy
            --scheduler-recv-interval --served-model-name --shared-experts-tp-size
            --sidecar --sidecar-args --sm-group-num --smg-http-sidecar-port
            --soft-watchdog-timeout --spec-trace-dir --speculative-accept-threshold-acc
            --speculative-accept-threshold-single --speculative-adaptive-config
            --speculative-algorithm --speculative-attention-mode
            --speculative-dflash-block-size --speculative-domino-candidate-pool-size
            --speculative-draft-attention-backend --speculative-draft-kv-cache-dtype
            --speculative-draft-load-format --speculative-draft-model
            --speculative-draft-model-path --speculative-draft-model-quantization
            --speculative-draft-model-revision --speculative-draft-sink-size
            --speculative-draft-window-size --speculative-dsa-topk-backend
            --speculative-dspark-block-size --speculative-dspark-confidence-sts-path
            --speculative-dspark-sps-table-path --speculative-eagle-topk
            --speculative-moe-a2a-backend --speculative-moe-runner-backend
            --speculative-ngram-capacity --speculative-ngram-external-corpus-max-tokens
            --speculative-ngram-external-corpus-path
            --speculative-ngram-external-sam-budget --speculative-ngram-match-type
            --speculative-ngram-max-bfs-breadth --speculative-ngram-max-trie-depth
            --speculative-ngram-min-bfs-breadth --speculative-num-draft-tokens
            --speculative-num-steps --speculative-token-map --ssl-ca-certs --ssl-certfile
            --ssl-keyfile --ssl-keyfile-password --startup-weight-load-mode
            --stream-interval --swa-full-tokens-ratio --swa-prefix-tails
            --tbo-token-distribution-threshold --tensor-parallel-size --tokenizer-backend
            --tokenizer-metrics-custom-labels-header --tokenizer-mode --tokenizer-path
            --tokenizer-worker-num --tool-call-parser --tool-server --torch-compile-max-bs
            --torchao-config --tp-size --trace-modules --triton-attention-num-kv-splits
            --triton-attention-split-tile-size --unified-cache-external-linker-backend
            --unified-cache-external-linker-config --uno-lora-path --warmups
            --watchdog-timeout --watermark-config --weight-cache-mode
            --weight-cache-socket --weight-cache-timeout
            --weight-loader-prefetch-num-threads --weight-version
        """,
    },
    "lmdeploy": {
        "flag": """
            --allow-credentials --allow-terminate-by-client --disable-fastapi-docs
            --disable-metrics --eager-mode --empty-init --enable-abort-handling
            --enable-eplb --enable-microbatch --enable-prefix-caching
            --enable-return-routed-experts --language-model-only --ssl --trust-remote-code
        """,
        "many": """
            --adapters --allow-headers --allow-methods --allow-origins
            --allowed-media-domains --api-keys --cudagraph-capture-batch-sizes
        """,
        "value": """
            --async --backend --cache-block-seq-len --cache-max-entry-count
            --chat-template --communicator --cp --device --dist-init-addr
            --distributed-executor-backend --dllm-block-length --dllm-confidence-threshold
            --dllm-denoising-steps --dllm-unmasking-strategy --download-dir --dp --dtype
            --ep --generation-config --hf-overrides --kernel-block-size
            --kv-transfer-config --log-level --logprobs-mode --max-batch-size
            --max-concurrent-requests --max-log-len --max-prefill-iters
            --max-prefill-token-num --migration-backend --model-format --model-name
            --moe-a2a-backend --nnodes --node-rank --num-gpu-blocks --num-tokens-per-iter
            --piecewise-cudagraph-max-tokens --prefix-cache-decode-state-interval
            --prefix-cache-state-budget --proxy-url --quant-policy --reasoning-parser
            --revision --role --rope-scaling-factor --server-name --server-port
            --session-len --speculative-algorithm --speculative-dflash-block-size
            --speculative-draft-model --speculative-num-draft-tokens --tool-call-parser
            --tp --vision-max-batch-size
        """,
    },
    "trtllm": {
        "flag": """
            --enable_chunked_prefill --fail_fast_on_attention_window_too_large
            --publish-events-and-metrics --trust-remote-code --trust_remote_code
        """,
        "value": """
            --backend --chat_template --cluster_size --config --context_parallel_size
            --cp_size --custom_module_dirs --custom_tokenizer --disagg_cluster_uri
            --disaggregation-mode --disaggregation-strategy --dyn-reasoning-parser
            --dyn-tool-call-parser --endpoint --ep_size --expert-parallel-size
            --extra-engine-args --extra_llm_api_options --free-gpu-memory-fraction
            --free_gpu_memory_fraction --gpus_per_node --host --kv-block-size
            --kv-cache-dtype --kv_cache_free_gpu_memory_fraction --log_level
            --max-batch-size --max-num-tokens --max-seq-len --max_batch_size
            --max_beam_width --max_num_tokens --max_seq_len --media_io_kwargs
            --metadata_server_config_file --model --model-path --moe_cluster_parallel_size
            --moe_expert_parallel_size --num_postprocess_workers --otlp_traces_endpoint
            --pipeline-parallel-size --pipeline_parallel_size --port --pp_size
            --reasoning-parser --reasoning_parser --revision --served-model-name
            --server_role --tensor-parallel-size --tensor_parallel_size --tokenizer
            --tool-call-parser --tool_parser --tp_size
        """,
    },
    "tgi": {
        "flag": """
            --disable-crash-reports --disable-custom-kernels --disable-grammar-support
            --enable-prefill-logprobs --env --json-output --trust-remote-code
        """,
        "value": """
            --api-key --cors-allow-origin --cuda-graphs --cuda-memory-fraction --dtype
            --graceful-termination-timeout --hostname --huggingface-hub-cache
            --kv-cache-dtype --lora-adapters --master-addr --master-port
            --max-batch-prefill-tokens --max-batch-size --max-batch-total-tokens
            --max-best-of --max-client-batch-size --max-concurrent-requests
            --max-input-length --max-input-tokens --max-stop-sequences --max-top-n-tokens
            --max-total-tokens --max-waiting-tokens --model-id --num-shard --otlp-endpoint
            --otlp-service-name --payload-limit --port --prometheus-port --quantize
            --revision --rope-factor --rope-scaling --served-model-name --shard-uds-path
            --sharded --speculate --tokenizer-config-path --usage-stats
            --validation-workers --waiting-served-ratio --watermark-delta
            --watermark-gamma --weights-cache-override
        """,
    },
    "llamacpp": {
        "flag": """
            --agent --backend-sampling --cache-idle-slots --cache-list --cache-prompt
            --check-tensors --completion-bash --cont-batching --context-shift --cors-credentials
            --cpu-moe --cpu-moe-draft --direct-io --embd-bge-small-en-default
            --embd-e5-small-en-default --embd-gemma-default --embd-gte-small-default --embedding
            --embeddings --escape --fim-qwen-1.5b-default --fim-qwen-14b-spec
            --fim-qwen-30b-default --fim-qwen-3b-default --fim-qwen-7b-default
            --fim-qwen-7b-spec --gpt-oss-120b-default --gpt-oss-20b-default --help --ignore-eos
            --jinja --kv-offload --kv-unified --list-devices --log-disable --log-jsonl
            --log-prefix --log-timestamps --log-verbose --lora-init-without-apply --metrics
            --mlock --mmap --mmproj-auto --mmproj-offload --models-autoload --no-agent
            --no-cache-idle-slots --no-cache-prompt --no-cont-batching --no-context-shift
            --no-cors-credentials --no-direct-io --no-escape --no-host --no-jinja
            --no-kv-offload --no-kv-unified --no-log-jsonl --no-log-prefix --no-log-timestamps
            --no-mmap --no-mmproj --no-mmproj-auto --no-mmproj-offload --no-models-autoload
            --no-op-offload --no-perf --no-prefill-assistant --no-reasoning-preserve --no-repack
            --no-skip-chat-parsing --no-slots --no-spec-draft-backend-sampling --no-ui
            --no-ui-mcp-proxy --no-warmup --no-webui --no-webui-mcp-proxy --offline --op-offload
            --perf --prefill-assistant --props --reasoning-preserve --repack --rerank
            --reranking --reuse-port --skip-chat-parsing --slots --spec-default
            --spec-draft-backend-sampling --spec-draft-cpu-moe --special --spm-infill --swa-full
            --tts-use-guide-tokens --ui --ui-mcp-proxy --usage --verbose --verbose-prompt
            --version --vision-gemma-12b-default --vision-gemma-4b-default --warmup --webui
            --webui-mcp-proxy -ag -bs -cb -cl -cmoe -cmoed -dio -e -h -kvo -kvu -ndio -nkvo
            -no-ag -no-kvu -nocb -nr -sp -v
        """,
        "optional": """
            --fit --flash-attn --log-colors -fa -fit
        """,
        "many": """
            --control-vector-layer-range --control-vector-scaled --lora-scaled --spec-replace
        """,
        "value": """
            --adaptive-decay --adaptive-target --alias --api-key --api-key-file --api-prefix
            --batch-size --cache-ram --cache-reuse --cache-type-k --cache-type-k-draft
            --cache-type-v --cache-type-v-draft --chat-template --chat-template-file
            --chat-template-kwargs --checkpoint-min-step --control-vector --cors-headers
            --cors-methods --cors-origins --cpu-mask --cpu-mask-batch --cpu-mask-batch-draft
            --cpu-mask-draft --cpu-range --cpu-range-batch --cpu-range-draft --cpu-strict
            --cpu-strict-batch --cpu-strict-batch-draft --cpu-strict-draft --ctx-checkpoints
            --ctx-size --ctx-size-draft --defrag-thold --device --device-draft --docker-repo
            --draft --draft-max --draft-min --draft-n --draft-n-min --draft-p-min
            --draft-p-split --dry-allowed-length --dry-base --dry-multiplier
            --dry-penalty-last-n --dry-sequence-breaker --dynatemp-exp --dynatemp-range
            --embd-normalize --fit-ctx --fit-target --frequency-penalty --gpu-layers
            --gpu-layers-draft --grammar --grammar-file --grp-attn-n --grp-attn-w --hf-file
            --hf-file-v --hf-repo --hf-repo-draft --hf-repo-v --hf-token --host
            --image-max-tokens --image-min-tokens --json-schema --json-schema-file --keep
            --kv-unified-per-slot --lazy-mode --load-mode --log-file --log-prompts-dir
            --log-verbosity --logit-bias --lookup-cache-dynamic --lookup-cache-static --lora
            --main-gpu --mcp-servers-config --mcp-servers-json --media-path --mem --min-p
            --mirostat --mirostat-ent --mirostat-lr --mmproj --mmproj-device --mmproj-url
            --model --model-draft --model-url --model-vocoder --models-dir --models-max
            --models-preset --mtmd-batch-max-tokens --n-cpu-ffn --n-cpu-moe --n-cpu-moe-draft
            --n-gpu-layers --n-gpu-layers-draft --n-predict --numa --override-kv
            --override-tensor --override-tensor-draft --parallel --path --poll --poll-batch
            --poll-batch-draft --poll-draft --pooling --port --predict --presence-penalty --prio
            --prio-batch --prio-batch-draft --prio-draft --reasoning --reasoning-budget
            --reasoning-budget-message --reasoning-effort --reasoning-format --repeat-last-n
            --repeat-penalty --reverse-prompt --rope-freq-base --rope-freq-scale --rope-scale
            --rope-scaling --rpc --sampler-seq --samplers --sampling-seq --seed
            --sleep-idle-seconds --slot-prompt-similarity --slot-save-path --spec-draft-cpu-mask
            --spec-draft-cpu-mask-batch --spec-draft-cpu-range --spec-draft-cpu-strict
            --spec-draft-cpu-strict-batch --spec-draft-device --spec-draft-hf --spec-draft-model
            --spec-draft-n-cpu-moe --spec-draft-n-max --spec-draft-n-min --spec-draft-ncmoe
            --spec-draft-ngl --spec-draft-override-tensor --spec-draft-p-min
            --spec-draft-p-split --spec-draft-poll --spec-draft-poll-batch --spec-draft-prio
            --spec-draft-prio-batch --spec-draft-threads --spec-draft-threads-batch
            --spec-draft-type-k --spec-draft-type-v --spec-ngram-map-k-min-hits
            --spec-ngram-map-k-size-m --spec-ngram-map-k-size-n --spec-ngram-map-k4v-min-hits
            --spec-ngram-map-k4v-size-m --spec-ngram-map-k4v-size-n --spec-ngram-min-hits
            --spec-ngram-mod-n-match --spec-ngram-mod-n-max --spec-ngram-mod-n-min
            --spec-ngram-simple-min-hits --spec-ngram-simple-size-m --spec-ngram-simple-size-n
            --spec-ngram-size-m --spec-ngram-size-n --spec-synth-len --spec-synth-rates
            --spec-type --split-mode --sse-ping-interval --ssl-cert-file --ssl-key-file
            --swa-checkpoints --tags --temp --temperature --tensor-split --threads
            --threads-batch --threads-batch-draft --threads-draft --threads-http --timeout
            --tools --tools-runtime --top-k --top-n-sigma --top-nsigma --top-p --typical
            --typical-p --ubatch-size --ui-config --ui-config-file --verbosity
            --video-ffmpeg-dir --video-fps --video-timestamp-interval --webui-config
            --webui-config-file --xtc-probability --xtc-threshold --yarn-attn-factor
            --yarn-beta-fast --yarn-beta-slow --yarn-ext-factor --yarn-orig-ctx -C -Cb -Cbd -Cd
            -Cr -Crb -Crd -a -b -c -cd -cms -cram -ctk -ctkd -ctv -ctvd -ctxcp -dev -devd -dr
            -dt -fitc -fitt -hf -hfd -hff -hffv -hfr -hfrd -hfrv -hft -hfv -j -jf -l -lcd -lcs
            -lm -lv -lzm -m -md -mg -mm -mmdev -mmu -mu -mv -n -ncffn -ncmoe -ncmoed -ngl -ngld
            -np -ot -otd -r -rea -s -sm -sps -t -tb -tbd -td -to -ts -ub
        """,
    },
}
"""Engine → kind → whitespace-separated option names."""


def _with_early_vllm(tables: dict[str, dict[str, str]]) -> frozenset[str]:
    """Add the options only vLLM releases before 0.8.5 have, under the kind they read as;
    return them."""
    vllm = tables["vllm"]
    known = {name for text in vllm.values() for name in text.split()}
    added = set()
    for option, kind in VLLM_EARLY["options"].items():
        if option not in known and kind in vllm:
            vllm[kind] = f"{vllm[kind]} {option}"
            added.add(option)
    return frozenset(added)


VLLM_EARLY_ONLY = _with_early_vllm(OPTION_TABLES)
"""The options of :data:`VLLM_EARLY` that no vLLM release from 0.8.5 has."""
