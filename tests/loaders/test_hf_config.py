"""config.json -> geometry: alias spellings, schedules and the errors (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.config_defaults import TableDefaults
from kvlint.loaders.hf_config import MISSING, resolve_geometry
from kvlint.model.geometry import AttentionGeometry, AttentionKind, LayerKind
from tests.helpers import fixture_config, geometry


class NoTransformers:
    """Defaults for tests that must not depend on transformers: knows nothing."""

    def knows(self, model_type: str) -> bool:
        return False

    def value(self, model_type: str, config: Mapping[str, Any], name: str) -> Any:
        return MISSING

    def text_model_type(self, model_type: str) -> str | None:
        return None


def resolve(config: dict[str, Any], known: bool = False) -> AttentionGeometry:
    return resolve_geometry(config, defaults=TableDefaults() if known else NoTransformers())


BASE = {"model_type": "remote_thing", "num_hidden_layers": 4, "num_attention_heads": 32,
        "hidden_size": 4096}


@pytest.mark.parametrize(("extra", "kv_heads"), [
    ({"num_key_value_heads": 8}, 8),
    ({"n_head_kv": 4}, 4),
    ({"num_kv_heads": 2}, 2),
    ({"multi_query": True}, 1),
    ({"multi_query": False}, 32),
    ({"multi_query_attention": True, "multi_query_group_num": 2}, 2),
    ({"multi_query_attention": False, "multi_query_group_num": 2}, 32),
    ({"attn_config": {"kv_n_heads": 8}}, 8),
    ({"attn_config": {"attn_type": "multihead_attention", "kv_n_heads": 8}}, 32),
    ({"attn_config": {"attn_type": "multiquery_attention"}}, 1),
    ({"attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 4}}, 4),
], ids=lambda v: str(v) if isinstance(v, int) else "-".join(map(str, v)))
def test_kv_head_spellings(extra: dict[str, Any], kv_heads: int) -> None:
    assert resolve({**BASE, **extra}).num_kv_heads == kv_heads


@pytest.mark.parametrize(("config", "want"), [
    ({"model_type": "x", "n_layer": 2, "n_head": 8, "n_embd": 512}, (2, 8, 64)),
    ({"model_type": "x", "num_layers": 2, "num_attention_heads": 8, "hidden_size": 4096,
      "kv_channels": 128}, (2, 8, 128)),
    ({"model_type": "x", "n_layers": 2, "n_heads": 8, "d_model": 1024}, (2, 8, 128)),
    ({**BASE, "head_dim": 256}, (4, 32, 256)),
])
def test_layer_head_and_dim_spellings(config: dict[str, Any], want: tuple[int, int, int]) -> None:
    g = resolve(config)
    assert (g.num_layers, g.num_attention_heads, g.head_dim) == want


def test_old_falcon_formats() -> None:
    falcon40 = geometry("tiiuae--falcon-40b")  # RefinedWeb, n_head_kv 8
    falcon7 = geometry("tiiuae--falcon-7b")  # RefinedWebModel, multi_query
    assert (falcon40.num_kv_heads, falcon40.head_dim) == (8, 64)
    assert (falcon7.num_kv_heads, falcon7.num_attention_heads, falcon7.head_dim) == (1, 71, 64)


def test_new_falcon_without_new_decoder_architecture_ignores_num_kv_heads() -> None:
    config = {"model_type": "falcon", "num_hidden_layers": 2, "num_attention_heads": 8,
              "hidden_size": 512, "num_kv_heads": 8, "multi_query": True,
              "new_decoder_architecture": False}
    assert resolve(config).num_kv_heads == 1
    assert resolve({**config, "new_decoder_architecture": True}).num_kv_heads == 8


def test_v_head_dim_differs_from_k() -> None:
    g = resolve({**BASE, "num_key_value_heads": 8, "head_dim": 192, "v_head_dim": 128})
    assert (g.head_dim, g.v_head_dim, g.layers[0].elements_per_token) == (192, 128, 8 * 320)


def test_mla_fields() -> None:
    g = geometry("deepseek-ai--DeepSeek-V2-Lite")
    assert g.attention is AttentionKind.MLA
    assert (g.kv_lora_rank, g.qk_rope_head_dim, g.head_dim, g.v_head_dim) == (512, 64, 192, 128)
    assert g.layers[0].elements_per_token == 576


def test_minicpm3_mla_without_model_type_or_v_head_dim() -> None:
    g = geometry("openbmb--MiniCPM3-4B")
    assert (g.model_type, g.kv_lora_rank, g.qk_rope_head_dim, g.head_dim) == ("", 256, 32, 96)
    assert any("v_head_dim" in note for note in g.notes)


def test_remote_code_without_kv_field_is_assumed_mha() -> None:
    g = geometry("baichuan-inc--Baichuan2-7B-Chat")
    assert g.attention is AttentionKind.MHA
    assert g.notes == ("no KV-head field and model_type 'baichuan' is not known to "
                       "transformers: assumed MHA (32 KV heads), as vLLM does",)


def test_known_type_without_kv_field_asks_transformers() -> None:
    # MistralConfig's default is 8 KV heads, not MHA: never guess.
    g = resolve({"model_type": "mistral", "num_hidden_layers": 2, "num_attention_heads": 32,
                 "hidden_size": 4096}, known=True)
    assert g.num_kv_heads == 8
    assert g.notes == ("not in the config, so transformers' 'mistral' defaults were used: "
                       "num_key_value_heads=8",)


def test_schedules() -> None:
    kinds = {name: [la.kind for la in geometry(name).layers] for name in (
        "google--gemma-2-2b-it", "google--gemma-3-1b-it", "ai21labs--AI21-Jamba-1.5-Mini",
        "meta-llama--Llama-4-Scout-17B-16E-Instruct", "nvidia--Nemotron-H-56B-Base-8K",
        "mistralai--Mistral-7B-v0.1", "Qwen--Qwen2.5-7B", "openai--gpt-oss-20b")}
    S, F, C, N = LayerKind.SLIDING, LayerKind.FULL, LayerKind.CHUNKED, LayerKind.NONE
    assert kinds["google--gemma-2-2b-it"][:4] == [S, F, S, F]  # Gemma 2 alternation
    assert kinds["google--gemma-3-1b-it"][:6] == [S] * 5 + [F]  # sliding_window_pattern 6
    assert kinds["ai21labs--AI21-Jamba-1.5-Mini"][:9] == [N] * 4 + [F] + [N] * 3 + [N]
    assert kinds["meta-llama--Llama-4-Scout-17B-16E-Instruct"][:4] == [C, C, C, F]
    assert kinds["nvidia--Nemotron-H-56B-Base-8K"].count(F) == 10
    assert set(kinds["mistralai--Mistral-7B-v0.1"]) == {S}  # sliding_window on every layer
    assert set(kinds["Qwen--Qwen2.5-7B"]) == {F}  # use_sliding_window false
    assert kinds["openai--gpt-oss-20b"][:2] == [S, F]  # layer_types


def test_qwen2_max_window_layers() -> None:
    g = resolve({**BASE, "num_key_value_heads": 8, "sliding_window": 4096,
                 "use_sliding_window": True, "max_window_layers": 2})
    assert [la.kind for la in g.layers] == [LayerKind.FULL] * 2 + [LayerKind.SLIDING] * 2


def test_nemotron_nas_block_configs() -> None:
    g = geometry("nvidia--Llama-3_3-Nemotron-Super-49B-v1")
    assert (g.num_layers, g.num_kv_layers, g.num_kv_heads) == (80, 49, 8)
    assert g.notes == ()


def test_layers_block_type() -> None:
    g = resolve({**BASE, "num_key_value_heads": 8,
                 "layers_block_type": ["mamba", "attention", "mamba", "attention"]})
    assert [la.holds_kv for la in g.layers] == [False, True, False, True]


def test_mamba_only() -> None:
    g = geometry("tiiuae--falcon-mamba-7b")
    assert (g.attention, g.num_layers, g.num_kv_layers) == (AttentionKind.NONE, 64, 0)


@pytest.mark.parametrize(("config", "field", "text"), [
    ({**BASE, "num_attention_heads": 0}, "num_attention_heads", "at least 1, got 0"),
    ({**BASE, "num_attention_heads": -4}, "num_attention_heads", "at least 1, got -4"),
    ({**BASE, "num_attention_heads": "32"}, "num_attention_heads", "must be an integer, got '32'"),
    ({**BASE, "num_attention_heads": 32.5}, "num_attention_heads", "got 32.5"),
    ({**BASE, "num_attention_heads": True}, "num_attention_heads", "must be an integer"),
    ({**BASE, "num_key_value_heads": 0}, "num_key_value_heads", "at least 1, got 0"),
    ({**BASE, "num_key_value_heads": 48}, "num_key_value_heads", "(48) exceeds"),
    ({**BASE, "num_key_value_heads": 5}, "num_key_value_heads", "not a multiple"),
    ({**BASE, "hidden_size": 4000, "num_attention_heads": 48}, "head_dim", "not divisible"),
    ({"model_type": "x", "num_attention_heads": 8}, "num_hidden_layers", "missing field"),
    ({"model_type": "x", "num_hidden_layers": 8}, "num_attention_heads", "missing field"),
    ({**BASE, "layer_types": ["full_attention"] * 3}, "layer_types", "describes 3 layers"),
    ({**BASE, "layer_types": ["full_attention"] * 3 + ["weird"]}, "layer_types", "'weird'"),
    ({**BASE, "layer_types": "full"}, "layer_types", "must be a list"),
    ({**BASE, "kv_lora_rank": 512}, "qk_rope_head_dim", "missing field"),
])
def test_bad_values_name_the_field(config: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(config)
    assert info.value.field == field
    assert text in str(info.value)
    assert "\n" not in str(info.value)


def test_errors_in_text_config_name_the_nested_field() -> None:
    config = fixture_config("Qwen--Qwen3-VL-8B-Instruct")
    config["text_config"]["num_key_value_heads"] = -1
    with pytest.raises(ConfigError) as info:
        resolve(config)
    assert info.value.field == "text_config.num_key_value_heads"
    assert "'text_config.num_key_value_heads'" in str(info.value)


def test_not_an_object() -> None:
    with pytest.raises(ConfigError, match="expected a JSON object, got list"):
        resolve_geometry([1, 2])


def test_gpt_neo_attention_types() -> None:
    g = resolve({"model_type": "gpt_neo", "num_layers": 4, "num_heads": 16, "hidden_size": 2048,
                 "attention_types": [[["global", "local"], 2]], "window_size": 256})
    assert [la.kind for la in g.layers] == [LayerKind.FULL, LayerKind.SLIDING] * 2
    assert g.sliding_window == 256


def test_text_config_without_model_type_takes_the_outer_types_default() -> None:
    config = fixture_config("llava-hf--llava-1.5-7b-hf")
    del config["text_config"]["model_type"]
    g = resolve(config, known=True)  # LlavaConfig's default text config is a LlamaConfig
    assert (g.model_type, g.num_layers, g.num_attention_heads, g.num_kv_heads) == \
        ("llama", 32, 32, 32)
