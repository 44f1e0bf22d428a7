"""The built-in formats are registered lazily: the table matches the reporter classes, and a
lazy reporter renders exactly what its implementation renders."""

from __future__ import annotations

import importlib
from functools import cache

import pytest

from kvlint.linter import LintRun
from kvlint.reporters.base import Reporter
from kvlint.reporters.builtin import LAZY_REPORTERS, REPORTERS
from kvlint.reporters.display import Display
from tests.reporters import lint_run


@pytest.mark.parametrize(("name", "target", "description"), REPORTERS)
def test_table_matches_the_reporter_class(name: str, target: str, description: str) -> None:
    module, _, attr = target.partition(":")
    real = getattr(importlib.import_module(module), attr)
    assert issubclass(real, Reporter)
    assert (real.name, real.description) == (name, description)
    assert importlib.import_module(module).kvlint_reporters() == [real]


@pytest.mark.parametrize("lazy", LAZY_REPORTERS, ids=lambda r: r.name)
def test_lazy_reporter_renders_as_its_implementation(lazy: type[Reporter]) -> None:
    display = Display(width=100, verbose=True)
    instance, real = lazy(), lazy.implementation()()  # type: ignore[attr-defined]
    instance.display = real.display = display
    assert instance.render(_run()) == real.render(_run())


@cache
def _run() -> LintRun:
    return lint_run()
