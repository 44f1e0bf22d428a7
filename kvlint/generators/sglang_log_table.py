"""Generated data: ``kvlint/loaders/sglang_log_formats.json``, the format strings SGLang prints
its start-up memory figures with, release by release (a maintenance tool: it needs SGLang
wheels or unpacked sources and never runs when kvlint reads a log).

``python -m kvlint.generators.sglang_log_table SOURCE... [-o FILE]`` reads each SOURCE, an
SGLang wheel (``pip download --no-deps sglang==X``; its version from the file name) or
``VERSION=DIR`` (a directory holding an unpacked ``sglang/`` package), and rewrites the table.
SGLang is never imported: every ``.py`` of the start-up memory path (:data:`PATHS`: the model
runner and its pool configurators, ``mem_cache``, the scheduler's start-up summary, the
engine's ``server_args=`` line) is parsed with :mod:`ast`, and the string given to every
``logger.*`` call is a candidate. SGLang builds some of its messages from conditionals
(``{'is allocated' if ... else 'VA upper bound'}``, ``cache_name = f"{label} KV Cache" if
label else "KV Cache"``): a conditional whose branches are strings, or a local name assigned
such strings in the same function, is expanded into one candidate per branch. A candidate is
kept when it matches one of :data:`ANCHORS`; the meaning of each placeholder comes from its
record and the literal text before it (:data:`MEANINGS`), never from its position.

Each entry: ``id``, ``format`` (``{expr:spec}`` placeholders of an f-string, ``%d``/``%.2f``
of a printf-style call, ``{{``/``}}`` for literal braces), ``style``, ``first``/``last`` (the
first and last release READ that prints it; ``versions`` lists the releases read),
``source`` (``path@version (function)``) and ``fields`` (one per placeholder: the
:class:`~kvlint.loaders.sglang_log.SglangLog` field it sets, ``, text`` for a word rather
than a number, ``, negative allowed``; ``- expr`` for one not read).

``server_args`` records, for each ``ServerArgs`` option the reader takes from the
``server_args=`` line (:data:`SERVER_ARGS`), the first and last release read that declares it
(an annotated field of ``ServerArgs`` in ``server_args.py`` or, from 0.5.2x, of a namespace in
``arg_groups/``), so a log's options narrow its release too.

The table shipped was generated from SGLang 0.2.15 to 0.5.23 (its ``versions`` list): the
wheels of 0.2.15, 0.3.0, 0.3.4, 0.3.6, 0.4.0, 0.4.1, 0.4.1.post7, 0.4.2, 0.4.2.post4, 0.4.3,
0.4.3.post4, 0.4.4, 0.4.5, 0.4.6.post2, 0.4.7, 0.4.8, 0.4.9, 0.5.3, 0.5.4, 0.5.6, 0.5.8,
0.5.10, 0.5.12, 0.5.14, 0.5.16, 0.5.18 and 0.5.20 (``pip download --no-deps sglang==X``) and
the unpacked packages of 0.4.6.post1, 0.4.10, 0.5.0rc2, 0.5.1, 0.5.2, 0.5.5.post3 and 0.5.23,
all passed in one run. Only the format strings are copied from SGLang (they are the data);
citations are ``path@version``.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

from packaging.version import Version

from kvlint.generators.log_tables import Entry, run
from kvlint.loaders.log_formats import Placeholder, format_tokens
from kvlint.loaders.sglang_log import FORMATS_FILE, SERVER_ARGS

PATHS = ("sglang/srt/model_executor/", "sglang/srt/mem_cache/", "sglang/srt/managers/scheduler",
         "sglang/srt/managers/tp_worker", "sglang/srt/server.py",
         "sglang/srt/entrypoints/engine.py", "sglang/srt/server_args.py")
"""Where SGLang loads the weights, sizes and allocates its pools and logs its options."""
ARG_PATHS = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/")
"""Where ``ServerArgs`` declares its options."""
SKIP = re.compile(r"host|npu|mlx|hpu|xpu|storage|hicache|sparsity|/tests?/|cpu_")
"""Other devices, host (CPU) caches and offload tiers: not the GPU pool's start-up."""
LOG_METHODS = {"info", "warning", "error", "debug", "info_once", "warning_once", "warn",
               "exception", "critical"}
MAX_VARIANTS = 16

ANCHORS: tuple[tuple[str, str], ...] = (
    ("load_begin", r"^Load weight begin\. avail mem="),
    ("load_end", r"^Load weight end\. "),
    ("kv_allocated", r"^(?:KV Cache|\{[^{}]{1,60}\} KV Cache) is allocated\. "),
    ("kv_post_capture", r"^Post-capture KV sizing: KV cache allocated\. "),
    ("mamba_allocated", r"^Mamba Cache is allocated\. "),
    ("pool_end", r"^Memory pool end\. avail mem="),
    ("swa_pool", r"^Use [Ss]liding window memory pool[.(]"),
    ("swa_usage", r"^SWAKVPool mem usage: "),
    ("max_total", r"^max_total_num_tokens=\{"),
    ("server_args", r"^server_args=\{"),
    ("kv_dtype", r"^Using KV cache dtype: "),
    ("swa_disabled", r"^Disabl(?:e|ing) hybrid SWA memory for "),
)
"""(id, regex on the format string): the records the reader reads."""

_NEG = ", negative allowed"
_TEXT = ", text"
MEANINGS: tuple[tuple[str, str, str], ...] = (
    # (record, regex on the literal before the placeholder, meaning)
    ("load_begin", r"avail mem=$", "free_start_gib"),
    ("load_end", r"avail mem=$", "free_after_load_gib"),
    ("load_end", r"mem usage=$", "weights_gib"),
    ("load_end", r"(?:^|[ ,])type=$", "arch" + _TEXT),
    ("load_end", r", dtype=$", "dtype" + _TEXT),
    ("kv_allocated", r"^$", "pool" + _TEXT),
    ("kv_allocated", r"dtype: $", "kv_dtype" + _TEXT),
    ("kv_allocated", r"#tokens: $", "kv_tokens"),
    ("kv_allocated", r"(?:^|[^\w])KV size: $", "kv_gib"),
    ("kv_allocated", r"(?:^|[^\w])K size: $", "k_gib"),
    ("kv_allocated", r"(?:^|[^\w])V size: $", "v_gib"),
    ("kv_post_capture", r"#tokens: $", "post_capture_tokens"),
    ("kv_post_capture", r"KV size: $", "post_capture_kv_gib"),
    ("kv_post_capture", r"avail mem=$", "post_capture_free_gib"),
    ("mamba_allocated", r"max_mamba_cache_size: $", "mamba_cache_size"),
    ("mamba_allocated", r"conv_state size: $", "mamba_conv_gib"),
    ("mamba_allocated", r"ssm_state size: $", "mamba_ssm_gib"),
    ("pool_end", r"avail mem=$", "free_after_pool_gib"),
    ("swa_pool", r"full_layer_tokens=$", "swa_full_tokens"),
    ("swa_pool", r"swa_layer_tokens=$", "swa_tokens"),
    ("swa_usage", r"mem usage: $", "swa_pool_gib"),
    ("swa_usage", r"swa size: $", "swa_tokens"),
    ("swa_usage", r"full size: $", "swa_full_tokens"),
    ("max_total", r"^max_total_num_tokens=$", "max_total_num_tokens"),
    ("max_total", r"chunked_prefill_size=$", "chunked_prefill_size" + _NEG),
    ("max_total", r"max_prefill_tokens=$", "max_prefill_tokens"),
    ("max_total", r"max_running_requests=$", "max_running_requests"),
    ("max_total", r"context_len=$", "context_len"),
    ("max_total", r"available_gpu_mem=$", "available_gpu_mem_gib"),
    ("server_args", r"^server_args=$", "server_args" + _TEXT),
    ("kv_dtype", r"KV cache dtype: $", "kv_dtype" + _TEXT),
    ("swa_disabled", r"hybrid SWA memory for $", "swa_disabled_arch" + _TEXT),
)
"""The meaning of a placeholder from its record and the literal text before it (first rule
wins; a placeholder no rule names is not read)."""


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


Variants = list[tuple[str, bool]]
"""(text, is_brace) alternatives of one string expression."""


def _join(parts: list[Variants]) -> Variants:
    out: Variants = [("", False)]
    for options in parts:
        joined: Variants = []
        for head, head_brace in out:
            for text, is_brace in options:
                if head_brace or is_brace:
                    left = head if head_brace else _escape(head)
                    right = text if is_brace else _escape(text)
                    joined.append((left + right, True))
                else:
                    joined.append((head + text, False))
        out = joined[:MAX_VARIANTS]
    return out


def _variants(node: ast.AST, env: dict[str, Variants]) -> Variants | None:
    """The texts a string expression can print (a literal, an f-string, a concatenation, a
    conditional of those, a local name bound to those); ``None`` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, False)]
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.IfExp):
        body, orelse = _variants(node.body, env), _variants(node.orelse, env)
        if body is None or orelse is None:
            return None
        return (body + orelse)[:MAX_VARIANTS]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _variants(node.left, env), _variants(node.right, env)
        return None if left is None or right is None else _join([left, right])
    if isinstance(node, ast.JoinedStr):
        parts: list[Variants] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append([(str(value.value), False)])
            elif isinstance(value, ast.FormattedValue):
                inner = _variants(value.value, env) if isinstance(
                    value.value, (ast.IfExp, ast.Name)) and value.format_spec is None \
                    and value.conversion < 0 else None
                if inner is not None:
                    parts.append(inner)
                    continue
                parts.append([(_placeholder(value.value, value), True)])
        return _join(parts)
    return None


def _placeholder(expr: ast.AST, value: ast.FormattedValue) -> str:
    part = "{" + ast.unparse(expr)
    if value.conversion > 0:
        part += "!" + chr(value.conversion)
    if isinstance(value.format_spec, ast.JoinedStr):
        part += ":" + "".join(str(v.value) for v in value.format_spec.values
                              if isinstance(v, ast.Constant))
    return part + "}"


def _candidates(tree: ast.AST) -> Iterator[tuple[str, str, str]]:
    """(format, style, function) of every string a ``logger.*`` call in ``tree`` can print."""
    def walk(node: ast.AST, where: str, env: dict[str, Variants]) -> Iterator[
            tuple[str, str, str]]:
        for child in ast.iter_child_nodes(node):
            name, scope = where, env
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{where}.{child.name}" if where else child.name
                scope = {}
            if isinstance(child, ast.Assign) and len(child.targets) == 1 \
                    and isinstance(child.targets[0], ast.Name):
                bound = _variants(child.value, env)
                if bound is not None:
                    env[child.targets[0].id] = bound
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.args and child.func.attr in LOG_METHODS:
                found = _variants(child.args[0], env)
                printf = len(child.args) > 1
                for text, is_brace in found or ():
                    yield text, "brace" if is_brace else "printf" if printf else "plain", where
            yield from walk(child, name, scope)
    yield from walk(tree, "", {})


def _sources(spec: str, prefixes: tuple[str, ...]) -> tuple[Version, Iterator[tuple[str, str]]]:
    """The version and the (path, text) of each file under ``prefixes`` of one SOURCE."""
    if "=" in spec:
        version_text, root = spec.split("=", 1)

        def files() -> Iterator[tuple[str, str]]:
            for folder, _, names in sorted(os.walk(Path(root) / "sglang")):
                for name in sorted(names):
                    path = Path(folder) / name
                    rel = path.relative_to(root).as_posix()
                    if name.endswith(".py") and rel.startswith(prefixes) \
                            and not SKIP.search(rel):
                        yield rel, path.read_text(encoding="utf-8", errors="replace")
        return Version(version_text), files()
    version = Version(Path(spec).name.split("-")[1])

    def wheel() -> Iterator[tuple[str, str]]:
        with zipfile.ZipFile(spec) as archive:
            for rel in sorted(archive.namelist()):
                if rel.endswith(".py") and rel.startswith(prefixes) and not SKIP.search(rel):
                    yield rel, archive.read(rel).decode("utf-8", "replace")
    return version, wheel()


def _fields(text: str, style: str, anchor: str) -> list[str]:
    tokens = format_tokens(text, style)
    out: list[str] = []
    for index, token in enumerate(tokens):
        if not isinstance(token, Placeholder):
            continue
        before = tokens[index - 1] if index and isinstance(tokens[index - 1], str) else ""
        before = str(before).rsplit("\n", 1)[-1]
        meaning = next((m for record, left, m in MEANINGS
                        if record == anchor and re.search(left, before)), None)
        out.append(meaning or f"- {token.spec}")
    return out


def _declared(tree: ast.AST) -> set[str]:
    """The annotated class fields of a module (``ServerArgs`` and its option namespaces)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
    return names


def build(specs: list[str]) -> dict[str, object]:
    entries: dict[tuple[str, str], Entry] = {}
    args: dict[str, tuple[Version, Version, str]] = {}
    versions: list[Version] = []
    for spec in specs:
        version, files = _sources(spec, PATHS + ARG_PATHS)
        versions.append(version)
        declared: dict[str, str] = {}
        for rel, source in files:
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            if rel.startswith(ARG_PATHS):
                for name in _declared(tree) & set(SERVER_ARGS):
                    declared.setdefault(name, rel)
            if not rel.startswith(PATHS):
                continue
            for text, style, where in _candidates(tree):
                anchor = next((name for name, pattern in ANCHORS if re.search(pattern, text)),
                              None)
                if anchor is None or style == "plain":
                    continue
                entry = entries.get((text, style))
                if entry is None:
                    entries[(text, style)] = Entry(text, style, anchor, version, version,
                                                   f"{rel}@{version} ({where or 'module'})",
                                                   _fields(text, style, anchor))
                else:
                    if version < entry.first:  # cite the oldest release that prints it
                        entry.source = f"{rel}@{version} ({where or 'module'})"
                    entry.first, entry.last = min(entry.first, version), max(entry.last, version)
        for name, rel in declared.items():
            seen = args.get(name)
            if seen is None or version < seen[0]:  # cite the oldest release declaring it
                args[name] = (version, max(version, seen[1]) if seen else version,
                              f"{rel}@{version}")
            else:
                args[name] = (seen[0], max(version, seen[1]), seen[2])
    ordered = sorted(entries.values(), key=lambda e: (e.anchor, e.first, e.last, e.format))
    out: list[dict[str, object]] = []
    counts: dict[str, int] = {}
    for entry in ordered:
        if not any(not f.startswith("-") and f != "pool, text" for f in entry.fields):
            print(f"skipped (nothing read): {entry.format[:100]!r}", file=sys.stderr)
            continue
        counts[entry.anchor] = counts.get(entry.anchor, 0) + 1
        out.append({"id": f"{entry.anchor}.{counts[entry.anchor]}", "format": entry.format,
                    "style": entry.style, "first": str(entry.first), "last": str(entry.last),
                    "source": entry.source, "fields": entry.fields})
    return {"comment": "generated by python -m kvlint.generators.sglang_log_table from SGLang's "
                       "own format strings; do not edit by hand",
            "versions": [str(v) for v in sorted(set(versions))], "formats": out,
            "server_args": {name: {"first": str(first), "last": str(last), "source": source}
                            for name, (first, last, source) in sorted(args.items())}}


def main(argv: list[str] | None = None) -> int:
    return run("kvlint.generators.sglang_log_table", __doc__, build, FORMATS_FILE, argv)


if __name__ == "__main__":
    raise SystemExit(main())
