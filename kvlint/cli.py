"""The command line (docs/design.md §7). The only module that imports click."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from kvlint import __version__
from kvlint.diagnostics import FAIL_ON_CHOICES
from kvlint.engine_names import ENGINES
from kvlint.errors import KvlintError, UsageError
from kvlint.loaders.paths import exists
from kvlint.model.gpu_memory import MAX_GPU_MEMORY_GIB, gpu_memory_bytes
from kvlint.model.kv import KV_CACHE_DTYPES, ParallelLayout
from kvlint.model.limits import MAX_GIB, MAX_LAYERS, MAX_PARALLEL, MAX_SIZE
from kvlint.model.serving import DEFAULT_CONTEXT, ServingPlan

if TYPE_CHECKING:  # imported where used: --version and --help stay light
    import pluggy

    from kvlint.diagnostics import Finding
    from kvlint.linter import LintRun
    from kvlint.loaders.lock import ModelLock
    from kvlint.registry import Registry
    from kvlint.reporters.base import Reporter
    from kvlint.rules.base import Rule
    from kvlint.settings import LoadedSettings, Settings
    from kvlint.suppress import Policy

F = TypeVar("F", bound=Callable[..., Any])
OFFLINE_ENV = "HF_HUB_OFFLINE"


def _error(message: str) -> None:
    """One line on stderr: nothing a terminal or a CI runner acts on (controls, lone
    surrogates and newlines shown as escapes)."""
    from kvlint.reporters.escape import printable

    click.echo(f"kvlint: error: {printable(message)}", err=True)


def _fail(message: str) -> NoReturn:
    _error(message)
    sys.exit(2)


def _registry(no_plugins: bool) -> Registry:
    from kvlint.plugins import get_plugin_manager
    from kvlint.registry import Registry

    return Registry.from_plugins(get_plugin_manager(load_entry_points=not no_plugins))


def _codes(values: Sequence[str]) -> list[str]:
    """``--select KV2,KV101 --select KV9`` -> ``['KV2', 'KV101', 'KV9']``."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _emit(text: str, output: str | None) -> None:
    """``text`` to ``output`` (replaced atomically) or stdout, as UTF-8; a character UTF-8
    cannot carry (a lone surrogate from a file name) as its ``\\udcXX`` escape."""
    from kvlint.outputs import write_report

    data = text.encode("utf-8", "backslashreplace")
    if output:
        write_report(output, data)
    else:
        click.echo(data, nl=False)


def _default_format() -> str:
    """github under GitHub Actions; concise under pre-commit (one line per finding in the
    hook's output, whatever args the hook is given); text otherwise."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        return "github"
    return "concise" if os.environ.get("PRE_COMMIT") == "1" else "text"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The output options of common_options (--statistics, -q, -v, --show-settings) are kept
    in the click context's ``meta`` and read by :class:`Session`, so the commands'
    signatures do not carry them."""
    ctx.meta[f"kvlint.{param.name}"] = value
    return value


def _meta(name: str) -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx.meta.get(f"kvlint.{name}")) if ctx is not None else False


def common_options(func: F) -> F:
    """The output and selection options every linting command shares."""
    decorators = [
        click.option("--format", "formats", multiple=True, metavar="FORMAT",
                     help="Output format: text (default; github under GitHub Actions, concise "
                          "under pre-commit), concise, json, sarif, github, markdown, junit; "
                          "plugins may add more. Repeatable."),
        click.option("--output", "-o", "outputs", multiple=True,
                     type=click.Path(dir_okay=False),
                     help="Write a report to FILE. Outputs pair with the last formats: "
                          "--format text --format sarif -o r.sarif prints text, writes SARIF."),
        click.option("--select", multiple=True, metavar="CODES",
                     help="Only these rules (codes, prefixes like KV2, or names); repeatable."),
        click.option("--extend-select", multiple=True, metavar="CODES",
                     help="Rules to add to the selection (of the settings file or --select)."),
        click.option("--ignore", multiple=True, metavar="CODES",
                     help="Skip these rules (codes, prefixes or names); repeatable. The most "
                          "specific of --select/--ignore decides each rule."),
        click.option("--fail-on", type=click.Choice(FAIL_ON_CHOICES), default=None,
                     help="Exit 1 when a finding is at least this severe [default: error]."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     default=None, help="Settings file (else the nearest pyproject.toml "
                                        "[tool.kvlint], .kvlint.toml or kvlint.toml)."),
        click.option("--isolated", is_flag=True, help="Ignore every settings file."),
        click.option("--no-plugins", is_flag=True,
                     help="Do not load third-party plugins (entry-point group 'kvlint')."),
        click.option("--statistics", is_flag=True, expose_value=False, callback=_remember,
                     help="Print a count per rule code instead of the findings."),
        click.option("--quiet", "-q", is_flag=True, expose_value=False, callback=_remember,
                     help="Print the findings only: no model tables, no summary lines."),
        click.option("--verbose", "-v", is_flag=True, expose_value=False, callback=_remember,
                     help="Show every info (by default they are counted in one line unless "
                          "--select or --extend-select names them)."),
        click.option("--show-settings", is_flag=True, expose_value=False, callback=_remember,
                     help="Print the resolved settings (file, serving defaults, rule "
                          "selection) and exit."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def plan_options(func: F) -> F:
    """The GPU and capacity options of ``check`` and ``compare``."""
    decorators = [
        click.option("--gpu", default=None, metavar="NAME",
                     help="GPU model (H100-80GB, H200, L4, MI300X...): adds weights, KV budget, "
                          "max sequences and the decode roofline."),
        click.option("--gpu-memory", "gpu_memory_gib", type=GPU_MEMORY, default=None,
                     metavar="GIB", help=GPU_MEMORY_HELP),
        click.option("--gpu-memory-utilization", type=_FiniteFloat(0, 1, min_open=True),
                     default=None, help="Fraction of GPU memory the engine may use "
                                        "(default: the engine's own default)."),
        click.option("--overhead", "overhead_gib", type=_FiniteFloat(0, MAX_GIB), default=None,
                     metavar="GIB", help="Per-GPU memory for activations, CUDA graphs and "
                                         "buffers, in GiB (default: vLLM's start-up profile, "
                                         "estimated; 2 for other engines)."),
        click.option("--max-model-len", type=COUNT, default=None,
                     help="Longest sequence the engine admits (default: the model's own)."),
        click.option("--max-num-seqs", type=COUNT, default=None,
                     help="Most sequences the engine runs at once."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def manifest_options(func: F) -> F:
    """How the commands that read manifests (``lint``, ``lock``) find them and their models."""
    decorators = [
        click.option("--include", multiple=True, metavar="GLOB",
                     help="File names to read under directories (default *.yaml, *.yml, "
                          "*.json)."),
        click.option("--exclude", multiple=True, metavar="GLOB",
                     help="Paths or names to skip."),
        click.option("--model-map", multiple=True, metavar="NAME=REF",
                     help="Resolve a manifest's local path or placeholder to a Hub id or "
                          "config."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _model_map(items: Sequence[str]) -> dict[str, str]:
    """``--model-map NAME=REF`` values as a mapping (UsageError for a malformed one)."""
    mapping: dict[str, str] = {}
    for item in items:
        name, sep, ref = item.partition("=")
        if not sep or not name or not ref:
            raise UsageError(f"--model-map {item!r}: expected NAME=REF")
        mapping[name] = ref
    return mapping


def lock_options(func: F) -> F:
    """The model-lock options of the commands that read models."""
    decorators = [
        click.option("--lock", "lock_file", type=click.Path(dir_okay=False), default=None,
                     metavar="FILE", help="Model lock to read Hub models from [default: "
                                          "kvlint.lock next to the settings file, else the "
                                          "nearest one above the inputs or here]."),
        click.option("--locked", is_flag=True, default=False,
                     help="Read Hub models from the lock only: a model it lacks is an error "
                          "(exit 2; also `locked = true`)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _model_lock(starts: Sequence[Path], settings_path: Path | None, lock_file: str | None,
                locked: bool, *, isolated: bool = False) -> ModelLock:
    from kvlint.loaders.lock import run_lock

    return run_lock(starts, settings_path, lock_file, required=locked, isolated=isolated)


T = TypeVar("T")


class _FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses ``inf`` and ``nan`` (which FloatRange lets through)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if not math.isfinite(result):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return result


GPU_MEMORY = _FiniteFloat(0, MAX_GPU_MEMORY_GIB, min_open=True)
"""--gpu-memory: GiB of one GPU (kvlint.model.gpu_memory)."""
GPU_MEMORY_HELP = ("Total memory of one GPU in GiB, as the driver reports it (nvidia-smi MiB "
                   "/ 1024): replaces the --gpu table's memory (its bandwidth stays); alone, "
                   "sizes any GPU, without the decode roofline.")

DEGREE = click.IntRange(min=1, max=MAX_PARALLEL)
"""tp, pp, dp: no model replica spans more GPUs (kvlint.model.limits)."""
COUNT = click.IntRange(min=1, max=MAX_SIZE)
"""Tokens and sequences: bounded so the byte arithmetic stays finite."""


def _pick(cli: T | None, setting: T | None, default: T) -> T:
    """The command line wins over the settings file, which wins over the default."""
    if cli is not None:
        return cli
    return setting if setting is not None else default


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
              no_plugins: bool, select: tuple[str, ...], extend_select: tuple[str, ...],
              ignore: tuple[str, ...], fail_on: str | None, formats: tuple[str, ...],
              outputs: tuple[str, ...]) -> Session:
        from kvlint import settings as settings_module
        from kvlint.outputs import check_outputs
        from kvlint.plugins import get_plugin_manager
        from kvlint.registry import Registry
        from kvlint.suppress import Policy

        loaded = settings_module.load(starts, config=config_file, isolated=isolated)
        d = loaded.settings
        pm = get_plugin_manager(load_entry_points=not no_plugins)
        registry = Registry.from_plugins(pm)
        _check_codes(registry, loaded)
        chosen = _codes(select) or d.select
        rules = registry.select(chosen, [*d.ignore, *_codes(ignore)],
                                [*d.extend_select, *_codes(extend_select)])
        if _meta("show_settings"):
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
                   selectors=(*_codes(select), *_codes(extend_select)))

    def model_lock(self, starts: Sequence[Path], lock_file: str | None,
                   locked: bool) -> ModelLock:
        """The run's model lock (``--locked`` or ``locked = true``: required)."""
        self.lock = _model_lock(starts, self.settings_path, lock_file,
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
            _emit(text, output)
        _echo_config_errors(run)
        sys.exit(run.exit_code)

    def _render(self, reporter: type[Reporter], run: LintRun, output: str | None) -> str:
        """One report, laid out for where it goes (``--statistics`` replaces what prints)."""
        from kvlint.reporters.display import Display, explicit_infos

        if output is None and _meta("statistics"):
            from kvlint.reporters.statistics import render_statistics

            return render_statistics(run, _display_style(output))
        instance = reporter()
        instance.display = Display(
            width=_terminal_width() if output is None else None, style=_display_style(output),
            quiet=_meta("quiet"), verbose=_meta("verbose"),
            shown_infos=explicit_infos(self.registry, self.selectors))
        return instance.render(run)


def _stdout_isatty() -> bool:
    """Whether stdout is a terminal (False under click's CliRunner, whose stdout is a buffer;
    a closed or detached stream counts as no terminal)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_width() -> int | None:
    """The terminal's columns (``COLUMNS`` first) when stdout is one; ``None`` (no wrapping)
    when it is a pipe or a file."""
    import shutil

    return shutil.get_terminal_size().columns if _stdout_isatty() else None


def _display_style(output: str | None) -> Callable[..., str] | None:
    """``click.style`` when the report is coloured: ``FORCE_COLOR`` (non-empty) forces
    colour even into a pipe, ``NO_COLOR`` (non-empty) turns it off, else a terminal gets it.
    Files written with --output are never coloured. FORCE_COLOR wins over NO_COLOR, as in
    ruff."""
    if output is not None:
        return None
    if os.environ.get("FORCE_COLOR"):
        return click.style
    if os.environ.get("NO_COLOR"):
        return None
    return click.style if _stdout_isatty() else None


def _echo_config_errors(run: LintRun) -> None:
    """One line on stderr for each config that did not resolve, one for the models the Hub
    could not be asked about."""
    from kvlint.reporters.escape import printable

    for result in run.results:
        if result.config_error and result.target.ref not in run.unavailable:
            click.echo(f"kvlint: error: {printable(result.config_error)}", err=True)
    _echo_unavailable(run)


def _echo_unavailable(run: LintRun) -> None:
    """One line on stderr for every model the Hub could not be asked about."""
    line = run.unavailable_line()
    if line is not None:
        click.echo(f"kvlint: error: {line}", err=True)


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


def _usage_message(err: click.UsageError) -> str:
    """A click usage error as kvlint's one line: ``--tp: 0 is not in the range x>=1``."""
    param = err.param if isinstance(err, click.BadParameter) else None
    if param is None or isinstance(err, click.MissingParameter) or not err.message:
        return err.format_message()
    names = [o for o in param.opts if o.startswith("--")] or param.opts
    name = names[0] if names and isinstance(param, click.Option) else \
        param.human_readable_name
    return f"{name}: {err.message}"


def _usage_error(err: click.UsageError) -> bool:
    """Whether ``err`` is a mistake to report in one line (not the help a bare ``kvlint``
    prints)."""
    return type(err).__name__ != "NoArgsIsHelpError"


class _Group(click.Group):
    """Turns kvlint errors and click's usage errors into one line on stderr and exit 2,
    never a traceback or click's four-line usage block."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as err:
            if not _usage_error(err):
                raise
            _fail(_usage_message(err))

    def invoke(self, ctx: click.Context) -> Any:
        from kvlint.loaders import hub_guard

        hub_guard.reset()  # each command is a new run: no endpoint known down, no time spent
        try:
            return super().invoke(ctx)
        except KvlintError as err:
            _fail(str(err))
        except KeyboardInterrupt:
            _fail("interrupted")
        except click.UsageError as err:
            if not _usage_error(err):
                raise
            _fail(_usage_message(err))
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as err:
            if os.environ.get("KVLINT_DEBUG"):
                raise
            _fail(f"internal error: {type(err).__name__}: {err} (please report it; "
                  "KVLINT_DEBUG=1 shows the traceback)")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kvlint")
def main() -> None:
    """Lint LLM serving configurations for KV-cache waste and engine incompatibilities."""


@main.command()
@click.argument("models", nargs=-1, required=True, metavar="MODEL...")
@click.option("--tp", type=DEGREE, default=None,
              help="Tensor-parallel degree [default: 1].")
@click.option("--pp", type=DEGREE, default=None,
              help="Pipeline-parallel degree [default: 1].")
@click.option("--dp", type=DEGREE, default=None,
              help="Data-parallel degree [default: 1].")
@click.option("--dp-attention", is_flag=True,
              help="Data-parallel attention: attention runs at tp/dp (SGLang "
                   "--enable-dp-attention, vLLM DP with expert parallelism).")
@click.option("--engine", type=click.Choice(ENGINES, case_sensitive=False), default=None,
              help="Serving engine whose semantics apply (default: the newest vLLM known).")
@click.option("--engine-version", default=None, metavar="VERSION",
              help="Engine version (0.6.3, v0.6.3; latest/nightly = the newest known).")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES, case_sensitive=False),
              default=None, help="KV cache element type [default: auto].")
@click.option("--context", type=COUNT, default=None,
              help=f"Sequence length for per-sequence figures [default: {DEFAULT_CONTEXT}].")
@click.option("--batch", type=COUNT, default=None,
              help="Concurrent sequences for batch figures [default: 1].")
@plan_options
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit).")
@click.option("--offline", is_flag=True, help="Read Hub configs from the local cache only.")
@lock_options
@common_options
def check(models: tuple[str, ...], tp: int | None, pp: int | None, dp: int | None,
          dp_attention: bool, engine: str | None, engine_version: str | None,
          kv_cache_dtype: str | None, context: int | None, batch: int | None,
          gpu: str | None, gpu_memory_gib: float | None,
          gpu_memory_utilization: float | None, overhead_gib: float | None,
          max_model_len: int | None, max_num_seqs: int | None, revision: str | None,
          offline: bool, lock_file: str | None, locked: bool, formats: tuple[str, ...],
          outputs: tuple[str, ...], select: tuple[str, ...], extend_select: tuple[str, ...],
          ignore: tuple[str, ...], fail_on: str | None, config_file: str | None,
          isolated: bool, no_plugins: bool) -> None:
    """Check MODEL (a Hub id, id@revision, a config.json or a model directory) under a
    serving plan: KV bytes per token, per GPU and per sequence, and findings. Options
    override the settings file's serving defaults."""
    from kvlint.linter import check_models, process_env

    session = Session.start([Path(m) for m in models if exists(Path(m))], config_file,
                            isolated, no_plugins, select, extend_select, ignore, fail_on,
                            formats, outputs)
    d = session.settings
    plan = _plan(tp=_pick(tp, d.tp, 1), pp=_pick(pp, d.pp, 1), dp=_pick(dp, d.dp, 1),
                 dp_attention=dp_attention, engine=engine or d.engine,
                 engine_version=engine_version or d.engine_version,
                 kv_cache_dtype=kv_cache_dtype or d.kv_cache_dtype or "auto",
                 context=_pick(context, d.context, DEFAULT_CONTEXT),
                 batch=_pick(batch, d.batch, 1), gpu=gpu or d.gpu,
                 gpu_memory_utilization=gpu_memory_utilization or d.gpu_memory_utilization,
                 overhead_gib=_pick(overhead_gib, d.overhead, None),
                 max_model_len=max_model_len or d.max_model_len,
                 max_num_seqs=max_num_seqs or d.max_num_seqs)
    plan = replace(plan, env=process_env(), gpu_source=_gpu_source(gpu, d.gpu),
                   **_gpu_memory(gpu_memory_gib, d.gpu_memory))
    lock = session.model_lock([Path(m) for m in models if exists(Path(m))], lock_file, locked)
    lock.require(models, revision)
    run = check_models(models, plan, session.rules, revision=revision,
                       offline=offline or bool(d.offline), fail_on=session.fail_on, lock=lock)
    session.finish(run)


def _plan(*, tp: int, pp: int, dp: int, dp_attention: bool, engine: str | None,
          engine_version: str | None, kv_cache_dtype: str, context: int, batch: int,
          gpu: str | None, gpu_memory_utilization: float | None, overhead_gib: float | None,
          max_model_len: int | None, max_num_seqs: int | None) -> ServingPlan:
    """The serving plan of the command line, validated (UsageError on nonsense)."""
    from kvlint.engines import load_engines, parse_version

    try:
        if engine_version is not None:
            parse_version(load_engines()[(engine or "vllm").lower()], engine_version)
        return ServingPlan(
            layout=ParallelLayout(tp=tp, pp=pp, dp=dp, dp_attention=dp_attention),
            kv_cache_dtype=kv_cache_dtype.lower(), context=context, batch=batch,
            engine=engine.lower() if engine else None, engine_version=engine_version,
            gpu=gpu, gpu_memory_utilization=gpu_memory_utilization,
            overhead_bytes=None if overhead_gib is None else int(overhead_gib * 1024**3),
            max_model_len=max_model_len, max_num_seqs=max_num_seqs)
    except ValueError as err:
        raise UsageError(str(err)) from None


@main.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@manifest_options
@click.option("--gpu", default=None, metavar="NAME",
              help="GPU to size against when a manifest does not name one (a GPU the "
                   "manifest names wins).")
@click.option("--gpu-memory", "gpu_memory_gib", type=GPU_MEMORY, default=None, metavar="GIB",
              help=GPU_MEMORY_HELP + " A memory the manifest states wins.")
@click.option("--offline", is_flag=True,
              help="Read Hub configs from the local cache only (a model not cached is not "
                   "checked: exit 2).")
@click.option("--stdin-filename", default=None, metavar="NAME",
              help="With PATH '-': the file name of the manifest read from stdin, for "
                   "locations, settings discovery and per-file-ignores.")
@lock_options
@common_options
def lint(paths: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...],
         model_map: tuple[str, ...], gpu: str | None, gpu_memory_gib: float | None,
         offline: bool,
         stdin_filename: str | None, lock_file: str | None, locked: bool,
         formats: tuple[str, ...], outputs: tuple[str, ...], select: tuple[str, ...],
         extend_select: tuple[str, ...], ignore: tuple[str, ...], fail_on: str | None,
         config_file: str | None, isolated: bool, no_plugins: bool) -> None:
    """Lint deployment manifests (Kubernetes, Helm values, compose, engine configs, Ray
    Serve, SkyPilot, dstack): one result per served model, findings on their lines.
    PATH '-' reads one manifest from stdin (helm template ... | kvlint lint -).
    Suppress with `# kvlint: ignore[KV201] reason` or an `ignore-check.kvlint.io/KV201`
    annotation."""
    from kvlint.loaders.manifests.base import ManifestProblem
    from kvlint.manifest_linter import DEFAULT_INCLUDE, discover, lint_paths

    stdin = _stdin_manifest(paths, stdin_filename)
    starts = [Path(stdin[0])] if stdin else [Path(p) for p in paths]
    session = Session.start(starts, config_file, isolated, no_plugins,
                            select, extend_select, ignore, fail_on, formats, outputs)
    files: list[str] = []
    problems: list[ManifestProblem] = []  # links out of the tree, unreadable directories
    if stdin is None:
        files = [str(f) for f in discover(paths, include or DEFAULT_INCLUDE, exclude,
                                          problems)]
        if not files and not problems:
            click.echo("kvlint: warning: no manifest files found under the given path(s) "
                       f"(include: {', '.join(include or DEFAULT_INCLUDE)})", err=True)
    d = session.settings
    mapping = {name: _local_ref(ref, session.root) for name, ref in d.models.items()}
    mapping.update(_model_map(model_map))
    run = lint_paths(files, session.rules, session.pm,
                     base=ServingPlan(gpu=gpu or d.gpu, gpu_source=_gpu_source(gpu, d.gpu),
                                      **_gpu_memory(gpu_memory_gib, d.gpu_memory)),
                     include=include or DEFAULT_INCLUDE,
                     exclude=exclude, offline=offline or bool(d.offline) or _env_offline(),
                     model_map=mapping, fail_on=session.fail_on, policy=session.policy,
                     unused_suppression=session.unused_suppression, stdin=stdin,
                     lock=session.model_lock(starts, lock_file, locked),
                     discovery_problems=problems)
    session.finish(run)


def _stdin_manifest(paths: tuple[str, ...], name: str | None) -> tuple[str, str] | None:
    """``(name, text)`` of the manifest piped in when PATH is ``-``; ``None`` otherwise."""
    if "-" not in paths:
        if name is not None:
            raise UsageError("--stdin-filename applies to PATH '-' (the manifest on stdin)")
        return None
    if len(paths) > 1:
        raise UsageError("PATH '-' reads one manifest from stdin: give it alone")
    data: bytes = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{name or '-'} (stdin): not UTF-8 text ({err.reason} at byte "
                         f"{err.start})") from None
    return (name or "-"), text


def _gpu_memory(option: float | None, setting: float | None) -> dict[str, Any]:
    """``gpu_memory_bytes`` and its source for a plan (the option wins over the settings)."""
    if option is not None:
        return {"gpu_memory_bytes": gpu_memory_bytes(option), "gpu_memory_source": "--gpu-memory"}
    if setting is not None:
        return {"gpu_memory_bytes": gpu_memory_bytes(setting),
                "gpu_memory_source": "settings (gpu-memory)"}
    return {}


def _gpu_source(option: str | None, setting: str | None) -> str | None:
    """Where the command's GPU comes from (manifests that name a GPU override it)."""
    return "--gpu" if option else ("settings (gpu)" if setting else None)


def _local_ref(ref: str, root: Path) -> str:
    """A models-map value relative to the settings file, when it names a local file."""
    candidate = root / ref
    return str(candidate) if not Path(ref).is_absolute() and exists(candidate) else ref


def _env_offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@main.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--package", "packages", multiple=True, metavar="NAME",
              help="Scan an installed distribution (located, never imported).")
@click.option("--hub", "hub_repos", multiple=True, metavar="MODEL",
              help="Scan a Hub repository's remote code (downloaded, never executed).")
@click.option("--offline", is_flag=True, help="Hub code from the local cache only.")
@common_options
def scan(paths: tuple[str, ...], packages: tuple[str, ...], hub_repos: tuple[str, ...],
         offline: bool, formats: tuple[str, ...], outputs: tuple[str, ...],
         select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...],
         fail_on: str | None, config_file: str | None, isolated: bool,
         no_plugins: bool) -> None:
    """Scan Python sources (engine or model code) for materialised GQA (KV401/KV402) and MLA
    that caches full K/V or rebuilds it every step (KV403/KV404). Static analysis only:
    nothing scanned is imported or run."""
    from kvlint import source_scanner

    if not (paths or packages or hub_repos):
        raise UsageError("give PATH..., --package NAME or --hub MODEL")
    session = Session.start([Path(p) for p in paths], config_file, isolated, no_plugins,
                            select, extend_select, ignore, fail_on, formats, outputs)
    files = source_scanner.python_files(paths)
    for name in packages:
        files.extend(source_scanner.package_files(name))
    for repo in hub_repos:
        repo_id, _, revision = repo.partition("@")
        files.extend(source_scanner.hub_files(repo_id, revision=revision or None,
                                              offline=offline or _env_offline()))
    run = source_scanner.scan_files(files, session.rules, fail_on=session.fail_on,
                                    policy=session.policy,
                                    unused_suppression=session.unused_suppression)
    session.finish(run)


@main.command("github-action")
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
def github_action(paths: str, config_file: str, fail_on: str, sarif_file: str, summary: str,
                  offline: str, lock_file: str, locked: str) -> None:
    """Run as the GitHub Action does (action.yml calls this): lint the PR's manifests,
    annotate, summarise, write SARIF and the step outputs; exit by fail-on."""
    from kvlint.integrations import github
    from kvlint.manifest_linter import DEFAULT_INCLUDE, discover, lint_paths

    env = github.environment()
    workdir = Path.cwd()
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
                            False, (), (), (), fail_on or None, ("github",), ())
    d = session.settings
    mapping = {name: _local_ref(ref, session.root) for name, ref in d.models.items()}
    lock = session.model_lock([Path(p) for p in chosen.paths], lock_file or None,
                              locked == "true")
    # A pull request's SARIF covers the whole repository (see integrations/github.py).
    targets = ["."] if chosen.pull_request and sarif_file else \
        [p for p in chosen.paths if exists(Path(p))]
    run = lint_paths(targets, session.rules, session.pm,
                     base=ServingPlan(gpu=d.gpu, gpu_source=_gpu_source(None, d.gpu)),
                     offline=offline == "true" or
                     bool(d.offline) or _env_offline(), model_map=mapping,
                     fail_on=session.fail_on, policy=session.policy,
                     unused_suppression=session.unused_suppression, lock=lock)
    lock.raise_missing()
    annotations, code = github.report(run, env, chosen, sarif_file=sarif_file or None,
                                      summary=summary == "true", workdir=workdir)
    click.echo(annotations, nl=False)
    _echo_unavailable(run)
    sys.exit(code)


def _action_fail(message: str) -> NoReturn:
    """The Action's input is wrong: an ::error annotation (stdout) and one line, exit 2."""
    from kvlint.reporters.github import command

    click.echo(command("error", message, {"title": "kvlint"}))
    _fail(message)


def _ints(option: str, value: str | None) -> tuple[int, ...]:
    """``--context 512,1024`` -> ``(512, 1024)``."""
    if not value:
        return ()
    try:
        found = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{option} {value!r}: expected positive integers, comma-separated"
                         ) from None
    if not found or min(found) < 1:
        raise UsageError(f"{option} {value!r}: expected positive integers, comma-separated")
    return tuple(sorted(set(found)))


@main.command()
@click.argument("models", nargs=-1, metavar="MODEL...")
@click.option("--model", "model_option", default=None, metavar="MODEL",
              help="The model (same as MODEL; with --endpoint, the served model's config).")
@click.option("--impl", default="eager,sdpa", show_default=True, metavar="IMPL[,IMPL...]",
              help="Attention implementations: eager, sdpa, flash_attention_2, "
                   "flex_attention (transformers), flashinfer, vllm (CUDA kernels).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="cpu: logical byte accounting (runs in CI); cuda: "
                                      "timing slope against measured bandwidth.")
@click.option("--context", "contexts", default=None, metavar="L[,L...]",
              help="Cached tokens before the step [default: cpu 512; cuda: planned from "
                   "the L2 size; --measure-itl 1024,2048,4096,8192].")
@click.option("--batch", type=COUNT, default=1, show_default=True)
@click.option("--layers", type=click.IntRange(min=1, max=MAX_LAYERS), default=1, show_default=True,
              help="Decoder layers to build (the first N of the config).")
@click.option("--dtype", type=click.Choice(["bfloat16", "float16", "float32"]), default=None,
              help="Weights and cache dtype [default: the config's, else bfloat16].")
@click.option("--cache", "cache_kind", type=click.Choice(["dynamic", "static", "inplace"]),
              default=None,
              help="dynamic: transformers' DynamicCache (appends with torch.cat, reported "
                   "apart on CPU); static: StaticCache (attends over all --max-cache-len "
                   "positions); inplace: a DynamicCache appending into spare room, as "
                   "engines do [default: dynamic on cpu, inplace on cuda].")
@click.option("--max-cache-len", type=click.IntRange(min=2, max=MAX_SIZE), default=None,
              help="StaticCache positions [default: 2 x (longest context + 1)].")
@click.option("--cuda-sm", "sm", type=click.IntRange(min=30), default=90, show_default=True,
              help="GPU compute capability the SDPA kernel oracle answers for (80 = A100, "
                   "90 = H100/H200, 75 = T4).")
@click.option("--ncu", is_flag=True,
              help="With --device cuda: measure DRAM bytes of the attention kernels with "
                   "Nsight Compute (ncu on PATH, profiling permissions) instead of timing.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Plot measured KV reads per step against theory by context (PNG/SVG; "
                   "needs matplotlib).")
@click.option("--endpoint", default=None, metavar="URL",
              help="Staging: a running vLLM (its /metrics) instead of a local probe.")
@click.option("--vllm-log", "vllm_log", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="Staging without a server: a vLLM start-up log; its printed KV memory "
                   "and tokens per GPU against theory (tp, pp, dtypes from the log unless "
                   "given).")
@click.option("--served-model-name", default=None,
              help="With --measure-itl: the model name the server answers to.")
@click.option("--tp", type=DEGREE, default=None,
              help="With --endpoint or --vllm-log: the server's tensor-parallel degree "
                   "[default: the log's, else 1].")
@click.option("--pp", type=DEGREE, default=None,
              help="With --vllm-log: the pipeline-parallel degree [default: the log's, else 1].")
@click.option("--engine-version", default=None, metavar="VERSION",
              help="With --endpoint: the vLLM version (default: the newest known).")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES, case_sensitive=False),
              default="auto", show_default=True, help="With --endpoint: the server's.")
@click.option("--measure-itl", is_flag=True,
              help="With --endpoint: time streaming requests at several contexts and fit "
                   "the inter-token-latency slope (sends len(contexts) x batch requests).")
@click.option("--gpu", default=None, metavar="NAME",
              help="With --measure-itl: the server's GPU (for its bandwidth).")
@click.option("--bandwidth", type=_FiniteFloat(min=0, min_open=True), default=None,
              metavar="GB/S", help="With --measure-itl: achieved bandwidth per GPU in GB/s.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit).")
@click.option("--offline", is_flag=True, help="Read Hub configs from the local cache only.")
@common_options
def probe(models: tuple[str, ...], model_option: str | None, impl: str, device: str,
          contexts: str | None, batch: int, layers: int, dtype: str | None,
          cache_kind: str | None, max_cache_len: int | None, sm: int, ncu: bool,
          plot: str | None,
          endpoint: str | None, vllm_log: str | None, served_model_name: str | None,
          tp: int | None, pp: int | None,
          engine_version: str | None, kv_cache_dtype: str, measure_itl: bool,
          gpu: str | None, bandwidth: float | None, revision: str | None, offline: bool,
          formats: tuple[str, ...], outputs: tuple[str, ...], select: tuple[str, ...],
          extend_select: tuple[str, ...], ignore: tuple[str, ...], fail_on: str | None,
          config_file: str | None, isolated: bool, no_plugins: bool) -> None:
    """Measure the KV bytes a decode step reads, and the cache holds, against theory: N
    random-weight layers of MODEL's config (no weights downloaded, no remote code) with a
    pre-filled cache and one decode step, per attention implementation. KV601 flags 1.3x
    (warning) and 2x (error). Needs `pip install 'kvlint[probe]'`."""
    from kvlint.probe import run as probing

    refs = models + ((model_option,) if model_option else ())
    if not refs:
        raise UsageError("give MODEL (a Hub id, a config.json or a directory) or --model")
    session = Session.start([Path(m) for m in refs if exists(Path(m))], config_file,
                            isolated, no_plugins, select, extend_select, ignore, fail_on,
                            formats, outputs)
    rules = session.rules
    if not (select or session.settings.select or extend_select):
        rules = tuple(r for r in rules if r.code.startswith(("KV6", "KV900")))
    points = _ints("--context", contexts)
    if endpoint and vllm_log:
        raise UsageError("--endpoint and --vllm-log are two staging sources: give one")
    if vllm_log:
        if len(refs) != 1:
            raise UsageError("--vllm-log probes one served model: give one MODEL")
        given = [name for name, value in {"--measure-itl": measure_itl, "--gpu": gpu,
                                          "--bandwidth": bandwidth,
                                          "--served-model-name": served_model_name}.items()
                 if value]
        if given:
            raise UsageError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to "
                             "a running engine (--endpoint), not to a log")
        run = probing.probe_log(
            vllm_log, refs[0], rules, tp=tp, pp=pp, kv_cache_dtype=kv_cache_dtype.lower(),
            engine_version=engine_version, revision=revision,
            offline=offline or _env_offline(), fail_on=session.fail_on)
    elif endpoint:
        if len(refs) != 1:
            raise UsageError("--endpoint probes one served model: give one MODEL")
        if pp not in (None, 1):
            raise UsageError("--pp applies to --vllm-log (the /metrics path reads tp only)")
        run = probing.probe_endpoint(
            endpoint, refs[0], rules, tp=tp or 1, kv_cache_dtype=kv_cache_dtype.lower(),
            engine_version=engine_version, measure_itl=measure_itl, contexts=points,
            batch=batch, bandwidth=bandwidth * 1e9 if bandwidth else None, gpu_name=gpu,
            served_model=served_model_name, revision=revision,
            offline=offline or _env_offline(), fail_on=session.fail_on)
    else:
        staging_only = {"--measure-itl": measure_itl, "--gpu": gpu, "--bandwidth": bandwidth,
                        "--served-model-name": served_model_name,
                        "--tp": tp not in (None, 1), "--pp": pp not in (None, 1),
                        "--engine-version": engine_version,
                        "--kv-cache-dtype": kv_cache_dtype.lower() != "auto"}
        given = [name for name, value in staging_only.items() if value]
        if given:
            raise UsageError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to "
                             "a running engine: add --endpoint URL or --vllm-log FILE")
        impls = tuple(dict.fromkeys(p.strip() for p in impl.split(",") if p.strip()))
        if not impls:
            raise UsageError("--impl: name at least one implementation")
        options = probing.ProbeOptions(impls, device, points, batch, layers, dtype, sm,
                                       cache_kind, max_cache_len, ncu)
        run = probing.probe_models(refs, options, rules, revision=revision,
                                   offline=offline or _env_offline(), fail_on=session.fail_on)
    if plot:
        from kvlint.probe.plot import plot_reads

        plot_reads(run, plot)
    session.finish(run)


@main.command()
@click.argument("models", nargs=-1, required=True, metavar="MODEL...")
@click.option("--tp", type=DEGREE, default=1, show_default=True)
@click.option("--pp", type=DEGREE, default=1, show_default=True)
@click.option("--engine", type=click.Choice(ENGINES, case_sensitive=False), default=None)
@click.option("--engine-version", default=None, metavar="VERSION")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES, case_sensitive=False),
              default="auto", show_default=True)
@click.option("--context", type=COUNT, default=DEFAULT_CONTEXT,
              show_default=True, help="Sequence length the models are compared at.")
@click.option("--batch", type=COUNT, default=1, show_default=True)
@plan_options
@click.option("--revision", default=None, help="Hub revision (applies to every model).")
@click.option("--offline", is_flag=True, help="Read Hub configs from the local cache only.")
@lock_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None)
def compare(models: tuple[str, ...], tp: int, pp: int, engine: str | None,
            engine_version: str | None, kv_cache_dtype: str, context: int, batch: int,
            gpu: str | None, gpu_memory_gib: float | None,
            gpu_memory_utilization: float | None, overhead_gib: float | None,
            max_model_len: int | None, max_num_seqs: int | None, revision: str | None,
            offline: bool, lock_file: str | None, locked: bool, fmt: str,
            output: str | None) -> None:
    """Rank models by KV cost: bytes of one --context-token sequence per GPU, or with --gpu,
    concurrent max_model_len-token sequences beside the weights (max_model_len: --context
    unless --max-model-len is given). Models that cannot be sized are listed with the reason
    (exit 2 when a config did not resolve or the Hub could not be asked)."""
    from kvlint import compare as ranking
    from kvlint.outputs import check_outputs

    if output:
        check_outputs([output], models)
    plan = _plan(tp=tp, pp=pp, dp=1, dp_attention=False, engine=engine,
                 engine_version=engine_version, kv_cache_dtype=kv_cache_dtype,
                 context=context, batch=batch, gpu=gpu,
                 gpu_memory_utilization=gpu_memory_utilization, overhead_gib=overhead_gib,
                 max_model_len=max_model_len or (
                     context if gpu or gpu_memory_gib is not None else None),
                 max_num_seqs=max_num_seqs)
    plan = replace(plan, **_gpu_memory(gpu_memory_gib, None))
    lock = _compare_lock(models, lock_file, locked)
    lock.require(models, revision)
    run = ranking.compare_models(models, plan, revision=revision, offline=offline, lock=lock)
    result = ranking.rank(run, plan)
    from kvlint.reporters.escape import printable

    if fmt == "json":
        text = ranking.render_json(result)
    else:
        text = printable(ranking.render_table(result, "github" if fmt == "markdown" else "plain"),
                         keep="\n")
    _emit(text, output)
    _echo_config_errors(run)
    sys.exit(run.exit_code)


def _compare_lock(models: Sequence[str], lock_file: str | None, locked: bool) -> ModelLock:
    """``compare`` takes no serving settings, but its lock is found as the others' are."""
    from kvlint import settings as settings_module

    starts = [Path(m) for m in models if exists(Path(m))]
    loaded = settings_module.load(starts)
    return _model_lock(starts, loaded.path, lock_file, locked or bool(loaded.settings.locked))


@main.command("lock")
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing, ask no network: exit 1 when the lock lacks a model the "
                   "manifests name or holds one they no longer name, 0 when in sync.")
@click.option("--upgrade", is_flag=True,
              help="Resolve every model again (default: keep the locked ones as they are "
                   "and resolve only new names).")
@manifest_options
@click.option("--offline", is_flag=True, help="Resolve from the Hugging Face cache only.")
@click.option("--lock", "lock_file", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="The lock to write [default: kvlint.lock next to the "
                                   "settings file, else the nearest one, else here].")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="Settings file (its models map is locked too).")
@click.option("--isolated", is_flag=True, help="Ignore every settings file.")
@click.option("--no-plugins", is_flag=True,
              help="Do not load third-party plugins (entry-point group 'kvlint').")
def lock_command(paths: tuple[str, ...], check_only: bool, upgrade: bool,
                 include: tuple[str, ...], exclude: tuple[str, ...],
                 model_map: tuple[str, ...], offline: bool, lock_file: str | None,
                 config_file: str | None, isolated: bool, no_plugins: bool) -> None:
    """Pin every Hugging Face model the manifests under PATH (default: the settings file's
    directory, else the lock's) and the models map name: its commit, its whole config.json
    and its checkpoint size, in kvlint.lock. Commit the file; `check`, `lint`, `compare`
    and the Action then read those models from it without the network, and `--locked` runs
    read nothing else."""
    from kvlint import locking
    from kvlint import settings as settings_module
    from kvlint.loaders.lock import locate, read, shown, unchanged, write
    from kvlint.manifest_linter import DEFAULT_INCLUDE
    from kvlint.plugins import get_plugin_manager

    starts = [Path(p) for p in paths]
    loaded = settings_module.load(starts, config=config_file, isolated=isolated)
    path = Path(lock_file) if lock_file else locate(starts, loaded.path)
    where = shown(path)
    mapping = {name: _local_ref(ref, loaded.root) for name, ref in loaded.settings.models.items()}
    origins = dict.fromkeys(mapping, f"the models of {shown(loaded.path)}" if loaded.path
                            else "the models map")
    given = _model_map(model_map)
    mapping.update(given)
    origins.update(dict.fromkeys(given, "--model-map"))
    project = loaded.path.parent if loaded.path else Path.cwd() if lock_file else path.parent
    named = locking.named_models(list(paths) or [shown(project)],
                                 get_plugin_manager(load_entry_points=not no_plugins),
                                 model_map=mapping, map_origins=origins,
                                 include=include or DEFAULT_INCLUDE, exclude=exclude)
    existing = read(path)
    if check_only:
        diff = locking.diff(existing, named)
        if diff.in_sync:
            click.echo(f"{where}: in sync ({_models(len(named))})")
            sys.exit(0)
        if existing is None:
            click.echo(f"{where} does not exist")
        for key, origin in diff.missing.items():
            click.echo(f"{where} lacks {key} (named in {origin})")
        for key in diff.extra:
            click.echo(f"{where} holds {key}, which nothing names any more")
        click.echo("run `kvlint lock` to update it")
        sys.exit(1)
    result = locking.update(existing, named, offline=offline or _env_offline(),
                            upgrade=upgrade)
    text = result.lockfile.dumps()
    if existing is None or not unchanged(path, text):
        write(path, text)
    changes = [f"{label} {', '.join(keys)}" for label, keys in
               (("added", result.added), ("updated", result.updated),
                ("removed", result.removed)) if keys]
    click.echo(f"{where}: {_models(len(result.lockfile.models))}"
               + (f"; {'; '.join(changes)}" if changes else ", unchanged"))


def _models(count: int) -> str:
    return f"{count} model" + ("" if count == 1 else "s")


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--no-plugins", is_flag=True, help="Do not load third-party plugins.")
def rules_command(fmt: str, no_plugins: bool) -> None:
    """List every rule: code, name, default severity and what it flags."""
    registry = _registry(no_plugins)
    if fmt == "json":
        rows = [{"code": r.code, "name": r.name, "severity": r.severity.value,
                 "summary": r.summary(), "module": r.__module__} for r in registry.rules]
        click.echo(json.dumps(rows, indent=2))
        return
    from tabulate import tabulate

    table = [[r.code, r.name, r.severity.value, r.summary()] for r in registry.rules]
    click.echo(tabulate(table, headers=["code", "name", "severity", "flags"],
                        tablefmt="plain", maxcolwidths=[None, None, None, 60]))


@main.command("rule")
@click.argument("key", metavar="CODE|NAME")
@click.option("--no-plugins", is_flag=True, help="Do not load third-party plugins.")
def rule_command(key: str, no_plugins: bool) -> None:
    """Explain one rule (its documentation)."""
    rule = _registry(no_plugins).rule(key)
    click.echo(f"# {rule.code} {rule.name} ({rule.severity.value})\n")
    click.echo(rule.documentation())


@main.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of --format json output."""
    from kvlint.report import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
