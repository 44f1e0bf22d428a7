"""The text reporter's model table is laid out without importing tabulate on the ordinary
path (start-up time); tabulate's plain format is the reference it must equal."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from kvlint.reporters.text import key_value_table

TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=12)
LINES = st.lists(TEXT, min_size=1, max_size=3).map("\n".join)
ROWS = st.lists(st.tuples(TEXT, LINES).map(list), min_size=1, max_size=6)


@settings(max_examples=500, deadline=None)
@given(rows=ROWS)
def test_equals_tabulate_plain(rows: list[list[str]]) -> None:
    assert key_value_table(rows) == tabulate(rows, tablefmt="plain")


@given(rows=st.lists(st.tuples(st.sampled_from(["attention", "KV per token", "GPU"]),
                               st.sampled_from(["GQA 32 query / 8 KV heads", "1", "1,024",
                                                "131,072 B (128 KiB)\n· bfloat16", ""]))
                     .map(list), min_size=1, max_size=6))
def test_equals_tabulate_on_report_like_rows(rows: list[list[str]]) -> None:
    assert key_value_table(rows) == tabulate(rows, tablefmt="plain")
