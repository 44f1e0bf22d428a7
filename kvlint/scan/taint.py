"""The taint a local name carries through a function walk (see :mod:`kvlint.scan.analyzer`):
is it K/V-like, was it expanded along the head dim, up-projected from the MLA latent, read
from a KV cache, or rebuilt from the cached latent; and where that happened (:class:`Origin`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Origin:
    line: int
    col: int
    helper: str
    factor: str | None = None
    variable: str | None = None
    fallback: bool = False
    cache_line: int | None = None


@dataclass(frozen=True)
class Taint:
    kv: bool = False
    index: bool = False
    newaxis: bool = False
    broadcast: str | None = None  # the factor text of a pending ``expand`` (``""`` if unknown)
    expanded: Origin | None = None
    upproj: Origin | None = None
    cache_read: int | None = None
    rebuilt: Origin | None = None

    def __or__(self, other: Taint) -> Taint:
        if other is EMPTY:
            return self
        if self is EMPTY:
            return other
        return Taint(
            kv=self.kv or other.kv,
            index=self.index and other.index,
            newaxis=self.newaxis or other.newaxis,
            broadcast=self.broadcast if self.broadcast is not None else other.broadcast,
            expanded=self.expanded or other.expanded,
            upproj=self.upproj or other.upproj,
            cache_read=self.cache_read if self.cache_read is not None else other.cache_read,
            rebuilt=self.rebuilt or other.rebuilt,
        )


EMPTY = Taint()


def union(taints: Iterable[Taint]) -> Taint:
    out = EMPTY
    for t in taints:
        out = out | t
    return out
