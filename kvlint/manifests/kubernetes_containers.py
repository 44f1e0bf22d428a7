"""What the containers of a Kubernetes pod run: the engine each starts, read from its
``command`` + ``args`` (exec form, an ``sh -c`` script, a launcher that wraps an engine), else
from the entrypoint of an engine image whose ``args`` are the server's flags; its environment
(``env``, ``envFrom`` of a ConfigMap in the same file; Kubernetes ``$(VAR)`` references
expanded); and the engine config file it reads from a ConfigMap mounted into it.

The pod machinery :mod:`.kubernetes`, :mod:`.kubernetes_crds`, :mod:`.operators` and
:mod:`.platforms` build their served models on.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kvlint.manifests.accelerators import image_family
from kvlint.manifests.base import DocumentContext, Located, ManifestProblem, Unresolved, named
from kvlint.manifests.cli_options import engine_of_options
from kvlint.manifests.config_files import apply_config
from kvlint.manifests.engine_command import EngineArgs, judge_known_options_only, parse_engine_args
from kvlint.manifests.engine_env import engine_invocations, with_env
from kvlint.manifests.engine_launch import (
    Pin,
    entrypoint_problem,
    image_engine,
    pip_pins,
    settle_version,
)
from kvlint.manifests.heredocs import expand_heredocs
from kvlint.manifests.images import entrypoint_engine, tools_server
from kvlint.manifests.pod_gpus import pod_gpus
from kvlint.manifests.runpod_workers import worker_command
from kvlint.manifests.shell_arrays import script_commands
from kvlint.manifests.shell_env import VISIBLE_GPUS, Env, env_from_k8s
from kvlint.manifests.shell_words import Word, split_env_prefix
from kvlint.manifests.siblings import sibling_documents
from kvlint.manifests.trtllm_configs import FREE_FRACTION_NOTE
from kvlint.manifests.yaml_marks import LDict, LList, LStr, load_documents
from kvlint.manifests.yaml_values import (
    get_list,
    get_map,
    get_str,
    is_object,
    item_line,
    key_line,
    node_line,
    object_name,
)
from kvlint.model.engine_args import EngineArgProblem

__all__ = [
    "FILLED_IN",
    "HF_SERVER_FLAGS",
    "Run",
    "container_env",
    "container_run",
    "container_runs",
    "embedded_yaml",
    "flat_words",
    "follow_config",
    "image_of",
    "no_column",
    "rename_flags",
]

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ash", "ksh"})


def no_column(value: Any) -> Any:
    """Drop the column of a value read from an embedded YAML string (columns there are
    relative to the string, not to the manifest)."""
    if isinstance(value, Located | Unresolved):
        return replace(value, column=None)
    return value


# ============================================================================================
# containers -> engine runs
# ============================================================================================


@dataclass
class Run:
    """An engine started by one container."""

    engine: Located[str]
    args: EngineArgs
    line: int | None
    container: dict[str, Any]
    image: Located[str] | None
    version: Located[str] | Unresolved | None
    notes: list[str] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)
    """ServedModel fields set by what the launcher is (a Triton model repository...)."""
    problems: tuple[EngineArgProblem, ...] = ()
    """What the container runtime refuses before the engine reads its options (a program
    handed to the engine image's ENTRYPOINT, options given as the command)."""


def image_of(container: Any) -> Located[str] | None:
    image = container.get("image") if isinstance(container, dict) else None
    if not isinstance(image, str) or not image.strip():
        return None
    return Located(str(image).strip(), node_line(image) or key_line(container, "image"),
                   getattr(image, "column", None), "image")


def _items(value: Any) -> list[tuple[Word, Any]]:
    """The words of an exec-form ``command``/``args`` list (each with its raw item, so a
    script keeps its YAML style)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    out: list[tuple[Word, Any]] = []
    for i, item in enumerate(value):
        if item is None or isinstance(item, dict | list):
            continue
        text = ("true" if item else "false") if isinstance(item, bool) else str(item)
        out.append((Word(text, node_line(item) or item_line(value, i),
                         column=getattr(item, "column", None) or None), item))
    return out


def _shell_script(argv: list[tuple[Word, Any]]) -> tuple[Any, list[Word]] | None:
    """``sh -c [--] SCRIPT [$0 ARGS...]``: the script (raw item) and the words after it."""
    if not argv or os.path.basename(argv[0][0].text) not in SHELLS:
        return None
    for i in range(1, len(argv)):
        text = argv[i][0].text
        if text.startswith("-") and not text.startswith("--") and "c" in text[1:]:
            at = i + 1
            if at < len(argv) and argv[at][0].text == "--":  # bash -lc -- SCRIPT
                at += 1
            if at < len(argv):
                return argv[at][1], [w for w, _ in argv[at + 1:]]
            return None
        if not text.startswith("-"):
            return None
    return None


def _split(script: Any, line: int | None) -> list[list[Word]]:
    try:
        return script_commands(script if isinstance(script, LStr) else str(script),
                               None if isinstance(script, LStr) else line)
    except (ValueError, IndexError):
        return [[Word(part, line) for part in str(script).split()]]


def _positionals(commands: list[list[Word]], extra: list[Word]) -> list[list[Word]]:
    """``$0``/``$@``/``$*`` of an ``sh -c`` script are the words after the script."""
    if not extra:
        return commands
    out = []
    for command in commands:
        words: list[Word] = []
        for word in command:
            if word.text == "$0":
                words.append(extra[0])
            elif word.text in ("$@", "$*", "${@}", "${*}"):
                words.extend(extra[1:])
            else:
                words.append(word)
        out.append(words)
    return out


def rename_flags(words: Sequence[Word], names: Mapping[str, str]) -> list[Word]:
    out = []
    for word in words:
        name, eq, value = word.text.partition("=")
        if name in names:
            text = names[name] + (eq + value if eq else "")
            out.append(Word(text, word.line, split=word.split, literal=word.literal,
                            column=word.column))
        else:
            out.append(word)
    return out


HF_SERVER_FLAGS = {"--model_id": "--model", "--model-id": "--model", "--model_dir": "--model",
              "--model-dir": "--model", "--model_name": "--served-model-name",
              "--model-name": "--served-model-name"}
_TRITON_FLAGS = {"--tp": "--tp_size", "--pp": "--pp_size", "--tensor_parallel_size": "--tp_size",
                 "--pipeline_parallel_size": "--pp_size"}


def _launcher(command: list[Word], image_engine_key: str | None
              ) -> tuple[list[Word], str, dict[str, Any]] | None:
    """Launchers that run an engine under another name, rewritten as that engine's command
    (the words keep their lines), with a note and the fields the launcher itself settles:

    - KServe ``python -m huggingfaceserver``: vLLM backend; ``--model_id``/``--model_dir``
      name the model, ``--model_name`` the served name;
    - the multinode Triton TensorRT-LLM example's launcher (a ``server.py`` with a
      ``tensorrtllm_backend`` model repository): ``--tp``/``--pp`` are its world layout, the
      model is whatever was built into the repository (``tritonserver`` and the backend's
      ``launch_triton_server.py`` are read before this, by :mod:`.triton_launch`);
    - a wrapper binary named after the engine of its image (``/llamacpp-leader -- FLAGS``).
    """
    _prefix, words = split_env_prefix(command)
    texts = [w.text for w in words]
    if not words:
        return None
    for i, text in enumerate(texts[:-1]):
        if re.fullmatch(r"python(\d+(\.\d+)*)?", os.path.basename(text)) and \
                texts[i + 1] == "-m" and i + 2 < len(texts) and \
                texts[i + 2] == "huggingfaceserver":
            rest = words[i + 3:]
            backend = next((w.text.split("=", 1)[1] for w in rest
                            if w.text.startswith("--backend=")), None)
            if backend not in (None, "vllm", "auto"):
                return None
            head = [Word("python3", words[i].line), Word("-m", words[i].line),
                    Word("vllm.entrypoints.openai.api_server", words[i + 2].line)]
            return head + rename_flags(rest, HF_SERVER_FLAGS), (
                "KServe huggingfaceserver: its vLLM backend serves the model "
                "(--model_id/--model_dir are read as the model)"), {}
    joined = " ".join(texts)
    if "tensorrtllm_backend" in joined:
        at = next((i for i, t in enumerate(texts) if t.endswith(".py")), None)
        if at is not None:
            flags = [w for w in words[at + 1:] if w.text.startswith("-")]
            repo = next((t.split("=", 1)[1] for t in texts
                         if t.startswith(("--triton_model_repo_dir=", "--model_repo=",
                                          "--model-repository="))), "")
            model = Unresolved("the Triton TensorRT-LLM launcher serves the engines built "
                               "into its model repository; the manifest does not name the "
                               "model", words[at].line, None, repo or texts[at])
            return [Word("trtllm-serve", words[at].line),
                    *rename_flags(flags, _TRITON_FLAGS)], (
                f"Triton TensorRT-LLM backend launcher {texts[at]}: its --tp/--pp flags are "
                "the engines' world layout"), {"model": model}
    program = re.sub(r"[^a-z0-9]", "", os.path.basename(texts[0]).lower())
    stems = {"llamacpp": ("llamacpp", "llamaserver"), "vllm": ("vllm",),
             "sglang": ("sglang",), "tgi": ("textgeneration",), "lmdeploy": ("lmdeploy",),
             "trtllm": ("trtllm", "tensorrtllm")}
    if image_engine_key is not None and any(s in program
                                            for s in stems.get(image_engine_key, ())):
        rest = words[1:]
        if "--" in texts[1:]:
            rest = words[texts.index("--", 1) + 1:]
        program_word = {"llamacpp": "llama-server", "tgi": "text-generation-launcher",
                        "trtllm": "trtllm-serve"}.get(image_engine_key)
        if program_word is None:
            return None
        return [Word(program_word, words[0].line), *rest], (
            f"{texts[0]} is a wrapper named after the {image_engine_key} engine of its "
            "image; the flags after it are read as the engine's"), {}
    return None


def flat_words(value: Any) -> list[Word]:
    """The words of a ``command``/``args`` value, a string item holding several words (a
    script, a folded command) split shell-style."""
    out: list[Word] = []
    for word, raw in _items(value):
        if isinstance(raw, str) and len(str(raw).split()) > 1:
            out.extend(w for command in _split(raw, word.line) for w in command)
        else:
            out.append(word)
    return out


def _env_from(container: Any, ctx: DocumentContext) -> dict[str, str | None]:
    """``envFrom: [configMapRef: NAME]`` of a ConfigMap in the same file or a YAML file
    beside it (:func:`_configmap_data`)."""
    out: dict[str, str | None] = {}
    for item in get_list(container, "envFrom") or []:
        ref = get_map(item, "configMapRef")
        data = _configmap_data(ctx, get_str(ref, "name") or "",
                               ref_line=getattr(item, "line", 0)) if ref else None
        prefix = get_str(item, "prefix") or ""
        for key, value in (data or {}).items():
            if isinstance(value, str):
                out[prefix + str(key)] = value
    return out


def container_env(container: Any, ctx: DocumentContext,
                  extra: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
    values: dict[str, str | None] = dict(extra or {})
    values.update(_env_from(container, ctx))
    with contextlib.suppress(TypeError, ValueError):
        values.update(env_from_k8s(
            get_list(container, "env") or [],
            lambda name, key: _config_value(ctx, name, key,
                                            ref_line=getattr(container, "line", 0))))
    # a value a deploy script fills in (``__EXTRA_ARGS__``, as ``sed`` does) is not known
    return {k: None if v is not None and FILLED_IN.fullmatch(v) else v
            for k, v in values.items()}


FILLED_IN = re.compile(r"__[A-Z][A-Z0-9_]*__")
"""A placeholder a deploy script fills in before the file is applied (``__MODEL__``)."""


def container_runs(pod: Any, ctx: DocumentContext, *,
                   platform: Mapping[str, str] | None = None,
                   extra_env: Mapping[str, str | None] | None = None,
                   containers: Sequence[Any] | None = None) -> list[Run]:
    """The engines the containers of ``pod`` start (usually one; sidecars start none)."""
    found = []
    for container in containers if containers is not None else (
            get_list(pod, "containers") or []):
        if isinstance(container, dict):
            run = container_run(container, ctx, platform=platform, extra_env=extra_env)
            if run is not None:
                found.append(run)
    return found


def container_run(container: dict[str, Any], ctx: DocumentContext, *,
                  platform: Mapping[str, str] | None = None,
                  extra_env: Mapping[str, str | None] | None = None) -> Run | None:
    """The engine one container starts, or ``None``."""
    image = image_of(container)
    img_engine, _v, img_note = image_engine(image.value) if image else (None, None, "")
    if img_engine is None and image is not None and "text-embeddings" in image.value:
        return None
    # what nvidia-smi -L lists in the container: the GPUs the device plugin gives it
    given = pod_gpus(None, [container])[0]
    env = Env(container_env(container, ctx, extra_env),
              {**(platform or {}),
               **({VISIBLE_GPUS: str(given.value)} if isinstance(given, Located) else {})})
    command = _items(container.get("command"))
    args = _items(container.get("args"))
    if not command and image is not None and \
            tools_server(image.value, [w.text for w, _ in args]):  # llama.cpp full: -s
        args = [(Word("llama-server", args[0][0].line), "llama-server"), *args[1:]]
    notes: list[str] = []
    problems: list[EngineArgProblem] = []
    if command and image is not None and command[0][0].text.startswith("-") and \
            entrypoint_engine(image.value, env.values, args_only=True) is not None:
        # command replaces the image's ENTRYPOINT (the Kubernetes API: "command" is the
        # entrypoint array): the runtime executes the first option as a program
        program = command[0][0]
        problems.append(EngineArgProblem(
            "option", program.text, f"the container's command replaces the ENTRYPOINT of "
            f"{image.value} (its server), so the runtime runs {program.text!r} as a program "
            "and the container fails to start (executable file not found); give these words "
            "as args, which the image's entrypoint receives", program.line, program.column,
            {"reason": "command-is-options", "image": image.value}))
        command, args = [], [*command, *args]
    elif not command and args and image is not None:
        clash = entrypoint_problem(image, [w for w, _ in args],
                                   "the container sets no command")
        if clash is not None:  # reported once; the command meant is read, as compose does
            problems.append(clash)
            if args[0][0].text == "serve":  # vllm serve's own word: the options after it
                args = args[1:]
            else:
                command, args = args, []
    options_only = bool(args) and args[0][0].text.startswith("-")
    entry = entrypoint_engine(image.value, env.values, args_only=options_only) \
        if image and not command else None
    why = f"entrypoint of image {image.value}" if image else ""
    inferred = False
    if entry is None and image is not None and options_only and not command and \
            img_engine is None and image_family(image) is None:
        # a custom image given only options: the engine whose own options they are (its
        # entrypoint may be a wrapper with options of its own: those are not judged)
        entry = engine_of_options([w.text for w, _ in args])
        why = f"options only the {entry} server takes, given to image {image.value}"
        inferred = True
    worker = worker_command(image.value, env, image.line) \
        if image is not None and entry is not None else None
    if worker is not None:  # RunPod's worker: the engine's options come from the environment
        notes.extend(worker.notes)
        problems.extend(worker.problems)
        args = [(w, w.text) for w in worker.words]
    if entry is not None:
        # the image's entrypoint is the server: args are its flags
        parsed = with_env(parse_engine_args(entry, [w for w, _ in args], env), env)
        parsed = judge_known_options_only(parsed) if inferred else parsed
        assert image is not None
        engine = Located(entry, image.line, image.column, why)
        version, more = settle_version(entry, image)
        return Run(engine, parsed, image.line, container, image, version,
                   notes + more + list(parsed.notes), problems=tuple(problems))
    argv = command + args
    if not argv:
        return None
    script = _shell_script(argv)
    if script is not None:
        raw, extra = script
        commands = expand_heredocs(_positionals(_split(raw, node_line(raw)), extra))
    else:
        commands = [[w for w, _ in argv]]
    invocations = engine_invocations(
        commands, env, images=lambda _position: image.value if image else None)
    overrides: dict[str, Any] = {}
    translated = False
    if not invocations:
        for i, cmd in enumerate(commands):
            rewritten = _launcher(cmd, img_engine)
            if rewritten is not None:
                translated = True
                notes.append(rewritten[1])
                overrides = dict(rewritten[2])
                scripts = [c[0].text for c in commands[:i] if c and c[0].text.endswith(".sh")]
                model = overrides.get("model")
                if scripts and isinstance(model, Unresolved):
                    overrides["model"] = replace(model, text=scripts[-1], reason=(
                        f"{model.reason}: {scripts[-1]}, run before it, prepares the "
                        f"repository ({model.text or 'its path'}) and is not in the manifest"))
                invocations = engine_invocations([*commands[:i], rewritten[0]], env)
                break
    if not invocations:
        return None
    first = invocations[0]
    if len(invocations) > 1:
        engines = sorted({inv.engine for inv in invocations})
        notes.append(f"{len(invocations)} engine commands ({', '.join(engines)}); the first "
                     f"(line {first.line}) is reported")
    pins: list[Pin] = []
    for cmd in commands:
        pins.extend(pip_pins(cmd, env))
    version, more = settle_version(first.engine, image, pins)
    notes.extend(more)
    if image is not None and img_engine is None and not pins and not img_note:
        notes.append(f"image {image.value} is not an engine image: the {first.engine} "
                     "version is unknown")
    where = "sh -c script" if script is not None else "container command"
    engine = Located(first.engine, first.line, None, where)
    if first.engine == "llamacpp" and first.args.model is None and image is not None and \
            "model" not in overrides:
        overrides["model"] = Unresolved(
            "llama-server has no default model and none is given: it is built into the image "
            "or its wrapper (the image name may say which)", first.line, None, image.value)
    judged = judge_known_options_only(first.args) if translated else first.args
    joined = _joins_ray_cluster(commands)
    if joined is not None and "gpus" not in overrides:
        # the engine's ranks run on a Ray cluster this pod joins: its GPUs are the cluster's
        overrides["gpus"] = Unresolved(
            f"the container joins a Ray cluster ({joined}) before it starts the engine: the "
            "ranks run on that cluster's GPUs, which this pod's request alone does not show",
            first.line, None, joined)
    return Run(engine, judged, first.line, container, image, version,
               notes + list(first.args.notes), overrides, tuple(problems))


def _joins_ray_cluster(commands: Sequence[Sequence[Word]]) -> str | None:
    """``ray start --address=...`` in a container's script: the words, or ``None``."""
    for cmd in commands:
        words = [w.text for w in cmd]
        if words[:2] == ["ray", "start"] and any(w.startswith("--address") for w in words):
            return " ".join(words[:3])
    return None


# ============================================================================================
# ConfigMaps and engine config files
# ============================================================================================


def _config_value(ctx: DocumentContext, name: str, key: str, *,
                  ref_line: int | None = None) -> str | None:
    """``data[key]`` of the ConfigMap ``name`` (:func:`_configmap_data`), when it is text."""
    value = (_configmap_data(ctx, name, ref_line=ref_line) or {}).get(key)
    return value if isinstance(value, str) else None


def _configmap_data(ctx: DocumentContext, name: str, *, ref_line: int | None = None
                    ) -> dict[str, Any] | None:
    """The ``data`` of the ConfigMap ``name`` of this file; with ``ref_line`` (the line of
    the reference), else of a YAML file beside it in the workload's namespace (none named on
    either side counts as the same: a kustomization sets one for all), its text values
    placed on that line of this file and nothing else taken from it."""
    for doc in named(ctx.documents, name):
        if is_object(doc, ("v1",), ("ConfigMap",)) and object_name(doc) == name:
            return get_map(doc, "data") or {}
    if ref_line is None or not name:
        return None
    workload = ctx.documents[ctx.index] if ctx.index < len(ctx.documents) else None
    space = get_str(get_map(workload, "metadata") or {}, "namespace")
    for _file, documents in sibling_documents(ctx):
        for doc in documents:
            if not (is_object(doc, ("v1",), ("ConfigMap",)) and object_name(doc) == name):
                continue
            theirs = get_str(get_map(doc, "metadata") or {}, "namespace")
            if theirs is None or space is None or theirs == space:
                data = get_map(doc, "data") or {}
                return {str(k): LStr(str(v), ref_line) for k, v in data.items()
                        if isinstance(v, str)}
    return None


def _shift(obj: Any, offset: int, seen: set[int] | None = None) -> None:
    """Move the lines of a YAML value parsed from an embedded string to the manifest's."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, LStr):
        obj.line += offset
        obj.end_line += offset
    elif isinstance(obj, LDict):
        obj.line += offset
        obj.key_lines = {k: (v[0] + offset, v[1]) for k, v in obj.key_lines.items()}
        obj.value_lines = {k: (v[0] + offset, v[1]) for k, v in obj.value_lines.items()}
        for value in obj.values():
            _shift(value, offset, seen)
    elif isinstance(obj, LList):
        obj.line += offset
        obj.item_lines = [(v[0] + offset, v[1]) for v in obj.item_lines]
        for value in obj:
            _shift(value, offset, seen)


def embedded_yaml(text: Any, path: str) -> tuple[dict[str, Any] | None, str]:
    """A YAML mapping written inside a string of the manifest (a ConfigMap's ``data``,
    ``serveConfigV2``), with lines moved to the manifest's; or ``None`` and why not."""
    if not isinstance(text, str):
        return None, "it is not a string"
    docs = load_documents(str(text), path)
    if isinstance(docs, ManifestProblem):
        return None, docs.message
    found = next((d for d in docs if isinstance(d, dict)), None)
    if found is None:
        return None, "it holds no YAML mapping"
    line = getattr(text, "line", 0)
    if line:
        style = getattr(text, "style", None)
        _shift(found, line if style in ("|", ">") else line - 1)
    return found, ""


def _mounted_configmap(path: str, container: Any, pod: Any) -> tuple[str, str, str] | None:
    """``(configmap name, key, mount path)`` of a file a container sees at ``path``."""
    for mount in get_list(container, "volumeMounts") or []:
        mount_path = get_str(mount, "mountPath") or get_str(mount, "mountPoint")
        name = get_str(mount, "name")
        if not mount_path or not name:
            continue
        mount_path = mount_path.rstrip("/") or "/"
        sub = get_str(mount, "subPath")
        if sub and path == mount_path:
            relative = sub
        elif path.startswith(mount_path + "/"):
            relative = path[len(mount_path) + 1:]
        else:
            continue
        for volume in get_list(pod, "volumes") or []:
            if get_str(volume, "name") != name:
                continue
            sources = [get_map(volume, "configMap")] + [
                get_map(s, "configMap") for s in get_list(get_map(volume, "projected"),
                                                          "sources") or []]
            for source in sources:
                cm_name = get_str(source, "name")
                if not cm_name:
                    continue
                key = relative
                for item in get_list(source, "items") or []:
                    if get_str(item, "path") == relative and get_str(item, "key"):
                        key = str(get_str(item, "key"))
                return cm_name, key, mount_path
    return None


def follow_config(run: Run, pod: Any, ctx: DocumentContext
                  ) -> tuple[EngineArgs, dict[str, Any], list[str]]:
    """The engine config file of ``run`` read from a ConfigMap of this file: the updated
    arguments (the command line wins for vLLM/SGLang; the TensorRT-LLM options file wins
    over its command line), field overrides, notes."""
    args = run.args
    ref = args.config_file
    if ref is None:
        return args, {}, []
    if isinstance(ref, Unresolved):
        return replace(args, config_file=None), {}, [
            f"engine config file {ref.text} is not resolved ({ref.reason}): its settings are "
            "not read"]
    path = str(ref.value)
    mounted = _mounted_configmap(path, run.container, pod)
    data = _configmap_data(ctx, mounted[0]) if mounted else None
    text = data.get(mounted[1]) if data is not None and mounted else None
    if mounted is None or text is None:
        why = ("the file is not mounted from a ConfigMap of this manifest" if mounted is None
               else f"ConfigMap {mounted[0]} with key {mounted[1]} is not in this file")
        return replace(args, config_file=None), {}, [
            f"engine config file {path} (line {ref.line}) is not read: {why}"]
    conf, problem = embedded_yaml(text, ctx.path)
    cm_name, key, _mount = mounted
    where = f"ConfigMap {cm_name} {key}"
    if conf is None:
        return replace(args, config_file=None), {}, [
            f"engine config file {path} from {where} is not read: {problem}"]
    notes = [f"engine config {path} read from {where} (line {node_line(text)}), mounted "
             f"into the container"]
    applied, settings = apply_config(run.engine.value, args, conf, where)
    settings = {k: no_column(v) for k, v in settings.items()}
    if "gpu_memory_utilization" in settings:
        notes.append(FREE_FRACTION_NOTE)
    return applied, settings, notes
