"""Indented JSON through a C encoder is byte for byte what ``json.dumps(data, indent=2)``
writes: the JSON and SARIF reports of real runs, the values where encoders differ, and any
JSON-like value."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.reporters import json_text
from kvlint.reporters.json import report
from kvlint.reporters.sarif import sarif_log
from tests.reporters import CONFIGS, check_run, lint_run

ODD: list[Any] = [
    math.nan, math.inf, -math.inf, -0.0, 1e-05, 1.5e300, 5e-324, 10**40, -(10**40),
    "\ud800 lone surrogate", "é\u202e\x00\x1b[31m", "tab\tquote\"back\\slash", "",
    {"": [], "k": {}}, [[], [{}], [[[]]]], True, False, None, (1, 2), {"t": ("a", None)},
    {"nested": {"deep": [1, 2.5, "x", {"y": None}]}},
]


def test_the_c_encoder_is_used_where_python_has_none() -> None:
    encoder = json_text._simplejson()
    assert (encoder is None) == (sys.version_info >= (3, 13))


def test_odd_values_are_written_as_json_writes_them() -> None:
    for value in ODD:
        assert json_text.indented_json(value) == json.dumps(value, indent=2), value


def test_reports_of_real_runs_are_written_as_json_writes_them() -> None:
    runs = [lint_run(), check_run(*sorted(CONFIGS.glob("*.json"))[:12], tp=16)]
    for run in runs:
        for data in (report(run), sarif_log(run)):
            assert json_text.indented_json(data) == json.dumps(data, indent=2)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) |
    st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=30)


@settings(max_examples=300)
@given(JSON)
def test_any_json_value_is_written_as_json_writes_it(value: Any) -> None:
    assert json_text.indented_json(value) == json.dumps(value, indent=2)
