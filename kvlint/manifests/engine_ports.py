"""The port an engine's HTTP server listens on, against the container ports a compose service
publishes.

A service that publishes container ports (``ports: ["9998:8000"]``) none of which is the one
its engine listens on is unreachable from the host: the published port forwards to nothing.
The engine's port is its option when the command gives one, else its default, read in each
engine's own source:

* vLLM ``--port`` 8000 (``FrontendArgs.port``, vllm/entrypoints/openai/cli_args.py@v0.20.0);
* SGLang ``--port`` 30000 (``ServerArgs.port``, sglang/srt/server_args.py@0.5.5.post3;
  sglang/srt/arg_groups/fields/serving.py@0.5.23);
* LMDeploy ``--server-port`` 23333 (lmdeploy/cli/serve.py@0.18.0: "Effective default is 23333
  when unset");
* TGI ``--port`` (env ``PORT``), whose image sets ``PORT=80`` (Dockerfile@00873331, ``ENV ...
  PORT=80``; the launcher's own default, 3000, applies outside the image);
* llama.cpp ``--port`` (env ``LLAMA_ARG_PORT``) 8080 (the server images' own
  ``HEALTHCHECK ... http://localhost:8080/health``, .devops/llama-server-*.Dockerfile);
* TensorRT-LLM ``trtllm-serve --port`` 8000 (its CLI reference,
  nvidia.github.io/TensorRT-LLM commands/trtllm-serve: ``--port`` default 8000).

Only judged when every published entry reads as a port or a range, the engine's port is
known (an unexpanded variable leaves it unknown) and the service does not share the host's
network (``network_mode: host`` publishes nothing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kvlint.manifests.base import Located
from kvlint.manifests.engine_command import EngineArgs
from kvlint.model.engine_args import EngineArgProblem

__all__ = ["unpublished_port"]

DEFAULT_PORTS: Mapping[str, int] = {"vllm": 8000, "sglang": 30000, "lmdeploy": 23333,
                                    "tgi": 80, "llamacpp": 8080, "trtllm": 8000}
"""Each engine's port as its own image or CLI starts it (the module's sources)."""
PORT_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "vllm": ("--port",), "sglang": ("--port",), "lmdeploy": ("--server-port",),
    "tgi": ("--port", "-p"), "llamacpp": ("--port",), "trtllm": ("--port",)}
PORT_ENV: Mapping[str, str] = {"tgi": "PORT", "llamacpp": "LLAMA_ARG_PORT"}

_SHORT = re.compile(r"^(?:\[?[\w.:]*\]?:)?(?:(\d{1,5})(?:-(\d{1,5}))?:)?(\d{1,5})(?:-(\d{1,5}))?"
                    r"(?:/(?:tcp|udp))?$")
"""Compose's short ``ports`` syntax: ``[HOST_IP:][HOST[-HOST]:]CONTAINER[-CONTAINER][/PROTO]``."""


def _published(entries: list[Any]) -> list[tuple[int, int]] | None:
    """The container port ranges ``entries`` publish; ``None`` when one does not read."""
    out: list[tuple[int, int]] = []
    for entry in entries[:256]:
        if isinstance(entry, Mapping):
            target = entry.get("target")
            if isinstance(target, int) and not isinstance(target, bool):
                out.append((target, target))
                continue
            if isinstance(target, str) and target.isdigit():
                out.append((int(target), int(target)))
                continue
            return None
        text = str(entry).strip().strip("'\"")
        found = _SHORT.match(text) if "$" not in text else None
        if found is None:
            return None
        low = int(found.group(3))
        out.append((low, int(found.group(4)) if found.group(4) else low))
    return out


def _listening(engine: str, args: EngineArgs, env: Mapping[str, str | None]
               ) -> tuple[int, str] | None:
    """The port the engine listens on and what says so; ``None`` when kvlint cannot tell."""
    for use in reversed(args.uses):
        if use.canonical in PORT_OPTIONS.get(engine, ()) or use.name in PORT_OPTIONS.get(
                engine, ()):
            value = (use.values[-1] if use.values else "") or ""
            return (int(value), f"{use.name} {value}") if value.isdigit() else None
    name = PORT_ENV.get(engine)
    if name is not None and name in env:
        given = env[name]
        return (int(given), f"{name}={given}") if given and given.isdigit() else None
    port = DEFAULT_PORTS.get(engine)
    return (port, f"{engine}'s default port") if port is not None else None


LOOPBACK_DEFAULTS: Mapping[str, str] = {"sglang": "127.0.0.1", "trtllm": "localhost",
                                         "llamacpp": "127.0.0.1"}
"""The engines whose server binds the loopback address unless told otherwise: SGLang
``--host`` 127.0.0.1 (server_args.py@0.5.5.post3 line 244; arg_groups/fields/serving.py@0.5.23
line 65), ``trtllm-serve --host`` localhost (its CLI reference), llama.cpp ``--host``
127.0.0.1, whose own server images set ``LLAMA_ARG_HOST=0.0.0.0`` (.devops/llama-server-*.
Dockerfile ``ENV LLAMA_ARG_HOST=0.0.0.0``: so only a loopback the manifest sets is judged for
it). vLLM, TGI and LMDeploy listen on every interface by default."""
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _host(engine: str, args: EngineArgs, env: Mapping[str, str | None]
          ) -> tuple[str, str] | None:
    """The address the engine's server binds and what says so; ``None`` when unknown or
    not one kvlint judges."""
    default = LOOPBACK_DEFAULTS.get(engine)
    if default is None:
        return None
    for use in reversed(args.uses):
        if use.canonical == "--host" or use.name == "--host":
            value = (use.values[-1] if use.values else "") or ""
            return (value.strip(), f"{use.name} {value}") if value.strip() else None
    if engine == "llamacpp":
        # only as the manifest sets it: the server images set LLAMA_ARG_HOST=0.0.0.0, and a
        # custom image is mostly built on them
        given = env.get("LLAMA_ARG_HOST")
        return (given.strip(), f"LLAMA_ARG_HOST={given}") if given and given.strip() else None
    return default, f"{engine}'s default --host"


def unpublished_port(engine: Located[str] | None, args: EngineArgs | None,
                     service: Mapping[str, Any], env: Mapping[str, str | None],
                     line: int | None) -> EngineArgProblem | None:
    """The compose service publishes container ports, none of them the one its engine
    listens on, or the engine binds only the container's loopback address (placed on
    ``line``, the ``ports`` key's)."""
    ports = service.get("ports")
    if engine is None or args is None or not isinstance(ports, list) or not ports or \
            service.get("network_mode") == "host":
        return None
    published = _published(ports)
    host = _host(engine.value, args, env)
    if published is not None and host is not None and host[0].lower() in _LOOPBACK:
        return EngineArgProblem(
            "port", "ports", f"the service publishes container ports, but the engine binds "
            f"{host[0]} ({host[1]}), the container's own loopback: Docker forwards a published "
            "port to the container's network address, so nothing answers; pass --host "
            "0.0.0.0", line, None, {"engine": engine.value, "host": host[0]})
    listening = _listening(engine.value, args, env)
    if published is None or listening is None:
        return None
    port, why = listening
    if any(low <= port <= high for low, high in published):
        return None
    shown = ", ".join(str(low) if low == high else f"{low}-{high}" for low, high in published)
    return EngineArgProblem(
        "port", "ports", f"the service publishes container port{'s' if len(published) > 1 else ''}"
        f" {shown}, but the engine listens on {port} ({why}): nothing answers on the published "
        f"port{'s' if len(published) > 1 else ''}; publish {port} (\"HOST:{port}\") or make "
        "the engine listen on the published port", line, None,
        {"engine": engine.value, "listens": port, "published": shown})
