"""The KV cache dtype a checkpoint declares for ``--kv-cache-dtype auto``.

Quantised checkpoints can ship a KV-cache scheme next to their weight scheme. vLLM 0.33.0
honours it when the user leaves the KV dtype at ``auto``:

* ``utils/torch_utils.py`` ``resolve_kv_cache_dtype_string`` / ``get_kv_cache_quant_algo_string``:
  a ``modelopt`` config's ``kv_cache_scheme`` or ``kv_cache_quant_algo`` (top level or under
  ``quantization``): ``{"dynamic": false, "num_bits": 8, "type": "float"}`` or ``"FP8"`` is
  ``fp8_e4m3``; 4-bit float is ``nvfp4``;
* ``model_executor/layers/attention/attention.py`` (lines 282-292): any other quantisation
  config (llm-compressor's ``compressed-tensors``) with a ``kv_cache_scheme`` makes ``auto``
  fp8.

Pure function over the raw config; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOURCE = ("vLLM 0.33.0 utils/torch_utils.py resolve_kv_cache_dtype_string; "
          "model_executor/layers/attention/attention.py")


def declared_kv_dtype(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kv dtype, where it is declared)`` for a checkpoint that declares its KV cache dtype;
    ``None`` when it declares none (or one kvlint cannot size, such as nvfp4)."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    method = quant.get("quant_method")
    if isinstance(method, str) and method.startswith("modelopt"):
        nested = quant.get("quantization")
        inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else {}
        for where, value in (("quantization.kv_cache_scheme", inner.get("kv_cache_scheme")),
                             ("kv_cache_scheme", quant.get("kv_cache_scheme")),
                             ("quantization.kv_cache_quant_algo",
                              inner.get("kv_cache_quant_algo")),
                             ("kv_cache_quant_algo", quant.get("kv_cache_quant_algo"))):
            if value:
                dtype = _modelopt(value)
                return (dtype, f"quantization_config.{where}") if dtype else None
        return None
    if quant.get("kv_cache_scheme") is not None:
        return "fp8", "quantization_config.kv_cache_scheme"
    return None


def _modelopt(value: Any) -> str | None:
    if isinstance(value, Mapping):
        if (value.get("dynamic") is False and value.get("num_bits") == 8
                and value.get("type") == "float"):
            return "fp8_e4m3"
        return None  # nvfp4 (4-bit float) or unknown: vLLM's own fallbacks, not sized here
    if isinstance(value, str) and value.lower() == "fp8":
        return "fp8_e4m3"
    return None
