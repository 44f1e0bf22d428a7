"""``--format text``: a compact table per model, then the findings with their fix, in the
order of the files (path, line, column, code).

On a terminal the prose wraps to its width (``COLUMNS`` first), between words only: a flag,
a model id or a path is never split at its hyphens. Into a pipe or a file nothing wraps (a
line per paragraph, for grep and for editors that wrap themselves). Colour, ``-q`` and the
infos summary come from the :class:`~kvlint.reporters.display.Display` the command line sets.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvlint.diagnostics import Finding
from kvlint.hookspecs import hookimpl
from kvlint.model.geometry import AttentionGeometry, AttentionKind, LayerKind
from kvlint.reporters.base import Reporter
from kvlint.reporters.display import (
    PLAIN,
    Display,
    hidden_line,
    in_reading_order,
    located,
    severity_counts,
    split_infos,
)
from kvlint.reporters.escape import printable
from kvlint.reporters.geometry_text import (
    capacity_sequences_text,
    exact_bytes,
    geometry_rows,
    sequence_text,
)
from kvlint.units import fmt_bytes, fmt_int, fmt_ratio

if TYPE_CHECKING:
    from kvlint.linter import LintRun, ModelResult
    from kvlint.model.capacity import Capacity
    from kvlint.model.serving import KvAnalysis
    from kvlint.probe.result import LogTerm, ProbeReport

MIN_WIDTH = 40
"""Narrower terminals are wrapped as if this wide (a word per line helps nobody)."""


def wrap(text: str, width: int | None, indent: str = "", subsequent: str | None = None
         ) -> str:
    """``text`` indented, and filled to ``width`` columns when there is one, breaking only
    between words (never inside a flag, an id or a number, whatever its hyphens)."""
    later = indent if subsequent is None else subsequent
    if width is None:
        return indent + text
    return textwrap.fill(text, max(width, MIN_WIDTH), initial_indent=indent,
                         subsequent_indent=later, break_on_hyphens=False,
                         break_long_words=False)


def _attention(g: AttentionGeometry) -> str:
    kind = g.attention
    if kind is AttentionKind.MLA:
        return (f"MLA latent {g.kv_lora_rank} + rope {g.qk_rope_head_dim} per token per layer")
    if kind is AttentionKind.NONE:
        return "none (no attention layer holds a KV cache)"
    label = {"mha": "MHA", "gqa": "GQA", "mqa": "MQA"}[kind.value]
    plural = "s" if g.num_kv_heads != 1 else ""
    return f"{label} {g.num_attention_heads} query / {g.num_kv_heads} KV head{plural}"


def _layers(g: AttentionGeometry) -> str:
    parts = [f"{g.num_kv_layers} of {g.num_layers} hold KV"]
    sliding = [la for la in g.layers if la.is_windowed]
    if sliding:
        kinds = {la.kind for la in sliding}
        word = "chunked" if kinds == {LayerKind.CHUNKED} else "sliding"
        parts.append(f"{len(sliding)} {word} (window {fmt_int(g.sliding_window or 0)})")
    if g.num_shared_kv_layers:
        parts.append(f"{g.num_shared_kv_layers} share KV")
    recurrent = sum(1 for la in g.state_layers if not la.attends)
    if recurrent:
        parts.append(f"{recurrent} recurrent")
    none = g.num_layers - g.num_kv_layers - g.num_shared_kv_layers - recurrent
    if none and g.num_kv_layers:
        parts.append(f"{none} without KV")
    return " · ".join(parts)


def _heads(g: AttentionGeometry) -> str:
    if g.attention is AttentionKind.NONE:
        return "-"
    kv_counts = g.distinct_kv_head_counts
    kv = " / ".join(map(str, kv_counts)) if len(kv_counts) > 1 else str(g.num_kv_heads)
    dims = f"head dim {g.head_dim}"
    if g.v_head_dim != g.head_dim:
        dims += f" (v {g.v_head_dim})"
    return f"{g.num_attention_heads} query · {kv} KV · {dims}"


def _per_gpu(a: KvAnalysis) -> str:
    fp = a.footprint
    layout = a.plan.layout
    where = f"tp={layout.tp}" + (f" pp={layout.pp}" if layout.pp > 1 else "")
    if layout.dp_attention and layout.dp > 1:
        where += f" dp={layout.dp} (attention tp={layout.attention_tp})"
    if fp.bytes_per_token_per_gpu is None:
        return f"refused at {where} (see KV202)"
    text = f"{exact_bytes(fp.bytes_per_token_per_gpu_exact or 0)} B at {where}"
    if fp.kv_heads_per_gpu is not None:
        text += f" · {fp.kv_heads_per_gpu} KV head{'s' if fp.kv_heads_per_gpu > 1 else ''} per GPU"
    return text


def _table(r: ModelResult) -> list[list[str]]:
    a = r.analysis
    if a is None:
        return [["config", "unresolved (see KV900)"]]
    g = a.geometry
    fp = a.footprint
    rows = [
        ["attention", _attention(g)],
        ["layers", _layers(g)],
        ["heads", _heads(g)],
        *geometry_rows(a),
        ["KV per token", f"{exact_bytes(fp.bytes_per_token_exact)} B "
                         f"({fmt_bytes(fp.bytes_per_token)})"
                         f" · {a.dtype.name}"],
        ["per GPU", _per_gpu(a)],
    ]
    if fp.replication_factor is not None and fp.bytes_per_token:
        rows.append(["replication", f"{fmt_ratio(fp.replication_factor)}x · the group holds "
                                    f"{fmt_int(fp.bytes_per_token_cluster or 0)} B/token"])
    rows.append(["per sequence", sequence_text(a)])
    if r.capacity is not None:
        rows.extend(_capacity_rows(r.capacity, r.plan.gpu_source, r.plan.gpu_memory_source))
    rows.extend(["note", note] for note in g.notes)
    return rows


def _capacity_rows(c: Capacity, source: str | None = None,
                   memory_source: str | None = None) -> list[list[str]]:
    weights = ("~" if c.weights_estimated else "") + fmt_bytes(c.weight_bytes_per_gpu)
    how = c.fraction_name
    if c.fraction_of_free_memory:  # TensorRT-LLM names its fraction: free_gpu_memory_fraction
        how = ("of the memory left after weights" if how == "gpu_memory_utilization"
               else f"{how} (of the memory left after weights)")
    memory = fmt_bytes(c.gpu.memory_bytes) + (f" ({c.gpu.memory_bytes:,} B from {memory_source})"
                                              if memory_source else "")
    fraction = (f"{c.gpu_memory_utilization:.3f}" if c.fraction_name == "mem_fraction_static"
                else f"{c.gpu_memory_utilization:.2f}")  # SGLang's default has 3 decimals
    sized = (f"{how} {fraction} · overhead {fmt_bytes(c.overhead_bytes)}"
             if c.kv_budget_source is None else
             f"KV cache set by {c.kv_budget_source} (no memory profile, no {how})")
    rows = [
        ["GPU", f"{c.gpu.name} · {memory} · {sized}" + (f" · from {source}" if source else "")],
        ["weights", f"{weights} per GPU ({c.weights_source})"],
    ]
    if c.kv_budget_bytes_per_gpu <= 0:
        rows.append(["KV budget", "none: the weights and overhead fill the GPU (see KV503)"
                     if not c.weights_fit else
                     f"none: {fmt_bytes(c.kv_budget_bytes_per_gpu)} after the weights and "
                     "overhead (see KV501)"])
        return rows
    m = c.memory
    if m is not None:  # vLLM's start-up profile in its own words; ~ marks kvlint's estimates
        rows.append(["vLLM profile",
                     f"{fmt_bytes(m.requested_bytes)} requested · model weights {weights}"
                     + (f" (LoRA buffers {fmt_bytes(m.lora_bytes)})" if m.lora_bytes else "")
                     + " · "
                     f"peak activation ~{fmt_bytes(m.activation_peak_bytes)} "
                     f"({fmt_int(m.profiled_tokens)} tokens) · non-torch memory "
                     f"~{fmt_bytes(m.non_torch_bytes)} · CUDA graph memory "
                     f"~{fmt_bytes(m.cuda_graph_bytes)}"
                     + (f" · KV cache margin ~{fmt_bytes(m.kv_margin_bytes)}"
                        if m.kv_margin_bytes else "")
                     + f" (vLLM {m.engine_version})"])
        rows.append(["KV cache", f"Available KV cache memory: "
                                 f"~{fmt_bytes(c.kv_budget_bytes_per_gpu)} · GPU KV cache size: "
                                 f"~{fmt_int(c.max_tokens)} tokens · Maximum concurrency for "
                                 f"{fmt_int(c.context)} tokens per request: "
                                 f"~{c.max_concurrency or 0:.2f}x"])
    seqs = capacity_sequences_text(c)
    capped = (f" (capped by {c.kv_tokens_capped_by}: the pool holds no more)"
              if c.kv_tokens_capped_by else "")
    given = ""
    if c.kv_budget_source is not None:  # set by hand: does it fit beside the weights?
        total = c.weight_bytes_per_gpu + c.kv_budget_bytes_per_gpu
        over = c.kv_overflow_bytes
        given = (f" · weights + KV cache: {fmt_bytes(total)} of {fmt_bytes(c.gpu.memory_bytes)}"
                 + (f": {fmt_bytes(over)} more than the GPU has, the server runs out of "
                    "memory at start" if over else ""))
    rows.append(["KV budget", f"{fmt_bytes(c.kv_budget_bytes_per_gpu)} per GPU → "
                              f"{fmt_int(c.max_tokens)} tokens{capped}{seqs}{given}"])
    rows.extend(_pool_rows(c))
    if c.tpot_floor_ms is not None:
        cross = _crossover(c)
        moe = (f" · reads {fmt_bytes(c.decode_weight_bytes_per_gpu)} of the weights per step "
               f"(MoE: the experts {c.batch} sequence{'s' if c.batch > 1 else ''} touch under "
               "uniform routing)"
               if c.decode_weight_bytes_per_gpu < 0.8 * c.weight_bytes_per_gpu else "")
        rows.append(["decode", f"TPOT ≥ {c.tpot_floor_ms:.1f} ms at batch {c.batch} x "
                               f"{fmt_int(c.decode_context)} tokens (HBM roofline){cross}{moe}"])
    elif c.gpu.bandwidth_bytes_per_s is None:
        rows.append(["decode", "no TPOT floor: the GPU is given only by its memory, its "
                               "bandwidth is unknown (name it with --gpu for the roofline)"])
    return rows


def _pool_rows(c: Capacity) -> list[list[str]]:
    """An engine with one KV pool per attention window (TensorRT-LLM): the pools sized,
    then the other setting's (``otherwise``)."""
    rows = []
    for pools in c.kv_pools:
        each = " + ".join(f"window {fmt_int(p.window)}: {p.layers} layers, "
                          f"{fmt_int(p.blocks)} blocks ({fmt_int(p.tokens)} tokens)"
                          for p in pools.pools)
        seqs = "sequence" if pools.max_sequences == 1 else "sequences"
        rows.append(["KV pools" if pools.assumed else "otherwise",
                     f"{pools.setting}{' (assumed)' if pools.assumed else ''} → {each} · "
                     f"{fmt_int(pools.tokens)} tokens printed · "
                     f"{fmt_int(pools.max_sequences)} {seqs} of {fmt_int(pools.max_seq_len)} · "
                     f"{pools.note}"])
    return rows


def _crossover(c: Capacity) -> str:
    """Where KV reads pass weight reads: above some batch, or already at one sequence (a
    crossover below 1 is no batch size)."""
    x = c.crossover_batch
    if not x:
        return ""
    if x < 1:
        return (f" · KV reads of one {fmt_int(c.decode_context)}-token sequence are "
                f"{1 / x:,.1f}x the weight reads")
    return f" · KV reads pass weight reads above batch {x:,.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _kv_heads(key_shape: tuple[int, ...]) -> str:
    return str(key_shape[-3]) if len(key_shape) > 2 else "?"


def _term_value(value: float | None, unit: str, estimated: bool = False) -> str:
    if value is None:
        return "-"
    mark = "~" if estimated else ""
    if unit == "tokens":
        return f"{mark}{fmt_int(int(value))}"
    if unit == "x":
        return f"{mark}{value:.2f}x"
    return f"{mark}{value:.2f} GiB"


def _terms_table(terms: tuple[LogTerm, ...], engine: str = "vLLM") -> str:
    """The log's memory profile next to kvlint's (``~``: kvlint's estimate)."""
    from tabulate import tabulate

    rows = [[t.term, _term_value(t.printed, t.unit), _term_value(t.predicted, t.unit,
                                                                 t.estimated),
             "-" if t.error is None else f"{t.error:+.1%}"] for t in terms]
    return tabulate(rows, headers=[f"{engine} memory profile, per GPU", "log", "kvlint", "error"],
                    tablefmt="plain", disable_numparse=True)


def _probe_block(p: ProbeReport, width: int | None = None) -> str:
    """The probe's table: one row per implementation, then its materialisations and notes."""
    from tabulate import tabulate

    if p.method in ("metrics", "log"):
        kind = "engine metrics" if p.method == "metrics" else "engine log"
        head = f"probe · {p.device} · {kind} · KV bytes per token per GPU"
    else:
        head = (f"probe · {p.device} · {p.method} · {fmt_int(p.context)} tokens x batch "
                f"{p.batch} · {p.layers} layer{'s' if p.layers != 1 else ''}")
    rows = []
    measured = [m for m in p.impls if not m.skipped]
    shared = [n for n in measured[0].notes if all(n in m.notes for m in measured[1:])] \
        if len(measured) > 1 else []
    lines = [f"all: {note}" for note in shared]
    for m in p.impls:
        if m.skipped:
            rows.append([m.impl, "-", fmt_bytes(m.theory_read_bytes), "-", "-", "-", "skipped"])
            lines.append(f"{m.impl}: skipped: {m.skipped}")
            continue
        rows.append([m.impl,
                     "-" if m.measured_read_bytes is None else fmt_bytes(m.measured_read_bytes),
                     fmt_bytes(m.theory_read_bytes), _ratio(m.read_ratio),
                     "-" if m.measured_cache_bytes is None else fmt_bytes(m.measured_cache_bytes),
                     _ratio(m.cache_ratio), m.verdict])
        lines.extend(f"{m.impl}: {x.op} writes {x.amplification:g}x the KV it reads "
                     f"({fmt_bytes(x.bytes)}{f', {x.calls} calls' if x.calls > 1 else ''})"
                     for x in m.materializations)
        lines.extend(f"{m.impl}: SDPA {_kv_heads(c.call.key_shape)} KV heads, "
                     f"enable_gqa={c.call.enable_gqa}, mask={c.call.has_mask} -> CUDA "
                     f"{c.reason}" for c in m.sdpa_calls)
        lines.extend(f"{m.impl}: {note}" for note in m.notes if note not in shared)
    table = tabulate(rows, headers=["impl", "KV read/step", "theory", "ratio", "cache",
                                    "ratio", "verdict"], tablefmt="plain")
    notes = [f"built: {p.built}"] if p.built else []
    notes += list(p.notes) + lines
    inner = None if width is None else width - 4  # the block is indented by 2 + 2
    wrapped = [wrap(n, inner, subsequent="  ") for n in notes]
    parts = [head, textwrap.indent(table, "  ")]
    if p.terms:
        engine = next((name for name in ("SGLang", "TensorRT-LLM", "LMDeploy")
                       if name in p.built), "vLLM")
        parts.append(textwrap.indent(_terms_table(p.terms, engine), "  "))
    block = "\n".join([*parts, *(textwrap.indent(w, "  ") for w in wrapped)])
    return printable(block, keep="\n")


def _header(r: ModelResult) -> str:
    parts = [r.target.ref + (f" @ {r.target.revision}" if r.target.revision else "")]
    if r.analysis is not None:
        g = r.analysis.geometry
        parts += [g.model_type or "(no model_type)", g.dtype or "dtype unspecified"]
        parts.append(r.plan.behaviour.label)
    return printable(" · ".join(parts))


def _finding(ref: str, f: Finding, display: Display = PLAIN) -> str:
    """``path:line:col: ref  CODE severity  name`` and the message below it, indented."""
    where = ""
    if f.path and f.line:
        sep = display.paint(":", fg="cyan")
        where = (f"{display.paint(printable(f.path), bold=True)}{sep}{f.line}{sep}"
                 f"{f.column or 1}{sep} ")
    label = "" if ref == f.path else f"{display.paint(printable(ref), bold=True)}  "
    severity = display.severity(f"{f.code} {f.severity.value}", f.severity)
    head = f"{where}{label}{severity}  {display.paint(printable(f.name), dim=True)}"
    return f"{head}\n{wrap(printable(f.message), display.width, '  ')}"


def _summary(run: LintRun, found: list[Finding]) -> str:
    parts = severity_counts(found)
    manifests = [r for r in run.results if r.target.kind == "manifest"]
    if manifests:
        files = len({r.target.path for r in manifests})
        served = sum(1 for r in manifests if r.analysis is not None or not any(
            f.code in ("KV903", "KV904") for f in r.findings))
        parts.insert(0, f"{served} served model{'s' if served != 1 else ''} in {files} "
                        f"file{'s' if files != 1 else ''}")
    return printable(f"{' · '.join(parts) or 'no findings'} · exit {run.exit_code} "
                     f"(fail-on: {run.fail_on})")


def _rows(r: ModelResult, width: int | None) -> list[list[str]]:
    """The model's table, each value wrapped to what the terminal leaves beside the labels
    (``tabulate`` lays the lines of a cell out under each other)."""
    rows = [[printable(cell) for cell in row] for row in _table(r)]
    if width is None:
        return rows
    label = max(len(name) for name, _ in rows)
    room = max(width - 2 - label - 2, MIN_WIDTH // 2)
    return [[name, textwrap.fill(value, room, break_on_hyphens=False,
                                 break_long_words=False)] for name, value in rows]


def _narrow(line: str) -> bool:
    """Whether ``line`` is printable and takes one column per character as tabulate measures
    it: with ``wcwidth`` when that is installed (an optional dependency of tabulate's),
    else by ``len``."""
    if not line.isprintable():
        return False
    if line.isascii():
        return True
    wcswidth = _wcswidth()
    return wcswidth is None or wcswidth(line) == len(line)


@functools.cache
def _wcswidth() -> Any:
    """``wcwidth.wcswidth``, or ``None`` where wcwidth is not installed (looked up once)."""
    import importlib

    try:
        return importlib.import_module("wcwidth").wcswidth
    except ImportError:
        return None


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def key_value_table(rows: list[list[str]]) -> str:
    """``tabulate(rows, tablefmt="plain")`` of a two-column table of labels and values, laid
    out here for the ordinary case (one column per character, no empty cell or line, none
    padded with spaces, neither column all numbers): importing tabulate costs a ``kvlint
    check`` about a tenth of its start-up. Anything else goes to tabulate itself, which the
    tests hold this to."""
    ordinary = rows and all(
        len(row) == 2 and "\n" not in row[0] and all(all(
            line and line == line.strip() and _narrow(line) for line in cell.split("\n"))
            for cell in row)
        for row in rows) and all(any(not _is_number(row[i]) for row in rows) for i in (0, 1))
    if not ordinary:
        from tabulate import tabulate

        return str(tabulate(rows, tablefmt="plain"))
    width = max(len(label) for label, _ in rows)
    lines = []
    for label, value in rows:
        for index, line in enumerate(value.split("\n") or [""]):
            lines.append(((label if index == 0 else "").ljust(width) + "  " + line).rstrip())
    return "\n".join(lines)


class TextReporter(Reporter):
    name = "text"
    description = "a table per model and the findings, for people"

    def render(self, run: LintRun) -> str:
        display = self.display
        blocks = []
        for r in run.results if not display.quiet else ():
            if r.target.kind != "model":
                continue  # manifests: findings only, quiet enough for every commit
            table = key_value_table(_rows(r, display.width))
            blocks.append(display.paint(_header(r), bold=True) + "\n"
                          + textwrap.indent(table, "  "))
            if r.probe is not None:
                blocks.append(textwrap.indent(_probe_block(r.probe, display.width), "  "))
        everything = located(run, ordered=False)  # only what is shown needs sorting
        shown, hidden = split_infos(everything, display, run.fail_on)
        blocks.extend(_finding(ref, f, display) for ref, f in in_reading_order(shown))
        if not display.quiet:
            if (line := hidden_line(hidden)) is not None:
                blocks.append(printable(line))
            blocks.append(_summary(run, [f for _, f in everything]))
        if not blocks:
            return ""
        text = "\n\n".join(blocks)
        if display.style is None:
            # Every value was escaped where it went in; this pass catches what a block's
            # own layout carried past that (it would escape colours, hence only uncoloured).
            text = printable(text, keep="\n")
        return text + "\n"


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [TextReporter]
