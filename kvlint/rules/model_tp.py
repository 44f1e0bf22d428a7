"""Tensor-parallel degrees the model's own construction refuses (KV207)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.model import kv
from kvlint.model.model_tp import model_tp_refusals
from kvlint.rules.base import Rule, RuleContext


class TpRefusedByModel(Rule):
    """## What it does
    Flags a tensor-parallel degree at which the engine cannot build the model for a reason
    other than its attention heads (KV202/KV203 cover those):

    * Mamba-2 layers (Nemotron-H, Nemotron-3, Falcon-H1, Granite-4 hybrid, Zamba2) need
      `n_groups` divisible by tp, or `n_groups == 1` (vLLM then replicates the one group);
      and the Mamba heads and inner size divisible by tp;
    * Mamba-1, gated-delta-net (Qwen3-Next, Qwen3.5), KDA (Kimi-Linear), short-conv (LFM2)
      and lightning-attention layers need their heads or channels divisible by tp;
    * a few model classes split the KV heads without replicating them where vLLM's other
      models would (`GptOssForCausalLM`: `num_key_value_heads // tp`, zero at tp=16 for
      gpt-oss's 8 KV heads);
    * other counts a model's code splits evenly over the GPUs, as its family declares them
      (DeepSeek-V4's `o_groups`: 8 groups, so tp=16 leaves a GPU with none).

    The divisibilities are those vLLM 0.33.0 asserts (`mamba_mixer2.py`, the state-shape
    calculators of `mamba_utils.py`, each model file); the message cites the file. SGLang
    (0.5.23) asserts the same Mamba-2 group rule; the KV-head cases are vLLM's alone (SGLang's
    gpt-oss replicates KV heads).

    ## Why is this bad?
    The engine fails while building the model (an assertion or a division by zero), minutes
    into a pod's life after the weights were downloaded; no per-GPU figure exists for such a
    tp.

    ## Example
    ```console
    $ kvlint check nvidia/Nemotron-H-56B-Base-8K --tp 16 --format concise
    nvidia/Nemotron-H-56B-Base-8K:1:1: KV207 vLLM 0.34.0 (newest known) cannot build this
    model at tp=16: mamba n_groups (8) is neither 1 nor divisible by tp=16: vLLM replicates
    the groups over the head shards only when there is one group (vLLM 0.33.0
    model_executor/layers/mamba/mamba_mixer2.py:320). Use tp ∈ {1, 2, 4, 8}, with pipeline
    or data parallelism for the other GPUs.
    ```

    ## Use instead
    One of the degrees the message lists, with pipeline or data parallelism for the other
    GPUs (`--tp 8 --pp 2`, or two replicas at tp=8).
    """

    code = "KV207"
    name = "tp-refused-by-model"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None:
            return
        b = ctx.plan.behaviour
        tp = ctx.plan.layout.attention_tp
        g = a.geometry
        refusals = model_tp_refusals(g, tp, b.engine)
        if not refusals:
            return
        limit = max(64, g.num_attention_heads)
        valid = [t for t in kv.valid_tp_degrees(a.cached, limit, b.kv_sharding)
                 if not model_tp_refusals(g, t, b.engine)]
        reasons = "; ".join(r.message for r in refusals)
        read_in: dict[str, list[str]] = {}  # the wheel each source was read in
        for version, source in sorted({(r.read_in, r.source) for r in refusals}):
            read_in.setdefault(version, []).append(source)
        sources = "; vLLM ".join(f"{v} {', '.join(paths)}" for v, paths in read_in.items())
        fix = (f"Use tp \u2208 {{{', '.join(map(str, valid))}}}, with pipeline or data "
               "parallelism for the other GPUs." if valid else
               f"No tp up to {limit} works: serve it unsharded or with pipeline parallelism.")
        yield self.finding(
            f"{b.label} cannot build this model at tp={tp}: {reasons} (vLLM {sources}). "
            f"{fix}",
            engine=b.engine,
            tp=tp,
            refusals=[{"what": r.what, "value": r.value, "requirement": r.rule,
                       "source": r.source} for r in refusals],
            valid_tp=valid,
        )


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [TpRefusedByModel]
