"""docker-compose files: one served model per service that runs an LLM engine.

The argv of a service is ``entrypoint`` + ``command`` (each a string split shell-style, or a
list); without an ``entrypoint`` the image's own applies, so the flags of an engine image's
server (TGI, vLLM OpenAI, llama.cpp server) are read as that server's. Compose interpolates
``${VAR}``/``${VAR:-default}`` from the shell and the ``.env`` file of the project directory:
kvlint reads that ``.env`` beside the compose file (not names that look like secrets), uses
defaults for the rest, and leaves anything else unresolved (the shell's). The service's own
``environment`` is what the engine process sees (TGI's ``MODEL_ID``...).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from kvlint.manifests.accelerators import image_family, no_gpu_source, runtime_family
from kvlint.manifests.base import (
    DocumentContext,
    Documents,
    Located,
    ManifestParser,
    ManifestProblem,
    ServedModel,
    Unresolved,
)
from kvlint.manifests.compose_builds import built_stage, moved
from kvlint.manifests.compose_words import SPLITTER, compose_words, explained
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_launch import (
    VISIBLE_DEVICE_VARIABLES,
    Hardware,
    Origin,
    engine_args,
    engine_gpus,
    entrypoint_problem,
    first_launch,
    foreign_device_problem,
    launch_in_argv,
    served_model,
    settle_version,
    visible_devices,
)
from kvlint.manifests.engine_ports import unpublished_port
from kvlint.manifests.images import (
    engine_from_image,
    entrypoint_engine,
    model_then_options,
    official_vllm,
    pinned_official_vllm,
    tools_server,
)
from kvlint.manifests.runpod_workers import worker_command
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word
from kvlint.manifests.siblings import read_named
from kvlint.manifests.triton_launch import triton_args, triton_launch
from kvlint.manifests.yaml_values import (
    get_list,
    get_map,
    get_str,
    item_line,
    key_col,
    key_line,
    lstr,
    names,
    node_line,
    plain_map,
    to_int,
    value_line,
)
from kvlint.model.engine_args import EngineArgProblem

SERVICE_KEYS = names("""
image build command entrypoint environment env_file deploy ports volumes container_name
depends_on restart networks network_mode healthcheck runtime ipc shm_size ulimits privileged
labels logging working_dir user expose gpus devices cap_add security_opt tty stdin_open
extra_hosts profiles platform hostname stop_grace_period init pull_policy secrets configs
""")

NOT_ENGINE_IMAGES = re.compile(r"text-embeddings-inference", re.IGNORECASE)
"""Images that serve embedding/reranking models with engine-like flags (``--model-id``)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?", re.DOTALL)
MAX_NESTING = 16
"""``${A:-${B:-${C}}}`` is read this deep; deeper is unresolved."""


def _closing(text: str, start: int) -> int | None:
    """The index of the ``}`` that closes the ``${`` whose body starts at ``start``
    (nested ``${...}`` in a default or replacement, as Compose allows), or ``None``."""
    depth, i = 1, start
    while i < len(text):
        if text.startswith("${", i):
            depth, i = depth + 1, i + 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


_NO_VALUES: Mapping[str, str] = MappingProxyType({})
_DOTENV: ContextVar[Mapping[str, str]] = ContextVar("kvlint_compose_dotenv",
                                                    default=_NO_VALUES)
"""The variables of the ``.env`` file beside the compose file being parsed (:func:`dotenv`)."""
MAX_DOTENV_LINES = 4096
_SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def dotenv(text: str) -> dict[str, str]:
    """The variables an ``.env`` file sets, as Compose reads it for interpolation
    (``NAME=value``, ``export`` allowed, a value in quotes taken whole, ``#`` comments). Not
    taken: values that interpolate other variables (kvlint does not follow them) and names
    that look like secrets (a token never reaches kvlint's output)."""
    values: dict[str, str] = {}
    for line in text.splitlines()[:MAX_DOTENV_LINES]:
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        entry = entry.removeprefix("export ").lstrip()
        name, eq, value = entry.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not _NAME.fullmatch(name) or _SECRET.search(name):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = re.sub(r"\s+#.*$", "", value)
        if "$" not in value:
            values[name] = value
    return values


def interpolate(text: str, _depth: int = 0) -> str | Unresolved:
    """Compose's own interpolation with the variables of the ``.env`` file beside the compose
    file (:data:`_DOTENV`) and no others: ``${VAR:-default}`` and ``${VAR-default}`` give the
    value, else the default (itself interpolated: nested ``${...}``), ``${VAR:+word}`` the
    word when set, ``$$`` a literal ``$``; a variable neither sets is unresolved (it comes
    from the shell)."""
    known = _DOTENV.get()
    missing: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        if text.startswith("${", i):
            end = _closing(text, i + 2)
            braced = _BRACED.fullmatch(text, i + 2, end) if end is not None else None
            if end is None or braced is None:
                out.append(text[i:end + 1 if end is not None else len(text)])
                i = end + 1 if end is not None else len(text)
                continue
            name, op, arg = braced.groups()
            value = known.get(name)
            present = value is not None and (value != "" or not (op or "").startswith(":"))
            if present and op not in (":+", "+"):
                out.append(str(value))
            elif op in (":-", "-") and _depth < MAX_NESTING:
                out.append(interpolate_default(arg or "", missing, _depth + 1))
            elif op in (":+", "+"):
                out.append(interpolate_default(arg or "", missing, _depth + 1)
                           if present and _depth < MAX_NESTING else "")
            else:
                missing.append(name)
                out.append(text[i:end + 1])
            i = end + 1
            continue
        if text[i] == "$":
            bare = _NAME.match(text, i + 1)
            if bare is not None:
                if bare.group(0) in known:
                    out.append(known[bare.group(0)])
                else:
                    missing.append(bare.group(0))
                    out.append(text[i:bare.end()])
                i = bare.end()
                continue
        out.append(text[i])
        i += 1
    if missing:
        return Unresolved("set outside the compose file (shell or .env): " +
                          ", ".join(f"${{{m}}}" for m in missing),
                          node_line(text), getattr(text, "column", None), str(text))
    return "".join(out)


def interpolate_default(text: str, missing: list[str], depth: int = 0) -> str:
    out = interpolate(text, depth)
    if isinstance(out, Unresolved):
        missing.append(out.text)
        return text
    return out


def _refused_string(name: str, key: str, why: str, service: dict[str, Any],
                    ctx: DocumentContext) -> None:
    """Report a ``command``/``entrypoint`` string Compose cannot split: it refuses the file
    (``invalid command line string``), so nothing in it starts (KV903)."""
    if isinstance(ctx.documents, Documents):
        ctx.documents.report(ManifestProblem(
            path=ctx.path, line=key_line(service, key), kind="invalid-object",
            message=f"Compose cannot split the {key} string of the service {name}: {why}; "
                    f"{SPLITTER} refuses it ('invalid command line string'), so `docker "
                    "compose up` refuses the file and starts nothing; quote the "
                    f"character or write the {key} as a list"))


def _interp_words(words: list[Word]) -> list[Word]:
    """The words with Compose's interpolation done; an unquoted expansion in a command
    written as one string is split at whitespace, as Compose splits the string after
    interpolating it (an empty one is no word: ``${EXTRA_ARGS:-}``)."""
    out: list[Word] = []
    for word in words:
        done = _interp_word(word)
        if word.split and done.text != word.text:
            out += [replace(done, text=part) for part in done.text.split()]
        else:
            out.append(done)
    return out


def _interp_word(word: Word) -> Word:
    out = interpolate(word.text)
    if not isinstance(out, str) or out == word.text:
        return word
    return replace(word, text=out, literal=word.literal or "$$" in word.text)


def _environment(service: dict[str, Any]) -> dict[str, str | None]:
    """``environment`` as a mapping or a ``KEY=VALUE`` list, values interpolated (unresolved
    values are unknown: ``None``); values remember their line."""
    raw = service.get("environment")
    env: dict[str, str | None] = {}
    if isinstance(raw, dict):
        for key, value in raw.items():
            if value is None or isinstance(value, dict | list):
                env[str(key)] = None
                continue
            text = "true" if value is True else "false" if value is False else str(value)
            out = interpolate(lstr(text, value_line(raw, key)))
            env[str(key)] = lstr(out, value_line(raw, key)) if isinstance(out, str) else None
    elif isinstance(raw, list):
        for i, item in enumerate(raw):
            if not isinstance(item, str):
                continue
            key, eq, value = item.partition("=")
            if not eq:
                env[key.strip()] = None
                continue
            out = interpolate(lstr(value, item_line(raw, i)))
            env[key.strip()] = lstr(out, item_line(raw, i)) if isinstance(out, str) else None
    return env


@dataclass(frozen=True)
class _EveryGpu:
    """A reservation of every GPU of the host (``count: all``, a device entry with neither
    count nor ids, ``gpus: all``): ``what`` requested it, on ``line``."""

    what: str
    line: int | None


def _gpus(service: dict[str, Any]) -> Located[int] | Unresolved | _EveryGpu | None:
    """GPUs reserved by ``deploy.resources.reservations.devices`` (``count`` or
    ``device_ids``) or the service-level ``gpus``."""
    reservations = get_map(get_map(get_map(service, "deploy"), "resources"), "reservations")
    devices = get_list(reservations, "devices") or []
    total = 0
    line: int | None = None
    sources: list[str] = []
    for i, device in enumerate(devices):
        if not isinstance(device, dict):
            continue
        caps = device.get("capabilities")
        if isinstance(caps, list) and caps and "gpu" not in [str(c) for c in caps] and \
                device.get("driver") not in ("nvidia", "amd"):
            continue
        where = f"deploy.resources.reservations.devices[{i}]"
        if "count" in device:
            count = device["count"]
            number = to_int(count)
            if number is None:
                return _EveryGpu(f"{where}.count {count}", key_line(device, "count"))
            total += number
            line = line or key_line(device, "count")
            sources.append(f"{where}.count")
        elif isinstance(device.get("device_ids"), list):
            unset = next((ref for ref in map(str, device["device_ids"])
                          if isinstance(interpolate(ref), Unresolved)), None)
            if unset is not None:  # ${GPU_IDS:?} may name any number of devices
                return Unresolved(f"{where}.device_ids {unset} is set when compose runs: "
                                  "the GPUs it names are unknown",
                                  key_line(device, "device_ids"), None, unset)
            # Docker joins the ids with commas into NVIDIA_VISIBLE_DEVICES (moby
            # daemon/nvidia_linux.go setNvidiaGPUs), so one item "5,6" is two GPUs
            total += len({part.strip() for ref in device["device_ids"]
                          for part in str(interpolate(ref)).split(",") if part.strip()})
            line = line or key_line(device, "device_ids")
            sources.append(f"{where}.device_ids")
        else:
            return _EveryGpu(f"{where} sets neither count nor device_ids",
                             item_line(devices, i))
    if sources:
        return Located(total, line, None, " + ".join(sources))
    gpus = service.get("gpus")
    if gpus is not None:
        if to_int(gpus) is not None:
            return Located(to_int(gpus) or 0, key_line(service, "gpus"), None, "gpus")
        return _EveryGpu(f"gpus {gpus}", key_line(service, "gpus"))
    runtime = service.get("runtime")
    if isinstance(runtime, str) and runtime.strip().lower() == "nvidia":
        return _EveryGpu("runtime: nvidia", key_line(service, "runtime"))
    mounted = service.get("devices")
    paths = [str(item).split(":", 1)[0].rstrip("/") for item in mounted
             if isinstance(item, str)] if isinstance(mounted, list) else []
    render = sorted({p for p in paths if _RENDER_NODE.fullmatch(p)})
    if render and "/dev/dri" not in paths:
        # one render node per GPU (AMD with /dev/kfd, Intel alone): the GPUs it names
        return Located(len(render), key_line(service, "devices"), None,
                       f"devices {', '.join(render)} (one render node per GPU)")
    if any(p in ("/dev/kfd", "/dev/dri") for p in paths):
        return _EveryGpu("devices /dev/kfd (every AMD GPU)", key_line(service, "devices"))
    return None


_RENDER_NODE = re.compile(r"/dev/dri/renderD\d+")
"""A GPU's render node (the DRM driver makes one per GPU, renderD128 upward): ROCm and Intel's
GPU runtimes open a device through it."""


def _service_gpus(found: Located[int] | Unresolved | _EveryGpu | None,
                  args: EngineArgs | None,
                  env: dict[str, Any] | None = None) -> Located[int] | Unresolved | None:
    """The GPUs a service gets; where it is given every GPU of the host, the ones its
    engine takes (its world: the rest stay idle) or, when its environment lists fewer
    devices, those; unresolved when its degrees are."""
    if not isinstance(found, _EveryGpu):
        return found
    why = f"{found.what}: every GPU of the host"
    visible = visible_devices((env or {}).get, None,
                              ("NVIDIA_VISIBLE_DEVICES", *VISIBLE_DEVICE_VARIABLES))
    taken = engine_gpus(args, found.line, why, visible) if args is not None else None
    return taken if taken is not None else Unresolved(why, found.line, None, found.what)


def _engine_of_options(service: Mapping[str, Any], words: list[Word], env: dict[str, Any],
                       image: Located[str] | None, notes: list[str]
                       ) -> tuple[Located[str] | None, EngineArgs | None]:
    """The engine of an options-only command given to an image whose ENTRYPOINT kvlint
    cannot read (one the service builds from a Dockerfile not in the tree, or a custom
    image): the one engine whose options they all are (:func:`.engine_options.options_engine`)."""
    from kvlint.manifests.engine_options import engine_display, options_engine

    texts = [w.text for w in words]
    found = options_engine(texts)
    if found is None:
        return None, None
    what = f"image {image.value}" if image is not None else "the image the service builds"
    notes.append(f"the ENTRYPOINT of {what} is not in the tree: its command's options are "
                 f"all {engine_display(found)}'s (and no other engine's), so it is read as "
                 f"{engine_display(found)}'s server")
    line = key_line(service, "command")
    return (Located(found, line, None, "the command's options"),
            engine_args(found, words, Env({}, k8s=False), Env(env, k8s=False)))


_WHOLE_VARIABLE = re.compile(r"\$(?:\{[A-Za-z_][^{}]*\}|[A-Za-z_][A-Za-z0-9_]*)")
"""One variable reference as a whole word (``${VLLM_ARGS}``, ``${X:-}``, ``$ARGS``); one
character class after the name's first letter, so a long unclosed ``${...`` is rejected in
linear time."""


def _command_from_variables(service: Mapping[str, Any], command: list[Word],
                            env: dict[str, Any], image: Located[str]
                            ) -> tuple[Located[str] | None, EngineArgs | None]:
    """An engine image whose whole command is variables set outside the file
    (``command: ${VLLM_ARGS}``): the image's server runs with options kvlint cannot read,
    the model among them. The served model is then unresolved (KV902 names the variable),
    never missed; the other options keep the engine's defaults, as for any unset variable
    in a command."""
    if not command or not all(_WHOLE_VARIABLE.fullmatch(w.text) and
                              isinstance(interpolate(w.text), Unresolved) for w in command):
        return None, None
    engine = entrypoint_engine(image.value, env, args_only=True)
    if engine is None:
        return None, None
    text = " ".join(w.text for w in command)
    line = key_line(service, "command") or image.line
    model = Unresolved(f"the whole command of the {engine} image comes from {text}, set "
                       "outside the compose file (shell or .env): the model and every option "
                       "are in it", line, None, text)
    return (Located(engine, line, None, f"entrypoint of image {image.value}"),
            EngineArgs(engine, model=model))


def _triton(words: list[Word], image: Located[str] | None, env: dict[str, Any]
            ) -> tuple[Located[str], EngineArgs] | None:
    """A service that runs ``tritonserver`` with the TensorRT-LLM backend
    (:mod:`.triton_launch`): it serves the engines of its model repository, which kvlint
    does not read (built elsewhere): the model is unresolved, so the service is reported
    (KV902), never skipped in silence."""
    found = triton_launch(words, image=image.value if image else None,
                          env=Env(env, k8s=False))
    if found is None:
        return None
    return Located(found.engine, found.line, None, found.how), triton_args(found)


NO_GPU = ("no GPU reserved (no deploy.resources.reservations.devices, gpus, runtime or "
          "devices)")
"""The source of a GPU count of 0: the service asks Docker for no GPU."""


def _no_gpu_access(service: dict[str, Any], env: dict[str, Any],
                   image: Located[str] | None) -> bool:
    """Whether the service's container gets no GPU from Docker: no GPU reservation, no
    ``gpus``, no ``runtime``, no ``devices``, no ``NVIDIA_VISIBLE_DEVICES`` (which asks a
    daemon whose default runtime is nvidia for GPUs), and an image not built for another
    accelerator (told apart by :func:`image_family`; a CPU build is given none either)."""
    if any(key in service for key in ("runtime", "devices", "gpus", "privileged")):
        return False
    if "NVIDIA_VISIBLE_DEVICES" in env:
        return False
    reservations = get_map(get_map(get_map(service, "deploy"), "resources"), "reservations")
    if reservations is not None and "devices" in reservations:
        return False
    family = image_family(image)
    return image is not None and (family is None or family.value.startswith("CPU"))


_OVERLAY_TAGS = frozenset({"!override", "!reset"})
_OVERLAY_NAME = re.compile(r"(?:docker-)?compose\.override\.ya?ml", re.IGNORECASE)


def _overlay(service: dict[str, Any], ctx: DocumentContext) -> bool:
    """Whether the service is part of an overlay: a file Compose merges onto a base one
    (``-f docker-compose.yml -f docker-compose.gpu.yml``, or ``docker-compose.override.yml``
    merged by default), told by its name or by the merge tags only an overlay uses
    (``!override``, ``!reset``: the Compose file reference, "Merge Compose files"; compose-go
    PR 552, Compose 2.24)."""
    tags = getattr(service, "value_tags", {})
    return bool(_OVERLAY_TAGS & set(tags.values())) or \
        _OVERLAY_NAME.fullmatch(os.path.basename(ctx.path)) is not None


def _dotenv_beside(ctx: DocumentContext) -> dict[str, str]:
    """The variables of the ``.env`` file in the compose file's directory, read as manifests
    are (inside the linted tree, bounded) and recorded for the result cache; none for stdin
    or when there is no such file."""
    text = read_named(ctx, ".env")
    return dotenv(text) if text is not None else {}


class ComposeParser(ManifestParser):
    """docker-compose / Compose Specification files (``services.<name>``)."""

    name = "compose"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        services = get_map(document, "services") if plain_map(document) else None
        if not services:
            return False
        bodies = [s for s in services.values() if s is not None]
        return bool(bodies) and all(isinstance(s, dict) for s in bodies) and \
            any(isinstance(s, dict) and ("image" in s or "build" in s) for s in bodies) and \
            all(set(map(str, s)) & SERVICE_KEYS or not s for s in bodies)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        services = get_map(document, "services") or {}
        values = _dotenv_beside(ctx)
        token = _DOTENV.set(values)
        try:
            out = []
            of: list[dict[str, Any]] = []
            for name, service in services.items():
                if isinstance(service, dict):
                    found = self._service(str(name), service, ctx)
                    if found is not None:
                        found = explained(found)
                        of.append(service)
                        out.append(found if not values else replace(found, notes=(
                            *found.notes, "variables from the .env file beside the compose "
                            "file (Compose reads it for interpolation): "
                            + ", ".join(sorted(values)[:12]))))
            from kvlint.manifests.compose_shared import shared_gpu_problems

            return shared_gpu_problems(out, of, interpolate)
        finally:
            _DOTENV.reset(token)

    def _service(self, name: str, service: dict[str, Any],
                 ctx: DocumentContext) -> ServedModel | None:
        image = self._image(service)
        if image is not None and NOT_ENGINE_IMAGES.search(image.value):
            return None
        env = _environment(service)
        notes: list[str] = []
        if service.get("env_file"):
            notes.append("env_file is not read: variables it sets are unknown")
        split_entry = compose_words(service.get("entrypoint"),
                                    value_line(service, "entrypoint"))
        split_command = compose_words(service.get("command"), value_line(service, "command"))
        for key, split in (("entrypoint", split_entry), ("command", split_command)):
            if split.invalid:
                _refused_string(name, key, split.invalid, service, ctx)
                return None
            if split.dropped:
                notes.append(f"the {key} string ends where {SPLITTER} stops, before "
                             f"{split.dropped[:60]!r}: Compose passes none of that")
        entry, command = split_entry.words, split_command.words
        # the Compose Specification: a null (absent) entrypoint/command keeps the image's,
        # an empty one ([] or "") drops it; a new entrypoint drops the image's CMD too
        own_entry = service.get("entrypoint") is not None
        own_command = service.get("command") is not None
        stage = built_stage(service, ctx) if not (own_entry and own_command) and (
            image is None or engine_from_image(image.value)[0] is None) else None
        if stage is not None:  # the image the service builds runs its Dockerfile's command
            built, at, said = stage
            built_entry, built_cmd = built.entrypoint_words, built.cmd_words
            if not own_entry and built_entry is not None:
                entry = moved(built_entry, at)
            if not own_command and not own_entry and built_cmd is not None:
                command = moved(built_cmd, at)
            env = {**built.variables, **env}
            image = Located(built.base, at, None, f"FROM of {said}")
            notes.append(f"the service builds its image from {said}: its ENTRYPOINT/CMD and "
                         "ENV are read from there (the service's own keys win)")
        if not entry and image is not None and \
                tools_server(image.value, [w.text for w in command]):
            command = [Word("llama-server", command[0].line), *command[1:]]
        words = _interp_words(entry + command)
        engine: Located[str] | None = None
        args: EngineArgs | None = None
        launch, more = first_launch(launch_in_argv(words, Env(env, k8s=False),
                                                   expand=Env({}, k8s=False)))
        notes.extend(more)
        if launch is None and words:  # a start script the service mounts from the tree
            from kvlint.manifests.mounted_scripts import mounted_launch

            mounted = mounted_launch(words, service, ctx, env)
            if mounted is not None:
                launch, said = mounted
                notes.append(said)
        serve_word = False
        refused: list[EngineArgProblem] = []
        fronted = False
        if launch is not None:
            engine = Located(launch.engine, launch.line, None,
                             "entrypoint + command" if entry else "command")
            args = launch.args
        elif "entrypoint" not in service and image is not None:
            options_only = bool(command) and command[0].text.startswith("-")
            # a model then options: vllm serve's own form, the entrypoint of vLLM's images
            # from 0.12.0; an official tag before it runs the OpenAI api_server, which
            # ignores a positional model and serves its default one (vllm#32294): not read
            # as the model then
            positional = model_then_options([w.text for w in command]) and \
                not pinned_official_vllm(image.value)
            fallback = entrypoint_engine(image.value, env,
                                         args_only=options_only or positional)
            serve_word = bool(command) and command[0].text == "serve" and \
                official_vllm(image.value)
            if serve_word:  # "vllm serve serve MODEL": the options meant follow the word
                fallback, words = "vllm", words[1:]
            if fallback is not None and (not command or options_only or serve_word or
                                         (positional and fallback == "vllm")):
                engine = Located(fallback, key_line(service, "command") or image.line, None,
                                 f"entrypoint of image {image.value}")
                worker = worker_command(image.value, Env(env, k8s=False), image.line) \
                    if not command else None
                if worker is not None:  # RunPod's worker: options from the environment
                    fronted = True  # its handler, not the engine, answers on the service's ports
                    words = list(worker.words)
                    notes.extend(worker.notes)
                    refused.extend(worker.problems)
                args = engine_args(fallback, words, Env({}, k8s=False), Env(env, k8s=False))
        model_over: dict[str, Any] = {}
        if args is not None and engine is not None and isinstance(args.config_file, Located):
            from kvlint.manifests.config_files import compose_volumes, follow_file_config

            volumes = [(src, dst) for src, dst in (
                (interpolate(a), interpolate(b)) for a, b in compose_volumes(service))
                if isinstance(src, str) and isinstance(dst, str)]
            args, model_over, more = follow_file_config(engine.value, args, ctx, volumes)
            notes.extend(more)
        if engine is None and not entry and command and (
                command[0].text.startswith("-") or
                model_then_options([w.text for w in command])) and \
                (image is None or engine_from_image(image.value)[0] is None):
            engine, args = _engine_of_options(service, words, env, image, notes)
        if engine is None and "entrypoint" not in service and image is not None:
            engine, args = _command_from_variables(service, command, env, image)
        if engine is None:
            triton = _triton(words, image, env)
            if triton is None:
                return None
            engine, args = triton
            fronted = True  # tritonserver binds every interface (HTTP 8000, gRPC 8001)
        for word in entry + command:
            out = interpolate(word.text)
            if isinstance(out, Unresolved):
                notes.append(f"{word.text} in the command is {out.reason}")
        gpus = _service_gpus(_gpus(service), args, env)
        if gpus is None and _overlay(service, ctx):
            notes.append("an overlay file (Compose merges it onto the base file it is run "
                         "with, whose GPU reservation this file does not show): GPUs not "
                         "judged")
        elif gpus is None and _no_gpu_access(service, env, image):
            gpus = Located(0, key_line(service, "image") or engine.line, None,
                           no_gpu_source(NO_GPU, engine.value, image))
        version, more = settle_version(engine.value, image)
        notes.extend(more)
        deploy = get_map(service, "deploy")
        if deploy is not None:
            replicas = to_int(deploy.get("replicas"))
            if replicas is not None and replicas != 1:
                notes.append(f"deploy.replicas {replicas}: {replicas} containers, each with "
                             "the GPUs reported")
        family = runtime_family(service)
        gpu_type = Located(family[0], key_line(service, "runtime" if "runtime" in family[1]
                                               else "devices"), None, family[1]) \
            if family else None
        served = served_model(Origin(ctx, "compose", name=name, line=engine.line),
                              engine=engine, args=args, image=image, version=version,
                              hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes,
                              **model_over)
        problem = entrypoint_problem(image, command, "the service sets no entrypoint") \
            if "entrypoint" not in service and (launch is not None or serve_word) else None
        port = None if fronted else \
            unpublished_port(engine, args, service, env, key_line(service, "ports"))
        foreign = foreign_device_problem(engine, image, gpu_type)
        found = (*refused, *(p for p in (problem, port, foreign) if p is not None))
        if served is None or not found:
            return served
        return replace(served, engine_problems=(*served.engine_problems, *found))

    @staticmethod
    def _image(service: dict[str, Any]) -> Located[str] | None:
        raw = get_str(service, "image")
        if raw is None:
            return None
        out = interpolate(raw)
        line = value_line(service, "image")
        if isinstance(out, Unresolved):
            return Located(raw, line, key_col(service, "image"), "image (unresolved variables)")
        return Located(out, line, key_col(service, "image"),
                       "image" + (" (compose defaults)" if out != raw else ""))
