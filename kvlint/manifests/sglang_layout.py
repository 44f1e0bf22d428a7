"""SGLang's parallel layout as its server arguments of each release settle it: the DP size
``--enable-dp-attention`` takes without ``--dp-size``, and the refusals of a DP attention
without a DP size and of a node rank outside the nodes (KV702 problems of
:mod:`.engine_options`)."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.engine_command import OptionUse
from kvlint.model.engine_args import EngineArgProblem
from kvlint.model.memory import release_version

__all__ = ["sglang_dp_attention_alone", "sglang_dp_defaults_to_tp", "sglang_node_rank_outside"]


SGLANG_DP_ATTENTION_NEEDS_DP = (Version("0.4.6.post1"), Version("0.5.1"))
"""SGLang releases that refuse ``--enable-dp-attention`` without ``--dp-size`` > 1 at start
(``assert self.dp_size > 1, "Please set a dp-size > 1. ..."``: server_args.py@0.4.6.post1
line 298, @0.4.9 line 405, @0.5.1 line 534). 0.3.6 to 0.4.3 set dp_size = tp_size instead
(server_args.py@0.3.6 line 189, @0.4.3 line 253; kvlint.lint.runner.plan_for), 0.5.5 keeps
dp_size 1 (server_args.py@0.5.5 line 1379). Releases between the ones read (0.4.4-0.4.5,
0.5.2-0.5.4) are not judged."""


SGLANG_DP_IS_TP_UNTIL = Version("0.4.3")
"""SGLang 0.3.6 to 0.4.3 set ``dp_size = tp_size`` for ``--enable-dp-attention`` given
without ``--dp-size`` (server_args.py@0.3.6 line 189, @0.4.0 line 201, @0.4.3 line 253); later
releases refuse it (:data:`SGLANG_DP_ATTENTION_NEEDS_DP`) or keep dp 1."""


def sglang_dp_defaults_to_tp(engine: Located[str] | None,
                             version: Located[str] | Unresolved | None) -> bool:
    """Whether ``--enable-dp-attention`` without ``--dp-size`` makes the DP size the TP size
    (SGLang up to :data:`SGLANG_DP_IS_TP_UNTIL`)."""
    if engine is None or engine.value != "sglang" or not isinstance(version, Located):
        return False
    parsed = release_version(version.value)
    return parsed is not None and parsed.release <= SGLANG_DP_IS_TP_UNTIL.release


def sglang_dp_attention_alone(uses: Sequence[OptionUse],
                               version: Located[str] | Unresolved | None,
                               fields: dict[str, str]) -> list[EngineArgProblem]:
    """The refusal of ``--enable-dp-attention`` without a DP size, in the releases that
    refuse it (:data:`SGLANG_DP_ATTENTION_NEEDS_DP`)."""
    parsed = release_version(version.value) if isinstance(version, Located) else None
    low, high = SGLANG_DP_ATTENTION_NEEDS_DP
    if parsed is None or not low <= parsed <= high:
        return []
    flag = next((u for u in uses if fields.get(u.canonical or "") == "dp_attention"), None)
    sized = any(fields.get(u.canonical or "") == "dp" for u in uses)
    if flag is None or sized:
        return []
    return [EngineArgProblem(
        "value", flag.name, f"{flag.name} without --dp-size: SGLang {parsed} refuses it at "
        "start (AssertionError: Please set a dp-size > 1); give --dp-size, the number of "
        "attention DP ranks (a divisor of tp)", flag.line, flag.column,
        {"engine": "sglang", "reason": "dp-attention-without-dp", "field": "dp"})]


def _int_value(use: OptionUse) -> int | None:
    value = use.values[-1] if use.values else None
    return int(value) if value is not None and value.strip().isdigit() else None


def sglang_node_rank_outside(uses: Sequence[OptionUse],
                              fields: dict[str, str]) -> list[EngineArgProblem]:
    """A ``--node-rank`` not below ``--nnodes`` (1 when not given). SGLang's srt server
    arguments do not check it (server_args.py@0.5.5.post3 line 351: ``node_rank: int = 0``,
    no validation), but its launcher splits the ranks by it: with ``nnodes`` 1 every node
    starts all ``tp`` ranks on its own GPUs (entrypoints/engine.py@0.5.5.post3 lines 807-818:
    ``tp_size_per_node = tp_size // nnodes``, the range from ``node_rank % nnodes``) and no
    rank waits for the others, so a multi-node launch that forgot ``--nnodes`` never forms
    its group."""
    rank = next((u for u in reversed(uses) if fields.get(u.canonical or "") == "node_rank"),
                None)
    nodes_use = next((u for u in reversed(uses) if fields.get(u.canonical or "") == "nnodes"),
                     None)
    rank_value = _int_value(rank) if rank is not None else None
    nodes = _int_value(nodes_use) if nodes_use is not None else 1
    if rank is None or rank_value is None or nodes is None or rank_value < nodes:
        return []
    given = f"--nnodes {nodes}" if nodes_use is not None else "no --nnodes (1, the default)"
    return [EngineArgProblem(
        "value", rank.name, f"{rank.name} {rank_value} with {given}: a node rank must be "
        "below the number of nodes. SGLang then starts every tp rank on this node's own "
        "GPUs and the nodes never form one group; give --nnodes, the number of nodes the "
        "launch spans", rank.line, rank.column,
        {"engine": "sglang", "reason": "node-rank-outside", "field": "nnodes"})]
