"""The model lock at run time: where ``kvlint.lock`` is, what a run reads from it, and how
``kvlint lock`` resolves a model for it (through :mod:`kvlint.loaders.hub`).

A run looks a Hub model up in the lock first: a locked model is read from the lock alone (no
request, no huggingface_hub import); others go to the Hugging Face cache, then the Hub, unless
the run is *locked* (``--locked``, ``locked = true``), where a model missing from the lock is an
error that names it and says to run ``kvlint lock``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.errors import HubError, InputError, UsageError
from kvlint.loaders.files import MAX_LOCK_BYTES, UnreadableFile, read_text
from kvlint.loaders.paths import exists, is_dir, is_file
from kvlint.lockfile import LOCK_NAME, LockedModel, Lockfile, loads, lock_key

__all__ = ["ModelLock", "hub_reference", "locate", "lock_model", "open_lock", "read", "run_lock",
           "shown", "write"]


def shown(path: Path) -> str:
    """``path`` as messages show it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def locate(starts: Iterable[Path], settings_path: Path | None) -> Path:
    """Where the run's lock is (or goes): next to the settings file; without one, the nearest
    ``kvlint.lock`` above ``starts`` or the working directory (searched as settings are);
    else the working directory."""
    if settings_path is not None:
        return settings_path.parent / LOCK_NAME
    seen: set[Path] = set()
    for start in [*(p if is_dir(p) else p.parent for p in starts), Path.cwd()]:
        for directory in (start.resolve(), *start.resolve().parents):
            if directory in seen:
                break
            seen.add(directory)
            if is_file(directory / LOCK_NAME):
                return directory / LOCK_NAME
    return Path.cwd() / LOCK_NAME


def read(path: Path) -> Lockfile | None:
    """The lock at ``path`` (``None`` when there is no such file). A lock comes with the
    repository, so it is read like any input: a regular file, at most 16 MiB."""
    if not os.path.lexists(path):
        return None
    try:
        text = read_text(path, MAX_LOCK_BYTES)
    except UnreadableFile as err:
        raise InputError(f"{shown(path)}: {err}") from None
    return loads(text, shown(path))


def unchanged(path: Path, text: str) -> bool:
    """Whether the lock at ``path`` already holds exactly ``text``."""
    try:
        return read_text(path, MAX_LOCK_BYTES) == text
    except UnreadableFile:
        return False


@dataclass(eq=False)
class ModelLock:
    """The lock a run reads models from. ``required``: a Hub model it does not hold is an
    error (``missing`` collects them for the one-line message)."""

    path: Path
    lockfile: Lockfile | None
    required: bool = False
    missing: set[str] = field(default_factory=set)

    def find(self, repo_id: str, revision: str | None) -> LockedModel | None:
        return self.lockfile.find(repo_id, revision) if self.lockfile is not None else None

    def lookup(self, repo_id: str, revision: str | None) -> LockedModel | None:
        """The locked model, or ``None``; a locked run records what it lacked."""
        found = self.find(repo_id, revision)
        if found is None and self.required:
            self.missing.add(lock_key(repo_id, revision))
        return found

    def not_locked(self, key: str) -> InputError:
        """The error for one model a locked run cannot read."""
        return InputError(f"{key} is not in {shown(self.path)} and the run is locked; "
                          "run `kvlint lock`")

    def require(self, refs: Iterable[str], revision: str | None = None) -> None:
        """A locked run: fail at once, naming every Hub model of ``refs`` not in the lock."""
        if not self.required:
            return
        for ref in refs:
            found = hub_reference(ref)
            if found is not None:
                repo_id, at_revision = found
                self.lookup(repo_id, at_revision or revision)
        self.raise_missing()

    def raise_missing(self) -> None:
        """One line naming the models a locked run lacked (nothing when none)."""
        if not self.missing:
            return
        names = ", ".join(sorted(self.missing))
        where = shown(self.path)
        if self.lockfile is None:
            raise InputError(f"the run is locked but there is no {where} to read {names} "
                             "from; run `kvlint lock`")
        raise InputError(f"not in {where} (the run is locked): {names}; run `kvlint lock`")


def open_lock(path: Path, *, required: bool = False) -> ModelLock:
    """The run's lock at ``path`` (a lock without a file reads nothing)."""
    return ModelLock(path, read(path), required)


def run_lock(starts: Iterable[Path], settings_path: Path | None, lock_file: str | None, *,
             required: bool, isolated: bool = False) -> ModelLock:
    """A run's lock: ``--lock FILE`` (which must exist), else the one next to the settings
    file (the nearest above the inputs without one; none with ``--isolated``)."""
    if lock_file is not None:
        if not is_file(Path(lock_file)):
            raise UsageError(f"--lock {lock_file}: no such file; write it with "
                             f"`kvlint lock --lock {lock_file}`")
        return open_lock(Path(lock_file), required=required)
    if isolated:
        return ModelLock(Path.cwd() / LOCK_NAME, None, required)
    return open_lock(locate(starts, settings_path), required=required)


def write(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a file beside it, then renamed over it)."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise InputError(f"{shown(path)}: cannot write: {err.strerror or err}") from None


def hub_reference(ref: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` when ``ref`` names a Hub model, as :func:`load_config` reads
    it (an existing path is a local model, a name with path syntax is not a Hub id)."""
    from kvlint.loaders import hub

    if not ref or exists(Path(ref)) or not hub.looks_like_hub_id(ref):
        return None
    return hub.split_hub_ref(ref)


def lock_model(key: str, *, offline: bool = False) -> LockedModel:
    """Resolve ``key`` (``org/name`` or ``org/name@rev``) through huggingface_hub (its cache,
    then the Hub): the commit, the whole ``config.json``, and the checkpoint's size from the
    safetensors index of that same commit (``None`` when the repo has no index)."""
    from kvlint.loaders import checkpoint, hub, local

    repo_id, revision = hub.split_hub_ref(key)
    fetched = hub.download_config(repo_id, revision=revision, offline=offline)
    if fetched.commit is None:
        raise HubError(f"{key}: the Hugging Face cache does not say which commit "
                       f"{fetched.path} belongs to")
    config = local.read_json(fetched.path)
    if not isinstance(config, dict):
        raise InputError(f"{repo_id}@{revision or fetched.commit}/config.json: expected a JSON "
                         f"object, got {type(config).__name__}")
    size = checkpoint.hub_checkpoint_size(repo_id, revision=fetched.commit, offline=offline)
    return LockedModel(lock_key(repo_id, revision), fetched.commit, config,
                       None if size is None else size.total_bytes)

