"""The rule interface. Built-in and third-party rules subclass :class:`Rule` and are
registered through the ``kvlint_rules`` hook.

Rules are pure: they see model objects (geometry, plan, KV analysis), never files.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.model.capacity import Capacity
from kvlint.model.context_limit import ContextLimit, LimitPolicy
from kvlint.model.engine_args import EngineArgProblem
from kvlint.model.serving import KvAnalysis, ServingPlan

if TYPE_CHECKING:
    from kvlint.model.advice import LayoutSizer
    from kvlint.probe.result import ProbeReport  # its dataclasses cost ~8 ms to import

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")
"""ruff's rule documentation sections every rule docstring must have (``Options`` and
``References`` are optional)."""


@dataclass(frozen=True)
class RuleContext:
    """What a rule is run on: one model (``target``) under one serving plan.

    ``analysis`` is ``None`` when the geometry could not be resolved; ``problem`` then says
    why (only rules with ``needs_geometry = False`` run).
    """

    target: str
    plan: ServingPlan
    analysis: KvAnalysis | None
    problem: str | None = None
    problem_field: str | None = None
    capacity: Capacity | None = None
    """Set when a GPU was given: memory budget, fit and the decode roofline."""
    model_problem: str | None = None
    """Why a manifest's model could not be resolved (KV902)."""
    gpus_requested: int | None = None
    """GPUs a manifest requests for this model's group (KV206)."""
    gpus_source: str | None = None
    """Where the manifest says so (a key and line, or why it requests none)."""
    manifest_problem: tuple[str, str] | None = None
    """``(kind, message)`` of a manifest that could not be read (KV903)."""
    probe: ProbeReport | None = None
    """What ``kvlint probe`` measured (KV601)."""
    context_limit: ContextLimit | None = None
    """The model's own maximum sequence length as the engine derives it (KV703)."""
    limit_policy: LimitPolicy | None = None
    """How the engine derives that limit and what overrides its refusal (KV703)."""
    engine_problems: tuple[EngineArgProblem, ...] = ()
    """Options and values of a manifest's engine command that the engine refuses
    (KV701/KV702)."""
    architectures: tuple[str, ...] = ()
    """The config's ``architectures`` (KV305)."""
    config_model_type: str | None = None
    """The config's top-level ``model_type`` (KV305: TGI dispatches on it)."""
    remote_code: bool = False
    """Whether the config's ``auto_map`` names an ``AutoModel*`` class (KV305)."""
    remote_config: bool = False
    """Whether the config's ``auto_map`` names an ``AutoConfig`` class (KV308)."""
    config_read: bool = False
    """Whether the model's config.json was read (the facts above and below are its)."""
    checkpoint_quant: str | None = None
    """The quantization format config.json declares, as the engines read it (``None``: it
    declares none; KV702: kvlint.engines.quant_refusals)."""
    config_dtype: str | None = None
    """config.json's ``torch_dtype`` (``dtype``), its language model part's when it has none
    (KV702: bfloat16 on a GPU without it)."""
    quant_config: Mapping[str, Any] | None = None
    """The quantization settings config.json declares (``quantization_config``; KV708: the
    kernel the engine picks for them)."""
    format_files: bool | None = None
    """When ``--quantization`` asks for a pre-quantized format config.json does not name:
    whether that format's own settings file sits in the checkpoint (``None``: not known)."""
    sizer: LayoutSizer | None = None
    """Weights and KV budget per GPU under other layouts (set whenever a GPU is given):
    rules size the layouts they suggest with it."""


class Rule:
    """Base class of every rule. Subclasses set ``code``, ``name``, ``severity`` and a
    docstring with ruff's sections, and implement :meth:`check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    needs_geometry: ClassVar[bool] = True

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        """Yield findings for ``ctx``."""
        raise NotImplementedError

    def finding(self, message: str, **data: Any) -> Finding:
        """A finding of this rule; ``suggestion=`` a :class:`Suggestion` (or ``None``) is
        the change it proposes, every other keyword goes to ``data``."""
        suggestion = data.get("suggestion")
        if isinstance(suggestion, Suggestion) or suggestion is None:
            data.pop("suggestion", None)
        else:  # a rule's own data field of that name (KV701's closest option)
            suggestion = None
        return Finding(self.code, self.name, self.severity, message, data=data,
                       suggestion=suggestion)

    @classmethod
    def summary(cls) -> str:
        """The first paragraph of the "What it does" section."""
        doc = cls.documentation()
        after = doc.split("## What it does", 1)[-1].strip()
        return " ".join(after.split("\n\n", 1)[0].split())

    @classmethod
    def documentation(cls) -> str:
        """The docstring with its indentation removed (as ``inspect.cleandoc``)."""
        first, _, rest = (cls.__doc__ or "").partition("\n")
        return (first.strip() + "\n" + textwrap.dedent(rest)).strip()
