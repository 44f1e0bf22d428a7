"""Line-aware safe YAML: every mapping, sequence and string remembers where it was written.

``load_documents`` composes nodes with libyaml (``yaml.CSafeLoader``; PyYAML's pure-Python
``SafeLoader`` when libyaml is absent) and builds the Python values itself from the nodes, so
that every value keeps its 1-based line and column:

- :class:`LDict` (a ``dict``) with ``line``, ``key_lines`` and ``value_lines``;
- :class:`LList` (a ``list``) with ``line`` and ``item_lines``;
- :class:`LStr` (a ``str``) with ``line``, ``column`` and ``style``;
- other scalars are the plain values YAML 1.1's safe loader gives (``int``, ``float``,
  ``bool``, ``None``, ``datetime``...).

Lines and columns are 1-based. A block scalar's (``|``/``>``) ``line`` is the line of its
indicator; its text starts on the next line.

Only safe construction: no Python tags, no object creation. Unknown local tags (``!Ref``,
``!!python/...``) are read as the plain mapping, sequence or string they decorate, never
executed. Aliases share the object they point to (as PyYAML does); a document whose aliases
would expand past :data:`MAX_EXPANDED_NODES` nodes, or that refers to itself, is refused as an
``alias-bomb`` without building the expansion.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kvlint.loaders.manifests.base import ManifestProblem

try:  # pragma: no cover - depends on how PyYAML was built
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_PLAIN_TAGS: dict[str, str] = {}
"""Implicit tags of plain scalars by value: resolving one runs PyYAML's regexes in Python,
for every scalar libyaml parses; manifests repeat the same keys and values endlessly."""
_PLAIN_TAGS_MAX = 50_000


class _Loader(_BaseLoader):
    """The safe loader with a memo of plain-scalar tag resolution (same results)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0] and isinstance(value, str):
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
                if len(_PLAIN_TAGS) < _PLAIN_TAGS_MAX:
                    _PLAIN_TAGS[value] = tag
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]

__all__ = ["MAX_EXPANDED_NODES", "LDict", "LList", "LStr", "line_of", "load_documents"]

MAX_EXPANDED_NODES = 100_000
"""Refuse a document whose aliases expand to more nodes than this (billion laughs)."""

_MAX_DEPTH = 500
"""Refuse nesting deeper than this instead of exhausting Python's stack."""


class LStr(str):
    """A string scalar with its position and YAML style.

    ``style`` is ``None`` (plain), ``'|'`` (literal block), ``'>'`` (folded block), ``'"'`` or
    ``"'"``. ``end_line`` is the line where the scalar ends. ``raw`` is the scalar's source
    text (indicator or quotes included) for multi-line scalars that are not literal blocks
    (folded, quoted or plain ones, whose line breaks YAML folded away), so
    ``shell.split_script`` can place each word on its own line; ``None`` otherwise.
    """

    line: int
    column: int
    style: str | None
    end_line: int
    raw: str | None

    def __new__(cls, value: str, line: int = 0, column: int = 0, style: str | None = None,
                end_line: int | None = None, raw: str | None = None) -> LStr:
        self = super().__new__(cls, value)
        self.line = line
        self.column = column
        self.style = style
        self.end_line = line if end_line is None else end_line
        self.raw = raw
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (LStr, (str(self), self.line, self.column, self.style, self.end_line, self.raw))


class LDict(dict[str, Any]):
    """A mapping with its 1-based ``line`` and, per key, ``key_lines[key]`` and
    ``value_lines[key]`` as ``(line, column)``. Keys are plain values (str, or whatever
    YAML 1.1 makes of them: ``on:`` is ``True``)."""

    line: int
    column: int
    key_lines: dict[object, tuple[int, int]]
    value_lines: dict[object, tuple[int, int]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = 0
        self.column = 0
        self.key_lines = {}
        self.value_lines = {}


class LList(list[Any]):
    """A sequence with its 1-based ``line`` and ``item_lines[i]`` = ``(line, column)``."""

    line: int
    column: int
    item_lines: list[tuple[int, int]]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.line = 0
        self.column = 0
        self.item_lines = []


def line_of(container: Any, key: object) -> int | None:
    """The 1-based line of ``container[key]``: the key's line for an :class:`LDict`, the
    item's line for an :class:`LList` (``key`` an index); ``None`` when unknown."""
    if isinstance(container, LDict):
        where = container.key_lines.get(key)
        return where[0] if where else None
    if isinstance(container, LList) and isinstance(key, int) and not isinstance(key, bool):
        try:
            return container.item_lines[key][0]
        except IndexError:
            return None
    return None


# --- construction --------------------------------------------------------------------------

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"

_SAFE = SafeConstructor()
_SCALARS: dict[str, Any] = {
    "tag:yaml.org,2002:int": _SAFE.construct_yaml_int,
    "tag:yaml.org,2002:float": _SAFE.construct_yaml_float,
    "tag:yaml.org,2002:timestamp": _SAFE.construct_yaml_timestamp,
    "tag:yaml.org,2002:binary": _SAFE.construct_yaml_binary,
}
_BOOLS = SafeConstructor.bool_values
_STYLES = {None: None, "": None, "|": "|", ">": ">", '"': '"', "'": "'"}


class _Refused(Exception):
    def __init__(self, kind: str, message: str, line: int | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.line = line


class _Builder:
    """Builds one document. ``memo`` maps collection nodes (by identity) to their value and
    expanded size, so an alias costs one lookup and the expansion is only counted."""

    __slots__ = ("memo", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.memo: dict[int, tuple[Any, int]] = {}

    def build(self, node: Node, depth: int) -> tuple[Any, int]:
        """``(value, expanded node count)``."""
        if type(node) is ScalarNode:
            return self.scalar(node), 1
        key = id(node)
        hit = self.memo.get(key)
        if hit is not None:
            if hit[1] < 0:
                raise _Refused("alias-bomb", "an alias refers to the node that contains it "
                               "(a recursive structure)", node.start_mark.line + 1)
            return hit
        if depth > _MAX_DEPTH:
            raise _Refused("invalid-yaml", f"nesting deeper than {_MAX_DEPTH} levels",
                           node.start_mark.line + 1)
        self.memo[key] = (None, -1)  # in progress: a recursive alias lands here
        if isinstance(node, SequenceNode):
            out = self.sequence(node, depth)
        elif isinstance(node, MappingNode):
            out = self.mapping(node, depth)
        else:  # pragma: no cover - composer yields only the three node kinds
            out = (None, 1)
        if out[1] > MAX_EXPANDED_NODES:
            raise _Refused("alias-bomb",
                           f"aliases expand this document to more than {MAX_EXPANDED_NODES:,} "
                           "nodes (a YAML bomb); refusing to read it", node.start_mark.line + 1)
        self.memo[key] = out
        return out

    def scalar(self, node: ScalarNode) -> Any:
        tag = node.tag
        if tag == _STR or (tag not in _SCALARS and tag not in (_NULL, _BOOL)):
            start = node.start_mark
            end = node.end_mark
            style = _STYLES.get(node.style)
            raw = None
            if end.line != start.line and style != "|":
                raw = self.text[start.index:end.index]
            return LStr(node.value, start.line + 1, start.column + 1, style, end.line + 1, raw)
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return _BOOLS[node.value.lower()]
        return _SCALARS[tag](node)

    def sequence(self, node: SequenceNode, depth: int) -> tuple[Any, int]:
        out = LList()
        mark = node.start_mark
        out.line = mark.line + 1
        out.column = mark.column + 1
        lines = out.item_lines
        size = 1
        build = self.build
        for item in node.value:
            value, n = build(item, depth + 1)
            size += n
            m = item.start_mark
            out.append(value)
            lines.append((m.line + 1, m.column + 1))
            if size > MAX_EXPANDED_NODES:
                break
        return out, size

    def mapping(self, node: MappingNode, depth: int) -> tuple[Any, int]:
        out = LDict()
        mark = node.start_mark
        out.line = mark.line + 1
        out.column = mark.column + 1
        key_lines = out.key_lines
        value_lines = out.value_lines
        size = 1
        build = self.build
        pairs = node.value
        if any(k.tag == _MERGE for k, _ in pairs):
            size += self.merge(out, [v for k, v in pairs if k.tag == _MERGE], depth)
            pairs = [(k, v) for k, v in pairs if k.tag != _MERGE]
        for key_node, value_node in pairs:
            if type(key_node) is ScalarNode:
                key = self.scalar(key_node)
                if type(key) is LStr:
                    key = str(key)
            else:
                key, n = build(key_node, depth + 1)
                size += n
                try:
                    hash(key)
                except TypeError:
                    raise _Refused("invalid-yaml", "found an unhashable key (a mapping or "
                                   "sequence used as a key)",
                                   key_node.start_mark.line + 1) from None
            value, n = build(value_node, depth + 1)
            size += n + 1
            km = key_node.start_mark
            vm = value_node.start_mark
            out[key] = value
            key_lines[key] = (km.line + 1, km.column + 1)
            value_lines[key] = (vm.line + 1, vm.column + 1)
            if size > MAX_EXPANDED_NODES:
                break
        return out, size

    def merge(self, out: LDict, sources: list[Node], depth: int) -> int:
        """YAML merge keys (``<<: *base``): merged keys first, explicit keys win."""
        size = 0
        nodes: list[Node] = []
        for src in sources:
            nodes.extend(src.value if isinstance(src, SequenceNode) else [src])
        # Earlier sources win over later ones (SafeConstructor.flatten_mapping semantics).
        for src in reversed(nodes):
            value, n = self.build(src, depth + 1)
            size += n
            if not isinstance(value, dict):
                raise _Refused("invalid-yaml", "a merge key (<<) must refer to a mapping",
                               src.start_mark.line + 1)
            for k, v in value.items():
                out[k] = v
                if isinstance(value, LDict):
                    if k in value.key_lines:
                        out.key_lines[k] = value.key_lines[k]
                    if k in value.value_lines:
                        out.value_lines[k] = value.value_lines[k]
        return size


# --- Helm templates and errors -------------------------------------------------------------

_TEMPLATE_LINE = re.compile(r"^\{\{")


def _first_template_line(text: str) -> int | None:
    """The first line with a ``{{`` that is not in a comment (1-based)."""
    for number, line in enumerate(text.splitlines(), 1):
        at = line.find("{{")
        if at < 0:
            continue
        hash_at = line.find("#")
        if hash_at < 0 or hash_at > at or not (hash_at == 0 or line[hash_at - 1] in " \t"):
            return number
    return None


def _helm_problem(path: str, line: int | None) -> ManifestProblem:
    return ManifestProblem(
        path=path, line=line, kind="helm-template",
        message=("this file is a Helm template ({{ ... }} actions), not YAML; lint the "
                 "rendered output instead (helm template RELEASE CHART | kvlint lint -) or the "
                 "chart's values file"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _yaml_error(path: str, err: yaml.YAMLError) -> ManifestProblem:
    line: int | None = None
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        parts = [err.problem or "invalid YAML"]
        if err.context:
            parts.append(f"({err.context})")
        message = _one_line(" ".join(parts))
    else:
        mark = getattr(err, "mark", None)
        mark_line = getattr(mark, "line", None)
        line = mark_line + 1 if isinstance(mark_line, int) else None
        message = _one_line(str(err)) or "invalid YAML"
    return ManifestProblem(path=path, line=line, kind="invalid-yaml",
                           message=f"invalid YAML: {message}")


def load_documents(text: str, path: str) -> list[Any] | ManifestProblem:
    """Every document of ``text``, in order, as line-aware values; an empty document is
    ``None`` (indices stay those of the stream). A :class:`ManifestProblem` instead when the
    file is a Helm template, invalid YAML or a YAML bomb."""
    documents: list[Any] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            documents.append(_Builder(text).build(node, 0)[0])
    except _Refused as refused:
        template = _first_template_line(text) if "{{" in text else None
        if refused.kind != "alias-bomb" and template is not None:
            return _helm_problem(path, template)
        return ManifestProblem(path=path, line=refused.line, kind=refused.kind,
                               message=refused.message)
    except yaml.YAMLError as err:
        template = _first_template_line(text) if "{{" in text else None
        if template is not None:
            return _helm_problem(path, template)
        return _yaml_error(path, err)
    except RecursionError:
        return ManifestProblem(path=path, line=None, kind="invalid-yaml",
                               message="invalid YAML: nesting too deep to read")
    finally:
        loader.dispose()
    if "{{" in text:
        for number, line in enumerate(text.splitlines(), 1):
            if _TEMPLATE_LINE.match(line):
                return _helm_problem(path, number)
    return documents
