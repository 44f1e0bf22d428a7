"""Run the rules: load each model, resolve its geometry, analyse it under the plan."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kvlint.diagnostics import Finding, Severity, fails
from kvlint.errors import ConfigError, UsageError
from kvlint.loaders.hf_config import ConfigDefaults, resolve_geometry
from kvlint.loaders.models import LoadedConfig, load_config
from kvlint.model.serving import KvAnalysis, ServingPlan, analyze
from kvlint.rules.base import Rule, RuleContext

TargetKind = Literal["model", "manifest", "source"]


@dataclass(frozen=True)
class Target:
    """What a result is about (DESIGN §7 ``target``)."""

    ref: str
    kind: TargetKind = "model"
    revision: str | None = None
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class ModelResult:
    target: Target
    plan: ServingPlan
    analysis: KvAnalysis | None
    findings: tuple[Finding, ...]
    config_error: str | None = None
    """Why the geometry could not be resolved (a KV900 finding says so too)."""


@dataclass(frozen=True)
class LintRun:
    results: tuple[ModelResult, ...]
    fail_on: str = "error"
    rules: tuple[type[Rule], ...] = field(default=())

    def count(self, severity: Severity) -> int:
        return sum(1 for r in self.results for f in r.findings if f.severity is severity)

    @property
    def has_config_errors(self) -> bool:
        return any(r.config_error for r in self.results)

    @property
    def exit_code(self) -> int:
        """DESIGN §6: 2 when a config could not be resolved, 1 for findings at or above
        ``fail_on``, else 0."""
        if self.has_config_errors:
            return 2
        failing = any(fails(f.severity, self.fail_on) for r in self.results for f in r.findings)
        return 1 if failing else 0


def default_config_defaults() -> ConfigDefaults:
    from kvlint.loaders.transformers_defaults import TransformersDefaults

    return TransformersDefaults()


def lint_config(
    target: Target,
    config: dict[str, Any],
    plan: ServingPlan,
    rules: Sequence[type[Rule]],
    *,
    source: str | None = None,
    defaults: ConfigDefaults | None = None,
) -> ModelResult:
    """Resolve one raw config and run ``rules`` on it."""
    analysis: KvAnalysis | None = None
    problem = problem_field = None
    try:
        geometry = resolve_geometry(config, defaults=defaults or default_config_defaults())
    except ConfigError as err:
        err.source = err.source or source
        problem, problem_field = str(err), err.field
    else:
        try:
            analysis = analyze(geometry, plan)
        except ValueError as err:
            raise UsageError(f"{target.ref}: {err}") from None
    ctx = RuleContext(target.ref, plan, analysis, problem, problem_field)
    findings = tuple(
        finding
        for rule in rules
        if analysis is not None or not rule.needs_geometry
        for finding in rule().check(ctx)
    )
    return ModelResult(target, plan, analysis, findings, problem)


def check_models(
    refs: Iterable[str],
    plan: ServingPlan,
    rules: Sequence[type[Rule]],
    *,
    revision: str | None = None,
    offline: bool = False,
    fail_on: str = "error",
) -> LintRun:
    """``kvlint check``: one result per model reference."""
    defaults = default_config_defaults()
    results = []
    for ref in refs:
        loaded: LoadedConfig = load_config(ref, revision=revision, offline=offline)
        target = Target(loaded.ref, "model", loaded.revision, loaded.path)
        results.append(lint_config(target, loaded.config, plan, rules, source=loaded.source,
                                   defaults=defaults))
    return LintRun(tuple(results), fail_on, tuple(rules))
