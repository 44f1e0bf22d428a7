"""The JSON output contract (DESIGN §7, ``schema_version`` 1) as pydantic models.

``kvlint schema`` prints :func:`json_schema`; the JSON reporter serialises :func:`build_report`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kvlint import __version__
from kvlint.linter import LintRun, ModelResult
from kvlint.model.serving import KvAnalysis

SCHEMA_VERSION: Literal[1] = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetOut(_Strict):
    kind: Literal["model", "manifest", "source"]
    ref: str
    revision: str | None
    path: str | None
    line: int | None


class ServingOut(_Strict):
    engine: str | None
    engine_version: str | None
    tp: int
    pp: int
    dp: int
    dp_attention: bool
    kv_cache_dtype: str
    gpu: str | None
    max_model_len: int | None
    max_num_seqs: int | None


class GeometryOut(_Strict):
    model_type: str
    attention: Literal["mha", "gqa", "mqa", "mla", "none"]
    num_layers: int
    num_kv_layers: int
    num_sliding_layers: int
    sliding_window: int | None
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int = Field(description="Key head dim (MLA: qk_nope + qk_rope).")
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    dtype: str


class KvOut(_Strict):
    dtype: str
    bytes_per_element: float
    bytes_per_token: int
    bytes_per_token_per_gpu: int
    kv_heads_per_gpu: int | None
    replication_factor: float
    bytes_per_token_cluster: int
    context: int | None
    bytes_per_sequence: int | None


class CapacityOut(_Strict):
    gpu: str
    weight_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    max_tokens: int
    max_sequences: int | None
    crossover_batch: float | None
    tpot_floor_ms: float | None


class FindingOut(_Strict):
    code: str
    name: str
    severity: Literal["error", "warning", "info"]
    message: str
    path: str | None
    line: int | None
    column: int | None
    data: dict[str, Any]


class ResultOut(_Strict):
    target: TargetOut
    serving: ServingOut
    geometry: GeometryOut | None
    kv: KvOut | None
    capacity: CapacityOut | None
    findings: list[FindingOut]


class Summary(_Strict):
    error: int
    warning: int
    info: int


class Report(_Strict):
    schema_version: Literal[1]
    kvlint_version: str
    results: list[ResultOut]
    summary: Summary


def _geometry(a: KvAnalysis) -> GeometryOut:
    g = a.geometry
    return GeometryOut(
        model_type=g.model_type, attention=g.attention.value, num_layers=g.num_layers,
        num_kv_layers=g.num_kv_layers, num_sliding_layers=g.num_sliding_layers,
        sliding_window=g.sliding_window, num_attention_heads=g.num_attention_heads,
        num_kv_heads=g.num_kv_heads, head_dim=g.head_dim, kv_lora_rank=g.kv_lora_rank,
        qk_rope_head_dim=g.qk_rope_head_dim, dtype=g.dtype or "unspecified",
    )


def _kv(a: KvAnalysis) -> KvOut | None:
    fp = a.footprint
    if fp.bytes_per_token_per_gpu is None or fp.bytes_per_token_cluster is None:
        return None  # the engine refuses this tp: KV202 explains
    return KvOut(
        dtype=a.dtype.name, bytes_per_element=a.dtype.effective_bytes_per_element,
        bytes_per_token=fp.bytes_per_token, bytes_per_token_per_gpu=fp.bytes_per_token_per_gpu,
        kv_heads_per_gpu=fp.kv_heads_per_gpu, replication_factor=fp.replication_factor or 1.0,
        bytes_per_token_cluster=fp.bytes_per_token_cluster, context=a.plan.context,
        bytes_per_sequence=a.bytes_per_sequence,
    )


def _result(r: ModelResult) -> ResultOut:
    p = r.plan
    layout = p.layout
    return ResultOut(
        target=TargetOut(kind=r.target.kind, ref=r.target.ref, revision=r.target.revision,
                         path=r.target.path, line=r.target.line),
        serving=ServingOut(engine=p.engine, engine_version=p.engine_version, tp=layout.tp,
                           pp=layout.pp, dp=layout.dp, dp_attention=layout.dp_attention,
                           kv_cache_dtype=p.kv_cache_dtype, gpu=p.gpu,
                           max_model_len=p.max_model_len, max_num_seqs=p.max_num_seqs),
        geometry=_geometry(r.analysis) if r.analysis else None,
        kv=_kv(r.analysis) if r.analysis else None,
        capacity=None,
        findings=[FindingOut(code=f.code, name=f.name, severity=f.severity.value,
                             message=f.message, path=f.path, line=f.line, column=f.column,
                             data=dict(f.data)) for f in r.findings],
    )


def build_report(run: LintRun) -> Report:
    from kvlint.diagnostics import Severity

    return Report(
        schema_version=SCHEMA_VERSION, kvlint_version=__version__,
        results=[_result(r) for r in run.results],
        summary=Summary(error=run.count(Severity.ERROR), warning=run.count(Severity.WARNING),
                        info=run.count(Severity.INFO)),
    )


def json_schema() -> dict[str, Any]:
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kvlint report"
    return schema
