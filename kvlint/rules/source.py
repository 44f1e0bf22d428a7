"""Rules about engine and model source code (KV4xx). The scanner (``kvlint scan``) raises
them from a static analysis of Python files; nothing is imported or run."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.rules.base import Rule, RuleContext


class _SourceRule(Rule):
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        return iter(())  # raised by kvlint.scan, which reads the sources


class GqaMaterialized(_SourceRule):
    """## What it does
    Flags code that copies K/V heads along the head dimension (`repeat_kv`,
    `repeat_interleave`, `expand` + `reshape`, `einops.repeat`) before attention reads them.

    ## Why is this bad?
    With grouped-query attention each KV head serves a group of query heads. Copying the KV
    heads to match the query heads makes every decode step read (and allocate) the group
    size times more KV bytes than the cache holds: 8x for Llama-3-70B.

    ## Example
    ```python
    key_states = repeat_kv(key_states, self.num_key_value_groups)
    attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
    ```

    ## Use instead
    An attention kernel that maps query heads to KV heads: SDPA with `enable_gqa=True`,
    FlashAttention, or an index mapping (`kv_head_mapping`) instead of copies.

    ## References
    - transformers `eager_attention_forward`, and its SDPA fallback when `enable_gqa` cannot
      be used.
    """

    code = "KV401"
    name = "gqa-materialized"
    severity = Severity.WARNING


class GqaMaterializedCache(_SourceRule):
    """## What it does
    Flags code whose cache stores K/V heads after they were copied to the query-head count.

    ## Why is this bad?
    The cache itself is the group size times larger than the model needs: the GQA saving is
    lost for memory as well as for bandwidth.

    ## Example
    ```python
    key_states = repeat_kv(key_states, self.num_key_value_groups)
    key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
    ```

    ## Use instead
    Cache the un-repeated KV heads and expand (or better, index) only inside attention.
    """

    code = "KV402"
    name = "gqa-materialized-cache"
    severity = Severity.ERROR


class MlaFullKvCache(_SourceRule):
    """## What it does
    Flags MLA code (DeepSeek-V2/V3 style) that caches the K/V produced by the latent
    up-projection (`kv_b_proj`) instead of the compressed latent.

    ## Why is this bad?
    The latent is 576 elements per token per layer for DeepSeek-V3; the up-projected per-head
    K/V are 128 x (192 + 128) = 40,960: about 71x more cache.

    ## Example
    ```python
    kv = self.kv_b_proj(self.kv_a_layernorm(compressed_kv))
    k_nope, value_states = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
    key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
    ```

    ## Use instead
    Cache `compressed_kv` and `k_pe` (the latent) and absorb `kv_b_proj` into the query and
    output projections, as vLLM, SGLang and FlashMLA do.
    """

    code = "KV403"
    name = "mla-full-kv-cache"
    severity = Severity.ERROR


class MlaNotAbsorbed(_SourceRule):
    """## What it does
    Flags MLA code that caches the latent but applies the up-projection to what the cache
    returns, rebuilding per-head K/V for every decode step.

    ## Why is this bad?
    The cache is small, but each step reads the whole latent history and writes ~71x more
    bytes of per-head K/V, so decode is bandwidth-bound on a copy.

    ## Example
    ```python
    latent = past_key_values.update(compressed_kv, k_pe, self.layer_idx)
    key_states, value_states = self.expand_kv(latent)
    ```

    ## Use instead
    Absorb the up-projection into the query and output sides (weight absorption) and attend
    over the latent directly.
    """

    code = "KV404"
    name = "mla-not-absorbed"
    severity = Severity.WARNING


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [GqaMaterialized, GqaMaterializedCache, MlaFullKvCache, MlaNotAbsorbed]
