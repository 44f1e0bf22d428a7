"""What every linting command sets up (settings, plugins, rules, outputs) and how it ends
(reports rendered, then written; the exit code)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from kvlint.cli.options import output_flag
from kvlint.cli.output import display_style, echo_config_errors, emit, terminal_width
from kvlint.errors import UsageError

if TYPE_CHECKING:
    import pluggy

    from kvlint.diagnostics import Finding
    from kvlint.linter import LintRun
    from kvlint.lock.files import ModelLock
    from kvlint.registry import Registry
    from kvlint.reporters.base import Reporter
    from kvlint.rules.base import Rule
    from kvlint.settings import LoadedSettings, Settings
    from kvlint.suppress import Policy


def plugin_registry(no_plugins: bool) -> Registry:
    from kvlint.plugins import get_plugin_manager
    from kvlint.registry import Registry

    return Registry.from_plugins(get_plugin_manager(load_entry_points=not no_plugins))


def split_codes(values: Sequence[str]) -> list[str]:
    """``--select KV2,KV101 --select KV9`` -> ``['KV2', 'KV101', 'KV9']``."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _default_format() -> str:
    """github under GitHub Actions; concise under pre-commit (one line per finding in the
    hook's output, whatever args the hook is given); text otherwise."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        return "github"
    return "concise" if os.environ.get("PRE_COMMIT") == "1" else "text"


def model_lock(starts: Sequence[Path], settings_path: Path | None, lock_file: str | None,
                locked: bool, *, isolated: bool = False) -> ModelLock:
    from kvlint.lock.files import run_lock

    return run_lock(starts, settings_path, lock_file, required=locked, isolated=isolated)


@dataclass(frozen=True)
class RuleSelection:
    """What --select, --extend-select and --ignore named (each may be given several times,
    each time a comma-separated list)."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass
class Session:
    """What every linting command sets up: settings, plugins, rules and the outputs."""

    settings: Settings
    root: Path
    pm: pluggy.PluginManager
    registry: Registry
    rules: tuple[type[Rule], ...]
    fail_on: str
    outputs: list[tuple[type[Reporter], str | None]]
    policy: Policy
    settings_path: Path | None = None
    isolated: bool = False
    lock: ModelLock | None = None
    selectors: tuple[str, ...] = ()
    """What --select and --extend-select named (infos they match are shown one by one)."""

    @classmethod
    def start(cls, starts: list[Path], config_file: str | None, isolated: bool,
              no_plugins: bool, selection: RuleSelection, fail_on: str | None,
              formats: tuple[str, ...], outputs: tuple[str, ...]) -> Session:
        from kvlint import settings as settings_module
        from kvlint.outputs import check_outputs
        from kvlint.plugins import get_plugin_manager
        from kvlint.registry import Registry
        from kvlint.suppress import Policy

        loaded = settings_module.load(starts, config=config_file, isolated=isolated)
        d = loaded.settings
        pm = get_plugin_manager(load_entry_points=not no_plugins)
        select, extend_select, ignore = \
            selection.select, selection.extend_select, selection.ignore
        registry = Registry.from_plugins(pm)
        _check_codes(registry, loaded)
        chosen = split_codes(select) or d.select
        rules = registry.select(chosen, [*d.ignore, *split_codes(ignore)],
                                [*d.extend_select, *split_codes(extend_select)])
        if output_flag("show_settings"):
            from kvlint.settings_view import render_settings

            click.echo(render_settings(loaded, rules, fail_on), nl=False)
            sys.exit(0)
        paired = _outputs(registry, formats, outputs)
        check_outputs([o for _, o in paired if o],
                      [*map(str, starts), *([config_file] if config_file else [])])
        return cls(settings=d, root=loaded.root, pm=pm, registry=registry, rules=rules,
                   fail_on=fail_on or d.fail_on or "error", outputs=paired,
                   policy=Policy(per_file_ignores=d.per_file_ignores, severity=d.severity,
                                 root=loaded.root),
                   settings_path=loaded.path, isolated=isolated,
                   selectors=(*split_codes(select), *split_codes(extend_select)))

    def model_lock(self, starts: Sequence[Path], lock_file: str | None,
                   locked: bool) -> ModelLock:
        """The run's model lock (``--locked`` or ``locked = true``: required)."""
        self.lock = model_lock(starts, self.settings_path, lock_file,
                                locked or bool(self.settings.locked), isolated=self.isolated)
        return self.lock

    @property
    def unused_suppression(self) -> Finding | None:
        """The KV901 template, when KV901 is selected."""
        rule = next((r for r in self.rules if r.code == "KV901"), None)
        return rule().finding("") if rule else None

    def finish(self, run: LintRun) -> NoReturn:
        from kvlint.suppress import apply

        if self.lock is not None:
            self.lock.raise_missing()  # a locked run that lacked models reports only that
        if run.results and any(r.target.kind == "model" for r in run.results):
            run = replace(run, results=tuple(apply(run.results, {}, policy=self.policy)))
        # Render every report before writing any: a render that fails leaves all files as
        # they were.
        rendered = [(self._render(reporter, run, output), output)
                    for reporter, output in self.outputs]
        for text, output in rendered:
            emit(text, output)
        echo_config_errors(run)
        sys.exit(run.exit_code)

    def _render(self, reporter: type[Reporter], run: LintRun, output: str | None) -> str:
        """One report, laid out for where it goes (``--statistics`` replaces what prints)."""
        from kvlint.reporters.display import Display, explicit_infos

        if output is None and output_flag("statistics"):
            from kvlint.reporters.statistics import engine_commands, render_statistics

            summary = engine_commands(run)
            if summary:  # beside ruff's table, not in it: tools parse the table
                sys.stderr.write(summary)
            return render_statistics(run, display_style(output))
        instance = reporter()
        instance.display = Display(
            width=terminal_width() if output is None else None, style=display_style(output),
            quiet=output_flag("quiet"), verbose=output_flag("verbose"),
            shown_infos=explicit_infos(self.registry, self.selectors))
        return instance.render(run)


def _check_codes(registry: Registry, loaded: LoadedSettings) -> None:
    """Every rule code, prefix or name the settings file uses is known (else an error naming
    the file and the key)."""
    d = loaded.settings
    selectors = {"select": d.select or [], "ignore": d.ignore, "extend-select": d.extend_select,
                 **{f"per-file-ignores '{glob}'": codes
                    for glob, codes in d.per_file_ignores.items()}}
    for key, codes in selectors.items():
        for code in codes:
            try:
                registry.select([code])
            except UsageError as err:
                raise UsageError(f"{loaded.where}: {key}: {err}") from None
    for code in d.severity:
        try:
            registry.rule(code)
        except UsageError as err:
            raise UsageError(f"{loaded.where}: severity: {err}") from None


def _outputs(registry: Registry, formats: tuple[str, ...], outputs: tuple[str, ...]
             ) -> list[tuple[type[Reporter], str | None]]:
    """Pair formats with outputs: the outputs go to the last formats, the others print."""
    names = list(formats) or [_default_format_name(registry)]
    if len(outputs) > len(names):
        if len(names) == 1 and not formats:
            names = names * len(outputs)
        else:
            raise UsageError(f"{len(outputs)} --output files for {len(names)} --format values")
    files: list[str | None] = [None] * (len(names) - len(outputs)) + list(outputs)
    if files.count(None) > 1:
        raise UsageError("only one --format can print to stdout; give the others --output")
    return [(registry.reporter(name), file) for name, file in zip(names, files, strict=True)]


def _default_format_name(registry: Registry) -> str:
    wanted = _default_format()
    return wanted if wanted in {r.name for r in registry.reporters} else "text"
