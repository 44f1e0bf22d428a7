"""The model lock at run time: where ``kvlint.lock`` is, what a run reads from it, and how
``kvlint lock`` resolves a model for it (through :mod:`kvlint.loaders.hub`).

A run looks a Hub model up in the lock first: a locked model is read from the lock alone (no
request, no huggingface_hub import); others go to the Hugging Face cache, then the Hub, unless
the run is *locked* (``--locked``, ``locked = true``), where a model missing from the lock is an
error that names it and says to run ``kvlint lock``.

The lock comes with the repository, so it is handled as planted input:

* it is found only inside the repository: the search upwards stops at the directory holding
  ``.git`` (a directory, or the file of a worktree or submodule), and a lock (or a directory on
  its path) that leads outside that directory through a symbolic link is neither read nor
  written (:func:`repo_root`, :func:`confine`);
* it is read as a regular file of at most 16 MiB (:func:`~kvlint.loaders.files.read_text`);
* it is written atomically (:func:`write`): a new file with a random name beside it, created
  with ``O_EXCL | O_NOFOLLOW`` (never through a planted link such as a committed
  ``.kvlint.lock.partial``), flushed, then renamed over it. A lock that is a symbolic link is
  refused, not written through: its target could be anywhere, and replacing the link would
  silently change what the repository commits. A FIFO, device or directory is refused;
* ``kvlint lock --check`` verifies each locked config against ``config.json`` at its commit
  (:func:`verify`): the Hugging Face cache by path first, the Hub when not offline.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.errors import HubError, InputError, UsageError
from kvlint.loaders.files import MAX_LOCK_BYTES, UnreadableFile, inside, read_text
from kvlint.loaders.paths import hub_reference, is_dir, is_file
from kvlint.lock.format import (
    LOCK_NAME,
    LockedModel,
    Lockfile,
    first_difference,
    loads,
    lock_key,
    shown_name,
)

__all__ = ["ModelLock", "Verdict", "confine", "describe", "hub_reference", "locate", "lock_model",
           "open_lock", "read", "repo_root", "run_lock", "shown", "verify", "write"]


def shown(path: Path) -> str:
    """``path`` as messages show it: relative to the working directory when inside it (links
    are not resolved first, so a link is named, not its target)."""
    for here, there in ((os.getcwd(), os.path.abspath(path)),
                        (Path.cwd().resolve(), path.resolve())):
        try:
            return str(Path(there).relative_to(here))
        except ValueError:
            continue
    return str(path)


def repo_root(directory: Path) -> Path | None:
    """The repository ``directory`` is in: the nearest directory at or above it (as written,
    made absolute) that holds ``.git``; ``None`` outside any repository."""
    here = Path(os.path.abspath(directory))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def confine(path: Path, action: str) -> None:
    """Refuse ``path`` when it (a link, or a linked directory on its way) leads outside the
    repository it is written in (nothing to check outside a repository)."""
    root = repo_root(path.parent)
    if root is not None and not inside(path, os.path.realpath(root)):
        raise InputError(f"{shown(path)}: leads outside its repository ({root}) through a "
                         f"symbolic link; not {action}")


def locate(starts: Iterable[Path], settings_path: Path | None) -> Path:
    """Where the run's lock is (or goes): next to the settings file; without one, the nearest
    ``kvlint.lock`` above ``starts`` or the working directory (searched as settings are, but
    never above the repository root, the directory holding ``.git``); else the working
    directory. A settings file found above the repository root does not place the lock
    there."""
    directories = [*(p if is_dir(p) else p.parent for p in starts), Path.cwd()]
    if settings_path is not None:
        roots = {os.path.realpath(root) for root in map(repo_root, directories) if root}
        if not roots or any(inside(settings_path.parent, root) for root in roots):
            return settings_path.parent / LOCK_NAME
    seen: set[Path] = set()
    for start in directories:
        for directory in (start.resolve(), *start.resolve().parents):
            if directory in seen:
                break
            seen.add(directory)
            if is_file(directory / LOCK_NAME):
                return directory / LOCK_NAME
            if os.path.lexists(directory / ".git"):
                break  # the repository root: a lock above it is not the project's
    return Path.cwd() / LOCK_NAME


def read(path: Path) -> Lockfile | None:
    """The lock at ``path`` (``None`` when there is no such file). A lock comes with the
    repository, so it is read like any input: a regular file, at most 16 MiB."""
    if not os.path.lexists(path):
        return None
    confine(path, "read")
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
    checked: dict[str, str | None] = field(default_factory=dict)
    """Key -> the first field where the locked config differs from ``config.json`` at its
    commit in the Hugging Face cache (``None``: it agrees, or the cache cannot say)."""

    def find(self, repo_id: str, revision: str | None) -> LockedModel | None:
        """The locked model; when the Hugging Face cache holds ``config.json`` at its commit,
        a locked config that differs from it is an error (a file read, never a request):
        :meth:`raise_missing` reports it in one line at the end of the run."""
        found = self.lockfile.find(repo_id, revision) if self.lockfile is not None else None
        if found is None:
            return None
        if found.key not in self.checked:
            self.checked[found.key] = _cached_difference(found)
        if self.checked[found.key] is not None:
            raise self.contradicted()
        return found

    def contradicted(self) -> InputError:
        """The one-line error for the locked configs the Hugging Face cache contradicts."""
        bad = sorted((k, f) for k, f in self.checked.items() if f is not None)
        names = ", ".join(f"{key} (first at {shown_name(at)})" for key, at in bad)
        return InputError(f"{shown(self.path)}: differs from config.json at the locked commit "
                          f"in the Hugging Face cache: {names}; run `kvlint lock --check`")

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
        """One line naming the models a locked run lacked, or the locked configs the
        Hugging Face cache contradicts (nothing when none)."""
        if any(f is not None for f in self.checked.values()):
            raise self.contradicted()
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
    """Write ``path`` whole or not at all: a new file with a random name beside it (created
    exclusively, never through a link), flushed, then renamed over ``path``. A ``path`` that
    is a symbolic link or not a regular file, or that leads outside its repository, is
    refused with a one-line :class:`InputError`."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise InputError(f"{shown(path)}: cannot write: {_reason(err)}") from None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise InputError(f"{shown(path)}: is a symbolic link; not written (kvlint writes the "
                         "lock as a regular file only: remove the link, or pass --lock with "
                         "the file it points to)")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise InputError(f"{shown(path)}: not a regular file ({_kind(info.st_mode)}); "
                         "not written")
    confine(path, "written")
    partial = path.with_name(f".{path.name}.{secrets.token_hex(8)}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(partial, flags, 0o666)
    except OSError as err:
        raise InputError(f"{shown(path)}: cannot write: {_reason(err)}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(text.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        if info is not None:
            os.chmod(partial, stat.S_IMODE(info.st_mode))
        os.replace(partial, path)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise InputError(f"{shown(path)}: cannot write: {_reason(err)}") from None


def _reason(err: OSError) -> str:
    return " ".join((err.strerror or str(err) or type(err).__name__).split())


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


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



@dataclass(frozen=True)
class Verdict:
    """What :func:`verify` found for one locked model."""

    key: str
    differs: str | None = None
    """The first field of the locked entry that differs from the model repo at its commit
    (``config.<field>``, or ``checkpoint-bytes``); ``None`` when nothing differs."""
    source: str = ""
    """Where the repo's files were read: ``the Hugging Face cache`` or ``the Hub``."""
    unverified: str | None = None
    """Why the entry could not be checked (neither the cache nor the Hub gave its config)."""


def verify(model: LockedModel, *, offline: bool = False) -> Verdict:
    """Compare the locked ``config`` (and ``checkpoint-bytes``, when its answer is known) with
    ``config.json`` of ``model.repo_id`` at ``model.commit``: read from the Hugging Face cache
    by path first (a commit's files never change), else from the Hub unless ``offline``."""
    from kvlint.loaders import hub, hub_cache, local

    key, commit = model.key, model.commit
    hit = hub_cache.cached_file(model.repo_id, local.CONFIG_NAME, commit)
    if hit is not None:
        path, source = hit[0], "the Hugging Face cache"
    elif offline:
        return Verdict(key, unverified=f"config.json at {commit} is not in the Hugging Face "
                                       f"cache ({hub_cache.cache_dir()}) and the run is "
                                       "offline")
    else:
        try:
            path = hub.download_config(model.repo_id, revision=commit).path
        except HubError as err:
            return Verdict(key, unverified=f"config.json at {commit} is not in the Hugging "
                                           f"Face cache and the Hub did not give it: {err}")
        source = "the Hub"
    try:
        actual = local.read_json(path)
    except InputError as err:
        return Verdict(key, unverified=str(err))
    try:
        field_ = first_difference(model.config, actual)
    except RecursionError:
        field_ = "(nested too deeply to compare)"
    if field_ is not None:
        return Verdict(key, f"config.{field_}" if field_ else "config", source)
    if _size_differs(model, offline=offline or hit is not None):
        return Verdict(key, "checkpoint-bytes", source)
    return Verdict(key, None, source)


def _cached_difference(model: LockedModel) -> str | None:
    """The first field where ``model``'s config differs from ``config.json`` at its commit in
    the Hugging Face cache; ``None`` when they agree or the cache cannot say."""
    from kvlint.loaders import hub_cache, local

    hit = hub_cache.cached_file(model.repo_id, local.CONFIG_NAME, model.commit)
    if hit is None:
        return None
    try:
        differs = first_difference(model.config, local.read_json(hit[0]))
    except (InputError, RecursionError):
        return None
    return None if differs is None else f"config.{differs}" if differs else "config"


def _size_differs(model: LockedModel, *, offline: bool) -> bool:
    """Whether the repo's safetensors index at the commit gives another size than the lock
    (``False`` when that cannot be known: offline, the cache has neither the index nor the
    record that the repo has none)."""
    from kvlint.errors import KvlintError
    from kvlint.loaders import checkpoint

    try:
        size = checkpoint.hub_checkpoint_size(model.repo_id, revision=model.commit,
                                              offline=offline)
    except KvlintError:
        return False
    return (None if size is None else size.total_bytes) != model.checkpoint_bytes


def describe(verdict: Verdict, where: str) -> str:
    """One line for a verdict that is not a match (``where``: the lock as shown)."""
    if verdict.unverified is not None:
        return f"{where}: cannot verify {verdict.key}: {' '.join(verdict.unverified.split())}"
    return (f"{where}: {verdict.key} differs from the model repo at its commit "
            f"({verdict.source}): first at {shown_name(verdict.differs)}")
