"""``--quantization`` values vLLM and SGLang refuse for a checkpoint (pure data, read from
the engines' wheels).

**Another format than the checkpoint's.** Both engines read the checkpoint's format from
config.json (``quantization_config``, else compressed-tensors' ``compression_config``; a
multimodal model's ``text_config`` too), let each quantization class's
``override_quantization_method`` claim it, and raise ``ValueError("Quantization method
specified in the model config (awq) does not match the quantization method specified in the
`quantization` argument (gptq).")`` when the method asked for is another one. Among the five
formats kvlint judges here (``awq``, ``gptq``, ``fp8``, ``bitsandbytes``,
``compressed-tensors``) no override accepts one asked for in place of another on a CUDA GPU:
the AWQ and GPTQ classes take only their own names and their Marlin, BitBLAS and MoE-WNA16
kernels' (``marlin``, ``awq_marlin``, ``gptq_marlin``, ``moe_wna16``...), ModelOpt's only
ModelOpt checkpoints, IPEX's only CPU and XPU. Read in vllm/config.py@v0.4.1
(``_verify_quantization``, no overrides), @v0.5.0 and @v0.7.3, vllm/config/model.py@v0.11.0
and @v0.34.0 (the override list at line 1416; ``auto_awq``/``auto_gptq`` accept ``awq``,
``awq_marlin``, ``auto_awq``, ``marlin`` and the GPTQ twins only), the quantization classes'
``override_quantization_method`` of 0.5.0, 0.7.3, 0.9.2, 0.11.0, 0.20.0, 0.28.0 and 0.34.0;
SGLang's copy in sglang/srt/configs/model_config.py@0.4.6.post1 (line 280) and @0.5.23
(line 2000: its ``compatible_quantization_methods`` pair only ModelOpt, ``w8a8_*`` and
``auto-round-int8`` with checkpoints, and ``REQUANTIZATION_METHODS`` is ``quark_mxfp4``
alone), with the classes of 0.4.6.post1, 0.5.5.post3 and 0.5.23; @0.4.3.post2 has the same
check, and 0.3.6 hands ``quantization`` to vLLM's own config (sglang/srt/model_executor/
model_runner.py@0.3.6), whose check is the one above.

**A pre-quantized format on a checkpoint that names none.** ``get_quant_config``
(vllm/model_executor/model_loader/weight_utils.py@v0.4.1 line 117, @v0.7.3, @v0.11.0, @v0.34.0
line 410; SGLang's copy) then looks for the method's own file beside config.json and raises
``ValueError("Cannot find the config file for awq")`` without one: AWQ reads
``quant_config.json`` or ``quantize_config.json``, GPTQ ``quantize_config.json``
(``get_config_filenames``, the same in every release read). kvlint reads config.json alone,
so this one is a warning: the files may be there. fp8 and bitsandbytes quantize an
unquantized checkpoint while loading, and are not judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["JUDGED_FORMATS", "QuantRefusal", "bfloat16_only_refusal", "checkpoint_quant_method",
           "declared_quantization", "quantization_refusal"]

JUDGED_FORMATS = frozenset({"awq", "gptq", "fp8", "bitsandbytes", "compressed-tensors"})
"""Checkpoint formats, and ``--quantization`` values, between which no engine override
applies (see the module docstring)."""

CONFIG_FILES: dict[str, tuple[str, ...]] = {
    "awq": ("quant_config.json", "quantize_config.json"),
    "gptq": ("quantize_config.json",),
}
"""The files ``get_config_filenames`` names for the pre-quantized formats (AWQ, GPTQ)."""

ENGINES = frozenset({"vllm", "sglang"})


@dataclass(frozen=True)
class QuantRefusal:
    """Why the engine refuses ``--quantization asked`` for the checkpoint: ``mismatch`` (the
    checkpoint is ``checkpoint``, a sure refusal) or ``no-config`` (it names no format, and
    the engine needs one of ``files`` beside config.json)."""

    kind: str
    asked: str
    checkpoint: str | None = None
    files: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        """The engine's own wording of the refusal."""
        if self.kind == "mismatch":
            return (f"Quantization method specified in the model config ({self.checkpoint}) "
                    f"does not match the quantization method specified in the `quantization` "
                    f"argument ({self.asked}).")
        return f"Cannot find the config file for {self.asked}"


def _normalise(method: str) -> str:
    return method.strip().lower().replace("compressed_tensors", "compressed-tensors")


def checkpoint_quant_method(config: Mapping[str, Any] | None) -> str | None:
    """The quantization format config.json declares, read as vLLM's
    ``_normalize_quantization_config`` (vllm/transformers_utils/
    model_arch_config_convertor.py@v0.34.0) reads it: ``quantization_config``, else
    ``compression_config``, of the config or else of its ``text_config``; ``quant_method``
    lower-cased; ``None`` when it names none. ModelOpt's producer-named checkpoints read as
    ``modelopt``, which no judgement here concerns."""
    quant = declared_quantization(config)
    if quant is None:
        return None
    producer = quant.get("producer")
    if isinstance(producer, Mapping) and producer.get("name") == "modelopt":
        return "modelopt"
    method = quant.get("quant_method")
    return _normalise(method) if isinstance(method, str) else ""


def declared_quantization(config: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The quantization settings config.json declares: ``quantization_config``, else
    ``compression_config``, of the config or else of its ``text_config`` (``None``: none)."""
    if not isinstance(config, Mapping):
        return None
    for where in (config, config.get("text_config")):
        if not isinstance(where, Mapping):
            continue
        quant = where.get("quantization_config")
        if quant is None:
            quant = where.get("compression_config")
        if isinstance(quant, Mapping):
            return quant
    return None


def quantization_refusal(engine: str | None, asked: str | None,
                         checkpoint: str | None) -> QuantRefusal | None:
    """The refusal of ``--quantization asked`` by ``engine`` for a checkpoint of the format
    ``checkpoint`` (:func:`checkpoint_quant_method`; ``None``: config.json names none), or
    ``None`` (a pairing an override may accept, or one kvlint does not judge). Every release
    read refuses the same pairs, so the version does not matter."""
    if engine not in ENGINES or not asked:
        return None
    method = _normalise(asked)
    if method not in JUDGED_FORMATS:
        return None
    if checkpoint is None:
        files = CONFIG_FILES.get(method)
        return QuantRefusal("no-config", method, None, files) if files else None
    if checkpoint in JUDGED_FORMATS and checkpoint != method:
        return QuantRefusal("mismatch", method, checkpoint)
    return None


HALF_ONLY_KERNELS = frozenset({"awq", "gptq"})
"""vLLM's quantization methods whose kernels run float16 activations only
(``get_supported_act_dtypes`` returns ``[torch.half]``: quantization/awq.py and gptq.py in the
0.4.3 and 0.11.0 wheels; awq_marlin and gptq_marlin add bfloat16). vLLM checks the model's
dtype against them while it builds the quantization config and exits: "torch.bfloat16 is not
supported for quantization method awq. Supported dtypes: [torch.float16]"
(model_executor/model_loader/loader.py@v0.4.3 line 49; config/__init__.py@v0.11.0
``VllmConfig._get_quantization_config``, line 267)."""


def half_only_refusal(engine: str, quantization: str | None, dtype: str | None) -> str | None:
    """vLLM's refusal message for ``--quantization awq|gptq`` with ``--dtype bfloat16``;
    ``None`` for any other combination (``auto`` takes the checkpoint's dtype, which such
    checkpoints store as float16)."""
    method = (quantization or "").strip().lower()
    if engine != "vllm" or method not in HALF_ONLY_KERNELS or \
            (dtype or "").strip().lower() != "bfloat16":
        return None
    return (f"torch.bfloat16 is not supported for quantization method {method}. Supported "
            "dtypes: [torch.float16]")


BFLOAT16_ONLY_KERNELS = frozenset({"mxfp4"})
"""vLLM's quantization methods whose kernels run bfloat16 activations only: MXFP4 (gpt-oss's
checkpoint format; ``Mxfp4Config.get_supported_act_dtypes`` returns ``[torch.bfloat16]``:
vllm/model_executor/layers/quantization/mxfp4.py@v0.11.0 line 129, wheel read, and the same
in the later revision the code index stores; the class came with gpt-oss in 0.10.1). The
model's quantization is the checkpoint's ``quant_method`` when no ``--quantization`` is given,
and ``VllmConfig._get_quantization_config`` (config/__init__.py@v0.11.0 line 267) refuses a
dtype outside that list. SGLang's Mxfp4Config also takes float16: not judged."""


def bfloat16_only_refusal(engine: str, quantization: str | None, checkpoint: str | None,
                          dtype: str | None) -> tuple[str, str] | None:
    """``(method, vLLM's refusal)`` for ``--dtype float16`` (or ``half``/``float32``) with an
    MXFP4 checkpoint or ``--quantization mxfp4``; ``None`` otherwise (``auto`` takes the
    checkpoint's bfloat16)."""
    method = (quantization or checkpoint or "").strip().lower()
    asked = (dtype or "").strip().lower()
    names = {"float16": "float16", "half": "float16", "fp16": "float16",
             "float32": "float32", "float": "float32"}
    if engine != "vllm" or method not in BFLOAT16_ONLY_KERNELS or asked not in names:
        return None
    return method, (f"torch.{names[asked]} is not supported for quantization method "
                    f"{method}. Supported dtypes: [torch.bfloat16]")
