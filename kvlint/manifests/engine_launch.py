"""Engine launches in command lines and scripts, and the :class:`ServedModel` built from one,
for the Helm, compose, launcher, Kubernetes and engine-config parsers: the engine an exec-form
command or ``sh -c`` script starts (with the assignments made before it), the ``pip install``
pins and Hub downloads of the same script, the engine version they settle, and
:func:`served_model`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from kvlint.manifests.base import (
    DERIVED_GPUS,
    DocumentContext,
    Located,
    ServedModel,
    Unresolved,
)
from kvlint.manifests.engine_command import (
    EngineArgs,
    command_arguments,
    env_args_llamacpp,
    env_args_tgi,
    parse_engine_args,
    router_mode,
)
from kvlint.manifests.engine_env import engine_invocations, with_env
from kvlint.manifests.engine_options import engine_problems
from kvlint.manifests.engine_programs import find_program
from kvlint.manifests.image_refs import tag_date
from kvlint.manifests.image_tags import unpublished_tag
from kvlint.manifests.images import (
    FIXED_BUILD,
    ROLLING_VERSIONS,
    engine_from_image,
    engine_from_pip,
    engine_own_image,
    entrypoint_clash,
    fixed_build,
    official_vllm,
)
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word, split_env_prefix
from kvlint.manifests.yaml_marks import LStr
from kvlint.manifests.yaml_values import node_line
from kvlint.model.engine_args import HIDES_EVERY_GPU, EngineArgProblem

FIELDS = ("model", "served_name", "tp", "pp", "dp", "dp_attention", "ep", "kv_cache_dtype",
          "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
          "extensible_kv_cache", "kv_tokens_cap", "gpu_memory_utilization", "dtype",
          "quantization", "config_overrides", "node_rank", "prefill_chunk", "graph_batch",
          "graph_off", "page_size", "speculative", "backend", "swa_ratio", "lora", "max_loras",
          "max_lora_rank", "lora_sharded", "cpu_offload", "trust_remote_code")
"""EngineArgs fields that are ServedModel fields too."""
MERGED = (*FIELDS, "config_file", "expert_parallel", "dp_local", "nnodes")


def merge_args(primary: EngineArgs | None, fallback: EngineArgs | None) -> EngineArgs | None:
    """Field by field: ``primary``'s value where it sets one, else ``fallback``'s."""
    if primary is None:
        return fallback
    if fallback is None:
        return primary
    changes: dict[str, Any] = {name: getattr(fallback, name) for name in MERGED
                               if getattr(primary, name) is None
                               and getattr(fallback, name) is not None}
    extra = tuple(n for n in fallback.notes if n not in primary.notes)
    if extra:
        changes["notes"] = primary.notes + extra
    if any(name not in primary.env for name in fallback.env):
        changes["env"] = {**fallback.env, **primary.env}
    return replace(primary, **changes) if changes else primary


SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ash"})


@dataclass
class Launch:
    """An engine command found in a command line or script."""

    engine: str
    line: int | None
    args: EngineArgs
    env: Env


@dataclass
class Pin:
    engine: str
    version: str | None
    spec: str
    line: int | None


@dataclass
class Script:
    """What reading a command line or script finds: engine launches, pip pins, model
    downloads."""

    launches: list[Launch] = field(default_factory=list)
    pins: list[Pin] = field(default_factory=list)
    downloads: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Script) -> None:
        self.launches.extend(other.launches)
        self.pins.extend(other.pins)
        self.downloads.update(other.downloads)
        self.notes.extend(other.notes)


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _expand(env: Env, text: str) -> str | None:
    out = env.expand(text)
    return out if isinstance(out, str) else None


PIP_VALUE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-f",
                               "--find-links", "-i", "--index-url", "--extra-index-url",
                               "-t", "--target", "--prefix", "--python", "-e", "--editable",
                               "--root", "--src", "--upgrade-strategy", "--platform",
                               "--python-version", "--implementation", "--abi", "--only-binary",
                               "--no-binary", "--index-strategy", "--torch-backend"})


def pip_pins(words: Sequence[Word], env: Env) -> list[Pin]:
    """Engine requirements in a ``pip install``/``uv pip install`` command."""
    texts = [w.text for w in words]
    start = next((i for i in range(len(texts) - 1)
                  if _basename(texts[i]).startswith("pip") and texts[i + 1] == "install"), None)
    if start is None:
        return []
    pins: list[Pin] = []
    skip = False
    for word in words[start + 2:]:
        if skip:
            skip = False
            continue
        if word.text.startswith("-"):
            skip = word.text in PIP_VALUE_OPTIONS
            continue
        spec = _expand(env, word.text) or word.text
        if "$" in spec and ".whl" in spec:  # a wheel by path: its file name is what counts
            spec = _expand(env, spec.rsplit("/", 1)[-1]) or spec
        found = engine_from_pip(spec)
        if found is not None:
            pins.append(Pin(found[0], found[1], spec, word.line))
    return pins


def _download(words: Sequence[Word], env: Env) -> tuple[str, str] | None:
    """``huggingface-cli download REPO --local-dir DIR`` (or ``hf download``) -> (DIR, REPO)."""
    texts = [_expand(env, w.text) or w.text for w in words]
    if len(texts) < 3 or _basename(texts[0]) not in ("huggingface-cli", "hf") or \
            texts[1] != "download":
        return None
    repo = next((t for t in texts[2:] if not t.startswith("-")), None)
    local = None
    for i, text in enumerate(texts):
        if text == "--local-dir" and i + 1 < len(texts):
            local = texts[i + 1]
        elif text.startswith("--local-dir="):
            local = text.split("=", 1)[1]
    if repo is None or local is None or "/" not in repo:
        return None
    return local, repo


def engine_args(engine: str, words: Sequence[Word], env: Env,
                process: Env | None = None) -> EngineArgs:
    """Flags of ``engine`` (words after the executable, expanded with ``env``); when the
    engine process sees another environment (``process``: compose expands exec-form words with
    its own variables, not the container's), the settings TGI and llama.cpp read from env vars
    come from that one (flags win)."""
    args = with_env(parse_engine_args(engine, words, env), process or env)
    if process is not None and process is not env:
        if engine == "tgi":
            return merge_args(args, env_args_tgi(process)) or args
        if engine == "llamacpp":
            return router_mode(merge_args(args, env_args_llamacpp(process)) or args, process)
    return args


def _shell_script(words: Sequence[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` (``bash -lc``, ``/bin/sh -ec``...)."""
    if not words or _basename(words[0].text) not in SHELLS:
        return None
    for i, word in enumerate(words[1:], 1):
        text = word.text
        if text.startswith("--") or not text.startswith("-"):
            return None
        if "c" in text[1:]:
            return words[i + 1] if i + 1 < len(words) else None
    return None


def launch_in_argv(words: Sequence[Word], env: Env, *, expand: Env | None = None,
                   depth: int = 0) -> Script:
    """The engine started by one exec-form command line; ``sh -c SCRIPT`` is followed into
    the script. ``env`` is the process environment; ``expand``, when given, is what the
    words of the command line itself are expanded with."""
    found = Script()
    if not words or depth > 2:
        return found
    prefix, rest = split_env_prefix(list(words))
    process = env.assign(prefix) if prefix else env
    hit = find_program([w.text for w in rest])
    if hit is not None:
        engine, at, index = hit
        word_env = expand if expand is not None else process
        program = rest[index - 1] if index else rest[0]
        found.launches.append(Launch(engine, program.line, engine_args(
            engine, command_arguments(engine, rest, at, index), word_env, process), process))
        return found
    script = _shell_script(rest)
    if script is not None:
        from kvlint.manifests.shell_arrays import script_commands

        text = script.text
        own = isinstance(text, LStr) and script.line == text.line
        commands = script_commands(text, None if own else script.line)
        found.extend(walk_script(commands, process, depth=depth + 1))
    return found


def walk_script(commands: Sequence[list[Word]], env: Env, *, depth: int = 0) -> Script:
    """Read a shell script: the engine launches (with the assignments made before each,
    through ``shell.engine_invocations``), ``pip install`` pins, Hub downloads into local
    directories, and ``sh -c`` scripts it runs."""
    found = Script()
    for invocation in engine_invocations(commands, env):
        found.launches.append(Launch(invocation.engine, invocation.line, invocation.args,
                                     invocation.env))
    for command in commands:
        rest = split_env_prefix(list(command))[1]
        if not rest:
            continue
        found.pins.extend(pip_pins(rest, env))
        download = _download(rest, env)
        if download is not None:
            found.downloads[download[0].rstrip("/")] = (download[1], rest[0].line)
        elif depth < 2 and _shell_script(rest) is not None:
            found.extend(launch_in_argv(rest, env, depth=depth + 1))
    return found


def resolve_download(model: Located[str] | Unresolved | None,
                     downloads: Mapping[str, tuple[str, int | None]]
                     ) -> tuple[Located[str] | Unresolved | None, str | None]:
    """A local model directory the same script downloaded from the Hub -> the Hub id."""
    if not isinstance(model, Located):
        return model, None
    local = model.value.rstrip("/")
    local = local[2:] if local.startswith("./") else local
    if local in downloads:
        repo, line = downloads[local]
        where = f" (line {line})" if line else ""
        return (Located(repo, model.line, model.column,
                        f"{model.value}, downloaded from the Hub repo {repo}{where}"),
                f"model directory {model.value} is a download of {repo}{where}")
    return model, None


def image_engine(image: str | None) -> tuple[str | None, str | None, str]:
    if not image:
        return None, None, ""
    return engine_from_image(image)


def settle_version(engine: str | None, image: Located[str] | None,
                   pins: Sequence[Pin] = ()) -> tuple[Located[str] | Unresolved | None,
                                                      list[str]]:
    """The engine version: an exact pip pin of the engine installed at start-up, else the image
    tag when the image is that engine's, else an unpinned requirement (``latest``). An image of
    another engine (a base image) says nothing: the version stays unknown, with a note."""
    notes: list[str] = []
    if engine is None:
        return None, notes
    mine = [p for p in pins if p.engine == engine]
    exact = next((p for p in mine if p.version and p.version != "latest"), None)
    if exact is not None and exact.version:
        return Located(exact.version, exact.line, None, f"pip {exact.spec}"), notes
    if image is not None:
        img_engine, img_version, note = image_engine(image.value)
        if img_engine == engine and img_version:
            if note:
                notes.append(note)
            fixed = img_version in ROLLING_VERSIONS and fixed_build(image.value)
            return Located(img_version, image.line, image.column,
                           FIXED_BUILD if fixed else "image tag"), notes
        if img_engine is not None and img_engine != engine:
            notes.append(f"image {image.value} is a {img_engine} image, but the engine is "
                         f"{engine}: the image says nothing about the {engine} version")
        elif note:
            notes.append(note)
    if mine:
        pin = mine[0]
        return Located("latest", pin.line, None,
                       f"pip {pin.spec} (not pinned: the newest release is assumed)"), notes
    return None, notes


def engine_refusals(engine: Located[str], version: Located[str] | Unresolved | None,
                    image: Located[str] | None, args: EngineArgs,
                    gpus: Located[int] | Unresolved | None = None
                    ) -> tuple[EngineArgProblem, ...]:
    """What the engine refuses of its command (:func:`~.engine_options.engine_problems`),
    of the command in the image it runs without a GPU (:func:`_cpu_on_cuda_image`), and an
    engine image tag its repository never publishes (:func:`_unpublished_image`)."""
    built = tag_date(image.value) if image is not None and \
        not isinstance(version, Located) else None
    custom = image is not None and not isinstance(version, Located) and \
        not engine_own_image(image.value)
    problems = engine_problems(engine.value, version, args.uses, built, custom=custom)
    cpu = _cpu_on_cuda_image(engine, image, args) \
        if isinstance(gpus, Located) and gpus.value == 0 else None
    pull = _unpublished_image(image)
    return (*problems, *args.refused, *(p for p in (cpu, pull) if p is not None))


def _unpublished_image(image: Located[str] | None) -> EngineArgProblem | None:
    """KV706: the engine's own image named with a tag its release job never pushes
    (:mod:`~kvlint.manifests.image_tags`)."""
    found = unpublished_tag(image.value) if image is not None else None
    if found is None or image is None:
        return None
    tag, why = found
    return EngineArgProblem("image", "image", why, image.line, image.column,
                            {"reason": "image-tag-unpublished", "image": image.value,
                             "tag": tag})


def entrypoint_problem(image: Located[str] | None, words: Sequence[Word], kept: str
                       ) -> EngineArgProblem | None:
    """An engine image's own ENTRYPOINT (its server) handed ``words`` that start with a
    program (:func:`~kvlint.manifests.images.entrypoint_clash`); ``kept`` says why the
    entrypoint stays (no ``entrypoint:`` key, no ``--entrypoint``)."""
    clash = entrypoint_clash(image.value, [w.text for w in words]) \
        if image is not None and words else None
    if clash is None or image is None:
        return None
    program = words[0]
    return EngineArgProblem(
        "option", program.text, f"{kept}, so the image's ENTRYPOINT ({clash[1]}) takes the "
        f"command as its arguments, {program.text!r} first: it exits at start (unrecognized "
        "arguments); make the program the entrypoint, or give the image only the server's "
        "options", program.line, program.column,
        {"reason": "entrypoint-receives-program", "image": image.value, "engine": clash[0]})


_NOT_CUDA = ("AMD", "Intel Gaudi", "AWS Neuron", "Intel GPU", "Huawei Ascend")
"""Accelerator families (:mod:`.accelerators`) a CUDA build of vLLM cannot drive."""


def vllm_cuda_image(engine: Located[str] | None, image: Located[str] | None
                    ) -> Located[str] | None:
    """``image`` when it is vLLM's own CUDA build (``vllm/vllm-openai``, not a ROCm, CPU or
    other accelerator's variant) running vLLM; else ``None``."""
    from kvlint.manifests.accelerators import image_family

    if engine is None or engine.value != "vllm" or image is None or \
            not official_vllm(image.value) or image_family(image) is not None:
        return None
    return image


def foreign_device_problem(engine: Located[str] | None, image: Located[str] | None,
                           gpu_type: Located[str] | None) -> EngineArgProblem | None:
    """vLLM's own CUDA image (``vllm/vllm-openai``) given another vendor's accelerator (an
    ``amd.com/gpu`` resource, ``/dev/kfd``, a Gaudi or Neuron device): its CUDA platform finds
    no NVIDIA device (vllm/platforms/__init__.py: the CUDA platform needs NVML to see a GPU;
    ROCm, HPU, Neuron and XPU are other builds), so the server exits at start."""
    image = vllm_cuda_image(engine, image)
    if image is None or gpu_type is None or not str(gpu_type.value).startswith(_NOT_CUDA):
        return None
    return EngineArgProblem(
        "value", "image", f"{image.value} is vLLM's CUDA build, but the container is given "
        f"{gpu_type.value} ({gpu_type.source}): the CUDA platform finds no NVIDIA GPU and the "
        "server exits at start; use vLLM's build for that accelerator (for AMD: "
        "vllm/vllm-openai-rocm or rocm/vllm)", image.line, image.column,
        {"engine": "vllm", "reason": "cuda-image-on-other-accelerator", "image": image.value,
         "accelerator": str(gpu_type.value)})


def _cpu_on_cuda_image(engine: Located[str] | None, image: Located[str] | None,
                       args: EngineArgs | None) -> EngineArgProblem | None:
    """vLLM told ``--device cpu`` in its own CUDA image (``vllm/vllm-openai``), in a container
    given no GPU: that build has no CPU platform (vllm/platforms/__init__.py: the CPU
    platform is the one a ``+cpu`` build reports; the CUDA one needs NVML to see a GPU), so
    the server exits at start; CPU serving is vLLM's separate CPU build."""
    image = vllm_cuda_image(engine, image)
    if image is None or args is None:
        return None
    use = next((u for u in args.uses if u.canonical == "--device" and u.values
                and (u.values[-1] or "").strip().lower() == "cpu"), None)
    if use is None:
        return None
    return EngineArgProblem(
        "value", use.name, f"{use.name} cpu on {image.value}, vLLM's CUDA build: it has no "
        "CPU platform, so the server exits at start (no CUDA device: 'Failed to infer device "
        "type'); serve on the CPU with vLLM's CPU build, or give the container a GPU and drop "
        "--device cpu", use.line, use.column,
        {"engine": "vllm", "reason": "cpu-device-on-cuda-image", "image": image.value})


@dataclass(frozen=True)
class Origin:
    """Where a served model is reported: the document (``ctx``), the format of the parser
    that read it, the object's name and role, the line to report when neither the model nor
    the engine has one (the document's own otherwise), and the file when it is not
    ``ctx.path`` (an LLM config file a Ray Serve config names)."""

    ctx: DocumentContext
    fmt: str
    name: str = ""
    role: str | None = None
    line: int | None = None
    path: str | None = None


@dataclass(frozen=True)
class Hardware:
    """What a served model runs on, as the manifest says it: GPUs per replica, their type and
    one GPU's memory (``None``: not said)."""

    gpus: Located[int] | Unresolved | None = None
    gpu_type: Located[str] | None = None
    gpu_memory: Located[float] | None = None


NO_HARDWARE = Hardware()


def served_model(
    origin: Origin,
    *,
    engine: Located[str] | None = None,
    args: EngineArgs | None = None,
    image: Located[str] | None = None,
    version: Located[str] | Unresolved | None = None,
    hardware: Hardware = NO_HARDWARE,
    notes: Iterable[str] = (),
    served_name: str | None = None,
    **overrides: Any,
) -> ServedModel:
    """A ServedModel from engine arguments plus what the manifest says around them
    (``overrides`` replace single fields)."""
    ctx = origin.ctx
    values: dict[str, Any] = {key: getattr(args, key) for key in FIELDS} if args else {}
    all_notes = list(notes)
    if args is not None:
        all_notes.extend(args.notes)
        if isinstance(args.config_file, Located | Unresolved):
            ref = args.config_file.value if isinstance(args.config_file, Located) else \
                args.config_file.text
            all_notes.append(f"engine config file {ref} is not read from here (lint that "
                             "file too)")
        if values.get("ep") is None and isinstance(args.expert_parallel, Located) and \
                args.expert_parallel.value:
            tp, dp = values.get("tp"), values.get("dp")
            tp_n = tp.value if isinstance(tp, Located) else 1
            dp_n = dp.value if isinstance(dp, Located) else 1
            if not isinstance(tp, Unresolved) and not isinstance(dp, Unresolved):
                values["ep"] = Located(tp_n * dp_n, args.expert_parallel.line, None,
                                       f"{args.expert_parallel.source or 'expert parallel'}"
                                       " (EP size = tp x dp)")
    values.update(overrides)
    model = values.get("model")
    sname = values.pop("served_name", None)
    if served_name is None and isinstance(sname, Located):
        names_ = sname.value if isinstance(sname.value, list) else [sname.value]
        served_name = str(names_[0]) if names_ else None
    model_line = model.line if isinstance(model, Located | Unresolved) else None
    first = model_line or (engine.line if engine else None) or origin.line or \
        node_line(ctx.documents[ctx.index] if ctx.index < len(ctx.documents) else None) or 1
    unique: list[str] = []
    for note in all_notes:
        if note and note not in unique:
            unique.append(note)
    problems = engine_refusals(engine, version, image, args, hardware.gpus) \
        if args is not None and engine is not None else ()
    return ServedModel(
        path=origin.path or ctx.path, line=first, format=origin.fmt, document=ctx.index,
        name=origin.name, role=origin.role, served_name=served_name, engine=engine,
        engine_version=version, image=image, gpus=hardware.gpus,
        gpu_type=hardware.gpu_type or told_device(args),
        gpu_memory=hardware.gpu_memory, notes=tuple(unique),
        env=dict(args.env) if args is not None else {}, engine_problems=problems, **values)


def told_device(args: EngineArgs | None) -> Located[str] | None:
    """The device vLLM is told to run on (``--device cpu``: "CPU"), where the manifest names
    no GPU type; ``None`` otherwise."""
    use = next((u for u in reversed(args.uses) if u.canonical == "--device" and u.values),
               None) if args is not None else None
    value = (use.values[-1] or "").strip().lower() if use is not None else ""
    if use is None or value != "cpu":
        return None
    return Located("CPU", use.line, use.column, f"{use.name} {value}")


def first_launch(script: Script) -> tuple[Launch | None, list[str]]:
    notes: list[str] = []
    if not script.launches:
        return None, notes
    if len({launch.engine for launch in script.launches}) > 1:
        notes.append("several engines are started: " + ", ".join(
            sorted({launch.engine for launch in script.launches})) + "; the first is reported")
    return script.launches[0], notes


class Degrees(Protocol):
    """What a world's size is read from: an engine command's arguments or a served model."""

    @property
    def tp(self) -> Located[int] | Unresolved | None: ...
    @property
    def pp(self) -> Located[int] | Unresolved | None: ...
    @property
    def dp(self) -> Located[int] | Unresolved | None: ...
    @property
    def dp_attention(self) -> Located[bool] | None: ...


def occupied_gpus(args: Degrees, line: int | None, why: str) -> Located[int] | None:
    """The GPUs the engine takes where the manifest requests no count (a bare command,
    ``docker run --gpus all``, a compose reservation of every GPU): tp x pp, times dp unless
    DP attention reuses the TP group, as the engine starts one worker per GPU of that world;
    ``None`` when a degree is unresolved. ``why`` says what the manifest requested."""
    degrees = []
    for value in (args.tp, args.pp, args.dp):
        if isinstance(value, Unresolved):
            return None
        degrees.append(value.value if isinstance(value, Located) else 1)
    tp, pp, dp = degrees
    attention = isinstance(args.dp_attention, Located) and args.dp_attention.value
    return Located(tp * pp * (1 if attention else dp), line, None, f"{DERIVED_GPUS} ({why})")


VISIBLE_DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                            "ROCR_VISIBLE_DEVICES")
"""The variables that make a list of devices visible to CUDA or ROCm."""
_DEVICE_LIST = re.compile(r"\d{1,3}(?:,\d{1,3}){0,63}")


def visible_device_list(get: Callable[[str], object],
                        names: Sequence[str] = VISIBLE_DEVICE_VARIABLES
                        ) -> list[str] | Literal[False] | None:
    """The devices the first of ``names`` that is set lists (``None``: none is set;
    ``False``: one is set to a value that is not a list of device numbers, ``$GPU``)."""
    for name in names:
        value = get(name)
        if value is None:
            continue
        text = value.strip() if isinstance(value, str) else ""
        return text.split(",") if _DEVICE_LIST.fullmatch(text) else False
    return None


_HIDING = frozenset({"", "-1", "all", "none", "void"})
"""Values of ``CUDA_VISIBLE_DEVICES`` (and ROCm's) that leave the process no GPU: empty, or
not a device index at all ("If one of the indices is invalid, only the devices whose index
precedes the invalid index are visible to CUDA applications", CUDA C Programming Guide,
"CUDA Environment Variables"): ``-1``, and ``all``/``none``/``void``, which are
``NVIDIA_VISIBLE_DEVICES``'s words, not CUDA's."""


def visible_devices(get: Callable[[str], object], line: int | None,
                    names: Sequence[str] = VISIBLE_DEVICE_VARIABLES) -> Located[int] | None:
    """The devices the first of ``names`` set to a list of device numbers makes visible
    (``get``: the environment's lookup; ``None``: unset or not a list of numbers), or none
    when a CUDA or ROCm variable among them hides every GPU (:data:`_HIDING`). The count is
    on ``line``, else on the value's own line."""
    for name in names:
        value = get(name)
        if name in VISIBLE_DEVICE_VARIABLES and isinstance(value, str) and \
                value.strip().strip("'\"").lower() in _HIDING:
            where = line if line is not None else getattr(value, "line", None) or None
            return Located(0, where, None, f"{name}={value.strip()!r}, {HIDES_EVERY_GPU}")
    for name in names:
        value = get(name)
        text = value.strip() if isinstance(value, str) else ""
        if _DEVICE_LIST.fullmatch(text):
            where = line if line is not None else getattr(value, "line", None) or None
            return Located(len(set(text.split(","))), where, None, f"{name}={text}")
    return None


def engine_gpus(args: EngineArgs, line: int | None, why: str,
                visible: Located[int] | None) -> Located[int] | None:
    """The GPUs an engine is given where no container limits it: the ``visible`` devices a
    ``CUDA_VISIBLE_DEVICES`` list names (the GPUs the command is handed, as a container's
    limit is: fewer than its world and it cannot place every rank, more and they sit idle),
    else its world (:func:`occupied_gpus`), the GPUs it takes of a host's."""
    if visible is not None:
        return visible
    split = _split_gpus(args, why)
    return split if split is not None else occupied_gpus(args, line, why)


def _split_gpus(args: EngineArgs, why: str) -> Located[int] | None:
    """llama.cpp's ``--tensor-split`` (``-ts``) spreads the model over one device per share
    (``3,1``: three quarters on the first GPU): common/arg.cpp splits the value at the regex
    ``[,/]+`` and reads each part with ``std::stof`` as one device's proportion (the same
    handler from the 2024 ``llama_arg`` revisions to the 2025-26 ``common_arg`` ones, read
    in the code index). The GPUs it uses are the non-zero shares, where there are two or
    more."""
    if args.engine != "llamacpp":
        return None
    split = args.options.get("--tensor-split")
    if not isinstance(split, Located):
        return None
    shares = [part.strip() for part in re.split(r"[,/]+", str(split.value)) if part.strip()]
    try:
        used = sum(1 for part in shares if float(part) > 0)
    except ValueError:
        return None
    if used < 2:
        return None
    return Located(used, split.line, None, f"{DERIVED_GPUS} (--tensor-split {split.value}: "
                   f"one GPU per share; {why})")
