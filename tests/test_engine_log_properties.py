"""Property tests (hypothesis) for the TensorRT-LLM and LMDeploy start-up log readers and the
engine detection: genuine lines printed from the tables, mutated (huge numbers, cut tails)
and junk, in any order, give a log (perhaps with no figures), never an exception, in bounded
time."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.loaders import lmdeploy_log, trtllm_log
from kvlint.probe.engine_log import detect
from tests.loaders.engine_log_lines import printed
from tests.test_decoder_properties import bounded

TRT_LINES = ["[TensorRT-LLM][INFO] " + printed(e)[0] for e in trtllm_log.table().entries]
LMD_LINES = ["[TM][INFO] " + printed(e)[0] for e in lmdeploy_log.table().entries]
JUNK = st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
NUMBERS = st.from_regex(r"-?[0-9]{1,40}(\.[0-9]{0,40})?", fullmatch=True)


def _mutated(line: str, number: str, cut: int) -> str:
    return re.sub(r"-?\d+(\.\d+)?", number, line, count=1)[:cut or None]


def _lines(genuine: list[str]) -> st.SearchStrategy[str]:
    return (st.sampled_from(genuine) | JUNK
            | st.builds(_mutated, st.sampled_from(genuine), NUMBERS, st.integers(0, 200)))


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_lines(TRT_LINES + LMD_LINES), max_size=30))
def test_any_log_text_is_read_without_error(lines: list[str]) -> None:
    text = "\n".join(lines)
    with bounded(20):
        trt = trtllm_log.parse_text(text)
        lmd = lmdeploy_log.parse_text(text)
    assert trt.pool is None or (trt.pool.tokens > 0 and trt.pool.gib >= 0)
    tokens = lmd.kv_tokens
    assert tokens is None or isinstance(tokens, int)
    assert lmd.block_tokens is None or isinstance(lmd.block_tokens, int)


@settings(max_examples=30, deadline=None)
@given(line=st.sampled_from(TRT_LINES + LMD_LINES), digits=st.integers(10_000, 200_000))
def test_long_numbers_and_lines_are_read_in_bounded_time(line: str, digits: int) -> None:
    """A number of up to 200,000 digits in place of a figure, twice on one line: the
    readers' patterns are linear."""
    text = _mutated(line, "9" * digits + "." + "9" * digits, 0) * 2
    with bounded(30):
        trtllm_log.parse_text(text)
        lmdeploy_log.parse_text(text)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_lines(TRT_LINES + LMD_LINES), min_size=1, max_size=12))
def test_detection_never_raises_but_in_one_line(tmp_path: Path, lines: list[str]) -> None:
    from kvlint.errors import UsageError

    path = tmp_path / "any.log"
    path.write_text("\n".join(lines), encoding="utf-8", errors="replace")
    try:
        engine, why = detect(path)
    except UsageError as err:
        assert "\n" not in str(err)
        return
    assert engine in ("vllm", "sglang", "trtllm", "lmdeploy") and why
