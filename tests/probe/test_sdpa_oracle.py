"""Which CUDA SDPA backend PyTorch would pick (pure rules, no torch needed)."""

from __future__ import annotations

from typing import Any

from kvlint.probe.sdpa_oracle import DEFAULT_SM, BackendChoice, choose_backend


def _choose(**overrides: Any) -> BackendChoice:
    """A Llama-3-8B-like decode call: 32 query heads over 8 KV heads, bf16, head dim 128."""
    call: dict[str, Any] = {
        "query_heads": 32, "kv_heads": 8, "head_dim": 128, "v_head_dim": 128,
        "dtype": "bfloat16", "enable_gqa": True, "has_mask": False,
    }
    call.update(overrides)
    return choose_backend(**call)


def test_default_gpu_is_sm90() -> None:
    assert DEFAULT_SM == 90


def test_flash_for_gqa_bf16_head_dim_128_without_mask_on_sm90() -> None:
    choice = _choose(sm=90)
    assert choice.backend == "flash"
    assert choice.materializes is False
    assert "8 KV heads for 32 query heads" in choice.reason
    assert _choose() == choice  # sm90 is the default


def test_flash_at_its_limits_head_dim_256_fp16_sm80() -> None:
    choice = _choose(head_dim=256, v_head_dim=256, dtype="float16", sm=80)
    assert choice.backend == "flash"
    assert choice.materializes is False


def test_gqa_with_a_mask_falls_back_to_math_and_materializes() -> None:
    choice = _choose(has_mask=True)
    assert choice.backend == "math"
    assert choice.materializes is True
    assert "4x" in choice.reason
    assert "mask" in choice.reason
    assert "enable_gqa" in choice.reason


def test_gqa_with_head_dim_512_falls_back_to_math() -> None:
    choice = _choose(head_dim=512, v_head_dim=512)
    assert choice.backend == "math"
    assert choice.materializes is True
    assert "head dim 512 > 256" in choice.reason


def test_gqa_on_sm75_falls_back_to_math() -> None:
    choice = _choose(sm=75)
    assert choice.backend == "math"
    assert choice.materializes is True
    assert "sm75" in choice.reason


def test_gqa_in_fp32_falls_back_to_math() -> None:
    choice = _choose(dtype="float32")
    assert choice.backend == "math"
    assert choice.materializes is True


def test_non_grouped_with_a_mask_uses_memory_efficient() -> None:
    choice = _choose(kv_heads=32, enable_gqa=False, has_mask=True)
    assert choice.backend == "efficient"
    assert choice.materializes is False
    assert "mask" in choice.reason


def test_enable_gqa_with_equal_head_counts_is_not_grouped() -> None:
    choice = _choose(kv_heads=32, enable_gqa=True, has_mask=True)
    assert choice.backend == "efficient"
    assert choice.materializes is False


def test_fp32_non_grouped_uses_memory_efficient() -> None:
    choice = _choose(kv_heads=32, enable_gqa=False, dtype="float32")
    assert choice.backend == "efficient"
    assert choice.materializes is False
    assert "float32 is not fp16/bf16" in choice.reason


def test_flash_excluded_when_k_and_v_head_dims_differ() -> None:
    # DeepSeek MLA prefill: 16 heads, K head dim 192 (128 nope + 64 rope), V head dim 128.
    choice = choose_backend(query_heads=16, kv_heads=16, head_dim=192, v_head_dim=128,
                            dtype="bfloat16", enable_gqa=False, has_mask=False)
    assert choice.backend == "efficient"
    assert choice.materializes is False
    assert "K head dim 192 != V head dim 128" in choice.reason
