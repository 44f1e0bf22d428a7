"""What SGLang sets by itself at start for DeepSeek Sparse Attention (DSA/"NSA") models, release
by release (pure; docs/design.md §5a).

A model is DSA to SGLang when its ``architectures[0]`` is in the release's list and its config
has ``index_topk`` (``is_deepseek_nsa`` / ``is_deepseek_dsa`` in ``sglang/srt/configs/
model_config.py``). On a CUDA GPU ``ServerArgs`` then changes the layout it was given
(``server_args.py`` of each release, pip-downloaded wheels, read by hand):

===============  ======================================================================
0.5.3            ``enable_dp_attention = True``, ``dp_size = tp_size``, ``page_size = 64``,
                 ``mem_fraction_static = 0.8`` (over any given value) and, on compute
                 capability 10 or more (Blackwell), ``kv_cache_dtype = "fp8_e4m3"`` over any
                 given value (server_args.py@0.5.3 L806-835)
0.5.4            the same without the fraction (@0.5.4 L1009-1036)
0.5.5            DP attention with ``dp_size = tp_size`` and page 64; an ``auto`` KV cache
                 becomes ``fp8_e4m3`` on Blackwell, ``bfloat16`` below (@0.5.5.post3
                 L1098-1125)
0.5.6 - 0.5.14   DP attention switched on without touching ``dp_size`` (attention stays split
                 over tp / dp_size ranks: no change to the pool per GPU; 0.5.8 on only with
                 context parallelism), page 64, the same ``auto`` rule (@0.5.6 L940-990,
                 @0.5.8 L1110-1171, @0.5.12 L1680-1700 and L1795-1873, @0.5.14 L3417)
0.5.23           the ``auto`` rule, ``bfloat16`` also for a model with learnable attention
                 sinks (``arg_groups/overrides.py@0.5.23`` L495-545)
===============  ======================================================================

A release between two read ones follows the older (0.5.16-0.5.20 moved the code and were not
read: the 0.5.14 rule). What SGLang writes into the pool is the MLA latent (fp8 with per-block
scales and a bfloat16 RoPE part: ``NSATokenToKVPool``), but the tokens it counts are sized by
``ModelRunner``'s cell size, kvlint's per-token figure; that is unchanged here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from packaging.version import Version

from kvlint.model.serving import EngineStart, ServingPlan, release_of

__all__ = ["DsaStart", "dsa_start", "is_blackwell", "with_dsa_start"]

_V3: Final = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM")
ARCHITECTURES: Final[tuple[tuple[Version, frozenset[str]], ...]] = (
    (Version("0.5.3"), frozenset(_V3)),  # model_config.py@0.5.3 is_deepseek_nsa
    (Version("0.5.4"), frozenset((*_V3, "DeepseekV3ForCausalLMNextN"))),  # @0.5.4, @0.5.6
    (Version("0.5.8"), frozenset((*_V3, "DeepseekV3ForCausalLMNextN",
                                  "MistralLarge3ForCausalLM",
                                  "PixtralForConditionalGeneration"))),  # @0.5.8
    (Version("0.5.10"), frozenset((*_V3, "DeepseekV3ForCausalLMNextN",
                                   "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
                                   "GlmMoeDsaForCausalLM"))),  # @0.5.10, @0.5.12
    (Version("0.5.23"), frozenset((*_V3, "MistralLarge3ForCausalLM",
                                   "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM",
                                   "Glm5NextForConditionalGeneration"))),
    # 0.5.23: is_deepseek_dsa and _DEEPSEEK_FAMILY_ARCHS (arg_groups/overrides.py L745-753)
)
"""The architectures each release treats as DSA (with ``index_topk`` in the config)."""

FIRST: Final = Version("0.5.3")
NEWEST_READ: Final = Version("0.5.23")

BLACKWELL: Final = frozenset({"B100", "B200", "GB200", "B300", "GB300", "RTX-PRO-6000",
                              "RTX-5090", "RTX-5080", "RTX-5070-Ti", "GB10"})
"""kvlint's GPU names of compute capability 10 or more (``torch.cuda.get_device_capability()
[0] >= 10``: data-center Blackwell is 10.x, GeForce/workstation Blackwell 12.x)."""


def is_blackwell(gpu: str | None) -> bool | None:
    """Whether ``gpu`` (a kvlint GPU name) has compute capability 10 or more; ``None`` when no
    GPU is named (a memory size alone does not say)."""
    if gpu is None:
        return None
    return gpu.upper().replace("_", "-") in BLACKWELL


@dataclass(frozen=True)
class DsaStart:
    """What the release sets (``None``: left as given)."""

    dp_is_tp: bool
    """``dp_size = tp_size`` with DP attention."""
    mem_fraction_static: float | None
    kv_cache_dtype: str | None
    page_size: int
    source: str


def dsa_start(version: Version | None, architecture: str | None, has_index_topk: bool,
              kv_cache_dtype: str, blackwell: bool | None,
              has_attention_sinks: bool = False) -> DsaStart | None:
    """What SGLang ``version`` (``None``: the newest read) sets for a DSA model at start;
    ``None`` when the model is not DSA to that release or the release has no DSA support."""
    if not has_index_topk or architecture is None:
        return None
    rule = version if version is not None else NEWEST_READ
    if rule.release < FIRST.release:
        return None
    archs = next(a for since, a in reversed(ARCHITECTURES) if rule.release >= since.release)
    if architecture not in archs:
        return None
    base = rule.release[:3]
    fp8 = "fp8_e4m3" if blackwell else None
    if base < (0, 5, 4):
        return DsaStart(True, 0.8, fp8, 64, "server_args.py@0.5.3 L806-835")
    if base < (0, 5, 5):
        return DsaStart(True, None, fp8, 64, "server_args.py@0.5.4 L1009-1036")
    if base < (0, 5, 6):
        return DsaStart(True, None, fp8 if kv_cache_dtype == "auto" else None, 64,
                        "server_args.py@0.5.5.post3 L1098-1125")
    sinks = has_attention_sinks and base >= (0, 5, 23)
    chosen = fp8 if kv_cache_dtype == "auto" and not sinks else None
    source = ("arg_groups/overrides.py@0.5.23 L495-545" if base >= (0, 5, 23)
              else "server_args.py@0.5.6 L940-990 (0.5.8-0.5.14 alike)")
    return DsaStart(False, None, chosen, 64, source)


def with_dsa_start(plan: ServingPlan, architecture: str | None,
                   config: Mapping[str, Any]) -> tuple[ServingPlan, str | None]:
    """``plan`` as SGLang runs it for a DSA model (see the module's docstring), and a note
    saying what changed and from which source; ``plan`` unchanged and ``None`` otherwise."""
    if plan.engine != "sglang":
        return plan, None
    version = release_of(plan)
    index_topk = config.get("index_topk")
    start = dsa_start(version, architecture,
                      isinstance(index_topk, int) and not isinstance(index_topk, bool),
                      plan.kv_cache_dtype, is_blackwell(plan.gpu),
                      bool(config.get("learnable_sink")))
    if start is None:
        return plan, None
    said: list[str] = []
    layout = plan.layout
    if start.dp_is_tp and (layout.dp != layout.tp or not layout.dp_attention):
        layout = replace(layout, dp=layout.tp, dp_attention=True)
        said.append(f"DP attention with dp={layout.tp} (dp_size = tp_size)")
    fraction = plan.gpu_memory_utilization
    if start.mem_fraction_static is not None and fraction != start.mem_fraction_static:
        fraction = start.mem_fraction_static
        said.append(f"mem_fraction_static {fraction} over any given value")
    dtype = plan.kv_cache_dtype
    if start.kv_cache_dtype is not None and dtype != start.kv_cache_dtype:
        said.append(f"an {start.kv_cache_dtype} KV cache on this Blackwell GPU"
                    + ("" if dtype == "auto" else f" over the given {dtype}"))
        dtype = start.kv_cache_dtype
    engine_start = plan.engine_start or EngineStart()
    if engine_start.page_size != start.page_size:
        engine_start = replace(engine_start, page_size=start.page_size)
        said.append(f"page size {start.page_size}")
    changed = replace(plan, layout=layout, gpu_memory_utilization=fraction, kv_cache_dtype=dtype,
                      engine_start=engine_start)
    blackwell = "" if plan.gpu is not None else \
        " (no GPU named: a Blackwell GPU would also get an fp8_e4m3 KV cache)"
    note = (f"SGLang {plan.behaviour.version or 'newest'} sets for a DeepSeek Sparse Attention "
            f"model: {', '.join(said) or 'nothing that changes the pool'}{blackwell} "
            f"({start.source})")
    return changed, note
