"""Find a model's config.json: a local file or directory, or a Hugging Face Hub id."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvlint.errors import InputError, UsageError
from kvlint.loaders import hub, local, paths

if TYPE_CHECKING:
    from kvlint.lock.files import ModelLock


@dataclass(frozen=True)
class LoadedConfig:
    """A raw config and where it came from."""

    ref: str
    """What the user named (``org/name``, a path)."""
    config: dict[str, Any]
    source: str
    """How errors name it: the file path, or ``org/name@rev/config.json``."""
    path: str | None = None
    revision: str | None = None
    """For Hub models: the requested revision, else the commit the file came from."""


def load_config(ref: str, *, revision: str | None = None, offline: bool = False,
                lock: ModelLock | None = None) -> LoadedConfig:
    """Read ``ref``'s config: an existing path wins, else ``ref`` is a Hub id (``@rev``), read
    from ``lock`` when it holds it (no request), else from the Hugging Face cache or Hub (a
    locked run raises instead)."""
    path = Path(ref)
    if paths.exists(path):
        if revision:
            raise UsageError(f"--revision applies to Hub models, but {ref!r} is a local path")
        file = local.config_path(path)
        return LoadedConfig(ref, local.read_config(file), str(file), path=str(file))
    if not hub.looks_like_hub_id(ref):
        raise InputError(f"{ref}: no such file or directory, and not a Hugging Face repo id")
    repo_id, at_revision = hub.split_hub_ref(ref)
    if at_revision and revision and at_revision != revision:
        raise UsageError(f"{ref!r} names revision {at_revision!r} but --revision is {revision!r}")
    wanted = at_revision or revision
    if lock is not None:
        locked = lock.lookup(repo_id, wanted)
        if locked is not None:
            shown = wanted or locked.commit
            return LoadedConfig(repo_id, locked.config, f"{repo_id}@{shown}/config.json",
                                path=None, revision=shown)
        if lock.required:
            raise lock.not_locked(f"{repo_id}@{wanted}" if wanted else repo_id)
    fetched = hub.download_config(repo_id, revision=wanted, offline=offline)
    shown = wanted or fetched.commit or "main"
    source = f"{repo_id}@{shown}/config.json"
    config = local.read_json(fetched.path)
    if not isinstance(config, dict):
        raise InputError(f"{source}: expected a JSON object, got {type(config).__name__}")
    return LoadedConfig(repo_id, config, source, path=None, revision=wanted or fetched.commit)
