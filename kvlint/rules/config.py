"""Rules about the config itself (KV9xx)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.rules.base import Rule, RuleContext


class ConfigUnresolved(Rule):
    """## What it does
    Reports a model whose attention geometry cannot be determined from its config.json:
    a needed field is missing (and transformers has no default for it), has the wrong
    type, or is impossible (zero heads, more KV heads than query heads, a hidden size that
    does not divide into the heads without an explicit `head_dim`, more experts per token
    than experts, a negative quantization bit width), or lies far beyond every real model
    (over 10,000 layers, over 65,536 heads, a head dim over 65,536).

    ## Why is this bad?
    kvlint cannot compute the KV cache, so none of the other checks ran for this model.
    An engine would fail on the same config, or silently guess.

    ## Example
    ```json
    {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
     "num_key_value_heads": 48, "hidden_size": 4096}
    ```

    ## Use instead
    Fix the field the message names (here `num_key_value_heads` <= 32), or point kvlint at
    the right revision of the model.
    """

    code = "KV900"
    name = "config-unresolved"
    severity = Severity.ERROR
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if ctx.analysis is None and ctx.problem:
            yield self.finding(ctx.problem, field=ctx.problem_field)


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [ConfigUnresolved]
