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
import re
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kvlint.diagnostics import Severity
from kvlint.errors import InputError
from kvlint.linter import LintRun
from kvlint.reporters.escape import printable

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
OBJECT_NAME = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
"""A full git object name: SHA-1 (40 hex digits) or SHA-256 (64)."""


@dataclass(frozen=True)
class ChangedFiles:
    """What to lint: ``paths``; ``reason`` says how they were chosen. ``unreadable``: changed
    files that are not regular files inside the checkout (a link to ``/dev/null`` or out
    of the repository, a FIFO), each with why; they become KV903 findings, not an abort."""

    paths: tuple[str, ...]
    reason: str
    pull_request: bool = False
    """The paths are a pull request's changes (not the whole repository, nor given)."""
    unreadable: tuple[tuple[str, str], ...] = ()


def _sha(event_path: str, event: object, side: str) -> str:
    """``pull_request.<side>.sha`` of the event, checked to be a full object name: it is
    passed to git, so ``--output=/path`` or ``HEAD~1`` must never get there."""
    try:
        value = event["pull_request"][side]["sha"]  # type: ignore[index]
    except (KeyError, TypeError, IndexError) as err:
        raise InputError(f"{event_path}: not a pull_request event with base and head SHAs "
                         f"(missing {err})") from None
    if not isinstance(value, str) or not OBJECT_NAME.fullmatch(value):
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InputError(f"{event_path}: pull_request.{side}.sha is {shown}, expected a commit "
                         "SHA (40 or 64 hex digits)")
    return value


def unreadable_reason(name: str, workdir: Path) -> str | None:
    """Why the changed file ``name`` cannot be linted (``None`` when it can, or when it is
    not in the checkout at all): only regular files inside ``workdir`` are read."""
    path = workdir / name
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return None
    root = os.path.realpath(workdir)
    target = os.path.realpath(path)
    if os.path.commonpath([root, target]) != root:
        return "a symbolic link out of the repository; not followed"
    try:
        mode = os.stat(target).st_mode
    except OSError as err:
        return f"cannot be read ({err.strerror or type(err).__name__})"
    if not stat.S_ISREG(mode):
        return "not a regular file (a device, FIFO, socket or directory); not read"
    return None


def changed_files(env: Mapping[str, str], workdir: Path) -> ChangedFiles:
    """The manifests a pull request adds or modifies; the whole checkout otherwise."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    event_path = env.get("GITHUB_EVENT_PATH")
    if event_name not in ("pull_request", "pull_request_target") or not event_path:
        return ChangedFiles((".",), f"{event_name or 'no'} event: the whole repository")
    event = read_event(event_path)
    base = _sha(event_path, event, "base")
    head = _sha(event_path, event, "head")
    proc = subprocess.run(
        ["git", "diff", "--name-only", "--diff-filter=ACMR", "-z", "--end-of-options",
         f"{base}...{head}", "--"],
        cwd=workdir, capture_output=True, text=True, errors="surrogateescape", check=False)
    if proc.returncode != 0:
        raise InputError(
            f"git diff {base[:12]}...{head[:12]} failed: {proc.stderr.strip().splitlines()[-1:]}"
            " (check out with fetch-depth: 0 so both commits are present)")
    names = [n for n in proc.stdout.split("\0") if n.endswith(MANIFEST_SUFFIXES)]
    reasons = {n: unreadable_reason(n, workdir) for n in names}
    paths = tuple(sorted(n for n, why in reasons.items() if why is None))
    bad = tuple(sorted((n, why) for n, why in reasons.items() if why is not None))
    return ChangedFiles(paths,
                        f"{plural(len(names), 'manifest')} changed between {base[:7]} and "
                        f"{head[:7]}", pull_request=True, unreadable=bad)


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


MAX_EVENT_BYTES = 16 * 1024 * 1024
"""``$GITHUB_EVENT_PATH`` (GitHub's payloads are well under 1 MiB; larger is refused)."""
MAX_EVENT_DEPTH = 64
"""Nesting of the event payload (GitHub's are about ten deep; deeper is refused)."""
FILE_VARIABLES = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")


def _depth_within(value: object, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests at most ``limit`` deep (walked without
    recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def read_event(event_path: str) -> object:
    """The event payload at ``event_path``: a regular file (a FIFO, a directory or
    ``/dev/zero`` is refused without blocking), at most :data:`MAX_EVENT_BYTES`, JSON nested
    at most :data:`MAX_EVENT_DEPTH` deep; :class:`InputError` (one line) otherwise."""
    from kvlint.loaders.files import UnreadableFile, read_bytes

    shown = printable(event_path)
    try:
        data = read_bytes(event_path, MAX_EVENT_BYTES)
    except UnreadableFile as err:
        raise InputError(f"GITHUB_EVENT_PATH {shown}: {err}") from None
    try:
        event = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise InputError(f"GITHUB_EVENT_PATH {shown}: nested more than {MAX_EVENT_DEPTH} "
                         "deep; not read") from None
    except ValueError as err:
        raise InputError(f"{shown}: not a pull_request event with base and head SHAs "
                         f"({type(err).__name__})") from None
    if not _depth_within(event, MAX_EVENT_DEPTH):
        raise InputError(f"GITHUB_EVENT_PATH {shown}: nested more than {MAX_EVENT_DEPTH} "
                         "deep; not read")
    return event


def _open_append(variable: str, target: str) -> int:
    """A descriptor appending to the file ``target`` names (``$variable``): created when
    missing; a link, a FIFO (opened without blocking), a directory, a device or a file that
    cannot be written is refused with one line (:class:`InputError`), nothing written."""
    shown = printable(target)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | \
        getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_BINARY", 0)
    try:
        if stat.S_ISLNK(os.lstat(target).st_mode):
            raise InputError(f"{variable} {shown}: a symbolic link; not written")
    except (OSError, ValueError):
        pass  # missing: created below
    try:
        fd = os.open(target, flags, 0o666)
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else \
            type(err).__name__
        raise InputError(f"{variable} {shown}: cannot be written ({reason})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as err:
        os.close(fd)
        raise InputError(f"{variable} {shown}: cannot be written ({err.strerror})") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(f"{variable} {shown}: not a regular file; not written")
    return fd


def check_files(env: Mapping[str, str]) -> None:
    """Refuse, before any work, an unusable ``$GITHUB_OUTPUT`` / ``$GITHUB_STEP_SUMMARY``
    (one line, exit 2)."""
    for variable in FILE_VARIABLES:
        target = env.get(variable)
        if target:
            os.close(_open_append(variable, target))


def _append(variable: str, target: str, text: str) -> None:
    fd = _open_append(variable, target)
    try:
        with os.fdopen(fd, "ab") as handle:
            handle.write(text.encode("utf-8", "backslashreplace"))
    except OSError as err:
        raise InputError(f"{variable} {printable(target)}: cannot be written "
                         f"({err.strerror or type(err).__name__})") from None


def write_outputs(env: Mapping[str, str], outputs: Mapping[str, str]) -> None:
    """Append ``name=value`` lines to ``$GITHUB_OUTPUT`` (when set)."""
    target = env.get("GITHUB_OUTPUT")
    if not target:
        return
    # one line each: no forged outputs
    _append("GITHUB_OUTPUT", target,
            "".join(f"{name}={printable(value)}\n" for name, value in outputs.items()))


def append_summary(env: Mapping[str, str], text: str) -> None:
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        _append("GITHUB_STEP_SUMMARY", target, text if text.endswith("\n") else text + "\n")


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


def with_unreadable(run: LintRun, chosen: ChangedFiles) -> LintRun:
    """``run`` plus one KV903 result per changed file that could not be read."""
    if not chosen.unreadable:
        return run
    from kvlint.lint.runner import problem_result
    from kvlint.manifests.base import ManifestProblem

    extra = tuple(problem_result(ManifestProblem(name, None, f"{name}: {why}", "unreadable"),
                                 run.rules) for name, why in chosen.unreadable)
    return replace(run, results=run.results + extra)


def report(run: LintRun, env: Mapping[str, str], chosen: ChangedFiles, *,
           sarif_file: str | None, summary: bool,
           workdir: Path | None = None) -> tuple[str, int]:
    """Annotations (returned, for stdout), summary, SARIF and outputs; and the exit code.

    On a pull request (``chosen.pull_request``) ``run`` may cover the whole repository:
    the SARIF reports all of it, everything else only the changed files."""
    from kvlint.outputs import write_report

    reason = chosen.reason
    whole = with_unreadable(run, chosen)
    run = whole
    if chosen.pull_request:
        run = with_unreadable(changed_only(run, chosen, workdir or Path.cwd()), chosen)
        if sarif_file:
            reason += (f"; the SARIF report covers the whole repository "
                       f"({plural(len(whole.results), 'result')})")
    rendered = render(run, ["github", "markdown"])
    if sarif_file:
        sarif = render(whole, ["sarif"])["sarif"]
        Path(sarif_file).parent.mkdir(parents=True, exist_ok=True)
        write_report(sarif_file, sarif.encode("utf-8", "backslashreplace"))
    if summary:
        body = rendered["markdown"]
        body = body.removeprefix("## kvlint\n").lstrip("\n")  # the summary has its heading
        append_summary(env, f"## kvlint\n\n{reason}.\n\n{body}")
    write_outputs(env, outputs_of(run, sarif_file))
    return rendered["github"], run.exit_code


def environment() -> dict[str, str]:
    return dict(os.environ)
