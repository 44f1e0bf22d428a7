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
reach more than :data:`MAX_EXPANDED_NODES` nodes (each alias counts the nodes of what it
points to, expanded, and long strings count by size), or that refers to itself, is refused as
an ``alias-bomb`` without building the expansion. A large document without aliases is read,
however many nodes it has: its size is bounded by the file's.

Nesting deeper than :data:`MAX_DEPTH` is refused (``invalid-yaml``) before libyaml's composer,
which recurses on the C stack, can overflow it; a number longer than Python reads
(:data:`MAX_NUMBER_CHARS`) is refused too, instead of an error from ``int``.
"""

from __future__ import annotations

import gc
import itertools
import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kvlint.manifests.base import ManifestProblem
from kvlint.manifests.engine_markers import first_engine_line
from kvlint.manifests.located_str import LStr

try:  # pragma: no cover - depends on how PyYAML was built
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"

_PLAIN_TAGS: dict[str, str] = {}
"""Implicit tags of plain scalars by value: resolving one runs PyYAML's regexes in Python,
for every scalar libyaml parses; manifests repeat the same keys and values endlessly."""
_PLAIN_TAGS_MAX = 50_000


_RESOLVED_FIRST = frozenset(k for k in _BaseLoader.yaml_implicit_resolvers if k)
"""First characters for which an implicit resolver (int, float, bool, null, timestamp...)
exists: a plain scalar starting with any other character is a string, no regex needed."""
_NO_SHORTCUTS = None in _BaseLoader.yaml_implicit_resolvers or \
    bool(_BaseLoader.yaml_path_resolvers)


class _Loader(_BaseLoader):
    """The safe loader with a memo of plain-scalar tag resolution, and shortcuts where
    PyYAML's resolver has a single answer (same results)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if _NO_SHORTCUTS:  # pragma: no cover - not the safe loader's resolvers
            return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        if kind is ScalarNode:
            if not implicit[0]:
                return _STR
            if value and value[0] not in _RESOLVED_FIRST:
                return _STR
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
                if len(_PLAIN_TAGS) < _PLAIN_TAGS_MAX:
                    _PLAIN_TAGS[value] = tag
            return tag
        return _SEQ if kind is SequenceNode else _MAP

    if not _NO_SHORTCUTS:
        # No path resolvers are registered, so the composer's two calls per node that keep
        # their state do nothing: C builtins taking the same arguments cost less than a
        # Python call (each builds a throwaway slice or empty tuple).
        descend_resolver = staticmethod(slice)  # type: ignore[assignment]
        ascend_resolver = staticmethod(tuple)  # type: ignore[assignment]

__all__ = ["MAX_EXPANDED_NODES", "LDict", "LList", "LStr", "line_of", "load_documents"]

MAX_EXPANDED_NODES = 100_000
"""Refuse a document whose aliases reach more nodes than this (billion laughs)."""

MAX_DEPTH = 500
"""Refuse nesting deeper than this instead of exhausting the stack."""
_MAX_DEPTH = MAX_DEPTH

_C_STACK_SAFE_DEPTH = 1_000
"""Nesting libyaml's composer (recursive C, about 250 bytes of stack a level) surely survives
even on a 1 MiB stack; text that might nest deeper is checked event by event first."""

MAX_NUMBER_CHARS = 4_300
"""A number scalar longer than this is refused: Python's default limit on the digits of an
``int`` read from text, and it keeps YAML 1.1 base-60 numbers (``1:2:3:...``), whose
conversion is quadratic, cheap."""

_STRING_WEIGHT = 256
"""An aliased string counts one node per this many characters (shared, but a consumer that
joins the aliases copies them)."""


class LDict(dict[str, Any]):
    """A mapping with its 1-based ``line`` and, per key, ``key_lines[key]`` and
    ``value_lines[key]`` as ``(line, column)``. Keys are plain values (str, or whatever
    YAML 1.1 makes of them: ``on:`` is ``True``)."""

    line: int
    column: int
    key_lines: dict[object, tuple[int, int]]
    value_lines: dict[object, tuple[int, int]]
    value_tags: dict[object, str] = {}  # noqa: RUF012 - replaced, never mutated, when set
    """The local tag a value carries (``volumes: !override``, ``command: !reset``), by key:
    read as the plain value, the tag kept for a parser that gives it a meaning."""

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
_new_str = str.__new__
_new_list = list.__new__
_new_dict = dict.__new__


class _Refused(Exception):
    def __init__(self, kind: str, message: str, line: int | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.line = line


class _Builder:
    """Builds one document. ``memo`` maps collection nodes and long strings (by identity) to
    their value and expanded size, so an alias costs one lookup and its expansion is only
    counted, in ``aliased``."""

    __slots__ = ("aliased", "memo", "merges", "text")

    def __init__(self, text: str, merges: bool = True) -> None:
        self.text = text
        self.memo: dict[int, tuple[Any, int]] = {}
        self.aliased = 0
        self.merges = merges
        """Whether a key may be a merge key (``<<``, ``!!merge``): else none is looked for."""

    def build(self, node: Node, depth: int) -> tuple[Any, int]:
        """``(value, expanded node count)``."""
        if type(node) is ScalarNode and len(node.value) < _STRING_WEIGHT:
            return self.scalar(node), 1
        key = id(node)
        hit = self.memo.get(key)
        if hit is not None:  # an alias (or a merge key) reaching a node built before
            if hit[1] < 0:
                raise _Refused("alias-bomb", "an alias refers to the node that contains it "
                               "(a recursive structure)", node.start_mark.line + 1)
            self.aliased += hit[1]
            if self.aliased > MAX_EXPANDED_NODES:  # located at the collection that uses it
                raise _Refused("alias-bomb",
                               f"aliases expand this document by more than "
                               f"{MAX_EXPANDED_NODES:,} nodes (a YAML bomb); refusing to "
                               "read it", None)
            return hit
        if type(node) is ScalarNode:
            out = (self.scalar(node), 1 + len(node.value) // _STRING_WEIGHT)
            self.memo[key] = out
            return out
        if depth > _MAX_DEPTH:
            raise _Refused("invalid-yaml", f"nesting deeper than {_MAX_DEPTH} levels",
                           node.start_mark.line + 1)
        self.memo[key] = (None, -1)  # in progress: a recursive alias lands here
        try:
            if isinstance(node, SequenceNode):
                out = self.sequence(node, depth)
            elif isinstance(node, MappingNode):
                out = self.mapping(node, depth)
            else:  # pragma: no cover - composer yields only the three node kinds
                out = (None, 1)
        except _Refused as refused:
            if refused.line is None:
                refused.line = node.start_mark.line + 1
            raise
        self.memo[key] = out
        return out

    def scalar(self, node: ScalarNode) -> Any:
        tag = node.tag
        if tag == _STR or (tag not in _SCALARS and tag not in (_NULL, _BOOL)):
            return self.string(node)
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return _BOOLS[node.value.lower()]
        if len(node.value) > MAX_NUMBER_CHARS and tag in (_INT, _FLOAT):
            raise _Refused("invalid-yaml", f"a number of {len(node.value):,} characters "
                           f"(more than {MAX_NUMBER_CHARS:,}); refusing to read it",
                           node.start_mark.line + 1)
        try:
            return _SCALARS[tag](node)
        except (ValueError, OverflowError) as err:
            if tag in (_INT, _FLOAT):
                raise _Refused("invalid-yaml", f"cannot read the number {node.value[:40]!r}: "
                               f"{_one_line(str(err))}", node.start_mark.line + 1) from None
            # e.g. a date that does not exist (2024-13-01): the string, as YAML 1.2 reads it
            start = node.start_mark
            return LStr(node.value, start.line + 1, start.column + 1,
                        _STYLES.get(node.style), node.end_mark.line + 1)

    def string(self, node: ScalarNode) -> LStr:
        """A string scalar as an :class:`LStr` (built here, not through ``LStr()``: this
        runs for most scalars of every manifest)."""
        start = node.start_mark
        end = node.end_mark
        out = _new_str(LStr, node.value)
        out.line = start.line + 1
        out.column = start.column + 1
        out.end_line = end.line + 1
        style = node.style
        if style:  # plain: the class's None
            out.style = _STYLES.get(style)
            if style != "|" and end.line != start.line:
                out.raw = self.text[start.index:end.index]
        elif end.line != start.line:
            out.raw = self.text[start.index:end.index]
        return out

    def sequence(self, node: SequenceNode, depth: int) -> tuple[Any, int]:
        out = _new_list(LList)  # LList() without its __init__: the fields are set here
        mark = node.start_mark
        out.line = mark.line + 1
        out.column = mark.column + 1
        out.item_lines = lines = []
        size = 1
        build = self.build
        scalar = self.scalar
        for item in node.value:
            if type(item) is ScalarNode and len(item.value) < _STRING_WEIGHT:
                value = scalar(item)  # what build() does for it, one call less
                size += 1
            else:
                value, n = build(item, depth + 1)
                size += n
            m = item.start_mark
            out.append(value)
            lines.append((m.line + 1, m.column + 1))
        return out, size

    def mapping(self, node: MappingNode, depth: int) -> tuple[Any, int]:
        out = _new_dict(LDict)  # LDict() without its __init__: the fields are set here
        mark = node.start_mark
        out.line = mark.line + 1
        out.column = mark.column + 1
        out.key_lines = key_lines = {}
        out.value_lines = value_lines = {}
        size = 1
        build = self.build
        string = self.string
        scalar = self.scalar
        pairs = node.value
        if self.merges and any(k.tag == _MERGE for k, _ in pairs):
            size += self.merge(out, [v for k, v in pairs if k.tag == _MERGE], depth)
            pairs = [(k, v) for k, v in pairs if k.tag != _MERGE]
        for key_node, value_node in pairs:
            if type(key_node) is ScalarNode and len(key_node.value) < _STRING_WEIGHT:
                tag = key_node.tag
                if tag == _STR or (tag not in _SCALARS and tag not in (_NULL, _BOOL)):
                    key = key_node.value  # a key is a plain string: no LStr to build
                else:
                    key = self.scalar(key_node)
            else:
                key, n = build(key_node, depth + 1)
                size += n
                if type(key) is LStr:
                    key = str(key)
                try:
                    hash(key)
                except TypeError:
                    raise _Refused("invalid-yaml", "found an unhashable key (a mapping or "
                                   "sequence used as a key)",
                                   key_node.start_mark.line + 1) from None
            if type(value_node) is ScalarNode and len(value_node.value) < _STRING_WEIGHT:
                # what build() does for it, one call less (two for a string)
                value = string(value_node) if value_node.tag == _STR else scalar(value_node)
                size += 2
            else:
                value, n = build(value_node, depth + 1)
                size += n + 1
            km = key_node.start_mark
            vm = value_node.start_mark
            if value_node.tag[0] == "!":  # a local tag (the standard ones are tag:yaml.org)
                out.value_tags = {**out.value_tags, key: value_node.tag}
            out[key] = value
            key_lines[key] = (km.line + 1, km.column + 1)
            value_lines[key] = (vm.line + 1, vm.column + 1)
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


_PREFIX_COLUMNS = _C_STACK_SAFE_DEPTH // 4
_LONG_PREFIX = re.compile(rf"^[ \t?:-]{{{_PREFIX_COLUMNS},}}", re.MULTILINE)


def _may_nest_deeper(text: str) -> bool:
    """Whether ``text`` might nest deeper than :data:`_C_STACK_SAFE_DEPTH`, by a cheap bound:
    in block style every two levels take at least one more column of indentation or of
    ``-``/``?``/``:`` indicators before a line's content (so depth <= 2 x the longest such
    prefix + 4), and each flow level takes a ``[`` or ``{``."""
    flow = text.count("[") + text.count("{")
    if 2 * _PREFIX_COLUMNS + 4 + flow > _C_STACK_SAFE_DEPTH:
        return True
    # no line that long, no prefix that long: the regex (a scan in Python's re) is skipped
    return max(map(len, text.split("\n")), default=0) >= _PREFIX_COLUMNS and \
        _LONG_PREFIX.search(text) is not None


def _too_deep(text: str, limit: int) -> int | None:
    """The 1-based line where ``text`` first nests deeper than ``limit``, from libyaml's
    events (its parser keeps its own stack; only its composer recurses), or ``None``."""
    depth = 0
    parser = _BaseLoader(text)
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, starts):
                depth += 1
                if depth > limit:
                    mark = event.start_mark
                    return int(mark.line) + 1 if mark is not None else 1
            elif isinstance(event, ends):
                depth -= 1
    finally:
        parser.dispose()
    return None


def _nesting_error_line(err: yaml.YAMLError) -> int | None:
    """The 1-based line of PyYAML's own "maximum nesting depth" refusal, else ``None``."""
    if "nesting depth" not in str(err):
        return None
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    return int(mark.line) + 1 if mark is not None else 1


class PartialDocuments(list[Any]):
    """The documents of a stream in which some documents cannot be read (a stray template
    placeholder in a Secret, one broken document): each of those is ``None`` at its index,
    and :attr:`problems` says why, at its line. The others are read as usual."""

    problems: tuple[ManifestProblem, ...] = ()


_DOCUMENT_START = re.compile(r"^---(?=[ \t]|$)|^\.\.\.[ \t]*$", re.MULTILINE)
_HELM_ACTION = re.compile(
    r"\{\{-?\s*(?:\.Values|\.Release|\.Chart|\.Capabilities|\.Files|\$|include\b|"
    r"template\b|if\b|else\b|end\b|range\b|with\b|define\b|toYaml\b|tpl\b|/\*|"
    r"default\b|required\b|quote\b)")
"""A Go-template action that Helm charts use; a bare ``{{NAME}}`` is a stray placeholder."""


def is_helm_template(text: str, path: str) -> bool:
    """Whether ``text`` is a Helm chart's template (in a ``templates/`` directory, or
    holding Helm's own actions) rather than YAML with stray ``{{...}}`` placeholders."""
    parts = path.replace("\\", "/").split("/")
    return "templates" in parts[:-1] or _HELM_ACTION.search(text) is not None


def _per_document(text: str, path: str) -> PartialDocuments | None:
    """The stream read one document at a time, when it has several and at least one of
    them reads; ``None`` otherwise. Each document is parsed with the lines before it blank,
    so its lines and columns are the file's."""
    starts = [m.start() for m in _DOCUMENT_START.finditer(text)]
    if not starts:
        return None
    bounds = ([0] if text[:starts[0]].strip() else []) + starts + [len(text)]
    if len(bounds) < 3:
        return None
    out = PartialDocuments()
    problems: list[ManifestProblem] = []
    for begin, end in itertools.pairwise(bounds):
        chunk = text[begin:end]
        if chunk.startswith("..."):
            continue
        padding = "\n" * text.count("\n", 0, begin)
        read = _parse_stream(padding + chunk, path)
        if isinstance(read, ManifestProblem):
            out.append(None)
            problems.append(_document_problem(read, chunk, text.count("\n", 0, begin) + 1))
        else:
            out.extend(read)
    if len(problems) == len(out):
        return None
    out.problems = tuple(problems)
    return out


def _document_problem(problem: ManifestProblem, chunk: str, first_line: int
                      ) -> ManifestProblem:
    """Why one document of a stream is skipped: an info for a stray placeholder in a
    document that runs no engine (a Secret's ``{{HF_TOKEN}}``), the YAML error otherwise."""
    template = _first_template_line(chunk)
    if template is None or problem.kind == "alias-bomb":
        return problem
    line = first_line + template - 1
    if first_engine_line(chunk) is not None:
        return ManifestProblem(
            path=problem.path, line=line, kind="invalid-yaml",
            message=("invalid YAML: this document runs an engine but holds a {{...}} "
                     "placeholder YAML cannot read, so its served model is not checked; the "
                     "file's other documents are linted"))
    return ManifestProblem(
        path=problem.path, line=line, kind="template-placeholder",
        message=("this document holds a {{...}} placeholder YAML cannot read (filled in by "
                 "another tool before deploy); it is skipped, the file's other documents "
                 "are linted"))


def load_documents(text: str, path: str) -> list[Any] | ManifestProblem:
    """Every document of ``text``, in order, as line-aware values; an empty document is
    ``None`` (indices stay those of the stream). A :class:`ManifestProblem` instead when the
    file is a Helm template, invalid YAML, nested deeper than :data:`MAX_DEPTH` or a YAML
    bomb; a :class:`PartialDocuments` when only some documents of a stream cannot be read
    (those are ``None``, their problems attached), unless the file is a Helm template."""
    read = _parse_stream(text, path)
    if isinstance(read, ManifestProblem) and read.kind == "invalid-yaml" and "$" in text:
        rendered = _without_substituted_lines(text, path)
        if rendered is not None:
            return rendered
    if isinstance(read, ManifestProblem) and read.kind != "alias-bomb" and \
            not ("{{" in text and is_helm_template(text, path)):
        partial = _per_document(text, path)
        if partial is not None:
            return partial
    return read


_SUBSTITUTED_LINE = re.compile(r"^[ \t]*(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)[ \t]*$", re.MULTILINE)
"""A line that is one variable, which ``envsubst`` (or a deploy script) replaces with YAML
lines of its own (``$EXTRA_ARGS_YAML`` rendered as list items, or nothing)."""


def _without_substituted_lines(text: str, path: str) -> PartialDocuments | None:
    """A template rendered by ``envsubst`` before it is applied: the documents read with its
    whole-line variables blank, and an info on the first of them (what they add is not
    known, so nothing is read from them); ``None`` when the file holds no such line or is
    invalid YAML without them too."""
    lines = list(_SUBSTITUTED_LINE.finditer(text))
    if not lines:
        return None
    blank = _SUBSTITUTED_LINE.sub("", text)
    read = _parse_stream(blank, path)
    if isinstance(read, ManifestProblem):
        return None
    out = PartialDocuments(read)
    first = lines[0]
    names = ", ".join(dict.fromkeys(m.group(1) for m in lines))
    out.problems = (ManifestProblem(
        path=path, line=text.count("\n", 0, first.start()) + 1, kind="template-placeholder",
        message=(f"this file is a template: {names} on a line of its own is replaced with "
                 "YAML before it is applied (envsubst or a deploy script), which YAML cannot "
                 "read as written; the file is read without that line, so whatever it adds "
                 "(more engine options) is not checked")),)
    return out


def _parse_stream(text: str, path: str) -> list[Any] | ManifestProblem:
    documents: list[Any] = []
    try:
        deep = _too_deep(text, MAX_DEPTH) if _may_nest_deeper(text) else None
    except yaml.YAMLError as err:
        # PyYAML >= 6.0.4 has a nesting limit of its own: the same refusal, in kvlint's words
        deep = _nesting_error_line(err)  # else invalid YAML: the composer below says where
    if deep is not None:
        return ManifestProblem(path=path, line=deep, kind="invalid-yaml",
                               message=f"invalid YAML: nesting deeper than {MAX_DEPTH} levels")
    loader = _Loader(text)
    merges = "<<" in text or "merge" in text
    collect = gc.isenabled()
    gc.disable()  # the values built hold no cycles: collecting while building only costs
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            documents.append(_Builder(text, merges).build(node, 0)[0])
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
        nested = _nesting_error_line(err)
        if nested is not None:
            return ManifestProblem(path=path, line=nested, kind="invalid-yaml",
                                   message=f"invalid YAML: nesting deeper than {MAX_DEPTH} "
                                           "levels")
        return _yaml_error(path, err)
    except RecursionError:
        return ManifestProblem(path=path, line=None, kind="invalid-yaml",
                               message="invalid YAML: nesting too deep to read")
    finally:
        loader.dispose()
        if collect:
            gc.enable()
    if "{{" in text:
        for number, line in enumerate(text.splitlines(), 1):
            if _TEMPLATE_LINE.match(line):
                return _helm_problem(path, number)
    return documents
