"""Every golden value of fixtures/configs/expected.json, at TP 1, 2, 4, 8 and 16."""

from __future__ import annotations

from typing import Any

import pytest

from kvlint.model import kv
from tests.helpers import expected, geometry

EXPECTED = expected()
MODEL_FIELDS = ("attention", "model_type", "num_layers", "num_kv_layers", "num_attention_heads",
                "num_kv_heads", "head_dim", "kv_lora_rank", "qk_rope_head_dim",
                "bytes_per_element", "bytes_per_token")
TP_FIELDS = ("tp", "heads_ok", "kv_ok", "kv_heads_per_gpu", "replication_factor",
             "bytes_per_token_per_gpu")


def _model_values(name: str) -> dict[str, Any]:
    g = geometry(name)
    dtype = kv.resolve_kv_dtype("auto", g)
    return {
        "attention": g.attention.value, "model_type": g.model_type, "num_layers": g.num_layers,
        "num_kv_layers": g.num_kv_layers, "num_attention_heads": g.num_attention_heads,
        "num_kv_heads": g.num_kv_heads, "head_dim": g.head_dim, "kv_lora_rank": g.kv_lora_rank,
        "qk_rope_head_dim": g.qk_rope_head_dim, "bytes_per_element": dtype.bytes_per_element,
        "bytes_per_token": kv.bytes_per_token(g, dtype),
    }


def _tp_values(name: str, tp: int) -> dict[str, Any]:
    g = geometry(name)
    fp = kv.footprint(g, kv.resolve_kv_dtype("auto", g), kv.ParallelLayout(tp=tp))
    return {"tp": tp, "heads_ok": fp.heads_ok, "kv_ok": fp.kv_ok,
            "kv_heads_per_gpu": fp.kv_heads_per_gpu, "replication_factor": fp.replication_factor,
            "bytes_per_token_per_gpu": fp.bytes_per_token_per_gpu}


MODEL_CASES = [(name, f) for name in EXPECTED for f in MODEL_FIELDS]
TP_CASES = [(name, int(tp), f) for name, e in EXPECTED.items() for tp in e["tp"]
            for f in TP_FIELDS]


def test_every_fixture_has_a_golden_vector() -> None:
    assert len(EXPECTED) == 70
    assert len(MODEL_CASES) + len(TP_CASES) == 70 * (11 + 5 * 6)


@pytest.mark.parametrize(("name", "field"), MODEL_CASES,
                         ids=[f"{n.removesuffix('.json')}-{f}" for n, f in MODEL_CASES])
def test_model_value(name: str, field: str) -> None:
    assert _model_values(name)[field] == EXPECTED[name][field]


@pytest.mark.parametrize(("name", "tp", "field"), TP_CASES,
                         ids=[f"{n.removesuffix('.json')}-tp{t}-{f}" for n, t, f in TP_CASES])
def test_tp_value(name: str, tp: int, field: str) -> None:
    want = EXPECTED[name]["tp"][str(tp)][field]
    got = _tp_values(name, tp)[field]
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12)
    else:
        assert got == want
