"""The rules/ reference pages match the rules' docstrings."""

from __future__ import annotations

from kvlint.generators.docs import readme_with_table, render
from tests.helpers import ROOT


def test_rule_pages_are_current() -> None:
    pages = render()
    on_disk = {p.name for p in (ROOT / "rules").glob("*.md")}
    assert on_disk == set(pages), "run: python -m kvlint.generators.docs"
    for name, text in pages.items():
        assert (ROOT / "rules" / name).read_text(encoding="utf-8") == text, \
            f"rules/{name} is stale: run python -m kvlint.generators.docs"


def test_readme_engine_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_with_table(readme) == readme, "README engines table is stale: " \
        "run python -m kvlint.generators.docs"
