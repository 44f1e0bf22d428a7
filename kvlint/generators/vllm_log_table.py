"""Generated data: ``kvlint/loaders/vllm_log_formats.json``, the format strings vLLM prints
its start-up KV-cache figures with, version by version (a maintenance tool: it needs vLLM
wheels and never runs when kvlint reads a log).

``python -m kvlint.generators.vllm_log_table SOURCE... [-o FILE]`` reads each SOURCE, a
vLLM wheel (``pip download --no-deps vllm==X``; its version from the file name) or
``VERSION=DIR`` (a directory holding an unpacked ``vllm/`` package), and rewrites the table.
vLLM is never imported: every ``.py`` under the start-up paths (:data:`PATHS`: the V0 worker
and executors, ``engine/llm_engine.py``, V1 ``core``/``worker``/``engine/core.py``/
``executor``, ``utils``, ``config``, V1's metrics logger) is parsed with :mod:`ast`, and
every string expression given to a ``logger.*`` call, to ``raise X(...)``, assigned (``msg =
f"..."``) or returned (``MemoryProfilingResult.__repr__``) is a candidate. A candidate is
kept when it matches one of :data:`ANCHORS` (the records :mod:`kvlint.loaders.vllm_log`
reads); the meaning of each placeholder comes from the literal text around it
(:data:`MEANINGS`), never from its position, so a wording that gains or loses a field keeps
its reading.

Each entry: ``id``, ``format`` (the string with its placeholders: ``%d``/``%.2f`` for a
printf-style logger call, ``{expr:spec}`` for an f-string, ``{{``/``}}`` for literal braces),
``style`` (``printf`` or ``brace``), ``first``/``last`` (the first and last version READ that
prints it: the true bounds lie between these and the neighbouring versions read, listed in
``versions``), ``source`` (``path@version (function)``, where it was first seen) and
``fields`` (one per placeholder: the :class:`~kvlint.loaders.vllm_log.VllmLog` field it sets,
``, negative allowed`` where vLLM prints a difference that a failed start makes negative;
``device`` for a device name; ``- expr`` for a placeholder not read, with vLLM's expression).
``lines`` maps ``file.py:first[-last]`` (the lines of the statement that prints it, the
first of which a log record names) to the releases read that have it there.

The table shipped was generated from vLLM 0.4.0 to 0.34.0 (the ``versions`` list in it), the
wheels given in version order (an entry's ``source`` is the first release given that prints it).
Only the format strings themselves are copied from vLLM (they are the data); citations are
``path@version``.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator

from kvlint.generators.log_tables import (
    Candidate,
    TableSpec,
    brace_escape,
    build_formats,
    placeholder_context,
    py_placeholder,
    run,
)
from kvlint.loaders.vllm_log import FORMATS_FILE

PATHS = ("vllm/worker/", "vllm/executor/", "vllm/engine/llm_engine.py", "vllm/v1/core/",
         "vllm/v1/worker/", "vllm/v1/engine/core.py", "vllm/v1/executor/", "vllm/utils",
         "vllm/config", "vllm/v1/metrics/loggers.py")
"""Where vLLM sizes memory, the KV cache and its blocks, and starts its workers."""
SKIP = re.compile(r"tpu|xpu|hpu|neuron|openvino|cpu_|ipex|spec_decode|lora|offload|"
                  r"connector|mamba|/tests?/")
"""Other devices' workers and unrelated subsystems (their wordings are not GPU start-ups)."""
LOG_METHODS = {"info", "warning", "error", "debug", "info_once", "warning_once", "debug_once",
               "warn", "exception", "critical"}

ANCHORS: tuple[tuple[str, str], ...] = (
    ("blocks", r"^# (?:GPU|%s|\{[^{}]{1,80}\}) blocks: "),
    ("kv_tokens", r"KV cache size: (?:%s|\{[^{}]{1,80}\}) tokens"),
    ("concurrency", r"^Maximum concurrency for "),
    ("weights_v0", r"^Loading model weights took "),
    ("weights", r"^Model loading took "),
    ("profile_results", r"^Memory profiling results: "),
    ("profile_v0", r"the current vLLM instance can use total_gpu_memory"),
    ("profile", r"^Memory profiling takes .{0,200}(?:non-torch|torch peak)"),
    ("kv_available", r"^Available KV cache memory: "),
    ("free_on_start", r"^Free memory on device "),
    ("kv_cache_set", r"reserved .{0,80} memory for KV Cache as specified by"),
    ("chunked_prefill", r"^Chunked prefill is enabled with max_num_batched_tokens="),
    ("estimated_max_len", r"estimated maximum model length is "),
    ("kv_needed", r"KV cache is needed, which is larger than the available KV cache memory"),
    ("max_tokens_error", r"maximum number of tokens that can be stored in KV cache \("),
    ("max_model_len", r"^Using max model len "),
    ("cuda_graph", r"^(?:Estimated CUDA graph memory: |Graph capturing finished in )"),
    ("utilization_equiv", r"current --gpu-memory-utilization="),
    ("initial_free", r"^Initial free memory: "),
    ("blocks_info", r"num_gpu_blocks is: "),
)
"""(id, regex on the format string): the records the reader reads."""

_NEG = ", negative allowed"
MEANINGS: tuple[tuple[str, str, str], ...] = (
    # (regex on the literal before the placeholder, regex on the literal after, meaning)
    (r"^# $", r"^ blocks: ", "device"),
    (r"CPU blocks: $", "", "cpu_blocks"),
    (r"(?:GPU|^) blocks: $|num_gpu_blocks is: $", "", "gpu_blocks"),
    (r"(?:^|GPU|[^\w]) KV cache size: $|^GPU KV cache size: $", r"^ tokens", "kv_tokens"),
    (r"^$", r"^ KV cache size: ", "device"),
    (r"Maximum concurrency for $", "", "concurrency_tokens"),
    (r"tokens per request: $", "", "concurrency"),
    (r"(?:Loading model weights took|Model loading took|model weights take) $", "",
     "weights_gib"),
    (r"Actual usage is $", r"^ GiB for weight", "weights_gib"),
    (r"Actual usage is $|(?:^|, )$", r"^ GiB for consumed memory", "consumed_gib"),
    (r"total consumed \(from mem_get_info\): $", "", "consumed_gib"),
    (r"non_torch_memory(?:=| takes )$|non-torch forward increase memory: $", "",
     "non_torch_gib" + _NEG),
    (r", $", r"^ GiB for non-torch memory", "non_torch_gib" + _NEG),
    (r"activation peak memory takes $|torch peak memory increase: $", "",
     "activation_peak_gib" + _NEG),
    (r"(?:, |^)$", r"^ GiB for peak activation", "activation_peak_gib" + _NEG),
    (r"peak_torch_memory=$", "", "peak_torch_gib"),
    (r"Estimated CUDA graph memory: $|secs?, took $", "", "cuda_graph_gib" + _NEG),
    (r"(?:and |, )$", r"^ GiB for CUDAGraph memory", "cuda_graph_gib" + _NEG),
    (r"total_gpu_memory(?:=| \()$", "", "total_gpu_gib"),
    (r"gpu_memory_utilization(?:=| \()$|utilization is \($|utilization \($|"
     r"current --gpu-memory-utilization=$|Requested memory: $", "", "gpu_memory_utilization"),
    (r"\) = $", "", "usable_gib"),
    (r"^, $", r"^ GiB\)?(?:\.|$)", "requested_gib"),
    (r"Available KV cache memory: $|kv_cache_size=$|reserved for KV Cache is $", "",
     "kv_cache_gib" + _NEG),
    (r"available KV cache memory \($", "", "kv_cache_gib" + _NEG),
    (r"Current kv cache memory in use is $", "", "kv_in_use_gib" + _NEG),
    (r"(?:Free memory on device |^ )\($", r"^/", "free_on_start_gib"),
    (r"^/$", r"^ GiB\)", "total_gpu_gib"),
    (r"Initial free memory:? $", "", "free_on_start_gib"),
    (r"reserved $", r"^ ?GiB memory for KV Cache", "kv_cache_set_gib"),
    (r"max_num_batched_tokens=$", "", "max_num_batched_tokens"),
    (r"estimated maximum model length is $", "", "estimated_max_len"),
    (r"max seq len \($", "", "needed_len"),
    (r"^\), \($", r"^ Gi?B KV cache is needed", "needed_gib"),
    (r"stored in KV cache \($", "", "max_tokens_error"),
    (r"Using max model len $", "", "max_model_len"),
)
"""The meaning of a placeholder from the literal text either side of it (first rule wins)."""


def _text(node: ast.AST) -> tuple[str, bool] | None:
    """(text, is_brace) of a string expression: a literal, an f-string or a concatenation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, False
    if isinstance(node, ast.JoinedStr):
        out = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                out.append(brace_escape(str(value.value)))
            elif isinstance(value, ast.FormattedValue):
                out.append(py_placeholder(value))
        return "".join(out), True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is None or right is None:
            return None
        if left[1] or right[1]:
            def brace(part: tuple[str, bool]) -> str:
                return part[0] if part[1] else brace_escape(part[0])
            return brace(left) + brace(right), True
        return left[0] + right[0], False
    return None


def _candidates(tree: ast.AST) -> Iterator[Candidate]:
    """(format, style, function, lines) of every string expression logged, raised, assigned
    or returned in ``tree``: the lines of the statement (a logger call's record prints its
    first, the line CPython reports for a call that spans lines)."""
    def walk(node: ast.AST, where: str) -> Iterator[Candidate]:
        for child in ast.iter_child_nodes(node):
            name = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{where}.{child.name}" if where else child.name
            found: tuple[str, bool] | None = None
            printf = False
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.args and child.func.attr in LOG_METHODS:
                found = _text(child.args[0])
                printf = len(child.args) > 1
            elif isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call) \
                    and child.exc.args:
                found = _text(child.exc.args[0])
            elif isinstance(child, (ast.Assign, ast.Return)) and child.value is not None \
                    and isinstance(child.value, (ast.JoinedStr, ast.BinOp)):
                found = _text(child.value)
            if found is not None:
                text, is_brace = found
                style = "brace" if is_brace else "printf" if printf else "plain"
                span = (child.lineno, child.end_lineno or child.lineno) \
                    if isinstance(child, ast.stmt | ast.expr) else (0, 0)
                yield text, style, where, span
            yield from walk(child, name)
    yield from walk(tree, "")


def _fields(text: str, style: str, anchor: str = "") -> list[str]:
    """The meaning of each placeholder, from the literal text either side of it (any
    record's)."""
    return [next((m for left, right, m in MEANINGS
                  if re.search(left, before) and (not right or re.search(right, after))),
                 None) or f"- {token.spec}"
            for token, before, after in placeholder_context(text, style)]


TABLE = TableSpec(engine="kvlint.generators.vllm_log_table", roots=("vllm",), prefixes=PATHS,
                  anchors=ANCHORS, meanings=(), skip=SKIP, candidates=_candidates,
                  fields=_fields, unread=frozenset({"device"}), owner="vLLM's",
                  cite_oldest=False)
"""vLLM's own candidates and meanings; a format is cited where the first SOURCE given prints
it (give them in version order); a device name alone does not make a record read."""


build = functools.partial(build_formats, table=TABLE)
"""``build(specs)``: the table of the SOURCEs ``specs``."""


def main(argv: list[str] | None = None) -> int:
    return run("kvlint.generators.vllm_log_table", __doc__, build, FORMATS_FILE, argv)


if __name__ == "__main__":
    raise SystemExit(main())
