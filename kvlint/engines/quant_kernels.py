"""``--quantization awq``/``gptq`` that makes vLLM run the slow kernel of a checkpoint its
Marlin kernel could run (pure data, read from vLLM's wheels; KV708).

vLLM reads a checkpoint's format from config.json and lets each quantization class's
``override_quantization_method`` claim it. The Marlin classes claim an AWQ or GPTQ
checkpoint their kernel can run when ``--quantization`` is not given (or names Marlin), and
log "The model is convertible to awq_marlin during runtime. Using awq_marlin kernel." When
the command names the plain format instead, they keep it and log "Detected that the model
can run with awq_marlin, however you specified quantization=awq explicitly, so forcing awq.
Use quantization=awq_marlin for faster inference" (the plain AWQ kernel is also one vLLM
calls "not fully optimized yet").

What the Marlin classes can run (``is_awq_marlin_compatible`` /
``is_gptq_marlin_compatible``, ``is_marlin_compatible`` before 0.5.3, with
``utils/marlin_utils.py``): on CUDA GPUs of compute capability 8.0 or more (``get_min_capability``
80); group sizes -1, 32, 64 and 128; AWQ of 4 bits with zero points; GPTQ of 4 or 8 bits,
symmetric, with ``desc_act`` given. Read in vllm/model_executor/layers/quantization/
gptq_marlin.py@0.4.3 (the first wheel with the override; 0.4.2's ``gptq_marlin`` has none),
@0.5.0-0.5.4, and awq_marlin.py@0.5.3 (the first wheel that has the file; 0.5.2 has none),
@0.5.4 and at vllm-project/vllm@0322f292 (a recent main: the same override and checks).
Only these two spellings are judged: ``awq_marlin``, ``gptq_marlin`` and ``marlin`` are the
fast kernels themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

__all__ = ["ForcedKernel", "forced_kernel"]

MARLIN_GROUP_SIZES = (-1, 32, 64, 128)
"""``MARLIN_SUPPORTED_GROUP_SIZES`` (marlin_utils.py, every release read)."""
MIN_CAPABILITY = 80
"""``get_min_capability`` of both Marlin classes: compute capability 8.0 (Ampere)."""


@dataclass(frozen=True)
class ForcedKernel:
    """``asked`` keeps the slower kernel of a checkpoint ``faster`` can run."""

    asked: str
    faster: str
    since: str
    """The first vLLM release read with this override."""

    @property
    def message(self) -> str:
        """vLLM's own log line."""
        return (f"Detected that the model can run with {self.faster}, however you specified "
                f"quantization={self.asked} explicitly, so forcing {self.asked}. Use "
                f"quantization={self.faster} for faster inference")


KERNELS = {"awq": ForcedKernel("awq", "awq_marlin", "0.5.3"),
           "gptq": ForcedKernel("gptq", "gptq_marlin", "0.4.3")}


def _marlin_can_run(method: str, config: Mapping[str, Any]) -> bool:
    bits, group = config.get("bits"), config.get("group_size")
    if isinstance(bits, bool) or isinstance(group, bool) or group not in MARLIN_GROUP_SIZES:
        return False
    if method == "awq":
        return bits == 4 and config.get("zero_point") is True
    return bits in (4, 8) and config.get("sym") is True and config.get("desc_act") is not None


def forced_kernel(engine: str | None, version: str | None, asked: str | None,
                  config: Mapping[str, Any] | None) -> ForcedKernel | None:
    """The kernel vLLM ``version`` (``None``: the newest) is made to keep by
    ``--quantization asked`` for a checkpoint whose ``quantization_config`` is ``config``,
    when its Marlin kernel could run it on an Ampere or newer GPU; else ``None``.
    ``config``: :func:`kvlint.engines.quant_refusals.declared_quantization`."""
    if engine != "vllm" or not asked or not isinstance(config, Mapping):
        return None
    method = asked.strip().lower()
    kernel = KERNELS.get(method)
    found = config.get("quant_method")
    if kernel is None or not isinstance(found, str) or found.lower() != method or \
            not _marlin_can_run(method, config):
        return None
    if version is not None:
        try:
            if Version(version) < Version(kernel.since):
                return None
        except InvalidVersion:
            pass  # a tag kvlint cannot date: judged as the releases that have it
    return kernel
