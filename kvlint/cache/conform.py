"""Whether a value read back from a result cache is what its dataclass fields declare, all
the way down (:func:`conforms`).

The restricted unpickler (:mod:`kvlint.cache.results`) decides which *kinds* of object a
cache file can build; this decides whether what was built has the *shape* kvlint's code
expects, so that a malformed entry is dropped before a reporter or rule touches it, never
crashed on. It is driven by the type hints of kvlint's own dataclasses, so a field added
to a result is checked without a second list to keep in step.

Bounded as well as typed: integers to :data:`MAX_INT_BITS` bits (a planted 10-MB integer
would make any arithmetic or printing slow), fractions likewise, strings to
:data:`MAX_STR`, containers to :data:`MAX_ITEMS` items, nesting to :data:`MAX_DEPTH`
levels. No I/O; results per class are memoised.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any, Final

MAX_INT_BITS: Final = 256
"""The widest integer an entry may hold (bytes of any model fit in 64 bits)."""
MAX_STR: Final = 1 << 20
MAX_ITEMS: Final = 100_000
MAX_DEPTH: Final = 40


def _int_ok(value: object) -> bool:
    return type(value) is int and value.bit_length() <= MAX_INT_BITS


_UNRESOLVED: Final = object()
"""The hint of a field whose type is imported for type checking only (a probe report on a
lint result): a cache entry may hold ``None`` there, nothing else."""


@cache
def _hints(cls: Any) -> tuple[tuple[str, Any], ...]:
    """``(field name, resolved hint)`` of a dataclass's fields (string annotations resolved
    in the defining module, field by field)."""
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    out = []
    for f in dataclasses.fields(cls):
        hint: Any = f.type
        if isinstance(hint, str):
            try:
                hint = eval(hint, namespace)  # kvlint's own annotation text, never a file's
            except Exception:
                hint = _UNRESOLVED
        out.append((f.name, hint))
    return tuple(out)


def _any(value: object, depth: int) -> bool:
    """A value behind ``Any`` (a finding's ``data``, a plan's suggestion): plain data or
    kvlint's own objects, bounded like everything else."""
    if depth > MAX_DEPTH:
        return False
    if value is None or type(value) in (bool, float):
        return True
    if type(value) is int:
        return _int_ok(value)
    if isinstance(value, str):
        return len(value) <= MAX_STR
    if type(value) is Fraction:
        return _int_ok(value.numerator) and _int_ok(value.denominator)
    if isinstance(value, enum.Enum):
        return True
    if isinstance(value, (tuple, list, frozenset, set)) and \
            type(value) in (tuple, list, frozenset, set):
        return len(value) <= MAX_ITEMS and all(_any(v, depth + 1) for v in value)
    if type(value) is dict:
        return len(value) <= MAX_ITEMS and all(
            _any(k, depth + 1) and _any(v, depth + 1) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_conform(value, depth + 1)
    return False


def _fields_conform(value: object, depth: int) -> bool:
    try:
        state = vars(value)
    except TypeError:
        return False
    kind: Any = type(value)
    for name, hint in _hints(kind):
        if name not in state or not conforms(state[name], hint, depth):
            return False
    return True


def conforms(value: object, hint: Any, depth: int = 0) -> bool:
    """Whether ``value`` is of type ``hint`` (as kvlint's annotations write them), bounded as
    the module says. Unknown forms of hint are refused, never assumed to hold."""
    if depth > MAX_DEPTH:
        return False
    if hint is _UNRESOLVED:
        return value is None
    if hint is Any or isinstance(hint, typing.TypeVar):
        return _any(value, depth)
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(conforms(value, arg, depth) for arg in args)
    if origin is typing.Literal:
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin is typing.ClassVar or origin is Final:
        return conforms(value, args[0] if args else Any, depth)
    if origin is tuple:
        if type(value) is not tuple or len(value) > MAX_ITEMS:
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0], depth + 1) for v in value)
        if args == ((),):
            return not value
        return len(value) == len(args) and all(
            conforms(v, a, depth + 1) for v, a in zip(value, args, strict=True))
    if origin in (list, frozenset, set):
        return isinstance(value, (list, frozenset, set)) and type(value) is origin and \
            len(value) <= MAX_ITEMS and all(
                conforms(v, args[0] if args else Any, depth + 1) for v in value)
    if origin is dict or origin is typing.Mapping or origin is _abc_mapping():
        if type(value) is not dict or len(value) > MAX_ITEMS:
            return False
        key_hint, value_hint = args if len(args) == 2 else (Any, Any)
        return all(conforms(k, key_hint, depth + 1) and conforms(v, value_hint, depth + 1)
                   for k, v in value.items())
    if origin is not None:  # a generic dataclass (Located[str]): its own fields
        return isinstance(origin, type) and type(value) is origin and \
            _fields_conform(value, depth + 1)
    if not isinstance(hint, type):
        return False
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return _int_ok(value)
    if hint is float:  # an int is a float to a type checker
        return type(value) is float or _int_ok(value)
    if hint is Fraction:
        return type(value) is Fraction and _int_ok(value.numerator) and \
            _int_ok(value.denominator)
    if hint is str:
        return isinstance(value, str) and len(value) <= MAX_STR
    if issubclass(hint, enum.Enum):
        return type(value) is hint
    if dataclasses.is_dataclass(hint):
        return type(value) is hint and _fields_conform(value, depth + 1)
    if hint is object:
        return _any(value, depth)
    return False


@lru_cache(maxsize=1)
def _abc_mapping() -> Any:
    from collections.abc import Mapping

    return Mapping
