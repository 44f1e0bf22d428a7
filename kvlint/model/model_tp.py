"""Tensor-parallel degrees the engine's own model code refuses for reasons other than the
attention heads (KV202/KV203 cover those). Pure functions, no I/O.

Two sources:

* recurrent layers whose state does not split over the tp (Mamba-2 ``n_groups`` neither 1
  nor divisible, Mamba heads, linear-attention heads...): :func:`kvlint.model.state.tp_refusals`;
* model classes that divide the KV heads by tp without replicating them
  (:data:`NO_KV_REPLICATION`), where vLLM's generic ``max(1, n_kv // tp)`` would replicate;
* other counts the model code splits evenly (``AttentionGeometry.tp_divided``, read by the
  family refiners: DeepSeek-V4 ``o_groups``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kvlint.model.geometry import AttentionGeometry, RecurrentState
from kvlint.model.state import TpRefusal, tp_refusals


@dataclass(frozen=True)
class NoReplication:
    """How a model class splits its KV heads: ``at-least-one`` — ``n_kv // tp`` heads per
    GPU, so ``tp > n_kv`` leaves a GPU with none; ``divisible`` — asserts ``n_kv % tp == 0``.
    ``source``: the vLLM file and line, read in the ``read_in`` wheel (0.33.0, or the
    release that added the model class); ``code``: what it does there."""

    requires: str
    source: str
    code: str
    read_in: str = "0.33.0"


NO_KV_REPLICATION: Final[dict[str, NoReplication]] = {
    "GptOssForCausalLM": NoReplication(
        "at-least-one", "model_executor/models/gpt_oss.py:156",
        "num_local_key_value_heads = config.num_key_value_heads // tp_size; the attention "
        "layer then takes a modulo by zero"),
    "Param2MoEForCausalLM": NoReplication(
        "divisible", "model_executor/models/param2moe.py:121",
        "assert num_kv_heads % tp_size == 0"),
    "HrmTextForCausalLM": NoReplication(
        "divisible", "model_executor/models/hrm_text.py:145",
        "num_kv_heads = num_attention_heads // tp_size (MHA)"),
    "MuseSparkForConditionalGeneration": NoReplication(
        "divisible", "models/muse_spark/common/layers.py:367",
        "assert total_num_kv_heads % tp_size == 0 (no KV-head padding for the fused QKV+O-gate "
        "projection)"),
    "RicursiveForCausalLM": NoReplication(  # new in vLLM 0.34.0 (registry.py@v0.34.0)
        "divisible", "model_executor/models/ricursive.py:97",
        "raise ValueError unless num_attention_heads and num_key_value_heads are divisible by "
        "tp_size", read_in="0.34.0"),
    "InklingForCausalLM": NoReplication(
        "at-least-one", "models/inkling/nvidia/sconv_swa_attn.py:143",
        "assert tp_size <= num_kv_heads, then num_kv_heads // tp_size"),
}
"""Architectures whose vLLM 0.33.0 model class computes ``num_kv_heads // tp`` without vLLM's
usual ``max(1, ...)`` replication (every model file of the 0.33.0 wheel read for
``// tp_size`` on a KV-head count). The 0.34.0 wheel, grepped the same way: the five above
unchanged (gpt_oss.py:156, param2moe.py:121, hrm_text.py:145, muse_spark/common/layers.py
:370, inkling/nvidia/sconv_swa_attn.py:143), one new class without replication
(RicursiveForCausalLM); the other new hits (lfm3.py, models/beam/amd) replicate."""

NO_REPLICATION_ENGINES: Final = frozenset({"vllm"})
STATE_SPLIT_ENGINES: Final = frozenset({"vllm", "sglang"})
"""Engines whose Mamba / linear-attention layers shard the state by heads over tp. SGLang
0.5.23 asserts the same Mamba-2 group rule (``sglang/srt/layers/attention/mamba/mamba.py``
line 249: ``n_groups % tp_size == 0 or n_groups == 1``); its gpt-oss attention replicates KV
heads (``sglang/srt/models/gpt_oss.py`` line 405: ``max(1, ...)``), hence
:data:`NO_KV_REPLICATION` is vLLM's alone."""


def _kv_refusals(geometry: AttentionGeometry, tp: int) -> list[TpRefusal]:
    fact = NO_KV_REPLICATION.get(geometry.architecture or "")
    if fact is None:
        return []
    out = []
    arch = geometry.architecture
    for n in geometry.distinct_kv_head_counts:
        if fact.requires == "at-least-one" and n < tp:
            out.append(TpRefusal("KV heads", n, tp, "are fewer than", fact.source,
                                 f"{arch} gives each GPU {n} // {tp} = 0 KV heads and does "
                                 f"not replicate them ({fact.code})", fact.read_in))
        elif fact.requires == "divisible" and n % tp:
            out.append(TpRefusal("KV heads", n, tp, "are not divisible by", fact.source,
                                 f"{arch} splits KV heads evenly and does not replicate "
                                 f"them ({fact.code})", fact.read_in))
    return out


def model_tp_refusals(geometry: AttentionGeometry, tp: int,
                      engine: str = "vllm") -> tuple[TpRefusal, ...]:
    """Why ``engine``'s model code refuses ``tp`` for this model (empty: it does not)."""
    out: list[TpRefusal] = []
    if engine in STATE_SPLIT_ENGINES:
        seen: set[RecurrentState] = set()
        for layer in geometry.state_layers:
            if layer.state is None or layer.state in seen:
                continue
            seen.add(layer.state)
            out.extend(tp_refusals(layer.state, tp))
    if engine in NO_REPLICATION_ENGINES:
        out.extend(_kv_refusals(geometry, tp))
        out.extend(TpRefusal(name, count, tp, "is not divisible by", source,
                             f"the model code splits {name} evenly over the GPUs")
                   for name, count, source in geometry.tp_divided if count % tp)
    return tuple(out)


def model_valid_tps(geometry: AttentionGeometry, limit: int,
                    engine: str = "vllm") -> tuple[int, ...]:
    """Degrees up to ``limit`` the model code accepts (heads not considered)."""
    return tuple(tp for tp in range(1, limit + 1)
                 if not model_tp_refusals(geometry, tp, engine))
