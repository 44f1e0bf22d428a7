"""The recurrent-state refiner (kvlint.loaders.families.recurrent): which layers keep a state
and its dimensions, read from config fields the way vLLM 0.33.0's model files read them."""

from __future__ import annotations

from typing import Any

import pytest

from kvlint.errors import ConfigError
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.model.state import state_bytes_per_gpu


def _base(**fields: Any) -> dict[str, Any]:
    return {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 6, "torch_dtype": "bfloat16", **fields}


def test_granite_hybrid_linear_attention_layers_with_mamba_heads_are_mamba2() -> None:
    """transformers 5 writes Granite-4 hybrid's Mamba layers as ``linear_attention``;
    granitemoehybrid.py:634 sizes them with mamba_expand * hidden_size."""
    config = _base(model_type="granitemoehybrid",
                   layer_types=["linear_attention"] * 5 + ["attention"],
                   mamba_n_heads=128, mamba_n_groups=1, mamba_d_state=256, mamba_d_head=64,
                   mamba_d_conv=4, mamba_expand=2)
    g = resolve_geometry(config)
    assert len(g.state_layers) == 5 and g.num_kv_layers == 1
    state = g.state_layers[0].state
    assert state is not None and state.kind == "mamba2"
    assert state.dim("intermediate_size") == 8192
    # conv (3, 8192 + 2*1*256) bf16 + ssm (128, 64, 256) bf16
    assert state_bytes_per_gpu(state, 1) == 3 * 8704 * 2 + 128 * 64 * 256 * 2


def test_lfm2_conv_layers_keep_a_short_conv_state() -> None:
    config = _base(model_type="lfm2", layer_types=["conv", "conv", "full_attention"] * 2,
                   conv_dim=2048, conv_L_cache=3)
    g = resolve_geometry(config)
    assert [la.state.kind if la.state else None for la in g.layers] == \
        ["short_conv", "short_conv", None] * 2
    assert state_bytes_per_gpu(g.layers[0].state, 2) == 2 * 1024 * 2  # type: ignore[arg-type]


def test_falcon_h1_every_layer_runs_mamba_next_to_attention() -> None:
    config = _base(model_type="falcon_h1", mamba_d_ssm=1024, mamba_n_heads=128,
                   mamba_d_head=8, mamba_n_groups=1, mamba_d_state=256, mamba_d_conv=4,
                   mamba_expand=2)
    g = resolve_geometry(config)
    assert g.num_kv_layers == 6 and len(g.state_layers) == 6
    state = g.state_layers[0].state
    assert state is not None and state.dim("intermediate_size") == 1024  # mamba_d_ssm wins


def test_kda_layers_are_one_based_and_hold_no_kv() -> None:
    config = _base(model_type="kimi_linear", linear_attn_config={
        "kda_layers": [1, 2, 3, 5], "full_attn_layers": [4, 6], "num_heads": 32,
        "head_dim": 128, "short_conv_kernel_size": 4})
    g = resolve_geometry(config)
    assert [la.state is not None for la in g.layers] == [True, True, True, False, True, False]
    assert g.num_kv_layers == 2


def test_bad_kda_layers_is_a_config_error() -> None:
    config = _base(model_type="kimi_linear", linear_attn_config={"kda_layers": [0, 99]})
    with pytest.raises(ConfigError, match="kda_layers"):
        resolve_geometry(config)


def test_bad_state_field_is_a_config_error() -> None:
    config = _base(model_type="lfm2", layer_types=["conv"] * 6, conv_dim="wide",
                   conv_L_cache=3)
    with pytest.raises(ConfigError, match="conv_dim"):
        resolve_geometry(config)


def test_missing_state_field_is_a_note_not_a_failure() -> None:
    config = _base(model_type="lfm2", layer_types=["conv"] * 5 + ["full_attention"],
                   conv_dim=2048)
    g = resolve_geometry(config)
    assert g.state_layers == ()
    assert any("conv_L_cache" in note for note in g.notes)


def test_non_recurrent_configs_are_unchanged() -> None:
    config = _base(model_type="llama")
    g = resolve_geometry(config)
    assert g.state_layers == () and g.notes == ()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 1e300, "x" * 10_000, True, 2.5])
def test_hostile_state_fields_are_one_line_config_errors(value: Any) -> None:
    config = _base(model_type="jamba", attn_layer_period=3, attn_layer_offset=1,
                   mamba_d_state=value, mamba_d_conv=4, mamba_expand=2)
    with pytest.raises(ConfigError, match="mamba_d_state") as err:
        resolve_geometry(config)
    assert len(str(err.value)) < 200


def test_zamba2_old_format_config_takes_the_class_defaults_and_derived_heads() -> None:
    """Zyphra/Zamba2-7B's config (transformers 4.43.dev format) omits mamba_d_state,
    mamba_d_conv, mamba_expand and n_mamba_heads; vLLM 0.33 builds the model from
    transformers' Zamba2Config, whose defaults fill them (d_state 64, d_conv 4, expand 2) and
    which derives n_mamba_heads = 2 * 3584 // 64 = 112. Mamba-2 state per layer at tp=1
    (mamba_utils.py): conv (4 - 1) x (7168 + 2 x 2 x 64) x 2 B = 44,544 B; SSM 112 x 64 x 64
    x 2 B = 917,504 B; 962,048 B x 81 layers = 77,925,888 B, vLLM's MambaSpec sum (oracle).
    n_groups = 2: tp 4 is refused (mamba_mixer2.py:320)."""
    import json

    from kvlint.loaders.hf_config import resolve_geometry
    from kvlint.model.kv import state_fits
    from kvlint.model.state import state_bytes_per_gpu
    from tests.helpers import CONFIGS

    config = json.loads((CONFIGS / "Zyphra--Zamba2-7B.json").read_text(encoding="utf-8"))
    geometry = resolve_geometry(config)
    states = [la.state for la in geometry.state_layers]
    assert len(states) == 81 and states[0] is not None
    assert states[0].dim("num_heads") == 112 and states[0].dim("n_groups") == 2
    assert sum(state_bytes_per_gpu(s, 1) or 0 for s in states if s) == 77_925_888
    assert sum(state_bytes_per_gpu(s, 2) or 0 for s in states if s) == 38_962_944
    assert state_fits(geometry, 2) and not state_fits(geometry, 4)
