"""What the start-up log table generators share (:mod:`.vllm_log_table`,
:mod:`.sglang_log_table`, :mod:`.trtllm_log_table`, :mod:`.lmdeploy_log_table`): one format
string as it is collected across releases, the candidates read from Python and C++ sources,
the table built from them, and the command line that rebuilds a table from wheels or
unpacked sources."""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kvlint.loaders.log_formats import Placeholder, format_tokens

__all__ = ["Candidate", "Entry", "TableSpec", "brace_escape", "build_formats", "c_candidates",
           "declared_versions", "fields_of", "placeholder_context", "py_placeholder",
           "python_candidates", "run", "source_files"]


@dataclass
class Entry:
    """One format string while the releases are read: the first and last release that print
    it, where it was first seen and what each placeholder means."""

    format: str
    style: str
    anchor: str
    first: Version
    last: Version
    source: str
    fields: list[str] = field(default_factory=list)
    lines: dict[str, set[Version]] = field(default_factory=dict)
    """``file.py:first[-last]`` of a call printing it -> the releases read that have it there."""


def run(prog: str, doc: str | None, build: Callable[[list[str]], dict[str, object]],
        default_output: Path, argv: list[str] | None = None) -> int:
    """``prog SOURCE... [-o FILE]``: the table built from each SOURCE (a wheel, or
    ``VERSION=DIR``) written as JSON; exit 2 with one line when a source cannot be read."""
    engine = prog.rsplit(".", 1)[-1].split("_", 1)[0]
    parser = argparse.ArgumentParser(prog=f"python -m {prog}",
                                     description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("sources", nargs="+", help=f"{engine}-X-*.whl or X=DIR")
    parser.add_argument("-o", "--output", default=str(default_output))
    args = parser.parse_args(argv)
    try:
        table = build(args.sources)
    except (OSError, InvalidVersion, IndexError, zipfile.BadZipFile) as err:
        print(f"{prog.rsplit('.', 1)[-1]}: {err}", file=sys.stderr)
        return 2
    Path(args.output).write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    formats = table["formats"]
    print(f"{len(formats) if isinstance(formats, list) else 0} formats from "
          f"{len(args.sources)} versions -> {args.output}")
    return 0


# --------------------------------------------------------------------------------------------
# Shared by the generators (issue 33: trtllm_log_table, lmdeploy_log_table; sglang_log_table
# and vllm_log_table with their own Python readings): candidates from Python logger calls and
# raised messages (``ast``) and from C/C++ logging macros (string literals after the macro), a
# SOURCE as (path, text) pairs, and the table built from the candidates that match a set of
# anchors.

Candidate = tuple[str, str, str] | tuple[str, str, str, tuple[int, int]]
"""(format, style, where[, lines]): one string a logging call can print, ``printf``/``brace``/
``plain``, the function (or class.function) it is printed from and, where the generator
records it, the first and last line of the call (a log record prints the call's line:
``[kv_cache_utils.py:634]``)."""

PY_LOG_METHODS = frozenset({"info", "warning", "error", "debug", "info_once", "warning_once",
                            "warn", "exception", "critical"})
PY_RAISED = frozenset({"RuntimeError", "ValueError", "AssertionError", "MemoryError"})
MAX_PY_VARIANTS = 16
_CPP_PRI = {"PRIu64": "lu", "PRId64": "ld", "PRIi64": "li", "PRIu32": "u", "PRId32": "d",
            "PRIx64": "lx"}
_CPP_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "\r", "0": ""}
_CPP_FUNCTION = re.compile(r"^[A-Za-z_~][\w:<>,*&~ \t]{0,200}?\b([A-Za-z_~][\w:~]{0,120})\s*\(")


def brace_escape(text: str) -> str:
    """Literal text as it stands in a brace-style format (``{{``/``}}``)."""
    return text.replace("{", "{{").replace("}", "}}")


def py_placeholder(value: ast.FormattedValue) -> str:
    """An f-string's placeholder as written: ``{expr!r:.2f}`` (a nested spec's literal parts
    only)."""
    part = "{" + ast.unparse(value.value)
    if value.conversion > 0:
        part += "!" + chr(value.conversion)
    if isinstance(value.format_spec, ast.JoinedStr):
        part += ":" + "".join(str(v.value) for v in value.format_spec.values
                              if isinstance(v, ast.Constant))
    return part + "}"


def _py_join(parts: list[list[tuple[str, bool]]]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = [("", False)]
    for options in parts:
        joined: list[tuple[str, bool]] = []
        for head, head_brace in out:
            for text, is_brace in options:
                if head_brace or is_brace:
                    joined.append(((head if head_brace else brace_escape(head))
                                   + (text if is_brace else brace_escape(text)), True))
                else:
                    joined.append((head + text, False))
        out = joined[:MAX_PY_VARIANTS]
    return out


def _py_variants(node: ast.AST, env: dict[str, list[tuple[str, bool]]], expand: bool
                 ) -> list[tuple[str, bool]] | None:
    """The texts a string expression can print: a literal, an f-string, a concatenation, a
    conditional of those or a local name bound to one; ``None`` for anything else. With
    ``expand``, an f-string's bare placeholder of a conditional or a bound name (no spec, no
    conversion) is replaced by the texts it can print."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, False)]
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.IfExp):
        body = _py_variants(node.body, env, expand)
        orelse = _py_variants(node.orelse, env, expand)
        return None if body is None or orelse is None else (body + orelse)[:MAX_PY_VARIANTS]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _py_variants(node.left, env, expand)
        right = _py_variants(node.right, env, expand)
        return None if left is None or right is None else _py_join([left, right])
    if isinstance(node, ast.JoinedStr):
        parts: list[list[tuple[str, bool]]] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append([(str(value.value), False)])
            elif isinstance(value, ast.FormattedValue):
                inner = _py_variants(value.value, env, expand) if expand and isinstance(
                    value.value, (ast.IfExp, ast.Name)) and value.format_spec is None \
                    and value.conversion < 0 else None
                parts.append(inner if inner is not None else [(py_placeholder(value), True)])
        return _py_join(parts)
    return None


def python_candidates(tree: ast.AST, *, raised: bool = True, expand: bool = False
                      ) -> Iterator[Candidate]:
    """Every string a ``logger.*`` call in ``tree`` can print and, with ``raised``, every
    message of a ``raise RuntimeError('...')`` (and the other :data:`PY_RAISED`): those reach
    the log as the traceback's last line. ``expand``: see :func:`_py_variants` (SGLang
    assembles its messages so)."""
    def walk(node: ast.AST, where: str, env: dict[str, list[tuple[str, bool]]]
             ) -> Iterator[Candidate]:
        for child in ast.iter_child_nodes(node):
            name, scope = where, env
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{where}.{child.name}" if where else child.name
                scope = {}
            if isinstance(child, ast.Assign) and len(child.targets) == 1 \
                    and isinstance(child.targets[0], ast.Name):
                bound = _py_variants(child.value, env, expand)
                if bound is not None:
                    env[child.targets[0].id] = bound
            call = child if isinstance(child, ast.Call) else None
            if call is not None and isinstance(call.func, ast.Attribute) and call.args \
                    and call.func.attr in PY_LOG_METHODS:
                printf = len(call.args) > 1
                for text, is_brace in _py_variants(call.args[0], env, expand) or ():
                    yield text, "brace" if is_brace else "printf" if printf else "plain", where
            if raised and isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call) \
                    and isinstance(child.exc.func, ast.Name) and child.exc.func.id in PY_RAISED \
                    and child.exc.args:
                for text, is_brace in _py_variants(child.exc.args[0], env, expand) or ():
                    yield text, "brace" if is_brace else "plain", where
            yield from walk(child, name, scope)
    yield from walk(tree, "", {})


def _c_literal(text: str, start: int) -> tuple[str, int] | None:
    """The C string literal opening at ``text[start]`` (``"``), unescaped, and its end."""
    out: list[str] = []
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            out.append(_CPP_ESCAPES.get(text[index + 1], text[index + 1]))
            index += 2
            continue
        if char == '"':
            return "".join(out), index + 1
        if char == "\n":
            return None
        out.append(char)
        index += 1
    return None


def c_candidates(text: str, macros: tuple[str, ...]) -> Iterator[Candidate]:
    """Every format a C/C++ logging macro of ``macros`` (``TLLM_LOG_INFO``, ``TM_LOG_INFO``...)
    prints with a literal first argument: adjacent literals joined, ``PRIu64`` and its kin
    read as the printf length they stand for. ``printf`` when the literal holds a ``%``
    placeholder, ``brace`` when it holds a ``{}`` one (fmt), else ``plain``."""
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, macros)) + r")\s*\(\s*")
    for found in pattern.finditer(text):
        index, parts = found.end(), []
        while index < len(text):
            while index < len(text) and text[index] in " \t\r\n":
                index += 1
            if text.startswith('"', index):
                literal = _c_literal(text, index)
                if literal is None:
                    break
                parts.append(literal[0])
                index = literal[1]
                continue
            macro = re.match(r"PRI[udixX](?:8|16|32|64)", text[index:index + 8])
            if macro is None or not parts:
                break
            parts[-1] += _CPP_PRI.get(macro.group(), "d")
            index += len(macro.group())
        if not parts:
            continue
        fmt = "".join(parts)
        style = "printf" if _PRINTF_SPEC.search(fmt) else \
            "brace" if re.search(r"\{[^{}]{0,40}\}", fmt) else "plain"
        yield fmt, style, _c_function(text, found.start())


_PRINTF_SPEC = re.compile(r"%[-+ 0#]{0,4}\d{0,3}(?:\.\d{1,3})?(?:hh|h|ll|l|z)?[diouxXeEfFgGcsp]")


def _c_function(text: str, at: int) -> str:
    """The function a C++ statement at ``at`` is in: the last definition that opens at the
    first column before it (the engines' code style)."""
    for line in reversed(text[:at].splitlines()[-4000:]):
        if line[:1].isalpha() or line[:1] in "_~":
            found = _CPP_FUNCTION.match(line)
            if found and not line.rstrip().endswith(";"):
                return found.group(1)
    return ""


PY_SUFFIXES = (".py",)
SOURCE_SUFFIXES = (*PY_SUFFIXES, ".cc", ".cpp", ".cu", ".h", ".hpp", ".cuh")


def source_files(spec: str, roots: tuple[str, ...], prefixes: tuple[str, ...],
                 skip: re.Pattern[str] | None = None,
                 suffixes: tuple[str, ...] = SOURCE_SUFFIXES
                 ) -> tuple[Version, Iterator[tuple[str, str]]]:
    """The version and the (path, text) of each ``.py``/C++ file (``suffixes``) under
    ``prefixes`` of one SOURCE: a wheel (its version from the file name) or ``VERSION=DIR``,
    DIR holding the folders ``roots`` (a package, ``src/``, ``cpp/``) as in the engine's
    repository; files in path order."""

    def wanted(rel: str) -> bool:
        return rel.endswith(suffixes) and rel.startswith(prefixes) and not (
            skip is not None and skip.search(rel))

    if "=" in spec:
        version_text, root = spec.split("=", 1)
        if not Path(root).is_dir():
            raise FileNotFoundError(f"{root}: no such directory")

        def files() -> Iterator[tuple[str, str]]:
            for top in roots:
                for folder, _, names in sorted(os.walk(Path(root) / top)):
                    for name in sorted(names):
                        path = Path(folder) / name
                        rel = path.relative_to(root).as_posix()
                        if wanted(rel):
                            yield rel, path.read_text(encoding="utf-8", errors="replace")
        return Version(version_text), files()
    version = Version(Path(spec).name.split("-")[1])

    def wheel() -> Iterator[tuple[str, str]]:
        with zipfile.ZipFile(spec) as archive:
            for rel in sorted(archive.namelist()):
                if wanted(rel):
                    yield rel, archive.read(rel).decode("utf-8", "replace")
    return version, wheel()


@dataclass(frozen=True)
class TableSpec:
    """What one engine's table generator reads and keeps."""

    engine: str
    """The generator's module name (``kvlint.generators.X``), for the table's comment."""
    roots: tuple[str, ...]
    prefixes: tuple[str, ...]
    anchors: tuple[tuple[str, str], ...]
    """(record, regex on the format string): the records kept."""
    meanings: tuple[tuple[str, str, str], ...]
    """(record, regex on the literal before a placeholder, field): the first that matches
    names the placeholder; one none names is not read (``- spec``)."""
    cpp_macros: tuple[str, ...] = ()
    """The C/C++ logging macros read; none: only ``.py`` files are read, and the table has no
    ``cpp_versions``."""
    skip: re.Pattern[str] | None = None
    flags: frozenset[str] = frozenset()
    """Records kept although they read no placeholder (a fixed message whose presence is the
    fact, such as an out-of-memory error)."""
    candidates: Callable[[ast.AST], Iterable[Candidate]] = python_candidates
    """The candidates of one parsed ``.py`` file."""
    fields: Callable[[str, str, str], list[str]] | None = None
    """(format, style, record) -> the meaning of each placeholder; ``None``: from
    :attr:`meanings` (:func:`fields_of`)."""
    unread: frozenset[str] = frozenset()
    """Meanings that do not make a record read (a device name, a pool label)."""
    owner: str = "the engine's"
    """Whose format strings, for the table's comment (``vLLM's``)."""
    cite_oldest: bool = True
    """Cite the oldest release read that prints a format; ``False``: the first SOURCE given
    that prints it."""


def placeholder_context(text: str, style: str) -> Iterator[tuple[Placeholder, str, str]]:
    """Each placeholder of a format with the literal text before and after it on its line."""
    tokens = format_tokens(text, style)
    for index, token in enumerate(tokens):
        if not isinstance(token, Placeholder):
            continue
        before = tokens[index - 1] if index and isinstance(tokens[index - 1], str) else ""
        after = tokens[index + 1] if index + 1 < len(tokens) and \
            isinstance(tokens[index + 1], str) else ""
        yield token, str(before).rsplit("\n", 1)[-1], str(after).split("\n", 1)[0]


def fields_of(text: str, style: str, anchor: str,
              meanings: tuple[tuple[str, str, str], ...]) -> list[str]:
    """The meaning of each placeholder of a format (``- spec``: not read)."""
    return [next((m for record, left, m in meanings
                  if record == anchor and re.search(left, before)), None) or f"- {token.spec}"
            for token, before, _ in placeholder_context(text, style)]


def build_formats(specs: list[str], table: TableSpec) -> dict[str, object]:
    """The table of ``table``'s records over the SOURCEs ``specs``: each format with the
    first and last release read that prints it, cited ``path@version (function)``, oldest
    first; ``versions`` the releases read and ``cpp_versions`` those whose C++ was read."""
    entries: dict[tuple[str, str], Entry] = {}
    versions: list[Version] = []
    cpp_versions: set[Version] = set()
    suffixes = SOURCE_SUFFIXES if table.cpp_macros else PY_SUFFIXES
    for spec in specs:
        version, files = source_files(spec, table.roots, table.prefixes, table.skip, suffixes)
        versions.append(version)
        for rel, source in files:
            if rel.endswith(".py"):
                try:
                    found = list(table.candidates(ast.parse(source)))
                except SyntaxError:
                    continue
            else:
                cpp_versions.add(version)
                found = list(c_candidates(source, table.cpp_macros))
            for candidate in found:
                text, style, where = candidate[0], candidate[1], candidate[2]
                anchor = next((name for name, pattern in table.anchors
                               if re.search(pattern, text)), None)
                if anchor is None or (style == "plain" and anchor not in table.flags):
                    continue
                entry = entries.get((text, style))
                cite = f"{rel}@{version} ({where or 'module'})"
                if entry is None:
                    fields = table.fields(text, style, anchor) if table.fields else \
                        fields_of(text, style, anchor, table.meanings)
                    entries[(text, style)] = Entry(text, style, anchor, version, version, cite,
                                                   fields)
                else:
                    if table.cite_oldest and version < entry.first:
                        entry.source = cite
                    entry.first, entry.last = min(entry.first, version), max(entry.last, version)
                if len(candidate) > 3:
                    first, last = candidate[3]
                    at = f"{rel.rsplit('/', 1)[-1]}:{first}" + (f"-{last}" if last != first
                                                               else "")
                    entries[(text, style)].lines.setdefault(at, set()).add(version)
    out: list[dict[str, object]] = []
    counts: dict[str, int] = {}
    for entry in sorted(entries.values(), key=lambda e: (e.anchor, e.first, e.last, e.format)):
        if entry.anchor not in table.flags and not any(
                not f.startswith("-") and f not in table.unread for f in entry.fields):
            print(f"skipped (nothing read): {entry.format[:100]!r}", file=sys.stderr)
            continue
        counts[entry.anchor] = counts.get(entry.anchor, 0) + 1
        out.append({"id": f"{entry.anchor}.{counts[entry.anchor]}", "format": entry.format,
                    "style": entry.style, "first": str(entry.first), "last": str(entry.last),
                    "source": entry.source, "fields": entry.fields,
                    **({"lines": {at: [str(v) for v in sorted(found_in)] for at, found_in in
                                  sorted(entry.lines.items(),
                                         key=lambda item: (min(item[1]), item[0]))}}
                       if entry.lines else {})})
    return {"comment": f"generated by python -m {table.engine} from {table.owner} own format "
                       "strings; do not edit by hand",
            "versions": [str(v) for v in sorted(set(versions))],
            **({"cpp_versions": [str(v) for v in sorted(cpp_versions)]} if table.cpp_macros
               else {}),
            "formats": out}


def declared_fields(source: str, classes: tuple[str, ...] | None = None) -> set[str]:
    """The annotated fields of the classes (``classes``, or all) of a Python module."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (classes is None or node.name in classes):
            names.update(item.target.id for item in node.body
                         if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))
    return names


def declared_versions(specs: list[str], roots: tuple[str, ...], prefixes: tuple[str, ...],
                      options: set[str], classes: tuple[str, ...] | None = None,
                      skip: re.Pattern[str] | None = None) -> dict[str, dict[str, str]]:
    """For each of ``options`` an engine's config classes (``classes`` in the ``.py`` files
    under ``prefixes``) declare: the first and last release read that declares it, and where
    the oldest does (``path@version``)."""
    args: dict[str, tuple[Version, Version, str]] = {}
    for spec in specs:
        version, files = source_files(spec, roots, prefixes, skip, PY_SUFFIXES)
        for rel, source in files:
            for name in declared_fields(source, classes) & options:
                seen = args.get(name)
                if seen is None or version < seen[0]:  # cite the oldest release declaring it
                    args[name] = (version, max(version, seen[1]) if seen else version,
                                  f"{rel}@{version}")
                else:
                    args[name] = (seen[0], max(version, seen[1]), seen[2])
    return {name: {"first": str(first), "last": str(last), "source": source}
            for name, (first, last, source) in sorted(args.items())}
