"""The GitHub Action's logic (``kvlint github-action``), kept in the package so it is tested.

On a pull request it lints the manifests the PR changes (from the event's base and head
SHAs), on other events the whole checkout; it prints workflow-command annotations, appends a
Markdown summary to ``$GITHUB_STEP_SUMMARY`` (GitHub shows only about ten annotations per type
and step, so the summary lists everything), writes SARIF when asked, sets the step outputs
in ``$GITHUB_OUTPUT`` and returns the exit code the ``fail-on`` threshold gives.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
                        f"{len(names)} manifest(s) changed between {base[:7]} and {head[:7]}")


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
           sarif_file: str | None, summary: bool) -> tuple[str, int]:
    """Annotations (returned, for stdout), summary, SARIF and outputs; and the exit code."""
    wanted = ["github", "markdown"] + (["sarif"] if sarif_file else [])
    rendered = render(run, wanted)
    if sarif_file:
        Path(sarif_file).parent.mkdir(parents=True, exist_ok=True)
        Path(sarif_file).write_text(rendered["sarif"], encoding="utf-8")
    if summary:
        append_summary(env, f"## kvlint\n\n{chosen.reason}.\n\n{rendered['markdown']}")
    write_outputs(env, outputs_of(run, sarif_file))
    return rendered["github"], run.exit_code


def environment() -> dict[str, str]:
    return dict(os.environ)
