"""kvlint's predicted vLLM memory profile next to the one a start-up log printed, term by term.

A vLLM log prints its memory profile per GPU in its own words (``Model loading took 14.99
GiB``, ``non-torch memory 0.16 GiB``, ``peak activation 1.89 GiB``, ``CUDA graph memory``,
``Available KV cache memory``, ``GPU KV cache size: N tokens``, ``Maximum concurrency for L
tokens per request: X``). kvlint predicts the same terms from the GPU's total memory, the
utilization, ``max_model_len`` and the engine version (kvlint/model/memory.py); this module
lines the two up, one row per term, and says which of kvlint's terms are estimates. Pure:
the figures come in, rows go out.
"""

from __future__ import annotations

from kvlint.loaders.vllm_log import VllmLog
from kvlint.model.capacity import Capacity
from kvlint.probe.result import LogTerm

GIB = 2**30


def _gib(value: int | None) -> float | None:
    return None if value is None else round(value / GIB, 2)


def log_terms(log: VllmLog, capacity: Capacity | None,
              grouped: tuple[int, float | None] | None = None) -> tuple[LogTerm, ...]:
    """The rows of the comparison: every term the log prints or kvlint predicts.
    ``grouped``: kvlint's tokens and concurrency in vLLM's units for a model whose layers
    vLLM groups (kvlint/model/vllm_groups.py), which replace the per-token ones."""
    memory = capacity.memory if capacity is not None else None
    rows = [
        LogTerm("model weights (Model loading took)", "GiB", log.weights_gib,
                _gib(capacity.weight_bytes_per_gpu) if capacity is not None else None,
                estimated=capacity is not None and capacity.weights_estimated),
        LogTerm("peak activation", "GiB", log.activation_peak_gib,
                _gib(memory.activation_peak_bytes) if memory is not None else None, True),
        LogTerm("non-torch memory", "GiB", log.non_torch_gib,
                _gib(memory.non_torch_bytes) if memory is not None else None, True),
    ]
    if memory is not None and not memory.cuda_graph_bytes:  # captured after the KV sizing
        rows.append(LogTerm(f"CUDA graph memory (not deducted by vLLM {memory.engine_version})",
                            "GiB", log.cuda_graph_gib, None))
    else:
        rows.append(LogTerm("CUDA graph memory", "GiB", log.cuda_graph_gib,
                            _gib(memory.cuda_graph_bytes) if memory is not None else None,
                            True))
    if memory is not None and memory.kv_margin_bytes:  # vLLM >= 0.34's extensible cache
        rows.append(LogTerm("extensible KV cache margin (kept free)", "GiB", None,
                            _gib(memory.kv_margin_bytes), True))
    given = capacity is not None and capacity.kv_budget_source is not None
    if given:  # --kv-cache-memory-bytes: reserved as given, no memory profile
        assert capacity is not None
        rows.append(LogTerm("reserved for KV Cache as specified by kv_cache_memory_bytes",
                            "GiB", log.kv_cache_set_gib,
                            _gib(capacity.kv_budget_bytes_per_gpu)))
    elif capacity is not None and memory is None:  # another engine, or --overhead given
        rows.append(LogTerm("overhead (activation + non-torch + graphs)", "GiB", None,
                            _gib(capacity.overhead_bytes)))
    # the KV terms follow from estimated ones
    derived = capacity is not None and not given and (memory is not None
                                                      or capacity.weights_estimated)
    if not given:
        rows.append(LogTerm("Available KV cache memory", "GiB", log.kv_memory_gib,
                            None if capacity is None
                            else _gib(capacity.kv_budget_bytes_per_gpu), derived))
    printed_tokens = log.capacity_tokens
    rows.append(LogTerm("GPU KV cache size (tokens)", "tokens",
                        None if printed_tokens is None else float(printed_tokens),
                        None if capacity is None else float(
                            grouped[0] if grouped else capacity.max_tokens), derived))
    length = log.concurrency_tokens or (capacity.context if capacity is not None else None)
    if length:
        ours = None
        if capacity is not None:
            concurrency = grouped[1] if grouped and grouped[1] is not None \
                else capacity.max_concurrency
            ours = round(concurrency, 2) if concurrency is not None else 0.0
        rows.append(LogTerm(f"Maximum concurrency for {length:,} tokens per request", "x",
                            log.concurrency if log.concurrency_tokens else None, ours,
                            derived))
    return tuple(row for row in rows if row.printed is not None or row.predicted is not None)
