"""The KV cache dtype a quantised checkpoint declares, as vLLM 0.33.0 resolves ``auto``
(utils/torch_utils.py ``get_kv_cache_quant_algo_string``; layers/attention/attention.py
lines 282-292: a compressed-tensors ``kv_cache_scheme`` makes ``auto`` fp8)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvlint.loaders.checkpoint_kv import declared_kv_dtype
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.model.kv import resolve_kv_dtype
from tests.helpers import CONFIGS

FP8_SCHEME = {"dynamic": False, "num_bits": 8, "type": "float"}


@pytest.mark.parametrize(("quant", "expected"), [
    ({"quant_method": "modelopt", "kv_cache_scheme": FP8_SCHEME},
     ("fp8_e4m3", "quantization_config.kv_cache_scheme")),
    ({"quant_method": "modelopt", "quantization": {"kv_cache_quant_algo": "FP8"}},
     ("fp8_e4m3", "quantization_config.quantization.kv_cache_quant_algo")),
    ({"quant_method": "modelopt", "kv_cache_quant_algo": "fp8"},
     ("fp8_e4m3", "quantization_config.kv_cache_quant_algo")),
    ({"quant_method": "modelopt", "kv_cache_scheme": {"num_bits": 4, "type": "float"}}, None),
    ({"quant_method": "modelopt", "kv_cache_quant_algo": "int8"}, None),
    ({"quant_method": "modelopt"}, None),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8}},
     ("fp8", "quantization_config.kv_cache_scheme")),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": None}, None),
    ({"quant_method": "fp8"}, None),
    ("not a mapping", None),
])
def test_declared_kv_dtype(quant: Any, expected: tuple[str, str] | None) -> None:
    assert declared_kv_dtype({"quantization_config": quant}) == expected


@pytest.mark.parametrize(("name", "dtype", "bytes_per_element"), [
    ("nvidia--Gemma-4-31B-IT-NVFP4.json", "fp8_e4m3", 1),  # modelopt kv_cache_scheme
    ("poolside--Laguna-XS.2-FP8.json", "fp8", 1),  # compressed-tensors kv_cache_scheme
    ("moonshotai--Kimi-K2.5.json", "bfloat16", 2),  # compressed-tensors, no KV scheme
])
def test_auto_follows_the_checkpoint(name: str, dtype: str, bytes_per_element: int) -> None:
    geometry = resolve_geometry(json.loads((CONFIGS / name).read_text(encoding="utf-8")))
    kv = resolve_kv_dtype("auto", geometry)
    assert (kv.name, kv.bytes_per_element) == (dtype, bytes_per_element)
    assert resolve_kv_dtype("bfloat16", geometry).bytes_per_element == 2  # explicit wins
