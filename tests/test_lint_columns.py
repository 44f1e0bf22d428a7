"""``kvlint lint``'s placing of findings and sharing of results: the word search that stands
in for a regex per word finds exactly what ``(?<![\\w.-])WORD(?![\\w.-])`` finds, and
manifests with the same engine problems share one result key."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from kvlint.lint.runner import _word_starts

# characters that make boundaries interesting: word characters (ASCII and not), the dot and
# dash that join words, separators, and the word's own characters
ALPHABET = st.sampled_from(list("ab-._= /:1é٣\t\"'$"))


def _regex_starts(text: str, word: str) -> list[int]:
    pattern = r"(?<![\w.-])" + re.escape(word) + r"(?![\w.-])"
    return [m.start() for m in re.finditer(pattern, text)]


@given(st.text(ALPHABET, max_size=40), st.text(ALPHABET, min_size=1, max_size=5))
def test_word_starts_match_the_regex(text: str, word: str) -> None:
    assert list(_word_starts(text, word)) == _regex_starts(text, word)


def test_word_starts_examples() -> None:
    line = "  vllm serve m --tp 2 --tp=4 --tensor-parallel-size 8 a=a=a"
    assert list(_word_starts(line, "--tp")) == _regex_starts(line, "--tp") == [15, 22]
    assert list(_word_starts(line, "--tensor")) == []  # a dash continues the word
    assert list(_word_starts(line, "a=a")) == _regex_starts(line, "a=a")
    assert list(_word_starts("", "x")) == [] and list(_word_starts("x", "")) == []


def test_a_result_key_holds_engine_problems_with_data() -> None:
    from kvlint.lint.runner import _result_key
    from kvlint.model.engine_args import EngineArgProblem
    from kvlint.model.serving import ServingPlan

    def problem(value: str) -> EngineArgProblem:
        return EngineArgProblem("value", "--kv-cache-memory-bytes", f"{value!r} is refused",
                                line=9, data={"engine": "vllm", "value": value})

    plan = ServingPlan()
    one = _result_key("org/model", "config", plan, None, (problem(""),))
    same = _result_key("org/model", "config", plan, None, (problem(""),))
    other = _result_key("org/model", "config", plan, None, (problem("x"),))
    assert one is not None and one == same and hash(one) == hash(same) and one != other
