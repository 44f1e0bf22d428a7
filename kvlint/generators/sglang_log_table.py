"""Generated data: ``kvlint/loaders/sglang_log_formats.json``, the format strings SGLang prints
its start-up memory figures with, release by release (a maintenance tool: it needs SGLang
wheels or unpacked sources and never runs when kvlint reads a log).

``python -m kvlint.generators.sglang_log_table SOURCE... [-o FILE]`` reads each SOURCE, an
SGLang wheel (``pip download --no-deps sglang==X``; its version from the file name) or
``VERSION=DIR`` (a directory holding an unpacked ``sglang/`` package), and rewrites the table.
SGLang is never imported: every ``.py`` of the start-up memory path (:data:`PATHS`: the model
runner and its pool configurators, ``mem_cache``, the scheduler's start-up summary, the
engine's ``server_args=`` line) is parsed with :mod:`ast`, and the string given to every
``logger.*`` call is a candidate. SGLang builds some of its messages from conditionals
(``{'is allocated' if ... else 'VA upper bound'}``, ``cache_name = f"{label} KV Cache" if
label else "KV Cache"``): a conditional whose branches are strings, or a local name assigned
such strings in the same function, is expanded into one candidate per branch. A candidate is
kept when it matches one of :data:`ANCHORS`; the meaning of each placeholder comes from its
record and the literal text before it (:data:`MEANINGS`), never from its position.

Each entry: ``id``, ``format`` (``{expr:spec}`` placeholders of an f-string, ``%d``/``%.2f``
of a printf-style call, ``{{``/``}}`` for literal braces), ``style``, ``first``/``last`` (the
first and last release READ that prints it; ``versions`` lists the releases read),
``source`` (``path@version (function)``) and ``fields`` (one per placeholder: the
:class:`~kvlint.loaders.sglang_log.SglangLog` field it sets, ``, text`` for a word rather
than a number, ``, negative allowed``; ``- expr`` for one not read).

``server_args`` records, for each ``ServerArgs`` option the reader takes from the
``server_args=`` line (:data:`SERVER_ARGS`), the first and last release read that declares it
(an annotated field of ``ServerArgs`` in ``server_args.py`` or, from 0.5.2x, of a namespace in
``arg_groups/``), so a log's options narrow its release too.

The table shipped was generated from SGLang 0.2.15 to 0.5.23 (its ``versions`` list): the
wheels of 0.2.15, 0.3.0, 0.3.4, 0.3.6, 0.4.0, 0.4.1, 0.4.1.post7, 0.4.2, 0.4.2.post4, 0.4.3,
0.4.3.post4, 0.4.4, 0.4.5, 0.4.6.post2, 0.4.7, 0.4.8, 0.4.9, 0.5.3, 0.5.4, 0.5.6, 0.5.8,
0.5.10, 0.5.12, 0.5.14, 0.5.16, 0.5.18 and 0.5.20 (``pip download --no-deps sglang==X``) and
the unpacked packages of 0.4.6.post1, 0.4.10, 0.5.0rc2, 0.5.1, 0.5.2, 0.5.5.post3 and 0.5.23,
all passed in one run. Only the format strings are copied from SGLang (they are the data);
citations are ``path@version``.
"""

from __future__ import annotations

import functools
import re

from kvlint.generators.log_tables import (
    TableSpec,
    build_formats,
    declared_versions,
    python_candidates,
    run,
)
from kvlint.loaders.sglang_log import FORMATS_FILE, SERVER_ARGS

PATHS = ("sglang/srt/model_executor/", "sglang/srt/mem_cache/", "sglang/srt/managers/scheduler",
         "sglang/srt/managers/tp_worker", "sglang/srt/server.py",
         "sglang/srt/entrypoints/engine.py", "sglang/srt/server_args.py")
"""Where SGLang loads the weights, sizes and allocates its pools and logs its options."""
ARG_PATHS = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/")
"""Where ``ServerArgs`` declares its options."""
SKIP = re.compile(r"host|npu|mlx|hpu|xpu|storage|hicache|sparsity|/tests?/|cpu_")
"""Other devices, host (CPU) caches and offload tiers: not the GPU pool's start-up."""

ANCHORS: tuple[tuple[str, str], ...] = (
    ("load_begin", r"^Load weight begin\. avail mem="),
    ("load_end", r"^Load weight end\. "),
    ("kv_allocated", r"^(?:KV Cache|\{[^{}]{1,60}\} KV Cache) is allocated\. "),
    ("kv_post_capture", r"^Post-capture KV sizing: KV cache allocated\. "),
    ("mamba_allocated", r"^Mamba Cache is allocated\. "),
    ("pool_end", r"^Memory pool end\. avail mem="),
    ("swa_pool", r"^Use [Ss]liding window memory pool[.(]"),
    ("swa_usage", r"^SWAKVPool mem usage: "),
    ("max_total", r"^max_total_num_tokens=\{"),
    ("server_args", r"^server_args=\{"),
    ("kv_dtype", r"^Using KV cache dtype: "),
    ("swa_disabled", r"^Disabl(?:e|ing) hybrid SWA memory for "),
)
"""(id, regex on the format string): the records the reader reads."""

_NEG = ", negative allowed"
_TEXT = ", text"
MEANINGS: tuple[tuple[str, str, str], ...] = (
    # (record, regex on the literal before the placeholder, meaning)
    ("load_begin", r"avail mem=$", "free_start_gib"),
    ("load_end", r"avail mem=$", "free_after_load_gib"),
    ("load_end", r"mem usage=$", "weights_gib"),
    ("load_end", r"(?:^|[ ,])type=$", "arch" + _TEXT),
    ("load_end", r", dtype=$", "dtype" + _TEXT),
    ("kv_allocated", r"^$", "pool" + _TEXT),
    ("kv_allocated", r"dtype: $", "kv_dtype" + _TEXT),
    ("kv_allocated", r"#tokens: $", "kv_tokens"),
    ("kv_allocated", r"(?:^|[^\w])KV size: $", "kv_gib"),
    ("kv_allocated", r"(?:^|[^\w])K size: $", "k_gib"),
    ("kv_allocated", r"(?:^|[^\w])V size: $", "v_gib"),
    ("kv_post_capture", r"#tokens: $", "post_capture_tokens"),
    ("kv_post_capture", r"KV size: $", "post_capture_kv_gib"),
    ("kv_post_capture", r"avail mem=$", "post_capture_free_gib"),
    ("mamba_allocated", r"max_mamba_cache_size: $", "mamba_cache_size"),
    ("mamba_allocated", r"conv_state size: $", "mamba_conv_gib"),
    ("mamba_allocated", r"ssm_state size: $", "mamba_ssm_gib"),
    ("pool_end", r"avail mem=$", "free_after_pool_gib"),
    ("swa_pool", r"full_layer_tokens=$", "swa_full_tokens"),
    ("swa_pool", r"swa_layer_tokens=$", "swa_tokens"),
    ("swa_usage", r"mem usage: $", "swa_pool_gib"),
    ("swa_usage", r"swa size: $", "swa_tokens"),
    ("swa_usage", r"full size: $", "swa_full_tokens"),
    ("max_total", r"^max_total_num_tokens=$", "max_total_num_tokens"),
    ("max_total", r"chunked_prefill_size=$", "chunked_prefill_size" + _NEG),
    ("max_total", r"max_prefill_tokens=$", "max_prefill_tokens"),
    ("max_total", r"max_running_requests=$", "max_running_requests"),
    ("max_total", r"context_len=$", "context_len"),
    ("max_total", r"available_gpu_mem=$", "available_gpu_mem_gib"),
    ("server_args", r"^server_args=$", "server_args" + _TEXT),
    ("kv_dtype", r"KV cache dtype: $", "kv_dtype" + _TEXT),
    ("swa_disabled", r"hybrid SWA memory for $", "swa_disabled_arch" + _TEXT),
)
"""The meaning of a placeholder from its record and the literal text before it (first rule
wins; a placeholder no rule names is not read)."""


TABLE = TableSpec(engine="kvlint.generators.sglang_log_table", roots=("sglang",),
                  prefixes=PATHS, anchors=ANCHORS, meanings=MEANINGS, skip=SKIP,
                  candidates=functools.partial(python_candidates, raised=False, expand=True),
                  unread=frozenset({"pool, text"}), owner="SGLang's")
"""Logger calls only (no raised messages), conditionals and bound names in f-strings
expanded; a record whose only placeholder read is the pool label is not kept."""


def build(specs: list[str]) -> dict[str, object]:
    table = build_formats(specs, TABLE)
    table["server_args"] = declared_versions(specs, ("sglang",), ARG_PATHS, set(SERVER_ARGS),
                                             skip=SKIP)
    return table


def main(argv: list[str] | None = None) -> int:
    return run("kvlint.generators.sglang_log_table", __doc__, build, FORMATS_FILE, argv)


if __name__ == "__main__":
    raise SystemExit(main())
