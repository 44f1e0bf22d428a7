"""No cascades from a value kvlint had to guess.

When a manifest's engine command sets a value kvlint cannot read (``--tensor-parallel-size
eight``, which the engine refuses: KV702; an option the engine does not know, which it refuses:
KV701; ``--tp $(TP)`` with ``TP`` set nowhere in the manifest), the plan holds the engine's
default in its place. Findings computed from that stand-in are about a deployment nobody
wrote ("tp=1 needs 1 GPU, 7 stay idle" after ``--tensor-parallel-size eight``), so they stay
out of the report, as a compiler reports a statement's first parse error and not what follows
from it. Findings about the values kvlint did read stay. The finding that reports the refused
value (or, without one, the result's notes) says which checks were skipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache

from kvlint.diagnostics import Finding
from kvlint.manifests.base import Located, ServedModel, Unresolved

__all__ = ["DEPENDS", "without_cascades"]

_MODEL = ("KV101", "KV102", "KV201", "KV202", "KV203", "KV204", "KV205", "KV207", "KV301",
          "KV302", "KV303", "KV305", "KV501", "KV502", "KV503", "KV504", "KV703")
DEPENDS: Mapping[str, tuple[str, ...]] = {
    "tp": ("KV201", "KV202", "KV203", "KV204", "KV206", "KV207", "KV501", "KV502", "KV503",
           "KV504"),
    "pp": ("KV205", "KV206", "KV501", "KV502", "KV503", "KV504"),
    "dp": ("KV204", "KV206", "KV501", "KV502", "KV503"),
    "gpus": ("KV206",),
    "max_model_len": ("KV501", "KV502", "KV504", "KV703"),
    "max_num_seqs": ("KV502", "KV504"),
    "kv_cache_dtype": ("KV302", "KV501", "KV502"),
    "gpu_memory_utilization": ("KV501", "KV502", "KV503", "KV504"),
    "dtype": ("KV501", "KV502", "KV503", "KV504"),
    "quantization": ("KV501", "KV502", "KV503", "KV504"),
    "config_overrides": _MODEL,
}
"""A served model's value -> the findings computed from it (a guessed value drops them)."""

_REFUSALS = frozenset({"KV701", "KV702"})
_ENGINES = ("vllm", "sglang", "tgi", "lmdeploy", "trtllm", "llamacpp")


def _name(option: str) -> str:
    """The option's name in a refused word: before ``=``, or before a space (one argv word
    ``--tensor-parallel-size 2``, which argparse takes for a positional and refuses whole)."""
    return re.split(r"[=\s]", option.strip(), maxsplit=1)[0]


@cache
def _field_of(option: str) -> str | None:
    """The value an option spelling sets, in any engine's grammar (an option one engine
    refuses is often another engine's spelling of the same value: ``--tp-size``)."""
    from kvlint.manifests.engine_command import field_of_option  # only when one is refused

    name = _name(option)
    for engine in _ENGINES:
        found = field_of_option(engine).get(name)
        if found is not None:
            return found
    return None


def _guessed(served: ServedModel) -> dict[str, str]:
    """The values ``served`` states but kvlint could not read -> the option (or why)."""
    out: dict[str, str] = {}
    for problem in served.engine_problems:  # the refusal names the option first
        field = problem.data.get("field")  # a refusal about another value than its option's
        name = field if isinstance(field, str) else _field_of(problem.option)
        if name is not None and name in DEPENDS and \
                not isinstance(getattr(served, name), Located):
            out.setdefault(name, problem.option)
    for name in DEPENDS:
        value = getattr(served, name)
        if isinstance(value, Unresolved):
            out.setdefault(name, value.text or value.reason)
    return out


def without_cascades(findings: Sequence[Finding], served: ServedModel
                     ) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """``findings`` less those computed from a value ``served`` states but kvlint had to
    guess, each refusal naming the checks it skipped; and a note per guessed value that no
    refusal reports."""
    guessed = _guessed(served)
    if not guessed:
        return tuple(findings), ()
    skipped: dict[str, list[str]] = {}
    kept: list[Finding] = []
    for finding in findings:
        why = next((name for name in guessed if finding.code in DEPENDS[name]), None)
        if why is None or finding.code in _REFUSALS:
            kept.append(finding)
        else:
            skipped.setdefault(why, []).append(finding.code)
    notes = []
    for name, codes in skipped.items():
        said = ", ".join(dict.fromkeys(codes))
        depends = "it depends" if len(codes) == 1 else "they depend"
        option = _name(guessed[name])
        refusal = next((i for i, f in enumerate(kept) if f.code in _REFUSALS
                        and _name(str(f.data.get("option", ""))) == option), None)
        if refusal is not None:
            f = kept[refusal]
            kept[refusal] = replace(f, message=f"{f.message.rstrip('.')}; kvlint skipped "
                                    f"{said}: {depends} on this {name}.")
        else:
            notes.append(f"{name} is not known ({guessed[name]}): kvlint skipped {said}, "
                         f"which {'depends' if len(codes) == 1 else 'depend'} on it")
    return tuple(kept), tuple(notes)
