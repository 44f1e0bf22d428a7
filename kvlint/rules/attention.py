"""Rules about the model's attention layout itself (KV1xx)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.model.geometry import AttentionKind
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_bytes, fmt_int, fmt_tokens


def _gqa_alternative(heads: int) -> int:
    """The KV-head count of a comparable GQA model: 8 (or the largest of 4, 2, 1 that
    divides the query heads and is smaller)."""
    return next((kv for kv in (8, 4, 2, 1) if kv < heads and heads % kv == 0), 1)


class MhaKvCache(Rule):
    """## What it does
    Flags models with full multi-head attention: as many KV heads as query heads.

    ## Why is this bad?
    Every query head caches its own K and V, so the KV cache is the group size times
    larger than a grouped-query (GQA) model of the same shape. A GQA-8 variant of a
    32-head model needs 4x less memory per token and fits 4x the concurrent sequences.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-2-7b-hf
    KV101 warning mha-kv-cache: Every one of the 32 query heads has its own KV head:
    524,288 B/token (512 KiB), 4.0 GiB per 8K-token sequence ...
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
        alt_bytes = a.footprint.bytes_per_token * alt // heads
        assumed = any("assumed MHA" in note for note in g.notes)
        yield self.finding(
            f"Every one of the {heads} query heads has its own KV head"
            f"{' (assumed: the config has no KV-head field)' if assumed else ''}: "
            f"{fmt_int(a.footprint.bytes_per_token)} B/token "
            f"({fmt_bytes(a.footprint.bytes_per_token)}), "
            f"{fmt_bytes(a.bytes_per_sequence)} per {fmt_tokens(ctx.plan.context)}-token "
            f"sequence. A GQA-{alt} model of the same shape would need {fmt_int(alt_bytes)} "
            f"B/token ({heads // alt}x less) and fit {heads // alt}x the concurrent sequences "
            "in the same memory; an fp8 KV cache (--kv-cache-dtype fp8) halves it.",
            num_kv_heads=heads,
            bytes_per_token=a.footprint.bytes_per_token,
            bytes_per_sequence=a.bytes_per_sequence,
            gqa_alternative_kv_heads=alt,
            gqa_alternative_bytes_per_token=alt_bytes,
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
    $ kvlint check tiiuae/falcon-7b
    KV102 info mqa-single-kv-head: One KV head serves all 71 query heads: 8,192 B/token ...
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
        yield self.finding(
            f"One KV head serves all {g.num_attention_heads} query heads: "
            f"{fmt_int(a.footprint.bytes_per_token)} B/token, "
            f"{fmt_bytes(a.bytes_per_sequence)} per {fmt_tokens(ctx.plan.context)}-token "
            "sequence. The head cannot be split by tensor parallelism: add replicas (data "
            "parallelism) rather than tp to grow KV capacity.",
            num_attention_heads=g.num_attention_heads,
            bytes_per_token=a.footprint.bytes_per_token,
        )


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [MhaKvCache, MqaSingleKvHead]
