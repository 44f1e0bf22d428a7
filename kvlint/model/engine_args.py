"""What the engine's own command-line parser would refuse in a manifest's engine command:
data for the KV701/KV702 rules, found by the manifest loaders."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GPU_BUILD = "the engine's own GPU build"
"""How a manifest loader ends the source of a GPU count of 0 (a container given no GPU) whose
image is the engine's own CUDA image, which cannot start without one (KV206 makes it an
error)."""
HIDES_EVERY_GPU = "which leaves CUDA no GPU"
"""How a manifest loader ends the source of a GPU count of 0 that a visible-devices variable
makes (``CUDA_VISIBLE_DEVICES=''`` or ``all``): GPUs given, then hidden (KV206: an error)."""


@dataclass(frozen=True)
class EngineArgProblem:
    """One option or value the engine refuses at start.

    ``kind`` is ``option`` (an option the engine/version does not accept as written: unknown,
    an ambiguous abbreviation, a spelling the parser does not normalise, a repeat the parser
    refuses; KV701) or ``value`` (a value the parser or config validation rejects, or a
    missing value; KV702). ``line``/``column`` locate the option word (1-based)."""

    kind: str
    option: str
    message: str
    line: int | None = None
    column: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """Machine-readable details for the finding (not hashed: a dict; equality still compares
    it), so problems are hashable and manifests with the same ones share one result."""
    end_line: int | None = None
    """The value's line when it is below the option's (the span suppressions match)."""
