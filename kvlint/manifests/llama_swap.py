"""llama-swap configurations (``config.yaml`` of mostlygeek/llama-swap): a proxy that starts
one engine command per model on demand and swaps them.

Read as llama-swap reads its file (``internal/config/load.go``, ``macros.go`` and
``commands.go`` @0bdb3720, the repository's ``config.example.yaml``):

* ``models`` maps a model ID to its settings; ``cmd`` is the command that serves it (a
  ``llama-server``, a ``vllm serve``, a ``docker run`` of an engine image...), ``env`` a list
  of ``NAME=value`` items added to that process's environment;
* before the command runs, its ``#`` comment lines are removed, then macros are substituted:
  ``${MODEL_ID}`` (the model's ID), the model's own ``macros`` over the global ``macros``
  (substituted last-declared first, so a macro may use the ones declared before it), then
  ``${PORT}``, allocated from ``startPort`` (default 5800) one per model whose ``cmd`` uses
  it, in model-ID order; ``${env.NAME}`` comes from llama-swap's own environment (kvlint
  leaves it unresolved);
* the command is split by ``SanitizeCommand``: a line ending in ``\\`` joins the next, and
  the rest is split into words with POSIX quoting, **newlines included as spaces** (a
  ``cmd: |`` block with one option per line is one command). No shell runs it: its words
  go to the program as they are.

Each model's command is then read as a script's (:func:`~kvlint.manifests.shell_scripts.
command_models`), its served model named after the model ID. llama-swap runs one model at a
time unless a ``groups`` entry says ``swap: false``; kvlint judges each model on its own (no
GPU shared between models is counted twice).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kvlint.manifests.base import DocumentContext, ManifestParser, ServedModel
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script
from kvlint.manifests.yaml_values import get_map, plain_map, to_int, value_line

__all__ = ["LlamaSwapParser"]

DEFAULT_START_PORT = 5800
"""``startPort`` when the file sets none (load.go@0bdb3720)."""
MAX_MODELS = 256
"""Models read per file (a real configuration has a few dozen)."""
MAX_MACRO_TEXT = 64_000
"""Characters of a command after macro substitution (macros may nest; bounded)."""

_ENV_MACRO = re.compile(r"\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}")
_MACRO_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,63}$")
_RESERVED = frozenset({"PID", "PORT", "MODEL_ID"})


def _is_model(value: object) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("cmd"), str)


class LlamaSwapParser(ManifestParser):
    """A llama-swap configuration: each model's ``cmd`` that starts an engine is a served
    model named after its ID (module doc)."""

    name = "llama-swap"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        if not plain_map(document) or not isinstance(document, dict):
            return False
        if "apiVersion" in document or "kind" in document or "services" in document:
            return False
        models = document.get("models")
        return isinstance(models, dict) and bool(models) and any(
            _is_model(v) for v in models.values())

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not isinstance(document, dict):
            return []
        models = get_map(document, "models") or {}
        shared = _macros(document)
        start = to_int(_substitute(str(document.get("startPort", "")), shared))
        port = start if start is not None and start > 0 else DEFAULT_START_PORT
        out: list[ServedModel] = []
        for model_id in sorted(str(k) for k in models)[:MAX_MODELS]:
            model = models.get(model_id)
            if not _is_model(model):
                continue
            assert isinstance(model, dict)
            macros = [("MODEL_ID", model_id), *_overlay(shared, _macros(model))]
            cmd = model["cmd"]
            text = _substitute(_strip_comments(str(cmd)), macros)
            if "${PORT}" in text:
                text = text.replace("${PORT}", str(port))
                macros.append(("PORT", str(port)))
                port += 1
            words = _command_words(text, cmd, value_line(model, "cmd"))
            if not words:
                continue
            env = [Word(_substitute(item, macros), value_line(model, "env"))
                   for item in model.get("env") or [] if isinstance(item, str)
                   and re.match(r"[A-Za-z_]\w*=", item)] \
                if isinstance(model.get("env"), list) else []
            for served in command_models([env + words], "", ctx.path, kind=self.name):
                out.append(replace(served, name=model_id))
        return out


def _macros(holder: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``macros`` of a file or a model, in declaration order, as text (scalars only;
    llama-swap refuses other values, reserved names and names of other characters)."""
    found = holder.get("macros")
    if not isinstance(found, Mapping):
        return []
    out = []
    for name, value in found.items():
        if not _MACRO_NAME.match(str(name)) or str(name) in _RESERVED:
            continue
        if isinstance(value, bool):
            out.append((str(name), "true" if value else "false"))
        elif isinstance(value, str | int | float):
            out.append((str(name), str(value)))
    return out


def _overlay(shared: list[tuple[str, str]], own: list[tuple[str, str]]
             ) -> list[tuple[str, str]]:
    """The global macros with a model's own replacing those of the same name in place, the
    rest appended (``mergeModelMacros``)."""
    merged = list(shared)
    for name, value in own:
        at = next((i for i, (n, _) in enumerate(merged) if n == name), None)
        if at is None:
            merged.append((name, value))
        else:
            merged[at] = (name, value)
    return merged


def _substitute(text: str, macros: list[tuple[str, str]]) -> str:
    """``text`` with every ``${name}`` macro substituted, the last declared first; a macro's
    line breaks become spaces (the command's words are split at them anyway), so each line
    of ``text`` stays on its line; ``${env.NAME}`` becomes ``${NAME}`` (unresolved)."""
    for name, value in reversed(macros):
        text = text.replace("${" + name + "}", " ".join(value.splitlines()).strip()
                            if "\n" in value else value)
        if len(text) > MAX_MACRO_TEXT:
            return text[:MAX_MACRO_TEXT]
    return _ENV_MACRO.sub(r"${\1}", text)


def _strip_comments(text: str) -> str:
    """``StripComments``: lines whose first non-blank character is ``#`` removed (kept as
    empty lines here, so the others keep their numbers)."""
    return "\n".join("" if line.strip().startswith("#") else line
                     for line in text.split("\n"))


def _command_words(text: str, scalar: object, line: int | None) -> list[Word]:
    """The words of a substituted command, each on its file line where the scalar is a
    literal block (every line joined to the next: newlines separate words, not commands)."""
    rows = text.split("\n")
    joined = "\n".join(row if row.rstrip().endswith("\\") or i == len(rows) - 1
                       else row + " \\" for i, row in enumerate(rows))
    style = getattr(scalar, "style", None)
    start = getattr(scalar, "line", None) or line
    commands = split_script(joined, line=start, style="|" if style == "|" else None)
    return [w for command in commands for w in command]
