"""Whether a manifest's text runs an inference engine, read from its words alone.

Used where no parser's structure is available: a document YAML cannot read (is the placeholder
in it in a Secret, or in the Deployment that runs the engine?) and a file in which no parser
found a served model (a format kvlint does not read must not pass in silence: KV904).

A line runs an engine when it holds the engine's serving command (``vllm serve``, ``python -m
vllm.entrypoints.openai.api_server``, ``python -m sglang.launch_server``,
``text-generation-launcher``, ``lmdeploy serve``, ``trtllm-serve``, ``llama-server``), not in
a comment and not in a ``pip install``; or when it names an engine's image (a name with
``vllm``, ``sglang``, ``text-generation-inference``, ``lmdeploy``, ``trtllm``, ``llama.cpp``...
that is no router, proxy, gateway, scheduler, sidecar, operator, controller or benchmark;
under a ``name`` key, a reference with a registry path) in a text that replaces no command
(the image's own entrypoint then starts the engine). Failing both, a line that sets an
engine's own option (``--max-model-len``, ``--enforce-eager``; a values key such as
``maxModelLen`` or ``gpu_memory_utilization``; an environment variable such as
``VLLM_MAX_MODEL_LEN`` that a start script passes on) configures one.
"""

from __future__ import annotations

import re

__all__ = ["first_engine_line"]

_COMMAND = re.compile(
    r"\bvllm\s+serve\b|\bvllm\.entrypoints\.(?:openai\.)?api_server\b|"
    r"\bsglang\.launch_server\b|\bsglang\s+serve\b|\btext-generation-launcher\b|"
    r"\blmdeploy\s+serve\b|\btrtllm-serve\b|\bllama-server\b|\bllama_cpp\.server\b")
_OWN_IMAGE = re.compile(
    r"\b(?:vllm/vllm-openai|lmsysorg/sglang|huggingface/text-generation-inference|"
    r"openmmlab/lmdeploy|ggml-org/llama\.cpp|ggerganov/llama\.cpp)(?=[:@\s\"']|$)")
"""An engine's own image named anywhere on a line (a build argument, a base image): read,
like an ``image:`` key, only in a text that replaces no command."""
_IMAGE = re.compile(
    r"(?:(?:image|repository)[\"']?\s*:\s*[\"']?(?:[^\s\"'#]*/)?|"
    r"name[\"']?\s*:\s*[\"']?[^\s\"'#]*/)"
    r"(?![^\s\"'/#:]*(?:router|proxy|gateway|scheduler|sidecar|operator|controller|bench))"
    r"[^\s\"'/#:]*(?:vllm|sglang|text-generation-inference|lmdeploy|tensorrt-llm|trtllm|"
    r"llama\.cpp|llama-cpp|llama-server)[^\s\"'/#:]*(?=[:@\"'\s]|$)")
_SETTING = re.compile(
    r"--(?:gpu-memory-utilization|max-model-len|tensor-parallel-size|enforce-eager|"
    r"kv-cache-dtype|mem-fraction-static|tp-size|num-shard|model-id|max-total-tokens)\b|"
    r"^\s*-?\s*[\"']?(?:gpu_?memory_?utilization|max_?model_?len|tensor_?parallel_?size)"
    r"[\"']?\s*:", re.IGNORECASE)
"""An engine's own option, as a flag or as a values-file key (``maxModelLen``,
``gpu_memory_utilization``): a file that sets one configures an engine."""
_ENV_SETTING = re.compile(
    r"(?<![A-Za-z0-9])[A-Z0-9_]*(?:GPU_MEMORY_UTILIZATION|MAX_MODEL_LEN|TENSOR_PARALLEL_SIZE|"
    r"MEM_FRACTION(?:_STATIC)?|MAX_TOTAL_TOKENS|MAX_INPUT_(?:LENGTH|TOKENS)|"
    r"MAX_BATCH_PREFILL_TOKENS|CUDA_MEMORY_FRACTION)(?![A-Za-z0-9])")
"""The same options as environment variables a start script passes on
(``VLLM_MAX_MODEL_LEN``, ``GPU_MEMORY_UTILIZATION``), and the variables TGI's launcher reads
its own options from (``MAX_TOTAL_TOKENS``, ``MAX_INPUT_LENGTH``, ``CUDA_MEMORY_FRACTION``:
clap's ``env`` on each ``text-generation-launcher`` argument): upper case, as variables are
written."""
_COMMAND_KEY = re.compile(r"^\s*-?\s*[\"']?(?:command|entrypoint)[\"']?\s*:", re.MULTILINE)
_ENTRYPOINT_KEY = re.compile(r"^\s*-?\s*[\"']?entrypoint[\"']?\s*:", re.MULTILINE)
_COMPOSE = re.compile(r"^services\s*:", re.MULTILINE)
_INSTALL = re.compile(r"\bpip3?\s+install\b|\buv\s+pip\b")
_HINTS = ("vllm", "sglang", "text-generation", "lmdeploy", "trtllm", "tensorrt-llm", "llama-server",
          "llama.cpp", "llama-cpp", "memory", "model", "parallel", "eager", "shard", "max_total",
          "max_input", "fraction")


def first_engine_line(text: str) -> tuple[int, str] | None:
    """``(1-based line, the words that run the engine)`` of the first line of ``text`` that
    runs an engine, or ``None``."""
    low = text.lower()
    if not any(hint in low for hint in _HINTS):
        return None
    # a compose service's command is the image's CMD, its entrypoint still runs; elsewhere
    # (Kubernetes) command replaces the entrypoint
    replacing = _ENTRYPOINT_KEY if _COMPOSE.search(text) else _COMMAND_KEY
    images = replacing.search(text) is None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        found = None if _INSTALL.search(line) else _COMMAND.search(line)
        if found is None and images:
            found = _IMAGE.search(line) or _OWN_IMAGE.search(line)
        if found is not None:
            return number, found.group(0).strip()
    for number, line in enumerate(text.splitlines(), 1):  # no command, no image: a setting
        if not line.lstrip().startswith("#") and \
                (found := _SETTING.search(line) or _ENV_SETTING.search(line)):
            return number, found.group(0).strip().rstrip(":").strip("\"'")
    return None
