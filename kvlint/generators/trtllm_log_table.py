"""Generated data: ``kvlint/loaders/trtllm_log_formats.json``, the format strings TensorRT-LLM
prints its start-up KV cache figures with, release by release (a maintenance tool: it needs
TensorRT-LLM sources and never runs when kvlint reads a log).

``python -m kvlint.generators.trtllm_log_table SOURCE... [-o FILE]`` reads each SOURCE,
``VERSION=DIR`` with DIR holding ``cpp/tensorrt_llm/`` and ``tensorrt_llm/`` as in the
repository at that release (or a wheel, for its Python). TensorRT-LLM is never imported or
built: every ``TLLM_LOG_INFO``/``TLLM_LOG_WARNING``/``TLLM_LOG_ERROR`` call of the C++ KV cache
manager and runtime (:data:`PATHS`) is read for its literal printf format (adjacent literals
joined), and every ``.py`` of the PyTorch backend's executor is parsed with :mod:`ast`
(``logger.*`` calls). A candidate is kept when it matches one of :data:`ANCHORS`; the meaning of
each placeholder comes from its record and the literal text before it (:data:`MEANINGS`).

Entries are as in the other tables (``id``, ``format``, ``style``, ``first``/``last`` release
READ, ``source`` ``path@version (function)``, ``fields``; ``versions`` and ``cpp_versions``
list the releases read).

The table shipped was generated in one run from two sources (TensorRT-LLM's wheels are not on
the public registry and its repository is too large to bring here whole)::

    python -m kvlint.generators.trtllm_log_table 0.7.1=SRC/0.7.1 1.2.0rc2=SRC/1.2.0rc2

``0.7.1``: ``cpp/tensorrt_llm/{runtime,batch_manager}`` and ``tensorrt_llm/runtime`` of the
``release/v0.7.1`` branch (octoml/TensorRT-LLM-release, a copy of NVIDIA's release; its
``version.py`` says 0.7.1); ``1.2.0rc2``: the logging statements, verbatim, of
``cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp`` and
``tensorrt_llm/_torch/pyexecutor/_util.py`` at NVIDIA/TensorRT-LLM@b35ac1b6 (its
``tensorrt_llm/version.py``: 1.2.0rc2), read through a source index one file at a time. The
releases between were not read: an entry's ``first`` is the oldest of these two that prints
it, so a 0.1x or 1.0/1.1 log's range says "1.2.0rc2" where its lines are worded as there (the
probe notes the range and the releases read). Only the format strings are copied (they are
the data); citations are ``path@version``. The releases in between sized the KV cache in a
closed-source library (0.8 to 0.18): their lines that public logs print are appended as
:data:`OBSERVED`, each citing the log, never mixed with the strings read.
"""

from __future__ import annotations

import re

from kvlint.generators.log_tables import TableSpec, build_formats, run
from kvlint.loaders.trtllm_log import FORMATS_FILE

PATHS = ("cpp/tensorrt_llm/batch_manager/", "cpp/tensorrt_llm/runtime/",
         "tensorrt_llm/_torch/pyexecutor/", "tensorrt_llm/runtime/")
"""Where TensorRT-LLM sizes, allocates and logs its KV cache (C++ and the PyTorch backend)."""
SKIP = re.compile(r"/tests?/|/kernels/|/utils/numpyUtils")
CPP_MACROS = ("TLLM_LOG_INFO", "TLLM_LOG_WARNING", "TLLM_LOG_ERROR")

ANCHORS: tuple[tuple[str, str], ...] = (
    ("mem_usage", r"^Memory usage when calculating max tokens in paged kv cache"),
    ("tokens_per_block", r"^Number of tokens per block: %"),
    ("allocated", r"^\[MemUsageChange\] Allocated %[\d.]{0,6}f GiB for max tokens"),
    ("window_blocks", r"^\[windowSize=%d\] \{\.primaryBlocks="),
    ("primary_blocks", r"^Number of blocks in KV cache primary pool: %d$"),
    ("session_tokens", r"^Using %d tokens in paged KV cache"),
    ("both_set", r"^Both freeGpuMemoryFraction .{0,160}are set \(to %"),
    ("peak", r"^Peak memory during memory usage profiling"),
    ("weights", r"^Memory used after loading model weights \(inside torch\)"),
    ("weights_outside", r"^Memory used after loading model weights \(outside torch\)"),
    ("activations", r"^Memory dynamically allocated during inference"),
    ("non_torch", r"^Memory used outside torch"),
)
"""(id, regex on the format string): the records the reader reads."""

MEANINGS: tuple[tuple[str, str, str], ...] = (
    ("mem_usage", r"total: $", "total_gib"),
    ("mem_usage", r"available: $", "available_gib"),
    ("tokens_per_block", r"per block: $", "tokens_per_block"),
    ("allocated", r"Allocated $", "kv_gib"),
    ("allocated", r"KV cache \($", "kv_tokens"),
    ("window_blocks", r"^\[windowSize=$", "window_size"),
    ("window_blocks", r"primaryBlocks=$", "window_primary_blocks"),
    ("primary_blocks", r"primary pool: $", "primary_blocks"),
    ("session_tokens", r"^Using $", "session_kv_tokens"),
    ("both_set", r"\(to $", "config_fraction"),
    ("both_set", r" and $", "config_max_tokens"),
    ("peak", r"\(torch \+ non-torch\): $", "peak_gib"),
    ("peak", r"max tokens: $", "profiled_available_gib"),
    ("peak", r"fraction is set $", "fraction"),
    ("peak", r"kv size is $", "kv_size_estimate"),
    ("peak", r"device total memory $", "device_total_gib"),
    ("peak", r"tmp kv_mem $", "tmp_kv_gib"),
    ("weights", r": $", "weights_gib"),
    ("weights_outside", r": $", "weights_outside_gib"),
    ("activations", r": $", "activation_gib"),
    ("non_torch", r": $", "non_torch_gib"),
)
"""The meaning of a placeholder from its record and the literal text before it (first rule
wins; a placeholder no rule names is not read)."""

OBSERVED: tuple[dict[str, object], ...] = (
    {"id": "paged_tokens_bytes.observed",
     "format": "Max tokens in paged KV cache: %d. Allocating %ld bytes.", "style": "printf",
     "first": "0.10.0", "last": "0.10.0",
     "source": "observed, not read: printed by the closed-source batch manager of "
               "TensorRT-LLM main@e239adcf (0.10.0.dev, May 2024) in a public Triton log "
               "(triton-inference-server/tensorrtllm_backend#456); the C++ that prints it was "
               "not public before 0.19",
     "fields": ["kv_tokens", "kv_bytes"]},
    {"id": "kv_bytes.observed", "format": "Allocate %ld bytes for k/v cache.",
     "style": "printf", "first": "0.8.0", "last": "0.8.0",
     "source": "observed, not read: printed by the closed-source KVCacheManager of 0.8.0 "
               "in public logs (NVIDIA/TensorRT-LLM#1400; triton-inference-server/"
               "tensorrtllm_backend#366)",
     "fields": ["kv_bytes"]},
)
"""Lines of releases whose KV sizing was closed source (0.8 to 0.18: the batch manager shipped
as a static library), as public logs print them: kept apart from the format strings read
(``source`` says "observed"), with the release of the log that shows them."""

TABLE = TableSpec(engine="kvlint.generators.trtllm_log_table",
                  roots=("cpp", "tensorrt_llm"), prefixes=PATHS, anchors=ANCHORS,
                  meanings=MEANINGS, cpp_macros=CPP_MACROS, skip=SKIP)


def build(specs: list[str]) -> dict[str, object]:
    """The table of the SOURCEs ``specs``, with the :data:`OBSERVED` lines after them."""
    data = build_formats(specs, TABLE)
    formats = data["formats"]
    assert isinstance(formats, list)
    data["formats"] = [*formats, *(dict(entry) for entry in OBSERVED)]
    return data


def main(argv: list[str] | None = None) -> int:
    return run("kvlint.generators.trtllm_log_table", __doc__, build, FORMATS_FILE, argv)


if __name__ == "__main__":
    raise SystemExit(main())
