"""A script a container runs that the manifest mounts from its own tree.

Compose services often bind-mount a start script and run it (``volumes: ["./serve.vllm.sh:
/serve.sh"]``, ``entrypoint: ["/bin/bash", "-c"]``, ``command: ["/serve.sh"]``): the engine
command is in that script, not in the compose file. When the script's host path lies inside
the linted tree, kvlint reads it (bounded, as manifests are; recorded for the result cache)
as a shell script with the service's environment, and takes the engine it starts. Its
findings are placed on the service's command line, since the script is another file; the
values' sources say which script and line they came from.

Docs: the Compose Specification's ``volumes`` (short syntax ``SOURCE:TARGET[:MODE]``, a
relative source resolved against the compose file's directory; long syntax ``source`` /
``target``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from kvlint.manifests.base import DocumentContext
from kvlint.manifests.config_files import compose_volumes, host_file, relocated
from kvlint.manifests.engine_launch import SHELLS, Launch, first_launch, walk_script
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word
from kvlint.manifests.siblings import read_named

__all__ = ["mounted_launch"]

def _script_path(words: Sequence[Word]) -> str | None:
    """The container path of the script the command runs: the first ``.sh`` word, directly
    or as a ``sh -c`` script's first word."""
    for word in words[:64]:
        text = word.text.strip()
        if PurePosixPath(text.split()[0] if text else "").name in SHELLS or \
                text.startswith("-"):
            continue
        first = text.split()[0] if text.split() else ""
        return first if first.endswith(".sh") and first.startswith("/") else None
    return None


def mounted_launch(words: Sequence[Word], service: Mapping[str, Any], ctx: DocumentContext,
                   env: Mapping[str, str | None]) -> tuple[Launch, str] | None:
    """The engine a service's mounted start script launches, and a note saying where it
    was read; ``None`` when the command runs no mounted script inside the tree, or the
    script starts no engine."""
    from kvlint.manifests.shell_arrays import file_commands

    target = _script_path(words)
    if target is None or ctx.path in ("-", "<stdin>") or not ctx.path:
        return None
    source = host_file(target, compose_volumes(service))
    if source is None:
        return None
    text = read_named(ctx, source)
    if text is None:
        return None
    launch, _ = first_launch(walk_script(file_commands(text), Env(dict(env), k8s=False)))
    if launch is None:
        return None
    line = next((w.line for w in words if w.text.strip().startswith(target)), None)
    line = line if line is not None else (words[0].line if words else None)
    return (replace(launch, line=line, args=relocated(launch.args, line, source)),
            f"the engine command is in {source}, mounted at {target}, which the service "
            "runs: read from there")
