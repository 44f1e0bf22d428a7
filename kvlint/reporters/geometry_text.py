"""How the text report describes a model's layers, recurrent state and per-sequence bytes.

Models whose layers all look alike keep the one-line summary of :mod:`kvlint.reporters.text`;
models whose layers differ get a ``layer groups`` row: every distinct layer shape with its
count, in order of first appearance::

    10 full (8 KV heads x 512) + 50 sliding 1,024 (16 x 256) + 15 share earlier layers' KV
    61 full (MLA latent 512 + rope 64, indexer 132 B/token/layer)
    30 recurrent (gated_delta_net) + 10 full (2 KV heads x 256)

Extra caches read ``indexer 132 B/token/layer`` (one entry per token) or ``compressed 1
entry / 4 tokens (584 B/entry)``. Recurrent state is a per-sequence figure: its own row,
and part of every per-sequence figure (``incl. ... recurrent state``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from kvlint.model import kv
from kvlint.model.geometry import ExtraCache, LayerGeometry, LayerKind
from kvlint.units import fmt_bytes, fmt_int

if TYPE_CHECKING:
    from kvlint.model.capacity import Capacity
    from kvlint.model.geometry import AttentionGeometry
    from kvlint.model.serving import KvAnalysis


def exact_bytes(value: Fraction | int) -> str:
    """A byte count as written in the tables: ``131,072``; a fraction (a cache that keeps one
    entry per several tokens) to two decimals, ``~`` when that rounds it: ``~1,234.57``."""
    value = Fraction(value)
    if value.denominator == 1:
        return fmt_int(int(value))
    shown = f"{float(value):,.2f}"
    return shown if value * 100 == round(value * 100) else "~" + shown


def _extra(cache: ExtraCache, dtype: kv.KvDtype) -> str:
    entry = fmt_int(dtype.extra_entry_bytes(cache))
    if cache.tokens_per_entry == 1:
        text = f"{cache.name} {entry} B/token/layer"
    else:
        text = f"{cache.name} 1 entry / {fmt_int(cache.tokens_per_entry)} tokens ({entry} B/entry)"
    if cache.window is not None:
        text += f", window {fmt_int(cache.window)}"
    return text + ("" if cache.replicated else ", split over tp")


def _shape(layer: LayerGeometry, first: bool) -> str:
    """``8 KV heads x 512`` (``16 x 256`` after the first), ``MLA latent 512 + rope 64``."""
    if layer.is_mla:
        return f"MLA latent {layer.kv_lora_rank} + rope {layer.qk_rope_head_dim or 0}"
    dim = (str(layer.k_head_dim) if layer.k_head_dim == layer.v_head_dim
           else f"{layer.k_head_dim}/{layer.v_head_dim}")
    if not first:
        return f"{layer.num_kv_heads} x {dim}"
    return f"{layer.num_kv_heads} KV head{'s' if layer.num_kv_heads != 1 else ''} x {dim}"


def _kind(layer: LayerGeometry) -> str:
    if layer.kind is LayerKind.FULL:
        return "full"
    return f"{layer.kind.value} {fmt_int(layer.window)}" if layer.window else layer.kind.value


def _describe(layer: LayerGeometry, dtype: kv.KvDtype, first: bool) -> str:
    """One layer shape, without its count."""
    if layer.kind is LayerKind.NONE:
        if layer.state is not None:
            return f"recurrent ({layer.state.kind})"
        return "without KV"
    state = [] if layer.state is None else [f"{layer.state.kind} state"]
    if layer.kv_shared:
        return "share earlier layers' KV" + "".join(f" + {s}" for s in state)
    parts = [_shape(layer, first)]
    if layer.entry_bytes is not None:
        parts.append(f"{fmt_int(layer.entry_bytes)} B/token packed")
    parts += [_extra(cache, dtype) for cache in layer.extra_caches] + state
    return f"{_kind(layer)} ({', '.join(parts)})"


def layer_groups_text(g: AttentionGeometry, dtype: kv.KvDtype) -> str | None:
    """Every distinct layer shape with its count; ``None`` when the layers that attend or
    keep a state all look alike and hold no extra cache (the summary rows say it all)."""
    groups: dict[str, tuple[LayerGeometry, int]] = {}
    for layer in g.layers:
        key = _describe(layer, dtype, first=True)
        shape, count = groups.get(key, (layer, 0))
        groups[key] = (shape, count + 1)
    distinct = [layer for layer, _ in groups.values() if layer.attends or layer.state]
    if len(distinct) <= 1 and not g.has_extra_caches:
        return None
    parts = []
    spelt = False  # "KV heads" is spelt out once, on the first head shape
    for key, (layer, count) in groups.items():
        heads = layer.holds_kv and not layer.is_mla
        text = _describe(layer, dtype, first=not spelt) if heads else key
        parts.append(f"{fmt_int(count)} {text}")
        spelt = spelt or heads
    return " + ".join(parts)


def geometry_rows(a: KvAnalysis) -> list[list[str]]:
    """The ``layer groups`` and ``recurrent state`` rows, where the model has them."""
    rows = []
    groups = layer_groups_text(a.cached, a.dtype)
    if groups:
        rows.append(["layer groups", groups])
    state = state_text(a)
    if state:
        rows.append(["recurrent state", state])
    return rows


def state_text(a: KvAnalysis) -> str | None:
    """The ``recurrent state`` row: per sequence per GPU, and which layers keep it."""
    layers = a.cached.state_layers
    if not layers:
        return None
    kinds = sorted({layer.state.kind for layer in layers if layer.state is not None})
    per_gpu = a.state_bytes_per_sequence_per_gpu
    where = f"{fmt_int(len(layers))} recurrent layer{'s' if len(layers) != 1 else ''} " \
            f"({', '.join(kinds)})"
    if per_gpu is None:
        return f"refused at this tp · {where}"
    if per_gpu == 0:
        return f"not sized (kvlint does not know this state layout) · {where}"
    return (f"{fmt_bytes(per_gpu)} per sequence per GPU ({fmt_int(per_gpu)} B) · {where}; "
            "one per running sequence, whatever its length")


def sequence_text(a: KvAnalysis) -> str:
    """The ``per sequence`` row: one ``plan.context``-token sequence, recurrent state
    included, then on the fullest GPU and for the batch."""
    plan = a.plan
    state = kv.state_bytes_per_sequence(a.cached)
    text = f"{fmt_int(plan.context)} tokens → {fmt_bytes(a.bytes_per_sequence)}"
    if state:
        text += f" (incl. {fmt_bytes(state)} recurrent state)"
    per_gpu = a.bytes_per_sequence_per_gpu
    if per_gpu is not None and plan.layout.tp * plan.layout.pp > 1:
        text += f" · {fmt_bytes(per_gpu)} on the fullest GPU"
        gpu_state = a.state_bytes_per_sequence_per_gpu
        if gpu_state:
            text += f" (incl. {fmt_bytes(gpu_state)} state)"
    if plan.batch > 1:
        text += f" · batch {plan.batch}: {fmt_bytes(a.bytes_per_sequence * plan.batch)}"
    return text


def capacity_sequences_text(c: Capacity) -> str:
    """`` · 12 sequences of 8,192`` and, with recurrent state, what each one takes."""
    if c.max_sequences is None:
        return ""
    noun = "sequence" if c.max_sequences == 1 else "sequences"
    text = f" · {fmt_int(c.max_sequences)} {noun} of {fmt_int(c.context)}"
    if c.state_bytes_per_sequence_per_gpu:
        text += (f" (each {fmt_bytes(c.bytes_per_sequence_per_gpu)}: "
                 f"{fmt_bytes(c.kv_bytes_per_sequence_per_gpu)} KV + "
                 f"{fmt_bytes(c.state_bytes_per_sequence_per_gpu)} recurrent state)")
    return text
