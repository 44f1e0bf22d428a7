"""Weights as an engine loads them, where that differs from the checkpoint's bytes: vLLM's
MXFP4 MoE experts (gpt-oss) on its Marlin backend, padded per tensor-parallel rank. Pure
arithmetic; the sources are cited on each function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MXFP4_BLOCK: Final = 32
"""Values per E8M0 scale in an OCP MX FP4 block."""
MARLIN_MXFP4_INTERMEDIATE_ALIGN: Final = 128
"""vLLM pads a rank's expert width to a multiple of this for its Marlin MXFP4 MoE kernel."""
MARLIN_MXFP4_HIDDEN_ALIGN: Final = 256
"""... and the hidden size to a multiple of this (``n % 256 == 0 and k % 128 == 0``)."""


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class Mxfp4ExpertBytes:
    """The bytes of one routed expert of an MXFP4 gpt-oss MoE layer on one GPU, tensor by
    tensor, for the (possibly padded) ``hidden_size`` and per-rank ``intermediate_size`` the
    tensors are allocated with: packed FP4 weights (2 values a byte), one E8M0 byte per block
    of 32 values, and bf16 biases."""

    hidden_size: int
    intermediate_size: int
    """Per TP rank."""

    @property
    def w13_weight(self) -> int:
        return 2 * self.intermediate_size * self.hidden_size // 2

    @property
    def w13_scale(self) -> int:
        return 2 * self.intermediate_size * (self.hidden_size // MXFP4_BLOCK)

    @property
    def w13_bias(self) -> int:
        return 2 * self.intermediate_size * 2

    @property
    def w2_weight(self) -> int:
        return self.hidden_size * self.intermediate_size // 2

    @property
    def w2_scale(self) -> int:
        return self.hidden_size * (self.intermediate_size // MXFP4_BLOCK)

    @property
    def w2_bias(self) -> int:
        return self.hidden_size * 2

    @property
    def total(self) -> int:
        return (self.w13_weight + self.w13_scale + self.w13_bias
                + self.w2_weight + self.w2_scale + self.w2_bias)


def mxfp4_moe_checkpoint_bytes(hidden_size: int, intermediate_size: int, num_experts: int,
                               num_layers: int) -> int:
    """The routed experts' bytes in a gpt-oss MXFP4 checkpoint: per expert and layer
    ``gate_up_proj_blocks`` ``[2I, H/32, 16]`` and ``down_proj_blocks`` ``[H, I/32, 16]``
    (uint8, two FP4 values a byte), their ``_scales`` (one uint8 per 32 values) and bf16
    ``gate_up_proj_bias`` ``[2I]`` / ``down_proj_bias`` ``[H]`` (the shapes vLLM's
    gpt_oss.py ``_load_weights_mxfp4`` views them as: vLLM 0.10.1 wheel,
    vllm/model_executor/models/gpt_oss.py lines 313-440)."""
    if min(hidden_size, intermediate_size, num_experts, num_layers) < 1:
        raise ValueError("hidden_size, intermediate_size, num_experts and num_layers "
                         "must be positive")
    return Mxfp4ExpertBytes(hidden_size, intermediate_size).total * num_experts * num_layers


def vllm_marlin_mxfp4_layout(hidden_size: int, intermediate_size: int,
                             tp: int = 1) -> Mxfp4ExpertBytes:
    """One expert's tensors as vLLM allocates them on one TP rank for its Marlin MXFP4 MoE
    backend: ``intermediate_size // tp`` rounded up to a multiple of 128 and ``hidden_size``
    to a multiple of 256.

    Read in the vLLM wheels 0.10.1, 0.10.2, 0.11.0, 0.20.0 and 0.34.0 (same rule in all):

    * per rank width ``intermediate_size // tp`` (TP must divide it): fused_moe/layer.py
      @0.10.1 lines 803-804; @0.20.0 lines 437-438; fused_moe/config.py @0.34.0 lines
      1397-1398 (gpt_oss.py @0.10.1 line 151 asserts the division);
    * Marlin padding ``round_up(I_tp, 128)``, ``round_up(H, 256)``:
      quantization/mxfp4.py @0.10.1 lines 156-167 and @0.11.0 lines 189-200;
      fused_moe/oracle/mxfp4.py ``mxfp4_round_up_hidden_size_and_intermediate_size``
      @0.20.0 lines 513-518 and @0.34.0 lines 850-855;
    * tensors (``create_weights``): w13_weight ``[E, 2·I_p, H_p/2]`` uint8, w13_weight_scale
      ``[E, 2·I_p, H_p/32]`` uint8, w13_bias ``[E, 2·I_p]`` bf16, w2_weight
      ``[E, H_p, I_p/2]`` uint8, w2_weight_scale ``[E, H_p, I_p/32]`` uint8, w2_bias
      ``[E, H_p]`` bf16 (whole on every rank): quantization/mxfp4.py @0.10.1 lines
      190-260, @0.34.0 lines 201-298;
    * the Marlin repack keeps every size: weights ``gptq_marlin_repack`` to
      ``[K/16, N·16/8]`` int32 = K·N/2 bytes (_custom_ops.py @0.34.0 lines 1083-1096),
      scales back to one-byte ``float8_e8m0fnu`` (utils/marlin_utils_fp4.py @0.10.1 lines
      59-69, @0.34.0 lines 125-130), biases stay bf16 (``to(params_dtype)``, @0.10.1
      lines 283-297, @0.34.0 lines 570-580); in 0.34.0 ``replace_parameter`` copies an equal-size
      repack into the loaded storage (model_executor/utils.py lines 126-153, 228-243).

    Not counted: Marlin's workspace, ``num_SMs x 4`` int32 per MoE layer (0.10.1
    marlin_utils_fp4.py line 212, marlin_utils.py lines 201-209: 1.7 to 2.1 KiB a layer on
    an A100/H100), which depends on the GPU, not the config."""
    if tp < 1:
        raise ValueError(f"tp must be >= 1, got {tp}")
    if intermediate_size % tp:
        raise ValueError(f"intermediate_size {intermediate_size} is not divisible by tp {tp}")
    return Mxfp4ExpertBytes(_round_up(hidden_size, MARLIN_MXFP4_HIDDEN_ALIGN),
                            _round_up(intermediate_size // tp, MARLIN_MXFP4_INTERMEDIATE_ALIGN))


def vllm_mxfp4_moe_bytes_per_gpu(hidden_size: int, intermediate_size: int, num_experts: int,
                                 num_layers: int, tp: int = 1) -> int:
    """Bytes the routed experts of an MXFP4 MoE (gpt-oss) take on each of ``tp`` GPUs once
    vLLM has loaded them into its Marlin layout (see :func:`vllm_marlin_mxfp4_layout`): the
    padding depends on ``tp``, since each rank rounds up its own ``intermediate_size // tp``."""
    if min(hidden_size, intermediate_size, num_experts, num_layers) < 1:
        raise ValueError("hidden_size, intermediate_size, num_experts and num_layers "
                         "must be positive")
    layout = vllm_marlin_mxfp4_layout(hidden_size, intermediate_size, tp)
    return layout.total * num_experts * num_layers
