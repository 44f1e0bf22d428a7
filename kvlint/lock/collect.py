"""``kvlint lock``: find every Hugging Face model the manifests and the models map name,
resolve each once, and write ``kvlint.lock``; ``--check`` compares the names, then each
locked entry with the model repo at its commit (the Hugging Face cache first, the Hub unless
offline: :func:`check`).

The names are found as ``kvlint lint`` finds them
(:func:`~kvlint.lint.discovery.discover`, :func:`~kvlint.lint.extraction.extract_all`
and the :class:`~kvlint.lint.resolver.ModelResolver` that maps names through
``[tool.kvlint] models`` and ``--model-map``), so the lock holds exactly the Hub models a lint
of the same paths reads. Local configs, unresolved placeholders and local paths without a
config are not locked: the first are in the repository, the others are KV902 findings either
way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pluggy

from kvlint.errors import HubError, KvlintError
from kvlint.lint.discovery import DEFAULT_INCLUDE, discover
from kvlint.lint.extraction import extract_all
from kvlint.lint.resolver import ModelResolver
from kvlint.lock.files import Verdict, hub_reference, lock_model, verify
from kvlint.lock.format import LockedModel, Lockfile, lock_key
from kvlint.manifests.base import ManifestProblem


def named_models(paths: Iterable[str], pm: pluggy.PluginManager, *,
                 model_map: Mapping[str, str], map_origins: Mapping[str, str],
                 include: Sequence[str] = DEFAULT_INCLUDE,
                 exclude: Sequence[str] = ()) -> dict[str, str]:
    """Lock key -> where it is first named (``file:line``, or the map it comes from): the
    Hub models the manifests under ``paths`` serve, and every Hub model ``model_map`` names
    (``map_origins`` says where each map entry was given)."""
    named: dict[str, str] = {}

    def add(ref: str, origin: str) -> None:
        found = hub_reference(ref)
        if found is not None:
            named.setdefault(lock_key(*found), origin)

    files = [Path(f) for f in discover(paths, include, exclude)]
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    resolver = ModelResolver(model_map=dict(model_map))
    for found in extract_all(files, pm, parsers):
        if isinstance(found, ManifestProblem):
            continue  # `kvlint lint` reports it (KV903); it names no model to lock
        for served in found:
            ref, _ = resolver.reference(served)
            if ref is not None:
                add(ref, f"{served.path}:{served.line}" if served.line else served.path)
    for name, ref in sorted(model_map.items()):
        add(ref, map_origins.get(name, "the models map"))
    return named


@dataclass(frozen=True)
class LockDiff:
    """How a lock differs from what is named."""

    missing: dict[str, str] = field(default_factory=dict)
    """Named but not locked: key -> where it is named."""
    extra: tuple[str, ...] = ()
    """Locked but no longer named."""

    @property
    def in_sync(self) -> bool:
        return not self.missing and not self.extra


def diff(lockfile: Lockfile | None, named: Mapping[str, str]) -> LockDiff:
    locked = lockfile.models if lockfile is not None else {}
    return LockDiff({k: v for k, v in sorted(named.items()) if k not in locked},
                    tuple(sorted(k for k in locked if k not in named)))


@dataclass(frozen=True)
class LockUpdate:
    lockfile: Lockfile
    added: tuple[str, ...]
    removed: tuple[str, ...]
    updated: tuple[str, ...]
    """Re-resolved to another commit, config or size (``--upgrade``)."""


def update(existing: Lockfile | None, named: Mapping[str, str], *, offline: bool = False,
           upgrade: bool = False) -> LockUpdate:
    """The lock for ``named``: models already locked are kept as they are (``upgrade``:
    resolved again), the others resolved once each through huggingface_hub. Raises one
    :class:`KvlintError` naming every model that could not be resolved and where it is
    named (``named``: key -> origin)."""
    old = existing.models if existing is not None else {}
    models: dict[str, LockedModel] = {}
    failures: list[str] = []
    for key in sorted(set(named)):
        if key in old and not upgrade:
            models[key] = old[key]
            continue
        try:
            models[key] = lock_model(key, offline=offline)
        except KvlintError as err:
            failures.append(f"{key} (named in {named[key]}): {err}")
    if failures:
        noun = "a model" if len(failures) == 1 else f"{len(failures)} models"
        raise HubError(f"cannot lock {noun} (nothing written; map or exclude what should not "
                       "be locked): " + "; ".join(failures))
    return LockUpdate(
        Lockfile(models),
        added=tuple(k for k in models if k not in old),
        removed=tuple(sorted(k for k in old if k not in models)),
        updated=tuple(k for k in models if k in old and models[k] != old[k]))


def check(lockfile: Lockfile | None, *, offline: bool = False) -> list[Verdict]:
    """Each locked model checked against its repo at its commit (sorted by key)."""
    if lockfile is None:
        return []
    return [verify(model, offline=offline) for _, model in sorted(lockfile.models.items())]
