"""Applying a finding's :class:`~kvlint.diagnostics.Suggestion` to a serving plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kvlint.model.capacity import GpuSpec, kv_budget, usable_bytes
from kvlint.model.serving import ServingPlan
from kvlint.model.weights import WeightSplit

LAYOUT_KEYS = ("tp", "pp", "dp", "dp_attention")
PLAN_KEYS = ("kv_cache_dtype", "max_model_len", "max_num_seqs", "engine", "engine_version",
             "gpu", "gpu_memory_utilization")
SUGGESTION_KEYS = LAYOUT_KEYS + PLAN_KEYS
"""The serving settings a suggestion may propose (the JSON ``serving`` object's keys)."""


def apply_suggestion(plan: ServingPlan, serving: Mapping[str, Any]) -> ServingPlan:
    """``plan`` with the settings of a suggestion's ``serving`` applied. Raises
    ``ValueError`` for a key that is not a serving setting or a value the plan refuses."""
    unknown = sorted(set(serving) - set(SUGGESTION_KEYS))
    if unknown:
        raise ValueError(f"not a serving setting: {', '.join(unknown)}")
    layout = replace(plan.layout, **{k: serving[k] for k in LAYOUT_KEYS if k in serving})
    return replace(plan, layout=layout, **{k: serving[k] for k in PLAN_KEYS if k in serving})


@dataclass(frozen=True)
class LayoutSizer:
    """Sizes the weights and KV budget of one GPU under any tp x pp: what a rule needs to
    propose a layout whose weights fit (set whenever a GPU is given, also when the plan's
    own tp is refused and there is no :class:`~kvlint.model.capacity.Capacity`)."""

    weights: WeightSplit
    gpu: GpuSpec
    gpu_memory_utilization: float
    fraction_of_free_memory: bool
    overhead_bytes: int
    adapter_bytes: int = 0
    """Bytes loaded with the weights on every GPU besides them (vLLM's LoRA buffers, sized at
    the plan's own layout: an upper bound for layouts over more GPUs, which split them)."""

    @property
    def usable_bytes(self) -> int:
        return usable_bytes(self.gpu, self.gpu_memory_utilization,
                            self.fraction_of_free_memory)

    def _loaded(self, tp: int, pp: int) -> int:
        return self.weights.per_gpu(tp, pp) + self.adapter_bytes

    def weights_fit(self, tp: int, pp: int) -> bool:
        return self._loaded(tp, pp) <= self.usable_bytes

    def kv_budget(self, tp: int, pp: int) -> int:
        return kv_budget(self.gpu, self.gpu_memory_utilization, self._loaded(tp, pp),
                         self.overhead_bytes, self.fraction_of_free_memory)
