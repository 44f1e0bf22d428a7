#!/usr/bin/env bash
# GPU path of `kvlint probe`: time one-layer Llama-3.1-8B decode steps for three attention
# implementations over contexts planned from the GPU's L2 size, fit the slope against a
# measured streaming bandwidth, and write the report as JSON.
#
#   bench/probe_gpu.sh                 # writes ${OUT_DIR:-${OUT:-bench/out}}/probe_gpu.json
#   PYTHON=/path/to/python bench/probe_gpu.sh
#
# Needs torch with CUDA (the caller installs: pip install -e '.[probe]'); without CUDA it
# prints why it skipped and exits 0. Budget: under 2 minutes on an H100/H200.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
OUT_DIR="${OUT_DIR:-${OUT:-bench/out}}"
FIXTURE="fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json"

if ! "$PYTHON" -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    echo "no CUDA: GPU probe skipped"
    exit 0
fi

mkdir -p "$OUT_DIR"
start=$(date +%s)
# Exit 1 means findings (eager's GQA copy is a KV601 error): that is the result, not a failure.
rc=0
timeout 110 "$PYTHON" -m kvlint probe "$FIXTURE" \
    --device cuda --impl eager,sdpa,flash_attention_2 --layers 1 --batch 8 \
    --format json -o "$OUT_DIR/probe_gpu.json" || rc=$?
elapsed=$(( $(date +%s) - start ))
if [[ $rc -gt 1 ]]; then
    [[ $rc -eq 124 ]] && echo "GPU probe timed out after ${elapsed} s" >&2
    echo "GPU probe failed (exit $rc)" >&2
    exit "$rc"
fi
if [[ ! -s "$OUT_DIR/probe_gpu.json" ]]; then
    echo "GPU probe wrote no report to $OUT_DIR/probe_gpu.json" >&2
    exit 1
fi
echo "GPU probe: $OUT_DIR/probe_gpu.json (exit $rc, ${elapsed} s)"

# Optional, outside the 2-minute budget: DRAM bytes of the attention kernels from Nsight
# Compute (needs ncu on PATH and profiling permissions). KVLINT_NCU=1 bench/probe_gpu.sh
if [[ "${KVLINT_NCU:-0}" == "1" ]]; then
    if ! command -v ncu >/dev/null 2>&1; then
        echo "KVLINT_NCU=1 but ncu is not on PATH: Nsight Compute run skipped"
        exit 0
    fi
    rc=0
    timeout 600 "$PYTHON" -m kvlint probe "$FIXTURE" \
        --device cuda --ncu --impl eager,sdpa --layers 1 --batch 8 \
        --format json -o "$OUT_DIR/probe_ncu.json" || rc=$?
    if [[ $rc -gt 1 ]]; then
        echo "Nsight Compute probe failed (exit $rc)" >&2
        exit "$rc"
    fi
    echo "Nsight Compute probe: $OUT_DIR/probe_ncu.json (exit $rc)"
fi
