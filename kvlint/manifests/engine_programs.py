"""Which engine a command starts, from its words alone: :func:`find_engine` (``vllm serve``,
``python -m sglang.launch_server``, ``text-generation-launcher``...), for
:mod:`.engine_command` and every reader of scripts. A program that only mentions an engine
(``echo``, ``pip install``, ``pkill -f llama-server``, ``command -v llama-server``, ``hash
vllm``) starts none; bash's ``command`` runs the program after it, except with ``-v``/``-V``
(which only say where it is: bash(1), SHELL BUILTIN COMMANDS), so it is not one of those. The
reserved words a condition or loop begins with (``if ! command -v vllm``) are not programs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["WRAPPER_MODULES", "find_engine", "find_program", "only_mentions",
           "takes_its_line"]

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_VARIABLE = re.compile(r"\$\{?[A-Za-z_]\w{0,63}\}?")
_PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "-c"})
_MODULES = {
    "vllm.entrypoints.openai.api_server": "vllm",
    "vllm.entrypoints.api_server": "vllm",
    "dynamo.vllm": "vllm",
    "sglang.launch_server": "sglang",
    "dynamo.sglang": "sglang",
    "dynamo.trtllm": "trtllm",
    "sglang_router.launch_server": "sglang",  # the router and SGLang servers, one command
    "trl.scripts.vllm_serve": "vllm",
}
WRAPPER_MODULES = frozenset({"dynamo.vllm", "dynamo.sglang", "dynamo.trtllm",
                              "sglang_router.launch_server", "trl.scripts.vllm_serve",
                              "vllm-serve"})
"""Modules (and ``trl vllm-serve``) that parse the engine's options and their own (Dynamo's,
the router's, TRL's): options the engine does not know are theirs, not reported. TRL's are
vLLM's with underscores (trl/scripts/vllm_serve.py@1.16.0 ``ScriptArguments``)."""
_NOT_COMMANDS = frozenset({"echo", "printf", "pip", "pip3", "uv", "apt-get", "apt", "conda",
                           "grep", "which", "test", "[", "[[", "cat", "ls", "pkill", "pgrep",
                           "killall", "kill", "ps", "pidof", "type", "tail", "hash",
                           "whereis", "realpath", "readlink", "chmod", "ln", "cp", "mv", "rm",
                           "curl", "wget", "head", "sed", "awk", "wc", "touch", "stat", "file"})
_RESERVED = frozenset({"if", "elif", "then", "else", "while", "until", "do", "!", "{", "(",
                       "time"})
"""Words that begin a command's condition or body rather than name its program."""
_TRTLLM_OTHER = frozenset({"disaggregated", "disaggregated_mpi_worker", "mm_embedding_serve",
                           "grpc", "--help", "-h"})


_TAKES_ITS_LINE = frozenset({"huggingface-cli", "hf", "modelscope", "git", "mkdir", "tar",
                             "unzip", "chown", "sleep", "cd"})
"""Programs that take every word after them as their own arguments and never run them (unlike
``nohup``, ``srun``, ``uv run`` or ``docker exec``), beside :data:`_NOT_COMMANDS`, whose
commands only mention an engine: an engine command after one of these was meant to run and
was joined to it by mistake (KV707)."""


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def is_python(program: str) -> bool:
    """Whether ``program`` (any path) is a Python interpreter (``python``, ``python3.10``)."""
    return _PYTHON.fullmatch(_base(program)) is not None


def takes_its_line(program: str) -> bool:
    """Whether ``program`` takes the rest of its command line as its own arguments
    (:data:`_TAKES_ITS_LINE`)."""
    return _base(program) in _TAKES_ITS_LINE


def find_engine(words: Sequence[str]) -> tuple[str, int] | None:
    """The engine a command launches and the index of its first argument, or ``None``.

    Recognises ``vllm serve``, ``sglang serve``, ``python[3] -m`` with
    ``vllm.entrypoints.openai.api_server`` / ``dynamo.vllm`` / ``sglang.launch_server`` /
    ``dynamo.sglang`` / ``dynamo.trtllm`` / ``sglang_router.launch_server`` /
    ``lmdeploy serve api_server``, ``text-generation-launcher`` (or ``/tgi-entrypoint.sh``,
    the ENTRYPOINT of TGI's Dockerfile, which hands its arguments to it), ``trtllm-serve``,
    ``llama-server`` and TRL's ``trl vllm-serve`` / ``python -m trl.scripts.vllm_serve``
    (any path prefix; after ``uv run``).
    Other servers (``text-embeddings-router``, ``trtllm-serve disaggregated``,
    ``python -m dynamo.frontend``) are ``None``.
    """
    found = find_program(words)
    return None if found is None else (found[0], found[2])


def only_mentions(words: Sequence[str]) -> bool:
    """Whether a command only mentions the programs in it (``echo``, ``pkill``, ``which``,
    ``pip install``, ``command -v``...: the module doc) rather than running one."""
    start = 0
    while start < len(words) and start < 16 and words[start] in _RESERVED:
        start += 1
    words = _after_sudo(words[start:])
    if len(words) >= 2 and words[0] == "command" and words[1] in ("-v", "-V"):
        return True
    return bool(words) and _base(words[0]) in _NOT_COMMANDS and list(words[:2]) != ["uv", "run"]


_SUDO_VALUE_OPTIONS = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U",
                                 "--user", "--group", "--chdir", "--host", "--prompt"})
"""sudo's options that take a value (sudo(8)); the others are switches."""


def _after_sudo(words: Sequence[str]) -> Sequence[str]:
    """The command ``sudo [options]`` (or ``doas``) runs: ``sudo pkill -9 llama-server``
    only mentions the server, as ``pkill`` alone does."""
    if not words or _base(words[0]) not in ("sudo", "doas"):
        return words
    i = 1
    while i < len(words) and i < 24 and words[i].startswith("-") and words[i] != "--":
        i += 2 if words[i] in _SUDO_VALUE_OPTIONS else 1
    if i < len(words) and words[i] == "--":
        i += 1
    return words[i:]


def find_program(words: Sequence[str]) -> tuple[str, int, int] | None:
    """``(engine, index of the program word, index of the first argument)``."""
    start = 0
    while start < len(words) and start < 16 and words[start] in _RESERVED:
        start += 1
    if start:
        found = find_program(words[start:])
        return None if found is None else (found[0], found[1] + start, found[2] + start)
    if not words or only_mentions(words):
        return None  # `uv pip install vllm` installs; `uv run vllm serve` runs it
    n = len(words)
    if list(words[:2]) == ["uv", "run"]:
        # `uv run [options] -m MODULE` runs the module as `python -m` does (astral-sh/uv#7754,
        # 2024-09); options before it may take values, so the first -m/--module is taken
        at = next((k for k in range(2, min(n, 24)) if words[k] in ("-m", "--module")), None)
        if at is not None and at + 1 < n and words[at + 1] in _MODULES:
            return _MODULES[words[at + 1]], at, at + 2
    for i, word in enumerate(words):
        base = _base(word)
        nxt = words[i + 1] if i + 1 < n else None
        if base == "vllm" and nxt == "serve":
            return "vllm", i, i + 2
        if base == "sglang" and nxt == "serve":
            return "sglang", i, i + 2
        if base in ("text-generation-launcher", "tgi-entrypoint.sh"):
            return "tgi", i, i + 1
        if base == "llama-server" or (base == "server" and (
                "llama" in word.lower() or any(w.lower().endswith(".gguf")
                                               for w in words[i + 1:i + 16]))):
            # llama.cpp's server binary was `server` until its executables took the llama-
            # prefix in mid-2024 (examples/server, built as bin/server): a `server` under a
            # llama.cpp path, or given a GGUF
            return "llamacpp", i, i + 1
        if base in ("llama", "llama.exe") and nxt == "serve":
            # the combined `llama` binary of llama.cpp's 2026 installers runs the server as
            # `llama serve` (llama-server still ships; mostlygeek/llama-swap#1036,
            # llamastash/llamastash#67, 2026-08)
            return "llamacpp", i, i + 2
        if base == "trtllm-serve":
            if nxt == "serve":
                return "trtllm", i, i + 2
            if nxt in _TRTLLM_OTHER:
                return None
            return "trtllm", i, i + 1
        if base == "lmdeploy" and list(words[i + 1:i + 3]) == ["serve", "api_server"]:
            return "lmdeploy", i, i + 3
        if base == "trl" and nxt == "vllm-serve":  # TRL's launcher of a vLLM server
            return "vllm", i, i + 2
        if _VARIABLE.fullmatch(word):
            named = _named_program(word, nxt)
            if named is not None:
                return named[0], i, i + named[1]
        if _PYTHON.fullmatch(base) or (_VARIABLE.fullmatch(word) and nxt == "-m"):
            # `$PY -m vllm.entrypoints.openai.api_server`: an interpreter held in a variable
            # the script sets elsewhere runs the module all the same, also as the argument
            # of a launcher (`start_with_pid_file "$PID" "$PY" -m sglang.launch_server`)
            module = _python_module(words, i + 1)
            if module is not None:
                return module[0], i, module[1]
    return None


def _named_program(word: str, nxt: str | None) -> tuple[str, int] | None:
    """``(engine, words it takes)`` of a program held in a variable the file never sets,
    named for the engine's executable (``"$VLLM_BIN" serve``, ``$SGLANG serve``,
    ``${LLAMA_SERVER_BIN} -m ...``): the engine's own subcommand must follow where it has
    one, so ``$VLLM_HOME/bin/x`` or ``$VLLM_URL`` alone start nothing."""
    name = word.strip("${}").upper()
    if nxt == "serve" and ("VLLM" in name or "SGLANG" in name):
        return ("vllm" if "VLLM" in name else "sglang"), 2
    if re.fullmatch(r"LLAMA_?(CPP_?)?SERVER(_(BIN|EXE|PATH|CMD))?", name):
        return "llamacpp", 1
    return None


def _python_module(words: Sequence[str], j: int) -> tuple[str, int] | None:
    n = len(words)
    while j < n and words[j].startswith("-") and words[j] != "-m" and not (
            words[j].startswith("-m") and len(words[j]) > 2):
        j += 2 if words[j] in _PYTHON_VALUE_OPTIONS else 1
    if j >= n:
        return None
    if words[j] == "-m" and j + 1 < n:
        module, after = words[j + 1], j + 2
    elif words[j].startswith("-m") and len(words[j]) > 2:
        module, after = words[j][2:], j + 1
    else:
        return None
    if module in _MODULES:
        return _MODULES[module], after
    if module == "lmdeploy" and list(words[after:after + 2]) == ["serve", "api_server"]:
        return "lmdeploy", after + 2
    return None
