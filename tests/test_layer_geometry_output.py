"""Capacity, text, JSON, compare and the rules on layer-level geometry (issue 14).

Every geometry here is built by hand: shared-KV layers, per-layer KV heads, an indexer cache,
compressed caches (one entry per 4 and per 128 tokens), windows and recurrent state. State
bytes come from :func:`kvlint.model.state.state_bytes_per_gpu` (whatever it knows), or are
passed explicitly to the capacity arithmetic, so the figures hold for any state layout.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from math import floor

import jsonschema
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.compare import attention_label, rank, render_json, render_table
from kvlint.diagnostics import Finding
from kvlint.linter import LintRun, ModelResult, Target
from kvlint.model import kv
from kvlint.model.capacity import Capacity, GpuSpec, GpuWeights, Sizing, capacity, fit
from kvlint.model.geometry import (
    AttentionGeometry,
    ExtraCache,
    LayerGeometry,
    LayerKind,
    RecurrentState,
)
from kvlint.model.serving import EngineBehaviour, KvAnalysis, ServingPlan, analyze
from kvlint.model.state import state_bytes_per_gpu
from kvlint.reporters.geometry_text import (
    capacity_sequences_text,
    exact_bytes,
    layer_groups_text,
    sequence_text,
    state_text,
)
from kvlint.reporters.json import report
from kvlint.reporters.text import TextReporter
from kvlint.rules.attention import MhaKvCache, MqaSingleKvHead
from kvlint.rules.base import Rule, RuleContext
from kvlint.rules.capacity import MaxModelLenExceedsKvBudget, MaxNumSeqsExceedsKvBudget, _what
from kvlint.rules.engines import SlidingWindowFullAllocation
from kvlint.rules.parallelism import MlaLatentReplicated, TpIndivisibleKvHeads
from kvlint.units import fmt_bytes

GIB = 1024**3
BF16 = kv.KvDtype("bfloat16", 2)

# --- hand-built geometries ------------------------------------------------------------------

FULL = LayerGeometry(LayerKind.FULL, 32, 8, 512, 512)
SLIDING = LayerGeometry(LayerKind.SLIDING, 32, 16, 256, 256, window=1024)
SHARED = replace(SLIDING, kv_shared=True)


def gemma4_like() -> AttentionGeometry:
    """10 global layers (8 KV heads x 512), 50 sliding (16 x 256, window 1,024), and 15 more
    that reuse earlier layers' caches."""
    return AttentionGeometry("gemma4_like", (FULL,) * 10 + (SLIDING,) * 50 + (SHARED,) * 15,
                             32, dtype="bfloat16")


GDN = RecurrentState("gdn", (("num_v_heads", 32), ("num_k_heads", 16), ("head_k_dim", 128),
                             ("head_v_dim", 128), ("conv_kernel", 4)))
"""Qwen3-Next's gated delta net (dims as the recurrent refiner names them)."""
RECURRENT = LayerGeometry(LayerKind.NONE, state=GDN)
HYBRID_ATTN = LayerGeometry(LayerKind.FULL, 16, 2, 256, 256)


def hybrid() -> AttentionGeometry:
    """Qwen3-Next's schedule: 3 recurrent layers, then one full-attention layer, x 10."""
    return AttentionGeometry("hybrid_like", (RECURRENT, RECURRENT, RECURRENT, HYBRID_ATTN) * 10,
                             16, dtype="bfloat16")


INDEXER = ExtraCache("indexer", 128, element_bytes=1, extra_bytes=4)  # 132 B, replicated
MLA = LayerGeometry(LayerKind.FULL, 128, 128, 192, 128, kv_lora_rank=512, qk_rope_head_dim=64)


def mla_indexer() -> AttentionGeometry:
    """DeepSeek-V3.2's shape: 61 MLA layers, each with a 132-byte indexer key per token."""
    return AttentionGeometry("mla_indexer", (replace(MLA, extra_caches=(INDEXER,)),) * 61, 128,
                             dtype="bfloat16")


C4 = ExtraCache("compressed", 512, element_bytes=1, extra_bytes=72, tokens_per_entry=4)
C128 = ExtraCache("compressed", 512, element_bytes=1, extra_bytes=72, tokens_per_entry=128)
SWA_128 = LayerGeometry(LayerKind.SLIDING, 64, 1, 512, 0, window=128, entry_bytes=584)


def compressed() -> AttentionGeometry:
    """DeepSeek-V4's shape: a 128-token window of packed 584-byte entries on every layer,
    plus a compressed stream of one 584-byte entry per 4 tokens (even layers) or per 128
    tokens (odd layers)."""
    layers = tuple(replace(SWA_128, extra_caches=(C4 if i % 2 == 0 else C128,))
                   for i in range(4))
    return AttentionGeometry("compressed_like", layers, 64, dtype="bfloat16")


def state_per_gpu(g: AttentionGeometry, tp: int = 1) -> int:
    """Recurrent state of one sequence on one GPU, as kvlint.model.state sizes it."""
    return sum(state_bytes_per_gpu(la.state, tp) or 0 for la in g.state_layers
               if la.state is not None)


def run(rule: type[Rule], a: KvAnalysis, cap: Capacity | None = None) -> list[Finding]:
    return list(rule().check(RuleContext("hand-built", a.plan, a, capacity=cap)))


# --- per-token and per-sequence bytes -------------------------------------------------------


def test_shared_layers_cost_nothing_and_windows_cap_sliding_layers() -> None:
    g = gemma4_like()
    a = analyze(g, ServingPlan(context=8192))
    full, sliding = (8 + 8) * 512 * 2 * 1, (16 + 16) * 256 * 2  # K+V elements x 2 bytes
    assert full == sliding == 16_384
    assert a.footprint.bytes_per_token == 60 * 16_384  # 15 shared layers hold nothing
    assert a.bytes_per_sequence == 10 * 8192 * 16_384 + 50 * 1024 * 16_384


def test_compressed_caches_are_exact_fractions() -> None:
    g = compressed()
    a = analyze(g, ServingPlan(context=1000))
    # per layer: 584 B for the windowed entry, plus 584/4 or 584/128 for the stream
    assert a.footprint.bytes_per_token_exact == 4 * 584 + 2 * Fraction(584, 4) + \
        2 * Fraction(584, 128)
    assert a.footprint.bytes_per_token_exact == Fraction(2_637_125, 1000)  # 2,637.125
    # a sequence: 128 windowed tokens per layer, ceil(1000/4) = 250 and ceil(1000/128) = 8
    assert a.bytes_per_sequence == 4 * 128 * 584 + 2 * 250 * 584 + 2 * 8 * 584
    assert exact_bytes(a.footprint.bytes_per_token_exact) == "~2,637.12"
    assert exact_bytes(Fraction(5, 4)) == "1.25" and exact_bytes(131_072) == "131,072"


# --- capacity --------------------------------------------------------------------------------


def test_fit_with_explicit_state_bytes() -> None:
    budget = 90 * GIB  # 96,636,764,160
    kv_seq = 8192 * 20_480  # 10 layers x 2 heads x (256 + 256) x 2 B, 8,192 tokens
    state = 30 * 1_056_768  # 30 recurrent layers
    seqs = 96_636_764_160 // (167_772_160 + 31_703_040)
    assert seqs == 484
    tokens, sequences = fit(budget, per_token=20_480, kv_sequence_bytes=kv_seq,
                            state_bytes=state, context=8192)
    assert sequences == seqs
    # with state: tokens = floor(budget x L / (KV + state)) (vLLM: concurrency x max_model_len)
    assert tokens == 96_636_764_160 * 8192 // 199_475_200 == 3_968_655
    # without state the same budget holds budget // per-token bytes
    assert fit(budget, per_token=20_480, kv_sequence_bytes=kv_seq, state_bytes=0,
               context=8192) == (4_718_592, 576)
    # a state larger than the budget: not one sequence (KV501 says so); the tokens stay
    # vLLM's unrounded concurrency x L, as budget // per-token does without state
    assert fit(GIB, per_token=20_480, kv_sequence_bytes=kv_seq, state_bytes=2 * GIB,
               context=8192) == (GIB * 8192 // (kv_seq + 2 * GIB), 0) == (3799, 0)
    assert fit(-5, per_token=20_480, kv_sequence_bytes=kv_seq, state_bytes=state,
               context=8192) == (0, 0)


def test_fit_uses_exact_fractional_per_token_bytes() -> None:
    per_token = Fraction(2_637_125, 1000)
    tokens, _ = fit(10**9, per_token=per_token, kv_sequence_bytes=1, state_bytes=0, context=1)
    assert tokens == floor(Fraction(10**9) / per_token) == 379_200
    assert 10**9 // 2638 == 379_075  # the rounded-up figure would undercount


GPU = GpuSpec("test-gpu", 100 * GIB, 4e12)


def sized(a: KvAnalysis) -> Capacity:
    cap = capacity(a, GPU, GpuWeights(10 * GIB, 10 * GIB, False, "test"),
                   Sizing(1.0, overhead_bytes=0))
    assert cap is not None
    return cap


def test_hybrid_capacity_counts_one_state_per_sequence() -> None:
    g = hybrid()
    a = analyze(g, ServingPlan(context=8192, max_model_len=8192))
    state = state_per_gpu(g)
    kv_seq = 10 * 8192 * 2048  # 10 attention layers x 2 heads x 512 elements x 2 B
    cap = sized(a)
    budget = 90 * GIB
    assert cap.kv_budget_bytes_per_gpu == budget
    assert (cap.bytes_per_sequence_per_gpu, cap.state_bytes_per_sequence_per_gpu) == \
        (kv_seq + state, state)
    assert cap.kv_bytes_per_sequence_per_gpu == kv_seq
    assert a.state_bytes_per_sequence_per_gpu == state
    assert cap.max_sequences == budget // (kv_seq + state)
    assert cap.max_tokens == (budget * 8192 // (kv_seq + state) if state
                              else budget // 20_480)


def test_hybrid_capacity_at_tp2_splits_kv_and_state() -> None:
    g = hybrid()
    a = analyze(g, ServingPlan(context=8192, max_model_len=8192, layout=kv.ParallelLayout(tp=2)))
    state = state_per_gpu(g, 2)
    cap = sized(a)
    assert cap.bytes_per_sequence_per_gpu == 10 * 8192 * 1024 + state
    assert cap.max_sequences == 90 * GIB // (10 * 8192 * 1024 + state)


def test_compressed_capacity_uses_exact_per_token_bytes() -> None:
    a = analyze(compressed(), ServingPlan(context=1000, max_model_len=1000))
    cap = sized(a)
    assert cap.max_tokens == floor(90 * GIB / Fraction(2_637_125, 1000))
    assert cap.max_sequences == 90 * GIB // (4 * 128 * 584 + 2 * 250 * 584 + 2 * 8 * 584)


def test_kv501_and_kv502_name_the_state() -> None:
    g = hybrid()
    a = analyze(g, ServingPlan(context=8192, max_model_len=8192, max_num_seqs=10_000))
    cap = sized(a)
    [kv502] = run(MaxNumSeqsExceedsKvBudget, a, cap)
    state = state_per_gpu(g)
    assert kv502.data["state_bytes_per_sequence_per_gpu"] == state
    assert kv502.data["bytes_per_sequence_per_gpu"] == 10 * 8192 * 2048 + state
    assert ("recurrent state" in kv502.message) == bool(state)
    # a budget one sequence does not fit
    tiny = replace(cap, kv_budget_bytes_per_gpu=1000)
    [kv501] = run(MaxModelLenExceedsKvBudget, a, tiny)
    assert kv501.data["kv_bytes_needed_per_gpu"] == 10 * 8192 * 2048 + state
    assert kv501.data["state_bytes_per_sequence_per_gpu"] == state


# --- text --------------------------------------------------------------------------------------


def test_layer_groups_text() -> None:
    assert layer_groups_text(gemma4_like(), BF16) == (
        "10 full (8 KV heads x 512) + 50 sliding 1,024 (16 x 256) + "
        "15 share earlier layers' KV")
    assert layer_groups_text(mla_indexer(), BF16) == (
        "61 full (MLA latent 512 + rope 64, indexer 132 B/token/layer)")
    assert layer_groups_text(compressed(), BF16) == (
        "2 sliding 128 (1 KV head x 512/0, 584 B/token packed, compressed 1 entry / 4 tokens "
        "(584 B/entry)) + 2 sliding 128 (1 x 512/0, 584 B/token packed, compressed 1 entry / "
        "128 tokens (584 B/entry))")
    assert layer_groups_text(hybrid(), BF16) == (
        "30 recurrent (gdn) + 10 full (2 KV heads x 256)")
    uniform = AttentionGeometry("llama", (HYBRID_ATTN,) * 4, 16)
    assert layer_groups_text(uniform, BF16) is None
    # layers without KV beside one attention shape: the "layers" row says it all
    no_op = AttentionGeometry("nas", (HYBRID_ATTN, LayerGeometry(LayerKind.NONE)) * 2, 16)
    assert layer_groups_text(no_op, BF16) is None


def test_split_and_windowed_extra_caches_are_named() -> None:
    split = ExtraCache("indexer", 64, element_bytes=2, tokens_per_entry=1, window=2048,
                       replicated=False)
    g = AttentionGeometry("x", (replace(HYBRID_ATTN, extra_caches=(split,)),), 16)
    assert layer_groups_text(g, BF16) == (
        "1 full (2 KV heads x 256, indexer 128 B/token/layer, window 2,048, split over tp)")


def test_state_and_sequence_rows() -> None:
    g = hybrid()
    a = analyze(g, ServingPlan(context=8192, layout=kv.ParallelLayout(tp=2)))
    state = kv.state_bytes_per_sequence(g)
    per_gpu = state_per_gpu(g, 2)
    row = state_text(a)
    assert row is not None and "30 recurrent layers (gdn)" in row
    assert row.startswith(f"{fmt_bytes(per_gpu)} per sequence per GPU" if per_gpu
                          else "not sized")
    seq = sequence_text(a)
    assert seq.startswith(f"8,192 tokens → {fmt_bytes(10 * 8192 * 2048 + state)}")
    assert ("recurrent state" in seq) == bool(state)
    assert state_text(analyze(gemma4_like(), ServingPlan())) is None


def test_rule_text_splits_kv_and_state() -> None:
    assert _what(2 * GIB, 0) == "2.0 GiB of KV cache"
    assert _what(2 * GIB, 64 * 1024**2) == (
        "2.0 GiB (1.9 GiB of KV cache + 64.0 MiB of recurrent state)")


def test_capacity_row_splits_kv_and_state() -> None:
    cap = sized(analyze(hybrid(), ServingPlan(context=8192, max_model_len=8192)))
    with_state = replace(cap, max_sequences=10, bytes_per_sequence_per_gpu=200 * 1024**2,
                         state_bytes_per_sequence_per_gpu=40 * 1024**2)
    assert capacity_sequences_text(with_state) == (
        " · 10 sequences of 8,192 (each 200 MiB: 160 MiB KV + 40.0 MiB recurrent state)")
    no_state = replace(with_state, state_bytes_per_sequence_per_gpu=0)
    assert capacity_sequences_text(no_state) == " · 10 sequences of 8,192"


def result(ref: str, g: AttentionGeometry, plan: ServingPlan, cap: bool = False) -> ModelResult:
    a = analyze(g, plan)
    return ModelResult(Target(ref), plan, a, (), capacity=sized(a) if cap else None)


def test_text_report_shows_groups_state_and_shared_layers() -> None:
    plan = ServingPlan(context=8192, max_model_len=8192, gpu="test-gpu")
    out = TextReporter().render(LintRun((result("gemma4", gemma4_like(), plan),
                                         result("hybrid", hybrid(), plan, cap=True))))
    assert "10 full (8 KV heads x 512) + 50 sliding 1,024 (16 x 256) + 15 share" in out
    assert "75 of 75 hold KV" not in out and "60 of 75 hold KV" in out
    assert "15 share KV" in out and "15 without KV" not in out
    assert "recurrent state" in out and "30 recurrent layers (gdn)" in out
    assert "10 of 40 hold KV · 30 recurrent" in out and "30 without KV" not in out
    assert "sequences of 8,192" in out


def test_json_capacity_carries_the_sequence_and_its_state() -> None:
    plan = ServingPlan(context=8192, max_model_len=8192, gpu="test-gpu")
    data = report(LintRun((result("hybrid", hybrid(), plan, cap=True),)))
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    jsonschema.validate(data, schema)
    state = state_per_gpu(hybrid())
    cap = data["results"][0]["capacity"]
    assert (cap["context"], cap["bytes_per_sequence_per_gpu"],
            cap["state_bytes_per_sequence_per_gpu"]) == (8192, 10 * 8192 * 2048 + state, state)
    assert data["results"][0]["kv"]["state_bytes_per_sequence_per_gpu"] == state
    groups = data["results"][0]["geometry"]["layer_groups"]
    assert [(grp["count"], grp["kind"]) for grp in groups] == [(3, "none"), (1, "full")] * 10


# --- compare ---------------------------------------------------------------------------------


def test_compare_ranks_by_sequence_bytes_and_carries_state() -> None:
    plan = ServingPlan(context=131_072)
    dense = AttentionGeometry("dense", (FULL,) * 16, 32, dtype="bfloat16")  # 16,384 B x 16
    results = [result("dense", dense, plan), result("gemma4", gemma4_like(), plan),
               result("hybrid", hybrid(), plan)]
    ranking = rank(LintRun(tuple(results)), plan)
    by_ref = {r.ref: r for r in ranking.rows}
    # per token gemma4 (983,040 B) costs more than dense (262,144 B), per sequence less
    g4 = results[1].analysis
    assert g4 is not None and g4.bytes_per_sequence == 10 * 131_072 * 16_384 + 50 * 1024 * 16_384
    assert g4.bytes_per_sequence < 16 * 131_072 * 16_384
    assert by_ref["gemma4"].rank < by_ref["dense"].rank
    data = json.loads(render_json(ranking))["rows"]
    hyb = next(r for r in data if r["ref"] == "hybrid")
    state = kv.state_bytes_per_sequence(hybrid())
    assert hyb["bytes_per_sequence"] == 10 * 131_072 * 2048 + state
    assert hyb["state_bytes_per_sequence"] == state
    assert hyb["state_bytes_per_sequence_per_gpu"] == state_per_gpu(hybrid())
    assert hyb["attention_label"] == "GQA 16/2 + 30 recurrent"
    assert "of it state" in render_table(ranking, "plain")


def test_attention_label_of_a_pure_recurrent_model() -> None:
    g = AttentionGeometry("mamba", (RECURRENT,) * 64, 0)
    assert attention_label(g) == "64 recurrent"


# --- rules -----------------------------------------------------------------------------------


def test_kv101_sizes_the_gqa_alternative_layer_by_layer() -> None:
    mha = LayerGeometry(LayerKind.FULL, 32, 32, 128, 128)  # 16,384 B/token
    gqa_sliding = LayerGeometry(LayerKind.SLIDING, 32, 4, 128, 128, window=4096)  # 2,048 B
    g = AttentionGeometry("mixed", (mha, gqa_sliding) * 8, 32, dtype="bfloat16")
    a = analyze(g, ServingPlan(context=8192))
    [f] = run(MhaKvCache, a)
    assert f.data["bytes_per_token"] == 8 * 16_384 + 8 * 2048
    # GQA-8 cuts the 8 MHA layers 4x; the sliding GQA layers stay
    assert f.data["gqa_alternative_bytes_per_token"] == 8 * 4096 + 8 * 2048
    assert f.data["bytes_per_sequence"] == 8 * 8192 * 16_384 + 8 * 4096 * 2048
    assert f.data["gqa_alternative_bytes_per_sequence"] == 8 * 8192 * 4096 + 8 * 4096 * 2048
    assert f.data["mha_layers"] == 8
    # 147,456 / 49,152 = 3 per token; 1,140,850,688 / 335,544,320 = 3.4 per sequence
    assert "in 8 of 16 layers" in f.message and "(3x less)" in f.message
    assert "fit 3.40x the concurrent sequences" in f.message


def test_kv102_counts_single_head_layers() -> None:
    mqa = LayerGeometry(LayerKind.FULL, 32, 1, 128, 128)
    g = AttentionGeometry("mixed", (mqa, mqa, mqa, SLIDING), 32, dtype="bfloat16")
    [f] = run(MqaSingleKvHead, analyze(g, ServingPlan()))
    assert f.data["mqa_layers"] == 3 and "in 3 of 4 layers" in f.message


def test_kv204_counts_the_indexer_with_the_latent() -> None:
    a = analyze(mla_indexer(), ServingPlan(layout=kv.ParallelLayout(tp=8)))
    [f] = run(MlaLatentReplicated, a)
    per_layer = 576 * 2 + 132
    assert f.data["replicated_bytes_per_token_per_gpu"] == 61 * per_layer == 78_324
    assert f.data["duplicate_bytes_per_token"] == 7 * 61 * per_layer
    assert f.data["duplicate_bytes_per_sequence"] == 7 * 61 * per_layer * 8192
    assert "The MLA latent and indexer caches are not sharded" in f.message


def test_kv204_replicated_extra_caches_of_a_gqa_model() -> None:
    shared = ExtraCache("indexer", 128, element_bytes=1, extra_bytes=4)  # replicated
    split = ExtraCache("scores", 64, element_bytes=2, replicated=False)
    layer = replace(HYBRID_ATTN, extra_caches=(shared, split))
    g = AttentionGeometry("gqa_indexer", (layer,) * 4, 16, dtype="bfloat16")
    a = analyze(g, ServingPlan(context=1000, layout=kv.ParallelLayout(tp=2)))
    [f] = run(MlaLatentReplicated, a)
    assert f.data["replicated_bytes_per_token_per_gpu"] == 4 * 132
    assert f.data["duplicate_bytes_per_token"] == 4 * 132  # one extra copy at tp=2
    assert f.data["duplicate_bytes_per_sequence"] == 4 * 132 * 1000
    # per GPU: K/V 2 heads / 2 x 512 x 2 B = 1,024, indexer 132, scores 128 / 2 = 64
    assert f.data["bytes_per_token_per_gpu"] == 4 * (1024 + 132 + 64)
    assert "The indexer cache is not sharded" in f.message
    assert "of its 4,880 B/token" in f.message
    # nothing replicated: silent
    plain = AttentionGeometry("gqa", (HYBRID_ATTN,) * 4, 16, dtype="bfloat16")
    assert run(MlaLatentReplicated, analyze(plain, ServingPlan(layout=kv.ParallelLayout(tp=2)))) \
        == []


def test_kv204_compressed_duplicates_are_exact() -> None:
    a = analyze(compressed(), ServingPlan(context=1000, layout=kv.ParallelLayout(tp=4)))
    [f] = run(MlaLatentReplicated, a)
    streams = 2 * Fraction(584, 4) + 2 * Fraction(584, 128)
    assert f.data["duplicate_bytes_per_token"] == float(3 * streams)
    assert f.data["duplicate_bytes_per_sequence"] == 3 * (2 * 250 * 584 + 2 * 8 * 584)


def test_kv202_lists_only_refused_kv_heads() -> None:
    g = gemma4_like()  # 8 and 16 KV heads
    split = analyze(g, ServingPlan(layout=kv.ParallelLayout(tp=8)))
    assert split.footprint.kv_ok and run(TpIndivisibleKvHeads, split) == []
    refused = analyze(g, ServingPlan(layout=kv.ParallelLayout(tp=3)))
    [f] = run(TpIndivisibleKvHeads, refused)
    assert f.data["kv_heads"] == [8, 16]


def test_kv303_names_every_window() -> None:
    other = replace(SLIDING, window=512)
    g = AttentionGeometry("two_windows", (FULL, SLIDING, other, SLIDING), 32, dtype="bfloat16")
    tgi = EngineBehaviour(engine="tgi", display="TGI", version="3.3.4", pinned=True,
                          windowed_sliding_cache=False)
    a = analyze(g, ServingPlan(context=8192, behaviour=tgi))
    [f] = run(SlidingWindowFullAllocation, a)
    assert "the 3 windowed layers (windows 512 and 1,024)" in f.message
    assert f.data["bytes_per_sequence"] == 4 * 8192 * 16_384
    assert f.data["windowed_bytes_per_sequence"] == (8192 + 1024 + 512 + 1024) * 16_384
