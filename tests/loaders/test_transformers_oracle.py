"""Oracle tests: kvlint's config resolution checked against transformers' own config classes.

Group 1 builds transformers' config object for every fixture config whose (text) model type
transformers knows, and asserts that the :class:`AttentionGeometry` kvlint resolves from the
same raw dict agrees on layers, query heads, KV heads, head dims (MLA: latent rank and RoPE dim
too), the per-layer kinds (``layer_types``) and the windows.

Group 2 checks kvlint's two shortcut tables in ``kvlint.loaders.hf_config``
(``HEAD_DIM_IS_HIDDEN_OVER_HEADS``, ``KV_HEADS_DEFAULT_TO_HEADS``): for every listed model type
transformers knows, its config class, built with an unusual shape and no head-dim / KV-head
field, must derive exactly what the table lets kvlint assume without asking transformers.

transformers is an optional extra of kvlint (``kvlint[transformers]``, in the dev extra); the
module is skipped without it. It is imported once here and each fixture's config object is
built once (cached).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

transformers = pytest.importorskip(
    "transformers", reason="transformers (the kvlint[transformers] extra) is not installed")
from transformers import CONFIG_MAPPING, AutoConfig  # noqa: E402

from kvlint.loaders import hf_config  # noqa: E402
from kvlint.loaders.hf_config import (  # noqa: E402
    HEAD_DIM_IS_HIDDEN_OVER_HEADS,
    KV_HEADS_DEFAULT_TO_HEADS,
    resolve_geometry,
)
from kvlint.loaders.transformers_defaults import TransformersDefaults  # noqa: E402
from kvlint.model.geometry import AttentionGeometry, LayerKind  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
FIXTURES = sorted(p.name for p in CONFIGS.glob("*.json") if p.name != "expected.json")
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")

MIN_COMPARED = 81
"""Fixtures compared against transformers 5.24.0 (103 fixtures: 17 with remote-code model
types, 5 in PENDING). Raise it when fixtures are added; a drop means an oracle was lost."""

# transformers' ``layer_types`` spellings -> kvlint's layer kinds. Anything that is not an
# attention layer holds no KV cache. Unknown spellings fail the test rather than pass silently.
TRANSFORMERS_LAYER_KINDS = {
    "full_attention": LayerKind.FULL,
    "sliding_attention": LayerKind.SLIDING,
    "chunked_attention": LayerKind.CHUNKED,
    "linear_attention": LayerKind.NONE,  # Mamba / Gated-DeltaNet layers (Jamba, Qwen3-Next, ...)
    "mamba": LayerKind.NONE,
    "mlp": LayerKind.NONE,  # Nemotron-H MLP-only layers
    "moe": LayerKind.NONE,  # Nemotron-H MoE-only layers
    # DeepSeek-V4: every layer keeps a sliding-window cache; the compressed streams of these
    # two kinds are extra caches on top of it (kvlint.loaders.families.deepseek_v4).
    "compressed_sparse_attention": LayerKind.SLIDING,
    "heavily_compressed_attention": LayerKind.SLIDING,
    # DeepSeek-V3.2 / GLM-5 (DSA): the MLA layer itself; its lightning-indexer key cache is a
    # second, per-layer cache that this table does not describe.
    "indexed_attention": LayerKind.FULL,
    "hybrid": LayerKind.FULL,  # Zamba2: a shared attention block on a Mamba2 layer
    # MiniMax-M3 block-sparse layers keep a full KV cache (vLLM 0.33.0 models/minimax_m3
    # nvidia/model.py: FullAttentionSpec), plus an indexer cache as above.
    "minimax_m3_sparse": LayerKind.FULL,
}


# --- building transformers' config objects ------------------------------------------------


def _load(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((CONFIGS / name).read_text(encoding="utf-8"))
    return value


def _fix_dbrx(config: dict[str, Any]) -> None:
    # transformers' DbrxFFNConfig types ``moe_normalize_expert_weights`` as ``float | None``
    # and huggingface_hub's @strict validation rejects the JSON integer ``1`` the checkpoint
    # stores (StrictDataclassFieldValidationError). Same number, unrelated to attention.
    ffn = config["ffn_config"]
    if isinstance(ffn.get("moe_normalize_expert_weights"), int):
        ffn["moe_normalize_expert_weights"] = float(ffn["moe_normalize_expert_weights"])


def _fix_replit(config: dict[str, Any]) -> None:
    # transformers' MptAttentionConfig.attn_type is Literal["multihead_attention",
    # "multiquery_attention"]: its MPT port has no grouped-query attention and rejects the
    # remote-code value "grouped_query_attention". Dropping it lets transformers build the rest
    # (layers, heads, d_model); its KV-head count cannot be an oracle here (see NO_KV_ORACLE).
    attn = config["attn_config"]
    del attn["attn_type"]
    # MptAttentionConfig also annotates ``attn_pdrop: int`` (its docstring says float) and
    # @strict rejects the checkpoint's 0.0; 0 is the same dropout, unrelated to geometry.
    if attn.get("attn_pdrop") == 0:
        attn["attn_pdrop"] = 0


CONSTRUCTION_FIXES: dict[str, Callable[[dict[str, Any]], None]] = {
    "mlx-community--dbrx-instruct-4bit.json": _fix_dbrx,
    "replit--replit-code-v1_5-3b.json": _fix_replit,
}

VLLM_REFINED = {
    "google--gemma-4-26B-A4B.json": (
        "Gemma 4: transformers 5.24 makes head_dim a per-layer attribute (global layers use "
        "global_head_dim and num_global_key_value_heads); kvlint's per-layer shapes are pinned "
        "against vLLM 0.33 in tests/loaders/test_families_gemma.py"),
    "nvidia--Gemma-4-31B-IT-NVFP4.json": "Gemma 4: per-layer head_dim, as above",
    "google--gemma-4-E2B-it.json": "Gemma 4: per-layer head_dim, as above",
    "google--gemma-4-E4B-it.json": "Gemma 4: per-layer head_dim, as above",
    "Zyphra--Zamba2-7B.json": (
        "Zamba2: vLLM 0.33 attends with 2 * hidden_size / heads per head (transformers 5.20's "
        "attention_head_dim), not the flat head_dim this test derives; pinned in "
        "tests/loaders/test_families_zamba2.py"),
    "Zyphra--Zamba2-2.7B-Instruct-v2.json": "Zamba2: attention_head_dim, as above",
}
"""Fixtures whose per-layer geometry a family refiner takes from the engine's construction
rather than from transformers' flat config attributes (kvlint.loaders.families)."""

PENDING: dict[str, str] = {}
"""Fixtures transformers can build but this comparison cannot judge yet (none today)."""

NO_KV_ORACLE = {
    "replit--replit-code-v1_5-3b.json": (
        "transformers' MPT is MHA-only (no kv_n_heads); the remote-code MPT of this checkpoint "
        "uses grouped_query_attention with attn_config.kv_n_heads 8"
    ),
}


def _text_part(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for key in TEXT_CONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            return sub
    return None


@cache
def _oracle_config(name: str) -> tuple[Any, str | None]:
    """(transformers' text config object, None) or (None, why there is no oracle)."""
    raw = _load(name)
    text = _text_part(raw)
    top_type = raw.get("model_type")
    text_type = text.get("model_type") if text is not None else None
    model_type = text_type or top_type
    if not model_type:
        return None, "no model_type (remote-code config identified only by architectures/auto_map)"
    if model_type not in CONFIG_MAPPING:
        return None, (
            f"model_type {model_type!r} is unknown to transformers {transformers.__version__} "
            "(remote code)"
        )
    config = copy.deepcopy(raw)
    fix = CONSTRUCTION_FIXES.get(name)
    if fix is not None:
        fix(config)
    kwargs = {k: v for k, v in config.items() if k != "model_type"}
    if top_type in CONFIG_MAPPING:
        built = AutoConfig.for_model(top_type, **kwargs).get_text_config()
    else:  # a multimodal wrapper transformers does not know around a text model it knows
        sub = {k: v for k, v in dict(_text_part(config) or {}).items() if k != "model_type"}
        built = AutoConfig.for_model(model_type, **sub)
    # A wrapper's text class may carry another model_type (minimax_m3_vl builds
    # minimax_m3_vl_text, step3p7 a text config typed step3p5), so only an explicit text
    # model_type is checked.
    if text_type:
        assert built.model_type == text_type, (built.model_type, text_type)
    why = PENDING.get(name)
    if why is not None:
        return None, why
    return built, None


@cache
def _kvlint_geometry(name: str) -> AttentionGeometry:
    return resolve_geometry(_load(name), defaults=TransformersDefaults())


# --- what transformers says ---------------------------------------------------------------


def _attr(config: Any, name: str) -> Any:
    return getattr(config, name, None)


def _expected_kv_heads(config: Any, heads: int) -> int:
    """KV heads of the standard-attention layers, by transformers' own logic."""
    if config.model_type == "falcon":  # FalconConfig: new arch -> num_kv_heads; else MQA flag
        if config.new_decoder_architecture:
            return int(config.num_kv_heads)
        return 1 if config.multi_query else heads
    kv = _attr(config, "num_key_value_heads")
    return heads if kv is None else int(kv)  # no such field: the architecture is MHA


def _expected_kinds(config: Any, num_layers: int) -> list[LayerKind]:
    layer_types = _attr(config, "layer_types")
    if layer_types is not None:
        unknown = sorted(set(layer_types) - set(TRANSFORMERS_LAYER_KINDS))
        assert not unknown, f"unmapped transformers layer types {unknown}"
        return [TRANSFORMERS_LAYER_KINDS[t] for t in layer_types]
    if _attr(config, "num_attention_heads") is None:  # SSM: no attention anywhere
        return [LayerKind.NONE] * num_layers
    # Mistral / Phi-3 / Starcoder2: no layer_types; a non-null sliding_window applies to every
    # layer (their modeling passes config.sliding_window to each attention layer).
    if _attr(config, "sliding_window") is not None:
        return [LayerKind.SLIDING] * num_layers
    return [LayerKind.FULL] * num_layers


def _expected_window(config: Any, kind: LayerKind) -> int | None:
    if kind is LayerKind.CHUNKED:
        return int(config.attention_chunk_size)
    if kind is LayerKind.SLIDING:
        window = int(config.sliding_window)
        if config.model_type == "mimo_v2_flash":
            # MiMoV2FlashConfig.__post_init__ sets sliding_window = sliding_window_size + 1
            # ("the reference SGLang implementation attends to sliding_window_size previous
            # tokens plus the query"), i.e. 129 for a checkpoint that says 128, in transformers'
            # mask convention (window counts the query). kvlint keeps the checkpoint's 128, the
            # number vLLM passes to its attention (per_layer_sliding_window=sliding_window_size,
            # FlashAttention window (127, 0)). Engine convention, not a geometry error.
            window -= 1
        return window
    return None


def _expected_layer_kv_heads(config: Any, kind: LayerKind, kv: int) -> int:
    if config.model_type == "mimo_v2_flash" and kind is LayerKind.SLIDING:
        # MiMoV2FlashAttention: "SWA layers double the kv heads vs full-attention".
        return 2 * kv
    return kv


# --- group 1: every fixture against transformers ------------------------------------------


@pytest.mark.parametrize("name", FIXTURES, ids=[n.removesuffix(".json") for n in FIXTURES])
def test_geometry_matches_transformers(name: str) -> None:
    if name in VLLM_REFINED:
        pytest.skip(VLLM_REFINED[name])
    config, why_not = _oracle_config(name)
    if config is None:
        pytest.skip(why_not)
    g = _kvlint_geometry(name)

    num_layers = int(config.num_hidden_layers)
    assert g.num_layers == num_layers

    kinds = _expected_kinds(config, num_layers)
    assert [layer.kind for layer in g.layers] == kinds
    heads = _attr(config, "num_attention_heads")
    if heads is None:  # Mamba / FalconMamba: no attention, no KV cache
        assert g.num_kv_layers == 0 and g.num_attention_heads == 0
        return
    heads = int(heads)
    assert g.num_attention_heads == heads

    mla = _attr(config, "kv_lora_rank") is not None
    assert g.is_mla == mla
    if mla:
        # DeepSeek-V2/V3 configs set head_dim = qk_rope_head_dim (the RoPE part); kvlint's
        # head_dim is the full key head, qk_nope_head_dim + qk_rope_head_dim.
        head_dim = int(config.qk_nope_head_dim) + int(config.qk_rope_head_dim)
        assert g.kv_lora_rank == config.kv_lora_rank
        assert g.qk_rope_head_dim == config.qk_rope_head_dim
    else:
        explicit = _attr(config, "head_dim")
        head_dim = int(explicit) if explicit is not None else int(config.hidden_size) // heads
        assert g.kv_lora_rank is None and g.qk_rope_head_dim is None
    v_head_dim = _attr(config, "v_head_dim")
    v_head_dim = head_dim if v_head_dim is None else int(v_head_dim)
    assert (g.head_dim, g.v_head_dim) == (head_dim, v_head_dim)

    kv = _expected_kv_heads(config, heads)
    if name not in NO_KV_ORACLE:
        assert g.num_kv_heads == kv

    for i, layer in enumerate(g.layers):
        if not layer.holds_kv:
            continue
        where = f"layer {i} ({layer.kind.value})"
        assert layer.num_attention_heads == heads, where
        assert (layer.k_head_dim, layer.v_head_dim) == (head_dim, v_head_dim), where
        if name not in NO_KV_ORACLE:
            assert layer.num_kv_heads == _expected_layer_kv_heads(config, layer.kind, kv), where
        assert layer.window == _expected_window(config, layer.kind), where
        if mla:
            assert (layer.kv_lora_rank, layer.qk_rope_head_dim) == (
                config.kv_lora_rank, config.qk_rope_head_dim), where


def test_enough_fixtures_have_a_transformers_oracle() -> None:
    compared = [n for n in FIXTURES if _oracle_config(n)[0] is not None]
    skipped = {n: _oracle_config(n)[1] for n in FIXTURES if n not in compared}
    print(f"compared with transformers {transformers.__version__}: {len(compared)} fixtures:")
    print("  " + ", ".join(n.removesuffix(".json") for n in compared))
    for n, why in skipped.items():
        print(f"  skipped {n}: {why}")
    assert len(compared) >= MIN_COMPARED, skipped


# --- group 2: kvlint's shortcut tables against transformers --------------------------------

HIDDEN, HEADS, LAYERS = 2880, 40, 24
"""An unusual shape: head dim 72 is no config class's default head_dim and 40 no class's
default KV-head count, so a class default cannot agree by coincidence. 24 layers because
GPTNeoConfig validates its default ``attention_types`` (24 layers) against the layer count."""


def _table_case(model_type: str) -> tuple[Any, dict[str, Any]]:
    """transformers' config built from a raw dict with the class's own field spellings, no
    head_dim and no KV-head field; and that raw dict (for kvlint)."""
    if model_type not in CONFIG_MAPPING:
        pytest.skip(f"model_type {model_type!r} is unknown to transformers "
                    f"{transformers.__version__}")
    cls = CONFIG_MAPPING[model_type]
    spelling = getattr(cls, "attribute_map", {})
    raw: dict[str, Any] = {
        spelling.get("hidden_size", "hidden_size"): HIDDEN,
        spelling.get("num_attention_heads", "num_attention_heads"): HEADS,
        spelling.get("num_hidden_layers", "num_hidden_layers"): LAYERS,
    }
    config = _built_table_config(model_type, tuple(sorted(raw.items())))
    # The spellings really landed (a wrong one would leave the class defaults in place).
    assert (config.hidden_size, config.num_attention_heads, config.num_hidden_layers) == (
        HIDDEN, HEADS, LAYERS)
    return config, {"model_type": model_type, **raw}


@cache
def _built_table_config(model_type: str, items: tuple[tuple[str, int], ...]) -> Any:
    return CONFIG_MAPPING[model_type](**dict(items))


@pytest.mark.parametrize("model_type", sorted(HEAD_DIM_IS_HIDDEN_OVER_HEADS))
def test_head_dim_shortcut_matches_transformers(model_type: str) -> None:
    config, raw = _table_case(model_type)
    # Without a head_dim attribute (or with None) transformers' modeling derives
    # hidden_size // num_attention_heads; a class that sets one itself must agree.
    derived = _attr(config, "head_dim")
    assert derived is None or derived == HIDDEN // HEADS, f"transformers head_dim {derived}"
    # kvlint resolves it from the table alone, without asking transformers.
    assert resolve_geometry(raw).head_dim == HIDDEN // HEADS


KV_HEAD_FIELDS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "kv_n_heads",
                  "multi_query_group_num")


@pytest.mark.parametrize("model_type", sorted(KV_HEADS_DEFAULT_TO_HEADS))
def test_kv_heads_shortcut_matches_transformers(model_type: str) -> None:
    config, raw = _table_case(model_type)
    derived = {f: _attr(config, f) for f in KV_HEAD_FIELDS if _attr(config, f) is not None}
    assert all(v == HEADS for v in derived.values()), f"transformers derives {derived}"
    assert not _attr(config, "multi_query"), "transformers' class defaults to multi-query"
    g = resolve_geometry(raw)
    assert g.num_kv_heads == HEADS
    assert not g.notes, g.notes  # the table answered; no MHA assumption was needed


@pytest.mark.parametrize(("model_type", "name"), sorted(hf_config.KNOWN_DEFAULTS))
def test_known_defaults_match_transformers(model_type: str, name: str) -> None:
    config = CONFIG_MAPPING[model_type]()
    value = getattr(config.get_text_config(), name)
    assert value == hf_config.KNOWN_DEFAULTS[(model_type, name)]
