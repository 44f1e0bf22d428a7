"""``kvlint github-action``: what action.yml runs on a pull request."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from kvlint.cli.options import (
    env_offline,
    gpu_source,
    local_ref,
)
from kvlint.cli.output import echo_unavailable, fail
from kvlint.cli.session import RuleSelection, Session
from kvlint.diagnostics import FAIL_ON_CHOICES
from kvlint.loaders.paths import exists
from kvlint.model.serving import ServingPlan


@click.command("github-action")
@click.option("--paths", default="", help="Files or directories to lint, space-separated "
              "(default: the manifests a pull request changes; the repository otherwise).")
@click.option("--config", "config_file", default="", help="Settings file.")
@click.option("--fail-on", type=click.Choice(["", *FAIL_ON_CHOICES]), default="",
              help="Threshold for a failing check [default: the settings' or error].")
@click.option("--sarif-file", default="", help="Write SARIF to this file.")
@click.option("--summary", type=click.Choice(["true", "false"]), default="true",
              help="Write the Markdown summary to $GITHUB_STEP_SUMMARY.")
@click.option("--offline", type=click.Choice(["true", "false"]), default="false",
              help="Read Hub configs from the runner's cache only.")
@click.option("--lock", "lock_file", default="",
              help="Model lock [default: kvlint.lock next to the settings file, if any].")
@click.option("--locked", type=click.Choice(["true", "false"]), default="false",
              help="Read Hub models from the lock only (a model it lacks fails the step).")
@click.option("--cache", type=click.Choice(["true", "false"]), default="true",
              help="Reuse and keep each file's results in kvlint's result cache "
                   "($KVLINT_CACHE_DIR; action.yml restores it between runs).")
def github_action(paths: str, config_file: str, fail_on: str, sarif_file: str, summary: str,
                  offline: str, lock_file: str, locked: str, cache: str) -> None:
    """Run as the GitHub Action does (action.yml calls this): lint the PR's manifests,
    annotate, summarise, write SARIF and the step outputs; exit by fail-on."""
    from kvlint.cache import result_cache_disabled
    from kvlint.integrations import github
    from kvlint.lint.discovery import DEFAULT_INCLUDE, discover
    from kvlint.lint.options import LintOptions
    from kvlint.lint.runner import lint_paths

    env = github.environment()
    workdir = Path.cwd()
    # an unusable $GITHUB_OUTPUT / $GITHUB_STEP_SUMMARY (a FIFO, a directory, a device, a
    # link, unwritable) is one line and exit 2 before any work, never a hang
    github.check_files(env)
    given = tuple(paths.split())
    if given:
        missing = github.missing_paths(given, workdir)
        if missing:
            _action_fail(f"--paths: {', '.join(missing)}: no such file or directory")
        if not discover(given):
            _action_fail(f"--paths {' '.join(given)}: no manifest files "
                         f"({', '.join(DEFAULT_INCLUDE)}) to lint")
    chosen = github.ChangedFiles(given, "the paths given") if given \
        else github.changed_files(env, workdir)
    session = Session.start([Path(p) for p in chosen.paths], config_file or None, False,
                            False, RuleSelection(), fail_on or None, ("github",), ())
    d = session.settings
    mapping = {name: local_ref(ref, session.root) for name, ref in d.models.items()}
    lock = session.model_lock([Path(p) for p in chosen.paths], lock_file or None,
                              locked == "true")
    # A pull request's SARIF covers the whole repository (see integrations/github.py).
    targets = ["."] if chosen.pull_request and sarif_file else \
        [p for p in chosen.paths if exists(Path(p))]
    run = lint_paths(targets, LintOptions(
        rules=session.rules, pm=session.pm,
        base=ServingPlan(gpu=d.gpu, gpu_source=gpu_source(None, d.gpu)),
        offline=offline == "true" or bool(d.offline) or env_offline(), model_map=mapping,
        fail_on=session.fail_on, policy=session.policy,
        unused_suppression=session.unused_suppression, lock=lock,
        cache=cache == "true" and d.cache is not False and not result_cache_disabled(),
        cache_context=(repr(d), str(session.root))))
    lock.raise_missing()
    annotations, code = github.report(run, env, chosen, sarif_file=sarif_file or None,
                                      summary=summary == "true", workdir=workdir)
    click.echo(annotations, nl=False)
    echo_unavailable(run)
    sys.exit(code)


def _action_fail(message: str) -> NoReturn:
    """The Action's input is wrong: an ::error annotation (stdout) and one line, exit 2."""
    from kvlint.reporters.github import command

    click.echo(command("error", message, {"title": "kvlint"}))
    fail(message)
