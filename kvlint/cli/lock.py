"""``kvlint lock``: pin the Hub models the manifests name."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kvlint.cli.options import (
    env_offline,
    local_ref,
    manifest_options,
    parse_model_map,
)


@click.command("lock")
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing: exit 1 when the lock lacks a model the manifests name, "
                   "holds one they no longer name, or holds a config (or checkpoint size) "
                   "other than the model repo's at the locked commit (read from the Hugging "
                   "Face cache, else the Hub unless --offline); 2 when a locked config can "
                   "be found in neither; 0 when in sync.")
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
    from kvlint import settings as settings_module
    from kvlint.errors import HubError
    from kvlint.lint.discovery import DEFAULT_INCLUDE
    from kvlint.lock import collect as locking
    from kvlint.lock.files import describe, locate, read, shown, unchanged, write
    from kvlint.plugins import get_plugin_manager

    starts = [Path(p) for p in paths]
    loaded = settings_module.load(starts, config=config_file, isolated=isolated)
    path = Path(lock_file) if lock_file else locate(starts, loaded.path)
    where = shown(path)
    mapping = {name: local_ref(ref, loaded.root) for name, ref in loaded.settings.models.items()}
    origins = dict.fromkeys(mapping, f"the models of {shown(loaded.path)}" if loaded.path
                            else "the models map")
    given = parse_model_map(model_map)
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
        verdicts = locking.check(existing, offline=offline or env_offline())
        differ = [v for v in verdicts if v.differs is not None]
        unverified = [v for v in verdicts if v.unverified is not None]
        if diff.in_sync and not differ and not unverified:
            click.echo(f"{where}: in sync ({_models(len(named))})")
            sys.exit(0)
        if diff.in_sync and not differ:  # never "in sync" having checked nothing
            raise HubError("; ".join(describe(v, where) for v in unverified)
                           + "; run once online, or `kvlint lock --upgrade`, to check it")
        if existing is None:
            click.echo(f"{where} does not exist")
        for key, origin in diff.missing.items():
            click.echo(f"{where} lacks {key} (named in {origin})")
        for key in diff.extra:
            click.echo(f"{where} holds {key}, which nothing names any more")
        for verdict in [*differ, *unverified]:
            click.echo(describe(verdict, where))
        click.echo("run `kvlint lock` to update it" if not differ else
                   "run `kvlint lock --upgrade` to lock the models again")
        sys.exit(1)
    result = locking.update(existing, named, offline=offline or env_offline(),
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
