"""The environment variables of an engine process that change what the engine accepts
(``VLLM_ALLOW_LONG_MAX_MODEL_LEN``...): read from the manifest's environment and carried on
:class:`~kvlint.loaders.manifests.base.ServedModel` so rules can see them."""

from __future__ import annotations

from functools import cache

from kvlint.engines import load_engines
from kvlint.loaders.manifests.base import Located, Unresolved
from kvlint.loaders.manifests.shell import EngineArgs, Env


@cache
def watched_names() -> tuple[str, ...]:
    """Every variable named by the engine table as changing what an engine accepts."""
    names = {str(fact.values["override_env"])
             for engine in load_engines().values() for fact in engine.context_limit
             if fact.values.get("override_env")}
    return tuple(sorted(names))


def watched(env: Env) -> dict[str, Located[str] | Unresolved]:
    """The watched variables ``env`` sets, each with its line (an :class:`Unresolved` for
    one set without a value in the manifest, such as a secret reference)."""
    out: dict[str, Located[str] | Unresolved] = {}
    for name in watched_names():
        value = env.get(name)
        if value is None:
            continue
        if isinstance(value, Unresolved):
            out[name] = value
        else:
            out[name] = Located(str(value), env.line_of(name), source=f"env {name}")
    return out


def with_env(args: EngineArgs, env: Env) -> EngineArgs:
    """``args`` with the watched variables of the environment its process runs in."""
    found = watched(env)
    if not found:
        return args
    from dataclasses import replace

    return replace(args, env={**args.env, **found})
