"""Shell scripts that start an engine (``*.sh``, or a file whose first line is a shell's
``#!``): directly (``vllm serve ...``, ``python3 -m sglang.launch_server ...``) or in a
container (``docker run [OPTIONS] IMAGE [COMMAND]``, or ``docker create`` of the same
container started later; also ``podman`` and ``nvidia-docker``, after ``sudo``).

A container run is read as Docker reads it: its options (``docker run --help``: the ones that
take a value are skipped with it), the image, then the command. A command that names an
engine is that engine's; an image whose default entrypoint is an engine's server
(:func:`~kvlint.manifests.images.entrypoint_engine`: ``vllm/vllm-openai``, TGI, llama.cpp...)
runs that server with the command as its arguments. ``-e``/``--env`` settings become the
process's environment (TGI reads ``MODEL_ID``, ``NUM_SHARD`` from it); ``--gpus N`` or
``--gpus device=0,1`` is the GPUs the container gets (``all``: the host's, not said). The
script's own assignments before a command apply to it, as for any script kvlint reads
(:func:`~kvlint.manifests.engine_env.engine_invocations`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, Literal

from kvlint.manifests.accelerators import image_family
from kvlint.manifests.base import (
    DERIVED_GPUS,
    DocumentContext,
    Documents,
    Located,
    ServedModel,
    Unresolved,
)
from kvlint.manifests.called_scripts import Calls, called_scripts
from kvlint.manifests.cli_options import engine_of_options
from kvlint.manifests.config_files import docker_volume, follow_file_config
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_env import EngineInvocation, engine_invocations
from kvlint.manifests.engine_launch import (
    SHELLS,
    Hardware,
    Origin,
    engine_gpus,
    entrypoint_problem,
    occupied_gpus,
    pip_pins,
    served_model,
    settle_version,
    visible_device_list,
    visible_devices,
)
from kvlint.manifests.engine_programs import find_engine
from kvlint.manifests.images import engine_from_image, entrypoint_engine, tools_server
from kvlint.manifests.inline_scripts import inline_scripts
from kvlint.manifests.runpod_workers import worker_command
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_plain_run import here_path
from kvlint.manifests.shell_words import (
    Word,
    split_env_prefix,
)
from kvlint.manifests.slurm import SlurmGpus, slurm_gpus, slurm_variables
from kvlint.model.engine_args import EngineArgProblem

SCRIPT_SUFFIXES = frozenset({".sh", ".bash", ".zsh"})
_SHEBANG = re.compile(r"#!\s*\S*(?:/|\s)(?:ba|z|da)?sh\b")
RUNNERS = frozenset({"docker", "podman", "nvidia-docker"})
VALUE_OPTIONS = frozenset({
    "-a", "--attach", "--add-host", "--annotation", "--blkio-weight",
    "--blkio-weight-device", "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns",
    "--cidfile", "--cpu-period", "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "-c",
    "--cpu-shares", "--cpus", "--cpuset-cpus", "--cpuset-mems", "--device", "--cpu-count",
    "--cpu-percent", "--detach-keys", "--dns-opt", "--io-maxbandwidth", "--io-maxiops",
    "--net-alias",
    "--device-cgroup-rule", "--device-read-bps", "--device-read-iops", "--device-write-bps",
    "--device-write-iops", "--dns", "--dns-option", "--dns-search", "--domainname",
    "--entrypoint", "-e", "--env", "--env-file", "--expose", "--gpus", "--group-add",
    "--health-cmd", "--health-interval", "--health-retries", "--health-start-interval",
    "--health-start-period", "--health-timeout", "-h", "--hostname", "--ip", "--ip6",
    "--ipc", "--isolation", "--kernel-memory", "-l", "--label", "--label-file", "--link",
    "--link-local-ip", "--log-driver", "--log-opt", "--mac-address", "-m", "--memory",
    "--memory-reservation", "--memory-swap", "--memory-swappiness", "--mount", "--name",
    "--network", "--net", "--network-alias", "--oom-score-adj", "--pid", "--pids-limit",
    "--platform", "-p", "--publish", "--pull", "--restart", "--runtime", "--security-opt",
    "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs",
    "--ulimit", "-u", "--user", "--userns", "--uts", "-v", "--volume", "--volume-driver",
    "--volumes-from", "-w", "--workdir",
})
"""``docker run`` options that take a value (those ``docker run --help`` lists with a type,
and the hidden ``--dns-opt``/``--net-alias``: docker/cli cli/command/container/opts.go
``addFlags`` and run.go; podman's are the same names). Every other option is a switch
(``--rm``, ``-d``, ``-it``...)."""
DOCKER_SWITCHES = frozenset({
    "--detach", "--disable-content-trust", "--help", "--init", "--interactive",
    "--no-healthcheck", "--oom-kill-disable", "--privileged", "--publish-all", "--quiet",
    "--read-only", "--rm", "--sig-proxy", "--tty", "--use-api-socket",
})
"""``docker run``'s long switches (docker/cli opts.go ``addFlags`` and run.go). With
:data:`VALUE_OPTIONS` they are every long option Docker's run accepts: any other stops the
command (``unknown flag: --model-id``). podman has more options of its own, so only Docker's
runs are judged so."""
SERVER_PROGRAMS = {"vllm": ("vllm", "serve"), "tgi": ("text-generation-launcher",),
                   "llamacpp": ("llama-server",), "trtllm": ("trtllm-serve",),
                   "lmdeploy": ("lmdeploy", "serve", "api_server"),
                   "sglang": ("sglang", "serve")}
"""The program an image's entrypoint runs, as :func:`~.engine_programs.find_engine` knows it."""


def is_script(path: str, text: str) -> bool:
    """Whether ``path`` holds a shell script (by its suffix or its ``#!`` line)."""
    if PurePath(path).suffix.lower() in SCRIPT_SUFFIXES:
        return True
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    return bool(_SHEBANG.match(first))


@dataclass(frozen=True)
class _Container:
    image: Located[str]
    gpus: Located[int] | Unresolved | None
    problem: EngineArgProblem | None = None
    """The image's own entrypoint handed a program (:func:`.engine_launch.entrypoint_problem`)."""
    volumes: tuple[tuple[str, Word], ...] = ()
    """``(option, value)`` of each ``-v``/``--volume``/``--mount``, as written."""
    devices: tuple[str, ...] | Literal[False] | None = None
    """The host's GPUs ``--gpus`` gives it (``None``: every one, or none said; ``False``: a
    value kvlint does not read)."""
    detached: bool = False
    """``-d``/``--detach``: the script goes on while it runs."""


def _gpu_devices(value: Word) -> tuple[str, ...] | Literal[False] | None:
    """The host's GPUs ``--gpus`` names as Docker reads it (quotes stripped): ``device=0,1``
    (Docker's CSV: "device=6, 7" is two), or the first N for ``N`` / ``count=N`` (Docker's
    ``countToDevices``, moby daemon/nvidia_linux.go); ``None`` for ``all``."""
    text = value.text.strip().strip("'\"")
    count = re.fullmatch(r"(?:count=)?(\d{1,4})", text)
    if count:
        return tuple(str(d) for d in range(int(count.group(1))))
    devices = re.search(r"device=([\w, -]+)", text)
    if devices:
        return tuple(d.strip() for d in devices.group(1).split(",") if d.strip())
    return None if text == "all" else False


def _gpus(value: Word) -> Located[int] | Unresolved | None:
    """``--gpus`` as a count (:func:`_gpu_devices`; ``None`` for ``all``)."""
    devices, text = _gpu_devices(value), value.text.strip().strip("'\"")
    if devices is None:
        return None  # the host's GPUs: the script does not say how many
    if devices is False:
        return Unresolved(reason=f"--gpus {text!r} is not a GPU count kvlint reads",
                          line=value.line, text=text)
    return Located(len(devices), value.line, None, f"--gpus {text}")


class _PlainValues:
    """The plain-run values of the variables a script's ``docker run`` names its image with
    (:func:`~kvlint.manifests.shell_plain_run.literal_value`), each looked up once, at most
    :data:`MAX_IMAGE_VARIABLES` of them (a hostile script of many stays linear)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: dict[str, str | None] = {}

    def value(self, word: str) -> str | None:
        if word not in self.found:
            if len(self.found) >= MAX_IMAGE_VARIABLES or not self.text:
                return None
            from kvlint.manifests.shell_plain_run import literal_value

            self.found[word] = literal_value(self.text, word)
        return self.found[word]


MAX_IMAGE_VARIABLES = 64


def _container_run(words: list[Word], values: _PlainValues | None = None
                   ) -> tuple[list[Word], _Container] | None:
    """A ``docker run`` command rewritten as the command the container runs (its ``-e``
    settings as an environment prefix, an entrypoint engine's program first), and what the
    container is given; ``None`` for any other command."""
    rest = list(words)
    while rest and rest[0].text in ("sudo", "exec", "time"):
        rest = rest[1:]
    if rest and rest[0].text.rsplit("/", 1)[-1] in LAUNCHERS:
        # ``srun --gpus 4 apptainer run ...``, ``nohup docker run ...``: the launcher's own
        # options end where a container runner and its subcommand start
        for j in range(1, min(len(rest) - 1, MAX_LAUNCHER_WORDS)):
            if rest[j].text.rsplit("/", 1)[-1] in RUNNERS | HPC_RUNNERS and \
                    rest[j + 1].text in ("run", "create", "exec", "container"):
                rest = rest[j:]
                break
    if len(rest) >= 3 and rest[0].text.rsplit("/", 1)[-1] in HPC_RUNNERS and \
            rest[1].text in ("exec", "run"):
        return _hpc_container_run(rest)
    if len(rest) < 2 or rest[0].text.rsplit("/", 1)[-1] not in RUNNERS:
        return None
    i = 1
    if rest[i].text == "container":
        i += 1
    # ``docker create`` takes run's options and makes the same container, started later
    # (``docker start``): Docker CLI reference, docker container create
    if i >= len(rest) or rest[i].text not in ("run", "create"):
        return None
    i += 1
    env: list[Word] = []
    gpus: Located[int] | Unresolved | None = None
    devices: tuple[str, ...] | Literal[False] | None = None
    detached = False
    entrypoint: str | None = None
    volumes: list[tuple[str, Word]] = []
    unknown: Word | None = None
    # an engine's own image further on: an unknown option before it may take a value
    engine_image = next((j for j in range(i, len(rest))
                         if engine_from_image(rest[j].text)[0] is not None), None)
    while i < len(rest) and rest[i].text.startswith("-") and rest[i].text != "--":
        option, eq, inline = rest[i].text.partition("=")
        foreign = option.startswith("--") and option not in VALUE_OPTIONS and \
            option not in DOCKER_SWITCHES and "$" not in option
        if unknown is None and foreign and \
                rest[0].text.rsplit("/", 1)[-1] in ("docker", "nvidia-docker"):
            unknown = rest[i]
        detached = detached or option == "--detach" or \
            bool(re.fullmatch(r"-[a-zA-Z]*d[a-zA-Z]*", option))
        takes = option in VALUE_OPTIONS or (
            foreign and engine_image is not None and i + 1 < engine_image and
            not rest[i + 1].text.startswith("-"))
        value: Word | None = None
        if takes and eq:
            value = Word(inline, rest[i].line)
        elif takes and i + 1 < len(rest):
            i += 1
            value = rest[i]
        i += 1
        if value is None:
            continue
        if option in ("-e", "--env"):
            name, has, _ = value.text.partition("=")
            env.append(value if has else Word(f"{name}=${{{name}}}", value.line))
        elif option == "--gpus":
            named = values.value(value.text) if values is not None and "$" in value.text \
                else None
            if named is not None:  # GPUS="device=0" ... docker run --gpus "$GPUS"
                value = Word(named, value.line)
            gpus, devices = _gpus(value), _gpu_devices(value)
        elif option == "--entrypoint":
            entrypoint = value.text
        elif option in ("-v", "--volume", "--mount") and len(volumes) < MAX_VOLUME_LOOKUPS:
            volumes.append((option, value))
    if i < len(rest) and rest[i].text == "--":
        i += 1
    if i >= len(rest):
        return None
    image = Located(rest[i].text, rest[i].line, None, "docker run image")
    named = values.value(image.value) if values is not None and "$" in image.value else None
    if named is not None:  # IMAGE=${IMAGE:-vllm/vllm-openai:v0.10.1.1} ... docker run $IMAGE
        image = Located(named, image.line, None,
                        f"docker run image ({image.value} is {named} on a plain run)")
    command = rest[i + 1:]
    if entrypoint is None and tools_server(image.value, [w.text for w in command]):
        command = [Word("llama-server", command[0].line), *command[1:]]
    program: list[Word] = []
    if entrypoint is not None:
        program = [Word(entrypoint, image.line)]
    else:
        options_only = not command or command[0].text.startswith("-")
        engine = entrypoint_engine(image.value, [w.text.partition("=")[0] for w in env],
                                   args_only=options_only)
        if engine is None and command and options_only and \
                engine_from_image(image.value)[0] is None and image_family(image) is None:
            # a custom image (a local build, an image ID) given only options: the engine
            # whose own options they are (its entrypoint may be a wrapper; see
            # kubernetes_containers, which reads a container the same way)
            engine = engine_of_options([w.text for w in command])
        given = {name: value for name, _, value in (w.text.partition("=") for w in env)}
        worker = worker_command(image.value, Env(given, k8s=False), image.line) \
            if engine is not None and not command else None
        if worker is not None:  # RunPod's worker: the engine's options from its -e variables
            program = [*(Word(word, image.line) for word in SERVER_PROGRAMS[worker.engine]),
                       *worker.words]
        elif engine is not None and (options_only or not _names_program(command)):
            program = [Word(word, image.line) for word in SERVER_PROGRAMS.get(engine, ())]
    problem = entrypoint_problem(image, command, "docker run gives no --entrypoint") \
        if entrypoint is None else None
    if unknown is not None:
        problem = _unknown_docker_option(unknown)
    return [*env, *program, *command], _Container(image, gpus, problem, tuple(volumes),
                                                  devices, detached)


def _unknown_docker_option(word: Word) -> EngineArgProblem:
    """KV701: a ``docker run`` option Docker does not have, before the image: the docker CLI
    stops there, so no container starts (an engine's option put before the image, or an image
    left out)."""
    option = word.text.partition("=")[0]
    return EngineArgProblem(
        "option", option,
        f"docker run has no option {option}: Docker exits before any container starts "
        f"('unknown flag: {option}'); an engine's options go after the image name (is the "
        "image missing, or written after them?)",
        word.line, None, {"reason": "docker-option-unknown", "runner": "docker"})


HPC_RUNNERS = frozenset({"apptainer", "singularity"})
LAUNCHERS = frozenset({"srun", "mpirun", "nohup", "setsid", "stdbuf", "nice", "ionice",
                       "taskset", "numactl", "timeout", "env", "dotenvx"})
"""Programs that run the command after their own options (Slurm's ``srun``, ``nohup``,
``dotenvx run --``, which loads a ``.env`` first...): a container runner after one is read
as if it came first."""
MAX_LAUNCHER_WORDS = 40
"""Words a launcher's options may take before the runner (a real command has a few)."""
HPC_VALUE_OPTIONS = frozenset({
    "-B", "--bind", "--env", "--env-file", "-H", "--home", "-W", "--workdir", "--pwd",
    "-o", "--overlay", "-S", "--scratch", "--security", "--network", "--network-args",
    "--dns", "--hostname", "--app", "--mount", "--apply-cgroups", "--cpus", "--memory",
    "--fusemount", "--pid-file",
})
"""``apptainer exec``/``singularity exec`` options that take a value (apptainer's CLI docs,
``apptainer exec --help``); ``--nv``, ``--rocm``, ``--cleanenv``, ``--contain``... are
switches. ``--nv`` gives the container the host's GPUs, all of them: no count."""


def _hpc_container_run(rest: list[Word]) -> tuple[list[Word], _Container] | None:
    """``apptainer exec [options] IMAGE command...`` (or ``run``, ``singularity``): the
    command the container runs, its ``--env`` settings as an environment prefix."""
    i = 2
    env: list[Word] = []
    while i < len(rest) and rest[i].text.startswith("-"):
        option, eq, inline = rest[i].text.partition("=")
        value: Word | None = None
        if option in HPC_VALUE_OPTIONS:
            if eq:
                value = Word(inline, rest[i].line)
            elif i + 1 < len(rest):
                i += 1
                value = rest[i]
        i += 1
        if value is not None and option == "--env":
            name, has, _ = value.text.partition("=")
            env.append(value if has else Word(f"{name}=${{{name}}}", value.line))
    if i >= len(rest):
        return None
    where = f"{rest[0].text} {rest[1].text} image"
    text = rest[i].text
    pulled = _PULLED_IMAGE.fullmatch(text.rsplit("/", 1)[-1])
    if pulled is not None:
        where += f" {text}, the name 'apptainer pull' gives {pulled[1]}:{pulled[2]}"
        text = f"{pulled[1]}:{pulled[2]}"
    image = Located(text, rest[i].line, None, where)
    command = rest[i + 1:]
    if rest[1].text == "run" and (not command or command[0].text.startswith("-")):
        # ``run`` starts the image's runscript, a Docker image's ENTRYPOINT (apptainer's
        # docs, "run"): an engine image handed only options runs its server with them
        engine = entrypoint_engine(image.value, [w.text.partition("=")[0] for w in env],
                                   args_only=True)
        if engine is not None:
            command = [*(Word(word, image.line) for word in SERVER_PROGRAMS.get(engine, ())),
                       *command]
    return [*env, *command], _Container(image, None)


_PULLED_IMAGE = re.compile(r"([a-z0-9][a-z0-9.-]*)_([A-Za-z0-9][\w.-]{0,127})\.(?:sif|simg)")
"""``apptainer pull docker://vllm/vllm-openai:latest`` (and ``singularity pull``) writes
``vllm-openai_latest.sif``: the image's last name, ``_``, its tag (apptainer's docs, "pull":
the default output file is ``<name>_<tag>.sif``). The first ``_`` is taken to separate them:
the engines' image names hold none (vllm-openai, sglang, text-generation-inference,
tritonserver), a tag may (``v0.8.5_cu128``)."""


def _expanded(image: Located[str], env: Env) -> Located[str]:
    """The image with the script's variables set where the container starts
    (``text-generation-inference:$tgi_version`` after ``tgi_version=2.1.1``); as written
    when a variable in it is not known."""
    if "$" not in image.value:
        return image
    value = env.expand(image.value, k8s=False)
    return image if not isinstance(value, str) else replace(image, value=value)


def _names_program(command: Sequence[Word]) -> bool:
    """Whether a container's command starts with a program (an engine command, a shell, a
    Python) rather than the entrypoint's first argument (a model after ``vllm serve``)."""
    first = command[0].text.rsplit("/", 1)[-1]
    return find_engine([w.text for w in command]) is not None or first in SHELLS or \
        first.startswith("python")


_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def script_models(text: str, path: str) -> list[ServedModel]:
    """Every served model a shell script starts."""
    from kvlint.manifests.shell_arrays import file_commands

    slurm = slurm_gpus(text) if "#SBATCH" in text else None
    found = command_models([list(c) for c in file_commands(text)], text, path,
                           platform=slurm_variables(text, slurm) if "#SBATCH" in text
                           else None)
    if slurm is None:
        return found
    spans = slurm.nodes > 1 and _RAY_START.search(text) is not None
    return [_on_slurm_gpus(served, slurm, spans) for served in found]


_RAY_START = re.compile(r"(?m)^[^#\n]*\bray[ \t]+start\b")
"""A ``ray start`` the job runs (on its nodes through ``srun``, often in an ``sh -c``)."""


def _on_slurm_gpus(served: ServedModel, slurm: SlurmGpus, spans: bool) -> ServedModel:
    """A model the job starts without a container of its own takes the node's GPUs that the
    job's directives ask for (a ``docker run --gpus`` count still wins); every node's, when
    the job starts a Ray cluster on its nodes that the engine's ranks run on (``spans``)."""
    own = isinstance(served.gpus, Located) and not served.gpus.source.startswith(
        DERIVED_GPUS)
    nodes = slurm.nodes if spans else 1
    source = slurm.source + (f" x {nodes} nodes (#SBATCH --nodes; a Ray cluster on them)"
                             if nodes > 1 else "")
    gpus = served.gpus if own or slurm.count is None else \
        Located(slurm.count * nodes, slurm.line, None, source)
    kind = served.gpu_type or (Located(slurm.kind, slurm.line, None, slurm.source)
                               if slurm.kind else None)
    return replace(served, gpus=gpus, gpu_type=kind)


def command_models(commands: Sequence[list[Word]], text: str, path: str,
                   kind: str = "shell-script",
                   platform: Mapping[str, str] | None = None) -> list[ServedModel]:
    """Every served model the ``commands`` of a file (``text``, at ``path``) start, each a
    list of words with their lines, in order: a script's, or a Dockerfile's as a container
    runs it (kvlint/manifests/dockerfiles.py). ``platform``: variables the runner sets
    (a Slurm job's ``SLURM_GPUS_ON_NODE``)."""
    containers: dict[int, _Container] = {}
    rewritten: list[list[Word]] = []
    values = _PlainValues(text if kind == "shell-script" else "")
    ctx = DocumentContext(path, 0, Documents((text,)))
    calls = called_scripts(commands, ctx) if kind in HOST_KINDS else Calls(list(commands))
    for command in inline_scripts(calls.commands):
        run = _container_run(list(command), values)
        if run is None:
            rewritten.append(list(command))
            continue
        words, container = run
        for inner in inline_scripts([words]):  # docker run IMAGE bash -lc "..."
            containers[len(rewritten)] = container
            rewritten.append(inner)
    comments = frozenset(n for n, row in enumerate(text.splitlines()[:100_000], 1)
                         if row.lstrip().startswith("#"))
    pins = [pin for command in rewritten
            for pin in pip_pins(split_env_prefix(list(command))[1], _pin_env(command, values))]
    out: list[ServedModel] = []
    # a script runs in a user's shell, where HOME is always set: it expands to itself
    # (the NUL marks a "$" that is not expanded again), so "$HOME/venv/bin/vllm" still names
    # vLLM and a path under it keeps its words
    env = Env({}, {"HOME": "\x00HOME", **(platform or {})}, k8s=False)
    # a Ray cluster the script starts spans nodes: the visible devices are one node's
    cluster = any([w.text for w in split_env_prefix(list(c))[1][:2]] == ["ray", "start"]
                  for c in rewritten)
    project: dict[str, Located[str] | None] = {}
    running: list[tuple[EngineInvocation, _Container | None] | None] = []
    def image_of(position: int) -> str | None:
        container = containers.get(position)
        return container.image.value if container is not None else None

    for invocation in engine_invocations(rewritten, env, images=image_of, presets=True):
        nodes = invocation.args.nnodes
        one_node = not cluster and (nodes is None or
                                    (isinstance(nodes, Located) and nodes.value == 1))
        ran = containers.get(invocation.position)
        image = _expanded(ran.image, invocation.env) if ran else None
        version, notes = settle_version(invocation.engine, image, pins if not image else ())
        if version is None and image is None and kind in HOST_KINDS:
            if invocation.engine not in project:  # the project's files, read once per file
                project[invocation.engine] = _project_version(ctx, invocation.engine, None)
            pinned = project[invocation.engine]
            version = replace(pinned, line=invocation.line) if pinned is not None else None
        source = f"docker run {image.value}" if image else "script"
        args, settings, read = _config_file(invocation, ran, ctx, text)
        preset = invocation.alternative
        named = f"case {preset}" if preset else (invocation.iteration or "")
        served = served_model(
            Origin(ctx, kind, name=named, line=invocation.line),
            engine=Located(invocation.engine, invocation.line, None, source),
            args=args, image=image, version=version,
            hardware=Hardware(gpus=(ran.gpus if ran else None) or _bare_gpus(
                args, invocation.env, invocation.line, one_node)),
            notes=[*notes, *read, *_called(calls, invocation.line),
                   *([f"one of the script's presets: its case branch {preset})"]
                     if preset else []),
                   *([f"one server per pass of the loop on line {invocation.line}: this is "
                      f"the pass {invocation.iteration}"] if invocation.iteration else [])],
            **settings)
        detached = detached_options(rewritten, invocation.position, invocation.engine,
                                    comments)
        more = tuple(p for p in (detached, ran.problem if ran else None) if p is not None)
        out.append(replace(served, engine_problems=(*served.engine_problems, *more))
                   if more else served)
        # a server on other nodes or from a called script: not judged beside the others
        # (a preset is one of several the script may start, never beside the others)
        one_host = one_node and not _called(calls, invocation.line) and not preset
        running.append((invocation, ran) if one_host else None)
    if kind == "shell-script" and len(out) > 1:
        return _side_by_side(out, running, text)
    return out


def _side_by_side(out: list[ServedModel],
                  running: Sequence[tuple[EngineInvocation, _Container | None] | None],
                  text: str) -> list[ServedModel]:
    """``out`` with the vLLM servers the script runs side by side on a GPU judged
    (:mod:`.shared_gpus`, :mod:`.shell_jobs`)."""
    from kvlint.manifests.shared_gpus import Tenant, shared_gpu_problems, used_devices
    from kvlint.manifests.shell_jobs import ScriptLines

    lines = ScriptLines(text)
    tenants: list[Tenant] = []
    spans: dict[int, tuple[int, int, bool]] = {}
    for index, entry in enumerate(running):
        if entry is None:
            continue
        invocation, ran = entry
        if invocation.line is None:
            continue
        host = ran.devices if ran is not None else None
        inner = visible_device_list(invocation.env.get)
        if host is False or inner is False:
            continue
        visible: list[str] | None
        if inner is None:
            visible = list(host) if host is not None else None
        elif host is None:
            visible = inner
        else:  # the container's own variable picks among the GPUs Docker gave it
            visible = [host[int(d)] for d in inner if int(d) < len(host)]
        world = occupied_gpus(invocation.args, None, "")
        devices = used_devices(visible, world.value) if world is not None else None
        if devices is None or lines.in_function(invocation.line):
            continue
        first, last = lines.span([w.line for w in invocation.words if w.line] +
                                 ([ran.image.line] if ran and ran.image.line else []))
        spans[index] = (first, last, (ran is not None and ran.detached) or
                        lines.detached(first, last))
        tenants.append(Tenant(index, devices, invocation.line,
                              f"the server on line {invocation.line}"))

    def together(earlier: Tenant, later: Tenant) -> bool:
        _, last, detached = spans[earlier.index]
        return detached and spans[later.index][0] > last and \
            not lines.stops_between(last, spans[later.index][0])

    return shared_gpu_problems(out, tenants, together)


def _pin_env(command: Sequence[Word], values: _PlainValues) -> Env:
    """The plain-run values of the variables a ``pip install`` names its packages with
    (``text_generation_server-$TGI_VERSION-py3-none-any.whl``), for its pins."""
    if not any(w.text == "install" for w in command[:8]):
        return Env({}, k8s=False)
    names = {m.group(1) or m.group(2) for w in command[:256] if "$" in w.text
             for m in _VARIABLE.finditer(w.text)}
    found = {n: values.value("$" + n) for n in sorted(names)[:MAX_IMAGE_VARIABLES]}
    return Env({n: v for n, v in found.items() if v is not None}, k8s=False)


def _called(calls: Calls, line: int | None) -> list[str]:
    note = calls.notes.get(line)
    return [note] if note else []


HOST_KINDS = frozenset({"shell-script", "systemd-unit", "batch-file", "makefile",
                        "supervisor-program", "llama-swap"})
"""Files whose commands run on the host, from the project's environment (a Dockerfile's run in
the image it builds)."""


def _project_version(ctx: DocumentContext, engine: str, line: int | None
                     ) -> Located[str] | None:
    """The release the project's lock or requirements pin for a command run on the host
    (:mod:`.project_pins`)."""
    from kvlint.manifests.project_pins import project_pin

    found = project_pin(ctx, engine)
    if found is None:
        return None
    return Located(found[0], line, None,
                   f"{found[1]}, the project's pin (a command run from its environment)")


MAX_VOLUME_LOOKUPS = 16
"""Volumes of one container whose variables are looked up in the script's text."""


def _config_file(invocation: EngineInvocation, ran: _Container | None, ctx: DocumentContext,
                 text: str) -> tuple[EngineArgs, dict[str, Any], list[str]]:
    """The engine's config file read from the tree (:mod:`.config_files`): through the
    container's bind mounts, or the path itself for a command the script runs on the host
    (``$(pwd)/config.yaml``: beside the script)."""
    args = invocation.args
    ref = args.config_file
    if isinstance(ref, Unresolved) and ran is None and text:
        here = here_path(text, ref.text)
        if here is None:
            return args, {}, []
        ref = Located(here, ref.line, None, f"{ref.text} (the script's folder)")
        args = replace(args, config_file=ref)
    if not isinstance(ref, Located):
        return args, {}, []
    volumes: list[tuple[str, str]] | None = None
    if ran is not None:
        volumes = []
        for option, word in ran.volumes[:MAX_VOLUME_LOOKUPS]:
            raw = _REFERENCE_OR_HERE.sub(  # a few references per volume: bounded lookups
                lambda m: here_path(text, m.group(0)) or m.group(0), word.text, count=4)
            value = invocation.env.expand(raw, k8s=False)
            pair = docker_volume(option, value.strip("'\"")) if isinstance(value, str) \
                else None
            if pair is not None:
                volumes.append(pair)
    return follow_file_config(invocation.engine, args, ctx, volumes)


_REFERENCE_OR_HERE = re.compile(r"""(?:\$\(\s*pwd\s*\)|`pwd`|\$\{PWD\}|\$PWD)/[\w.@+-][\w./@+-]*"""
                                r"|\$\{?[A-Za-z_]\w{0,63}\}?")
"""A variable, or a path under the folder the script runs in, in a volume's text."""


def detached_options(commands: Sequence[list[Word]], index: int, engine: str,
                     comments: frozenset[int] = frozenset()) -> EngineArgProblem | None:
    """The options meant for the engine command ``commands[index]`` that a missing ``\\``
    cut off: the commands right after it (each starting on the line after the one before,
    or after comment-only lines, ``comments``: a comment ends the command, its own trailing
    ``\\`` included) whose first word is an option. The shell runs each as a command of its
    own, which fails (``--port: command not found``), and the engine starts without them."""
    from kvlint.manifests.engine_options import engine_display, known_options

    words = commands[index]
    last = words[-1].line
    cut: list[Word] = []
    commented: int | None = None
    for command in commands[index + 1:]:
        first = command[0]
        between = range(last + 1, first.line) if last is not None and first.line else range(0)
        if last is None or first.line is None or first.line <= last or \
                any(n not in comments for n in between) or \
                not first.text.startswith("-") or first.text in ("-", "--"):
            break
        if between and commented is None:
            commented = between[0]
        cut.extend(command)
        last = command[-1].line
    options = [w.text.split("=", 1)[0] for w in cut if w.text.startswith("-")]
    if not options:
        return None
    known = [o for o in options if o in known_options(engine)]
    name = engine_display(engine)
    shown = ", ".join(options[:6]) + (f" and {len(options) - 6} more" if len(options) > 6
                                      else "")
    line = cut[0].line
    if commented is not None:
        why = (f"line {commented} is a comment, which ends the {name} command (the shell "
               "reads its trailing \\ as part of the comment)")
        fix = f"Delete line {commented} or move it out of the command."
    else:
        why = f"line {words[-1].line} ends the {name} command without a trailing \\"
        fix = f"End line {words[-1].line} with ' \\'."
    return EngineArgProblem(
        "detached", options[0],
        f"{why}, so line {line} on is not part of it: the shell runs '{cut[0].text} ...' as a "
        f"command of its own ('{cut[0].text}: command not found') and {name} starts without "
        f"{shown}. {fix}",
        line, None, {"options": options, "known_options": known})


def _bare_gpus(args: EngineArgs, env: Env, line: int | None,
               one_node: bool) -> Located[int] | None:
    """The GPUs of a command that no container limits: the engine's world (tp x pp x dp),
    or fewer when the devices the script makes visible on this node (``CUDA_VISIBLE_DEVICES``
    and ROCm's) are fewer. One node's devices: not read for a server that spans nodes
    (``--nnodes``, a Ray cluster the script starts)."""
    return engine_gpus(args, line, "the script requests no GPU count",
                       visible_devices(env.get, line) if one_node else None)
