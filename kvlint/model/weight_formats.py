"""Weight formats: the bytes per parameter an engine holds each :class:`~kvlint.model.weights.
Part` in, read from a config's dtype and quantization settings, and the weight bytes of a
:class:`~kvlint.model.weights.ParameterEstimate` in such a format (in total, and read by one
decode step). Split from :mod:`kvlint.model.weights`, whose parameter counts they price."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from kvlint.model.weights import LINEAR_PARTS, ParameterEstimate, Part

SIXTEEN_BIT: Final = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16",
                      "fp16": "float16", "half": "float16"}
FLOAT32: Final = frozenset({"float32", "fp32", "float"})
MXFP4_BYTES: Final = 0.5 + 1 / 32
"""OCP MX FP4: 4-bit values plus one 8-bit (E8M0) scale per block of 32 = 4.25 bits."""
NVFP4_BYTES: Final = 0.5 + 1 / 16
"""NVFP4: 4-bit values plus one FP8 scale per block of 16 = 4.5 bits."""


@dataclass(frozen=True)
class WeightFormat:
    """Bytes per parameter of each :class:`Part` as the engine holds the weights."""

    name: str
    base_bytes: float = 2.0
    """Bytes per parameter of tensors left unquantized."""
    quantized_bytes: float = 2.0
    """Bytes per parameter of quantized tensors, scales included."""
    quantized_parts: frozenset[Part] = frozenset()
    exact: bool = True
    """False when the bytes per parameter is an approximation (quantization scales...)."""
    notes: tuple[str, ...] = field(default=())
    kept: tuple[tuple[Part, float], ...] = ()
    """The share of a quantized part the checkpoint keeps in 16-bit (its quantization
    config's excluded modules: :mod:`kvlint.model.weight_exclusions`)."""
    part_bytes: tuple[tuple[Part, float], ...] = ()
    """Quantized parts stored in another format than :attr:`quantized_bytes` (DeepSeek-V4's
    MXFP4 experts beside FP8 projections: :func:`with_fp4_experts`)."""

    def bytes_per_param(self, part: Part) -> float:
        if part not in self.quantized_parts:
            return self.base_bytes
        kept = next((share for p, share in self.kept if p == part), 0.0)
        quantized = next((b for p, b in self.part_bytes if p == part), self.quantized_bytes)
        return kept * self.base_bytes + (1 - kept) * quantized


@dataclass(frozen=True)
class WeightBytes:
    """Weight bytes of a model in a :class:`WeightFormat` (an estimate: see WeightFormat.exact
    for whether the bytes per parameter are approximate)."""

    total: int
    replicated: int
    """Bytes of the parameters every TP rank holds whole (see ParameterEstimate.replicated)."""
    by_part: Mapping[Part, int]


def _sixteen_bit(dtype: str | None) -> tuple[str, list[str]]:
    if dtype is None:
        return "16-bit", ["no torch_dtype in the config: weights assumed served in 16-bit"]
    name = dtype.lower().removeprefix("torch.")
    if name in SIXTEEN_BIT:
        return SIXTEEN_BIT[name], []
    if name in FLOAT32:
        return "16-bit", [f"config dtype {dtype}: engines serve float32 checkpoints in 16-bit"
                          " (vLLM --dtype auto), so 2 bytes per parameter"]
    return "16-bit", [f"unrecognised dtype {dtype!r}: weights assumed served in 16-bit"]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


MAX_BITS: Final = 32
"""Bits per quantized weight. Real: 2 to 8 (GPTQ, AWQ, mlx, compressed-tensors)."""


class FormatError(ValueError):
    """A quantization setting no checkpoint can have; ``field`` names it."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _bits(value: Any, field: str) -> float | None:
    """A bit width of ``value`` (``None`` when absent or not a number): in (0, MAX_BITS]."""
    bits = _number(value)
    if bits is not None and not 0 < bits <= MAX_BITS:
        raise FormatError(f"field '{field}' must be a bit width in 1..{MAX_BITS}, got {bits:g}",
                          field)
    return bits


def _size(value: Any, field: str) -> float | None:
    """A group or block size of ``value``: -1/0 (per channel) or a finite size of at least 1."""
    size = _number(value)
    if size is not None and (not math.isfinite(size) or 0 < size < 1):
        raise FormatError(f"field '{field}' must be -1 or a size of at least 1, got {size:g}",
                          field)
    return size


def _group_overhead(group_size: float | None, per_group_bytes: float) -> float:
    """Scale bytes per parameter for a group size (``-1``/absent: per channel, ~0)."""
    if group_size is None or group_size <= 0:
        return 0.0
    return per_group_bytes / group_size


def weight_format(
    dtype: str | None,
    quantization_config: Mapping[str, Any] | None = None,
    *,
    mlx_quantization: Mapping[str, Any] | None = None,
) -> WeightFormat:
    """The bytes per parameter a config's weights take in an engine.

    * no quantization: bf16/fp16 = 2; float32 or no dtype = 2 (served in 16-bit, as for KV);
    * ``quant_method: fp8`` / ``fbgemm_fp8`` / modelopt FP8: projections 1 byte + one float32
      scale per ``weight_block_size`` block; embeddings, LM head, norms, routers 16-bit;
    * ``mxfp4`` (gpt-oss): routed experts 4.25 bits (0.53125 B); everything else 16-bit
      (gpt-oss's ``modules_to_not_convert``);
    * 4/8-bit integer (``awq``, ``gptq``, ``bitsandbytes``, ``compressed-tensors``, and
      mlx ``quantization``): ``bits/8`` + group scales (AWQ/GPTQ: fp16 scale + packed zero per
      group; mlx: fp16 scale + fp16 bias per group, and mlx also quantizes embeddings and LM
      head; bitsandbytes NF4: one fp32 absmax per 64, double-quant ~8.5 bits per 64);
      embeddings and LM head stay 16-bit otherwise.

    Anything quantized is labelled ``exact=False``; an unknown method is treated as 16-bit
    (an upper bound) with a note. A bit width outside (0, 32] or a group size between 0 and 1
    (or not finite) raises :class:`FormatError` naming the field.
    """
    base_name, notes = _sixteen_bit(dtype)
    mlx_key = "quantization"
    if (mlx_quantization is None and quantization_config
            and not quantization_config.get("quant_method") and "bits" in quantization_config):
        mlx_quantization = quantization_config  # newer mlx-lm writes it here, unnamed
        mlx_key = "quantization_config"
    if mlx_quantization is not None:
        bits = _bits(mlx_quantization.get("bits"), f"{mlx_key}.bits") or 4.0
        group = _size(mlx_quantization.get("group_size"), f"{mlx_key}.group_size") or 64.0
        per = bits / 8 + _group_overhead(group, 4.0)
        return WeightFormat(
            f"mlx {bits:g}-bit (group {group:g})", 2.0, per,
            LINEAR_PARTS | {Part.EMBEDDINGS, Part.LM_HEAD}, False,
            (*notes, f"mlx {bits:g}-bit: ~{per:.4g} bytes per parameter with fp16 scale and "
             "bias per group (approximate)"),
        )
    if not quantization_config:
        return WeightFormat(base_name, notes=tuple(notes))
    raw_method = str(quantization_config.get("quant_method") or "")
    method = raw_method.lower().replace("-", "_")
    if method in ("fp8", "fbgemm_fp8") or (
        method == "modelopt" and str(quantization_config.get("quant_algo", "")).upper() == "FP8"
    ):
        block = quantization_config.get("weight_block_size")
        per = 1.0
        if isinstance(block, list) and len(block) == 2 and all(
                _size(b, "quantization_config.weight_block_size") for b in block) and \
                min(float(b) for b in block) >= 1:
            per += 4.0 / (float(block[0]) * float(block[1]))
        return WeightFormat(
            # the method in brackets only when it says more than "fp8" (fbgemm_fp8, modelopt)
            "fp8" if method == "fp8" else f"fp8 ({method})", 2.0, per, LINEAR_PARTS, False,
            (*notes, "fp8 weights: projections ~1 byte per parameter (+ block scales); "
             "embeddings, LM head, norms and routers 16-bit (approximate)"),
        )
    if method == "mxfp4":
        return WeightFormat(
            "mxfp4 experts", 2.0, MXFP4_BYTES, frozenset({Part.EXPERTS}), False,
            (*notes, "mxfp4: routed experts 4.25 bits per parameter, the rest 16-bit "
             "(approximate)"),
        )
    if method == "modelopt" and "FP4" in str(quantization_config.get("quant_algo", "")).upper():
        return WeightFormat(
            "nvfp4", 2.0, NVFP4_BYTES, LINEAR_PARTS, False,
            (*notes, "NVFP4: projections 4.5 bits per parameter (approximate)"),
        )
    kind = str(quantization_config.get("gguf_type") or "").upper()
    from kvlint.model.gguf import gguf_bits  # weights.py imports no kvlint module at load

    if method == "gguf" and (gguf_per := gguf_bits(kind)) is not None:
        return WeightFormat(f"gguf {kind}", 2.0, gguf_per / 8, LINEAR_PARTS | {
            Part.EMBEDDINGS, Part.LM_HEAD}, False, (*notes, f"GGUF {kind}: {gguf_per:.3g} "
            "bits per weight, embeddings and output included (llama.cpp's; approximate)"))
    int_format = _integer_format(method, quantization_config)
    if int_format is not None:
        name, per = int_format
        return WeightFormat(
            name, 2.0, per, LINEAR_PARTS, False,
            (*notes, f"{name}: projections ~{per:.4g} bytes per parameter with group "
             "scales; embeddings and LM head 16-bit (approximate)"),
        )
    return WeightFormat(
        base_name, notes=(*notes, f"quantization method {raw_method or '(unnamed)'!r} not "
                          "modelled: weights counted at 16-bit (an upper bound)"),
        exact=False,
    )


def with_fp4_experts(fmt: WeightFormat, expert_dtype: object) -> WeightFormat:
    """``fmt`` with its routed experts in MXFP4 where the config says ``expert_dtype: fp4``
    beside FP8 block projections: DeepSeek-V4's checkpoints (``DeepseekV4FP8Config``,
    vllm/models/deepseek_v41/quant_config.py@v0.34.0: "``expert_dtype="fp4"`` (e.g.
    DeepSeek-V4-Flash): MXFP4 experts with ue8m0 scales"; ``"fp8"`` (Flash-Base): FP8 block
    experts). Any other format or value is returned as it is."""
    if expert_dtype != "fp4" or not fmt.name.startswith("fp8") or \
            Part.EXPERTS not in fmt.quantized_parts:
        return fmt
    return replace(fmt, name=f"{fmt.name}, mxfp4 experts",
                   part_bytes=((Part.EXPERTS, MXFP4_BYTES),),
                   notes=(*fmt.notes, "expert_dtype fp4: routed experts MXFP4, 4.25 bits per "
                          "parameter with one ue8m0 scale per 32 (approximate)"))


def _integer_format(method: str, q: Mapping[str, Any]) -> tuple[str, float] | None:
    """(name, bytes per parameter) of integer weight-only quantization methods."""
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "marlin"):
        bits = _bits(q.get("bits"), "quantization_config.bits") or \
            _bits(q.get("w_bit"), "quantization_config.w_bit") or 4.0
        group = _size(q.get("group_size"), "quantization_config.group_size")
        if group is None:
            group = _size(q.get("q_group_size"), "quantization_config.q_group_size")
        return f"{method} {bits:g}-bit", bits / 8 + _group_overhead(group, 2.0 + bits / 8)
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            double = bool(q.get("bnb_4bit_use_double_quant"))
            # absmax per 64 values: fp32, or 8-bit with a second-level fp32 per 256 blocks
            per = 0.5 + (1.0 / 64 + 4.0 / (64 * 256) if double else 4.0 / 64)
            return "bitsandbytes 4-bit", per
        if q.get("load_in_8bit"):
            return "bitsandbytes 8-bit", 1.0
        return None
    if method == "compressed_tensors":
        groups = q.get("config_groups")
        if not isinstance(groups, Mapping) or not groups:
            return None
        first = next(iter(groups.values()))
        weights = first.get("weights") if isinstance(first, Mapping) else None
        if not isinstance(weights, Mapping):
            return None
        where = "quantization_config.config_groups.*.weights"
        num_bits = _bits(weights.get("num_bits"), f"{where}.num_bits")
        if num_bits is None:
            return None
        group = _size(weights.get("group_size"), f"{where}.group_size") \
            if weights.get("strategy") == "group" else None
        zero = 0.0 if weights.get("symmetric", True) else num_bits / 8
        return (f"compressed-tensors {num_bits:g}-bit",
                num_bits / 8 + _group_overhead(group, 2.0 + zero))
    if method == "eetq":
        return "eetq 8-bit", 1.0
    return None


def weight_bytes(estimate: ParameterEstimate, fmt: WeightFormat) -> WeightBytes:
    """The bytes ``estimate``'s weights take in ``fmt`` (ceil per part)."""
    by_part = {part: math.ceil(n * fmt.bytes_per_param(part))
               for part, n in estimate.parts().items()}
    replicated = math.ceil(
        estimate.norms * fmt.bytes_per_param(Part.NORMS)
        + estimate.router * fmt.bytes_per_param(Part.ROUTER)
        + estimate.replicated_attention * fmt.bytes_per_param(Part.ATTENTION)
    )
    return WeightBytes(sum(by_part.values()), replicated, by_part)


def decode_read_bytes(estimate: ParameterEstimate, fmt: WeightFormat, batch: int) -> int:
    """Weight bytes one decode step reads for ``batch`` sequences (uniform MoE routing)."""
    parts = estimate.decode_read_parts(batch)
    return math.ceil(sum(n * fmt.bytes_per_param(part) for part, n in parts.items()))


