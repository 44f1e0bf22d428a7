"""Serving layouts rules propose: the tp x pp that clears a finding without causing
another (a tp the engine refuses for the heads, KV heads or recurrent state; weights that do
not fit; no room for one full-length sequence)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from kvlint.diagnostics import Suggestion
from kvlint.model import kv
from kvlint.model.limits import MAX_PARALLEL
from kvlint.model.serving import sequence_bytes_per_gpu
from kvlint.rules.base import RuleContext

MAX_STAGES = 16
"""Pipeline degrees a suggestion considers."""
MAX_TP = 64
FIT_TRIES = 12
"""Layouts of a pool tried, in order, for one where a full-length sequence fits."""


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def suggestion(self, why: str = "") -> Suggestion:
        text = f"use tp={self.tp}" + (f", pp={self.pp}" if self.pp > 1 else "") + (
            f" ({self.gpus} GPUs)" if self.pp > 1 else "")
        return Suggestion(text + (f": {why}" if why else ""), {"tp": self.tp, "pp": self.pp})


def attention_tp(ctx: RuleContext, tp: int) -> int:
    """The TP degree attention runs at when the plan's tp becomes ``tp``."""
    layout = ctx.plan.layout
    return tp // layout.dp if layout.dp_attention else tp


def valid_tps(ctx: RuleContext) -> tuple[int, ...]:
    """TP degrees the engine accepts for the model's heads, KV heads and recurrent state
    (:func:`kvlint.model.kv.valid_tp_degrees`), up to 64."""
    assert ctx.analysis is not None
    g = ctx.analysis.cached
    sharding = ctx.plan.behaviour.kv_sharding
    dp = ctx.plan.layout.dp if ctx.plan.layout.dp_attention else 1
    valid = set(kv.valid_tp_degrees(g, MAX_TP, sharding))
    return tuple(tp for tp in range(dp, MAX_TP + 1, dp)
                 if tp // dp in valid
                 and kv.state_fits(g, tp // dp if sharding != "layers" else 1))


def plan_mig_device(ctx: RuleContext) -> str | None:
    """The MIG device the plan's GPU is (:func:`kvlint.model.hardware.mig_device`: no table
    GPU's name ends in a MIG profile), by its name; ``None`` for a whole GPU or none."""
    from kvlint.model.hardware import mig_device

    found = mig_device(ctx.plan.gpu) if ctx.plan.gpu else None
    return found.name if found is not None else None


def on_mig(ctx: RuleContext) -> bool:
    """Whether the plan's GPU is a MIG device."""
    return plan_mig_device(ctx) is not None


def weights_fit(ctx: RuleContext, layout: Layout) -> bool:
    return ctx.sizer is None or ctx.sizer.weights_fit(layout.tp, layout.pp)


def sequence_fits(ctx: RuleContext, layout: Layout) -> bool:
    """One ``max_model_len``-token sequence fits the KV memory left under ``layout``."""
    a, sizer = ctx.analysis, ctx.sizer
    length = ctx.plan.max_model_len
    if a is None or sizer is None or length is None:
        return True
    plan_layout = replace(ctx.plan.layout, tp=layout.tp, pp=layout.pp)
    need = sequence_bytes_per_gpu(a.cached, a.dtype, a.plan, plan_layout, length)
    return need is not None and need <= sizer.kv_budget(layout.tp, layout.pp)


def _layouts(ctx: RuleContext) -> Iterator[Layout]:
    assert ctx.analysis is not None
    layers = ctx.analysis.geometry.num_layers
    # an engine without pipeline parallelism (TGI, LMDeploy) can only be given more tp
    stages = min(layers, MAX_STAGES) if ctx.plan.behaviour.pipeline_parallel else 1
    if on_mig(ctx):  # a CUDA process sees one MIG device: no layout spans several
        if 1 in valid_tps(ctx):
            yield Layout(1, 1)
        return
    for tp in valid_tps(ctx):
        for pp in range(1, stages + 1):
            if tp * pp <= MAX_PARALLEL:
                yield Layout(tp, pp)


def suggest_layout(ctx: RuleContext, *, gpus: int | None = None,
                   accept: Callable[[Layout], bool] = lambda _: True) -> Layout | None:
    """The layout to propose: a valid one ``accept`` takes whose weights fit. With ``gpus``:
    on that many GPUs with at most twice the plan's pipeline stages, else the most GPUs
    below it at the plan's pp, else on that many GPUs at any pp; without (or failing
    those): on the fewest GPUs. Largest tp first; a layout where a full-length sequence
    fits too is preferred. ``None``: there is none."""
    candidates = [c for c in _layouts(ctx) if accept(c) and weights_fit(ctx, c)]
    pp = ctx.plan.layout.pp
    pools: list[tuple[list[Layout], Callable[[Layout], tuple[int, int]]]] = []

    def fewest(c: Layout) -> tuple[int, int]:
        return c.gpus, -c.tp

    if gpus is not None:
        pools += [([c for c in candidates if c.gpus == gpus and c.pp <= 2 * pp], fewest),
                  ([c for c in candidates if c.gpus < gpus and c.pp == pp],
                   lambda c: (-c.gpus, -c.tp)),
                  ([c for c in candidates if c.gpus == gpus], fewest)]
    pools.append((candidates, fewest))
    for pool, key in pools:
        ranked = sorted(pool, key=key)
        for c in ranked[:FIT_TRIES]:
            if sequence_fits(ctx, c):
                return c
        if ranked:
            return ranked[0]
    return None
