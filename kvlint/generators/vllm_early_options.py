"""Generated data: ``kvlint/engines/vllm_early_options.json``, the command-line options of
vLLM's OpenAI server in releases before 0.8.5 (a maintenance tool: it needs vLLM wheels and
never runs when kvlint reads a manifest).

``python -m kvlint.generators.vllm_early_options WHEEL... [-o FILE]`` reads each vLLM wheel
(``pip download --no-deps --only-binary :all: vllm==X``; its version from the file name)
with :mod:`ast` (vLLM is never imported). The server takes the options of
``EngineArgs.add_cli_args`` / ``AsyncEngineArgs.add_cli_args`` (``vllm/engine/arg_utils.py``)
and of the OpenAI front end: ``make_arg_parser`` in ``vllm/entrypoints/openai/cli_args.py``
(0.4.0 on) or ``parse_args`` in ``vllm/entrypoints/openai/api_server.py`` (before), plus
``vllm serve``'s own ``--config`` (``serve_parser`` of ``vllm/scripts.py``, later
``vllm/entrypoints/cli/serve.py``). Every ``add_argument`` call of those files is read: its
option strings, and its kind (``store_true``/``store_false``: a flag;
``BooleanOptionalAction``: a flag with a ``--no-`` form; ``nargs`` ``+``/``*``: several
values; ``?``: an optional value; else one value). ``options`` holds each option's kind in
the newest of these releases that has it, ``kinds`` each release's own where it differs
(``--enable-chunked-prefill``: a flag in 0.4.3, ``StoreBoolean`` with ``nargs="?"`` from
0.5.5). ``kv_cache_dtype`` keeps each release's ``choices`` of ``--kv-cache-dtype``.

The table shipped was generated from the wheels of vLLM 0.2.7, 0.3.3, 0.4.3, 0.5.4, 0.6.3,
0.6.6 and 0.7.3, passed in one run. These releases take ``--max_model_len`` only as written
where their parser is plain ``argparse`` (``FlexibleArgumentParser``, which turns ``_``
into ``-``, first appears in 0.5.0's ``vllm/utils.py``); kvlint reads either spelling as
the dashed option for every release.
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

ENGINE_FILES = ("vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py")
OLD_FRONT_END = "vllm/entrypoints/openai/api_server.py"
SERVE_FILES = ("vllm/scripts.py", "vllm/entrypoints/cli/serve.py")
OUTPUT = Path(__file__).resolve().parent.parent / "engines" / "vllm_early_options.json"


def _calls(tree: ast.AST, receiver: str | None = None
           ) -> Iterator[tuple[list[str], dict[str, ast.expr]]]:
    """``(option strings, keywords)`` of every ``X.add_argument("-x", ...)`` call (of the
    object named ``receiver`` only, when given)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        if receiver is not None and not (isinstance(node.func.value, ast.Name)
                                         and node.func.value.id == receiver):
            continue
        names = [a for a in map(literal, node.args) if isinstance(a, str) and a.startswith("-")]
        if names:
            yield names, {k.arg: k.value for k in node.keywords if k.arg}


def _kind(keywords: dict[str, ast.expr]) -> str:
    action = keywords.get("action")
    text = literal(action)
    name = text if isinstance(text, str) else \
        getattr(action, "attr", None) or getattr(action, "id", None) or ""
    if name in ("store_true", "store_false", "store_const"):
        return "flag"
    if name == "BooleanOptionalAction":
        return "negatable"
    nargs = literal(keywords.get("nargs"))
    if nargs in ("+", "*"):
        return "many"
    if nargs == "?":
        return "optional"
    return "value"


def read_wheel(path: Path) -> tuple[dict[str, str], list[str]]:
    """``(option -> kind, --kv-cache-dtype choices)`` of one wheel's OpenAI server."""
    options: dict[str, str] = {}
    choices: list[str] = []
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
        front = [f for f in ENGINE_FILES if f in names]
        if "vllm/entrypoints/openai/cli_args.py" not in names:
            front.append(OLD_FRONT_END)
        sources = [(f, None) for f in front] + \
            [(f, "serve_parser") for f in SERVE_FILES if f in names]
        for file, receiver in sources:
            tree = ast.parse(wheel.read(file).decode("utf-8"), filename=file)
            for strings, keywords in _calls(tree, receiver):
                if receiver is not None and "--config" not in strings:
                    continue  # vllm serve's model_tag and its query subcommands' options
                for option in strings:
                    options.setdefault(option, _kind(keywords))
                if "--kv-cache-dtype" in strings:
                    found = literal(keywords.get("choices"))
                    if isinstance(found, list | tuple):
                        choices = [str(c) for c in found]
    return options, choices


def build(wheels: list[Path]) -> dict[str, Any]:
    versions: list[tuple[Version, str, dict[str, str], list[str]]] = []
    for path in wheels:
        match = re.match(r"vllm-([^-]+)-", path.name)
        if match is None:
            raise SystemExit(f"{path}: not a vLLM wheel name")
        options, choices = read_wheel(path)
        versions.append((Version(match.group(1)), match.group(1), options, choices))
    versions.sort()
    kinds: dict[str, str] = {}
    for _, _, options, _ in reversed(versions):  # the newest release's kind wins
        for option, kind in options.items():
            kinds.setdefault(option, kind)
    return {
        "source": "vLLM wheels from PyPI, read with ast by kvlint.generators.vllm_early_options",
        "versions": [v for _, v, _, _ in versions],
        "options": dict(sorted(kinds.items())),
        "present": {v: sorted(options) for _, v, options, _ in versions},
        "kinds": {v: {o: k for o, k in sorted(options.items()) if k != kinds[o]}
                  for _, v, options, _ in versions},
        "kv_cache_dtype": {v: choices for _, v, _, choices in versions if choices},
    }


def main(argv: list[str] | None = None) -> int:
    return table_main("python -m kvlint.generators.vllm_early_options", build, OUTPUT,
                      lambda t: f"{len(t['versions'])} releases, {len(t['options'])} options", argv)


if __name__ == "__main__":
    raise SystemExit(main())
