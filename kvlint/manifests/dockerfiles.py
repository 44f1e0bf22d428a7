"""Dockerfiles that start an engine: the command the last stage's container runs, read as
Docker builds it (the Dockerfile reference, https://docs.docker.com/reference/dockerfile/).

``ENTRYPOINT`` and ``CMD`` in exec form (a JSON array) are the words as written; in shell form
they run as ``/bin/sh -c "..."``, whose words kvlint reads like a script's line. With an
``ENTRYPOINT``, ``CMD`` gives its arguments; without one, ``CMD`` is the command, or the base
image's own entrypoint's arguments (``FROM vllm/vllm-openai``: the engine's server takes
them), which is what ``docker run IMAGE CMD...`` does, so the container is read as that run
(:func:`~kvlint.manifests.shell_scripts.command_models`). ``ENV`` settings are the process's
environment. Only the last stage counts (``FROM`` starts a stage); the last ``ENTRYPOINT``
and ``CMD`` of it win, and a ``FROM`` of an earlier stage's name inherits nothing here.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.engine_launch import settle_version
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script

__all__ = ["dockerfile_models", "is_dockerfile"]

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$", re.DOTALL)
_NAMES = ("Dockerfile", "dockerfile", "Containerfile")


def is_dockerfile(path: str) -> bool:
    """``Dockerfile``, ``Dockerfile.cuda``, ``vllm.Dockerfile``, ``Containerfile``."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.endswith(_NAMES) or name.startswith(tuple(f"{n}." for n in _NAMES))


def _instructions(text: str) -> list[tuple[str, str, int]]:
    """``(INSTRUCTION, arguments, 1-based line)``, continuation lines joined."""
    out: list[tuple[str, str, int]] = []
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        match = _INSTRUCTION.match(" ".join(pending))
        pending = []
        if match:
            out.append((match.group(1).upper(), match.group(2).strip(), start))
    return out


def _form(argument: str, line: int) -> tuple[bool, list[list[Word]]] | None:
    """``(exec form, commands)`` of an ``ENTRYPOINT``/``CMD``: exec form is one command as
    written; shell form is what ``/bin/sh -c`` runs, one command per ``;``/``&``/``&&``
    (``None``: nothing kvlint can read)."""
    if argument.startswith("["):
        try:
            items = json.loads(argument)
        except (ValueError, RecursionError):  # nested past the decoder's depth: not a list
            return None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            return None
        return True, [[Word(item, line) for item in items]]
    commands = [list(c) for c in split_script(argument, line=line - 1) if c]
    return (False, commands) if commands else None


def dockerfile_models(text: str, path: str) -> list[ServedModel]:
    """Every served model the last stage of a Dockerfile starts."""
    image: tuple[str, int] | None = None
    env: list[Word] = []
    entrypoint: tuple[bool, list[list[Word]]] | None = None
    cmd: tuple[bool, list[list[Word]]] | None = None
    for instruction, argument, line in _instructions(text):
        if instruction == "FROM":
            words = [w for w in argument.split() if not w.startswith("--")]
            image = (words[0], line) if words else None
            env, entrypoint, cmd = [], None, None
        elif instruction == "ENV":
            if "=" in argument.split(maxsplit=1)[0]:
                env += [Word(pair, line) for pair in argument.split() if "=" in pair]
            else:
                name, _, value = argument.partition(" ")
                env.append(Word(f"{name}={value.strip()}", line))
        elif instruction == "ENTRYPOINT":
            entrypoint = _form(argument, line)
            cmd = None  # a new ENTRYPOINT resets CMD (the Dockerfile reference)
        elif instruction == "CMD":
            cmd = _form(argument, line)
    if image is None:
        return []
    if entrypoint is not None:
        exec_form, commands = entrypoint
        if exec_form and cmd is not None and cmd[0]:  # exec CMD: the entrypoint's arguments
            commands = [[*commands[0], *cmd[1][0]]]
    elif cmd is not None and not cmd[0]:  # shell-form CMD: what /bin/sh -c runs
        commands = cmd[1]
    elif cmd is not None:  # docker run IMAGE CMD...: the image's own entrypoint takes CMD
        flags = [w for pair in env for w in (Word("-e", pair.line), pair)]
        commands = [[Word("docker", image[1]), Word("run", image[1]), *flags,
                     Word(image[0], image[1]), *cmd[1][0]]]
        env = []
    else:
        return []
    found = command_models([[*env, *c] for c in commands], text, path, kind="dockerfile")
    return [_from_base(served, image) for served in found]


def _from_base(served: ServedModel, base: tuple[str, int]) -> ServedModel:
    """A command the Dockerfile runs itself (``ENTRYPOINT python3 -m vllm...``) runs in the
    last stage's base image: its version is the image's, as a ``docker run`` of it says."""
    if served.image is not None or served.engine is None or \
            isinstance(served.engine_version, Located):
        return served
    image = Located(base[0], base[1], None, "FROM")
    version, notes = settle_version(served.engine.value, image)
    if version is None:
        return replace(served, image=image, notes=(*served.notes, *notes))
    return replace(served, image=image, engine_version=version,
                   notes=(*served.notes, *notes))
