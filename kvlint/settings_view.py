"""``--show-settings``: the settings a run resolves to (the file found, the serving
defaults, the rule selection), printed as ``key = value`` lines, as ``ruff
--show-settings`` prints its own."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvlint.rules.base import Rule
    from kvlint.settings import LoadedSettings

SELECTION = ("select", "extend_select", "ignore", "per_file_ignores", "severity", "fail_on")


def _value(value: Any) -> str:
    if value is None:
        return "(unset)"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def render_settings(loaded: LoadedSettings, rules: Sequence[type[Rule]],
                    fail_on: str | None = None) -> str:
    """The resolved settings: the file (or none), every key's value, the active rules."""
    from kvlint.reporters.escape import printable

    d = loaded.settings
    lines = [f"Settings file: {loaded.where if loaded.path else '(none: defaults)'}",
             f"Root: {loaded.root}", "", "# Serving defaults"]
    keys = [f.name for f in fields(d)]
    for key in keys:
        if key not in SELECTION:
            lines.append(f"{key.replace('_', '-')} = {_value(getattr(d, key))}")
    lines += ["", "# Rule selection"]
    for key in SELECTION:
        value = getattr(d, key)
        if key == "fail_on":
            value = fail_on or value or "error"
        lines.append(f"{key.replace('_', '-')} = {_value(value)}")
    lines.append(f"rules = {_value([r.code for r in rules])}  # {len(rules)} active")
    return printable("\n".join(lines), keep="\n") + "\n"
