"""Shared builders for the CI reporter tests: real ``check`` and ``lint`` runs, offline.

Each test module calls :func:`isolate` from an autouse fixture: Hub lookups are offline with
an empty cache, and the working directory is the repository root (reporters write paths
relative to the nearest ancestor holding ``.git``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvlint.diagnostics import Finding, Severity
from kvlint.lint.options import LintOptions
from kvlint.lint.runner import lint_paths
from kvlint.linter import LintRun, ModelResult, Target, check_models, lint_config
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import ServingPlan
from kvlint.plugins import get_plugin_manager
from kvlint.registry import Registry
from kvlint.rules.base import Rule
from tests.helpers import CONFIGS, ROOT, fixture_config

CASES = ROOT / "fixtures" / "cases"
SARIF_SCHEMA = ROOT / "fixtures" / "schemas" / "sarif-schema-2.1.0.json"
LLAMA31 = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
DSV3 = CONFIGS / "deepseek-ai--DeepSeek-V3.json"
PHI3M = CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"
QWEN3 = CONFIGS / "Qwen--Qwen3-8B.json"
MODEL_MAP = {
    "microsoft/Phi-3-medium-4k-instruct": str(PHI3M),
    "deepseek-ai/DeepSeek-V3": str(DSV3),
    "meta-llama/Llama-3.1-8B-Instruct": str(LLAMA31),
}


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(ROOT)


@cache
def rules() -> tuple[type[Rule], ...]:
    return Registry.from_plugins(get_plugin_manager(load_entry_points=False)).rules


def plan(tp: int = 1) -> ServingPlan:
    return ServingPlan(layout=ParallelLayout(tp=tp))


def rel(path: Path) -> str:
    """``path`` as the user would type it from the repository root."""
    return path.relative_to(ROOT).as_posix()


def check_run(*configs: Path, tp: int = 16, fail_on: str = "error") -> LintRun:
    """``kvlint check CONFIG... --tp TP --offline`` from the repository root."""
    return check_models([rel(c) for c in configs], plan(tp), rules(), offline=True,
                        fail_on=fail_on)


def hub_result(ref: str = "meta-llama/Llama-3.1-8B", config: Path = LLAMA31,
               revision: str | None = "main", tp: int = 16) -> ModelResult:
    """A ``check`` result for a Hub model: the config came from the Hub, so no file."""
    raw: dict[str, Any] = fixture_config(config.name)
    return lint_config(Target(ref, "model", revision, None), raw, plan(tp), rules())


def unresolved_result(ref: str = "acme/broken") -> ModelResult:
    """A Hub model whose config does not resolve (KV900, exit 2)."""
    return lint_config(Target(ref, "model", "main", None), {"model_type": "acme-unknown"}, plan(),
                       rules())


def lint_run(*paths: Path, fail_on: str = "error") -> LintRun:
    """``kvlint lint PATH... --offline --model-map ...`` from the repository root."""
    pm = get_plugin_manager(load_entry_points=False)
    return lint_paths([rel(p) for p in paths or (CASES,)],
                      LintOptions(rules=rules(), pm=pm, offline=True, model_map=MODEL_MAP,
                                  fail_on=fail_on))


def run_of(*results: ModelResult, fail_on: str = "error") -> LintRun:
    return LintRun(tuple(results), fail_on, rules())


def made_up(ref: str, *findings: Finding, kind: str = "manifest", path: str | None = None,
            line: int | None = None) -> ModelResult:
    """A result without analysis carrying hand-made findings (for escaping tests)."""
    target = Target(ref, "manifest" if kind == "manifest" else "model", None, path, line)
    return ModelResult(target, plan(), None, tuple(findings))


def finding(code: str = "KV201", message: str = "m", *, severity: Severity | None = None,
            path: str | None = None, line: int | None = None, column: int | None = None,
            **data: Any) -> Finding:
    rule = next(r for r in rules() if r.code == code)
    return Finding(code, rule.name, severity or rule.severity, message, path, line, column,
                   data)


def all_findings(run: LintRun) -> Sequence[tuple[ModelResult, Finding]]:
    return [(r, f) for r in run.results for f in r.findings]
