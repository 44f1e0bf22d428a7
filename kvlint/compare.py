"""``kvlint compare``: rank models by what their KV cache costs to serve.

Without a GPU, models rank by the KV bytes one ``context``-token sequence holds on the
fullest GPU (less is better): windowed layers hold their window, compressed caches their
entries, recurrent layers their state (:func:`kvlint.model.kv.bytes_per_sequence_per_gpu`).
With one, by the concurrent sequences that fit beside the weights (more is better), counted
as ``kvlint check`` counts them (:attr:`kvlint.model.capacity.Capacity.max_sequences`: the
KV budget over one ``max_model_len``-token sequence); compare's ``max_model_len`` is the
context unless ``--max-model-len`` is given, so every model is counted at one length. Equal
values share a rank. ``factor`` is each model's cost against the best: bytes / best bytes,
or best sequences / sequences.

A model kvlint could not size is not ranked: its config did not resolve, the Hub could not
be asked about it, or the engine refuses the tp. It is listed with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kvlint import __version__
from kvlint.errors import HubError, HubUnavailableError, InputError
from kvlint.linter import LintRun, ModelResult, Target, default_config_defaults, lint_config
from kvlint.loaders.models import load_config
from kvlint.model import kv
from kvlint.model.capacity import Capacity
from kvlint.model.geometry import AttentionGeometry, AttentionKind
from kvlint.model.gpu_memory import custom_gpu_name
from kvlint.model.serving import ServingPlan
from kvlint.units import fmt_bytes, fmt_int

if TYPE_CHECKING:
    from kvlint.lock.files import ModelLock

SCHEMA_VERSION = 2
"""compare's own JSON contract (2: ranks by per-sequence bytes; ``unranked``)."""

Reason = Literal["unresolved-config", "hub-unavailable", "tp-refused"]
REASON_LABELS: dict[Reason, str] = {
    "unresolved-config": "unresolved config",
    "hub-unavailable": "Hub unavailable",
    "tp-refused": "tp refused",
}


@dataclass(frozen=True)
class Row:
    rank: int
    result: ModelResult
    capacity: Capacity | None
    factor: float | None

    @property
    def ref(self) -> str:
        return self.result.target.ref


@dataclass(frozen=True)
class Unranked:
    """A model compare could not size, and why."""

    result: ModelResult
    reason: Reason
    message: str

    @property
    def ref(self) -> str:
        return self.result.target.ref


@dataclass(frozen=True)
class Ranking:
    rows: tuple[Row, ...]
    unranked: tuple[Unranked, ...]
    plan: ServingPlan
    by_sequences: bool
    """Ranked by concurrent sequences (a GPU was given), else by bytes per sequence."""

    @property
    def ranked_by(self) -> str:
        return "max_sequences" if self.by_sequences else "bytes_per_sequence_per_gpu"

    @property
    def sequence_tokens(self) -> int:
        """The length ``sequences`` counts at (``max_model_len``)."""
        return self.plan.max_model_len or self.plan.context

    def basis(self) -> str:
        """One line saying what the ranking compares."""
        plan = self.plan
        layout = f"tp={plan.layout.tp}" + (f", pp={plan.layout.pp}" if plan.layout.pp > 1 else "")
        if self.by_sequences:
            gpu = next((r.capacity.gpu.name for r in self.rows if r.capacity), plan.gpu)
            return (f"Ranked by sequences: concurrent {fmt_int(self.sequence_tokens)}-token "
                    f"sequences (max_model_len) in the KV budget of one {gpu} beside the "
                    f"weights at {layout}, as `kvlint check --max-model-len "
                    f"{self.sequence_tokens}` counts them; x best = best sequences / sequences.")
        return (f"Ranked by KV bytes of one {fmt_int(plan.context)}-token sequence on the "
                f"fullest GPU at {layout} (windowed layers hold their window; recurrent state "
                f"included); x best = bytes / best bytes.")


def compare_models(refs: Iterable[str], plan: ServingPlan, *, revision: str | None = None,
                   offline: bool = False, lock: ModelLock | None = None) -> LintRun:
    """Size each model under ``plan``; one the Hub cannot be asked about, or whose config
    cannot be read, becomes a result with ``config_error`` (the Hub's in
    ``LintRun.unavailable``) instead of ending the run."""
    defaults = default_config_defaults()
    results: list[ModelResult] = []
    unavailable: list[str] = []
    for ref in refs:
        try:
            loaded = load_config(ref, revision=revision, offline=offline, lock=lock)
        except HubUnavailableError as err:
            unavailable.append(ref)
            results.append(ModelResult(Target(ref), plan, None, (), str(err)))
            continue
        except (HubError, InputError) as err:
            results.append(ModelResult(Target(ref), plan, None, (), str(err)))
            continue
        target = Target(loaded.ref, "model", loaded.revision, loaded.path)
        results.append(lint_config(target, loaded.config, plan, (), source=loaded.source,
                                   defaults=defaults, offline=offline, lock=lock))
    return LintRun(tuple(results), unavailable=tuple(dict.fromkeys(unavailable)))


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


def _unranked(result: ModelResult, unavailable: Sequence[str],
              by_sequences: bool) -> Unranked | None:
    """Why ``result`` cannot be ranked (``None``: it can)."""
    if result.analysis is None:
        reason: Reason = "hub-unavailable" if result.target.ref in unavailable \
            else "unresolved-config"
        return Unranked(result, reason, result.config_error or "the config did not resolve")
    a = result.analysis
    cap = result.capacity
    if a.bytes_per_sequence_per_gpu is None or (
            by_sequences and (cap is None or cap.max_sequences is None)):
        return Unranked(result, "tp-refused",
                        f"{result.target.ref}: the engine refuses tp={a.plan.layout.tp} for "
                        f"this model (`kvlint check` says why)")
    return None


def rank(run: LintRun, plan: ServingPlan) -> Ranking:
    """Rank the models ``run`` sized; the others are listed with the reason."""
    by_sequences = plan.gpu is not None or plan.gpu_memory_bytes is not None
    keyed: list[tuple[int, ModelResult]] = []
    unranked: list[Unranked] = []
    for result in run.results:
        left_out = _unranked(result, run.unavailable, by_sequences)
        if left_out is not None:
            unranked.append(left_out)
            continue
        a = result.analysis
        assert a is not None and a.bytes_per_sequence_per_gpu is not None
        if by_sequences:
            assert result.capacity is not None and result.capacity.max_sequences is not None
            keyed.append((-result.capacity.max_sequences, result))
        else:
            keyed.append((a.bytes_per_sequence_per_gpu, result))
    keyed.sort(key=lambda item: item[0])
    rows: list[Row] = []
    best = keyed[0][0] if keyed else 0
    for i, (key, result) in enumerate(keyed):
        position = rows[-1].rank if rows and key == keyed[i - 1][0] else i + 1
        if by_sequences:
            factor = (best / key) if key else None  # both negative sequence counts
        else:
            factor = (key / best) if best else (1.0 if key == best else None)
        rows.append(Row(position, result, result.capacity, factor))
    return Ranking(tuple(rows), tuple(unranked), plan, by_sequences)


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


def _gpu_name(ranking: Ranking) -> str | None:
    """The GPU sized: its table name, or ``custom (80 GiB)`` when only its memory is given."""
    plan = ranking.plan
    if plan.gpu is None and plan.gpu_memory_bytes is not None:
        return custom_gpu_name(plan.gpu_memory_bytes)
    return plan.gpu


def render_json(ranking: Ranking) -> str:
    data = {"schema_version": SCHEMA_VERSION, "kvlint_version": __version__,
            "gpu": _gpu_name(ranking), "ranked_by": ranking.ranked_by, "basis": ranking.basis(),
            "rows": [_row_dict(r) for r in ranking.rows],
            "unranked": [{"ref": u.ref, "reason": u.reason, "message": u.message}
                         for u in ranking.unranked]}
    return json.dumps(data, indent=2) + "\n"


def render_table(ranking: Ranking, tablefmt: str) -> str:
    from tabulate import tabulate

    with_gpu = ranking.by_sequences
    plan = ranking.plan
    headers = ["rank", "model", "attention", "KV/token",
               f"per {fmt_int(plan.context)}-token seq"
               + ("/GPU" if plan.layout.tp * plan.layout.pp > 1 else "")]
    with_state = any(r.result.analysis is not None and r.result.analysis.cached.state_layers
                     for r in ranking.rows)
    if with_state:
        headers.append("of it state")
    if with_gpu:
        headers += ["weights/GPU", f"sequences of {fmt_int(ranking.sequence_tokens)}",
                    "crossover batch"]
    headers.append("x best")
    table = []
    for r in ranking.rows:
        a = r.result.analysis
        assert a is not None and a.bytes_per_sequence_per_gpu is not None
        line: list[str] = [str(r.rank), r.ref, attention_label(a.geometry),
                           fmt_bytes(a.footprint.bytes_per_token),
                           fmt_bytes(a.bytes_per_sequence_per_gpu)]
        if with_state:
            line.append(fmt_bytes(a.state_bytes_per_sequence_per_gpu or 0)
                        if a.cached.state_layers else "-")
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
    if ranking.unranked:
        headers.append("not ranked")
        for line in table:
            line.append("")
        for u in ranking.unranked:
            a = u.result.analysis
            table.append(["-", u.ref, attention_label(a.geometry) if a else "-",
                          fmt_bytes(a.footprint.bytes_per_token) if a else "-"]
                         + ["-"] * (len(headers) - 5) + [REASON_LABELS[u.reason]])
    body = tabulate(table, headers=headers, tablefmt=tablefmt, disable_numparse=True)
    return f"{ranking.basis()}\n\n{body}\n"
