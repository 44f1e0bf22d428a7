"""What an engine command changes in the model it serves, before the engine builds it.

Two kinds of change, both applied before any rule runs (so a context limit, a geometry or a
weight size is the one the engine itself works with):

* **Config overrides** (:func:`apply_config_overrides`): vLLM ``--hf-overrides`` (and the
  older ``--rope-scaling`` / ``--rope-theta``) and SGLang ``--json-model-override-args``
  change fields of the model's ``config.json`` as the engine loads it. The documented way to
  serve Qwen3 at 128K is to add YaRN ``rope_scaling`` or raise ``max_position_embeddings``
  so; the engine's length check then follows the overridden config.
* **On-the-fly quantization** (:func:`on_the_fly_quantization`): an engine asked to quantize
  an unquantized checkpoint while loading it (vLLM/SGLang ``--quantization fp8``, TGI
  ``--quantize bitsandbytes-nf4``...) holds fewer weight bytes than the checkpoint has.

Both are pure functions of the config and the engine's option values: no I/O here. The engine
facts each one encodes name their source (file@version).
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PREQUANTIZED",
    "OnTheFly",
    "apply_config_overrides",
    "canonical_overrides",
    "on_the_fly_quantization",
]


def canonical_overrides(overrides: Mapping[str, Any]) -> str:
    """The canonical text of ``overrides`` (sorted keys, no spaces): equal overrides give
    equal text, so plans that carry it compare and hash by value."""
    return json.dumps(overrides, sort_keys=True, separators=(",", ":"))


def _merge(target: dict[str, Any], changes: Mapping[str, Any]) -> None:
    """A recursive update: a mapping value updates the mapping it meets field by field."""
    for key, value in changes.items():
        current = target.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            _merge(current, value)
        else:
            target[key] = copy.deepcopy(value)


def _is_sub_config(key: str, current: object) -> bool:
    """Whether ``key`` holds a nested model config (``text_config``, ``vision_config``...),
    which transformers builds as a config object, not a plain dict field."""
    return key.endswith("_config") and isinstance(current, dict) and \
        key not in ("quantization_config", "compression_config")


SGLANG_MERGES_SINCE = (0, 5, 23)
"""SGLang merges an override into a sub-config (one level) and into ``rope_scaling`` /
``rope_parameters`` (shallow) at 0.5.23 (python/sglang/srt/utils/hf_transformers/config.py
@0.5.23); 0.5.5 sets every key whole (utils/hf_transformers_utils.py@0.5.5, get_config).
The first release with the merge between them is not known: kvlint takes 0.5.23."""


def _release(version: str | None) -> tuple[int, ...] | None:
    parts = []
    for part in (version or "").split(".")[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) if parts else None


def apply_config_overrides(config: Mapping[str, Any], overrides: str, engine: str | None,
                           version: str | None = None) -> dict[str, Any]:
    """``config`` as ``engine`` (at ``version``; ``None``: the newest) loads it with
    ``overrides`` (the canonical JSON text of an object, :func:`canonical_overrides`)
    applied; ``config`` itself is not changed.

    - vLLM sets each top-level field whole (``config.update``), except that an object given
      for a sub-config (``text_config``...) is merged into it recursively
      (``_apply_dict_overrides`` / ``_update_nested`` of vllm/config/model.py@0.11.1, still
      @0.34.0). Before 0.11.1 vLLM replaced the sub-config with the plain object and could not
      build the model; kvlint merges there too, so that the geometry stays readable.
    - SGLang sets each top-level field whole (``config.update(model_override_args)`` in
      get_config, hf_transformers_utils.py@0.3.6 to @0.5.5); from :data:`SGLANG_MERGES_SINCE`
      it updates a sub-config one level deep and merges ``rope_scaling`` /
      ``rope_parameters`` shallowly.

    The override reaches the text part of a multimodal config only through its own key
    (``{"text_config": {...}}``): both engines read the language model's limits from the
    text part (vLLM ``hf_text_config``), and a top-level field does not change it.
    """
    changes = json.loads(overrides)
    out = copy.deepcopy(dict(config))
    if not isinstance(changes, dict):
        return out
    release = _release(version)
    sglang_merges = engine == "sglang" and (release is None or release >= SGLANG_MERGES_SINCE)
    for key, value in changes.items():
        current = out.get(key)
        if not isinstance(value, Mapping) or not isinstance(current, dict):
            out[key] = copy.deepcopy(value)
        elif engine != "sglang" and _is_sub_config(key, current):
            _merge(current, value)
        elif sglang_merges and (_is_sub_config(key, current)
                                or key in ("rope_scaling", "rope_parameters")):
            current.update(copy.deepcopy(dict(value)))
        else:
            out[key] = copy.deepcopy(value)
    return out


class OnTheFly:
    """One on-the-fly quantization method: the ``quantization_config`` an engine's loaded
    weights then have, as kvlint's weight format reads it, and its source. ``assumed``: not
    a conversion the engine makes but the usual form of a checkpoint quantized beforehand
    (:data:`PREQUANTIZED`), for a config that names no quantization of its own."""

    __slots__ = ("assumed", "config", "source")

    def __init__(self, config: Mapping[str, Any], source: str, assumed: bool = False) -> None:
        self.config = config
        self.source = source
        self.assumed = assumed


_FP8 = OnTheFly({"quant_method": "fp8"},
                "vLLM: Fp8Config quantizes a 16-bit checkpoint's linear layers to fp8 with one "
                "scale per tensor while loading (is_checkpoint_fp8_serialized false; "
                "vllm/model_executor/layers/quantization/fp8.py@0.11.0 lines 129 and 346)")
_BNB_4BIT = {"quant_method": "bitsandbytes", "load_in_4bit": True}
_BNB_8BIT = {"quant_method": "bitsandbytes", "load_in_8bit": True}

ON_THE_FLY: Mapping[str, Mapping[str, OnTheFly]] = {
    "vllm": {
        "fp8": _FP8,
        # vLLM's in-flight bitsandbytes quantization is 4-bit NF4 (BitsAndBytesConfig's
        # defaults when the checkpoint has no quantization_config: load_in_4bit, nf4;
        # vllm/model_executor/layers/quantization/bitsandbytes.py@0.11.0 lines 31-44)
        "bitsandbytes": OnTheFly(_BNB_4BIT, "vLLM: in-flight bitsandbytes is 4-bit NF4 "
                                 "(vllm/model_executor/layers/quantization/"
                                 "bitsandbytes.py@0.11.0 lines 31-44)"),
    },
    "sglang": {
        "fp8": OnTheFly({"quant_method": "fp8"},
                        "SGLang: Fp8Config quantizes a 16-bit checkpoint to fp8 per tensor "
                        "while loading (python/sglang/srt/layers/quantization/fp8.py, the "
                        "vLLM-derived Fp8Config; not checked release by release)"),
        "bitsandbytes": OnTheFly(_BNB_4BIT, "SGLang: in-flight bitsandbytes is 4-bit, as "
                                 "vLLM's it derives from (not checked release by release)"),
    },
    "tgi": {
        # launcher/src/main.rs@v3.3.7 enum Quantization (the same values from v2.4.1; fp8
        # from v2.0.0, the bitsandbytes-nf4/-fp4 and eetq values from v1.4.5):
        # bitsandbytes is LLM.int8 (8-bit);
        # bitsandbytes-nf4 / -fp4 are 4-bit; eetq is 8-bit weight-only; fp8 is per-tensor fp8
        "bitsandbytes": OnTheFly(_BNB_8BIT, "TGI: --quantize bitsandbytes is 8-bit "
                                 "(launcher/src/main.rs@v3.3.7 Quantization::Bitsandbytes)"),
        "bitsandbytes-nf4": OnTheFly(_BNB_4BIT, "TGI: --quantize bitsandbytes-nf4 is 4-bit "
                                     "(launcher/src/main.rs@v3.3.7)"),
        "bitsandbytes-fp4": OnTheFly(_BNB_4BIT, "TGI: --quantize bitsandbytes-fp4 is 4-bit "
                                     "(launcher/src/main.rs@v3.3.7)"),
        "eetq": OnTheFly({"quant_method": "eetq"}, "TGI: --quantize eetq is 8-bit "
                         "weight-only, applied while loading (launcher/src/main.rs@v3.3.7)"),
        "fp8": OnTheFly({"quant_method": "fp8"}, "TGI: --quantize fp8 quantizes 16-bit "
                        "weights to fp8 while loading (launcher/src/main.rs@v3.3.7)"),
    },
}
"""Engine -> method (as the engine spells it) -> what it makes of an unquantized checkpoint.
Methods that need a checkpoint quantized beforehand (awq, gptq, marlin, exl2, compressed
tensors...) change nothing here: the checkpoint's own ``quantization_config`` describes its
bytes. LMDeploy's ``--model-format`` names the checkpoint's format, not a conversion."""


_AWQ = OnTheFly({"quant_method": "awq", "bits": 4, "group_size": 128},
               "the usual AWQ checkpoint, 4-bit in groups of 128 (AutoAWQ's default "
               "quant_config)", assumed=True)
_GPTQ = OnTheFly({"quant_method": "gptq", "bits": 4, "group_size": 128},
                 "the usual GPTQ checkpoint, 4-bit in groups of 128", assumed=True)

PREQUANTIZED: Mapping[str, OnTheFly] = {
    "awq": _AWQ, "awq_marlin": _AWQ,
    "gptq": _GPTQ, "gptq_marlin": _GPTQ, "marlin": _GPTQ,
    "mxfp4": OnTheFly({"quant_method": "mxfp4"}, "an MXFP4 checkpoint, routed experts in "
                      "4.25 bits as gpt-oss ships them", assumed=True),
    # an engine that does not convert while loading (TensorRT-LLM, whose checkpoint or engine
    # is quantized beforehand: examples/quantization/quantize.py --qformat fp8, ModelOpt's
    # FP8 recipe, which leaves *lm_head* unquantized): the same bytes as vLLM's Fp8Config
    # NVIDIA ModelOpt checkpoints keep different modules in 16-bit recipe by recipe
    # (exclude_modules); the what-if keeps attention and the LM head in 16-bit and counts
    # the MLPs and experts in the format: the most a ModelOpt recipe keeps, so an upper
    # bound of the weights (a recipe that also quantizes attention holds fewer bytes)
    "modelopt_fp4": OnTheFly(
        {"quant_method": "modelopt", "quant_algo": "NVFP4",
         "exclude_modules": ["lm_head", "*self_attn*", "*linear_attn*", "*mixer*"]},
        "the usual NVFP4 (ModelOpt) checkpoint: MLPs and experts in 4.5 bits, attention and "
        "LM head kept 16-bit (the most a ModelOpt recipe keeps: an upper bound)",
        assumed=True),
    "modelopt": OnTheFly(
        {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]},
        "the usual FP8 (ModelOpt) checkpoint: linear layers in fp8, LM head 16-bit",
        assumed=True),
    "fp8": OnTheFly({"quant_method": "fp8"}, "the usual FP8 checkpoint or engine, linear "
                    "layers in fp8 with per-tensor scales, embeddings and lm_head in 16-bit "
                    "(ModelOpt's FP8 recipe, TensorRT-LLM's quantize.py --qformat fp8)",
                    assumed=True),
}
"""Methods (as vLLM and SGLang spell ``--quantization``) that need a checkpoint quantized
beforehand -> that checkpoint's usual form. Used only when the config given names no
quantization: a what-if ("the AWQ build of this model"), sized with a note, never a fact
about the engine; the checkpoint actually deployed carries its own ``quantization_config``,
which always wins. Formats with no usual form are absent: compressed-tensors, exl2, gguf.
NVIDIA ModelOpt's (``modelopt``, ``modelopt_fp4``) keep different modules in 16-bit recipe by recipe
(``exclude_modules``): their what-if keeps the most any recipe keeps (attention, LM head),
never fewer, since a what-if that undercounts weights would pass a deployment that does not
fit."""


def on_the_fly_quantization(engine: str | None, method: str | None,
                            config: Mapping[str, Any]) -> OnTheFly | None:
    """What ``engine`` quantizes ``config``'s weights to when asked for ``method``, or
    ``None``: the checkpoint is already quantized (its own format counts), or the method
    converts nothing while loading. A method that needs a checkpoint quantized beforehand,
    on a config that names none, gives that checkpoint's usual form (``assumed``)."""
    if engine is None or not method:
        return None
    text = config.get("text_config")
    if config.get("quantization_config") or config.get("quantization") or (
            isinstance(text, Mapping) and text.get("quantization_config")):
        return None
    key = method.strip().lower()
    if key.startswith("gguf:"):  # a GGUF file of that type (kvlint.model.gguf)
        from kvlint.model.gguf import gguf_bits

        kind = key[5:].upper()
        if gguf_bits(kind) is None:
            return None
        return OnTheFly({"quant_method": "gguf", "gguf_type": kind},
                        f"a GGUF file of type {kind} (llama.cpp's bits per weight for it)")
    return ON_THE_FLY.get(engine, {}).get(key) or PREQUANTIZED.get(key.replace("-", "_"))
