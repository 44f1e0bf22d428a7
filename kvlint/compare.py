"""``kvlint compare``: rank models by what their KV cache costs to serve.

Without a GPU, models rank by the bytes one ``context``-token sequence takes (less is
better): its KV, with windowed layers at their window and compressed caches as held, plus the
recurrent state of hybrid models, one per sequence whatever its length. Per-token bytes alone
would rank a hybrid or a sliding-window model as cheaper than it is. With a GPU, models rank
by how many ``max_model_len``-token sequences fit beside the weights (more is better). Equal
values share a rank. ``factor`` is each model's cost against the best: bytes / best bytes, or
best sequences / sequences.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvlint import __version__
from kvlint.linter import ModelResult
from kvlint.model import kv
from kvlint.model.capacity import Capacity
from kvlint.model.geometry import AttentionGeometry, AttentionKind
from kvlint.units import fmt_bytes, fmt_int


@dataclass(frozen=True)
class Row:
    rank: int
    result: ModelResult
    capacity: Capacity | None
    factor: float | None

    @property
    def ref(self) -> str:
        return self.result.target.ref


def attention_label(g: AttentionGeometry) -> str:
    """``GQA 64/8``, ``MLA 512+64``, ``MHA 32``, ``MQA 71/1``, ``none``; hybrids add their
    recurrent layers: ``GQA 16/2 + 36 recurrent`` (``64 recurrent`` without attention)."""
    kind = g.attention
    if kind is AttentionKind.MLA:
        label = f"MLA {g.kv_lora_rank}+{g.qk_rope_head_dim}"
    elif kind is AttentionKind.NONE:
        label = "none"
    elif kind is AttentionKind.MHA:
        label = f"MHA {g.num_attention_heads}"
    else:
        label = f"{kind.value.upper()} {g.num_attention_heads}/{g.num_kv_heads}"
    recurrent = len(g.state_layers)
    if not recurrent:
        return label
    return f"{recurrent} recurrent" if kind is AttentionKind.NONE else \
        f"{label} + {recurrent} recurrent"


def rank(results: Sequence[ModelResult],
         capacities: Sequence[Capacity | None]) -> list[Row]:
    """Rank resolved models; unresolved ones (KV900) come last without a rank value."""
    with_gpu = any(c is not None for c in capacities)
    keyed: list[tuple[float, ModelResult, Capacity | None]] = []
    for result, cap in zip(results, capacities, strict=True):
        if result.analysis is None:
            continue
        if with_gpu:
            seqs = cap.max_sequences if cap is not None else None
            keyed.append((-(seqs or 0), result, cap))
        else:
            keyed.append((result.analysis.bytes_per_sequence, result, cap))
    keyed.sort(key=lambda item: item[0])
    rows: list[Row] = []
    best = keyed[0][0] if keyed else 0
    for i, (key, result, cap) in enumerate(keyed):
        position = rows[-1].rank if rows and key == keyed[i - 1][0] else i + 1
        if with_gpu:
            factor = (best / key) if key else None  # both negative sequence counts
        else:
            factor = (key / best) if best else (1.0 if key == best else None)
        rows.append(Row(position, result, cap, factor))
    return rows


def _row_dict(row: Row) -> dict[str, Any]:
    a = row.result.analysis
    assert a is not None
    cap = row.capacity
    return {
        "rank": row.rank,
        "ref": row.ref,
        "attention": a.geometry.attention.value,
        "attention_label": attention_label(a.geometry),
        "bytes_per_token": kv.exact_number(a.footprint.bytes_per_token_exact),
        "bytes_per_token_per_gpu": None if a.footprint.bytes_per_token_per_gpu_exact is None
        else kv.exact_number(a.footprint.bytes_per_token_per_gpu_exact),
        "context": a.plan.context,
        "bytes_per_sequence": a.bytes_per_sequence,
        "state_bytes_per_sequence": kv.state_bytes_per_sequence(a.cached),
        "bytes_per_sequence_per_gpu": a.bytes_per_sequence_per_gpu,
        "state_bytes_per_sequence_per_gpu": a.state_bytes_per_sequence_per_gpu,
        "factor": row.factor,
        "weight_bytes_per_gpu": cap.weight_bytes_per_gpu if cap else None,
        "weights_estimated": cap.weights_estimated if cap else None,
        "max_model_len": cap.context if cap else None,
        "max_sequences": cap.max_sequences if cap else None,
        "crossover_batch": cap.crossover_batch if cap else None,
    }


def render_json(rows: Sequence[Row], gpu: str | None) -> str:
    data = {"schema_version": 1, "kvlint_version": __version__, "gpu": gpu,
            "rows": [_row_dict(r) for r in rows]}
    return json.dumps(data, indent=2) + "\n"


def render_table(rows: Sequence[Row], tablefmt: str) -> str:
    from tabulate import tabulate

    with_gpu = any(r.capacity is not None for r in rows)
    headers = ["rank", "model", "attention", "KV/token"]
    context = rows[0].result.plan.context if rows else 0
    headers.append(f"per {fmt_int(context)}-token seq")
    with_state = any(r.result.analysis is not None and r.result.analysis.cached.state_layers
                     for r in rows)
    if with_state:
        headers.append("of it state")
    if with_gpu:
        headers += ["weights/GPU", "sequences", "crossover batch"]
    headers.append("x best")
    table = []
    for r in rows:
        a = r.result.analysis
        assert a is not None
        line: list[str] = [str(r.rank), r.ref, attention_label(a.geometry),
                           fmt_bytes(a.footprint.bytes_per_token), fmt_bytes(a.bytes_per_sequence)]
        if with_state:
            state = kv.state_bytes_per_sequence(a.cached)
            line.append(fmt_bytes(state) if a.cached.state_layers else "-")
        if with_gpu:
            cap = r.capacity
            line += [
                (("~" if cap.weights_estimated else "") + fmt_bytes(cap.weight_bytes_per_gpu))
                if cap else "-",
                fmt_int(cap.max_sequences) if cap and cap.max_sequences is not None else "-",
                f"{cap.crossover_batch:.0f}" if cap and cap.crossover_batch else "-",
            ]
        line.append(f"{r.factor:.1f}" if r.factor is not None else "-")
        table.append(line)
    return tabulate(table, headers=headers, tablefmt=tablefmt, disable_numparse=True) + "\n"
