"""Rules about the model's attention layout itself (KV1xx)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry, AttentionKind, LayerGeometry
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_bytes, fmt_int, fmt_ratio, fmt_tokens


def _gqa_alternative(heads: int) -> int:
    """The KV-head count of a comparable GQA model: 8 (or the largest of 4, 2, 1 that
    divides the query heads and is smaller)."""
    return next((kv for kv in (8, 4, 2, 1) if kv < heads and heads % kv == 0), 1)


def _is_mha(layer: LayerGeometry) -> bool:
    """A layer caching one KV head per query head (more than one head)."""
    return (layer.holds_kv and not layer.is_mla and layer.entry_bytes is None
            and layer.num_kv_heads > 1 and layer.num_kv_heads == layer.num_attention_heads)


def _as_gqa(g: AttentionGeometry, alt: int) -> AttentionGeometry:
    """``g`` with each MHA layer's KV heads cut by the reference layer's factor
    (``heads / alt``); other layers (GQA, MLA, sliding with their own heads, recurrent)
    as they are."""
    factor = g.num_kv_heads // alt
    return replace(g, layers=tuple(
        replace(layer, num_kv_heads=max(layer.num_kv_heads // factor, 1))
        if _is_mha(layer) else layer for layer in g.layers))


class MhaKvCache(Rule):
    """## What it does
    Flags models with full multi-head attention: as many KV heads as query heads (in the
    layers that represent the model; layers with other shapes are counted as they are).

    ## Why is this bad?
    Every query head caches its own K and V, so the KV cache is the group size times
    larger than a grouped-query (GQA) model of the same shape. A GQA-8 variant of a
    32-head model needs 4x less memory per token and fits 4x the concurrent sequences.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-2-7b-hf --format concise
    meta-llama/Llama-2-7b-hf:1:1: KV101 Every one of the 32 query heads has its own KV head:
    524,288 B/token (512 KiB), 4.0 GiB per 8K-token sequence. A GQA-8 model of the same shape
    would need 131,072 B/token (4x less) and fit 4x the concurrent sequences in the same memory;
    an fp8 KV cache (--kv-cache-dtype fp8) halves it.
    ```

    ## Use instead
    A GQA or MLA model of similar quality (Llama-3.1-8B: 8 KV heads, 131,072 B/token),
    or an fp8 KV cache (`--kv-cache-dtype fp8`) to halve the bytes.

    ## References
    - Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models", 2023.
    """

    code = "KV101"
    name = "mha-kv-cache"
    severity = Severity.WARNING

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None or a.geometry.attention is not AttentionKind.MHA:
            return
        g = a.geometry
        heads = g.num_kv_heads
        if heads <= 1:
            return
        alt = _gqa_alternative(heads)
        mha = sum(1 for layer in g.layers if _is_mha(layer))
        gqa = _as_gqa(a.cached, alt)
        alt_bytes = kv.bytes_per_token(gqa, a.dtype)
        alt_seq = kv.bytes_per_sequence(gqa, a.dtype, ctx.plan.context,
                                        windowed=ctx.plan.windowed_sliding_cache)
        per_token = a.footprint.bytes_per_token
        token_ratio = per_token / alt_bytes if alt_bytes else 0.0
        seq_ratio = a.bytes_per_sequence / alt_seq if alt_seq else 0.0
        assumed = any("assumed MHA" in note for note in g.notes)
        where = "" if mha == g.num_kv_layers else f" in {mha} of {g.num_layers} layers"
        yield self.finding(
            f"Every one of the {heads} query heads has its own KV head{where}"
            f"{' (assumed: the config has no KV-head field)' if assumed else ''}: "
            f"{fmt_int(per_token)} B/token ({fmt_bytes(per_token)}), "
            f"{fmt_bytes(a.bytes_per_sequence)} per {fmt_tokens(ctx.plan.context)}-token "
            f"sequence. A GQA-{alt} model of the same shape would need {fmt_int(alt_bytes)} "
            f"B/token ({fmt_ratio(token_ratio)}x less) and fit {fmt_ratio(seq_ratio)}x the "
            "concurrent sequences in the same memory; an fp8 KV cache (--kv-cache-dtype fp8) "
            "halves it.",
            num_kv_heads=heads,
            mha_layers=mha,
            bytes_per_token=per_token,
            bytes_per_sequence=a.bytes_per_sequence,
            gqa_alternative_kv_heads=alt,
            gqa_alternative_bytes_per_token=alt_bytes,
            gqa_alternative_bytes_per_sequence=alt_seq,
            assumed=assumed,
        )


class MqaSingleKvHead(Rule):
    """## What it does
    Notes models whose query heads all share one KV head (multi-query attention).

    ## Why is this bad?
    It is not bad for memory: MQA has the smallest standard KV cache. But one head cannot
    be split by tensor parallelism, so every GPU of a TP group stores the whole cache and
    per-GPU KV capacity does not grow with tp (see KV201).

    ## Example
    ```console
    $ kvlint check tiiuae/falcon-7b --format concise
    tiiuae/falcon-7b:1:1: KV102 One KV head serves all 71 query heads: 8,192 B/token, 64.0 MiB
    per 8K-token sequence. The head cannot be split by tensor parallelism: add replicas (data
    parallelism) rather than tp to grow KV capacity.
    ```

    ## Use instead
    Scale an MQA model with data parallelism (more replicas) rather than a larger tp when
    the goal is KV capacity.
    """

    code = "KV102"
    name = "mqa-single-kv-head"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None or a.geometry.attention is not AttentionKind.MQA:
            return
        g = a.geometry
        single = [la for la in g.kv_layers if not la.is_mla and la.num_kv_heads == 1]
        where = ("" if len(single) == g.num_kv_layers
                 else f" in {len(single)} of {g.num_layers} layers")
        yield self.finding(
            f"One KV head serves all {g.num_attention_heads} query heads{where}: "
            f"{fmt_int(a.footprint.bytes_per_token)} B/token, "
            f"{fmt_bytes(a.bytes_per_sequence)} per {fmt_tokens(ctx.plan.context)}-token "
            "sequence. The head cannot be split by tensor parallelism: add replicas (data "
            "parallelism) rather than tp to grow KV capacity.",
            num_attention_heads=g.num_attention_heads,
            mqa_layers=len(single),
            bytes_per_token=a.footprint.bytes_per_token,
        )


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [MhaKvCache, MqaSingleKvHead]
