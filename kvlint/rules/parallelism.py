"""Rules about splitting the KV cache over GPUs (KV2xx), vLLM semantics (docs/design.md §4)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.hookspecs import hookimpl
from kvlint.model import kv
from kvlint.model.copies import exact_text, replicated_caches, replicated_part
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.model_tp import model_tp_refusals
from kvlint.model.serving import sequence_bytes_per_gpu
from kvlint.rules.advice import Layout, attention_tp, suggest_layout
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_bytes, fmt_int, fmt_ratio, fmt_tokens


def _valid_list(g: AttentionGeometry, sharding: str) -> list[int]:
    return list(kv.valid_tp_degrees(g, max(64, g.num_attention_heads), sharding))


def _valid(g: AttentionGeometry, sharding: str) -> str:
    return "{" + ", ".join(map(str, _valid_list(g, sharding))) + "}"


def _tp_label(ctx: RuleContext) -> str:
    layout = ctx.plan.layout
    if layout.dp_attention and layout.dp > 1:
        return f"attention tp={layout.attention_tp} (tp={layout.tp} / dp={layout.dp})"
    return f"tp={layout.tp}"


def _kv_head_layers(g: AttentionGeometry) -> Counter[int]:
    """KV-head count -> number of standard-attention layers with it."""
    return Counter(layer.num_kv_heads for layer in g.kv_layers if not layer.is_mla)


def _layers_note(g: AttentionGeometry, count: int) -> str:
    return "" if count == g.num_kv_layers else f" ({count} of {g.num_layers} layers)"


def _valid_layout(ctx: RuleContext) -> Suggestion | None:
    """A tp the engine accepts, on as many GPUs as the plan's when one is."""
    layout = ctx.plan.layout
    better = suggest_layout(ctx, gpus=layout.tp * layout.pp)
    return None if better is None else better.suggestion(
        "a tp the engine accepts for this model")


class TpReplicatesKvHeads(Rule):
    """## What it does
    Flags a tensor-parallel degree larger than the model's KV-head count, where the engine
    replicates each KV head on several GPUs.

    ## Why is this bad?
    vLLM and SGLang give each GPU at least one KV head: with 8 KV heads at tp=16 every head
    is stored twice, so the group spends twice the memory on the same KV. The duplicates
    are pure waste: per-GPU capacity stops growing with tp.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-3.1-8B --tp 16 --format concise
    meta-llama/Llama-3.1-8B:1:1: KV201 8 KV heads over tp=16: each head is stored on 2 GPUs; the
    group holds 262,144 B/token for 131,072 B of KV, 131,072 of them duplicates (1.0 GiB per
    8K-token sequence; replication 2x). Use a tp that divides 8 and pipeline or data parallelism
    for the remaining GPUs.
    ```

    ## Use instead
    Use a tp no larger than the KV-head count and put the other GPUs into pipeline or data
    parallelism (`--tp 8 --pp 2`, or two replicas at tp=8).
    """

    code = "KV201"
    name = "tp-replicates-kv-heads"
    severity = Severity.WARNING

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None or not a.footprint.kv_ok:
            return
        tp = ctx.plan.layout.attention_tp
        if model_tp_refusals(a.geometry, tp, ctx.plan.behaviour.engine):
            return  # the engine cannot build the model at this tp (KV207)
        sharding = ctx.plan.behaviour.kv_sharding
        g = a.cached
        per_gpu = {n: kv.kv_heads_per_gpu(n, tp, sharding) or n for n in _kv_head_layers(g)}
        replicated = {n: c for n, c in _kv_head_layers(g).items() if per_gpu[n] * tp > n}
        if not replicated or sharding == "layers":
            return
        listed = ", ".join(
            f"{n} KV head{'s' if n > 1 else ''}{_layers_note(g, c)}"
            for n, c in sorted(replicated.items())
        )
        how = "; ".join(
            f"each head is stored on {tp // n} GPUs" if per_gpu[n] == 1 and tp % n == 0
            else f"{ctx.plan.behaviour.display} holds {per_gpu[n]} per GPU, {per_gpu[n] * tp} "
                 f"head copies for {n} heads"
            for n in sorted(replicated)
        )
        fp = a.footprint
        cluster = fp.bytes_per_token_cluster or 0
        dup = fp.duplicate_bytes_per_token or 0
        dup_seq = a.duplicate_bytes_per_sequence or 0
        fewest = min(replicated)
        heads = sorted(_kv_head_layers(g))

        def unreplicated(c: Layout) -> bool:
            t = attention_tp(ctx, c.tp)
            return all((kv.kv_heads_per_gpu(n, t, sharding) or n) * t <= n for n in heads)

        layout = ctx.plan.layout
        better = suggest_layout(ctx, gpus=layout.tp * layout.pp, accept=unreplicated)
        advice = (
            "A single KV head cannot be split: serve more replicas (data parallelism) "
            "instead of a larger tp." if fewest == 1 else
            f"Use a tp that divides {fewest} and pipeline or data parallelism for the "
            "remaining GPUs.")
        yield self.finding(
            f"{listed} over {_tp_label(ctx)}: {how}; the group holds {fmt_int(cluster)} B/token "
            f"for {fmt_int(fp.bytes_per_token)} B of KV, {fmt_int(dup)} of them duplicates "
            f"({fmt_bytes(dup_seq)} per {fmt_tokens(ctx.plan.context)}-token sequence; "
            f"replication {fmt_ratio(fp.replication_factor or 1.0)}x). {advice}",
            suggestion=None if better is None else better.suggestion(
                "no KV head is stored twice"),
            tp=tp,
            kv_heads=sorted(replicated),
            replication_factor=fp.replication_factor,
            bytes_per_token=fp.bytes_per_token,
            bytes_per_token_cluster=cluster,
            duplicate_bytes_per_token=dup,
            duplicate_bytes_per_sequence=dup_seq,
        )


class TpIndivisibleKvHeads(Rule):
    """## What it does
    Flags a tensor-parallel degree the engine refuses for the model's KV heads.

    ## Why is this bad?
    vLLM needs the KV heads divisible by tp (tp <= KV heads) or tp divisible by the KV
    heads (tp > KV heads). Otherwise the engine fails at start-up, minutes into a pod's
    life, after the weights were downloaded.

    ## Example
    ```console
    $ kvlint check microsoft/phi-4 --tp 8 --format concise
    microsoft/phi-4:1:1: KV202 vLLM 0.34.0 (newest known) refuses tp=8 for 10 KV heads: 10 is
    neither divisible by 8 nor a divisor of it. Use tp ∈ {1, 2, 5, 10, 20, 40}.
    ```

    ## Use instead
    One of the valid degrees the message lists (for phi-4: 1, 2, 5, 10, 20, 40).
    """

    code = "KV202"
    name = "tp-indivisible-kv-heads"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None or a.footprint.kv_ok:
            return
        tp = ctx.plan.layout.attention_tp
        b = ctx.plan.behaviour
        bad = sorted(n for n in _kv_head_layers(a.cached)
                     if kv.kv_heads_per_gpu(n, tp, b.kv_sharding) is None)
        if not bad:
            return  # the heads fit; a recurrent state that does not split is KV207's
        counts = " and ".join(f"{n}" for n in bad)
        if b.kv_sharding == "replicate":
            why = f"{counts} is neither divisible by {tp} nor a divisor of it"
            alternative = ""
        else:
            mqa = " (MQA excepted)" if b.kv_sharding == "refuse-except-mqa" else ""
            why = ("it shards KV heads without replicating them, so the KV heads must be a "
                   f"multiple of tp{mqa}")
            alternative = (", or vLLM/SGLang/TensorRT-LLM, which replicate heads"
                           if b.kv_sharding in ("refuse", "refuse-except-mqa") else "")
        yield self.finding(
            f"{b.label} refuses {_tp_label(ctx)} for {counts} KV heads: {why}. Use tp "
            f"\u2208 {_valid(a.cached, b.kv_sharding)}{alternative}.",
            suggestion=_valid_layout(ctx),
            engine=b.engine,
            tp=tp,
            kv_heads=bad,
            valid_tp=_valid_list(a.cached, b.kv_sharding),
        )


class TpIndivisibleAttentionHeads(Rule):
    """## What it does
    Flags a tensor-parallel degree that does not divide the query-head count.

    ## Why is this bad?
    Every engine that shards attention by heads (vLLM, SGLang, TensorRT-LLM, TGI,
    LMDeploy) requires `num_attention_heads % tp == 0` and refuses to start otherwise.

    ## Example
    ```console
    $ kvlint check 01-ai/Yi-34B --tp 16 --format concise
    01-ai/Yi-34B:1:1: KV203 56 attention heads do not split over tp=16 (56 % 16 = 8): every
    head-sharding engine refuses it. Valid on vLLM 0.34.0 (newest known) for this model: tp ∈
    {1, 2, 4, 8, 56}.
    ```

    ## Use instead
    A tp that divides the head count (Yi-34B: 1, 2, 4, 8), with pipeline parallelism for
    more GPUs.
    """

    code = "KV203"
    name = "tp-indivisible-attention-heads"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None or a.footprint.heads_ok:
            return
        g = a.cached
        tp = ctx.plan.layout.attention_tp
        counts = sorted({g.num_attention_heads} | {la.num_attention_heads for la in g.kv_layers})
        bad = [n for n in counts if n % tp]
        yield self.finding(
            f"{' and '.join(map(str, bad))} attention heads do not split over "
            f"{_tp_label(ctx)} ({bad[0]} % {tp} = {bad[0] % tp}): every head-sharding "
            f"engine refuses it. Valid on {ctx.plan.behaviour.label} for this model: "
            f"tp \u2208 {_valid(g, ctx.plan.behaviour.kv_sharding)}.",
            suggestion=_valid_layout(ctx),
            tp=tp,
            num_attention_heads=bad,
        )


class MlaLatentReplicated(Rule):
    """## What it does
    Flags an MLA model (DeepSeek-V2/V3, Kimi-K2, MiniCPM3), or a model with a cache every
    GPU holds whole (a sparse-attention indexer, a compressed KV stream: DeepSeek-V3.2,
    GLM-5, DeepSeek-V4), served with tensor-parallel attention.

    ## Why is this bad?
    The MLA latent (kv_lora_rank + qk_rope_head_dim per token per layer) has no head
    dimension to shard, nor have the indexer's keys: every rank of the TP group stores the
    whole cache. At tp=16 the group holds 16 copies and per-GPU KV capacity does not grow
    with tp.

    ## Example
    ```console
    $ kvlint check deepseek-ai/DeepSeek-V2 --tp 16
    KV204 warning mla-latent-replicated: ... each of the 16 GPUs stores the full
    69,120 B/token ...
    ```

    ## Use instead
    Data-parallel attention, so each rank caches only its own requests: SGLang
    `--enable-dp-attention --dp 16`, vLLM `--data-parallel-size 16
    --enable-expert-parallel` (kvlint: `--dp 16 --dp-attention`). Each rank then holds the
    attention weights whole (they are split over the attention TP group only): with a GPU
    given, kvlint offers this fix only where the weights still fit that way, and otherwise
    says they would not.
    """

    code = "KV204"
    name = "mla-latent-replicated"
    severity = Severity.WARNING

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        layout = ctx.plan.layout
        tp = layout.attention_tp
        if a is None or tp <= 1 or not a.footprint.kv_ok:
            return
        if ctx.plan.behaviour.kv_sharding == "layers":
            return  # layer split: each GPU holds its own layers' caches once
        part = replicated_part(a.cached)
        logical = kv.bytes_per_token_exact(part, a.dtype)
        if not logical:
            return  # nothing replicated (KV301 covers engines caching MLA as full K/V)
        fp = a.footprint
        held = kv.footprint(part, a.dtype, layout).bytes_per_token_per_gpu_exact or logical
        seq = kv.bytes_per_sequence(part, a.dtype, ctx.plan.context,
                                    windowed=ctx.plan.windowed_sliding_cache, with_state=False)
        price = ctx.plan.behaviour.pool_token_bytes
        if price is not None:  # the engine's own unit (SGLang's DeepSeek-V4 pools): all held
            logical = held = price
            seq = sequence_bytes_per_gpu(a.cached, a.dtype, ctx.plan, layout,
                                         ctx.plan.context) or 0
        dup = (tp - 1) * logical
        dup_seq = (tp - 1) * seq
        what = replicated_caches(part)
        whole = ("" if held == fp.bytes_per_token_per_gpu_exact
                 else f" of its {fmt_int(fp.bytes_per_token_per_gpu or 0)} B/token")
        # attention DP holds the attention projections whole on every rank: a fix only where
        # the weights still fit then
        sizer, full = ctx.sizer, layout.tp
        grown = sizer.weights.per_gpu(full, layout.pp, 1) + sizer.adapter_bytes \
            if sizer is not None else None
        fits = sizer is None or grown is None or grown <= sizer.usable_bytes
        advice = ("Use data-parallel attention (SGLang --enable-dp-attention; vLLM "
                  "--data-parallel-size with --enable-expert-parallel) so each rank caches "
                  "only its own requests." if fits else
                  "Data-parallel attention, which caches each rank's requests only, would "
                  "hold the attention weights whole on every GPU "
                  f"({fmt_bytes(grown or 0)} of weights per GPU): they would not fit here.")
        yield self.finding(
            f"The {what} not sharded by tensor parallelism: each of the "
            f"{tp} GPUs of {_tp_label(ctx)} stores the full {exact_text(held)} B/token{whole}, "
            f"so {exact_text(dup)} B/token are copies ({fmt_bytes(dup_seq)}"
            f" per {fmt_tokens(ctx.plan.context)}-token sequence across the group). Per-GPU "
            "KV capacity does not grow with tp. " + advice,
            suggestion=Suggestion(
                f"use data-parallel attention over the {ctx.plan.layout.tp} GPUs (dp="
                f"{ctx.plan.layout.tp}, dp_attention)",
                {"dp": ctx.plan.layout.tp, "dp_attention": True}) if fits else None,
            tp=tp,
            replication_factor=fp.replication_factor,
            bytes_per_token_per_gpu=fp.bytes_per_token_per_gpu,
            replicated_bytes_per_token_per_gpu=kv.exact_number(held),
            duplicate_bytes_per_token=kv.exact_number(dup),
            duplicate_bytes_per_sequence=dup_seq,
        )


class PpUnevenLayers(Rule):
    """## What it does
    Notes a pipeline-parallel degree that does not divide the number of layers.

    ## Why is this bad?
    vLLM gives the leftover layers one each to the stages before the last, so one stage
    holds more layers and more KV per token than the others; the fullest stage limits how
    many tokens fit, and the other GPUs' spare memory is unused.

    ## Example
    ```console
    $ kvlint check deepseek-ai/DeepSeek-V3 --tp 8 --pp 2 --format concise
    deepseek-ai/DeepSeek-V3:1:1: KV205 61 layers over pp=2 split 31/30 (vLLM gives the extra
    layers to the stages before the last): the fullest stage holds 31 layers and 35,712 B/token
    per GPU, and it bounds how many tokens fit. Use a pp that divides the layer count, or set
    VLLM_PP_LAYER_PARTITION.
    ```

    ## Use instead
    A pp that divides the layer count, or `VLLM_PP_LAYER_PARTITION` to place layers by hand.
    """

    code = "KV205"
    name = "pp-uneven-layers"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        pp = ctx.plan.layout.pp
        if a is None or pp <= 1 or a.geometry.num_layers % pp == 0:
            return
        stages = a.footprint.stages
        per_gpu = a.footprint.bytes_per_token_per_gpu
        cost = "" if per_gpu is None else f" and {fmt_int(per_gpu)} B/token per GPU"
        yield self.finding(
            f"{a.geometry.num_layers} layers over pp={pp} split "
            f"{'/'.join(map(str, stages))} (vLLM gives the extra layers to the stages before "
            f"the last): the fullest stage holds {max(stages)} layers{cost}, and it bounds "
            "how many tokens fit. Use a pp that divides the layer count, or set "
            "VLLM_PP_LAYER_PARTITION.",
            suggestion=_even_stages(ctx),
            pp=pp,
            stages=list(stages),
            bytes_per_token_per_gpu=a.footprint.bytes_per_token_per_gpu,
        )


def _even_stages(ctx: RuleContext) -> Suggestion | None:
    assert ctx.analysis is not None
    layers = ctx.analysis.geometry.num_layers
    layout = ctx.plan.layout
    better = suggest_layout(ctx, gpus=layout.tp * layout.pp,
                            accept=lambda c: layers % c.pp == 0)
    return None if better is None else better.suggestion(
        f"stages of equal size for {layers} layers")


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [TpReplicatesKvHeads, TpIndivisibleKvHeads, TpIndivisibleAttentionHeads,
            MlaLatentReplicated, PpUnevenLayers]
