"""Per-sequence recurrent state: what a Mamba / linear-attention layer keeps for each running
sequence, in bytes per GPU at a tensor-parallel degree. Pure functions, no I/O.

The layouts follow the engine's own state-shape calculators (vLLM 0.33.0
``model_executor/layers/mamba/mamba_utils.py``, ``MambaStateShapeCalculator`` and
``MambaStateDtypeCalculator``); each kind's ``dims`` are the config values the model's
``get_mamba_state_shape_from_config`` passes to them:

=================  ==========================================================================
kind               state tensors (per sequence, per GPU of a ``tp``-way group)
=================  ==========================================================================
``mamba1``         conv ``(K-1, I/tp)``, ssm ``(I/tp, N)`` (Mamba, FalconMamba, Jamba)
``mamba2``         conv ``(K-1, (I + 2·G'·N)/tp)``, ssm ``(H/tp, P, N)``; ``G'`` is ``G``
                   padded by ``extra_groups_for_head_shards`` (Nemotron-H, Falcon-H1,
                   Granite-4 hybrid, Zamba2, Mamba2)
``gdn``            conv ``(K-1, (2·Hk·Dk + Hv·Dv)/tp)``, ssm ``(Hv/tp, Dv, Dk)`` (gated delta
                   net: Qwen3-Next, Qwen3.5, Olmo-Hybrid)
``kda``            conv ``(K-1, (H·D + 2·Hk·Dk)/tp)``, ssm ``(H/tp, D, D)`` (Kimi delta
                   attention: Kimi-Linear / Kimi-K3, Bailing-V3, Alice-AI)
``short_conv``     conv ``(K-1, C/tp)`` (LFM2)
``linear``         ``(H/tp, D, D)`` (lightning / linear attention: Bailing-V2.5)
=================  ==========================================================================

``K`` is the conv kernel, ``I`` the SSM inner size, ``N`` the state size, ``G`` the groups,
``H``/``P`` heads and head dim. Speculative tokens (``num_spec``) would lengthen the conv
state by one row each; kvlint sizes a deployment without them.

Dtypes (``MambaStateDtypeCalculator``): the conv state is in the model dtype
(``mamba_cache_dtype`` ``auto``); the ssm/recurrent state is in ``state.dtype`` when set
(``--mamba-ssm-cache-dtype`` or the config field the engine reads, e.g. Nemotron-H's
``mamba_ssm_cache_dtype``, default ``float32``), else the model dtype, except KDA whose
recurrent state defaults to ``float32``. A kind this module does not know costs 0 bytes,
so an unknown recurrent layer never blocks a figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvlint.model.geometry import RecurrentState

DTYPE_BYTES = {
    "float32": 4, "float": 4, "fp32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
}
"""Bytes per element of the state dtypes vLLM accepts (``MambaDType``: auto, float32,
float16, bfloat16)."""

MODEL_DTYPE_BYTES = 2
"""The model dtype kvlint assumes when a caller gives none: 16-bit serving."""


@dataclass(frozen=True)
class TpRefusal:
    """Why the model cannot be built at ``tp``: ``what`` (``value``) ``rule`` tp, with the
    vLLM source (``path:line``) that asserts it, read in the ``read_in`` wheel."""

    what: str
    value: int
    tp: int
    rule: str
    source: str
    detail: str = ""
    read_in: str = "0.33.0"

    @property
    def message(self) -> str:
        text = f"{self.what} ({self.value:,}) {self.rule} tp={self.tp}"
        return f"{text}: {self.detail}" if self.detail else text


def _bytes(dtype: str | None, default: int) -> int:
    if dtype is None:
        return default
    return DTYPE_BYTES.get(dtype.strip().lower(), default)


def extra_groups_for_head_shards(groups: int, tp: int) -> int:
    """vLLM ``MambaStateShapeCalculator.extra_groups_for_head_shards``: groups added so that
    every head shard carries the groups its heads need (``tp - G`` when ``G % tp``)."""
    return 0 if groups % tp == 0 else tp - groups


_MIXER2 = "model_executor/layers/mamba/mamba_mixer2.py"
_UTILS = "model_executor/layers/mamba/mamba_utils.py"


def tp_refusals(state: RecurrentState, tp: int) -> tuple[TpRefusal, ...]:
    """Every divisibility the engine asserts for this state's layer at ``tp`` and this
    config violates (empty when the tp is accepted)."""
    d = state.dim
    out: list[TpRefusal] = []

    def need(what: str, value: int, source: str) -> None:
        if value % tp:
            out.append(TpRefusal(what, value, tp, "is not divisible by", source))

    kind = state.kind
    if kind == "mamba1":
        need("mamba intermediate size", d("intermediate_size"), _UTILS + ":178")
    elif kind == "mamba2":
        groups = d("n_groups", 1)
        need("mamba heads", d("num_heads"), _MIXER2 + ":316")
        if groups % tp and groups != 1:
            out.append(TpRefusal("mamba n_groups", groups, tp,
                                 "is neither 1 nor divisible by", _MIXER2 + ":320",
                                 "vLLM replicates the groups over the head shards only when "
                                 "there is one group"))
        need("mamba intermediate size", d("intermediate_size"), _MIXER2 + ":117")
    elif kind == "gdn":
        need("linear-attention key heads", d("num_k_heads"),
             "model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py:957")
        need("linear-attention value heads", d("num_v_heads"), _UTILS + ":289")
    elif kind == "kda":
        need("linear-attention heads", d("num_heads"),
             "model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py:189")
    elif kind == "short_conv":
        need("short-conv width", d("conv_dim"), _UTILS + ":256")
    elif kind == "linear":
        need("linear-attention heads", d("num_heads"),
             "model_executor/layers/mamba/linear/base.py:49")
    return tuple(out)


def _mamba1(s: RecurrentState, tp: int, conv: int, ssm: int) -> int:
    inner = s.dim("intermediate_size") // tp
    return inner * (s.dim("conv_kernel") - 1) * conv + inner * s.dim("state_size") * ssm


def _mamba2(s: RecurrentState, tp: int, conv: int, ssm: int) -> int:
    groups = s.dim("n_groups", 1)
    groups += extra_groups_for_head_shards(groups, tp)
    state = s.dim("state_size")
    conv_dim = (s.dim("intermediate_size") + 2 * groups * state) // tp
    return (conv_dim * (s.dim("conv_kernel") - 1) * conv
            + s.dim("num_heads") // tp * s.dim("head_dim") * state * ssm)


def _gdn(s: RecurrentState, tp: int, conv: int, ssm: int) -> int:
    dk, dv = s.dim("head_k_dim"), s.dim("head_v_dim")
    conv_dim = (2 * s.dim("num_k_heads") * dk + s.dim("num_v_heads") * dv) // tp
    return conv_dim * (s.dim("conv_kernel") - 1) * conv + s.dim("num_v_heads") // tp * dv * dk * ssm


def _kda(s: RecurrentState, tp: int, conv: int, ssm: int) -> int:
    heads, dim = s.dim("num_heads"), s.dim("head_dim")
    conv_dim = (heads * dim + 2 * s.dim("num_k_heads", heads) * s.dim("head_k_dim", dim)) // tp
    return conv_dim * (s.dim("conv_kernel") - 1) * conv + heads // tp * dim * dim * ssm


def _short_conv(s: RecurrentState, tp: int, conv: int, ssm: int) -> int:
    del ssm
    return s.dim("conv_dim") // tp * (s.dim("conv_kernel") - 1) * conv


def _linear(s: RecurrentState, tp: int, conv: int, ssm: int) -> int:
    del conv
    return s.dim("num_heads") // tp * s.dim("head_dim") ** 2 * ssm


_LAYOUTS: dict[str, Callable[[RecurrentState, int, int, int], int]] = {
    "mamba1": _mamba1, "mamba2": _mamba2, "gdn": _gdn, "kda": _kda,
    "short_conv": _short_conv, "linear": _linear,
}
STATE_KINDS: tuple[str, ...] = tuple(_LAYOUTS)

_SSM_DEFAULT_FLOAT32 = frozenset({"kda"})
"""Kinds whose recurrent state is float32 when no dtype is set
(``MambaStateDtypeCalculator.kda_state_dtype``)."""


def state_bytes_per_gpu(state: RecurrentState, tp: int, *,
                        model_dtype_bytes: int = MODEL_DTYPE_BYTES) -> int | None:
    """Bytes one sequence's ``state`` occupies on one GPU of a ``tp``-way group; ``None``
    when the engine refuses the tp (the state does not split evenly).

    ``model_dtype_bytes``: bytes per element of the dtype the model is served in (the conv
    state's dtype, and the ssm state's when ``state.dtype`` is unset).
    """
    layout = _LAYOUTS.get(state.kind)
    if layout is None:
        return 0
    if tp_refusals(state, tp):
        return None
    ssm_default = 4 if state.kind in _SSM_DEFAULT_FLOAT32 else model_dtype_bytes
    ssm = _bytes(state.dtype, ssm_default)
    if state.kind == "linear":  # one tensor, in mamba_cache_dtype
        ssm = _bytes(state.dtype, model_dtype_bytes)
    return layout(state, tp, model_dtype_bytes, ssm)
