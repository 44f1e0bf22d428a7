"""Rules about fitting weights and KV into the GPUs (KV5xx). They run when a GPU is given."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.hookspecs import hookimpl
from kvlint.model.capacity import Capacity, longest_fitting_context, sequence_bytes_per_gpu
from kvlint.rules.advice import on_mig, sequence_fits, suggest_layout
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_bytes, fmt_int


def _budget(cap: Capacity) -> str:
    """``20.2 GiB (22.5 GiB x 0.90) - 15.0 GiB weights - 2.0 GiB overhead``."""
    if cap.kv_budget_source is not None:  # vLLM --kv-cache-memory-bytes: as given
        return f"set by {cap.kv_budget_source}"
    weights = ("~" if cap.weights_estimated else "") + fmt_bytes(cap.weight_bytes_per_gpu)
    m = cap.memory
    if m is not None:  # vLLM's own profile, its estimated terms marked ~
        return (f"{fmt_bytes(cap.gpu.memory_bytes)} x {cap.gpu_memory_utilization:.2f} - "
                f"{weights} weights - ~{fmt_bytes(m.activation_peak_bytes)} peak activation - "
                f"~{fmt_bytes(m.non_torch_bytes)} non-torch - ~{fmt_bytes(m.cuda_graph_bytes)} "
                "CUDA graphs" + (f" - ~{fmt_bytes(m.kv_margin_bytes)} KV cache margin"
                                 if m.kv_margin_bytes else ""))
    if cap.fraction_of_free_memory:
        return (f"({fmt_bytes(cap.gpu.memory_bytes)} - {weights} weights - "
                f"{fmt_bytes(cap.overhead_bytes)} overhead) x {cap.gpu_memory_utilization:.2f}")
    return (f"{fmt_bytes(cap.gpu.memory_bytes)} x {cap.gpu_memory_utilization:.2f} - {weights} "
            f"weights - {fmt_bytes(cap.overhead_bytes)} overhead")


def _what(total: int, state: int, noun: str = "of KV cache") -> str:
    """``2.0 GiB of KV cache``, or with recurrent state ``2.0 GiB (1.9 GiB of KV cache +
    64.0 MiB of recurrent state)``."""
    if not state:
        return f"{fmt_bytes(total)} {noun}"
    return (f"{fmt_bytes(total)} ({fmt_bytes(total - state)} {noun} + {fmt_bytes(state)} "
            "of recurrent state)")


def _gpu(cap: Capacity, ctx: RuleContext) -> str:
    """``H200 (from resources.gpu (line 8))``: the GPU and where it was chosen."""
    source = ctx.plan.gpu_source
    return f"{cap.gpu.name} (from {source})" if source else cap.gpu.name


class MaxModelLenExceedsKvBudget(Rule):
    """## What it does
    Flags a `max_model_len` (by default the model's own maximum context) for which not even
    one full-length sequence fits in the KV memory left on a GPU after weights and overhead.
    A sequence of a hybrid model (Mamba, linear attention) also needs its recurrent state,
    which the engine takes from the same memory. A vLLM or SGLang start whose KV pool holds
    no token at all (nothing left after the start-up profile; for SGLang, less than what it
    sets aside before pricing tokens) is flagged whatever the length.

    ## Why is this bad?
    vLLM checks this at start-up, after the weights are loaded, and exits with "To serve at
    least one request with the models's max seq len ... KV cache is needed, which is larger
    than the available KV cache memory" (V0: "The model's max seq len ... is larger than the
    maximum number of tokens that can be stored in KV cache"): minutes into a pod's start.
    The message opens with vLLM's words, so it can be matched with the log. vLLM counts whole KV
    blocks (the sequence, and the largest max_model_len it suggests), and when the start-up
    profile leaves nothing for the cache it exits with "No available memory for the cache
    blocks"; kvlint says the same. SGLang starts anyway and admits no request longer than
    its pool (``max_req_input_len``): a warning there; with no pool at all it stops ("Not
    enough memory. Please try to increase --mem-fraction-static."): an error.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-3.1-8B --gpu L4 --max-model-len 131072
    ```

    ## Use instead
    The largest max_model_len the message gives, more GPUs (tp), an fp8 KV cache, or a
    higher `--gpu-memory-utilization` (where it is below 1.0: vLLM 0.34 takes the whole GPU
    by default).
    """

    code = "KV501"
    name = "max-model-len-exceeds-kv-budget"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a, cap = ctx.analysis, ctx.capacity
        length = ctx.plan.max_model_len
        if a is None or cap is None or not cap.weights_fit:
            return
        if _pool_empty(ctx, cap):
            # no pool at all: the engine stops whatever the context length
            yield self._no_memory(ctx, cap, length)
            return
        if length is None:
            return
        # vLLM checks whole blocks: cdiv(max_model_len, block_size) pages per layer, and its
        # estimated maximum model length is the longest whose blocks fit
        # (v1/core/kv_cache_utils.py@v0.11.0 lines 633-723)
        need = sequence_bytes_per_gpu(a, cap.sequence_tokens(length))
        if need is None or need <= cap.kv_budget_bytes_per_gpu:
            return
        budget = max(cap.kv_budget_bytes_per_gpu, 0)
        longest = longest_fitting_context(a, budget, length)
        if cap.block_size:
            longest = longest // cap.block_size * cap.block_size
        state = a.state_bytes_per_sequence_per_gpu or 0
        # vLLM >= 0.34 already takes the whole GPU (gpu_memory_utilization 1.0)
        fixes = ("Lower --max-model-len, add GPUs (tp), use an fp8 KV cache, or raise "
                 "--kv-cache-memory-bytes." if cap.kv_budget_source is not None else
                 "Lower --max-model-len, add GPUs (tp), use an fp8 KV cache, or raise "
                 "--gpu-memory-utilization." if cap.gpu_memory_utilization < 1 else
                 "Lower --max-model-len, add GPUs (tp) or use an fp8 KV cache.")
        sglang = ctx.plan.behaviour.engine == "sglang"
        refusal = _vllm_refusal(ctx) if ctx.plan.behaviour.engine == "vllm" else ""
        head = (f"{refusal}{'o' if refusal else 'O'}ne {fmt_int(length)}-token sequence needs "
                f"{_what(need, state)} per GPU, more than the {fmt_bytes(budget)} left on each "
                f"{_gpu(cap, ctx)} ({_budget(cap)})")
        # SGLang starts anyway and admits requests up to its pool's size (managers/
        # tp_worker.py@0.5.5.post3 L295-299: max_req_len = min(context_len - 1,
        # max_total_num_tokens - 1)): a warning there
        tail = (f": SGLang starts, but no request longer than {fmt_int(longest)} tokens can "
                "run. Lower --context-length, add GPUs (tp), use an fp8 KV cache, or raise "
                "--mem-fraction-static." if sglang else
                f"; the largest max_model_len that fits is {fmt_int(longest)}. " + fixes)
        finding = self.finding(
            head + tail,
            suggestion=_fitting_length(ctx, longest),
            max_model_len=length,
            kv_bytes_needed_per_gpu=need,
            state_bytes_per_sequence_per_gpu=state,
            kv_budget_bytes_per_gpu=cap.kv_budget_bytes_per_gpu,
            largest_fitting_max_model_len=longest,
        )
        yield replace(finding, severity=Severity.WARNING) if sglang else finding


    def _no_memory(self, ctx: RuleContext, cap: Capacity, length: int | None) -> Finding:
        """vLLM's own refusal when nothing is left for the cache ("No available memory for
        the cache blocks": v1/core/kv_cache_utils.py@v0.11.0 lines 698-701; V0's
        ``raise_if_cache_size_invalid``, worker/worker.py@v0.6.4)."""
        if ctx.plan.behaviour.engine == "sglang":
            # its pool of max_total_num_tokens <= 0 (model_executor/model_runner.py@0.4.10.post1,
            # pool_configurator.py@0.5.23): it refuses to start
            empty = "" if cap.kv_budget_bytes_per_gpu <= 0 else \
                ": no token fits, since what SGLang sets aside before its per-token pool is larger"
            return self.finding(
                "SGLang will stop at start-up with \"Not enough memory. Please try to increase "
                "--mem-fraction-static.\": its KV pool is "
                f"~{fmt_bytes(cap.kv_budget_bytes_per_gpu)} on each {_gpu(cap, ctx)} "
                f"({_budget(cap)}){empty}. To start, raise "
                "--mem-fraction-static, add GPUs (tp) or quantize the weights.",
                max_model_len=length,
                kv_budget_bytes_per_gpu=cap.kv_budget_bytes_per_gpu,
                largest_fitting_max_model_len=0,
            )
        fixes = ("raise --kv-cache-memory-bytes" if cap.kv_budget_source is not None else
                 "raise --gpu-memory-utilization, " if cap.gpu_memory_utilization < 1 else "")
        return self.finding(
            f"vLLM will stop at start-up with \"No available memory for the cache blocks\": "
            f"Available KV cache memory ~{fmt_bytes(cap.kv_budget_bytes_per_gpu)} on each "
            f"{_gpu(cap, ctx)} ({_budget(cap)}). "
            f"To start, {fixes}lower --max-num-seqs or --max-num-batched-tokens (a smaller "
            "start-up profile), add GPUs (tp) or quantize the weights.",
            max_model_len=length,
            kv_budget_bytes_per_gpu=cap.kv_budget_bytes_per_gpu,
            largest_fitting_max_model_len=0,
        )


class MaxNumSeqsExceedsKvBudget(Rule):
    """## What it does
    Notes a `max_num_seqs` larger than the number of full-length sequences that fit in the
    KV memory of a GPU (each with its recurrent state, for hybrid models).

    ## Why is this bad?
    The engine will not run that many sequences at max_model_len at once: it preempts or
    queues them, so the batch size you planned throughput around is not reached.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-3.1-8B --gpu L4 --max-model-len 8192 --max-num-seqs 256
    ```

    ## Use instead
    A max_num_seqs no larger than the count the message gives, or more KV memory.
    """

    code = "KV502"
    name = "max-num-seqs-exceeds-kv-budget"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a, cap = ctx.analysis, ctx.capacity
        seqs = ctx.plan.max_num_seqs
        if a is None or cap is None or seqs is None or cap.max_sequences is None:
            return
        if seqs <= cap.max_sequences or not cap.weights_fit:
            return
        per_seq = sequence_bytes_per_gpu(a, cap.context) or 0
        state = cap.state_bytes_per_sequence_per_gpu
        budget = max(cap.kv_budget_bytes_per_gpu, 0)
        yield self.finding(
            f"max_num_seqs {fmt_int(seqs)} sequences of {fmt_int(cap.context)} tokens need "
            f"{_what(per_seq * seqs, state * seqs, 'of KV')} per GPU; {fmt_bytes(budget)} "
            f"on each {_gpu(cap, ctx)} holds {fmt_int(cap.max_sequences)}. Only that many run at "
            "full length at once; lower --max-num-seqs or add KV memory.",
            suggestion=Suggestion(f"use max_num_seqs={cap.max_sequences}",
                                  {"max_num_seqs": cap.max_sequences})
            if cap.max_sequences >= 1 else None,
            max_num_seqs=seqs,
            max_sequences=cap.max_sequences,
            bytes_per_sequence_per_gpu=per_seq,
            state_bytes_per_sequence_per_gpu=state,
        )


class WeightsExceedGpuMemory(Rule):
    """## What it does
    Flags weights that do not fit on each GPU of the plan, or that do not fit beside a KV
    cache whose size is set by hand (vLLM >= 0.10.2 `--kv-cache-memory-bytes`, which it
    reserves as given, without its memory profile).

    ## Why is this bad?
    The engine runs out of memory while loading the checkpoint, after downloading it, or while
    allocating the KV cache it was told to reserve. Weights that fit the GPU but not the
    share the engine may use load, and then the start stops with the engine's own refusal:
    vLLM's "No available memory for the cache blocks", SGLang's "Not enough memory. Please
    try to increase --mem-fraction-static."; the message quotes it.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-3.1-405B --gpu H100-80GB --tp 8
    ```

    ## Use instead
    More GPUs (tp x pp), quantized weights (fp8 halves bf16), or a larger GPU.
    """

    code = "KV503"
    name = "weights-exceed-gpu-memory"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        cap = ctx.capacity
        if cap is not None and cap.weights_fit and cap.kv_overflow_bytes:
            yield self._kv_set_by_hand(cap, ctx)
        if cap is None or cap.weights_fit:
            return
        layout = ctx.plan.layout
        fits = suggest_layout(ctx) if ctx.analysis is not None else None
        estimate = " (estimated from the config)" if cap.weights_estimated else ""
        room = (f" that leave room for one {fmt_int(ctx.plan.max_model_len)}-token sequence"
                if fits and ctx.plan.max_model_len and sequence_fits(ctx, fits) else "")
        need = (f"; tp={fits.tp}" + (f" x pp={fits.pp}" if fits.pp > 1 else "") +
                f" ({fits.gpus} such GPUs, the fewest with a tp valid for the model{room}) "
                "holds them" if fits else "")
        if fits is None and on_mig(ctx):
            need = ("; a CUDA process uses one MIG device, so more of them do not help: "
                    "serve on a larger MIG profile or on whole GPUs")
        where = f"tp={layout.tp}" + (f" pp={layout.pp}" if layout.pp > 1 else "")
        smaller = _smaller_quantization(ctx)
        offers = f"{fmt_bytes(cap.usable_bytes)}" + (
            "" if cap.fraction_of_free_memory else
            f" at {cap.fraction_name} {cap.gpu_memory_utilization:.2f}")
        yield self.finding(
            f"The weights need {fmt_bytes(cap.weight_bytes_per_gpu)} per GPU at {where}"
            f"{estimate}, but each {_gpu(cap, ctx)} offers {offers}"
            f"{_engine_refusal(cap, ctx)}{need}"
            f"{f'; or quantize the weights ({smaller})' if smaller else ''}.",
            suggestion=None if fits is None else fits.suggestion(
                "the fewest GPUs that hold the weights"),
            gpus_needed=fits.gpus if fits else None,
            weight_bytes_per_gpu=cap.weight_bytes_per_gpu,
            usable_bytes_per_gpu=cap.usable_bytes,
        )


    def _kv_set_by_hand(self, cap: Capacity, ctx: RuleContext) -> Finding:
        room = max(cap.gpu.memory_bytes - cap.weight_bytes_per_gpu, 0)
        estimate = " (estimated from the config)" if cap.weights_estimated else ""
        return self.finding(
            f"The KV cache {cap.kv_budget_source} sets "
            f"({fmt_bytes(cap.kv_budget_bytes_per_gpu)}) and the weights "
            f"({fmt_bytes(cap.weight_bytes_per_gpu)} per GPU{estimate}) need "
            f"{fmt_bytes(cap.kv_overflow_bytes)} more than each {_gpu(cap, ctx)} has "
            f"({fmt_bytes(cap.gpu.memory_bytes)}): the server runs out of memory at start. "
            f"Ask for less than {fmt_bytes(room)}, which is what the weights leave before "
            "activations and CUDA graphs, or leave it to gpu_memory_utilization.",
            weight_bytes_per_gpu=cap.weight_bytes_per_gpu,
            kv_cache_memory_bytes=cap.kv_budget_bytes_per_gpu,
            gpu_memory_bytes=cap.gpu.memory_bytes,
        )


def _pool_empty(ctx: RuleContext, cap: Capacity) -> bool:
    """Whether vLLM's or SGLang's KV pool holds no token: nothing left after the start-up
    profile, or (SGLang's DeepSeek-V4 pools) less than what is set aside before the pool is
    priced per token. Either engine then refuses to start (KV501's ``_no_memory``), whatever
    the context length."""
    return ctx.plan.behaviour.engine in ("vllm", "sglang") and (
        cap.kv_budget_bytes_per_gpu <= 0 or
        (cap.max_tokens <= 0 and ctx.plan.behaviour.engine == "sglang"))


def _vllm_refusal(ctx: RuleContext) -> str:
    """How vLLM words the refusal of a max_model_len whose KV cache does not fit: V0's
    ``raise_if_cache_size_invalid`` (vllm/worker/worker.py@0.4.1, @0.7.3 and @0.9.2), V1's
    ``check_enough_kv_cache_memory`` (kvlint/loaders/vllm_log_formats.json ``kv_needed``,
    0.7.3 to 0.34.0)."""
    from kvlint.model.memory import runs_v0

    cap = ctx.capacity
    if runs_v0(ctx.plan.behaviour.version, cap.gpu.name if cap is not None else ""):
        said = "is larger than the maximum number of tokens that can be stored in KV cache"
    else:
        said = "KV cache is needed, which is larger than the available KV cache memory"
    return f'vLLM stops at start-up ("... {said}"): '


def _engine_refusal(cap: Capacity, ctx: RuleContext) -> str:
    """How the engine stops when the weights overflow what it may use: past the GPU's own
    memory the checkpoint load runs out of memory; within it, vLLM loads them and its profile
    leaves no KV cache ("No available memory for the cache blocks": V1
    ``check_enough_kv_cache_memory``, v1/core/kv_cache_utils.py@v0.11.0; V0
    ``raise_if_cache_size_invalid``, worker/worker.py@v0.6.4), and SGLang's pool comes out
    empty ("Not enough memory. Please try to increase --mem-fraction-static.":
    model_executor/model_runner.py@0.2.15 to @0.5.5.post3, pool_configurator.py@0.5.23)."""
    if cap.fraction_of_free_memory:
        return ""
    engine = ctx.plan.behaviour.engine
    if cap.weight_bytes_per_gpu > cap.gpu.memory_bytes:
        return ": loading the checkpoint runs out of GPU memory (CUDA out of memory)" \
            if engine in ("vllm", "sglang") else ""
    if engine == "vllm":
        return (": vLLM loads them, then stops at start-up with \"No available memory for "
                "the cache blocks\" (its profile leaves nothing for the KV cache)")
    if engine == "sglang":
        return (": SGLang loads them, then stops with \"Not enough memory. Please try to "
                "increase --mem-fraction-static.\" (its KV pool comes out empty)")
    return ""


def _fitting_length(ctx: RuleContext, longest: int) -> Suggestion | None:
    """The largest max_model_len that fits; when not even one token does, the fewest GPUs
    that hold one full-length sequence."""
    if longest >= 1:
        return Suggestion(f"use max_model_len={longest}", {"max_model_len": longest})
    layout = ctx.plan.layout
    more = suggest_layout(ctx, accept=lambda c: c.gpus > layout.tp * layout.pp
                          and sequence_fits(ctx, c))
    return None if more is None else more.suggestion(
        f"one {ctx.plan.max_model_len}-token sequence fits")


def _smaller_quantization(ctx: RuleContext) -> str | None:
    """A weight format smaller than the checkpoint's: fp8 for 16/32-bit weights, 4-bit for
    8-bit ones, nothing below that."""
    if ctx.sizer is None:
        return "fp8"
    w = ctx.sizer.weights
    if w.quantized_bytes >= 1.5:  # 16 or 32 bits
        return "fp8"
    if w.quantized_bytes >= 0.75:  # 8 bits, scales included
        return f"4-bit, e.g. AWQ, GPTQ or NVFP4; the checkpoint is {w.format_name} already"
    return None


class SglangRequestTableExceedsHeadroom(Rule):
    """## What it does
    Flags an SGLang start whose request-to-token table does not fit in the memory
    `mem_fraction_static` leaves outside the KV pool. SGLang sizes the table after the pool:
    one int32 per request slot and position, `(slots + 1) x (context length + 4) x 4` bytes,
    with `--max-running-requests` slots or, by default, between 2,048 and 4,096
    (`model_runner.py`, every release read: 0.4.6 to 0.5.23).

    ## Why is this bad?
    The allocation fails with CUDA out of memory minutes into the start. A model whose own
    context is very long (Llama-4-Scout's 10M tokens) needs an 80 GiB table at SGLang's
    defaults, whatever its KV pool. SGLang's CUDA-graph capture then also needs
    `cuda-graph-max-bs x context length x 4` bytes of page indices from the same memory
    (twice that for Llama-4's chunked attention on Hopper), counted unless
    `--disable-cuda-graph` is given.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-4-Scout-17B-16E-Instruct --engine sglang --gpu H100-80GB --tp 8
    ```

    ## Use instead
    A `--context-length` the deployment needs, fewer `--max-running-requests`, or a lower
    `--mem-fraction-static` (more memory outside the pool).
    """

    code = "KV504"
    name = "sglang-request-table-exceeds-headroom"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        from kvlint.model.sglang_memory import headroom_bytes, request_table

        cap, length = ctx.capacity, ctx.plan.max_model_len
        if ctx.plan.behaviour.engine != "sglang" or cap is None or length is None or \
                not cap.weights_fit or cap.max_tokens <= 0:
            return
        layout = ctx.plan.layout
        slots, table = request_table(cap.max_tokens, length, ctx.plan.max_num_seqs)
        room = headroom_bytes(cap.gpu.memory_bytes, cap.gpu_memory_utilization, layout.tp,
                              layout.pp)
        graph_bs, graph = _graph_state(ctx, cap, length)
        if table + graph <= room:
            return
        given = "--max-running-requests" if ctx.plan.max_num_seqs else "SGLang's default"
        left = f"the {fmt_bytes(max(room, 0))} mem_fraction_static " \
            f"{cap.gpu_memory_utilization:.3f} leaves outside the KV pool"
        what = (f"SGLang's request-to-token table needs {fmt_bytes(table)} on each "
                f"{_gpu(cap, ctx)} ({fmt_int(slots + 1)} slots ({given}) x "
                f"{fmt_int(length + 4)} positions x 4 B)")
        if table > room:
            what += f", more than {left}: the start fails with CUDA out of memory after the " \
                "pool is allocated"
        else:
            what += (f", and the CUDA-graph decode state {fmt_bytes(graph)} more (page "
                     f"indices of {fmt_int(graph_bs)} captured sequences of {fmt_int(length)} "
                     f"tokens), together more than {left}: the start fails with CUDA out of "
                     "memory while capturing the graphs")
        yield self.finding(
            f"{what}. Lower --context-length or --max-running-requests"
            + (", or --cuda-graph-max-bs" if graph and table <= room else "")
            + ", or lower --mem-fraction-static.",
            request_slots=slots, request_table_bytes=table, headroom_bytes=room,
            context_length=length, cuda_graph_bytes=graph)


_HOPPER = frozenset({"H100", "H200", "H20", "H800", "GH200"})
"""GPUs on which SGLang serves Llama-4's chunked local attention with FlashAttention-3 (its
default backend on SM 9.0: server_args.py), whose graph state holds local block tables."""


def _graph_state(ctx: RuleContext, cap: Capacity, length: int) -> tuple[int, int]:
    """``(max_bs, bytes)`` of SGLang's CUDA-graph decode state for this start (0 bytes with
    CUDA graphs off): ``--cuda-graph-max-bs`` or the release's default for the GPU."""
    from packaging.version import Version

    from kvlint.model.geometry import LayerKind
    from kvlint.model.serving import release_of
    from kvlint.model.sglang_memory import (
        MIB,
        SglangStart,
        cuda_graph_state_bytes,
        default_cuda_graph_max_bs,
    )

    start = ctx.plan.engine_start
    if start is not None and start.cuda_graph_off:
        return 0, 0
    version = release_of(ctx.plan)
    layout = ctx.plan.layout
    max_bs = (start.cuda_graph_max_bs if start is not None else None) or \
        default_cuda_graph_max_bs(SglangStart(
            version, cap.gpu.memory_bytes // MIB, tp=layout.tp, pp=layout.pp,
            dp_attention=layout.dp_attention, dp_size=layout.dp))
    chunk = None
    if ctx.analysis is not None and (version is None or version >= Version("0.5.5")) and \
            cap.gpu.name.split("-")[0].upper() in _HOPPER:
        chunk = next((layer.window for layer in ctx.analysis.cached.kv_layers
                      if layer.kind is LayerKind.CHUNKED and layer.window), None)
    page = (start.page_size if start is not None else None) or 1
    return max_bs, cuda_graph_state_bytes(max_bs, length, page, chunk)


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [MaxModelLenExceedsKvBudget, MaxNumSeqsExceedsKvBudget, WeightsExceedGpuMemory,
            SglangRequestTableExceedsHeadroom]
