"""Engine config files a launch names: vLLM's and SGLang's ``--config FILE`` (CLI options as
YAML keys), TensorRT-LLM's ``--config`` / ``--extra_llm_api_options`` (LLM-API YAML).

A command that reads its settings from such a file leaves the served model, the parallelism,
the context and the memory settings to it. kvlint reads the file where the manifest says it
is: a ConfigMap of the same manifest mounted into the pod (:mod:`.kubernetes_containers`),
or a file of the linted tree that a compose service or ``docker run`` bind-mounts at the
path the command names, or, for a command the script runs on the host, that path itself
(relative to the script's folder: ``$(pwd)/config.yaml`` in a script meant to run where it
lies). It is read as manifests are (inside the tree, bounded, recorded for the result cache)
and applied as the engine applies it: vLLM and SGLang let the command line win
(``vllm/utils`` ``FlexibleArgumentParser._load_config_file``: the file's options are put
before the command's), the TensorRT-LLM options file wins over its command line
(``trtllm-serve``'s ``update_llm_args_with_extra_options``). Values read from another file are
placed on the command's line here, their sources naming the file and line.

Docs: Docker's ``-v``/``--volume`` (``SOURCE:TARGET[:OPTIONS]``) and ``--mount
type=bind,source=...,target=...``; the Compose Specification's ``volumes`` (short syntax, a
relative source resolved against the compose file's folder; long syntax ``source`` /
``target``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from pathlib import PurePosixPath
from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ManifestProblem, Unresolved
from kvlint.manifests.engine_command import CONFIG_MAY_TRUST, EngineArgs, OptionUse
from kvlint.manifests.flat_configs import config_args
from kvlint.manifests.siblings import read_named
from kvlint.manifests.trtllm_configs import FREE_FRACTION_NOTE, trt_settings
from kvlint.manifests.yaml_marks import load_documents

__all__ = ["CONFIG_FIELDS", "apply_config", "compose_volumes", "follow_file_config",
           "host_file", "relocated"]

MAX_VOLUMES = 256
"""Volume entries read per service or command (a real one has a few)."""

CONFIG_FIELDS = (
    "model", "served_name", "tp", "pp", "dp", "dp_attention", "ep", "kv_cache_dtype",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
    "extensible_kv_cache", "kv_tokens_cap", "gpu_memory_utilization", "expert_parallel",
    "dp_local", "nnodes", "quantization", "config_overrides", "node_rank",
    "prefill_chunk", "graph_batch", "graph_off", "page_size", "speculative", "backend",
    "swa_ratio", "lora", "max_loras", "max_lora_rank", "lora_sharded", "cpu_offload",
    "trust_remote_code")
"""The arguments a vLLM/SGLang config file may set (where the command line does not)."""


def apply_config(engine: str, args: EngineArgs, conf: Mapping[str, Any], where: str
                 ) -> tuple[EngineArgs, dict[str, Any]]:
    """``args`` with the config mapping ``conf`` applied as ``engine`` applies it, and the
    field overrides it makes (TensorRT-LLM's options file: ``settings`` win over the
    command). ``where`` prefixes each value's source."""
    if engine == "trtllm":
        settings = dict(trt_settings(conf, where=f"{where}: " if where else ""))
        if args.model is not None:
            settings.pop("model", None)
        return replace(args, config_file=None), settings
    from_file = config_args(engine, conf, f"{where}: " if where else "")
    merged = {name: getattr(from_file, name) for name in CONFIG_FIELDS
              if getattr(args, name) is None}
    merged = {k: v for k, v in merged.items() if v is not None}
    if isinstance(args.trust_remote_code, Unresolved) and \
            args.trust_remote_code.text == CONFIG_MAY_TRUST:  # the file gives it or not
        merged["trust_remote_code"] = from_file.trust_remote_code
    return replace(args, config_file=None, **merged), {}


def compose_volumes(service: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(host source, container target)`` of a compose service's bind mounts (a named
    volume holds nothing of the tree and is left out)."""
    volumes = service.get("volumes")
    out: list[tuple[str, str]] = []
    if not isinstance(volumes, list):
        return out
    for entry in volumes[:MAX_VOLUMES]:
        source = mount = None
        if isinstance(entry, str):
            parts = entry.split(":")
            if len(parts) >= 2:
                source, mount = parts[0], parts[1]
        elif isinstance(entry, dict) and entry.get("type", "bind") == "bind":
            source, mount = entry.get("source"), entry.get("target")
        if isinstance(source, str) and isinstance(mount, str):
            out.append((source, mount))
    return out


def docker_volume(option: str, value: str) -> tuple[str, str] | None:
    """``(source, target)`` of a ``docker run`` ``-v``/``--volume`` or ``--mount`` value."""
    if option in ("-v", "--volume"):
        parts = value.split(":")
        return (parts[0], parts[1]) if len(parts) >= 2 else None
    if option == "--mount":
        keys: dict[str, str] = {}
        for item in value.split(",")[:32]:
            key, _, val = item.partition("=")
            keys[key.strip()] = val.strip()
        source = keys.get("source") or keys.get("src")
        target = keys.get("target") or keys.get("destination") or keys.get("dst")
        if keys.get("type", "volume") == "bind" and source and target:
            return source, target
    return None


def host_file(target: str, volumes: Sequence[tuple[str, str]]) -> str | None:
    """The host path bind-mounted at ``target`` (or at a folder above it), for a source in
    the tree (``./x``, ``/abs``; a named volume is not)."""
    for source, mount in volumes[:MAX_VOLUMES]:
        if not source.startswith((".", "/")):
            continue
        mount = mount.rstrip("/") or "/"
        if target == mount:
            return source
        if target.startswith(mount + "/"):
            return str(PurePosixPath(source) / target[len(mount) + 1:])
    return None


def relocated(args: EngineArgs, line: int | None, where: str) -> EngineArgs:
    """``args`` read from another file, placed on ``line`` of this one, sources saying
    where they were written."""
    changes: dict[str, Any] = {}
    for f in fields(args):
        value = getattr(args, f.name)
        if isinstance(value, Located):
            changes[f.name] = _moved(value, line, where)
        elif isinstance(value, Unresolved):
            changes[f.name] = replace(value, line=line, column=None)
        elif isinstance(value, tuple) and value and all(isinstance(u, OptionUse)
                                                       for u in value):
            changes[f.name] = tuple(replace(u, line=line, column=None, value_line=None)
                                    for u in value)
    return replace(args, **changes)


def _moved(value: Located[Any], line: int | None, where: str) -> Located[Any]:
    at = f"{where} line {value.line}" if value.line else where
    return replace(value, line=line, column=None, value_line=None,
                   source=f"{at}: {value.source}" if value.source else at)


def follow_file_config(engine: str, args: EngineArgs, ctx: DocumentContext,
                       volumes: Sequence[tuple[str, str]] | None
                       ) -> tuple[EngineArgs, dict[str, Any], list[str]]:
    """The config file ``args`` names read from the linted tree and applied: through the
    bind mounts ``volumes`` of a container (``None``: a command on the host, which reads the
    path itself). The updated arguments, field overrides and notes; ``args`` unchanged when
    the file is not there to read (the served model then says it was not read)."""
    ref = args.config_file
    if not isinstance(ref, Located) or not isinstance(ref.value, str) or not ref.value:
        return args, {}, []
    path = ref.value
    host = path if volumes is None else host_file(path, volumes)
    if host is None:
        return args, {}, []
    text = read_named(ctx, host)
    if text is None:
        return args, {}, []
    docs = load_documents(text, host)
    conf = next((d for d in docs if isinstance(d, dict)), None) \
        if not isinstance(docs, ManifestProblem) else None
    if conf is None:
        why = docs.message if isinstance(docs, ManifestProblem) else "it holds no mapping"
        return replace(args, config_file=None), {}, [
            f"engine config file {host} is not read: {why}"]
    applied, settings = apply_config(engine, args, conf, "")
    moved = relocated(applied, ref.line, host)
    # the command's own values stay where they are; only what the file set is moved
    keep = {f.name: getattr(applied, f.name) for f in fields(applied)
            if getattr(applied, f.name) is getattr(args, f.name)}
    result = replace(moved, **keep)
    notes = [f"engine config {path} read from {host}"
             + ("" if host == path else f", mounted at {path}")]
    if settings:
        settings = {k: _moved(v, ref.line, host) if isinstance(v, Located) else v
                    for k, v in settings.items()}
        if "gpu_memory_utilization" in settings:
            notes.append(FREE_FRACTION_NOTE)
    return result, settings, notes
