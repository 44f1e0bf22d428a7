"""Indented JSON text, fast.

Python writes indented JSON in C from 3.13 on; before, ``json.dumps(..., indent=2)`` runs its
pure-Python encoder, which took most of the time of a cached ``kvlint lint --format json`` of
a large tree (0.23 s for 2,000 manifests' 6 MB report). simplejson (4.1 on) writes the same
text in C, about 3x faster, and is a dependency only on those Pythons. Either way the text is
byte for byte ``json.dumps(data, indent=2)``; ``tests/reporters/test_json_text.py`` holds the
two to that.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from typing import Any

__all__ = ["indented_json"]


def indented_json(data: Any) -> str:
    """``json.dumps(data, indent=2)``, through a C encoder where there is one."""
    encoder = _simplejson()
    if encoder is None:
        return json.dumps(data, indent=2)
    # the options where simplejson's defaults differ from json's
    return str(encoder.dumps(data, indent=2, allow_nan=True, namedtuple_as_object=False,
                             tuple_as_array=True, use_decimal=False, for_json=False,
                             iterable_as_array=False, bigint_as_string=False))


@cache
def _simplejson() -> Any:
    """The simplejson module when Python's own encoder writes indented JSON in Python and
    simplejson writes it in C (its C speedups built, version 4.1 on); else ``None``."""
    return None if sys.version_info >= (3, 13) else _load()


def _load() -> Any:
    try:
        import simplejson
        from simplejson import encoder
    except ImportError:
        return None
    text = str(getattr(simplejson, "__version__", "0"))
    version = tuple(int(p) for p in text.split(".")[:2] if p.isdigit())
    if version < (4, 1) or getattr(encoder, "c_make_encoder", None) is None:
        return None
    return simplejson
