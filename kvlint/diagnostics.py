"""Findings: what a rule reports, with a stable code, a severity and the numbers behind it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe: info 1, warning 2, error 3."""
        return {"info": 1, "warning": 2, "error": 3}[self.value]


FAIL_ON_CHOICES = ("error", "warning", "info", "never")


def fails(severity: Severity, fail_on: str) -> bool:
    """Whether a finding of ``severity`` makes the run fail under ``--fail-on``."""
    if fail_on == "never":
        return False
    return severity.rank >= Severity(fail_on).rank


@dataclass(frozen=True)
class Suggestion:
    """A change a finding proposes, machine-readable: a short ``message`` and the serving
    settings it proposes (keys of the JSON ``serving`` object: ``tp``, ``pp``, ``dp``,
    ``dp_attention``, ``kv_cache_dtype``, ``max_model_len``, ``max_num_seqs``, ``engine``,
    ``engine_version``, ``gpu``). Applying ``serving`` to the plan clears the finding."""

    message: str
    serving: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "serving": dict(self.serving)}


@dataclass(frozen=True)
class Finding:
    """One diagnostic. ``data`` carries the numbers in machine-readable form."""

    code: str
    name: str
    severity: Severity
    message: str
    path: str | None = None
    line: int | None = None
    column: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    end_line: int | None = None
    """Last line of the finding's span when it spans several (a flag on one line and its
    value on the next); ``None``: the span is ``line`` alone. Suppressions match any line
    of the span."""
    suggestion: Suggestion | None = None
    """The change this finding proposes, when it proposes one kvlint can state as serving
    settings."""
