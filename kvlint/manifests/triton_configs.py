"""Triton model configurations (``config.pbtxt``, protobuf text format) of the TensorRT-LLM
backend: the model Triton's ``tensorrtllm`` backend serves and the KV-cache settings it takes.

Read from triton-inference-server/tensorrtllm_backend's ``all_models/inflight_batcher_llm/
tensorrt_llm/config.pbtxt``@afa76488 (its ``parameters`` as ``key``/``string_value`` pairs:
``gpt_model_path`` the engine directory, ``kv_cache_free_gpu_mem_fraction``,
``max_tokens_in_paged_kv_cache``, ``gpu_device_ids``; ``${name}`` placeholders are
``tools/fill_template.py``'s, filled before deployment). The engine's parallelism is built into
the engine (its ``config.json``), not written here. Another backend's config (``python``,
``ensemble``) serves no LLM itself. The text is scanned, never parsed as YAML: a ``{`` block is
not a YAML mapping, and a config Triton reads is no "invalid YAML".
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ServedModel, Unresolved
from kvlint.manifests.engine_launch import Hardware, Origin, served_model
from kvlint.manifests.trtllm_configs import FREE_FRACTION_NOTE

__all__ = ["is_triton_config", "triton_config_models"]

FORMAT = "triton-config"
_COMMENT = re.compile(r'#[^\n]*')
_BACKEND = re.compile(r'^[ \t]*backend[ \t]*:[ \t]*"([^"\n]{0,64})"', re.MULTILINE)
_PARAMETER = re.compile(r'parameters[ \t]*:?\s*\{\s*key[ \t]*:[ \t]*"([^"\n]{1,128})"\s*'
                        r'value[ \t]*:?\s*\{\s*string_value[ \t]*:[ \t]*"([^"\n]{0,1024})"\s*\}'
                        r'\s*\}')
_PLACEHOLDER = re.compile(r"\$\{\w{1,64}\}")
MODEL_KEYS = ("gpt_model_path", "engine_dir")
MAX_PARAMETERS = 512


def is_triton_config(path: str) -> bool:
    """Whether ``path`` is a Triton model configuration (``config.pbtxt``, any ``.pbtxt``)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1].lower().endswith(".pbtxt")


def _uncommented(text: str) -> str:
    """``text`` with each ``#`` comment blanked (quotes in these configs hold no ``#``), so
    a commented-out block is not read and lines keep their numbers."""
    return _COMMENT.sub(lambda m: " " * len(m.group(0)), text)


def _lines(text: str) -> list[int]:
    """Where each line after the first starts, for :func:`bisect.bisect_right`."""
    return [m.end() for m in re.finditer("\n", text)]


def triton_config_models(text: str, path: str) -> list[ServedModel]:
    """The model a TensorRT-LLM backend config serves (none for another backend)."""
    body = _uncommented(text)
    backend = _BACKEND.search(body)
    if backend is None or backend.group(1).strip().lower() != "tensorrtllm":
        return []
    starts = _lines(body)
    params: dict[str, tuple[str, int]] = {}
    for found in _PARAMETER.finditer(body):
        params.setdefault(found.group(1),
                          (found.group(2), bisect_right(starts, found.start(2)) + 1))
        if len(params) >= MAX_PARAMETERS:
            break
    placeholders = sorted(k for k, (v, _) in params.items() if _PLACEHOLDER.search(v))

    def value(key: str) -> tuple[str, int] | Unresolved | None:
        if key not in params:
            return None
        text_, line = params[key]
        if _PLACEHOLDER.search(text_):
            return Unresolved(f"parameter {key} is a fill_template.py placeholder left "
                              "unfilled", line, None, text_)
        return text_, line

    notes = ["Triton TensorRT-LLM backend (config.pbtxt): the engine's tp and pp are built "
             "into the engine (its config.json), not written here"]
    if placeholders:
        notes.append(f"{len(placeholders)} parameters are fill_template.py placeholders left "
                     f"unfilled ({', '.join(placeholders[:6])}"
                     f"{', ...' if len(placeholders) > 6 else ''}): Triton reads them as "
                     "written")
    fields: dict[str, Any] = {}
    model = next((given for key in MODEL_KEYS if (given := value(key)) is not None), None)
    if isinstance(model, tuple):
        fields["model"] = Located(model[0], model[1], None, "parameter gpt_model_path")
    elif isinstance(model, Unresolved):
        fields["model"] = model
    fraction = value("kv_cache_free_gpu_mem_fraction")
    if isinstance(fraction, tuple):
        try:
            fields["gpu_memory_utilization"] = Located(
                float(fraction[0]), fraction[1], None, "parameter kv_cache_free_gpu_mem_fraction")
            notes.append(FREE_FRACTION_NOTE)
        except ValueError:
            fields["gpu_memory_utilization"] = Unresolved(
                "kv_cache_free_gpu_mem_fraction is not a number", fraction[1], None, fraction[0])
    elif isinstance(fraction, Unresolved):
        fields["gpu_memory_utilization"] = fraction
    tokens = value("max_tokens_in_paged_kv_cache")
    if isinstance(tokens, tuple) and tokens[0].strip().isdigit():
        fields["kv_tokens_cap"] = Located(int(tokens[0]), tokens[1], None,
                                          "parameter max_tokens_in_paged_kv_cache")
    devices = value("gpu_device_ids")
    gpus: Located[int] | Unresolved | None = None
    if isinstance(devices, tuple) and devices[0].strip():
        ids = [d for d in devices[0].split(",") if d.strip()]
        gpus = Located(len(ids), devices[1], None, f"parameter gpu_device_ids {devices[0]}")
    ctx = DocumentContext(path, 0, ())
    engine = Located("trtllm", bisect_right(starts, backend.start(1)) + 1, None,
                     'config.pbtxt backend "tensorrtllm"')
    return [served_model(Origin(ctx, FORMAT, line=engine.line), engine=engine,
                         hardware=Hardware(gpus=gpus), notes=notes, **fields)]
