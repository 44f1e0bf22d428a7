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
from dataclasses import dataclass, replace

from kvlint.engines.release_dates import newest
from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.engine_launch import Pin, pip_pins, settle_version
from kvlint.manifests.image_pythons import exact_pin, newest_for_python, pin_refusal, stage_python
from kvlint.manifests.runpod_workers import runpod_worker
from kvlint.manifests.shell_env import Env, bounded_sub
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script
from kvlint.model.engine_args import EngineArgProblem

__all__ = ["Stage", "dockerfile_models", "is_dockerfile", "last_stage"]

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
        # no shell: "${VAR}" reaches the program as written (the Dockerfile reference, "Exec
        # form": it "does not invoke a command shell" nor substitute variables)
        return True, [[Word(item, line, literal=True) for item in items]]
    commands = [list(c) for c in split_script(argument, line=line - 1, style="|") if c]
    return (False, commands) if commands else None


_BAD_ESCAPE = re.compile(r'\\(?![\"\\/bfnrtu])')
"""A backslash JSON does not allow before the next character (``\\$i``)."""


def _not_json(written: tuple[str, int] | None) -> tuple[str, list[str]] | None:
    """``(JSON's complaint, the words meant)`` for an ``ENTRYPOINT``/``CMD`` written as an
    exec-form array that is not valid JSON only for a backslash JSON does not take (a shell's
    ``\\$i`` inside a string). Docker parses exec form as JSON and runs anything else as
    shell form (the Dockerfile reference, "Shell and exec form"), so ``/bin/sh -c`` runs the
    whole array as text: its first word ``["bash",`` is no program and the container exits."""
    if written is None or not written[0].startswith("[") or not written[0].endswith("]"):
        return None
    try:
        json.loads(written[0])
        return None
    except (ValueError, RecursionError) as err:
        complaint = str(err)
    try:
        items = json.loads(_BAD_ESCAPE.sub(r"\\\\", written[0]))
    except (ValueError, RecursionError):
        return None
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        return None
    return complaint, items


_BUILD_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_PIP = re.compile(r"(?:^|[\s;&|(])(?:uv\s+)?pip3?\s+install\b|python[\d.]*\s+-m\s+pip\s+install")


def _build_time(value: str, known: dict[str, str]) -> str:
    """``value`` with the ``ARG``s and ``ENV``s set so far put in, as the builder substitutes
    them in ``ENV`` (the Dockerfile reference, "Environment replacement"); others stay. A
    value that would grow past :data:`MAX_EXPANDED_CHARS` (``ENV X=$X$X`` over and over)
    stays as written."""
    return bounded_sub(_BUILD_VARIABLE,
                       lambda m: known.get(m.group(1) or m.group(2), m.group(0)), value, value)


def _pip_installs(argument: str, line: int) -> list[list[Word]]:
    """The ``pip install`` commands of a ``RUN`` (engine pins: what the image runs)."""
    if argument.startswith("[") or not _PIP.search(argument):
        return []
    return [list(c) for c in split_script(argument, line=line - 1, style="|") if c and any(
        w.text.rsplit("/", 1)[-1].startswith("pip") for w in c[:3])]


@dataclass(frozen=True)
class Stage:
    """The last stage of a Dockerfile: its base image, its ``ENV`` settings (``NAME=value``
    words on their lines, ``ARG`` defaults and earlier ``ENV``s put in as the build does), its
    ``RUN pip install`` commands, and its last ``ENTRYPOINT`` and ``CMD`` as written (with
    their lines; a new ``ENTRYPOINT`` resets ``CMD``, the Dockerfile reference)."""

    base: str
    line: int
    env: tuple[Word, ...]
    installs: tuple[list[Word], ...]
    entrypoint: tuple[str, int] | None
    cmd: tuple[str, int] | None
    runs: tuple[tuple[str, int], ...] = ()
    """The stage's ``RUN`` instructions as written (with their lines): what the build runs."""

    @property
    def variables(self) -> dict[str, str]:
        """The ``ENV`` settings by name (the last one wins)."""
        return {w.text.partition("=")[0]: w.text.partition("=")[2] for w in self.env}

    @property
    def entrypoint_words(self) -> tuple[Word, ...] | None:
        return _run_words(self.entrypoint)

    @property
    def cmd_words(self) -> tuple[Word, ...] | None:
        return _run_words(self.cmd)


def _run_words(written: tuple[str, int] | None) -> tuple[Word, ...] | None:
    """One instruction's words as the container runs them: exec form as written, shell
    form as ``/bin/sh -c "..."``."""
    if written is None:
        return None
    argument, line = written
    if argument.startswith("["):
        form = _form(argument, line)
        return tuple(form[1][0]) if form is not None else None
    return (Word("/bin/sh", line), Word("-c", line), Word(argument, line)) \
        if argument.strip() else None


def last_stage(text: str) -> Stage | None:
    """The last stage of a Dockerfile (``None``: no ``FROM``)."""
    base: tuple[str, int] | None = None
    known: dict[str, str] = {}
    env: list[Word] = []
    installs: list[list[Word]] = []
    runs: list[tuple[str, int]] = []
    entrypoint: tuple[str, int] | None = None
    cmd: tuple[str, int] | None = None
    for instruction, argument, line in _instructions(text):
        if instruction == "FROM":
            words = [w for w in argument.split() if not w.startswith("--")]
            base = (words[0], line) if words else None
            env, installs, runs, entrypoint, cmd = [], [], [], None, None
        elif instruction == "ARG":
            name, _, value = argument.partition("=")
            if value and re.fullmatch(r"\w+", name.strip()):
                known.setdefault(name.strip(), value.strip().strip("'\""))
        elif instruction == "RUN":
            # the ARGs and ENVs of the stage are the RUN shell's environment: a pin written
            # "sglang[srt]==${SGLANG_VERSION}" installs the ARG's default on a plain build
            installs += _pip_installs(_build_time(argument, known), line)
            runs.append((argument, line))
        elif instruction == "ENV":
            for name, value in _env_pairs(argument):
                value = _build_time(value.strip().strip("'\""), known)
                known[name] = value
                env.append(Word(f"{name}={value}", line))
        elif instruction == "ENTRYPOINT":
            entrypoint, cmd = (argument, line), None
        elif instruction == "CMD":
            cmd = (argument, line)
    if base is None:
        return None
    return Stage(base[0], base[1], tuple(env), tuple(installs), entrypoint, cmd, tuple(runs))


def _env_pairs(argument: str) -> list[tuple[str, str]]:
    """``ENV NAME=value ...`` or the older ``ENV NAME value``."""
    if "=" in argument.split(maxsplit=1)[0]:
        return [(p.partition("=")[0], p.partition("=")[2]) for p in argument.split()
                if "=" in p]
    name, _, value = argument.partition(" ")
    return [(name, value.strip())]


def dockerfile_models(text: str, path: str) -> list[ServedModel]:
    """Every served model the last stage of a Dockerfile starts (:func:`last_stage`): its
    ``ENV`` is the process's environment, and the stage's ``RUN pip install`` pins say which
    engine release the image holds."""
    stage = last_stage(text)
    if stage is None:
        return []
    image = (stage.base, stage.line)
    env = list(stage.env)
    entrypoint = _form(*stage.entrypoint) if stage.entrypoint is not None else None
    cmd = _form(*stage.cmd) if stage.cmd is not None else None
    broken: list[EngineArgProblem] = []
    for name, written in (("ENTRYPOINT", stage.entrypoint), ("CMD", stage.cmd)):
        meant = _not_json(written)
        if meant is None or written is None:
            continue
        form = (True, [[Word(item, written[1], literal=True) for item in meant[1]]])
        entrypoint, cmd = (form, cmd) if name == "ENTRYPOINT" else (entrypoint, form)
        broken.append(EngineArgProblem(
            "option", name, f"{name} is not valid JSON ({meant[0]}): Docker runs it as a shell "
            f"command, /bin/sh -c '{written[0][:24]}...', whose first word "
            f"{written[0].split()[0]!r} is no program, so the container exits at start and the "
            "server below never runs; write the backslash JSON's way (\\\\$ for \\$) or drop it",
            written[1], None, {"reason": "exec-form-not-json", "instruction": name}))
    cleared = entrypoint is not None and entrypoint[0] and not any(entrypoint[1])
    if cleared:
        # ENTRYPOINT []: the base image's is cleared, and CMD runs as the command itself
        entrypoint = None
        if cmd is not None and cmd[0]:
            cmd = (False, cmd[1])
    if entrypoint is not None:
        exec_form, commands = entrypoint
        if exec_form and cmd is not None and cmd[0]:  # exec CMD: the entrypoint's arguments
            commands = [[*commands[0], *cmd[1][0]]]
    elif cmd is not None and not cmd[0]:  # shell-form CMD: what /bin/sh -c runs
        commands = cmd[1]
        if stage.cmd is not None and not cleared:
            broken.extend(_shell_cmd_to_server(image, stage.cmd))
    elif cmd is not None or runpod_worker(image[0]) is not None:
        # docker run IMAGE CMD...: the image's own entrypoint takes CMD (a RunPod worker base
        # needs none: its entrypoint starts the engine from the ENV)
        flags = [w for pair in env for w in (Word("-e", pair.line), pair)]
        commands = [[Word("docker", image[1]), Word("run", image[1]), *flags,
                     Word(image[0], image[1]), *(cmd[1][0] if cmd is not None else [])]]
        env = []
    else:
        return _built_servers(stage, text, path)
    installs = list(stage.installs)
    found = command_models([*installs, *([*env, *c] for c in commands)], text, path,
                           kind="dockerfile")
    pins = [pin for words in installs for pin in pip_pins(words, Env({}, k8s=False))]
    literal = {w.text for c in commands for w in c if w.literal and _VARIABLE.search(w.text)}
    cpu = _llamacpp_cpu_build(text, stage)
    python = stage_python(stage.base, stage.runs)
    if python is not None:
        broken.extend(p for pin in pins if (p := pin_refusal(pin, *python)) is not None)
    out = [_unexpanded(_on_python(_from_base(_on_cpu(served, cpu), image, pins), pins, python),
                       literal) for served in found]
    return [replace(served, engine_problems=(*served.engine_problems, *broken))
            for served in out] if broken else out


def _on_python(served: ServedModel, pins: list[Pin], found: tuple[str, str] | None
               ) -> ServedModel:
    """An unpinned (or ranged) ``pip install`` of the engine on a known Python installs the
    newest release whose Requires-Python that Python meets, not the newest release
    (``pip install vllm`` on Python 3.8 gets 0.6.3.post1)."""
    version = served.engine_version
    if found is None or served.engine is None or not isinstance(version, Located) or \
            not version.source.startswith("pip "):
        return served
    pin = next((p for p in pins if p.engine == served.engine.value), None)
    if pin is None or exact_pin(pin):
        return served
    python, why = found
    spec = re.sub(r"^[\w.-]+(?:\[[^\]]*\])?", "", pin.spec).strip()
    release = newest_for_python(pin.engine, spec, python)
    if release is None or release in (version.value, newest(pin.engine)):
        return served  # the Python does not hold the install back
    return replace(served, engine_version=Located(
        release, pin.line, None, f"pip {pin.spec} on Python {python} ({why}): the newest "
        "release whose Requires-Python it meets, which later releases leave behind"))


def _built_servers(stage: Stage, text: str, path: str) -> list[ServedModel]:
    """The servers a Dockerfile with no ``CMD`` or ``ENTRYPOINT`` starts in a ``RUN``: the
    build runs them (with no GPU, and waits for them to exit, which a server never does),
    and the image's container starts none of them: KV701 on each."""
    from kvlint.manifests.engine_options import engine_display

    found: list[ServedModel] = []
    for argument, line in stage.runs[:64]:
        commands = [[*stage.env, *c] for c in split_script(argument, line=line) if c]
        for served in command_models([*stage.installs, *commands], text, path,
                                     kind="dockerfile"):
            engine = engine_display(served.engine.value) if served.engine else "engine"
            problem = EngineArgProblem(
                "option", "RUN", f"RUN starts the {engine} server while the image builds: "
                "docker build runs it with no GPU and waits "
                "for it to exit, which a server never does, and the image (no CMD or "
                "ENTRYPOINT) starts nothing; make the command the image's CMD",
                line, None, {"reason": "server-at-build", "instruction": "RUN"})
            found.append(replace(served, engine_problems=(*served.engine_problems, problem)))
    return found


def _shell_cmd_to_server(image: tuple[str, int], cmd: tuple[str, int]
                         ) -> list[EngineArgProblem]:
    """KV701 for a shell-form ``CMD`` in a Dockerfile that sets no ``ENTRYPOINT`` on an
    engine image whose exec-form ENTRYPOINT is its server (vllm-openai, TGI, llama.cpp's
    server): Docker hands ``["/bin/sh", "-c", CMD]`` to that ENTRYPOINT as its arguments
    (the Dockerfile reference, "Understand how CMD and ENTRYPOINT interact"), so the server
    gets ``/bin/sh`` as its first argument and the command meant never runs."""
    from kvlint.manifests.engine_launch import entrypoint_problem

    words = [Word("/bin/sh", cmd[1]), Word("-c", cmd[1]), Word(cmd[0], cmd[1])]
    problem = entrypoint_problem(
        Located(image[0], image[1], None, "FROM"), words,
        "the Dockerfile sets no ENTRYPOINT and its CMD is in shell form (/bin/sh -c CMD; "
        "ENTRYPOINT [] before it would run the command)")
    return [problem] if problem is not None else []


_LLAMACPP_BUILD = re.compile(r"\bcmake\s+(?:--build|-B|-S|\.\.)|\bmake\s+(?:-j|llama|server|"
                             r"LLAMA_|GGML_|GPU)")
_GPU_BACKEND = re.compile(
    r"(?:GGML|LLAMA)_(?:CUDA|CUBLAS|HIP|HIPBLAS|VULKAN|SYCL|METAL|MUSA|CANN|OPENCL|"
    r"KOMPUTE|CLBLAST|RPC)\b")
"""The build options that give llama.cpp a GPU backend (docs/build.md: ``-DGGML_CUDA=ON``,
``-DGGML_HIP=ON``, ``-DGGML_VULKAN=ON``, ``-DGGML_SYCL=ON``...; the older ``LLAMA_CUBLAS``
/ ``LLAMA_CUDA`` / ``LLAMA_HIPBLAS`` / ``LLAMA_VULKAN`` / ``LLAMA_CLBLAST`` spellings)."""
_GPU_BASE = re.compile(r"cuda|rocm|nvidia|oneapi|intel|vulkan|musa|cann|ascend|gpu",
                       re.IGNORECASE)


def _llamacpp_cpu_build(text: str, stage: Stage) -> int | None:
    """The line of the ``RUN`` that builds llama.cpp when the Dockerfile builds it with no
    GPU backend and runs it on a base image of no GPU runtime (``FROM ubuntu:22.04``): a
    CPU build, which uses no GPU whatever ``-ngl`` says; ``None`` otherwise."""
    if _GPU_BASE.search(stage.base) or _GPU_BACKEND.search(text):
        return None
    for instruction, argument, line in _instructions(text):
        if instruction == "RUN" and _LLAMACPP_BUILD.search(argument):
            return line
    return None


def _on_cpu(served: ServedModel, line: int | None) -> ServedModel:
    if line is None or served.engine is None or served.engine.value != "llamacpp":
        return served
    source = ("llama.cpp built in this Dockerfile with no GPU backend (no -DGGML_CUDA, "
              "-DGGML_HIP, -DGGML_VULKAN...) on a base image without a GPU runtime: a CPU "
              "build")
    return replace(served, gpus=Located(0, line, None, source),
                   gpu_type=Located("CPU", line, None, source))


_VARIABLE = re.compile(r"\$(?:\{\w+\}|[A-Za-z_]\w*)")


def _unexpanded(served: ServedModel, literal: set[str]) -> ServedModel:
    """A model an exec-form ``ENTRYPOINT``/``CMD`` names by a variable (``"${MODEL_NAME}"``):
    no shell runs, so the engine is handed the text as written and finds no such model."""
    model = served.model
    if not isinstance(model, Located) or str(model.value) not in literal:
        return served
    problem = EngineArgProblem(
        "value", "--model", f"the exec-form (JSON array) command hands {model.value!r} to the "
        "engine as written: no shell runs to expand it (the Dockerfile reference, exec form), "
        "so no model of that name loads; use the shell form, or wrap the command in "
        '["sh", "-c", "..."]', model.line, model.column,
        {"reason": "exec-form-variable", "value": str(model.value)})
    return replace(served, engine_problems=(*served.engine_problems, problem))


def _from_base(served: ServedModel, base: tuple[str, int], pins: list[Pin]) -> ServedModel:
    """A command the last stage runs (``ENTRYPOINT python3 -m vllm...``, or ``CMD`` given to
    the base image's entrypoint) runs in the image this Dockerfile builds: its version is
    the one the stage's ``RUN pip install`` pins, else the base image's tag."""
    if served.engine is None or (served.image is not None and served.image.value != base[0]):
        return served  # no engine, or a container of another image the command starts
    version = served.engine_version
    if isinstance(version, Located) and version.source.startswith("pip "):
        return served
    image = Located(base[0], base[1], None, "FROM")
    found, notes = settle_version(served.engine.value, image, pins)
    return replace(served, image=served.image or image,
                   engine_version=found if found is not None else version,
                   notes=(*served.notes, *(n for n in notes if n not in served.notes)))
