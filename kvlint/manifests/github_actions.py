"""GitHub Actions workflows and composite actions whose steps start an engine (a CI job that
serves a model to test against it): each step's ``run`` script, read as a shell script.

Where the scripts are (https://docs.github.com/en/actions/reference/workflows-and-actions/
workflow-syntax and .../metadata-syntax): a workflow's ``jobs.<id>.steps[*].run`` and a
composite action's ``runs.steps[*].run``. The environment of a step is the workflow's, the
job's and the step's ``env`` (the later wins), as the runner gives it. An expression
(``${{ inputs.model }}``) is filled in by the runner from the event and the inputs, which no
file holds: kvlint reads it as a variable nobody set (unresolved, never a guess). Only bash
and sh steps are read (``shell: pwsh`` and ``python`` are other languages).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from kvlint.manifests.base import DocumentContext, ManifestParser, ServedModel
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script
from kvlint.manifests.yaml_marks import LStr
from kvlint.manifests.yaml_values import get_list, get_map, plain_map

__all__ = ["GithubActionsParser"]

_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
_SHELLS = ("bash", "sh")


def _steps(document: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(step, the job's env)`` of every step (a composite action's job env is empty)."""
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    jobs = get_map(document, "jobs")
    if jobs:
        for job in jobs.values():
            if isinstance(job, dict):
                env = get_map(job, "env") or {}
                out += [(s, env) for s in get_list(job, "steps") or [] if isinstance(s, dict)]
    runs = get_map(document, "runs")
    if runs:
        out += [(s, {}) for s in get_list(runs, "steps") or [] if isinstance(s, dict)]
    return out


def _inputs(document: dict[str, Any]) -> dict[str, str]:
    """The inputs' defaults: a composite action's ``inputs`` and a workflow's
    ``on.workflow_dispatch``/``workflow_call`` inputs."""
    holders = [get_map(document, "inputs")]
    on = document.get("on", document.get(True))  # type: ignore[call-overload]
    if isinstance(on, dict):
        holders += [get_map(get_map(on, e) or {}, "inputs")
                    for e in ("workflow_dispatch", "workflow_call")]
    out: dict[str, str] = {}
    for holder in holders:
        for name, spec in (holder or {}).items():
            if isinstance(spec, dict) and isinstance(spec.get("default"), (str, int, float)):
                out.setdefault(str(name), str(spec["default"]))
    return out


def _plain(text: str, inputs: dict[str, str]) -> str:
    """``text`` with each expression as a shell variable named after it: ``${{ inputs.model
    }}`` is ``${inputs_model:-DEFAULT}`` where the input has a default (the caller may give
    another), any other expression a variable nobody set."""
    def one(match: re.Match[str]) -> str:
        expression = match.group(0)[3:-2].strip()
        name = re.sub(r"\W+", "_", expression).strip("_") or "expression"
        given = re.fullmatch(r"(?:inputs|github\.event\.inputs)\.([\w-]+)", expression)
        default = inputs.get(given.group(1)) if given else None
        return f"${{{name}:-{default}}}" if default is not None and "}" not in default \
            else f"${{{name}}}"

    return _EXPRESSION.sub(one, text)


def _script(run: object, inputs: dict[str, str]) -> list[list[Word]]:
    text = str(run)
    plain = _plain(text, inputs)
    if isinstance(run, LStr):
        if plain == text:
            return split_script(run)
        return split_script(plain, line=run.line, style=run.style)
    return split_script(plain)


class GithubActionsParser(ManifestParser):
    """GitHub Actions workflows (``on`` + ``jobs``) and composite actions (``runs.steps``)."""

    name = "github-actions"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        jobs = get_map(document, "jobs") or {}
        workflow = bool(jobs) and ("on" in document or True in document) and \
            all(isinstance(j, dict) for j in jobs.values())  # YAML 1.1 reads `on` as True
        runs = get_map(document, "runs") or {}
        composite = str(runs.get("using", "")) == "composite"
        return workflow or composite

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        top = get_map(document, "env") or {}
        inputs = _inputs(document)
        out: list[ServedModel] = []
        for step, job_env in _steps(document):
            run = step.get("run")
            shell = str(step.get("shell") or "bash").split()[0]
            if not isinstance(run, str) or shell not in _SHELLS:
                continue
            env = {**top, **job_env, **(get_map(step, "env") or {})}
            line = getattr(run, "line", None) or 0
            assigned = [[Word(f"{k}={_plain(str(v), inputs)}", line)]
                        for k, v in env.items()
                        if isinstance(k, str) and k.isidentifier() and v is not None]
            found = command_models([*assigned, *_script(run, inputs)], "", ctx.path,
                                   kind=self.name)
            out += [replace(s, document=ctx.index) for s in found]
        return out
