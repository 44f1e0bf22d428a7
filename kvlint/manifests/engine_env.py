"""Engine commands in their environment: :func:`engine_invocations` finds every engine
command of a script, following the assignments before it, and the environment variables of
an engine process that change what the engine accepts (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``...)
are read from the manifest's environment and carried on
:class:`~kvlint.manifests.base.ServedModel` so rules can see them. Layered above
:mod:`.shell_words` (words), :mod:`.shell_env` (expansion) and :mod:`.engine_command` (each
engine's argument grammar), which never import this module."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import cache

from kvlint.engines import load_engines
from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.engine_command import (
    EngineArgs,
    command_arguments,
    judge_known_options_only,
    parse_engine_args,
)
from kvlint.manifests.engine_options import engine_display
from kvlint.manifests.engine_programs import WRAPPER_MODULES, find_program, takes_its_line
from kvlint.manifests.located_str import LStr
from kvlint.manifests.shell_env import Env, _Unset
from kvlint.manifests.shell_plain_run import MAX_LOOP_PASSES
from kvlint.manifests.shell_words import _ASSIGNMENT, _NAME, Word, split_env_prefix
from kvlint.manifests.triton_launch import triton_args, triton_launch
from kvlint.model.engine_args import EngineArgProblem


@cache
def watched_names() -> tuple[str, ...]:
    """Every variable named by the engine table as changing what an engine accepts."""
    from kvlint.model.memory import SAMPLER_ENV  # vLLM's profile: the sampler's peak

    names = {str(fact.values["override_env"])
             for engine in load_engines().values() for fact in engine.context_limit
             if fact.values.get("override_env")} | {SAMPLER_ENV}
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


@dataclass(frozen=True)
class EngineInvocation:
    """An engine command found in a script: ``words`` is the command without its
    environment prefix, ``words[index:]`` its arguments, ``line`` the line of the word that
    names the engine (``vllm``, ``python3``...), ``env`` what it runs with, ``position`` the
    command's index in the commands searched."""

    engine: str
    args: EngineArgs
    line: int | None
    words: tuple[Word, ...]
    index: int
    env: Env = field(compare=False, repr=False)
    position: int = 0
    alternative: str | None = None
    """The ``case`` branch (its patterns) of a script that serves one of several presets,
    when this command's variables differ between them; ``None`` otherwise."""
    iteration: str | None = None
    """``VAR=value``: the pass of a ``for`` loop that starts this server, one per value,
    when the command differs between passes (``CUDA_VISIBLE_DEVICES=$i ... --port $PORT``);
    ``None`` otherwise."""


_OPENERS = frozenset({"if", "while", "until", "for", "case", "select"})
_CLOSERS = frozenset({"fi", "done", "esac"})
_LOOPS = frozenset({"while", "until", "for", "select"})
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
_MOST_PRESETS = 32
"""The most alternatives a script's ``case`` statements make (their product); past it the
script is read as one server whose differing variables are unresolved."""


@dataclass
class _Case:
    """A ``case`` statement being walked: its subject word, the alternatives before it,
    whether it may pick presets (not inside a loop: an option loop's ``case`` reads
    arguments), and each branch's patterns, assignments (in order, each marked conditional
    or not) and whether it runs on (a branch that ``exit`` s is no alternative)."""

    depth: int
    subject: Word | None
    before: list[tuple[str, Env]]
    selects: bool
    labels: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    steps: list[tuple[Mapping[str, str], bool]] | None = None
    live: bool = True
    branches: list[tuple[tuple[str, ...], list[tuple[Mapping[str, str], bool]], bool]] = \
        field(default_factory=list)

    def close_branch(self) -> None:
        if self.steps is not None:
            self.branches.append((tuple(self.labels), self.steps, self.live))
        self.labels, self.steps, self.live = [], None, True

    def worlds(self) -> list[tuple[str, Env]]:
        """Each alternative before the statement, with the assignments of each branch it
        may take: every branch that runs on, or, after earlier presets, the first whose
        pattern matches the subject where a preset gives it a value (none: the preset as it
        was). The plain run (:mod:`.shell_plain_run`) has already kept only the branch of
        a first ``case`` whose subject the script fixes; any other value it left is the
        caller's to choose (``${OTHER:-awq}``)."""
        out: list[tuple[str, Env]] = []
        for label, base in self.before:
            value = base.expand(self.subject.text, k8s=False) \
                if self.subject is not None and len(self.before) > 1 else None
            taken = self.branches
            if isinstance(value, str):
                taken = [next((b for b in self.branches
                               if any(fnmatchcase(value, p) for p in b[0])),
                              ((), [], True))]
            for patterns, steps, live in taken:
                if not live:
                    continue
                env = base
                for assigned, conditional in steps:
                    env = _apply(env, assigned, conditional=conditional)
                pattern = "|".join(patterns) if len(taken) > 1 else ""
                out.append((", ".join(s for s in (label, pattern) if s), env))
        return out


@dataclass
class _If:
    """An ``if`` statement being walked: whether the branch being read runs (``None``: kvlint
    cannot tell) and whether an earlier branch surely ran, surely did not, or may have."""

    depth: int
    runs: bool | None
    taken: bool | None

    def branch(self, condition: bool | None) -> None:
        """Enter an ``elif`` (``condition``) or ``else`` (``True``) branch."""
        if self.taken is True:
            self.runs = False
        elif self.taken is False:
            self.runs = condition
        else:
            self.runs = None if condition is not False else False
        if self.taken is not True:
            self.taken = True if self.runs is True else (
                None if self.runs is None or self.taken is None else False)


def engine_invocations(commands: Sequence[Sequence[Word]], env: Env, *,
                       images: Callable[[int], str | None] | None = None,
                       presets: bool = False) -> list[EngineInvocation]:
    """Every engine command in ``commands`` (from :func:`split_script`, or one exec-form
    command), each parsed with the environment at that point: assignments
    (``TP=$((A * B))``, ``export X=...``) made by earlier commands apply; a variable given
    different values in different ``if`` branches becomes unresolved; a command's own
    ``KEY=VALUE`` prefix applies to it alone. ``images``: the image each command (by
    position) runs in, where the caller knows it, so a ``tritonserver`` in a TensorRT-LLM
    Triton image is read as that engine (:mod:`.triton_launch`).

    ``presets``: a script that picks its model in a ``case`` statement (``case $1 in
    glm-4) MODEL=...;; qwen2) MODEL=...;; *) exit 1;; esac``) serves one of several: an
    engine command whose variables differ between the branches is found once per branch
    that does not exit, each with its :attr:`EngineInvocation.alternative` (the branch's
    patterns), rather than once with those variables unresolved."""
    found: list[EngineInvocation] = []
    depth = 0
    openers: list[str] = []
    cases: list[_Case] = []
    ifs: list[_If] = []
    worlds: list[tuple[str, Env]] = []
    loop = 0
    """The depth of the ``for`` loop whose passes :data:`worlds` are (0: none)."""
    for position, command in enumerate(commands):
        words = list(command)
        if words and ifs and ifs[-1].depth == depth and words[0].text in ("elif", "else"):
            ifs[-1].branch(True if words[0].text == "else" else
                           _condition(words[1:], commands, position, env))
        top = cases[-1] if cases else None
        if top is not None and depth == top.depth and len(words) == 1 and \
                words[0].ends in (")", "|"):  # a branch's pattern: a|b)
            top.pending.append(words[0].text)
            if words[0].ends == ")":
                top.close_branch()
                top.labels, top.pending, top.steps = top.pending, [], []
            continue
        if openers and openers[-1] == "case" and len(words) > 1 and words[0].ends == ")":
            # a branch's pattern and its first command on one line: --model) MODEL="$2"
            if top is not None and depth == top.depth:
                top.pending.append(words[0].text)
                top.close_branch()
                top.labels, top.pending, top.steps = top.pending, [], []
            words = words[1:]
        while words and words[0].text in ("then", "do", "else", "{", "!", "elif", "time"):
            words = words[1:]
        if not words:
            continue
        head = words[0].text
        if head in _OPENERS:
            depth += 1
            openers.append(head)
            passes = _loop_passes(words, env) if head == "for" and not worlds and \
                not cases and not loop else None
            if passes is not None:  # one world per pass of the loop
                var, values = passes
                loop = depth
                worlds = [(f"{var}={value}", env.assign({var: value})) for value in values]
            if head == "if":
                condition = _condition(words[1:], commands, position, env)
                ifs.append(_If(depth, condition, condition))
            if head == "case" and presets:
                cases.append(_Case(depth, words[1] if len(words) > 2 else None,
                                   worlds or [("", env)],
                                   selects=not _LOOPS & set(openers) and not cases))
        if head in _CLOSERS:
            if head == "fi" and ifs and ifs[-1].depth == depth:
                ifs.pop()
            if head == "done" and loop and depth == loop:
                loop, worlds = 0, []
            if head == "esac" and cases and cases[-1].depth == depth:
                frame = cases.pop()
                frame.close_branch()
                if frame.selects and (worlds or len(frame.branches) > 1):
                    made = frame.worlds()
                    if len(made) == 1:  # the one branch the subject's value takes
                        env = made[0][1]
                    worlds = made if 1 < len(made) <= _MOST_PRESETS else []
            depth = max(0, depth - 1)
            if openers:
                openers.pop()
            continue
        if head in ("exit", "return") and top is not None and depth == top.depth:
            top.live = False
        if head in ("if", "while", "until"):  # the condition is a command of its own
            words = words[1:]
            while words and words[0].text == "!":
                words = words[1:]
            if not words:
                continue
        if any(frame.runs is False for frame in ifs):
            continue  # a branch of an if whose test kvlint can read says it does not run
        # the ifs whose branch surely runs do not make what runs in them conditional
        sure = sum(1 for frame in ifs if frame.runs is True)
        assigned = _assignments(words)
        if assigned is not None:
            runs = _runs_after(commands[position - 1], words[0].joined, env) \
                if position and words[0].joined else True
            if runs is not False:  # False: a guard kvlint can read says it does not run
                maybe = depth - sure > 0 or runs is None
                env = _apply(env, assigned, conditional=maybe)
                for frame in cases:
                    if frame.steps is not None:
                        frame.steps.append((assigned, depth > frame.depth or runs is None))
                # a pass of an unrolled loop runs its body: the loop adds no doubt
                within = maybe if not loop else (depth - sure - 1 > 0 or runs is None)
                worlds = [(label, _apply(world, assigned, conditional=within))
                          for label, world in worlds]
            continue
        variants: list[tuple[str | None, Env]] = \
            list(_variants(words, worlds)) if not cases else []
        for label, world in variants or [(None, env)]:
            invocation = _invocation(words, world, position, images)
            if invocation is not None and label and loop:
                found.append(replace(invocation, iteration=label))
            elif invocation is not None:
                found.append(replace(invocation, alternative=label) if label else invocation)
    return found


_BRACE_RANGE = re.compile(r"\{(-?\d{1,6})\.\.(-?\d{1,6})\}")
_SEQ = re.compile(r"\$\(\s*seq\s+([^()]*(?:\$\(\([^()]*\)\)[^()]*)*)\)")


def _loop_passes(words: Sequence[Word], env: Env) -> tuple[str, list[str]] | None:
    """``(VAR, values)`` of ``for VAR in WORDS`` when kvlint can list the values (plain
    words, variables it can expand, ``{0..7}``, ``$(seq A B)``), two to
    :data:`MAX_LOOP_PASSES` of them; ``None`` otherwise."""
    if len(words) < 4 or words[2].text != "in" or not _NAME.fullmatch(words[1].text):
        return None
    values: list[str] = []
    for word in words[3:]:
        if word.text in ("do", ";"):
            break
        brace = _BRACE_RANGE.fullmatch(word.text)
        seq = _SEQ.fullmatch(word.text)
        if brace is not None:
            low, high = int(brace.group(1)), int(brace.group(2))
            if abs(high - low) >= MAX_LOOP_PASSES:
                return None
            step = 1 if high >= low else -1
            values += [str(n) for n in range(low, high + step, step)]
        elif seq is not None:
            bounds = env.expand(seq.group(1), k8s=False)
            numbers = bounds.split() if isinstance(bounds, str) else []
            if not numbers or len(numbers) > 3 or \
                    not all(re.fullmatch(r"-?\d{1,6}", n) for n in numbers):
                return None
            first, *rest = [int(n) for n in numbers]
            low, step, high = (1, 1, first) if not rest else (
                (first, 1, rest[0]) if len(rest) == 1 else (first, rest[0], rest[1]))
            if step <= 0 or (high - low) // step >= MAX_LOOP_PASSES:
                return None
            values += [str(n) for n in range(low, high + 1, step)]
        else:
            value = env.expand(word.text, k8s=False)
            if not isinstance(value, str):
                return None
            values += value.split() if word.split else [value]
        if len(values) > MAX_LOOP_PASSES:
            return None
    return (words[1].text, values) if len(values) > 1 else None


def _variants(words: Sequence[Word], worlds: list[tuple[str, Env]]
              ) -> list[tuple[str, Env]]:
    """The alternatives ``words`` runs differently in: ``worlds`` when a variable it names
    has different values in two of them, otherwise none."""
    if len(worlds) < 2:
        return []
    names = {m.group(0).strip("${}") for w in words if not w.literal
             for m in _REFERENCE.finditer(w.text)}
    for name in names:
        seen = {str(world.get(name)) for _, world in worlds}
        if len(seen) > 1:
            return worlds
    return []


def _invocation(words: list[Word], env: Env, position: int,
                images: Callable[[int], str | None] | None) -> EngineInvocation | None:
    """The engine command ``words`` is, in ``env`` (``None``: none)."""
    prefix, rest = split_env_prefix(words)
    hit = find_program([_program(w.text, env) if i < 3 else w.text
                        for i, w in enumerate(rest)])
    local = env.assign(prefix) if prefix else env
    if hit is None:
        triton = triton_launch(rest, env=local, image=images(position) if images else None)
        if triton is None:
            return _wrapper_invocation(rest, local, position)
        return EngineInvocation(engine=triton.engine, args=triton_args(triton), line=triton.line,
                                words=tuple(rest), index=triton.program + 1, env=local,
                                position=position)
    engine, program, index = hit
    args = with_env(parse_engine_args(
        engine, command_arguments(engine, rest, program, index), local), local)
    swallowed = _swallowed(rest, program, engine)
    if swallowed is not None:
        args = replace(args, refused=(*args.refused, swallowed))
    if any(w.text.removeprefix("-m") in WRAPPER_MODULES for w in rest[program:index]):
        # python -m dynamo.X adds its own options to the engine's: not judged
        args = judge_known_options_only(args)
    return EngineInvocation(engine=engine, args=args, line=rest[program].line,
                            words=tuple(rest), index=index, env=local, position=position)


_WRAPPER_NAME = re.compile(r"(?i)(?:^|[^a-z])(llama|vllm|sglang|lmdeploy|tgi|trtllm)"
                           r"(?:[^a-z]|$).*?(?:serve|server|launch|start|run)|"
                           r"(?:serve|server|launch|start|run).*?(?:^|[^a-z])"
                           r"(llama|vllm|sglang|lmdeploy|tgi|trtllm)(?:[^a-z]|$)")
"""A program or shell function named for an engine's server (``run_llama_server``,
``start-vllm``, ``launch_sglang``): the engine word beside a serve/launch/start/run word."""
_NAMED_ENGINE = {"llama": "llamacpp", "vllm": "vllm", "sglang": "sglang",
                 "lmdeploy": "lmdeploy", "tgi": "tgi", "trtllm": "trtllm"}


def _wrapper_invocation(rest: list[Word], env: Env, position: int) -> EngineInvocation | None:
    """A command of a program kvlint does not know (a function of a sourced file, a wrapper
    script on PATH) that is named for an engine's server and given options only that
    engine's parser has (``run_llama_server --ctx-size 32768 --gpu-layers 100``): that
    engine's server, its options as the wrapper hands them on. Only options the engine
    knows are judged (the wrapper may take others of its own)."""
    from kvlint.manifests.cli_options import engine_of_options

    if len(rest) < 2 or "/" in rest[0].text or not rest[1].text.startswith("-"):
        return None
    named = _WRAPPER_NAME.search(rest[0].text)
    if named is None:
        return None
    engine = _NAMED_ENGINE[(named.group(1) or named.group(2)).lower()]
    if engine_of_options([w.text for w in rest[1:]]) != engine:
        return None
    args = judge_known_options_only(with_env(parse_engine_args(engine, rest[1:], env), env))
    note = (f"{rest[0].text} is not a program kvlint knows; named for the {engine_display(engine)}"
            f" server and given its options, it is read as a wrapper that starts it")
    return EngineInvocation(engine=engine, args=replace(args, notes=(*args.notes, note)),
                            line=rest[0].line, words=tuple(rest), index=1, env=env,
                            position=position)


def _swallowed(words: Sequence[Word], program: int, engine: str) -> EngineArgProblem | None:
    """KV707: the engine's program is an argument of the command it is written into
    (``huggingface-cli download org/m --local-dir /models python3 -m vllm...``, the lines of a
    YAML quoted or folded string joined with spaces and no ``;`` between them)."""
    if program == 0 or not takes_its_line(words[0].text):
        return None
    first, word = words[0], words[program]
    shown = " ".join(w.text for w in words[:min(program, 3)])
    where = f" on line {first.line}" if first.line else ""
    return EngineArgProblem(
        "swallowed", word.text,
        f"'{word.text} ...' is part of the command '{shown} ...'{where}: nothing ends that "
        "command before it (no ';', '&&' or line break; a YAML quoted or folded string joins "
        f"its lines with spaces), so {first.text} takes the {engine_display(engine)} command "
        f"as its own arguments and {engine_display(engine)} never starts. End the "
        f"'{first.text}' command with ';' or '&&'.",
        word.line, word.column, {"command": first.text})


_REFERENCE = re.compile(r"\$(?:\{\w+\}|\w+)")


_DEFAULTED_WORD = re.compile(r"\$\{[A-Za-z_]\w{0,63}:?[-=][^}$`]{1,256}\}")
"""A program word with a default: ``"${PYTHON:-python3}" -m vllm...``."""


def _program(text: str, env: Env) -> str:
    """A command word that is one variable (``"${VLLM}" serve``, ``VLLM=$HOME/venv/bin/vllm``)
    as the environment expands it, so the program it names is found; other words as
    written."""
    if not _REFERENCE.fullmatch(text) and not _DEFAULTED_WORD.fullmatch(text):
        return text
    value = env.expand(text, k8s=False)
    if isinstance(value, str) and value.strip():
        return value
    return env.programs.get(text.strip("${}"), text)  # BIN=$VENV/bin/sglang: sglang


_TESTS = {"[[": "]]", "[": "]", "test": ""}
_NUMERIC = {"-eq": lambda a, b: a == b, "-ne": lambda a, b: a != b, "-lt": lambda a, b: a < b,
            "-le": lambda a, b: a <= b, "-gt": lambda a, b: a > b, "-ge": lambda a, b: a >= b}


def _operand(word: Word, env: Env) -> str | None:
    """A test operand's value (``None``: kvlint cannot expand it)."""
    if word.literal or "$" not in word.text:
        return word.text
    value = env.expand(word.text, k8s=False)
    return value if isinstance(value, str) else None


def _test(words: Sequence[Word], env: Env, *, other: bool | None = None) -> bool | None:
    """Whether a test command succeeds: ``[ -n "$X" ]``, ``[[ -z $X ]]``, ``test "$X"``,
    ``[ "$A" = "1" ]`` (``==``, ``!=``; in ``[[ ]]`` the right side is a pattern) and the
    integer comparisons (``-eq``...), each maybe negated with ``!``; ``None`` for a string
    kvlint cannot expand or a command that is no test (a program); ``other`` for a test of
    anything else (a file)."""
    words = list(words)
    negate = False
    while words and words[0].text == "!":
        negate, words = not negate, words[1:]
    if not words or words[0].text not in _TESTS:
        return None
    close = _TESTS[words[0].text]
    body = words[1:-1] if close and words[-1].text == close else words[1:]
    while body and body[0].text == "!":
        negate, body = not negate, body[1:]
    result: bool | None = None
    if len(body) == 2 and body[0].text in ("-n", "-z"):
        value = _operand(body[1], env)
        if value is not None:
            result = bool(value) == (body[0].text == "-n")
    elif len(body) == 1:
        value = _operand(body[0], env)
        result = bool(value) if value is not None else None
    elif len(body) == 3 and body[1].text in ("=", "==", "!=", *_NUMERIC):
        left, right = _operand(body[0], env), _operand(body[2], env)
        if left is None or right is None:
            return None
        if body[1].text in _NUMERIC:
            if not (re.fullmatch(r"-?\d{1,18}", left) and re.fullmatch(r"-?\d{1,18}", right)):
                return None
            result = bool(_NUMERIC[body[1].text](int(left), int(right)))
        else:
            same = fnmatchcase(left, right) if close == "]]" and not body[2].literal \
                else left == right
            result = same == (body[1].text != "!=")
    else:
        return other  # a file test or another form: not read, negated or not
    return None if result is None else result != negate


def _condition(first: Sequence[Word], commands: Sequence[Sequence[Word]], position: int,
               env: Env) -> bool | None:
    """Whether an ``if``/``elif`` condition holds: the test ``first`` and the tests joined to
    it by ``&&``/``||`` (``[[ -n $A ]] && [[ -z $B ]]``), read left to right as the shell
    does; ``None`` where a part kvlint cannot read decides it."""
    result = _test(first, env)
    for index, following in enumerate(commands[position + 1:], 1):
        if not following or following[0].joined not in ("&&", "||"):
            break
        if index > 16:
            return None  # a chain this long is not a plain test (bounded)
        value = _test(following, env)
        if following[0].joined == "&&":
            result = False if result is False or value is False else (
                True if result is True and value is True else None)
        else:
            result = True if result is True or value is True else (
                False if result is False and value is False else None)
    return result


def _runs_after(guard: Sequence[Word], joined: str, env: Env) -> bool | None:
    """Whether a command joined by ``&&``/``||`` to ``guard`` runs, when ``guard`` is a test
    :func:`_test` reads (``[[ -n "$X" ]]``, ``[ "$A" = 1 ]``...): ``None`` when kvlint cannot
    expand what it tests. Any other command, or a test of something else (a file), is taken
    to succeed (``cd dir && MODEL=...``), as kvlint read it before."""
    if not guard or guard[0].text not in _TESTS:
        return joined == "&&"
    true = _test(guard, env, other=True)
    if true is None:
        return None
    return true if joined == "&&" else not true


_DEFAULT_ASSIGN = re.compile(r"\$\{([A-Za-z_]\w{0,63})(:?)=(.*)\}", re.DOTALL)
"""``${NAME:=default}`` (``${NAME=default}``) as a whole word: sets NAME to the default when it
is unset (or empty), the way ``: "${NAME:=default}"`` sets a script's defaults."""


def _assignments(words: list[Word]) -> dict[str, str] | None:
    """The assignments of a command made only of them (``A=1 B=2``, ``export A=1``, the
    ``:`` builtin's ``${A:=1}`` defaults)."""
    if words[0].text == ":" and len(words) > 1:
        defaults = [_DEFAULT_ASSIGN.fullmatch(w.text) for w in words[1:]]
        if all(found is not None for found in defaults):
            # NAME keeps a value it has, else takes the default: ${NAME:-default}
            return {found.group(1): LStr(f"${{{found.group(1)}{found.group(2)}-"
                                         f"{found.group(3)}}}", word.line or 0)
                    for found, word in zip(defaults, words[1:], strict=True)
                    if found is not None}
        return None
    start = 1 if words[0].text in _DECLARE else 0
    body = [w for w in words[start:] if not w.text.startswith("-")]
    if start == 0 and not body:
        return None
    out: dict[str, str] = {}
    for word in body:
        match = _ASSIGNMENT.fullmatch(word.text)
        if match is None:
            if start and _NAME.fullmatch(word.text):
                continue  # export NAME: no new value
            return None
        out[match.group(1)] = LStr(match.group(2), word.line or 0)
    return out


_ARGUMENT = re.compile(r"\$(?:[1-9]|\{(?:[1-9]|OPTARG)\}|OPTARG)")
"""A script argument as a whole value: a positional parameter or getopts' ``OPTARG``."""


def _apply(env: Env, assigned: Mapping[str, str], *, conditional: bool) -> Env:
    new = env.assign(assigned)
    if not conditional:
        return new
    values: dict[str, str | None] = {}
    reasons: dict[str, str] = {}
    programs: dict[str, str] = {}
    for name in assigned:
        # the program a path names, when every branch so far names the same one
        # (BIN="$VENV/bin/sglang" in one, BIN="$(command -v sglang)" in another)
        named = {p for p in (_program_of(env, name), _program_of(new, name)) if p}
        if len(named) == 1 and (name not in env.values or _program_of(env, name)):
            programs[name] = named.pop()
        try:
            before = env.lookup(name)
        except _Unset:  # set earlier to a value kvlint cannot read: this branch may not run
            values[name] = None
            reasons[name] = env.reasons.get(name) or \
                f"${name} has a value kvlint cannot read unless this branch of the script runs"
            continue
        after = new.values.get(name)
        if before is not None and _ARGUMENT.fullmatch(str(assigned[name]).strip()):
            # an option loop's -m|--model) MODEL="$2": set only when the script is given
            # arguments; run as written, it keeps its default (as ${1:-default} does),
            # unless that default is empty: then the argument is what the script needs
            if str(before).strip():
                values[name] = before
            else:
                values[name] = None
                reasons[name] = (f"${name} is set from the script's arguments (its default "
                                 "is empty)")
            continue
        if before is not None and after != before:
            values[name] = None
            reasons[name] = (f"${name} is given different values in different branches of "
                             "the script")
        else:
            values[name] = after
            if after is None and name in new.reasons:
                reasons[name] = new.reasons[name]
    return env.with_values(values, reasons, programs)


def _program_of(env: Env, name: str) -> str | None:
    """The program ``name`` holds the path of: its value's last component, or the one an
    unresolved path ends in."""
    if name in env.programs:
        return env.programs[name]
    value = env.values.get(name)
    return value.rsplit("/", 1)[-1] or None if isinstance(value, str) and value.strip() \
        else None
