"""The located string of :mod:`.yaml_marks`, in a module of its own: results that hold one
(a model name read from a manifest) are read back from ``kvlint lint``'s result cache
without importing the YAML loader."""

from __future__ import annotations

from typing import Any


class LStr(str):
    """A string scalar with its position and YAML style.

    ``style`` is ``None`` (plain), ``'|'`` (literal block), ``'>'`` (folded block), ``'"'`` or
    ``"'"``. ``end_line`` is the line where the scalar ends. ``raw`` is the scalar's source
    text (indicator or quotes included) for multi-line scalars that are not literal blocks
    (folded, quoted or plain ones, whose line breaks YAML folded away), so
    ``shell_words.split_script`` can place each word on its own line; ``None`` otherwise.
    """

    line: int
    column: int
    style: str | None = None
    end_line: int
    raw: str | None = None

    def __new__(cls, value: str, line: int = 0, column: int = 0, style: str | None = None,
                end_line: int | None = None, raw: str | None = None) -> LStr:
        self = super().__new__(cls, value)
        self.line = line
        self.column = column
        self.style = style
        self.end_line = line if end_line is None else end_line
        self.raw = raw
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (LStr, (str(self), self.line, self.column, self.style, self.end_line, self.raw))
