"""Values read from line-aware YAML (:mod:`.yaml_marks`), for every manifest parser: which
Kubernetes object a document is (or that it is none), typed lookups (``get_map``,
``get_str``...), the line and column of a key, value or list item, conversions that never
guess (``"8"`` is 8; ``"eight"`` is :class:`Unresolved`), model placeholders, and the command
words of a YAML ``command``/``args`` value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.shell_words import Word, split_script
from kvlint.manifests.yaml_marks import LStr


def plain_map(obj: object) -> bool:
    """A mapping that is not a Kubernetes object: no ``apiVersion``, and no ``kind`` beside
    an object's ``metadata`` or ``spec`` (a chart's values may choose its workload with a
    top-level ``kind: Deployment``)."""
    if not isinstance(obj, dict) or "apiVersion" in obj:
        return False
    return "kind" not in obj or not any(k in obj for k in ("metadata", "spec"))


def is_object(document: object, api_prefixes: Sequence[str], kinds: Sequence[str]) -> bool:
    """A Kubernetes object of one of ``kinds`` whose apiVersion starts with one of
    ``api_prefixes`` (an empty prefix accepts any group)."""
    if not isinstance(document, dict):
        return False
    api = document.get("apiVersion")
    kind = document.get("kind")
    return isinstance(api, str) and isinstance(kind, str) and kind in kinds and \
        any(api.startswith(p) for p in api_prefixes)


def object_name(document: object) -> str:
    return get_str(get_map(document, "metadata"), "name") or ""


def get_map(obj: Any, key: str) -> dict[str, Any] | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else None


def get_list(obj: Any, key: str) -> list[Any] | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else None


def get_str(obj: Any, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def node_line(obj: object) -> int | None:
    line = getattr(obj, "line", None)
    return line if isinstance(line, int) else None


def key_line(obj: Any, key: object) -> int | None:
    """Line of ``key`` in a line-aware mapping (else of the mapping itself)."""
    lines = getattr(obj, "key_lines", None)
    if isinstance(lines, dict) and key in lines:
        return int(lines[key][0])
    return node_line(obj)


def key_col(obj: Any, key: object) -> int | None:
    lines = getattr(obj, "key_lines", None)
    if isinstance(lines, dict) and key in lines:
        return int(lines[key][1])
    return None


def value_line(obj: Any, key: object) -> int | None:
    """Line where the value of ``key`` starts (the key's line when unknown)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    line = node_line(value)
    if line is not None:
        return line
    lines = getattr(obj, "value_lines", None)
    if isinstance(lines, dict) and key in lines:
        return int(lines[key][0])
    return key_line(obj, key)


def item_line(obj: Any, index: int) -> int | None:
    lines = getattr(obj, "item_lines", None)
    if isinstance(lines, list) and 0 <= index < len(lines):
        return int(lines[index][0])
    item = obj[index] if isinstance(obj, list) and 0 <= index < len(obj) else None
    return node_line(item) or node_line(obj)


def lstr(text: str, line: int | None, column: int = 0, style: str | None = None) -> str:
    """A string that remembers where it was read (``yaml_marks.LStr``)."""
    return LStr(text, line or 0, column, style)


def env_of(obj: Any) -> dict[str, str | None]:
    """An environment written as a mapping or as a ``KEY=VALUE`` / bare ``KEY`` list; values
    remember their line; a bare key or a null value is set but unknown (``None``)."""
    env: dict[str, str | None] = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            if value is None or isinstance(value, dict | list):
                env[str(key)] = None
            else:
                env[str(key)] = lstr(scalar_text(value), value_line(obj, key),
                                     key_col(obj, key) or 0)
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            if not isinstance(item, str):
                continue
            name, eq, value = item.partition("=")
            env[name.strip()] = lstr(value, item_line(obj, i)) if eq else None
    return env


def env_items(env: Any) -> list[dict[str, Any]]:
    """A ``name: value`` map as a Kubernetes container ``env`` list (values keep their
    lines; :func:`~kvlint.manifests.shell_env.env_from_k8s` reads numbers as text and a
    nested value as unknown)."""
    if not isinstance(env, dict):
        return []
    return [{"name": str(k), "value": v} for k, v in env.items() if v is not None]


T = TypeVar("T")


def to_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+]?\d+\s*", value):
        return int(value)
    return None


def to_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def to_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def scalar_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _loc_number(obj: Any, key: str, source: str, convert: Callable[[object], T | None],
                what: str) -> Located[T] | Unresolved | None:
    """A number read from ``obj[key]`` with ``convert``, on the key's line."""
    if not isinstance(obj, dict) or obj.get(key) is None:
        return None
    value, line = obj[key], key_line(obj, key)
    number = convert(value)
    if number is None:
        return Unresolved(f"{source} is not {what}", line, key_col(obj, key),
                          scalar_text(value))
    return Located(number, line, key_col(obj, key), source)


def loc_int(obj: Any, key: str, source: str) -> Located[int] | Unresolved | None:
    """An integer setting read from ``obj[key]``, on the key's line."""
    return _loc_number(obj, key, source, to_int, "an integer")


def loc_float(obj: Any, key: str, source: str) -> Located[float] | Unresolved | None:
    return _loc_number(obj, key, source, to_float, "a number")


def loc_str(obj: Any, key: str, source: str) -> Located[str] | None:
    if not isinstance(obj, dict) or obj.get(key) is None or isinstance(obj[key], dict | list):
        return None
    return Located(scalar_text(obj[key]), value_line(obj, key), key_col(obj, key), source)


TEMPLATE = re.compile(r"\{\{.*?\}\}|<[A-Za-z][^<>]*>")


def model_value(text: str, line: int | None, source: str,
                column: int | None = None) -> Located[str] | Unresolved:
    """A model named in a manifest: a placeholder (``{{ }}``, ``<...>``) is Unresolved."""
    stripped = text.strip()
    if not stripped or TEMPLATE.search(stripped):
        return Unresolved(f"{source} is a placeholder", line, column, stripped)
    return Located(stripped, line, column, source)


def words_of_list(items: Sequence[Any]) -> list[Word]:
    """One word per YAML list item (an exec-form command), on the item's line; string items
    stay line-aware (an ``sh -c`` script in a block scalar keeps its lines)."""
    return [Word(item if isinstance(item, str) else scalar_text(item), item_line(items, i),
                 column=getattr(item, "column", None) or None)
            for i, item in enumerate(items)
            if item is not None and not isinstance(item, dict | list)]


def words_of_scalar(text: str, line: int | None = None) -> list[Word]:
    """A command written as one string, split shell-style into words (docker and compose
    split exec strings the same way; operators are not interpreted)."""
    if line is not None and line != node_line(text):
        commands = split_script(str(text), line=line, style=getattr(text, "style", None))
    else:
        commands = split_script(text)
    return [w for command in commands for w in command]


def words_of(value: Any, line: int | None = None) -> list[Word]:
    if isinstance(value, list):
        return words_of_list(value)
    if isinstance(value, str):
        return words_of_scalar(value, line)
    return []


def names(text: str) -> frozenset[str]:
    """Whitespace-separated names."""
    return frozenset(text.split())


def doc_line(document: object) -> int:
    """The line of a document (1 when unknown)."""
    return node_line(document) or 1


_VALUES_REF = re.compile(r"\"?\{\{-?\s*\.Values\.([A-Za-z0-9_.]+)\s*-?\}\}\"?")


def values_tpl(value: Any, doc: dict[str, Any]) -> Any:
    """``value`` (a string, or a list of them) with each ``{{ .Values.a.b }}`` replaced by
    the scalar the values file holds at ``a.b``, as charts that render their container
    fields through Helm's ``tpl`` do (llm-d's, a generic chart's ``args``); a reference to
    anything else is left as written."""
    if isinstance(value, list):
        return [values_tpl(item, doc) for item in value]
    if not isinstance(value, str) or "{{" not in value:
        return value

    def scalar(match: re.Match[str]) -> str:
        node: Any = doc
        for key in match.group(1).split("."):
            node = node.get(key) if isinstance(node, dict) else None
        return str(node) if isinstance(node, str | int | float) and \
            not isinstance(node, bool) else match.group(0)

    text = _VALUES_REF.sub(scalar, value)
    if isinstance(value, LStr):
        return LStr(text, value.line, value.column, value.style, value.end_line)
    return text
