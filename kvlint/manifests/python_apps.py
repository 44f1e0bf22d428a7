"""Python programs that start an engine, read from their syntax tree (``ast``; nothing in them
is imported or run): a Modal, RunPod or Ray Serve app, a launcher script.

What is read:

* **commands**: a list or tuple of strings that is an engine command (``["vllm", "serve",
  MODEL, "--tensor-parallel-size", str(TP)]``, also two lists joined with ``+``), and a string
  that holds one (``subprocess.Popen("vllm serve ...", shell=True)``, an f-string); each is
  read as a script's command (:func:`~kvlint.manifests.shell_scripts.command_models`);
* **the engines' Python entry points** with keyword arguments: vLLM's ``LLM(...)``,
  ``EngineArgs(...)`` and ``AsyncEngineArgs(...)``, SGLang's ``Engine(...)`` (from ``sglang``
  or ``sgl``), and Ray Serve LLM's ``LLMConfig(model_loading_config=..., engine_kwargs=...)``
  (vLLM underneath). Each keyword is the engine's option of the same name (``_`` as ``-``), as
  the engine's argument class takes it. Only options kvlint knows are judged: an entry point
  takes keywords that are no command-line option, so an unknown one is no KV701.

A name is what the file assigns it (one value; two different ones make it unknown; a
``None`` placeholder set later, ``MODEL = None``, is not a value), ``str()``
and ``int()`` of a known value, ``+`` of two strings and f-strings whose parts are known.
``os.environ.get("X", "d")`` and ``os.getenv("X", "d")`` are the shell's ``${X:-d}``;
``os.environ["X"]`` is ``${X}``. Anything else (a call, an attribute, a parameter) is a
variable nobody set: unresolved, never a guess. The source is bounded by the manifest size
limit and a tree too deep for the parser is no model (the file is then KV904 when it runs an
engine).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import replace

from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.engine_programs import find_engine
from kvlint.manifests.runpod_workers import runpod_worker
from kvlint.manifests.shell_env import MAX_EXPANDED_CHARS
from kvlint.manifests.shell_scripts import command_models
from kvlint.manifests.shell_words import Word, split_script
from kvlint.manifests.triton_launch import triton_launch

__all__ = ["is_python", "python_models"]

_UNKNOWN = "${PYTHON_EXPRESSION}"
"""An expression kvlint does not evaluate: a variable the shell layer finds unset."""
_VLLM_CALLS = frozenset({"LLM", "EngineArgs", "AsyncEngineArgs"})
_SERVERS = {"vllm": ["vllm", "serve"], "sglang": ["python3", "-m", "sglang.launch_server"],
            "lmdeploy": ["lmdeploy", "serve", "api_server"]}
_LMDEPLOY_CALLS = frozenset({"pipeline", "AsyncEngine", "serve"})
"""LMDeploy's Python entry points (``lmdeploy.pipeline(model, backend_config=...)``,
``lmdeploy.serve.async_engine.AsyncEngine``, ``lmdeploy.serve``): the model first, the engine
settings in ``backend_config``."""
_LMDEPLOY_BACKENDS = {"TurbomindEngineConfig": "turbomind", "PytorchEngineConfig": "pytorch"}
"""LMDeploy's engine config classes (lmdeploy/messages.py), whose fields are the server's
options of the same names (``tp`` is ``--tp``, ``session_len`` ``--session-len``...)."""
_MODEL_OPTION = {"vllm": "--model", "sglang": "--model-path"}
_PIN = re.compile(r"(?:vllm|sglang(?:\[[\w,-]+\])?|lmdeploy|tensorrt[-_]llm)==[\w.+-]+")
_MODAL_GPU = re.compile(r"([A-Za-z][\w-]*?)[!+]?(?::(\d+))?[!+]?")
"""Modal's GPU string: ``TYPE[:COUNT]``; ``H100!`` is an H100 never upgraded to an H200 and
``B200+`` a B200 or better (modal.com/docs/guide/gpu): both are read as the named GPU."""
_COMMAND_HINT = re.compile(r"vllm|sglang|text-generation-launcher|lmdeploy|trtllm|llama-server")


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyw"))


class _Names:
    """The file's assignments of one name to one value."""

    def __init__(self, tree: ast.AST) -> None:
        self.values: dict[str, ast.expr | None] = {}
        self.memo: dict[str, str] = {}
        self.arguments: dict[str, ast.expr | None] = {}
        """The program's own command-line options (``parser.add_argument("--model",
        default="org/m")``) by ``dest``, with their defaults: ``args.model`` is the
        default unless the program is started with the option."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self._argument(node)
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if isinstance(value, ast.Constant) and value.value is None:
                    # MODEL = None, set later (if MODEL is None: MODEL = os.getenv(...)): a
                    # None is never a command's argument, so the other value is the one
                    continue
                known = self.values.get(target.id, value)
                same = known is not None and value is not None and \
                    ast.dump(known) == ast.dump(value)
                self.values[target.id] = value if target.id not in self.values or same \
                    else None

    def _argument(self, node: ast.Call) -> None:
        """Record an argparse ``add_argument`` call's ``dest`` and default (argparse: the
        ``dest`` keyword, else the first long option without ``--``, ``-`` as ``_``)."""
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            return
        options = [a.value for a in node.args if isinstance(a, ast.Constant)
                   and isinstance(a.value, str)]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        dest_node = keywords.get("dest")
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
            dest = dest_node.value
        else:
            long = next((o for o in options if o.startswith("--")), None)
            if long is None:
                return
            dest = long[2:].replace("-", "_")
        if not dest.isidentifier():
            return
        default = keywords.get("default")
        known = self.arguments.get(dest, default)
        same = known is not None and default is not None and ast.dump(known) == ast.dump(default)
        self.arguments[dest] = default if dest not in self.arguments or same else None

    def text(self, node: ast.expr | None, depth: int = 0) -> str:
        """The string ``node`` evaluates to, or a shell reference kvlint cannot resolve."""
        if node is None or depth > 20:
            return _UNKNOWN
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) \
                and not isinstance(node.value, bool):
            return str(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "self":
            # a class attribute read through the instance (``model_path = "org/m"`` in the
            # class body, ``self.model_path`` in a method): one value, or unknown
            return self._name(node.attr, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.attr in self.arguments:
            # the program's own option (``args.model``): its default, as a variable with a
            # default (the program may be started with another value)
            default = self.arguments[node.attr]
            said = self.text(default, depth + 1) if default is not None else ""
            return f"${{{node.attr}:-{said}}}" if said and "${" not in said \
                else f"${{{node.attr}}}"
        if isinstance(node, ast.JoinedStr):
            return _bounded("".join(self.text(v.value if isinstance(v, ast.FormattedValue)
                                              else v, depth + 1) for v in node.values))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _bounded(self.text(node.left, depth + 1) + self.text(node.right, depth + 1))
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Subscript) and _dotted(node.value) == "os.environ":
            key = self.text(node.slice, depth + 1)
            return f"${{{key}}}" if key.isidentifier() else _UNKNOWN
        return _UNKNOWN

    def _name(self, name: str, depth: int) -> str:
        """A name's string, worked out once: a parameter, an import, a name given two values
        or one whose value grows past :data:`~kvlint.manifests.shell_env.MAX_EXPANDED_CHARS`
        (``A = B + B``, ``B = C + C``...) is a variable nobody set, under its own name (the
        finding then says which)."""
        if name not in self.memo:
            self.memo[name] = f"${{{name}}}"  # itself while being worked out: unknown
            value = self.values.get(name)
            text = self.text(value, depth + 1) if value is not None else f"${{{name}}}"
            self.memo[name] = text if len(text) <= MAX_EXPANDED_CHARS else f"${{{name}}}"
        return self.memo[name]

    def _call(self, node: ast.Call, depth: int) -> str:
        name = _dotted(node.func)
        if name in ("str", "int") and len(node.args) == 1:
            return self.text(node.args[0], depth + 1)
        if name in ("os.environ.get", "os.getenv") and node.args:
            key = self.text(node.args[0], depth + 1)
            if not key.isidentifier():
                return _UNKNOWN
            if len(node.args) > 1:
                default = self.text(node.args[1], depth + 1)
                return f"${{{key}}}" if "${" in default else f"${{{key}:-{default}}}"
            return f"${{{key}}}"
        return _UNKNOWN

    def words(self, node: ast.expr, depth: int = 0) -> list[str] | None:
        """The strings of a list or tuple (``+`` of two), or ``None`` (also for a command
        longer than :data:`~kvlint.manifests.shell_env.MAX_EXPANDED_CHARS` in all)."""
        if depth > 20:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return None
            return _within([self.text(e) for e in node.elts])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.words(node.left, depth + 1), self.words(node.right, depth + 1)
            return None if left is None or right is None else _within(left + right)
        if isinstance(node, ast.Name):
            value = self.values.get(node.id)
            return None if value is None else self.words(value, depth + 1)
        return None


def _within(words: list[str]) -> list[str] | None:
    return words if sum(map(len, words)) <= MAX_EXPANDED_CHARS else None


def _bounded(text: str) -> str:
    """``text``, or an unknown value when it is longer than any engine argument."""
    return text if len(text) <= MAX_EXPANDED_CHARS else _UNKNOWN


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _built(tree: ast.AST, names: _Names, inside: set[int]) -> Iterator[list[Word]]:
    """Commands built in steps: ``cmd = ["vllm", "serve", M]`` then, in the same block,
    ``cmd += [...]``, ``cmd.extend([...])`` and ``cmd.append(x)`` (a step inside an ``if``
    or a loop is not taken: which branch runs is not known here)."""
    for holder in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if not isinstance(block, list):
                continue
            for index, statement in enumerate(block):
                if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                        and isinstance(statement.targets[0], ast.Name)):
                    continue
                words = names.words(statement.value)
                if not words or not _runs_engine(words):
                    continue
                name = statement.targets[0].id
                command = [Word(w, statement.value.lineno) for w in words]
                for later in block[index + 1:]:
                    step = _step(later, name, names)
                    if step is None:
                        break  # reassigned: a new command
                    command += step
                inside.update(id(n) for n in ast.walk(statement.value))
                yield command


def _step(statement: ast.stmt, name: str, names: _Names) -> list[Word] | None:
    """The words ``statement`` adds to the list ``name`` ([] when none); ``None`` when it
    assigns ``name`` anew."""
    if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in statement.targets):
        return None
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) and \
            statement.target.id == name and isinstance(statement.op, ast.Add):
        added = names.words(statement.value) or [_UNKNOWN]
        return [Word(w, statement.lineno) for w in added]
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and \
            _dotted(statement.value.func) in (f"{name}.extend", f"{name}.append") and \
            len(statement.value.args) == 1:
        arg = statement.value.args[0]
        added = (names.words(arg) or [_UNKNOWN]) if _dotted(statement.value.func).endswith(
            "extend") else [names.text(arg)]
        return [Word(w, statement.lineno) for w in added]
    return []


def _runs_engine(words: list[str]) -> bool:
    """Whether a command's words run an engine: one :func:`find_engine` knows, or Triton
    with the TensorRT-LLM backend (:mod:`.triton_launch`)."""
    return find_engine(words) is not None or \
        triton_launch([Word(w, None) for w in words]) is not None


def _commands(tree: ast.AST, names: _Names) -> Iterator[list[Word]]:
    """Engine commands written as lists or strings, each word on its node's line."""
    inside: set[int] = set()
    yield from _built(tree, names, inside)
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.BinOp)):
            words = names.words(node)
            if words and _runs_engine(words):
                inside.update(id(n) for n in ast.walk(node))
                yield [Word(w, node.lineno) for w in words]
                continue
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and \
                (not isinstance(node, ast.Constant) or isinstance(node.value, str)):
            text = names.text(node)
            if " " in text and _COMMAND_HINT.search(text):
                inside.update(id(n) for n in ast.walk(node))
                for command in split_script(text, line=node.lineno):
                    if find_engine([w.text for w in command]) is not None:
                        yield command


def _option_words(engine: str, keywords: list[ast.keyword], names: _Names,
                  line: int) -> list[Word]:
    out: list[Word] = []
    for keyword in keywords:
        if keyword.arg is None:
            continue  # **kwargs: not known
        value = keyword.value
        option = "--" + keyword.arg.replace("_", "-")
        if keyword.arg == "model" and engine == "sglang":
            option = "--model-path"
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            if value.value:
                out.append(Word(option, getattr(value, "lineno", line)))
            continue
        if isinstance(value, ast.Constant) and value.value is None:
            continue
        if isinstance(value, ast.Dict):
            literal = _literal(value)
            text = json.dumps(literal) if literal is not None else _UNKNOWN
        else:
            text = names.text(value)
        out += [Word(option, value.lineno), Word(text, value.lineno)]
    return out


def _literal(node: ast.expr) -> object | None:
    try:
        value: object = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value


def _keywords_of(node: ast.expr | None, names: _Names) -> list[ast.keyword] | None:
    """``dict(a=1)`` or ``{"a": 1}`` (or a name assigned one) as keywords."""
    if isinstance(node, ast.Name):
        node = names.values.get(node.id)
    if isinstance(node, ast.Call) and _dotted(node.func) == "dict":
        return list(node.keywords)
    if isinstance(node, ast.Dict):
        out = []
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.append(ast.keyword(arg=key.value, value=value))
        return out
    return None


def _forwarding_classes(tree: ast.AST) -> frozenset[str]:
    """Classes that pass their keyword arguments on to vLLM's engine arguments
    (``AsyncEngineArgs(**kwargs)`` in a method: a Ray Serve deployment wrapping vLLM)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
                isinstance(call, ast.Call)
                and _dotted(call.func).rsplit(".", 1)[-1] in _VLLM_CALLS
                and any(k.arg is None for k in call.keywords)
                for call in ast.walk(node)):
            out.add(node.name)
    return frozenset(out)


def _entry_points(tree: ast.AST, names: _Names) -> Iterator[list[Word]]:
    """The engines' Python entry points, rewritten as their server commands; and the
    keywords given to a class that forwards them to vLLM (``Deployment.bind(model=...)``)."""
    forwarding = _forwarding_classes(tree)
    sglang_names, lmdeploy_names = (
        {alias.asname or alias.name for node in ast.walk(tree)
         if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package
         for alias in node.names} for package in ("sglang", "lmdeploy"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        line = node.lineno
        owner = name.rsplit(".", 1)[0] if last in ("bind", "remote") else name
        if owner in forwarding and last != "__init__":
            engine, keywords = "vllm", list(node.keywords)
        elif last in _VLLM_CALLS:
            engine, keywords = "vllm", list(node.keywords)
            if node.args:
                keywords.insert(0, ast.keyword(arg="model", value=node.args[0]))
        elif name in ("sgl.Engine", "sglang.Engine") or \
                (last == "Engine" and "sglang" in name) or \
                (last == "ServerArgs" and (name != last or "ServerArgs" in sglang_names)):
            # SGLang's ServerArgs dataclass is its server's options, field by field
            # (sglang/srt/server_args.py: --model-path is the field model_path)
            engine, keywords = "sglang", list(node.keywords)
        elif last == "LLMConfig":
            engine, keywords = "vllm", _llm_config(node, names)
        elif last in _LMDEPLOY_CALLS and (name.startswith("lmdeploy.") or
                                          last in lmdeploy_names):
            engine, keywords = "lmdeploy", _lmdeploy_call(node, names)
        else:
            continue
        if not any(k.arg in ("model", "model_path") for k in keywords):
            continue
        program = [Word(w, line) for w in _SERVERS[engine]]
        if engine == "lmdeploy":  # lmdeploy serve api_server MODEL [options]
            model = next(k.value for k in keywords if k.arg == "model")
            program.append(Word(names.text(model), getattr(model, "lineno", line)))
            keywords = [k for k in keywords if k.arg != "model"]
        yield program + _option_words(engine, keywords, names, line)


def _lmdeploy_call(node: ast.Call, names: _Names) -> list[ast.keyword]:
    """An LMDeploy entry point's model (its first argument, or ``model_path``) and the fields
    of its ``backend_config`` (a ``TurbomindEngineConfig(...)``/``PytorchEngineConfig(...)``
    call, or a name assigned one), with ``--backend`` from the class."""
    given = {k.arg: k.value for k in node.keywords if k.arg}
    model = node.args[0] if node.args else given.get("model_path")
    if model is None:
        return []
    out = [ast.keyword(arg="model", value=model)]
    config = given.get("backend_config")
    if isinstance(config, ast.Name):
        config = names.values.get(config.id)
    if isinstance(config, ast.Call):
        backend = _LMDEPLOY_BACKENDS.get(_dotted(config.func).rsplit(".", 1)[-1])
        if backend is not None:
            value = ast.Constant(backend, lineno=config.lineno)
            out.append(ast.keyword(arg="backend", value=value))
            out += [k for k in config.keywords if k.arg and k.arg != "model_name"]
    return out


def _llm_config(node: ast.Call, names: _Names) -> list[ast.keyword]:
    """Ray Serve LLM's ``LLMConfig``: the model from ``model_loading_config`` (its
    ``model_source``, else its ``model_id``), the options from ``engine_kwargs``."""
    given = {k.arg: k.value for k in node.keywords if k.arg}
    loading = _keywords_of(given.get("model_loading_config"), names) or []
    source = {k.arg: k.value for k in loading}
    model = source.get("model_source") or source.get("model_id")
    if model is None:
        return []
    engine = [k for k in _keywords_of(given.get("engine_kwargs"), names) or []
              if k.arg != "model"]
    return [ast.keyword(arg="model", value=model), *engine]


def _ray_accelerators(tree: ast.AST, names: _Names
                      ) -> list[tuple[int, int, Located[str]]]:
    """``(first line, last line, GPU type)`` of each Ray Serve LLM ``LLMConfig(
    accelerator_type="T4")``: the GPU type Ray schedules the replica's workers on."""
    out: list[tuple[int, int, Located[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] == "LLMConfig":
            value = next((k.value for k in node.keywords if k.arg == "accelerator_type"), None)
            text = names.text(value) if value is not None else ""
            if value is not None and text and re.fullmatch(r"[\w.-]{1,40}", text):
                out.append((node.lineno, node.end_lineno or node.lineno,
                            Located(text, value.lineno, None, "LLMConfig accelerator_type")))
    return out


def _longest(commands: list[list[Word]]) -> list[list[Word]]:
    """Without a command that starts another one (``base = ["vllm", "serve", M]`` and
    ``cmd = base + ["--tensor-parallel-size", "2"]`` are one command)."""
    texts = [[w.text for w in c] for c in commands]
    return [c for i, c in enumerate(commands)
            if not any(j != i and len(t) > len(texts[i]) and t[:len(texts[i])] == texts[i]
                       for j, t in enumerate(texts))]


def _runpod(tree: ast.AST, names: _Names) -> Iterator[tuple[list[Word], str | None, int]]:
    """RunPod pods (``runpod.create_pod(...)`` or a dict of its arguments): the container
    run as ``docker run --gpus gpu_count image_name docker_args``, and ``gpu_type_id``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            given = {k.arg: k.value for k in node.keywords if k.arg}
        elif isinstance(node, ast.Dict):
            given = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        else:
            continue
        if "image_name" not in given:
            continue
        image = names.text(given["image_name"])
        if "docker_args" not in given and runpod_worker(image) is None:
            continue  # a worker image needs no arguments: its environment configures it
        count = names.text(given["gpu_count"]) if "gpu_count" in given else "1"
        line = given["image_name"].lineno
        run = [Word(w, line) for w in ("docker", "run", "--gpus",
                                       count if count.isdigit() else "all")]
        env = given.get("env")
        if isinstance(env, ast.Dict):
            for key, value in zip(env.keys, env.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and \
                        value is not None:
                    run += [Word("-e", value.lineno),
                            Word(f"{key.value}={names.text(value)}", value.lineno)]
        run.append(Word(image, line))
        if "docker_args" in given:
            args = names.text(given["docker_args"])
            for command in split_script(args, line=given["docker_args"].lineno):
                run.extend(command)
        kind = names.text(given["gpu_type_id"]) if "gpu_type_id" in given else None
        yield run, None if kind is None or "${" in kind else kind, line


def _registry_pins(tree: ast.AST, pinned: set[str]) -> list[Word]:
    """The engine release of a Modal image built on an engine's own image
    (``modal.Image.from_registry("openmmlab/lmdeploy:v0.4.2")``), as the pin it amounts to,
    for an engine no ``==`` pin names (``pinned``: the engines pinned): a later unpinned
    ``.pip_install("lmdeploy[all]")`` keeps it, since pip leaves an installed requirement as
    it is without ``--upgrade`` (pip's ``install`` reference: "-U, --upgrade  Upgrade all
    specified packages to the newest available version")."""
    from kvlint.manifests.images import ROLLING_VERSIONS, engine_from_image, pip_package

    upgraded = any(isinstance(node, ast.Constant) and isinstance(node.value, str) and
                   re.search(r"(?:^|\s)(?:-U|--upgrade)(?:\s|$)", node.value)
                   for node in ast.walk(tree))
    out: list[Word] = []
    for node in ast.walk(tree):
        if upgraded or not (isinstance(node, ast.Call) and
                            _dotted(node.func).rsplit(".", 1)[-1] == "from_registry"):
            continue
        image = node.args[0] if node.args else None
        if not (isinstance(image, ast.Constant) and isinstance(image.value, str)):
            continue
        engine, version, _ = engine_from_image(image.value)
        package = pip_package(engine)
        if engine and package and version and version not in ROLLING_VERSIONS and \
                engine not in pinned and re.fullmatch(r"[\w.+-]+", version):
            out.append(Word(f"{package}=={version}", node.lineno))
            pinned.add(engine)
    return out


def _defaulted(text: str) -> str:
    """``text`` with each ``${X:-default}`` (``os.getenv("X", "default")``) read as its
    default, as compose and the shell layer read one the file's own run does not set."""
    return re.sub(r"\$\{[A-Za-z_]\w*:-([^${}]*)\}", lambda m: m.group(1), text)


def _pins(tree: ast.AST, names: _Names) -> list[Word]:
    """``pip install`` of the engine pins the program names (a Modal image's
    ``.pip_install("vllm==0.10.1")``, ``f"vllm=={VLLM_VERSION}"`` of a name the file sets,
    or the engine image it starts from), as a command the script layer reads pins from."""
    pins = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                _PIN.fullmatch(node.value):
            pins.append(Word(node.value, node.lineno))
        elif isinstance(node, ast.JoinedStr):
            text = _defaulted(names.text(node))
            if _PIN.fullmatch(text):
                pins.append(Word(text, node.lineno))
    from kvlint.manifests.images import engine_from_pip

    pinned = {found[0] for p in pins if (found := engine_from_pip(p.text)) is not None}
    pins += _registry_pins(tree, pinned)
    return [Word("pip", pins[0].line), Word("install", pins[0].line), *pins] if pins else []


def _modal_gpus(tree: ast.AST, names: _Names) -> list[tuple[int, int, str, int, int]]:
    """``(first line, last line, GPU type, count, line)`` of each Modal function or class
    that asks for GPUs (``@app.function(gpu="H100:2")``, ``gpu=modal.gpu.A100(count=4)``),
    and of each BentoML service (``@bentoml.service(resources={"gpu": 1, ...})``)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            called = _dotted(decorator.func)
            if called in ("bentoml.service", "service"):
                asked = _bento_gpus(decorator, names)
            elif called.rsplit(".", 1)[-1] in ("function", "cls"):
                value = next((k.value for k in decorator.keywords if k.arg == "gpu"), None)
                found = _gpu_of(value, names) if value is not None else None
                asked = (*found, value.lineno) if found is not None and value is not None \
                    else None
            else:
                continue
            if asked is not None:
                out.append((node.lineno, node.end_lineno or node.lineno, *asked))
    return out


def _bento_gpus(decorator: ast.Call, names: _Names) -> tuple[str, int, int] | None:
    """``(GPU type, count, line)`` of ``@bentoml.service(resources={"gpu": 1, "gpu_type":
    "nvidia-a100-80gb"})`` (BentoML's service resources; the type in BentoCloud's names,
    Google Cloud's accelerator names): ``None`` without a GPU count."""
    resources = next((k.value for k in decorator.keywords if k.arg == "resources"), None)
    if not isinstance(resources, ast.Dict):
        return None
    given = {names.text(k): v for k, v in zip(resources.keys, resources.values, strict=True)
             if k is not None}
    count = _count(names.text(given["gpu"])) if "gpu" in given else None
    if not count:
        return None
    kind = names.text(given["gpu_type"]) if "gpu_type" in given else ""
    return ("" if "${" in kind else kind), count, given["gpu"].lineno


def _gpu_of(value: ast.expr, names: _Names) -> tuple[str, int] | None:
    if isinstance(value, (ast.List, ast.Tuple)):
        # fallbacks in order of preference (modal.com/docs/examples/gpu_fallbacks): the
        # function must hold on each, so the one with the least GPU memory is judged
        options = [_gpu_of(v, names) for v in value.elts]
        if not options or any(o is None for o in options):
            return None
        return min((o for o in options if o is not None), key=_fallback_memory)
    if isinstance(value, ast.Call) and _dotted(value.func).startswith(("modal.gpu.", "gpu.")):
        count = next((k.value for k in value.keywords if k.arg == "count"), None)
        number = _count(names.text(count)) if count is not None else 1
        return (_dotted(value.func).rsplit(".", 1)[-1], number) if number is not None else None
    match = _MODAL_GPU.fullmatch(_defaulted(names.text(value)))
    number = _count(match.group(2) or "1") if match is not None else None
    return (match.group(1), number) if match is not None and number is not None else None


def _count(text: str) -> int | None:
    """A GPU count written as digits (``None`` for anything else, or more than four digits:
    no machine has that many, and a longer string would pass Python's int-conversion
    limit)."""
    return int(text) if text.isdigit() and len(text) <= 4 else None


def _fallback_memory(option: tuple[str, int]) -> tuple[int, int]:
    """GPU memory of one Modal fallback (per GPU, then in all); unknown GPUs sort last."""
    from kvlint.model.hardware import find_gpu

    try:
        per_gpu = find_gpu(option[0]).memory_bytes
    except (KeyError, ValueError):
        return (2**62, 2**62)
    return (per_gpu, per_gpu * option[1])


def _on_modal_gpus(found: list[ServedModel], gpus: list[tuple[int, int, str, int, int]]
                   ) -> list[ServedModel]:
    """Each model with the GPUs of the Modal function it runs in (the only one asking for
    GPUs, when the command is built outside it)."""
    out = []
    for served in found:
        where = [g for g in gpus if g[0] <= (served.line or 0) <= g[1]] or \
            (gpus if len(gpus) == 1 else [])
        if len(where) != 1:
            out.append(served)
            continue
        _, _, kind, count, line = where[0]
        out.append(replace(served, gpus=Located(count, line, None, "the app's gpu="),
                           gpu_type=served.gpu_type or (
                               Located(kind, line, None, "the app's gpu=") if kind else None)))
    return out


def python_models(text: str, path: str) -> list[ServedModel]:
    """Every served model a Python program starts (see the module's docstring)."""
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    names = _Names(tree)
    try:
        commands = list(_commands(tree, names))
        api = list(_entry_points(tree, names))
    except RecursionError:
        return []
    pins = _pins(tree, names)
    commands = _longest(commands)
    found = command_models([pins, *commands] if pins else commands, text, path,
                           kind="python-app") if commands else []
    if api:
        accelerators = _ray_accelerators(tree, names)
        for served in command_models([pins, *api] if pins else api, text, path,
                                     kind="python-app"):
            # keywords that are no command-line option are not refused by the entry point
            problems = tuple(p for p in served.engine_problems if p.kind != "option")
            accel = next((a for first, last, a in accelerators
                          if first <= (served.line or 0) <= last), None)
            found.append(replace(served, engine_problems=problems,
                                 gpu_type=served.gpu_type or accel))
    for run, kind, line in _runpod(tree, names):
        for served in command_models([run], text, path, kind="python-app"):
            found.append(replace(served, gpu_type=served.gpu_type or (
                Located(kind, line, None, "RunPod gpu_type_id") if kind else None)))
    gpus = _modal_gpus(tree, names)
    found = _on_modal_gpus(found, gpus) if gpus else found
    python = _modal_python(tree, names)
    return _python_refusals(found, pins, python) if python and pins else found


_MODAL_PYTHON_CALLS = frozenset({"debian_slim", "micromamba", "from_registry", "from_dockerhub",
                                 "from_aws_ecr", "from_gcp_artifact_registry"})
"""Modal's image constructors that take the image's Python (``python_version=``, or
``add_python=`` for a registry image; without it the deploying machine's own Python)."""


def _modal_python(tree: ast.AST, names: _Names) -> tuple[str, int] | None:
    """``(X.Y, line)``: the one Python the file's Modal images are built with, when it says."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or \
                node.func.attr not in _MODAL_PYTHON_CALLS:
            continue
        for keyword in node.keywords:
            if keyword.arg in ("python_version", "add_python"):
                text = names.text(keyword.value).strip()
                if re.fullmatch(r"3\.\d{1,2}", text):
                    found.setdefault(text, keyword.value.lineno)
    return next(iter(found.items())) if len(found) == 1 else None


def _python_refusals(found: list[ServedModel], pins: list[Word], python: tuple[str, int]
                     ) -> list[ServedModel]:
    """KV709 on each served model of an engine whose exact pin the Modal image's Python
    cannot install (:func:`.image_pythons.pin_refusal`)."""
    from kvlint.manifests.engine_launch import pip_pins
    from kvlint.manifests.image_pythons import pin_refusal
    from kvlint.manifests.shell_env import Env

    version, line = python
    out = list(found)
    for pin in pip_pins(pins, Env({}, k8s=False)):
        problem = pin_refusal(pin, version, f"the Modal image's python_version, line {line}")
        if problem is not None:
            out = [replace(s, engine_problems=(*s.engine_problems, problem))
                   if s.engine is not None and s.engine.value == pin.engine else s
                   for s in out]
    return out
