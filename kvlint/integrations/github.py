"""The GitHub Action's logic (``kvlint github-action``), kept in the package so it is tested.

On a pull request it lints the manifests the PR changes (from the event's base and head
SHAs), on other events the whole checkout; it prints workflow-command annotations, appends a
Markdown summary to ``$GITHUB_STEP_SUMMARY`` (GitHub shows only about ten annotations per type
and step, so the summary lists everything), writes SARIF when asked, sets the step outputs
in ``$GITHUB_OUTPUT`` and returns the exit code the ``fail-on`` threshold gives.

The SARIF of a pull request covers the whole repository: code scanning closes every alert
of the branch that the PR's analysis does not report, so a SARIF of the changed files alone
would mark every other file's alerts fixed. Annotations, the summary, the outputs and the
exit code stay on the changed files.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kvlint.diagnostics import Severity
from kvlint.errors import InputError
from kvlint.linter import LintRun

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class ChangedFiles:
    """What to lint: ``paths``; ``reason`` says how they were chosen."""

    paths: tuple[str, ...]
    reason: str
    pull_request: bool = False
    """The paths are a pull request's changes (not the whole repository, nor given)."""


def changed_files(env: Mapping[str, str], workdir: Path) -> ChangedFiles:
    """The manifests a pull request adds or modifies; the whole checkout otherwise."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    event_path = env.get("GITHUB_EVENT_PATH")
    if event_name not in ("pull_request", "pull_request_target") or not event_path:
        return ChangedFiles((".",), f"{event_name or 'no'} event: the whole repository")
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
        base = event["pull_request"]["base"]["sha"]
        head = event["pull_request"]["head"]["sha"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{event_path}: not a pull_request event with base and head SHAs "
                         f"({err})") from None
    proc = subprocess.run(
        ["git", "diff", "--name-only", "--diff-filter=ACMR", "-z", f"{base}...{head}"],
        cwd=workdir, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InputError(
            f"git diff {base[:12]}...{head[:12]} failed: {proc.stderr.strip().splitlines()[-1:]}"
            " (check out with fetch-depth: 0 so both commits are present)")
    names = [n for n in proc.stdout.split("\0") if n.endswith(MANIFEST_SUFFIXES)]
    return ChangedFiles(tuple(sorted(names)),
                        f"{plural(len(names), 'manifest')} changed between {base[:7]} and "
                        f"{head[:7]}", pull_request=True)


def plural(count: int, noun: str) -> str:
    """``1 manifest``, ``2 manifests``, ``no manifests``."""
    return f"{count or 'no'} {noun}{'' if count == 1 else 's'}"


def missing_paths(paths: Sequence[str], workdir: Path) -> list[str]:
    """The given ``paths`` that do not exist (relative to ``workdir``)."""
    return [p for p in paths if not (workdir / p).exists()]


def changed_only(run: LintRun, chosen: ChangedFiles, workdir: Path) -> LintRun:
    """``run`` restricted to the results of the files in ``chosen``."""
    wanted = {(workdir / p).resolve() for p in chosen.paths}
    kept = tuple(r for r in run.results
                 if r.target.path and (workdir / r.target.path).resolve() in wanted)
    return replace(run, results=kept)


def write_outputs(env: Mapping[str, str], outputs: Mapping[str, str]) -> None:
    """Append ``name=value`` lines to ``$GITHUB_OUTPUT`` (when set)."""
    target = env.get("GITHUB_OUTPUT")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            handle.write(f"{name}={value}\n")


def append_summary(env: Mapping[str, str], text: str) -> None:
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")


def outputs_of(run: LintRun, sarif_file: str | None) -> dict[str, str]:
    findings = sum(len(r.findings) for r in run.results)
    return {
        "findings": str(findings),
        "errors": str(run.count(Severity.ERROR)),
        "warnings": str(run.count(Severity.WARNING)),
        "sarif-file": sarif_file or "",
    }


def render(run: LintRun, formats: Sequence[str]) -> dict[str, str]:
    """Each requested built-in format of ``run``, by name."""
    from kvlint.plugins import get_plugin_manager
    from kvlint.registry import Registry

    registry = Registry.from_plugins(get_plugin_manager(load_entry_points=False))
    return {name: registry.reporter(name)().render(run) for name in formats}


def report(run: LintRun, env: Mapping[str, str], chosen: ChangedFiles, *,
           sarif_file: str | None, summary: bool,
           workdir: Path | None = None) -> tuple[str, int]:
    """Annotations (returned, for stdout), summary, SARIF and outputs; and the exit code.

    On a pull request (``chosen.pull_request``) ``run`` may cover the whole repository:
    the SARIF reports all of it, everything else only the changed files."""
    reason = chosen.reason
    if chosen.pull_request:
        whole = run
        run = changed_only(run, chosen, workdir or Path.cwd())
        if sarif_file:
            reason += (f"; the SARIF report covers the whole repository "
                       f"({plural(len(whole.results), 'result')})")
            Path(sarif_file).parent.mkdir(parents=True, exist_ok=True)
            Path(sarif_file).write_text(render(whole, ["sarif"])["sarif"], encoding="utf-8")
    elif sarif_file:
        Path(sarif_file).parent.mkdir(parents=True, exist_ok=True)
        Path(sarif_file).write_text(render(run, ["sarif"])["sarif"], encoding="utf-8")
    rendered = render(run, ["github", "markdown"])
    if summary:
        body = rendered["markdown"]
        body = body.removeprefix("## kvlint\n").lstrip("\n")  # the summary has its heading
        append_summary(env, f"## kvlint\n\n{reason}.\n\n{body}")
    write_outputs(env, outputs_of(run, sarif_file))
    return rendered["github"], run.exit_code


def environment() -> dict[str, str]:
    return dict(os.environ)
