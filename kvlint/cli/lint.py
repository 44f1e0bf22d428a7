"""``kvlint lint``: deployment manifests, one result per served model."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kvlint.cli.options import (
    GPU_MEMORY,
    GPU_MEMORY_HELP,
    common_options,
    env_offline,
    gpu_memory_plan,
    gpu_source,
    local_ref,
    lock_options,
    manifest_options,
    parse_model_map,
    use_result_cache,
)
from kvlint.cli.session import RuleSelection, Session
from kvlint.errors import UsageError
from kvlint.model.serving import ServingPlan


@click.command()
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
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the result cache (also KVLINT_NO_CACHE=1, or "
                   "cache = false in the settings).")
@click.option("--stdin-filename", default=None, metavar="NAME",
              help="With PATH '-': the file name of the manifest read from stdin, for "
                   "locations, settings discovery and per-file-ignores.")
@lock_options
@common_options
def lint(paths: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...],
         model_map: tuple[str, ...], gpu: str | None, gpu_memory_gib: float | None,
         offline: bool, no_cache: bool,
         stdin_filename: str | None, lock_file: str | None, locked: bool,
         formats: tuple[str, ...], outputs: tuple[str, ...], select: tuple[str, ...],
         extend_select: tuple[str, ...], ignore: tuple[str, ...], fail_on: str | None,
         config_file: str | None, isolated: bool, no_plugins: bool) -> None:
    """Lint deployment manifests (Kubernetes, Helm values, compose, engine configs, Ray
    Serve, SkyPilot, dstack): one result per served model, findings on their lines.
    PATH '-' reads one manifest from stdin (helm template ... | kvlint lint -).
    Suppress with `# kvlint: ignore[KV201] reason` or an `ignore-check.kvlint.io/KV201`
    annotation."""
    from kvlint import cache

    # --no-cache: nothing under the cache directory is read (the engine table's copy
    # included); a cache inside the linted paths (or their repository) is not trusted
    with cache.scope(no_cache=no_cache, linted=[p for p in paths if p != "-"]):
        from kvlint.lint.discovery import DEFAULT_INCLUDE, Resolved, discover
        from kvlint.lint.options import LintOptions
        from kvlint.lint.runner import lint_paths
        from kvlint.manifests.base import ManifestProblem

        stdin = _stdin_manifest(paths, stdin_filename)
        starts = [Path(stdin[0])] if stdin else [Path(p) for p in paths]
        session = Session.start(starts, config_file, isolated, no_plugins,
                                RuleSelection(select, extend_select, ignore), fail_on,
                                formats, outputs)
        files: list[str] = []
        problems: list[ManifestProblem] = []  # links out of the tree, unreadable directories
        resolved = Resolved()  # the walk's real paths, used again to tell files apart
        if stdin is None:
            files = discover(paths, include or DEFAULT_INCLUDE, exclude, problems, resolved)
            if not files and not problems:
                click.echo("kvlint: warning: no manifest files found under the given path(s) "
                           f"(include: {', '.join(include or DEFAULT_INCLUDE)})", err=True)
        d = session.settings
        mapping = {name: local_ref(ref, session.root) for name, ref in d.models.items()}
        mapping.update(parse_model_map(model_map))
        run = lint_paths(files, LintOptions(
            rules=session.rules, pm=session.pm,
            base=ServingPlan(gpu=gpu or d.gpu, gpu_source=gpu_source(gpu, d.gpu),
                             **gpu_memory_plan(gpu_memory_gib, d.gpu_memory)),
            include=include or DEFAULT_INCLUDE,
            exclude=exclude, offline=offline or bool(d.offline) or env_offline(),
            model_map=mapping, fail_on=session.fail_on, policy=session.policy,
            unused_suppression=session.unused_suppression, stdin=stdin,
            lock=session.model_lock(starts, lock_file, locked),
            discovery_problems=problems, resolved=resolved,
            cache=use_result_cache(no_cache, d.cache, from_stdin=stdin is not None),
            cache_context=(repr(d), str(session.root))))
        session.finish(run)


def _stdin_manifest(paths: tuple[str, ...], name: str | None) -> tuple[str, str] | None:
    """``(name, text)`` of the manifest piped in when PATH is ``-``; ``None`` otherwise."""
    if "-" not in paths:
        if name is not None:
            raise UsageError("--stdin-filename applies to PATH '-' (the manifest on stdin)")
        return None
    if len(paths) > 1:
        raise UsageError("PATH '-' reads one manifest from stdin: give it alone")
    from kvlint.loaders.files import MAX_MANIFEST_BYTES, MiB

    # bounded as a manifest file is: `yes | kvlint lint -` stops at the cap
    data: bytes = sys.stdin.buffer.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise UsageError(f"{name or '-'} (stdin): larger than {MAX_MANIFEST_BYTES // MiB} MiB "
                         "(the manifest size limit); not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{name or '-'} (stdin): not UTF-8 text ({err.reason} at byte "
                         f"{err.start})") from None
    return (name or "-"), text
