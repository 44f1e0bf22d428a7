"""``kvlint scan``: static analysis of engine and model source."""

from __future__ import annotations

from pathlib import Path

import click

from kvlint.cli.options import (
    common_options,
    env_offline,
    use_result_cache,
)
from kvlint.cli.session import RuleSelection, Session
from kvlint.errors import UsageError


@click.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--package", "packages", multiple=True, metavar="NAME",
              help="Scan an installed distribution (located, never imported).")
@click.option("--hub", "hub_repos", multiple=True, metavar="MODEL",
              help="Scan a Hub repository's remote code (downloaded, never executed).")
@click.option("--offline", is_flag=True, help="Hub code from the local cache only.")
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the result cache (also KVLINT_NO_CACHE=1, or "
                   "cache = false in the settings).")
@common_options
def scan(paths: tuple[str, ...], packages: tuple[str, ...], hub_repos: tuple[str, ...],
         offline: bool, no_cache: bool, formats: tuple[str, ...], outputs: tuple[str, ...],
         select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...],
         fail_on: str | None, config_file: str | None, isolated: bool,
         no_plugins: bool) -> None:
    """Scan Python sources (engine or model code) for materialised GQA (KV401/KV402) and MLA
    that caches full K/V or rebuilds it every step (KV403/KV404). Static analysis only:
    nothing scanned is imported or run. A file unchanged since an earlier scan is not
    analysed again (the result cache)."""
    from kvlint import cache
    from kvlint.scan import scanner as source_scanner

    # --no-cache: nothing under the cache directory is read or written (as for `lint`);
    # a cache inside the scanned tree is never trusted
    with cache.scope(no_cache=no_cache, linted=list(paths)):
        if not (paths or packages or hub_repos):
            raise UsageError("give PATH..., --package NAME or --hub MODEL")
        session = Session.start([Path(p) for p in paths], config_file, isolated, no_plugins,
                                RuleSelection(select, extend_select, ignore), fail_on,
                                formats, outputs)
        files = source_scanner.python_files(paths)
        for name in packages:
            files.extend(source_scanner.package_files(name))
        for repo in hub_repos:
            repo_id, _, revision = repo.partition("@")
            files.extend(source_scanner.hub_files(repo_id, revision=revision or None,
                                                  offline=offline or env_offline()))
        run = source_scanner.scan_files(
            files, session.rules, fail_on=session.fail_on, policy=session.policy,
            unused_suppression=session.unused_suppression,
            cache=use_result_cache(no_cache, session.settings.cache))
        session.finish(run)
