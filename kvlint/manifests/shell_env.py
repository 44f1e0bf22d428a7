"""The environment a command runs in, as far as the manifest says: :class:`Env` expands
Kubernetes ``$(VAR)`` references and shell parameters (``$VAR``, ``${VAR:-default}``,
``$((a * b))``...) from the values a manifest sets, and says
:class:`~kvlint.manifests.base.Unresolved` for anything it does not set;
:func:`env_from_k8s` and :func:`env_from_mapping_or_list` read a container ``env:`` list or a
compose/SkyPilot/dstack environment block.

Nothing is executed: command substitutions (``$(cmd)``, backticks) are never run, they are
reported as unresolved, except four read from their text: a program's path on PATH
(``$(which vllm)``), a count of a variable's comma-separated fields (``$(echo
$CUDA_VISIBLE_DEVICES | awk -F',' '{print NF}')``), a count of the GPUs the process sees
(``$(nvidia-smi -L | wc -l)``), where the platform fixes it, and a path's ``basename`` or
``dirname``. Layered above :mod:`.shell_words` and
below :mod:`.engine_command`.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kvlint.manifests.base import Unresolved
from kvlint.manifests.shell_words import _NAME, Word, _matching
from kvlint.manifests.yaml_marks import LDict, LList, LStr

__all__ = ["VISIBLE_GPUS", "Env", "Token", "bounded_sub", "env_from_k8s",
           "env_from_mapping_or_list", "expand_words"]


# --- environment ---------------------------------------------------------------------------


class _Unset(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_K8S_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
_SPECIAL = frozenset("@*#?$!-0123456789")
_ARITH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_EXPANDED_CHARS = 65_536
"""The longest value an expansion may produce: no engine argument is longer, and a script that
doubles a variable on every line would otherwise grow it past any memory (``A=$A$A``). A
longer value is a variable without a value, with the reason said."""


def bounded_sub(pattern: re.Pattern[str], value: Callable[[re.Match[str]], str], text: str,
                overflow: str) -> str:
    """``text`` with every match of ``pattern`` replaced by ``value(match)``, or
    ``overflow`` (an unresolved reference) when the replacements together pass
    :data:`MAX_EXPANDED_CHARS` (a variable that doubles on every line)."""
    size = 0

    def one(match: re.Match[str]) -> str:
        nonlocal size
        piece = value(match)
        size += len(piece)
        return piece if size <= MAX_EXPANDED_CHARS else ""

    out = pattern.sub(one, text)
    return out if size <= MAX_EXPANDED_CHARS else overflow


_MAX_ARITH = 10**18
_MAX_ARITH_TOKENS = 256
"""Numbers, operators and parentheses in one ``$((...))``: real manifests use a handful
(``$((GPUS * 2))``); the bound keeps the parse and the tree walk shallow."""
_ARITH_TOKEN = re.compile(r"\d+|[^\s\d]")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_FIELD_COUNT = re.compile(
    r"""echo\s+(?:-n\s+)?"?\$\{?([A-Za-z_]\w{0,63})\}?"?\s*\|\s*"""
    r"""(?:awk\s+-F\s*["']?,["']?\s+["']\{\s*print\s+NF\s*;?\s*\}["']"""
    r"""|tr\s+["']?,["']?\s+["']\\n["']\s*\|\s*wc\s+-l)""")
"""``$(echo $CUDA_VISIBLE_DEVICES | awk -F',' '{print NF}')`` (or ``| tr ',' '\\n' | wc
-l``): the number of comma-separated fields of a variable, a script's count of the devices
it lists (awk's NF; tr puts one field on each line, wc counts them)."""
_GPU_COUNT = re.compile(
    r"""(?:nvidia-smi\s+(?:-L|--list-gpus)"""
    r"""|nvidia-smi\s+--query-gpu=[\w.,]+\s+--format=csv,noheader(?:,nounits)?)"""
    r"""\s*\|\s*(?:wc\s+-l|grep\s+-c\s+\S+)"""
    r"""|(?P<torch>python3?\s+-c\s+(?P<q>["'])\s*import\s+torch\s*[;\n]\s*"""
    r"""print\s*\(\s*torch\.cuda\.device_count\s*\(\s*\)\s*\)\s*;?\s*(?P=q))""")
"""A count of the GPUs the process sees: ``nvidia-smi -L | wc -l`` (or ``| grep -c GPU``,
``--query-gpu=... --format=csv,noheader | wc -l``), which lists every device the container or
node exposes, and ``python -c "import torch; print(torch.cuda.device_count())"``, which also
honours ``CUDA_VISIBLE_DEVICES``. Its value is the platform's GPU count
(:data:`VISIBLE_GPUS`) where the manifest fixes one."""
VISIBLE_GPUS = "\x00visible-gpus"
"""The platform variable holding the number of GPUs the platform gives the process (a
container's ``nvidia.com/gpu`` limit, a Slurm node's GPUs), for :data:`_GPU_COUNT`."""
_PATH_PART = re.compile(r"""(basename|dirname)\s+(?:"([^"`$]*(?:\$\{?\w+\}?[^"`$]*)*)"|"""
                        r"""((?:[^\s"'`$;|&()]|\$\{?\w+\}?)+))""")
"""``$(basename "$MODEL_PATH")``, ``$(dirname $X)``: a path's last component or its folder,
taken from the text (coreutils' rules: trailing slashes dropped; ``dirname`` of a bare name
is ``.``), the path's own variables expanded first."""
_LOOKUP = re.compile(r"(?:command\s+-v|which|type\s+-[Pp])\s+([A-Za-z][\w.+-]{0,63})")
"""``$(command -v NAME)``, ``$(which NAME)``, ``$(type -P NAME)``: the path of the program
NAME on PATH, which runs NAME (its directory is not needed to tell the program)."""


_PROGRAM_TAIL = re.compile(r"/([A-Za-z][\w.+-]{0,63})$")
_DEFAULTED = re.compile(r"\$\{[A-Za-z_]\w*:?[-=](.*)\}", re.DOTALL)
"""``${NAME:-DEFAULT}`` as a whole value: unless the variable is set, the default."""


def _program_tail(raw: str) -> str | None:
    """The program an unresolvable path names by its last component (``$VENV/bin/sglang``;
    the default of ``${VLLM_BIN:-$ROOT/.venv/bin/vllm}``)."""
    for _ in range(4):
        defaulted = _DEFAULTED.fullmatch(raw)
        if defaulted is None:
            break
        raw = defaulted.group(1)
    tail = _PROGRAM_TAIL.search(raw)
    return tail.group(1) if tail is not None else None
"""The literal last component of a path (``$VENV_DIR/bin/sglang``: ``sglang``)."""


_TEMPLATE_FIELD = re.compile(r"\{[A-Za-z_]\w{0,63}\}")
"""A whole word that is a template's field (``--port {port}``: Python's ``str.format``, a
recipe's ``{tensor_parallel}``): a value the rendering tool puts in, not one the engine
gets as written (no shell brace expansion makes anything of a single name in braces)."""
_PLAIN_REFERENCE = re.compile(r"\$\{([A-Za-z_]\w{0,63})\}|\$([A-Za-z_]\w{0,63})"
                              r"|\$\{([A-Za-z_]\w{0,63}|[1-9])(:?)-((?:[^{}]|\{[^{}]*\})*)\}")
"""The references an unresolved value's text shows expanded: ``$NAME``, ``${NAME}``, and
``${NAME:-default}`` (its default where NAME is unset; ``${1:-default}`` too, the script run
without arguments, as :meth:`Env._positional` reads it)."""


def _path_part(which: str, path: str) -> str:
    """What ``basename``/``dirname`` print for ``path``."""
    trimmed = path.rstrip("/") or ("/" if path.startswith("/") else "")
    if which == "basename":
        return trimmed.rsplit("/", 1)[-1] or trimmed
    if "/" not in trimmed:
        return "."
    head = trimmed.rsplit("/", 1)[0].rstrip("/")
    return head or "/"


class Env:
    """The environment a command runs in, as far as the manifest says.

    ``values``: variables the manifest sets (container env, compose ``environment``, a
    command's ``KEY=VALUE`` prefix...); ``None`` marks one that exists but whose value the
    manifest does not hold (``valueFrom``, a secret, a bare ``KEY``). ``platform``: variables
    the platform injects (``LWS_GROUP_SIZE``, ``SKYPILOT_NUM_GPUS_PER_NODE``,
    ``DSTACK_GPUS_NUM``...), looked up after ``values``. ``k8s``: whether ``$(VAR)`` is a
    Kubernetes reference when :meth:`expand` is not told (command substitution otherwise).
    Values may be :class:`~kvlint.manifests.yaml_marks.LStr` s, whose line
    :meth:`line_of` reports.
    """

    def __init__(self, values: Mapping[str, str | None],
                 platform: Mapping[str, str] | None = None, *, k8s: bool = True,
                 reasons: Mapping[str, str] | None = None,
                 programs: Mapping[str, str] | None = None,
                 shown: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, str | None] = dict(values)
        self.platform: dict[str, str] = dict(platform or {})
        self.k8s = k8s
        self.reasons: dict[str, str] = dict(reasons or {})
        self.programs: dict[str, str] = dict(programs or {})
        """Variables without a value whose assigned path ends in a literal name
        (``BIN=$VENV/bin/sglang``): the program they name, wherever its directory is."""
        self.shown: dict[str, str] = dict(shown or {})
        """Variables without a value: their assigned text, expanded where it can be
        (``${SCRIPT_DIR}/models/x`` for ``MODEL_DIR``), for the values built from them."""

    def __repr__(self) -> str:
        return f"Env({self.values!r}, platform={self.platform!r}, k8s={self.k8s})"

    def with_values(self, values: Mapping[str, str | None],
                    reasons: Mapping[str, str] | None = None,
                    programs: Mapping[str, str] | None = None,
                    shown: Mapping[str, str] | None = None) -> Env:
        """A copy with ``values`` set on top (already expanded: no expansion here)."""
        merged = {**self.values, **values}
        why = {k: v for k, v in self.reasons.items() if k not in values}
        why.update(reasons or {})
        named = {k: v for k, v in self.programs.items() if k not in values}
        named.update(programs or {})
        texts = {k: v for k, v in self.shown.items() if k not in values}
        texts.update(shown or {})
        return Env(merged, self.platform, k8s=self.k8s, reasons=why, programs=named,
                   shown=texts)

    def assign(self, values: Mapping[str, str], *, k8s: bool | None = None) -> Env:
        """A copy with shell assignments applied: each value is expanded in this
        environment first (``NUM_SHARD=$DSTACK_GPUS_NUM``); an unresolvable one becomes a
        variable without a value, with the reason kept."""
        out: dict[str, str | None] = {}
        reasons: dict[str, str] = {}
        programs: dict[str, str] = {}
        shown: dict[str, str] = {}
        for name, raw in values.items():
            value = self.expand(raw, k8s=k8s)
            if isinstance(value, Unresolved):
                out[name] = None
                reasons[name] = value.reason
                if value.text and f"${name}" not in value.text and \
                        f"${{{name}}}" not in value.text and "$(" not in value.text and \
                        "`" not in value.text:  # a command's output: shown by its name
                    shown[name] = value.text
                tail = _program_tail(str(raw))
                if tail is not None:
                    programs[name] = tail
            else:
                line = getattr(raw, "line", 0)
                out[name] = LStr(value, line) if line else value
        return self.with_values(out, reasons, programs, shown)

    def lookup(self, name: str) -> str | None:
        """The value of ``name``; ``None`` when it is unset. Raises for a variable that is
        set but whose value the manifest does not hold."""
        if name in self.values:
            value = self.values[name]
            if value is None:
                raise _Unset(self.reasons.get(name)
                             or f"${name} has no value in the manifest (set at deploy time)")
            return value
        return self.platform.get(name)

    def _visible_gpus(self, written: str, torch: bool) -> str:
        """The number a GPU-count substitution prints (:data:`_GPU_COUNT`)."""
        listed = self.values.get("CUDA_VISIBLE_DEVICES") if torch else None
        if listed is not None and "$" not in listed and listed.strip():
            return str(len([d for d in listed.split(",") if d.strip()]))
        count = self.platform.get(VISIBLE_GPUS)
        if count is None:
            raise _Unset(f"command substitution {written} counts the GPUs the process sees, "
                         "which the manifest does not fix")
        return count

    def line_of(self, name: str) -> int | None:
        """The manifest line of ``name``'s value, when known."""
        value = self.values.get(name, self.platform.get(name))
        line = getattr(value, "line", None)
        return line if isinstance(line, int) and line > 0 else None

    def get(self, name: str) -> str | Unresolved | None:
        """``name``'s value, an :class:`Unresolved` when it has none in the manifest, or
        ``None`` when it is not set at all."""
        try:
            return self.lookup(name)
        except _Unset as unset:
            return Unresolved(reason=unset.reason, line=self.line_of(name), text=f"${name}")

    def expand(self, text: str, *, k8s: bool | None = None) -> str | Unresolved:
        """``text`` with its variables replaced, or :class:`Unresolved` when any of them
        cannot be resolved from the manifest.

        ``k8s=True`` first replaces Kubernetes ``$(VAR)`` references (``$$`` escapes a
        ``$``; an undefined ``$(VAR)`` would stay literal in the container, so it is
        unresolved). Then shell parameters: ``$VAR``, ``${VAR}``, ``${VAR-default}``,
        ``${VAR:-default}``, ``${VAR=default}``, ``${VAR+alt}``, ``${VAR:+alt}``,
        ``${#VAR}`` and ``$((expr))`` over integers (``+ - * / %`` and parentheses, parsed,
        never evaluated as code). Command substitution and special parameters (``$@``,
        ``$1``...) are unresolved, except a positional parameter's default (``${1:-word}``:
        the file as it runs without arguments).
        """
        use_k8s = self.k8s if k8s is None else k8s
        if _TEMPLATE_FIELD.fullmatch(text):
            return Unresolved(reason=f"{text} is a template's field, filled in by the tool "
                              "that renders the file", text=str(text))
        try:
            text_k8s = self._k8s(text) if use_k8s and "$" in text else text
            if "$" not in text_k8s and "`" not in text_k8s:
                return text_k8s.replace("\x00", "$")
            return self._shell(text_k8s, 0)
        except _Unset as unset:
            return Unresolved(reason=unset.reason, text=self._partial(str(text)))

    def _partial(self, text: str, depth: int = 0,
                 memo: dict[str, str] | None = None) -> str:
        """``text`` with the plain references it can expand (``$NAME``, ``${NAME}``)
        replaced and the others as written: what an unresolved value shows
        (``${SCRIPT_DIR}/models/MiniCPM4.1-8B-GPTQ`` for ``${MODEL_DIR}``). Each name is
        worked out once (``memo``), and a text that would grow past
        :data:`MAX_EXPANDED_CHARS` stays as written."""
        if "$" not in text or depth > 4 or len(text) > MAX_EXPANDED_CHARS:
            return text
        memo = {} if memo is None else memo

        def value_of(found: re.Match[str]) -> str | None:
            name = found.group(1) or found.group(2) or found.group(3)
            try:
                value = self.lookup(name)
            except _Unset:
                value = self.shown.get(name)
                if found.group(3):  # set, but not to a value kvlint holds: no default
                    return value
            if found.group(3) and (value is None or (found.group(4) and not value)):
                return _quotes_removed(found.group(5))  # ${NAME:-default}, NAME unset
            return value

        def one(found: re.Match[str]) -> str:
            key = found.group(0)
            if key not in memo:
                value = value_of(found)
                memo[key] = key if value is None else \
                    self._partial(str(value), depth + 1, memo).replace("\x00", "$")
            return memo[key]

        return bounded_sub(_PLAIN_REFERENCE, one, text, text)

    def _k8s(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$$"  # kept for the shell pass, which reads it as an escaped $
            name = match.group(1)
            value = self.lookup(name)
            if value is None:
                raise _Unset(f"$({name}) is not set in the manifest (Kubernetes leaves an "
                             "undefined $(VAR) as it is)")
            return value.replace("$", "\x00")  # substituted text is not expanded again

        return _K8S_REF.sub(replace, text).replace("$$", "\x00")

    def _shell(self, text: str, depth: int) -> str:
        if depth > 20:
            raise _Unset("expansion nested too deeply")
        out: list[str] = []
        i = size = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c == "`":
                raise _Unset(f"command substitution {text[i:]!r} is not evaluated")
            if c != "$" or i + 1 >= n:
                out.append(c)
                i += 1
                continue
            nxt = text[i + 1]
            if text.startswith("$((", i):
                end = _matching(text, i + 3, "(", ")")
                if end + 1 >= n or text[end + 1] != ")":
                    raise _Unset(f"command substitution {text[i:end + 1]!r} is not evaluated")
                out.append(str(self._arith(text[i + 3:end], depth)))
                i = end + 2
            elif nxt == "(":
                end = _matching(text, i + 2, "(", ")")
                inner = text[i + 2:end].strip()
                found = _LOOKUP.fullmatch(inner)
                counted = _FIELD_COUNT.fullmatch(inner) if found is None else None
                gpus = _GPU_COUNT.fullmatch(inner) if found is None and counted is None \
                    else None
                part = _PATH_PART.fullmatch(inner) if found is None and counted is None and \
                    gpus is None else None
                if part is not None:
                    path = part.group(2) if part.group(2) is not None else part.group(3)
                    out.append(_path_part(part.group(1), self._shell(path, depth + 1)))
                    i = end + 1
                    continue
                if gpus is not None:
                    out.append(self._visible_gpus(text[i:end + 1], bool(gpus.group("torch"))))
                    i = end + 1
                    continue
                if counted is not None:
                    listed = self.lookup(counted.group(1))
                    if listed is None or "$" in listed:
                        raise _Unset(f"command substitution {text[i:end + 1]} counts a "
                                     "variable the manifest does not set")
                    # awk prints NF = 0 for an empty line; tr | wc -l counts the newline echo
                    # adds, 1 (both as the shell runs them)
                    out.append(str(len(listed.split(",")) if listed else
                                   (1 if counted.group(0).rstrip().endswith("-l") else 0)))
                    i = end + 1
                    continue
                if found is None:
                    raise _Unset(f"command substitution {text[i:end + 1]} is not evaluated")
                out.append(found.group(1))  # the program on PATH: its name is what it runs
                i = end + 1
            elif nxt == "{":
                end = _matching(text, i + 2, "{", "}")
                piece = self._parameter(text[i + 2:end], depth)
                out.append(piece)
                size += len(piece)
                if size > MAX_EXPANDED_CHARS:
                    raise _Unset(f"expanding ${{{text[i + 2:end][:40]}}} gives over "
                                 f"{MAX_EXPANDED_CHARS:,} characters")
                i = end + 1
            elif nxt == "_" or nxt.isalpha():
                match = _NAME.match(text, i + 1)
                assert match is not None
                name = match.group(0)
                value = self.lookup(name)
                if value is None:
                    raise _Unset(f"${name} is not set in the manifest")
                out.append(value)
                size += len(value)
                if size > MAX_EXPANDED_CHARS:
                    raise _Unset(f"expanding ${name} gives over {MAX_EXPANDED_CHARS:,} "
                                 "characters")
                i = match.end()
            elif nxt in _SPECIAL:
                raise _Unset(f"${nxt} is a shell parameter set when the script or container runs")
            else:
                out.append(c)
                i += 1
        return "".join(out).replace("\x00", "$")

    def _parameter(self, body: str, depth: int) -> str:
        if body.startswith("#") and _NAME.fullmatch(body[1:]):
            value = self.lookup(body[1:])
            if value is None:
                raise _Unset(f"${body[1:]} is not set in the manifest")
            return str(len(value))
        if body[:1] in "123456789" and body[1:2] in (":", "-", "+"):
            return self._positional(body, depth)
        match = _NAME.match(body)
        if match is None:
            if body[:1] in _SPECIAL:
                raise _Unset(f"${{{body}}} is a shell parameter set when the script or container "
                             "runs")
            raise _Unset(f"${{{body}}} is not a variable kvlint can expand")
        name = match.group(0)
        rest = body[match.end():]
        if not rest:
            value = self.lookup(name)
            if value is None:
                raise _Unset(f"${name} is not set in the manifest")
            return value
        colon = rest.startswith(":")
        op = rest[1:2] if colon else rest[:1]
        word = rest[2:] if colon else rest[1:]
        if op not in ("-", "=", "+", "?"):
            raise _Unset(f"${{{body}}} is an expansion kvlint does not evaluate")
        value = self.lookup(name)
        missing = value is None or (colon and value == "")
        if op in ("-", "="):
            return self._shell(_quotes_removed(word), depth + 1) if missing else str(value)
        if op == "+":
            return "" if missing else self._shell(_quotes_removed(word), depth + 1)
        if missing:
            raise _Unset(f"${name} is not set in the manifest")
        return str(value)

    def _positional(self, body: str, depth: int) -> str:
        """``${1:-word}`` / ``${1-word}`` / ``${1:+word}``: a script's positional parameter
        read as the file runs without arguments (unset), so its default is what runs; a bare
        ``$1`` stays unresolved (the argument is required)."""
        rest = body[1:]
        colon = rest.startswith(":")
        op = rest[1:2] if colon else rest[:1]
        word = rest[2:] if colon else rest[1:]
        if op == "-":
            return self._shell(_quotes_removed(word), depth + 1)
        if op == "+":
            return ""
        raise _Unset(f"${{{body}}} is a shell parameter set when the script runs")

    def _arith(self, expr: str, depth: int) -> int:
        expanded = self._shell(expr, depth + 1) if "$" in expr else expr

        def name(match: re.Match[str]) -> str:
            value = self.lookup(match.group(0))
            if value is None:
                raise _Unset(f"${match.group(0)} is not set in the manifest")
            value = value.strip()
            if not re.fullmatch(r"[-+]?\d+", value):
                raise _Unset(f"${match.group(0)} = {value!r} is not an integer")
            return f"({value})"

        numeric = _ARITH_NAME.sub(name, expanded)
        if re.search(r"(?<![\w.])0\d", numeric):
            raise _Unset(f"$(({expr})) uses an octal number")
        return _evaluate(numeric, expr)


def _quotes_removed(word: str) -> str:
    """The ``word`` of ``${VAR:-word}`` after quote removal, as POSIX expands it (``sh``:
    ``${DTYPE:-"float16"}`` is ``float16``): single quotes keep their text literal, double
    quotes and backslashes escape ``$ ` " \\``; a ``$`` made literal is marked with a NUL,
    which the expansion turns back into ``$`` without expanding it."""
    out: list[str] = []
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "'":
            end = word.find("'", i + 1)
            end = n if end < 0 else end
            out.append(word[i + 1:end].replace("$", "\x00"))
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and word[i] != '"':
                if word[i] == "\\" and i + 1 < n and word[i + 1] in '$`"\\':
                    out.append("\x00" if word[i + 1] == "$" else word[i + 1])
                    i += 2
                    continue
                out.append(word[i])
                i += 1
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append("\x00" if word[i + 1] == "$" else word[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _evaluate(numeric: str, expr: str) -> int:
    """Integer arithmetic as ``sh`` does it, over a parsed tree that admits only numbers,
    ``+ - * / %``, unary signs and parentheses (at most ``_MAX_ARITH_TOKENS`` of them)."""
    tokens = itertools.islice(_ARITH_TOKEN.finditer(numeric), _MAX_ARITH_TOKENS + 1)
    if sum(1 for _ in tokens) > _MAX_ARITH_TOKENS:
        raise _Unset(f"$(({_short(expr)})) is too long for kvlint to evaluate "
                     f"(over {_MAX_ARITH_TOKENS} terms)")
    try:
        tree = ast.parse(numeric.strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise _Unset(f"$(({_short(expr)})) is not arithmetic kvlint can evaluate") from None

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and isinstance(
                node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod)):
            left = walk(node.left)
            right = walk(node.right)
            if isinstance(node.op, ast.Add):
                result = left + right
            elif isinstance(node.op, ast.Sub):
                result = left - right
            elif isinstance(node.op, ast.Mult):
                result = left * right
            else:
                if right == 0:
                    raise _Unset(f"$(({expr})) divides by zero")
                quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)
                result = quotient if isinstance(node.op, ast.Div) else left - right * quotient
            if abs(result) > _MAX_ARITH:
                raise _Unset(f"$(({expr})) overflows")
            return result
        raise _Unset(f"$(({expr})) is not arithmetic kvlint can evaluate")

    return walk(tree)


def _short(expr: str) -> str:
    """An expression for a message: its first 40 characters."""
    return expr if len(expr) <= 40 else f"{expr[:37]}..."


def _env_value(value: object, line: int | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, LStr):
        return value
    if isinstance(value, (dict, list)):
        return None
    return LStr(_text(value), line or 0)


def env_from_k8s(items: Any, config_key: Callable[[str, str], str | None] | None = None
                 ) -> dict[str, str | None]:
    """A Kubernetes container ``env:`` list as values: ``value`` (strings as written,
    numbers as text, ``$(VAR)`` of earlier entries expanded as Kubernetes does);
    ``valueFrom.configMapKeyRef`` as ``config_key(name, key)`` gives it (a ConfigMap in the
    same file); other ``valueFrom`` and entries without a value are ``None`` (known, value
    not in the manifest). Values keep their line."""
    out: dict[str, str | None] = {}
    if not isinstance(items, list):
        return out
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = str(item["name"])
        if "valueFrom" in item and "value" not in item:
            ref = item.get("valueFrom")
            ref = ref.get("configMapKeyRef") if isinstance(ref, dict) else None
            found = config_key(str(ref.get("name")), str(ref.get("key"))) \
                if config_key is not None and isinstance(ref, dict) else None
            out[name] = found
            continue
        line = item.value_lines.get("value", (0, 0))[0] if isinstance(item, LDict) else None
        value = _env_value(item.get("value", ""), line)
        if value is not None and "$(" in value:
            expanded = _k8s_dependent(value, out)
            value = None if expanded is None else LStr(expanded, getattr(value, "line", 0))
        out[name] = value
    return out


def _k8s_dependent(value: str, earlier: Mapping[str, str | None]) -> str | None:
    """``$(VAR)`` of earlier entries expanded; ``None`` when one of them has no value in
    the manifest (``valueFrom``); an undefined one stays literal, as in Kubernetes."""
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        if name in earlier and earlier[name] is None:
            unknown = True
        found = earlier.get(name)
        if found is not None and len(found) > MAX_EXPANDED_CHARS:
            unknown = True
        return match.group(0) if found is None or unknown else found

    expanded = _K8S_REF.sub(replace, value)
    return None if unknown or len(expanded) > MAX_EXPANDED_CHARS else expanded


def env_from_mapping_or_list(obj: Any) -> dict[str, str | None]:
    """A compose ``environment:``, SkyPilot ``envs:`` or dstack ``env:`` block as values:
    a mapping (``KEY: value``; a null value is ``None``) or a list of ``KEY=VALUE`` (a bare
    ``KEY`` is ``None``: passed through from outside the manifest). Values keep their
    line."""
    out: dict[str, str | None] = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            line = obj.value_lines.get(key, (0, 0))[0] if isinstance(obj, LDict) else None
            out[str(key)] = _env_value(value, line)
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            if not isinstance(item, str):
                continue
            line = obj.item_lines[index][0] if isinstance(obj, LList) else 0
            key, eq, value = item.partition("=")
            key = key.strip()
            if key:
                out[key] = LStr(value, line) if eq else None
    return out


# --- words, expanded ----------------------------------------------------------------------


@dataclass
class Token:
    """A word after expansion (an unquoted expansion split into several): its ``text``, or
    ``unresolved`` when the manifest does not determine it; ``raw`` is the word as written."""

    text: str | None
    unresolved: Unresolved | None
    line: int | None
    raw: str
    column: int | None = None


def expand_words(words: Sequence[Word], env: Env) -> list[Token]:
    """``words`` expanded through ``env`` (single-quoted and escaped ``$`` kept as written;
    an unquoted expansion split at whitespace, as the shell splits fields)."""
    tokens: list[Token] = []
    for word in words:
        if word.literal or ("$" not in word.text and "`" not in word.text and
                            not _TEMPLATE_FIELD.fullmatch(word.text)):
            tokens.append(Token(word.text, None, word.line, word.text, word.column))
            continue
        value = env.expand(word.text)
        if isinstance(value, Unresolved):
            tokens.append(Token(None, Unresolved(reason=value.reason, line=word.line,
                                                 text=value.text or word.text), word.line,
                                word.text, word.column))
        elif word.split:
            tokens.extend(Token(part, None, word.line, word.text) for part in value.split())
        else:
            tokens.append(Token(value, None, word.line, word.text, word.column))
    return tokens
