"""Model types vLLM refuses to run in float16 (pure data, read from vLLM's wheels).

``_check_valid_dtype`` raises ``ValueError("The model type 'gemma3' does not support float16.
Reason: Numerical instability. Please use bfloat16 or float32 instead.")`` when ``--dtype``
names float16 (``half``, ``float16``) for a model whose config's top-level ``model_type`` is
in ``_FLOAT16_NOT_SUPPORTED_MODELS``; ``auto`` picks bfloat16 for them instead
(``_get_and_verify_dtype``, called with ``hf_config``). Read in the wheels
(``pip download --no-deps vllm==X``): absent in vllm/config.py@v0.9.0; gemma2, gemma3,
plamo2 and glm4 in vllm/config.py@v0.9.1 (line 3121), @v0.9.2 and
vllm/config/__init__.py@v0.10.1.1 (line 2669); gemma3_text added by
vllm/config/model.py@v0.11.0 (line 1584; 0.10.2 not read, so not judged there); plamo2 still
in @v0.14.0 and @v0.20.0 and gone in vllm/config/model.py@v0.28.0 and @v0.34.0 (line 2442;
the releases between 0.20 and 0.28 not read: judged there only as "some releases").
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

__all__ = ["BFLOAT16_NAMES", "FLOAT16_NAMES", "Float16Refusal", "bfloat16_refusal",
           "float16_refusal"]

FLOAT16_NAMES = frozenset({"half", "float16"})
"""``--dtype`` spellings vLLM maps to ``torch.float16`` (``_STR_DTYPE_TO_TORCH_DTYPE``)."""


@dataclass(frozen=True)
class _Span:
    model_type: str
    first: str
    last: str | None
    """The last release read that refuses it (``None``: every release read from ``first``)."""
    after_last: str | None = None
    """The first release read that no longer does."""


_REFUSED = (
    _Span("gemma2", "0.9.1", None),
    _Span("gemma3", "0.9.1", None),
    _Span("glm4", "0.9.1", None),
    _Span("gemma3_text", "0.11.0", None),
    _Span("plamo2", "0.9.1", "0.20.0", "0.28.0"),
)

REASON = "Numerical instability. Please use bfloat16 or float32 instead."


@dataclass(frozen=True)
class Float16Refusal:
    """Whether vLLM refuses float16 for a model type: ``certain`` at the version judged, or
    only at some releases (``since``/``until`` name them)."""

    model_type: str
    certain: bool
    since: str
    until: str | None


def float16_refusal(model_type: str | None, version: str | None) -> Float16Refusal | None:
    """vLLM's refusal of float16 for ``model_type`` at ``version`` (a release; ``None``: some
    release refuses it), or ``None``. An unknown version is the linter's to judge: it runs
    the rule at every release it knows (``kvlint.linter.lint_config``)."""
    span = next((s for s in _REFUSED if s.model_type == model_type), None)
    if span is None:
        return None
    if version is None:
        return Float16Refusal(span.model_type, False, span.first, span.last)
    try:
        v = Version(version)
    except ValueError:
        return None
    if v < Version(span.first):
        return None
    if span.last is not None and v > Version(span.last):
        if span.after_last is not None and v >= Version(span.after_last):
            return None
        return Float16Refusal(span.model_type, False, span.first, span.last)
    return Float16Refusal(span.model_type, True, span.first, span.last)


BFLOAT16_NAMES = frozenset({"bfloat16", "bf16"})
"""``--dtype`` spellings of ``torch.bfloat16``."""
AUTO_FALLBACK_SINCE = Version("0.9.0")
"""The first vLLM release read whose ``--dtype auto`` falls back to float16 on a GPU without
bfloat16 ("Your ... device ... doesn't support torch.bfloat16. Falling back to
torch.float16 for compatibility": ``_get_and_verify_dtype`` in vllm/config.py@v0.9.0 line
3085, ``_resolve_auto_dtype`` @v0.9.1, @v0.9.2 and vllm/config/model.py@v0.11.0); 0.8.5 and
earlier keep the checkpoint's bfloat16."""
BFLOAT16_MESSAGE = ("Bfloat16 is only supported on GPUs with compute capability of at least "
                    "8.0. Your {gpu} GPU has compute capability {capability}. You can use "
                    "float16 instead by explicitly setting the `dtype` flag in CLI, for "
                    "example: --dtype=half.")
"""vLLM's refusal of bfloat16 on a GPU below compute capability 8.0, raised as the worker
starts (``_check_if_gpu_supports_dtype`` in vllm/worker/worker.py@v0.2.7 line 232, @v0.3.3,
@v0.4.3, @v0.6.3, @v0.8.5 line 547 and vllm/v1/worker/gpu_worker.py@v0.8.5 line 346,
@v0.9.2, @v0.10.1; ``CudaPlatform.check_if_supports_dtype`` in vllm/platforms/cuda.py
@v0.11.0 line 497, called by the V1 worker)."""


def bfloat16_refusal(dtype: str | None, config_dtype: str | None, version: str | None,
                     gpu: str, capability: str) -> str | None:
    """vLLM's refusal (its message) of running in bfloat16 on ``gpu``, of compute
    ``capability`` below 8.0 (:func:`kvlint.model.memory.pre_ampere_capability`):
    ``--dtype bfloat16`` on any release read, or ``--dtype auto`` (or none) for a bfloat16
    checkpoint on a release before :data:`AUTO_FALLBACK_SINCE`; ``None`` otherwise."""
    asked = (dtype or "auto").strip().lower()
    if asked not in BFLOAT16_NAMES:
        if asked != "auto" or (config_dtype or "").lower() not in BFLOAT16_NAMES:
            return None
        try:
            if version is None or Version(version) >= AUTO_FALLBACK_SINCE:
                return None
        except InvalidVersion:
            return None
    return BFLOAT16_MESSAGE.format(gpu=gpu, capability=capability)
