"""Read the figures a vLLM start-up log prints about its KV cache (pure text parsing).

A log pasted from a terminal, a GitHub issue or ``docker logs`` carries prefixes
(``(EngineCore_DP0 pid=1) INFO 10-03 16:22:17 [gpu_worker.py:298]``, ``(VllmWorker rank=0
pid=7)``, ``> app-1 |``), ANSI colours, wrapped lines and several ranks' copies of a line.
Every pattern below is searched *inside* a line, so any prefix is tolerated. Lines are
capped at :data:`MAX_LINE_CHARS` and the text at :data:`MAX_BYTES`, so a hostile file (one
huge line, binary, NUL bytes) costs bounded time and memory; every regular expression is
linear (no nested quantifiers).

What is read, and how:

* the KV-cache figures (blocks, tokens, memory profile, the refusals of a failed start) come
  from :data:`FORMATS_FILE`, ``vllm_log_formats.json``: vLLM's own format strings, read from
  its source version by version (0.4.0 to 0.34.0) by :mod:`kvlint.generators.vllm_log_table`
  (each entry cites ``path@version``). Every placeholder the table names a field for becomes
  one linear regular expression: the placeholder and the format's literal text around it
  (extended over neighbouring placeholders until it names enough words), so a line wrapped
  or cut after the figure is still read. Each entry also says the first and last version that
  prints it, and where its call sits in each release read (``file.py:line``): the lines
  matched, and the ``[file.py:line]`` their records print, narrow
  :attr:`VllmLog.version_range`;
* written here, not from the table (they are not format strings of figures): the engine
  config (``Initializing a V1 LLM engine (v0.8.3) with config: model='...', ...``), the
  ``non-default args: {...}`` dict, the banner's ``version X`` / ``model Y`` and V1's debug
  ``worker init memory snapshot: ... total_memory=XGiB`` (a dataclass ``repr``).

Figures are read from start-up records only: a line whose first format is preceded by a
quote, a brace, a backquote or the words ``request``/``prompt`` (a request log or a JSON body
quoting a start-up message) is not read. The same value printed at two precisions (``15.5083`` and
``15.51``) is one value, never "ranks that differ".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import Version

from kvlint.loaders.log_formats import MAX_BYTES as MAX_BYTES  # read_log's bound
from kvlint.loaders.log_formats import (
    MAX_JOINED_LINES,
    MAX_LINE_CHARS,
    MAX_LINES,
    STRONG,
    FormatEntry,
    Placeholder,
    VersionRange,
    field_meaning,
    format_tokens,
    joined_record,
    left_context,
    log_lines,
    number,
    parse_version,
    read_log_file,
    read_table,
    word_count,
)
from kvlint.loaders.start_failures import OutOfMemory, find_out_of_memory
from kvlint.model.vllm_groups import CONCURRENCY_REPORT_SINCE

_RANK = re.compile(r"\(([A-Za-z][\w-]{0,40}(?: rank=\d{1,6})?) pid=\d{1,10}"
                   r"(?:, ip=[\w.:-]{1,64})?\)")
_RECORD_START = re.compile(r"(?:\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:)|"
                           r"(?:\([A-Za-z][\w-]{0,40}(?: rank=\d{1,6})? pid=\d{1,10}\))")
_NUM = r"(\d[\d,]{0,30}(?:\.\d{1,12})?)"
_EXCEPTION_START = re.compile(
    r"\s{0,16}(?:[A-Za-z_][\w.]{0,80}\.)?[A-Z]\w{0,60}(?:Error|Exception):")
"""A line an exception's message starts (``ValueError: ...``, ``torch.OutOfMemoryError: ...``)."""

_ENGINE = re.compile(r"Initializing an? (?:(V[01]) )?LLM engine \(v?([^)\s]{1,80})\) with config")
_BANNER_VERSION = re.compile(r"\bversion\s+(\d[\w.+-]{0,80})")
_BANNER_MODEL = re.compile(r"\bmodel\s{2,}(\S{1,512})")

_CONFIG_FIELDS: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"\bmodel='([^']{0,1024})'"),
    "tp": re.compile(r"\btensor_parallel_size=(\d{1,6})"),
    "pp": re.compile(r"\bpipeline_parallel_size=(\d{1,6})"),
    "dtype": re.compile(r"\bdtype=(?:torch\.)?(\w{1,32})"),
    "max_model_len": re.compile(r"\bmax_seq_len=(\d{1,12})"),
    "kv_cache_dtype": re.compile(r"\bkv_cache_dtype=(\w{1,32})"),
    "enforce_eager": re.compile(r"\benforce_eager=(True|False)"),
    "block_size": re.compile(r"\bblock_size=(\d{1,6})"),
    "gpu_memory_utilization": re.compile(r"\bgpu_memory_utilization=(\d{1,3}(?:\.\d{1,12})?)"),
}
_ARGS_FIELDS: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"'model': '([^']{0,1024})'"),
    "tp": re.compile(r"'tensor_parallel_size': (\d{1,6})"),
    "pp": re.compile(r"'pipeline_parallel_size': (\d{1,6})"),
    "dtype": re.compile(r"'dtype': '(\w{1,32})'"),
    "max_model_len": re.compile(r"'max_model_len': (\d{1,12})"),
    "kv_cache_dtype": re.compile(r"'kv_cache_dtype': '(\w{1,32})'"),
    "enforce_eager": re.compile(r"'enforce_eager': (True|False)"),
    "block_size": re.compile(r"'block_size': (\d{1,6})"),
    "gpu_memory_utilization": re.compile(r"'gpu_memory_utilization': (\d{1,3}(?:\.\d{1,12})?)"),
}

FORMATS_FILE = Path(__file__).parent / "vllm_log_formats.json"
"""vLLM's format strings, per version (written by :mod:`kvlint.generators.vllm_log_table`)."""
_SNAPSHOT_TOTAL = re.compile(r"\btotal_memory=" + _NUM + r"\s?GiB")
"""V1's ``worker init memory snapshot`` line (debug level, before the model loads) is a
dataclass ``repr``: it also prints ``non_torch_memory=`` (the CUDA context, not the profile's
increase), so only its ``total_memory=`` is read and the table's patterns skip it."""
_SMALLEST = ("kv_cache_gib", "kv_in_use_gib", "kv_tokens", "concurrency_tokens", "concurrency")
"""Per-rank KV memory: vLLM sizes every worker's cache to the smallest (pipeline stages differ
in weights and activation peak), so the smallest printed figure is the one the printed tokens
come from (vllm/v1/core/kv_cache_utils.py@v0.19.0 ``get_kv_cache_configs``: the number of
blocks is the minimum over workers). Early V1 releases print each worker's "GPU KV cache size"
and concurrency before making them equal (vllm/v1/engine/core.py@v0.8.5 calls
``get_kv_cache_config`` per worker, which logs them, then ``unify_kv_cache_configs``, which
"changes the num_blocks of each worker to the smallest among all workers"): the smallest
printed is the cache that runs."""
_LARGEST = ("activation_peak_gib", "non_torch_gib")
"""Per-rank profile terms: the fullest rank's figure (pipeline stages: the last one, with the
sampler, sets the smallest KV pool)."""
_PR_10511: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(r"^" + label + r"\s{1,16}" + _NUM + unit)) for name, label, unit in (
        ("total_gpu_gib", "total_gpu_memory", r"\s?GiB"),
        ("gpu_memory_utilization", "gpu_memory_utilization", ""),
        ("usable_gib", "the current vLLM instance can use", r"\s?GiB"),
        ("weights_gib", "model weights take", r"\s?GiB"),
        ("non_torch_gib", "non_torch_memory", r"\s?GiB"),
        ("activation_peak_gib", "PyTorch activation peak memory", r"\s?GiB"),
        ("kv_cache_gib", "available_kv_cache_memory", r"\s?GiB")))
"""Not in the table: the two-column profile of vLLM PR #10511 (2024-12, between 0.6.4 and
0.6.5; merged reworded as ``the current vLLM instance can use total_gpu_memory (...)``), one
``name  value`` record per line after the header ``Memory profiling results:``."""
_PROFILE_PAIRS = re.compile(
    r"\b(total_gpu_memory|peak_torch_memory|non_torch_memory|kv_cache_size|"
    r"gpu_memory_utilization)=" + _NUM)
_PROFILE_NAMES = {"total_gpu_memory": "total_gpu_gib", "peak_torch_memory": "peak_torch_gib",
                  "non_torch_memory": "non_torch_gib", "kv_cache_size": "kv_cache_gib",
                  "gpu_memory_utilization": "gpu_memory_utilization"}
"""Not in the table either: a development build's one-line profile of the same time
(``Memory profiling results: duration=1.09 seconds, total_gpu_memory=79.10GiB, ...,
non_torch_memory=5.21GiB, kv_cache_size=35.42GiB, gpu_memory_utilization=0.90``, a main-branch
log of 2024-12-06, between 0.6.4.post1 and 0.6.5): the same names as 0.6.4's
``profile_results`` record (worker.py@v0.6.4.post1 lines 232-243), comma-separated, read by
name."""
_QUOTING = re.compile(r"[\"'{`]|request|prompt", re.IGNORECASE)
"""Before a match on its line: a request log or a JSON body quoting a start-up message."""
_OPENING_QUOTE = re.compile(
    r"^\s{0,16}(?:>\s{0,4})?[\"'`](?:\w{1,40}(?:Error|Exception):\s{1,4})?$")
"""The only text before a match that is not a quotation: one opening quote at the start of the
line, perhaps with an exception's name (a start-up message pasted in quotes by a poster,
``"ValueError: The model's max seq len ...``)."""
_BLANKS = r"[ \t]{1,16}"
_WORD = re.compile(r"[A-Za-z_]{3,40}")
_DEVICE = r"[\w:-]{1,24}"
_TEXT = r".{0,160}?"


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    gate: str
    head: str
    """The format's first words on this line (a match's prefix is checked before them)."""
    reads: tuple[tuple[int, str], ...]
    """(entry index, field)."""


def _number_pattern(negative: bool) -> str:
    return ("-?" if negative else "") + r"\d[\d,]{0,30}(?:\.\d{1,12})?"


def _field(meaning: str) -> tuple[str, bool]:
    """(field name, negative allowed) of a table ``fields`` item; ``-`` for one not read."""
    name, _, negative = field_meaning(meaning)
    return name, negative


def _inner_word(literals: list[str]) -> str:
    """The longest whole word of the pattern's literals (a cheap substring gate)."""
    best = ""
    for text in literals:
        for found in _WORD.finditer(text):
            inner = found.start() > 0 and found.end() < len(text)
            if inner and len(found.group()) > len(best):
                best = found.group()
    if not best:
        words = [w for text in literals for w in _WORD.findall(text)]
        best = max(words, key=len, default="")
    return best


def _segments(tokens: list[str | Placeholder]) -> list[list[str | int]]:
    """Per printed line, the literals and the placeholders' indices."""
    segments: list[list[str | int]] = [[]]
    count = 0
    for token in tokens:
        if isinstance(token, Placeholder):
            segments[-1].append(count)
            count += 1
            continue
        parts = token.split("\n")
        for index, part in enumerate(parts):
            if index:
                segments.append([])
            if part:
                segments[-1].append(part)
    return segments


def _or_cut_short(part: str, full: str) -> str:
    """The words after a figure (``" GiB memory and "``), or a line that ends after some of
    them: a poster who trimmed ``and 12.3 seconds`` off a pasted line (the figure's unit
    stays required, so the format is still told from its siblings)."""
    words = part.split()
    if len(words) < 2 or not part.startswith(" "):
        return full
    cuts = [_BLANKS + _BLANKS.join(re.escape(w) for w in words[:k]) + r"[ \t]*$"
            for k in range(1, len(words))]
    return "(?:" + "|".join([full, *cuts]) + ")"


def _entry_patterns(entry: FormatEntry) -> list[tuple[str, str, str, str]]:
    """(regex, gate word, head, field) for each placeholder of ``entry`` that is read."""
    fields = [_field(m) for m in entry.fields]
    out = []
    for segment in _segments(format_tokens(entry.format, entry.style)):
        literals = [i for i in segment if isinstance(i, str)]
        head = literals[0].strip()[:40] if literals else ""
        for position, item in enumerate(segment):
            if not isinstance(item, int) or item >= len(fields) or fields[item][0] in ("-",
                                                                                      "device"):
                continue
            _, left = left_context(segment, position)
            while left and isinstance(left[0], int) and fields[left[0]][0] != "device":
                left.pop(0)
            strength = sum(word_count(i) for i in left)
            right: list[str | int] = []
            after = position + 1
            if after < len(segment) and isinstance(segment[after], str):
                cut = re.split(r"[,;()\[\]]|\. ", str(segment[after]))[0][:40]
                if strength >= STRONG or cut != segment[after]:
                    right.append(cut)
                    after = len(segment) if strength >= STRONG else after
            while strength < STRONG and after < len(segment):
                right.append(segment[after])
                strength += word_count(segment[after])
                after += 1
            parts = []
            for at, part in enumerate([*left, -1, *right]):
                if isinstance(part, str):
                    text = re.escape(part)
                    if part.startswith("# "):
                        text = "(?:# )?" + re.escape(part[2:])
                    # a space of the format is any run of blanks: a pasted or aligned line
                    text = text.replace("\\ ", _BLANKS)
                    if at == len(left) + len(right) and at > len(left):
                        text = _or_cut_short(part, text)
                    parts.append(text)
                elif part == -1:
                    parts.append("(" + _number_pattern(fields[item][1]) + ")")
                else:
                    name, negative = fields[part]
                    parts.append(_DEVICE if name == "device" else _TEXT if name == "-"
                                 else "(?:" + _number_pattern(negative) + ")")
            regex = "".join(parts)
            if regex.startswith(("(?:# )?", "(")) or regex[:1].isalnum():
                regex = r"(?<![A-Za-z_])" + regex
            if not right or right == [""]:
                regex += r"(?!\d|\.\d)"
            out.append((regex, _inner_word([p for p in [*left, *right] if isinstance(p, str)]),
                        head, fields[item][0]))
    return out


@functools.lru_cache(maxsize=1)
def format_table() -> tuple[tuple[str, ...], tuple[FormatEntry, ...]]:
    """(versions read, entries) of :data:`FORMATS_FILE`."""
    data, entries = read_table(FORMATS_FILE)
    return tuple(data["versions"]), entries


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[dict[str, tuple[_Pattern, ...]], tuple[_Pattern, ...]]:
    """The compiled patterns by gate word (and those with none), compiled on first use."""
    grouped: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for index, entry in enumerate(format_table()[1]):
        for regex, gate, head, name in _entry_patterns(entry):
            grouped.setdefault((regex, gate, head), []).append((index, name))
    by_gate: dict[str, list[_Pattern]] = {}
    ungated: list[_Pattern] = []
    for (regex, gate, head), reads in grouped.items():
        pattern = _Pattern(re.compile(regex), gate, head, tuple(reads))
        (by_gate.setdefault(gate, []) if gate else ungated).append(pattern)
    return {k: tuple(v) for k, v in by_gate.items()}, tuple(ungated)


@dataclass(frozen=True)
class VllmLog:
    """What one vLLM start-up log says (``None``: the log does not print it)."""

    model: str | None = None
    version: str | None = None
    engine: str | None = None
    """``V0`` or ``V1`` when the engine-config line names it."""
    tp: int | None = None
    pp: int | None = None
    dtype: str | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    enforce_eager: bool | None = None
    block_size: int | None = None
    weights_gib: float | None = None
    """Model weights per GPU (V0 prints "GB" for what it computes in GiB)."""
    non_torch_gib: float | None = None
    activation_peak_gib: float | None = None
    peak_torch_gib: float | None = None
    """V0's ``peak_torch_memory`` (weights included)."""
    consumed_gib: float | None = None
    cuda_graph_gib: float | None = None
    total_gpu_gib: float | None = None
    kv_cache_gib: float | None = None
    """The KV pool per GPU: ``Available KV cache memory``, V0's ``kv_cache_size=`` or
    ``reserved for KV Cache is``."""
    kv_in_use_gib: float | None = None
    kv_cache_set_gib: float | None = None
    """The KV cache size ``--kv-cache-memory-bytes`` gave (vLLM then skips its memory
    profile and reserves exactly that)."""
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    kv_tokens: int | None = None
    """``GPU KV cache size: N tokens``."""
    concurrency_tokens: int | None = None
    concurrency: float | None = None
    max_tokens_error: int | None = None
    """V0's start-up error: the tokens the KV cache can store."""
    needed_gib: float | None = None
    """V1's start-up error: the KV memory one max-length request needs ..."""
    needed_len: int | None = None
    """... at this max seq len."""
    estimated_max_len: int | None = None
    """V1's refusal: ``the estimated maximum model length is N`` (what the KV pool fits)."""
    usable_gib: float | None = None
    """V0: ``total_gpu_memory (X GiB) x gpu_memory_utilization (Y) = Z GiB``: Z."""
    free_on_start_gib: float | None = None
    """``Free memory on device (F/T GiB) on startup`` / ``Initial free memory``: F."""
    requested_gib: float | None = None
    """``Desired GPU memory utilization is (U, R GiB)``: R."""
    max_num_batched_tokens: int | None = None
    """``Chunked prefill is enabled with max_num_batched_tokens=N``."""
    version_range: tuple[str, str] | None = None
    """The vLLM versions this log can come from: the printed version (both ends), else the
    intersection of the table's ``[first, last]`` over the lines read (versions kvlint read
    vLLM's source at; the true bounds reach to the neighbouring versions read)."""
    formats: tuple[str, ...] = ()
    """The ids of the table entries the lines read matched (vllm_log_formats.json)."""
    ranks: tuple[str, ...] = ()
    """Process labels seen in prefixes (``EngineCore_DP0``, ``Worker_TP1``...)."""
    lines: int = 0
    truncated: bool = False
    """The file was longer than :data:`MAX_BYTES` (only its start was read)."""
    notes: tuple[str, ...] = ()
    raw: dict[str, str] = field(default_factory=dict, compare=False)
    """The matched text of each field, as printed (for the report)."""
    oom: OutOfMemory | None = None
    """The out-of-memory error a failed start ended with
    (:func:`kvlint.loaders.start_failures.find_out_of_memory`)."""
    kv_cache_gib_by_rank: tuple[tuple[str, str], ...] = ()
    """``(process label, value as printed)`` of each rank's "Available KV cache memory"
    where ranks print different figures (pipeline stages: each its own)."""

    @property
    def capacity_tokens(self) -> int | None:
        """Tokens the KV pool holds per GPU: the printed size, else blocks x block size."""
        if self.kv_tokens is not None:
            return self.kv_tokens
        if self.gpu_blocks is not None:
            return self.gpu_blocks * (self.block_size or 16)
        return None

    @property
    def kv_memory_gib(self) -> float | None:
        """The KV pool in GiB: the smaller of the available memory and the memory in use
        (a pipeline-parallel log prints "Available KV cache memory" for its first stage only;
        every stage's "in use" line shows the smallest, which sized the cache)."""
        known = [v for v in (self.kv_cache_gib, self.kv_in_use_gib, self.kv_cache_set_gib)
                 if v is not None]
        return min(known) if known else None

    def has_kv_figures(self) -> bool:
        return self.kv_memory_gib is not None and self.capacity_tokens is not None


def _same_value(one: str, other: str) -> bool:
    """One number printed at two precisions (15.5083 and 15.51): the finer rounds to the
    coarser (numbers are not ranks)."""
    try:
        a, b = number(one), number(other)
    except ValueError:
        return one == other
    places = min(len(t.partition(".")[2]) for t in (one, other))
    return abs(a - b) <= 0.5 * 10.0 ** -places + 1e-9


def _finer(one: str, other: str) -> str:
    return max(one, other, key=lambda t: len(t.partition(".")[2]))


class _Fields:
    """First value per field (per rank order; the smallest of :data:`_SMALLEST`, the largest
    of :data:`_LARGEST`), with a note when ranks disagree."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.rank_of: dict[str, str] = {}
        self.differs: dict[str, set[str]] = {}
        self.kv_by_rank: dict[str, str] = {}

    def put(self, name: str, value: str, rank: str) -> None:
        if name == "kv_cache_gib" and rank and (rank in self.kv_by_rank or
                                                 len(self.kv_by_rank) < 64):
            self.kv_by_rank.setdefault(rank, value)
        old = self.values.get(name)
        if old is None:
            self.values[name] = value
            self.rank_of[name] = rank
        elif _same_value(old, value):
            self.values[name] = _finer(old, value)
        elif self._replaces(name, value):
            self.differs.setdefault(name, {old}).add(value)
            self.values[name] = value
            self.rank_of[name] = rank
        else:
            seen = self.differs.setdefault(name, {old})
            if len(seen) < 8 and not any(_same_value(s, value) for s in seen):
                seen.add(value)

    def _replaces(self, name: str, value: str) -> bool:
        if name not in _SMALLEST and name not in _LARGEST:
            return False
        try:
            new, old = number(value), number(self.values[name])
        except ValueError:
            return False
        return new < old if name in _SMALLEST else new > old


class _Versions:
    """The intersection of the ``[first, last]`` of the entries each line matched (the ids of
    a line's entries kept only where they agree with it)."""

    def __init__(self) -> None:
        self.range = VersionRange()
        self.ids: dict[str, None] = {}

    def narrow(self, entries: set[int], at: tuple[str, int] | None = None) -> None:
        """Narrow to the releases that print the line's formats; to those whose call sits
        at the record's ``[file.py:line]`` (``at``) where a release read has it there."""
        table = format_table()[1]
        bounds = [(parse_version(table[i].first), parse_version(table[i].last)) for i in entries]
        lows = [lo for lo, _ in bounds if lo is not None]
        highs = [hi for _, hi in bounds if hi is not None]
        if not lows or not highs or not self.range.narrow_to(min(lows), max(highs)):
            return
        for i in sorted(entries):
            if len(self.ids) < 64:
                self.ids.setdefault(table[i].id, None)
        placed = [v for v in (parse_version(r) for i in entries
                              for r in table[i].releases_at(*at)) if v is not None] \
            if at is not None else []
        if placed:
            self.range.narrow_to(min(placed), max(placed))


def parse_text(text: str) -> VllmLog:
    """The figures of the vLLM log ``text`` (pure; never raises on odd input)."""
    lines = list(log_lines(text))
    fields = _Fields()
    versions = _Versions()
    ranks: dict[str, None] = {}
    for index, line in enumerate(lines):
        # cheap substring gates keep a long hostile line from meeting every pattern
        # the innermost prefix names the process: (EngineCore_DP0 pid=1) (RayWorkerWrapper ...)
        labels = _RANK.findall(line[:512]) if " pid=" in line else []
        rank = labels[-1] if labels else ""
        if rank and len(ranks) < 64:
            ranks.setdefault(rank, None)
        # an exception's wrapped message is one message: its figures may sit on any line
        own = None if _EXCEPTION_START.match(line[:256]) else len(line.rstrip())
        _parse_line(lines, index, _with_continuation(lines, index), rank, fields, versions,
                    own=own)
    truncated = len(lines) >= MAX_LINES
    log = replace(_build(fields, tuple(ranks), len(lines), versions),
                  oom=find_out_of_memory(lines))
    if truncated:
        log = replace(log, truncated=True,
                      notes=(*log.notes, f"only the first {MAX_LINES:,} lines were read"))
    return log


def _with_continuation(lines: list[str], index: int) -> str:
    """A record's line with the next line joined when that one is its continuation (no record
    start of its own: a message wrapped by a terminal or a poster, ``...reserved`` /
    ``for KV Cache is 21.43GiB``); the line alone otherwise."""
    line = lines[index]
    if index + 1 >= len(lines):
        return line
    # an exception's message a poster wrapped over lines (``ValueError: To serve at least
    # one request ... larger than the available`` / ``KV cache memory (0.53 GiB).``) is
    # followed over a few of them; a log record over one
    more = MAX_JOINED_LINES if _EXCEPTION_START.match(line[:256]) else \
        1 if _RECORD_START.search(line[:256]) else 0
    joined = line.rstrip()
    for follow in lines[index + 1:index + 1 + more]:
        if not follow.strip() or _RECORD_START.search(follow[:256]) or \
                _EXCEPTION_START.match(follow[:256]) or follow.lstrip().startswith(
                    ("File \"", "Traceback")):
            break
        joined += " " + follow.strip()
    return joined[:MAX_LINE_CHARS]


def _origin(line: str, start: int, head: str) -> int:
    """Where the format matched at ``start`` begins on ``line`` (its first words)."""
    cut = line.rfind(head, 0, start + len(head)) if head else -1
    return cut if 0 <= cut <= start else start


def _parse_line(lines: list[str], index: int, line: str, rank: str, fields: _Fields,
                versions: _Versions, own: int | None = None) -> None:
    """``line`` (perhaps with its continuation joined after its first ``own`` characters: a
    figure is read there only from a format that starts on the line itself)."""
    if "LLM engine" in line:
        engine = _ENGINE.search(line)
        if engine and not _QUOTING.search(line[:_origin(line, engine.start(),
                                                          "Initializing")]):
            if engine.group(1):
                fields.put("engine", engine.group(1), rank)
            fields.put("version", engine.group(2).lstrip("v"), rank)
            joined = joined_record(lines, index, _RECORD_START)
            for name, pattern in _CONFIG_FIELDS.items():
                found = pattern.search(joined)
                if found:
                    fields.put(name, found.group(1), rank)
    if "non-default args" in line:
        for name, pattern in _ARGS_FIELDS.items():
            found = pattern.search(line)
            if found:
                fields.put(name, found.group(1), rank)
    if "\u2588" in line:  # the banner's block letters
        version = _BANNER_VERSION.search(line)
        if version:
            fields.put("version", version.group(1), rank)
        model = _BANNER_MODEL.search(line)
        if model:
            fields.put("model", model.group(1), rank)
    if "memory snapshot" in line:
        found = _SNAPSHOT_TOTAL.search(line)
        if found:
            fields.put("total_gpu_gib", found.group(1), rank)
        return
    message = line.rsplit("] ", 1)[-1]
    if message.startswith("Memory profiling results: duration="):
        for found in _PROFILE_PAIRS.finditer(message[:2048]):
            fields.put(_PROFILE_NAMES[found.group(1)], found.group(2), rank)
        return
    if "  " in message and message[:1] in "tganmPp":
        for name, pattern in _PR_10511:
            found = pattern.search(message)
            if found:
                fields.put(name, found.group(1), rank)
    by_gate, ungated = _patterns()
    words = set(_WORD.findall(line))
    hits: list[tuple[_Pattern, re.Match[str]]] = []
    for candidate in [p for gate in sorted(words.intersection(by_gate)) for p in by_gate[gate]] \
            + list(ungated):
        match = candidate.regex.search(line)
        if match is not None and (own is None or match.start() < own):
            hits.append((candidate, match))
    if not hits:
        return
    # a request log or a JSON body quoting start-up text: a quote, a brace or the words
    # request/prompt before the first format on the line
    origin = min(_origin(line, hit.start(), source.head) for source, hit in hits)
    before = line[:origin]
    if _QUOTING.search(before) and not _OPENING_QUOTE.match(before):
        return
    matched: set[int] = set()
    for source, hit in hits:
        names: set[str] = set()
        for entry, name in source.reads:
            matched.add(entry)
            if name not in names:
                names.add(name)
                fields.put(name, hit.group(1), rank)
    place = _PLACE.search(line[:origin] if origin < 320 else line[:320])
    versions.narrow(matched, (place.group(1), int(place.group(2))) if place else None)


_PLACE = re.compile(r"(?:^|[\s\[])([\w.-]{1,80}\.py):(\d{1,6})\]")
"""Where vLLM's record says it was logged: ``[kv_cache_utils.py:634]`` (``%(filename)s:
%(lineno)d``; V0's ``llm_engine.py:87]`` without the opening bracket)."""

_INTS = ("tp", "pp", "max_model_len", "block_size", "gpu_blocks", "cpu_blocks", "kv_tokens",
         "concurrency_tokens", "max_tokens_error", "needed_len", "estimated_max_len",
         "max_num_batched_tokens")
_FLOATS = ("gpu_memory_utilization", "weights_gib", "non_torch_gib", "activation_peak_gib",
           "peak_torch_gib",
           "consumed_gib", "cuda_graph_gib", "total_gpu_gib", "kv_cache_gib", "kv_in_use_gib",
           "kv_cache_set_gib", "concurrency", "needed_gib", "usable_gib", "free_on_start_gib",
           "requested_gib")
_STRINGS = ("model", "version", "engine", "dtype", "kv_cache_dtype")


def _build(fields: _Fields, ranks: tuple[str, ...], count: int, versions: _Versions) -> VllmLog:
    values: dict[str, object] = {}
    for name, text in fields.values.items():
        try:
            if name in _INTS:
                values[name] = int(number(text))
            elif name in _FLOATS:
                values[name] = number(text)
            elif name == "enforce_eager":
                values[name] = text == "True"
            elif name in _STRINGS:
                values[name] = text
        except (ValueError, OverflowError):
            continue
    notes = []
    for name, seen in sorted(fields.differs.items()):
        shown = ", ".join(sorted(seen)[:4])
        where = fields.rank_of[name] or "the first line"
        which = ("the smallest" if name in _SMALLEST else "the largest" if name in _LARGEST
                 else "the first")
        notes.append(f"{name} differs across ranks or restarts ({shown}); "
                     f"used {which}, from {where}")
    workers = [r for r in ranks if not r.startswith("APIServer")]
    if len(workers) > 1:
        notes.append(f"lines from {len(workers)} processes ({', '.join(workers[:8])}): "
                     "figures are per GPU, taken from the first that printed each (KV memory: the "
                     "smallest; activation peak and non-torch memory: the largest)")
    current = versions.range.as_tuple()
    if _partial_block_report(values) and current is not None and \
            Version(current[1]) >= CONCURRENCY_REPORT_SINCE:
        versions.range.narrow_to(CONCURRENCY_REPORT_SINCE, Version(current[1]))
        notes.append(f"its GPU KV cache size ({values['kv_tokens']:,} tokens) is not "
                     "whole blocks: vLLM prints it as max_concurrency x max_model_len from "
                     f"{CONCURRENCY_REPORT_SINCE} on")
    printed = fields.values.get("version")
    version_range: tuple[str, str] | None = None
    if printed is not None and parse_version(printed) is not None:
        version_range = (printed, printed)
    else:
        version_range = versions.range.as_tuple()
    if versions.range.conflict:
        notes.append("lines worded as different vLLM versions print them (several logs "
                     "joined?); the version range is the one most lines agree on")
    by_rank = tuple(fields.kv_by_rank.items()) if "kv_cache_gib" in fields.differs else ()
    return VllmLog(**values, ranks=ranks, lines=count,  # type: ignore[arg-type]
                   version_range=version_range, formats=tuple(versions.ids),
                   notes=tuple(notes), raw=dict(fields.values), kv_cache_gib_by_rank=by_rank)


def _partial_block_report(values: Mapping[str, object]) -> bool:
    """Whether the printed "GPU KV cache size" is not a whole number of blocks (the printed
    block size, else 16, the smallest default), which only the concurrency report prints
    (``int(max_concurrency x max_model_len)`` from :data:`CONCURRENCY_REPORT_SINCE`; through
    0.20.0 ``num_blocks // groups x block``, kv_cache_utils.py@v0.20.0, and V1 before the
    hybrid manager ``num_blocks x block``, @v0.8.5: whole blocks either way)."""
    tokens, block = values.get("kv_tokens"), values.get("block_size")
    if not isinstance(tokens, int) or tokens <= 0:
        return False
    return tokens % 16 != 0 and not (isinstance(block, int) and block > 0 and
                                     tokens % block == 0)


def read_log(path: Path) -> VllmLog:
    """Parse the vLLM log file ``path`` (its first :data:`MAX_BYTES` bytes)."""
    # opened without blocking (a FIFO with no writer does not hang the open) and read only
    # as a regular file (a FIFO, a device such as /dev/zero, a directory: refused)
    return read_log_file(path, "a vLLM", parse_text)
