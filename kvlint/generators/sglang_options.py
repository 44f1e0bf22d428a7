"""Generated data: ``kvlint/engines/sglang_options.json``, which SGLang release accepts which
server option, and the values of ``--kv-cache-dtype`` and ``--dtype`` each accepts (a
maintenance tool: it needs SGLang wheels and never runs when kvlint reads a manifest).

``python -m kvlint.generators.sglang_options WHEEL... [-o FILE]`` reads each SGLang wheel
(``pip download --no-deps sglang==X``; its version from the file name) with :mod:`ast`
(SGLang is never imported) and rewrites the table. SGLang declared its options three ways,
and every one is read:

* ``parser.add_argument("--name", ...)`` calls in ``sglang/srt/server_args.py`` (every
  release; the only way up to 0.5.13);
* ``name: A[type, "help"]`` / ``A[type, Arg(...)]`` fields of the ``ServerArgs`` dataclass in
  ``server_args.py`` (0.5.14 to 0.5.19: ``add_cli_args_from_dataclass``,
  ``sglang/srt/arg_groups/arg_utils.py``), named ``--field-name`` unless ``Arg(cli_name=...)``
  says otherwise, with ``Arg(aliases=[...])`` too, and skipped with ``Arg(no_cli=True)``;
* the same fields in ``sglang/srt/arg_groups/fields/*.py`` (0.5.20 on).

Each option records the runs of releases that declare it (``[first, last]`` among the
releases read, oldest first). ``choices`` holds the literal ``choices=[...]`` of
``--kv-cache-dtype`` and ``--dtype``, release by release. The kinds of the options (a flag,
one value, several) stay in :data:`kvlint.manifests.cli_option_tables.OPTION_TABLES`, which must
list exactly these options (a test checks it).

An option a release declares only to stop the parse is *refused* there, not taken: its
action is a class of the file whose ``__call__`` raises (``DeprecatedAction`` of 0.3.6 and
0.4.6.post1: ``raise ValueError(self.help)``; 0.5.10's only warns), or a ``Deprecated...Action``
given an ``error_message`` (``parser.error`` with it: sglang/srt/arg_groups/
argparse_actions.py@0.5.23). ``refused`` keeps each one's message, release by release.

The table shipped was generated from the wheels of SGLang 0.2.15, 0.3.6, 0.4.3.post2,
0.4.6.post1, 0.4.10.post1, 0.5.5.post3 and every release from 0.5.6 to 0.5.23 (0.5.6 ...
0.5.22 in their first build, 0.5.23), all passed in one run. Against the option sets kvlint
read before, 0.4.6.post1 differs only by the two options it refuses (``--enable-flashinfer-
mla``, ``--enable-flashmla``), and 0.5.18-0.5.19 by ``--enable-expert-distribution-metrics``.
"""

from __future__ import annotations

import ast
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from packaging.version import Version

from kvlint.generators.wheel_tables import literal, table_main

OUT = Path(__file__).resolve().parent.parent / "engines" / "sglang_options.json"
SERVER_ARGS = "sglang/srt/server_args.py"
FIELDS = "sglang/srt/arg_groups/fields/"
CHOICE_OPTIONS = ("--kv-cache-dtype", "--dtype")
_WHEEL = re.compile(r"sglang-([0-9][^-]*)-")


def _calls(tree: ast.AST) -> Iterator[tuple[list[str], dict[str, ast.expr]]]:
    """``(option strings, keywords)`` of every ``*.add_argument("--x", ...)`` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "add_argument":
            names = [a for a in map(literal, node.args)
                     if isinstance(a, str) and a.startswith("--")]
            if names:
                yield names, {k.arg: k.value for k in node.keywords if k.arg}


def _arg_meta(annotation: ast.expr) -> dict[str, ast.expr] | None:
    """The keywords of ``Arg(...)`` in ``A[T, Arg(...)]`` (``{}`` for ``A[T, "help"]``);
    ``None`` for any other annotation."""
    if not isinstance(annotation, ast.Subscript):
        return None
    base = annotation.value
    name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
    if name not in ("A", "Annotated"):
        return None
    parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
    for part in parts[1:]:
        if isinstance(part, ast.Call) and \
                (getattr(part.func, "id", None) or getattr(part.func, "attr", None)) == "Arg":
            return {k.arg: k.value for k in part.keywords if k.arg}
        if isinstance(part, ast.Constant | ast.JoinedStr | ast.BinOp):
            return {}
    return None


def _fields(tree: ast.AST) -> Iterator[tuple[list[str], dict[str, ast.expr]]]:
    """``(option strings, Arg keywords)`` of every ``A[...]`` field of a class in ``tree``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            meta = _arg_meta(stmt.annotation)
            if meta is None or literal(meta.get("no_cli")) is True:
                continue
            cli = literal(meta.get("cli_name"))
            names = [cli if isinstance(cli, str) else
                     "--" + stmt.target.id.replace("_", "-")]
            aliases = literal(meta.get("aliases"))
            if isinstance(aliases, list | tuple):
                names += [a for a in aliases if isinstance(a, str)]
            yield names, meta


def _refusing_actions(tree: ast.AST) -> set[str]:
    """The ``argparse.Action`` classes of ``tree`` whose ``__call__`` stops the parse whatever
    it is given: a ``raise`` among its top-level statements (SGLang 0.3.6 and 0.4.6.post1's
    ``DeprecatedAction``: ``raise ValueError(self.help)``; 0.5.10's only warns)."""
    refusing: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__call__" and \
                    any(isinstance(s, ast.Raise) for s in stmt.body):
                refusing.add(node.name)
    return refusing


def _refused(keywords: dict[str, ast.expr], refusing: set[str]) -> str | None:
    """The message an option's action stops the server with, or ``None`` when it takes the
    option: an action of :func:`_refusing_actions`, or a ``Deprecated...Action`` given an
    ``error_message`` (sglang/srt/arg_groups/argparse_actions.py@0.5.23: ``parser.error``
    with it, a warning without)."""
    action = keywords.get("action")
    name = action.id if isinstance(action, ast.Name) else getattr(action, "attr", "")
    if name in refusing:
        text = literal(keywords.get("help"))
        return text if isinstance(text, str) else "refused"
    if name.startswith("Deprecated") and "error_message" in keywords:
        text = literal(keywords.get("error_message"))
        return text if isinstance(text, str) else "refused"
    return None


def read_wheel(path: Path) -> tuple[set[str], dict[str, list[str]], dict[str, str]]:
    """The options one wheel takes, the choices of :data:`CHOICE_OPTIONS`, and the options
    it declares only to refuse them (option -> the message it stops with)."""
    options: set[str] = set()
    choices: dict[str, list[str]] = {}
    refused: dict[str, str] = {}
    with zipfile.ZipFile(path) as wheel:
        sources = [n for n in wheel.namelist() if n == SERVER_ARGS or
                   (n.startswith(FIELDS) and n.endswith(".py"))]
        for name in sources:
            tree = ast.parse(wheel.read(name))
            refusing = _refusing_actions(tree)
            for names, keywords in (*_fields(tree), *_calls(tree)):
                message = _refused(keywords, refusing)
                if message is not None:
                    refused.update(dict.fromkeys(names, message))
                    continue
                options.update(names)
                values = literal(keywords.get("choices"))
                for option in names:
                    if option in CHOICE_OPTIONS and isinstance(values, list | tuple):
                        choices[option] = [str(v) for v in values]
    return options, choices, refused


def _runs(present: list[bool], versions: list[str]) -> list[list[str]]:
    """``[[first, last], ...]`` of the consecutive releases where ``present`` holds."""
    runs: list[list[str]] = []
    start: int | None = None
    for i, here in enumerate([*present, False]):
        if here and start is None:
            start = i
        elif not here and start is not None:
            runs.append([versions[start], versions[i - 1]])
            start = None
    return runs


def build(wheels: list[Path]) -> dict[str, Any]:
    """The table from ``wheels``."""
    read: dict[str, tuple[set[str], dict[str, list[str]], dict[str, str]]] = {}
    for wheel in wheels:
        found = _WHEEL.search(wheel.name)
        if found is None:
            raise SystemExit(f"{wheel}: not an SGLang wheel's file name")
        read[found.group(1)] = read_wheel(wheel)
    versions = sorted(read, key=Version)
    every = sorted({o for options, _, _ in read.values() for o in options})
    return {
        "comment": "generated by python -m kvlint.generators.sglang_options from SGLang's "
                   "wheels; do not edit by hand",
        "versions": versions,
        "options": {o: _runs([o in read[v][0] for v in versions], versions) for o in every},
        "choices": {o: {v: " ".join(read[v][1][o]) for v in versions if o in read[v][1]}
                    for o in CHOICE_OPTIONS},
        "refused": {o: {v: read[v][2][o] for v in versions if o in read[v][2]}
                    for o in sorted({o for _, _, r in read.values() for o in r})},
    }


def main(argv: list[str] | None = None) -> int:
    return table_main("python -m kvlint.generators.sglang_options", build, OUT,
                      lambda t: f"{len(t['options'])} options, {len(t['versions'])} releases", argv)


if __name__ == "__main__":
    raise SystemExit(main())
