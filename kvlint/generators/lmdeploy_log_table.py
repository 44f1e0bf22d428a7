"""Generated data: ``kvlint/loaders/lmdeploy_log_formats.json``, the format strings LMDeploy
prints its start-up KV cache figures with, release by release (a maintenance tool: it needs
LMDeploy sources and never runs when kvlint reads a log).

``python -m kvlint.generators.lmdeploy_log_table SOURCE... [-o FILE]`` reads each SOURCE, an
LMDeploy wheel (``pip download --no-deps lmdeploy==X``; its version from the file name: the
Python only, TurboMind's C++ is compiled in) or ``VERSION=DIR``, DIR holding ``lmdeploy/`` and,
for TurboMind's C++ log lines, ``src/turbomind/`` as at the git tag (``git -C MIRROR archive vX
lmdeploy src/turbomind | tar -x -C DIR``). LMDeploy is never imported: every ``.py`` of the
start-up path (:data:`PATHS`: the PyTorch engine and its executors, the serving engine's
``backend_config`` lines, the TurboMind wrapper) is parsed with :mod:`ast` (``logger.*`` calls
and ``raise RuntimeError('...')`` messages), and every TurboMind ``TM_LOG_*`` call of
``src/turbomind`` is read for its literal format (printf style up to 0.12, fmt ``{}`` from
0.13). A candidate is kept when it matches one of :data:`ANCHORS`; the meaning of each
placeholder comes from its record and the literal text before it (:data:`MEANINGS`).

Each entry: ``id``, ``format``, ``style``, ``first``/``last`` (the first and last release READ
that prints it; ``versions`` lists the releases read, ``cpp_versions`` those whose C++ was
read: a TurboMind line's ``last`` is at most the newest of those), ``source`` (``path@version
(function)``) and ``fields``. ``backend_args`` records, for each option the reader takes from
the ``backend_config=`` line (:data:`kvlint.loaders.lmdeploy_log.BACKEND_ARGS`), the first and
last release read that declares it (an annotated field of ``TurbomindEngineConfig`` or
``PytorchEngineConfig`` in ``lmdeploy/messages.py``).

The table shipped was generated in one run from the git tags v0.4.2, v0.5.3, 0.6.5, v0.7.3,
v0.8.0, v0.9.2, v0.10.2, v0.11.1, v0.12.3, v0.13.0, v0.14.0, v0.15.0 and v0.16.0 of
InternLM/lmdeploy (``lmdeploy/`` and ``src/turbomind/``) and the unpacked 0.18.0 wheel
(Python only)::

    python -m kvlint.generators.lmdeploy_log_table 0.4.2=SRC/0.4.2 ... 0.16.0=SRC/0.16.0 \\
        0.18.0=WHEELS/0.18.0

Only the format strings are copied from LMDeploy (they are the data); citations are
``path@version``.
"""

from __future__ import annotations

import re

from kvlint.generators.log_tables import TableSpec, build_formats, declared_versions, run
from kvlint.loaders.lmdeploy_log import BACKEND_ARGS, FORMATS_FILE

PATHS = ("lmdeploy/pytorch/engine/", "lmdeploy/serve/async_engine.py",
         "lmdeploy/serve/core/async_engine.py", "lmdeploy/api.py",
         "lmdeploy/turbomind/turbomind.py", "src/turbomind/models/llama/BlockManager.cc",
         "src/turbomind/models/llama/LlamaBatch.cc",
         "src/turbomind/models/llama/SequenceManager.cc",
         "src/turbomind/engine/", "src/turbomind/turbomind.cc",
         "src/turbomind/triton_backend/llama/LlamaTritonModel.cc")
"""Where LMDeploy sizes and logs its KV cache (PyTorch engine and TurboMind)."""
ARG_FILE = "lmdeploy/messages.py"
SKIP = re.compile(r"/tests?/|disagg|mooncake|kernels/")
CPP_MACROS = ("TM_LOG_INFO", "TM_LOG_WARNING", "TM_LOG_ERROR")
ARG_CLASSES = ("TurbomindEngineConfig", "PytorchEngineConfig")

ANCHORS: tuple[tuple[str, str], ...] = (
    ("backend_config", r"(?:^|\W)backend_config=\{"),
    ("using_backend", r"^Using \{backend\} engine"),
    ("cache_config", r"^(?:build|Building) CacheEngine with config:"),
    ("init_cache", r"^Initialize cache engine with \{"),
    ("free_mem", r"free gpu memory: ?\{"),
    ("runtime_mem", r"^estimated max runtime memory: ?\{"),
    ("prefill_update", r"No enough memory\. [Uu]pdate max_prefill_token_num="),
    ("block_update", r"^Update `block_size=\{"),
    ("no_gpu_memory", r"^No enough gpu memory for (?:kv cache|runtime)"),
    ("tm_model_config", r"^turbomind model config:"),
    ("tm_block_size", r"^(?:\[BlockManager\] )?block_size = [%{]"),
    ("tm_max_block_count", r"^(?:\[BlockManager\] )?max_block_count = [%{]"),
    ("tm_max_cached_tokens", r"^max cached tokens: [%{]"),
    ("tm_session_truncated", r"`session_len` truncated to [%{]"),
    ("tm_adjusting", r"Adjusting block_count: free_before "),
    ("tm_adjusted", r"Adjusted block_count to "),
    ("tm_object_cache", r"^Object cache budget: "),
    ("tm_default", r"^\[LlamaTritonModel\] `(?:cache_block_seq_len|cache_max_entry_count|"
                   r"session_len)` is not set"),
)
"""(id, regex on the format string): the records the reader reads."""

_TEXT = ", text"
MEANINGS: tuple[tuple[str, str, str], ...] = (
    ("backend_config", r"input backend=$", "backend" + _TEXT),
    ("backend_config", r"backend_config=$", "backend_config" + _TEXT),
    ("using_backend", r"^Using $", "backend" + _TEXT),
    ("cache_config", r"(?:config: ?|^)$", "cache_config" + _TEXT),
    ("init_cache", r"^Initialize cache engine with $", "num_gpu_blocks"),
    ("init_cache", r"gpu blocks and $", "num_cpu_blocks"),
    ("free_mem", r"free gpu memory: ?$", "free_mib"),
    ("runtime_mem", r"runtime memory: ?$", "runtime_mib"),
    ("prefill_update", r"max_prefill_token_num=$", "max_prefill_token_num"),
    ("block_update", r"`block_size=$", "block_size"),
    ("block_update", r"`head_dim=$", "head_dim"),
    ("tm_model_config", r"^$", "tm_config" + _TEXT),
    ("tm_block_size", r"block_size = $", "block_mib"),
    ("tm_max_block_count", r"max_block_count = $", "max_block_count"),
    ("tm_max_cached_tokens", r"max cached tokens: $", "max_cached_tokens"),
    ("tm_session_truncated", r"truncated to $", "session_len_truncated"),
    ("tm_adjusting", r"free_before $", "free_before_mib"),
    ("tm_adjusting", r"linear $", "linear_mib"),
    ("tm_adjusting", r"target $", "target_mib"),
    ("tm_adjusted", r"Adjusted block_count to $", "adjusted_block_count"),
    ("tm_object_cache", r"budget: $", "cache_budget_mib"),
    ("tm_object_cache", r"from free $", "tm_free_mib"),
    ("tm_object_cache", r"and ratio $", "tm_cache_ratio"),
    ("tm_default", r"cache_block_seq_len` is not set, default to $", "default_block_seq_len"),
    ("tm_default", r"cache_max_entry_count` is not set, default to $",
     "default_cache_max_entry_count"),
    ("tm_default", r"session_len` is not set, default to $", "default_session_len"),
)
"""The meaning of a placeholder from its record and the literal text before it (first rule
wins; a placeholder no rule names is not read)."""

TABLE = TableSpec(engine="kvlint.generators.lmdeploy_log_table", roots=("lmdeploy", "src"),
                  prefixes=PATHS, anchors=ANCHORS, meanings=MEANINGS, cpp_macros=CPP_MACROS,
                  skip=SKIP, flags=frozenset({"no_gpu_memory"}))


def build(specs: list[str]) -> dict[str, object]:
    table = build_formats(specs, TABLE)
    table["backend_args"] = declared_versions(specs, ("lmdeploy",), (ARG_FILE,),
                                              set(BACKEND_ARGS), ARG_CLASSES)
    return table


def main(argv: list[str] | None = None) -> int:
    return run("kvlint.generators.lmdeploy_log_table", __doc__, build, FORMATS_FILE, argv)


if __name__ == "__main__":
    raise SystemExit(main())
