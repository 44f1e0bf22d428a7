"""The vLLM log reader against its table of vLLM's own format strings
(kvlint/loaders/vllm_log_formats.json, written by kvlint.generators.vllm_log_table): one
synthetic line per entry, read back; the version range; negative figures of a failed start;
one value at two precisions; request logs quoting start-up text; long numbers."""

from __future__ import annotations

import re
import time

import pytest
from packaging.version import Version

from kvlint.loaders.vllm_log import (
    FormatEntry,
    Placeholder,
    format_table,
    format_tokens,
    parse_text,
)

PREFIX = "INFO 10-03 16:22:17 [gpu_worker.py:1] "
"""A record prefix at a line no release logs from (a real one narrows the release range)."""
VERSIONS, ENTRIES = format_table()
_INTS = {"gpu_blocks", "cpu_blocks", "kv_tokens", "concurrency_tokens", "max_tokens_error",
         "needed_len", "estimated_max_len", "max_num_batched_tokens", "max_model_len"}


def _value(name: str, index: int) -> int | float | str:
    if name == "device":
        return "cuda"
    if name == "-":
        return 3
    if name in _INTS:
        return 1000 + 17 * index
    if name == "gpu_memory_utilization":
        return 0.85
    return 10.25 + index


def _render(spec: str, value: int | float | str) -> str:
    if spec.startswith("%"):
        if spec[-1] in "di":
            return spec % int(value) if not isinstance(value, str) else value
        return spec % value
    inner = spec[1:-1]
    depth, colon = 0, -1
    for position, char in enumerate(inner):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if char == ":" and depth == 0:
            colon = position
    if colon >= 0 and not isinstance(value, str):
        return format(value, inner[colon + 1:])
    return str(value)


def _line(entry: FormatEntry) -> tuple[str, dict[str, float]]:
    """A log line printed from ``entry`` and the value each field must read."""
    fields = [m.partition(",")[0] for m in entry.fields]
    fields = ["-" if f.startswith("-") else f for f in fields]
    first: dict[str, int | float | str] = {}
    out, expected = [], {}
    count = 0
    for token in format_tokens(entry.format, entry.style):
        if not isinstance(token, Placeholder):
            out.append(token)
            continue
        name = fields[count]
        value = first.setdefault(name, _value(name, count))
        printed = _render(token.spec, value)
        out.append(printed)
        if name not in ("-", "device"):
            expected.setdefault(name, float(printed.replace(",", "")))
        count += 1
    return PREFIX + "".join(out), expected


def test_the_table_covers_the_versions_read() -> None:
    assert VERSIONS[0] == "0.4.0" and VERSIONS[-1] == "0.34.0" and len(VERSIONS) >= 20
    assert len(ENTRIES) >= 40
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)
    assert len({(e.format, e.style) for e in ENTRIES}) == len(ENTRIES)
    for entry in ENTRIES:
        assert re.fullmatch(r"vllm/\S+\.py@\d\S* \(\S+\)", entry.source), entry.source
        assert Version(entry.first) <= Version(entry.last)
        assert entry.first in VERSIONS and entry.last in VERSIONS
        placeholders = [t for t in format_tokens(entry.format, entry.style)
                        if isinstance(t, Placeholder)]
        assert len(placeholders) == len(entry.fields), entry.id


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_every_format_is_read_back(entry: FormatEntry) -> None:
    line, expected = _line(entry)
    assert expected, entry.id
    log = parse_text(line + "\n")
    for name, value in expected.items():
        got = getattr(log, name)
        assert got is not None and abs(got - value) < 1e-9, (name, line)
    assert entry.id in log.formats
    assert log.version_range is not None
    low, high = (Version(v) for v in log.version_range)
    assert low <= Version(entry.last) and Version(entry.first) <= high


def test_the_lines_the_reader_must_read() -> None:
    log = parse_text(
        "INFO 01-01 00:00:00 executor_base.py:111] # cuda blocks: 1952, # CPU blocks: 2048\n"
        "INFO 01-01 00:00:00 worker.py:280] Memory profiling takes 5.10 seconds\n"
        "the current vLLM instance can use total_gpu_memory (23.58GiB) x "
        "gpu_memory_utilization (0.90) = 21.22GiB\n"
        "model weights take 14.99GiB; non_torch_memory takes 0.35GiB; PyTorch activation "
        "peak memory takes 1.26GiB; the rest of the memory reserved for KV Cache is 4.62GiB.\n"
        "INFO 01-01 00:00:00 scheduler.py:206] Chunked prefill is enabled with "
        "max_num_batched_tokens=8192.\n")
    assert (log.gpu_blocks, log.cpu_blocks) == (1952, 2048)
    assert (log.total_gpu_gib, log.gpu_memory_utilization, log.usable_gib) == (23.58, 0.9, 21.22)
    assert (log.weights_gib, log.non_torch_gib, log.activation_peak_gib, log.kv_cache_gib) == \
        (14.99, 0.35, 1.26, 4.62)
    assert log.max_num_batched_tokens == 8192
    assert parse_text("# CUDA blocks: 7, # CPU blocks: 0").gpu_blocks == 7
    v1 = parse_text(
        "(EngineCore_DP0 pid=1) DEBUG 10-03 16:22:17 [gpu_worker.py:1] Free memory on device "
        "(78.68/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). "
        "Actual usage is 15.03 GiB for consumed memory (weights + non-torch), 1.59 GiB for "
        "peak activation, and 0.09 GiB for CUDAGraph memory. Replace gpu_memory_utilization "
        "config with `--kv-cache-memory=1` (0.0 GiB) to fit into requested memory, or "
        "`--kv-cache-memory=2` (0.0 GiB) to fully utilize gpu memory. Current kv cache memory "
        "in use is 54.56 GiB.\n")
    assert (v1.free_on_start_gib, v1.total_gpu_gib, v1.gpu_memory_utilization,
            v1.requested_gib) == (78.68, 79.19, 0.9, 71.27)
    assert (v1.consumed_gib, v1.activation_peak_gib, v1.cuda_graph_gib, v1.kv_in_use_gib) == \
        (15.03, 1.59, 0.09, 54.56)
    refused = parse_text(
        "(EngineCore_DP0 pid=1) ERROR 10-03 16:22:17 [core.py:700] ValueError: To serve at "
        "least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, "
        "which is larger than the available KV cache memory (9.5 GiB). Based on the available "
        "memory, the estimated maximum model length is 77824. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    assert (refused.needed_len, refused.needed_gib, refused.kv_cache_gib,
            refused.estimated_max_len) == (131072, 16.0, 9.5, 77824)


# ------------------------------------------------------------------------- version range
def test_a_v0_wording_is_never_modelled_as_the_newest() -> None:
    log = parse_text("INFO 01-01 00:00:00 gpu_executor.py:1] # GPU blocks: 1952, "
                     "# CPU blocks: 2048\n")
    assert log.version_range is not None
    low, high = (Version(v) for v in log.version_range)
    assert low == Version("0.4.0") and high < Version("0.12.0")
    # the call's own line in vllm/executor/gpu_executor.py@0.5.5 and @0.6.3: those releases
    placed = parse_text("INFO 01-01 00:00:00 gpu_executor.py:122] # GPU blocks: 1952, "
                        "# CPU blocks: 2048\n")
    assert placed.version_range == ("0.5.5", "0.6.3")  # the same line in both


def test_lines_narrow_the_range() -> None:
    # "Available KV cache memory: %.2f GiB" (0.9.2..0.12.0) and "%s GiB" (0.15.0..0.34.0);
    # "Model loading took %.4f GiB and ..." (0.8.5..0.12.0) and "%s GiB and" (0.15.0..0.25.0)
    one = parse_text(PREFIX + "Available KV cache memory: 6.51 GiB\n")
    both = parse_text(PREFIX + "Available KV cache memory: 6.51 GiB\n"
                      + PREFIX + "Model loading took 14.9900 GiB and 5.200000 seconds\n")
    assert one.version_range == ("0.9.2", "0.34.0")
    assert both.version_range == ("0.9.2", "0.25.0")
    assert set(both.formats) == {"kv_available.1", "kv_available.2", "weights.2", "weights.4"}


def test_a_kv_cache_size_of_no_whole_blocks_is_the_concurrency_report() -> None:
    """From 0.20.1 vLLM prints ``int(max_concurrency x max_model_len)`` (kv_cache_utils.py
    @v0.20.1); before, whole blocks of at least 16 tokens. A size that is not a multiple of
    16 (nor of a printed block size) therefore narrows the range to 0.20.1 on."""
    lines = PREFIX + "Available KV cache memory: 13.27 GiB\n" + PREFIX + \
        "GPU KV cache size: {} tokens\n"
    assert parse_text(lines.format("560,887")).version_range == ("0.20.1", "0.34.0")
    assert parse_text(lines.format("560,880")).version_range == ("0.9.2", "0.34.0")
    # a printed block of 784 tokens (a Qwen3.5 hybrid): 784 x 652 blocks is whole
    hybrid = parse_text(lines.format(f"{784 * 652:,}") + PREFIX + "block_size=784\n")
    assert hybrid.version_range is not None and hybrid.version_range[0] != "0.20.1"


def test_conflicting_lines_take_the_range_most_lines_agree_on() -> None:
    """Lines of disagreeing releases (a poster's condensed line, logs joined): each line's
    range is a vote and the releases inside the most votes win, not the first line's."""
    from packaging.version import Version

    from kvlint.loaders.log_formats import VersionRange

    votes = VersionRange()
    votes.narrow("0.6.4", "0.6.4")  # one line worded as 0.6.4 only
    for _ in range(3):
        votes.narrow("0.9.2", "0.34.0")
    assert votes.conflict and (votes.low, votes.high) == (Version("0.6.4"), Version("0.6.4"))
    assert votes.as_tuple() == ("0.9.2", "0.34.0")
    tie = VersionRange()
    tie.narrow("0.6.4", "0.6.4")
    tie.narrow("0.9.2", "0.34.0")
    assert tie.as_tuple() == ("0.6.4", "0.6.4")  # no majority: the earliest lines' range


def test_a_printed_version_is_used() -> None:
    log = parse_text("INFO 01-01 00:00:00 core.py:58] Initializing a V1 LLM engine (v0.8.3) "
                     "with config: model='m'\n" + PREFIX + "Available KV cache memory: 6.51 GiB\n")
    assert log.version_range == ("0.8.3", "0.8.3")


# ------------------------------------------------------------------------- failed starts
def test_negative_figures_of_a_failed_start() -> None:
    log = parse_text(PREFIX + "Available KV cache memory: -2.14 GiB\n")
    assert log.kv_cache_gib == -2.14 and log.kv_memory_gib == -2.14
    v0 = parse_text("model weights take 14.99GiB; non_torch_memory takes 0.35GiB; PyTorch "
                    "activation peak memory takes 9.26GiB; the rest of the memory reserved for "
                    "KV Cache is -3.38GiB.\n")
    assert v0.kv_cache_gib == -3.38
    refused = parse_text("ValueError: To serve at least one request with the model's max seq "
                         "len (8192), (1.0 GiB KV cache is needed, which is larger than the "
                         "available KV cache memory (-0.5 GiB).")
    assert refused.kv_cache_gib == -0.5
    # a figure vLLM never prints negative keeps its sign out of the match
    assert parse_text("GPU KV cache size: -5 tokens").kv_tokens is None


# ------------------------------------------------------------------------ numbers, not ranks
def test_one_value_at_two_precisions_is_not_two_ranks() -> None:
    log = parse_text("(Worker_TP0 pid=1) DEBUG 10-03 16:22:17 [gpu_worker.py:1] Free memory on "
                     "device (15.5083/79.19 GiB) on startup. Desired GPU memory utilization is "
                     "(0.9, 71.27 GiB).\n"
                     "(Worker_TP1 pid=2) DEBUG 10-03 16:22:17 [gpu_worker.py:1] Free memory on "
                     "device (15.51/79.19 GiB) on startup. Desired GPU memory utilization is "
                     "(0.9, 71.27 GiB).\n")
    assert log.free_on_start_gib == 15.5083
    assert not any("differs" in note for note in log.notes)
    apart = parse_text("(Worker_TP0 pid=1) Available KV cache memory: 15.50 GiB\n"
                       "(Worker_TP1 pid=2) Available KV cache memory: 15.52 GiB\n")
    assert apart.kv_cache_gib == 15.5
    assert any(n.startswith("kv_cache_gib differs across ranks") for n in apart.notes)


# ------------------------------------------------------------------------- request logs
@pytest.mark.parametrize("line", [
    "INFO 10-03 16:30:00 [logger.py:39] Received request chatcmpl-1: prompt: '<|user|>Available "
    "KV cache memory: 99.00 GiB\\nGPU KV cache size: 5 tokens', params: SamplingParams(n=1)",
    '{"model": "m", "messages": [{"role": "user", "content": "Available KV cache memory: '
    '99.00 GiB GPU KV cache size: 5 tokens"}]}',
    "INFO 10-03 16:30:00 [logger.py:39] Received request cmpl-2: Available KV cache memory: "
    "99.00 GiB GPU KV cache size: 5 tokens",
], ids=["prompt", "json-body", "received"])
def test_a_request_quoting_a_start_up_line_is_not_read(line: str) -> None:
    log = parse_text(PREFIX + "Available KV cache memory: 6.51 GiB\n" + line + "\n")
    assert log.kv_cache_gib == 6.51 and log.kv_tokens is None
    assert not any("differs" in note for note in log.notes)


# ------------------------------------------------------------------------- long numbers
@pytest.mark.parametrize("template", [
    "Available KV cache memory: {} GiB", "GPU KV cache size: {} tokens",
    "# GPU blocks: {}, # CPU blocks: {}", "Free memory on device ({}/{} GiB) on startup.",
    "{} GiB for consumed memory (weights + non-torch), {} GiB for peak activation",
])
def test_a_100k_digit_number_is_linear(template: str) -> None:
    digits = "9" * 100_000
    start = time.perf_counter()
    log = parse_text("\n".join([PREFIX + template.format(digits, digits)] * 5))
    assert time.perf_counter() - start < 5
    assert log.kv_cache_gib is None and log.kv_tokens is None and log.gpu_blocks is None


# ------------------------------------------------------------------------- pasted logs
def test_aligned_blanks_a_wrapped_message_and_a_quoted_error_are_read() -> None:
    """What posters do to a start-up log: align columns, let the terminal wrap a message,
    paste an error in quotes."""
    aligned = parse_text("Available KV cache memory: 23.74 GiB\n"
                         "GPU KV cache size:         1,037,152 tokens\n")
    assert (aligned.kv_cache_gib, aligned.kv_tokens) == (23.74, 1037152)
    wrapped = parse_text(
        "  INFO 03-15 20:36:48 worker.py:267] model weights take 83.88GiB; non_torch_memory "
        "takes 7.16GiB; PyTorch activation peak memory takes 6.37GiB; the rest of the memory "
        "reserved \n  for KV Cache is 21.43GiB.\n"
        "  INFO 03-15 20:36:48 executor_base.py:111] # cuda blocks: 18418, # CPU blocks: 3437\n")
    assert (wrapped.weights_gib, wrapped.kv_cache_gib, wrapped.gpu_blocks) == \
        (83.88, 21.43, 18418)
    quoted = parse_text('"ValueError: The model\'s max seq len (131072) is larger than the '
                        "maximum number of tokens that can be stored in KV cache (39024). Try "
                        'increasing `gpu_memory_utilization`."\n')
    assert (quoted.needed_len, quoted.max_tokens_error) == (131072, 39024)
    # an exception's message wrapped by its poster over three lines: one message, its
    # figures on any of them (logs29o 1009)
    error = parse_text("ValueError: To serve at least one request with the models's max seq "
                       "len\n(32768), (5.0 GiB KV cache is needed, which is larger than the "
                       "available\nKV cache memory (0.53 GiB).\n")
    assert (error.needed_len, error.needed_gib, error.kv_cache_gib) == (32768, 5.0, 0.53)
    assert error.version_range is not None and error.version_range[0] == "0.7.3"
    # a traceback's next frame or a blank line ends it
    ended = parse_text("RuntimeError: something failed\n  File \"x.py\", line 1\n"
                       "GPU KV cache size: 1,000 tokens\n")
    assert ended.kv_tokens == 1000



@pytest.mark.parametrize(("record", "expected"), [
    # vllm/v1/core/kv_cache_utils.py@0.8.5 line 634 (0.8.0: 537, 0.9.2: 716 and 873)
    ("INFO 07-24 11:26:32 [kv_cache_utils.py:634] GPU KV cache size: 878,416 tokens",
     ("0.8.5", "0.8.5")),
    ("INFO 07-24 11:26:32 [kv_cache_utils.py:537] GPU KV cache size: 878,416 tokens",
     ("0.8.0", "0.8.0")),
    # a line no release read has the call at: the wording's range, not narrowed
    ("INFO 04-14 06:02:04 [kv_cache_utils.py:578] GPU KV cache size: 426,448 tokens",
     None),
])
def test_the_records_file_and_line_name_the_release(record: str,
                                                    expected: tuple[str, str] | None) -> None:
    wording = parse_text("GPU KV cache size: 878,416 tokens\n").version_range
    log = parse_text(record + "\n")
    assert log.kv_tokens is not None
    assert log.version_range == (expected or wording)
    if expected is not None:
        entry = next(e for e in ENTRIES if e.id in log.formats)
        assert expected[0] in entry.releases_at("kv_cache_utils.py", int(record.split(":")[3]
                                                                         .split("]")[0]))


def test_a_development_builds_one_line_profile_is_read_by_name() -> None:
    log = parse_text(
        "INFO 12-06 07:43:16 worker.py:235] Memory profiling results: duration=1.09 seconds, "
        "total_gpu_memory=79.10GiB, initial_memory_usage=34.44GiB, peak_torch_memory=30.56GiB, "
        "memory_usage_post_profile=34.81GiB, non_torch_memory=5.21GiB, kv_cache_size=35.42GiB, "
        "gpu_memory_utilization=0.90\n"
        "INFO 12-06 07:43:16 gpu_executor.py:76] # GPU blocks: 5373, # CPU blocks: 606\n")
    assert (log.total_gpu_gib, log.non_torch_gib, log.kv_cache_gib,
            log.gpu_memory_utilization, log.gpu_blocks) == (79.1, 5.21, 35.42, 0.9, 5373)
