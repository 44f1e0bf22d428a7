"""``--format json``: docs/design.md §7, schema_version 2 (``kvlint schema`` prints its schema)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvlint import __version__
from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.model.kv import exact_number
from kvlint.reporters.base import Reporter
from kvlint.reporters.json_text import indented_json

if TYPE_CHECKING:
    from kvlint.linter import LintRun, ModelResult
    from kvlint.model.capacity import Capacity
    from kvlint.model.geometry import AttentionGeometry, LayerGeometry
    from kvlint.model.memory import MemoryTerms
    from kvlint.model.serving import KvAnalysis
    from kvlint.probe.result import ProbeReport

SCHEMA_VERSION = 2


def _geometry(a: KvAnalysis) -> dict[str, Any]:
    g = a.geometry
    return {
        "model_type": g.model_type, "attention": g.attention.value, "num_layers": g.num_layers,
        "num_kv_layers": g.num_kv_layers, "num_sliding_layers": g.num_sliding_layers,
        "sliding_window": g.sliding_window, "num_attention_heads": g.num_attention_heads,
        "num_kv_heads": g.num_kv_heads, "head_dim": g.head_dim, "kv_lora_rank": g.kv_lora_rank,
        "qk_rope_head_dim": g.qk_rope_head_dim, "dtype": g.dtype or "unspecified",
        "architecture": g.architecture,
        "num_shared_kv_layers": g.num_shared_kv_layers,
        "num_state_layers": len(g.state_layers),
        "layer_groups": layer_groups(g),
        "notes": list(g.notes),
    }


def layer_groups(g: AttentionGeometry) -> list[dict[str, Any]]:
    """Runs of identical layers, in order: what each layer caches."""
    groups: list[dict[str, Any]] = []
    for layer in g.layers:
        entry = _layer(layer)
        if groups and groups[-1]["layer"] == entry:
            groups[-1]["count"] += 1
        else:
            groups.append({"count": 1, "layer": entry})
    return [{"count": grp["count"], **grp["layer"]} for grp in groups]


def _layer(layer: LayerGeometry) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": layer.kind.value}
    if layer.attends:
        out.update(num_kv_heads=layer.num_kv_heads, k_head_dim=layer.k_head_dim,
                   v_head_dim=layer.v_head_dim, window=layer.window,
                   kv_lora_rank=layer.kv_lora_rank, kv_shared=layer.kv_shared,
                   entry_bytes=layer.entry_bytes)
    if layer.extra_caches:
        out["extra_caches"] = [
            {"name": c.name, "elements": c.elements, "element_bytes": c.element_bytes,
             "extra_bytes": c.extra_bytes, "tokens_per_entry": c.tokens_per_entry,
             "window": c.window, "replicated": c.replicated} for c in layer.extra_caches]
    if layer.state is not None:
        out["state"] = {"kind": layer.state.kind, "dims": dict(layer.state.dims),
                        "dtype": layer.state.dtype}
    return out


def _kv(a: KvAnalysis) -> dict[str, Any] | None:
    fp = a.footprint
    if fp.bytes_per_token_per_gpu is None or fp.bytes_per_token_cluster is None:
        return None  # the engine refuses this tp: KV202 says why
    return {
        "dtype": a.dtype.name, "bytes_per_element": a.dtype.effective_bytes_per_element,
        "bytes_per_token": exact_number(fp.bytes_per_token_exact),
        "bytes_per_token_per_gpu": exact_number(fp.bytes_per_token_per_gpu_exact)
        if fp.bytes_per_token_per_gpu_exact is not None else fp.bytes_per_token_per_gpu,
        "kv_heads_per_gpu": fp.kv_heads_per_gpu,
        "replication_factor": float(fp.replication_factor or 1.0),
        "bytes_per_token_cluster": exact_number(fp.bytes_per_token_cluster_exact)
        if fp.bytes_per_token_cluster_exact is not None else fp.bytes_per_token_cluster,
        "context": a.plan.context,
        "bytes_per_sequence": a.bytes_per_sequence,
        "state_bytes_per_sequence_per_gpu": a.state_bytes_per_sequence_per_gpu,
    }


def _capacity(c: Capacity) -> dict[str, Any]:
    return {
        "gpu": c.gpu.name, "gpu_memory_bytes": c.gpu.memory_bytes,
        "gpu_memory_utilization": c.gpu_memory_utilization,
        "weight_bytes_per_gpu": c.weight_bytes_per_gpu,
        "kv_budget_bytes_per_gpu": c.kv_budget_bytes_per_gpu, "max_tokens": c.max_tokens,
        "max_sequences": c.max_sequences, "crossover_batch": c.crossover_batch,
        "tpot_floor_ms": c.tpot_floor_ms, "context": c.context,
        "bytes_per_sequence_per_gpu": c.bytes_per_sequence_per_gpu,
        "state_bytes_per_sequence_per_gpu": c.state_bytes_per_sequence_per_gpu,
        "overhead_bytes_per_gpu": c.overhead_bytes,
        "max_concurrency": c.max_concurrency,
        "memory_profile": _memory(c.memory),
        "kv_budget_source": c.kv_budget_source,
        "kv_tokens_capped_by": c.kv_tokens_capped_by,
        "kv_pools": [{
            "setting": s.setting, "assumed": s.assumed, "note": s.note, "tokens": s.tokens,
            "max_sequences": s.max_sequences, "max_seq_len": s.max_seq_len,
            "tokens_per_block": s.tokens_per_block,
            "pools": [{"window": p.window, "layers": p.layers,
                       "bytes_per_token": p.bytes_per_token, "blocks": p.blocks,
                       "tokens": p.tokens} for p in s.pools],
        } for s in c.kv_pools],
    }


def _memory(m: MemoryTerms | None) -> dict[str, Any] | None:
    """vLLM's start-up profile, term by term; ``estimated`` names the terms kvlint estimates
    (vLLM measures them)."""
    if m is None:
        return None
    return {
        "engine_version": m.engine_version, "requested_bytes": m.requested_bytes,
        "weight_bytes": m.weight_bytes, "lora_bytes": m.lora_bytes,
        "activation_peak_bytes": m.activation_peak_bytes,
        "non_torch_bytes": m.non_torch_bytes, "cuda_graph_bytes": m.cuda_graph_bytes,
        "kv_memory_bytes": m.kv_memory_bytes, "profiled_tokens": m.profiled_tokens,
        "sampler_rows": m.sampler_rows, "kv_margin_bytes": m.kv_margin_bytes,
        "block_size": m.block_size,
        "estimated": ["activation_peak_bytes", "non_torch_bytes", "cuda_graph_bytes",
                      "kv_margin_bytes"],
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {"code": f.code, "name": f.name, "severity": f.severity.value, "message": f.message,
            "path": f.path, "line": f.line, "column": f.column,
            **({"end_line": f.end_line} if f.end_line else {}), "data": dict(f.data),
            **({"suggestion": f.suggestion.as_dict()} if f.suggestion else {})}


def _probe(p: ProbeReport) -> dict[str, Any]:
    return {
        "device": p.device, "method": p.method, "context": p.context, "batch": p.batch,
        "layers": p.layers, "built": p.built, "notes": list(p.notes),
        "out_of_memory": p.out_of_memory,
        "terms": [{"term": t.term, "unit": t.unit, "printed": t.printed,
                   "predicted": t.predicted, "estimated": t.estimated,
                   "error": _round(t.error)} for t in p.terms],
        "impls": [{
            "impl": m.impl, "dtype": m.dtype, "theory_read_bytes": m.theory_read_bytes,
            "measured_read_bytes": m.measured_read_bytes, "read_ratio": _round(m.read_ratio),
            "theory_cache_bytes": m.theory_cache_bytes,
            "measured_cache_bytes": m.measured_cache_bytes,
            "cache_ratio": _round(m.cache_ratio),
            "cache_traffic_read_bytes": m.cache_traffic_read_bytes,
            "cache_traffic_write_bytes": m.cache_traffic_write_bytes,
            "materializations": [{"op": x.op, "amplification": x.amplification,
                                  "bytes": x.bytes, "calls": x.calls, "module": x.module}
                                 for x in m.materializations],
            "sdpa_calls": [{"query_shape": list(c.call.query_shape),
                            "key_shape": list(c.call.key_shape),
                            "value_shape": list(c.call.value_shape), "dtype": c.call.dtype,
                            "enable_gqa": c.call.enable_gqa, "has_mask": c.call.has_mask,
                            "is_causal": c.call.is_causal, "cuda_backend": c.cuda_backend,
                            "materializes": c.materializes, "reason": c.reason,
                            "calls": c.calls} for c in m.sdpa_calls],
            "verdict": m.verdict, "seconds": m.seconds, "skipped": m.skipped,
            "notes": list(m.notes), "details": dict(m.details),
        } for m in p.impls],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _result(r: ModelResult, unavailable: tuple[str, ...] = (),
            geometries: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """``geometries``: the geometry sections already rendered in this report, by the id of
    the geometry (results of one model share its section: a tree of manifests names few
    models)."""
    p, layout, t = r.plan, r.plan.layout, r.target
    out: dict[str, Any] = {
        "target": {"kind": t.kind, "ref": t.ref, "revision": t.revision, "path": t.path,
                   "line": t.line},
        "serving": {"engine": p.behaviour.engine if r.analysis else p.engine,
                    "engine_version": p.behaviour.version if r.analysis else p.engine_version,
                    "tp": layout.tp,
                    "pp": layout.pp, "dp": layout.dp, "dp_attention": layout.dp_attention,
                    "kv_cache_dtype": p.kv_cache_dtype, "gpu": p.gpu,
                    "max_model_len": p.max_model_len, "max_num_seqs": p.max_num_seqs},
        "geometry": _shared_geometry(r.analysis, geometries) if r.analysis else None,
        "kv": _kv(r.analysis) if r.analysis else None,
        "capacity": {**_capacity(r.capacity), "gpu_source": p.gpu_source,
                     "gpu_memory_source": p.gpu_memory_source or "gpus.toml"}
        if r.capacity else None,
        "findings": [_finding(f) for f in r.findings],
    }
    if r.probe is not None:  # kvlint probe only
        out["probe"] = _probe(r.probe)
    if r.target.ref in unavailable and r.config_error:
        out["unavailable"] = r.config_error
    return out


def _shared_geometry(a: KvAnalysis, geometries: dict[int, dict[str, Any]] | None
                     ) -> dict[str, Any]:
    if geometries is None:
        return _geometry(a)
    key = id(a.geometry)  # the geometries live in the run's results while it renders
    if key not in geometries:
        geometries[key] = _geometry(a)
    return geometries[key]


def report(run: LintRun) -> dict[str, Any]:
    """The whole report as plain JSON-ready data (results of one model share the same
    ``geometry`` object: render it, do not change it in place)."""
    geometries: dict[int, dict[str, Any]] = {}
    return {
        "schema_version": SCHEMA_VERSION,
        "kvlint_version": __version__,
        "results": [_result(r, run.unavailable, geometries) for r in run.results],
        "summary": {s.value: run.count(s) for s in (Severity.ERROR, Severity.WARNING,
                                                     Severity.INFO)},
    }


class JsonReporter(Reporter):
    name = "json"
    description = "machine-readable results (kvlint schema prints the JSON Schema)"

    def render(self, run: LintRun) -> str:
        return indented_json(report(run)) + "\n"


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [JsonReporter]
