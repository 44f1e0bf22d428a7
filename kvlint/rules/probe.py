"""Rules about what ``kvlint probe`` measured (KV6xx)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.model.capacity import sequence_bytes_per_gpu
from kvlint.model.probe_thresholds import CACHE_CAUSE, ERROR_RATIO, STATIC_CACHE, WARNING_RATIO
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_bytes

if TYPE_CHECKING:  # imported when a probe ran: every other command stays lighter
    from kvlint.probe.result import ImplMeasurement, ProbeReport


class KvReadAmplification(Rule):
    """## What it does
    Flags an attention implementation that, measured by `kvlint probe`, reads more KV bytes
    per decode step than the geometry requires, or whose cache holds more than it needs:
    a warning from 1.3x theory, an error from 2x.

    ## Why is this bad?
    Decode is bound by memory bandwidth: every extra KV byte read per step is time per
    output token. Typical causes multiply the traffic: K/V copied to the query heads for
    grouped-query attention (`repeat_kv`, the group size, 4x for Llama-3.2-1B), MLA per-head
    K/V rebuilt from the latent every step or cached instead of it (8-71x), a static cache
    attended to its full length.

    ## Example
    ```console
    $ kvlint probe meta-llama/Llama-3.2-1B-Instruct --impl eager
    KV601 error  kv-read-amplification
      eager reads 5.00x the KV bytes one decode step needs ...
    ```

    ## Use instead
    An implementation that reads the cache once: `sdpa` (with `enable_gqa`, no mask),
    `flash_attention_2`, or an engine kernel (vLLM, SGLang, FlashInfer, FlashMLA) that
    keeps GQA heads shared and attends over the MLA latent with absorbed projections.

    ## Options
    Thresholds: 1.3x (warning) and 2x (error) of the larger of the read and cache ratios.

    ## References
    - kvlint's probe method: `kvlint probe --help`; the research note behind it covers
      DispatchMode accounting, the timing slope and Nsight Compute.
    """

    code = "KV601"
    name = "kv-read-amplification"
    severity = Severity.WARNING

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        probe = ctx.probe
        if probe is None:
            return
        for impl in probe.impls:
            if impl.verdict == "ok" or impl.skipped:
                continue
            finding = self.finding(_message(probe, impl), **_data(impl))
            yield replace(finding, severity=Severity.ERROR) if impl.verdict == "error" \
                else finding


def _message(probe: ProbeReport, m: ImplMeasurement) -> str:

    where = (f"at {probe.context:,} tokens x batch {probe.batch} over {probe.layers} "
             f"layer{'s' if probe.layers != 1 else ''} ({probe.device}, {probe.method})")
    if probe.method in ("metrics", "log"):
        where = ("per token per GPU, from the engine's "
                 f"{'metrics' if probe.method == 'metrics' else 'start-up log'}")
    parts = []
    if m.read_ratio is not None and m.read_ratio >= WARNING_RATIO:
        parts.append(f"{m.impl} reads {m.read_ratio:.2f}x the KV bytes one decode step needs "
                     f"({fmt_bytes(m.measured_read_bytes or 0)} against "
                     f"{fmt_bytes(m.theory_read_bytes)}) {where}")
    if m.cache_ratio is not None and m.cache_ratio >= WARNING_RATIO and \
            probe.method in ("metrics", "log"):
        parts.append(f"{m.impl} allocates {m.cache_ratio:.2f}x the KV bytes per token per GPU "
                     f"that the geometry needs ({fmt_bytes(m.measured_cache_bytes or 0)} "
                     f"against {fmt_bytes(m.theory_cache_bytes)})")
    elif m.cache_ratio is not None and m.cache_ratio >= WARNING_RATIO:
        parts.append(f"its cache holds {m.cache_ratio:.2f}x what it needs "
                     f"({fmt_bytes(m.measured_cache_bytes or 0)} against "
                     f"{fmt_bytes(m.theory_cache_bytes)})")
    text = "; ".join(parts) + "."
    if m.materializations:
        worst = max(m.materializations, key=lambda x: x.bytes)
        module = f" ({worst.module})" if worst.module else ""
        text += (f" Cause: {worst.op}{module} writes {worst.amplification:g}x the KV it reads "
                 f"({fmt_bytes(worst.bytes)} per step")
        others = len(m.materializations) - 1
        text += f"; {others} more cop{'ies' if others > 1 else 'y'})." if others else ")."
    text += "".join(f" {note[0].upper()}{note[1:]}." for note in m.notes
                    if note.startswith(CACHE_CAUSE))
    return text + f" Fix: {_fix(m)}"


def _fix(m: ImplMeasurement) -> str:

    ops = " ".join(x.op for x in m.materializations)
    if any(note.startswith(STATIC_CACHE) for note in m.notes):
        return ("decode with a DynamicCache, or size the static cache to the request "
                "(max_cache_len = prompt + max_new_tokens): a static cache is attended over "
                "all of its positions.")
    if m.impl == "vllm":
        return ("check the server's --kv-cache-dtype, its tensor-parallel degree against the "
                "KV heads (replication, KV204) and, for MLA, its attention backend "
                "(`kvlint check MODEL --engine vllm --engine-version V --tp N`).")
    if "aten.mm" in ops or "addmm" in ops or any("MLA" in n for n in m.notes):
        return ("serve MLA with an engine that caches the latent and absorbs the up-projection "
                "(vLLM >= 0.7.1, SGLang, FlashMLA); transformers rebuilds per-head K/V.")
    if "repeat" in ops or "clone" in ops or "query head" in " ".join(m.notes):
        return ("use attn_implementation='sdpa' without an attention mask (enable_gqa) or "
                "'flash_attention_2', which read the shared KV heads in place.")
    return "compare implementations with `kvlint probe --impl eager,sdpa,...`."


def _data(m: ImplMeasurement) -> dict[str, object]:

    return {"impl": m.impl, "read_ratio": m.read_ratio, "cache_ratio": m.cache_ratio,
            "measured_read_bytes": m.measured_read_bytes,
            "theory_read_bytes": m.theory_read_bytes,
            "measured_cache_bytes": m.measured_cache_bytes,
            "theory_cache_bytes": m.theory_cache_bytes,
            "thresholds": {"warning": WARNING_RATIO, "error": ERROR_RATIO}}


class StartOutOfMemory(Rule):
    """## What it does
    Reports a start-up log (`kvlint probe MODEL --engine-log FILE`) that ends in an
    out-of-memory error, the engine's own (TensorRT-LLM's or TurboMind's CUDA runtime error)
    or PyTorch's, and says whether kvlint's capacity for the same plan predicts it: the
    weights or one full-length sequence not fitting (KV501/KV503), or a start that fits,
    when what ran out lies outside kvlint's memory model.

    ## Why is this bad?
    The deployment as logged does not start. When kvlint's capacity agrees, its finding
    names the fix; when it does not, the memory went to something kvlint does not count
    (activation workspaces, a vision encoder, CUDA graphs, another process on the GPU), and
    the sizing needs a measured start, not a formula.

    ## Example
    ```console
    $ kvlint probe meta-llama/Llama-3.1-70B --engine-log lmdeploy.log --gpu RTX-3090
    KV602 error  start-out-of-memory
      LMDeploy ran out of GPU memory at start ('[TM][ERROR] CUDA runtime error: out of
      memory ...'); kvlint predicts the same: the weights do not fit (kvlint check's KV503).
    ```

    ## Use instead
    The fix of the capacity finding (a larger tensor-parallel degree, a quantized
    checkpoint, a shorter context); else a lower memory fraction for the engine's pool.

    ## References
    - The out-of-memory wordings read: PyTorch's `CUDACachingAllocator.cpp` (2.0, 2.1,
      2.2+), TurboMind's `cuda_utils.h`, TensorRT-LLM's `cudaUtils.h` (file@version in
      `kvlint/loaders/start_failures.py`).
    """

    code = "KV602"
    name = "start-out-of-memory"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        probe = ctx.probe
        if probe is None or probe.out_of_memory is None:
            return
        engine = ctx.plan.behaviour.label
        verdict, predicted = _predicted_start(ctx)
        yield self.finding(
            f"{engine} ran out of GPU memory at start ({probe.out_of_memory[:120]!r}); "
            f"{verdict}.", out_of_memory=probe.out_of_memory, predicted=predicted)


def _predicted_start(ctx: RuleContext) -> tuple[str, str]:
    """kvlint's verdict on the logged start in words, and as ``fails`` / ``starts`` /
    ``unknown``."""
    cap, a = ctx.capacity, ctx.analysis
    if cap is None or a is None:
        return ("kvlint has no GPU memory to size it against: give --gpu or --gpu-memory",
                "unknown")
    if not cap.weights_fit:
        return "kvlint predicts the same: the weights do not fit (kvlint check's KV503)", "fails"
    length = ctx.plan.max_model_len
    need = sequence_bytes_per_gpu(a, cap.sequence_tokens(length)) if length else None
    if cap.kv_budget_bytes_per_gpu <= 0 or (need is not None
                                            and need > cap.kv_budget_bytes_per_gpu):
        return ("kvlint predicts the same: one full-length sequence does not fit the KV "
                "memory left (kvlint check's KV501)", "fails")
    return (f"kvlint predicts a start with {cap.max_tokens:,} tokens of KV cache after "
            f"{fmt_bytes(cap.weight_bytes_per_gpu)} of weights per GPU: what ran out is "
            "outside its memory model (activation workspaces, a vision encoder, CUDA graphs, "
            "another process on the GPU)", "starts")


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [KvReadAmplification, StartOutOfMemory]
