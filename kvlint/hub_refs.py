"""Hugging Face Hub references, read from their text alone (no I/O, no kvlint imports): what
the lock file format and the Hub client both need, so that neither imports the other's
package for it."""

from __future__ import annotations

import re

__all__ = ["looks_like_hub_id", "split_hub_ref"]

# One segment of a repo id, as huggingface_hub validates it: ASCII letters, digits, '_', '-', '.',
# at most 96, starting and ending with a letter, digit or '_'.
_SEGMENT = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
# A git revision: anything but whitespace and the characters git forbids in ref names.
_REVISION = r"[^\s@~^:?*\[\\]+"
_HUB_REF = re.compile(rf"(?:{_SEGMENT}/)?{_SEGMENT}(?:@{_REVISION})?")
# Names that are clearly files, not repos: a missing local config should not be looked up online.
_FILE_SUFFIXES = (".json", ".yaml", ".yml", ".toml", ".py", ".git")


def split_hub_ref(ref: str) -> tuple[str, str | None]:
    """'org/name@rev' -> ('org/name', 'rev'); 'org/name' -> ('org/name', None)."""
    repo_id, _, revision = ref.strip().partition("@")
    return repo_id, (revision or None)


def looks_like_hub_id(ref: str) -> bool:
    """True for 'name' or 'org/name' (optionally '@rev') made of Hub-legal characters.

    A pure syntactic check: the caller looks for a local path first. Names ending in a config
    file suffix (``config.json``, ``values.yaml``...) are not taken for repo ids.
    """
    if not _HUB_REF.fullmatch(ref):
        return False
    repo_id, _ = split_hub_ref(ref)
    return not ("--" in repo_id or ".." in repo_id or repo_id.lower().endswith(_FILE_SUFFIXES))
