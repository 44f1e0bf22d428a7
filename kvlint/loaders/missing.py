"""The sentinel for a field transformers' config class does not have (distinct from a field
whose default is ``None``): what the config loader, the generated defaults table and the
family refiners share, in a module none of them imports the others through."""

from __future__ import annotations

from typing import Final


class Missing:
    """Sentinel: transformers' config class has no such attribute."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing()
