"""Engine command lines, read without running them: :func:`parse_engine_args` reads the
arguments of an invocation :func:`~.engine_programs.find_engine` recognised, the way that
engine's own parser does (option tables in :mod:`.cli_options`), each word expanded through
an :class:`~kvlint.manifests.shell_env.Env` first; TGI and llama.cpp also read options from
their environment (:func:`env_args_tgi`, :func:`env_args_llamacpp`).
:func:`kvlint.manifests.engine_env.engine_invocations` does all of it for a list of commands,
following assignments. The highest of the shell modules: it builds on
:mod:`.engine_programs`, :mod:`.shell_words` and :mod:`.shell_env`, which never import it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.cli_option_tables import OPTION_TABLES
from kvlint.manifests.cli_options import (
    BOOL_FIELDS,
    FIELD_OPTIONS,
    GRAMMAR_RULES,
    INT_FIELDS,
    LLAMACPP_ENV,
    LMDEPLOY_QUANT_POLICY,
    TABLE_FIELDS,
    TAKES_ANY_VALUE,
    TGI_ENV,
)
from kvlint.manifests.engine_integers import integer_value
from kvlint.manifests.model_overrides import config_overrides
from kvlint.manifests.shell_env import Env, Token, expand_words
from kvlint.manifests.shell_words import Word
from kvlint.model.engine_args import EngineArgProblem

__all__ = [
    "EngineArgs",
    "OptionUse",
    "env_args_llamacpp",
    "env_args_tgi",
    "field_of_option",
    "judge_known_options_only",
    "parse_engine_args",
    "router_mode",
]


@dataclass(frozen=True)
class EngineArgs:
    """What an engine command line sets. ``None``: not given (the engine's default);
    :class:`Unresolved`: given, but the manifest does not determine the value.

    ``unknown`` holds options the engine's parser would not recognise (or that are
    ambiguous abbreviations) and words kvlint could not place; ``options`` every recognised
    option by its canonical spelling; ``notes`` what a reader should know (an abbreviation
    expanded, a legacy variable read...).
    """

    engine: str
    model: Located[str] | Unresolved | None = None
    served_name: Located[str] | Unresolved | None = None
    tp: Located[int] | Unresolved | None = None
    pp: Located[int] | Unresolved | None = None
    dp: Located[int] | Unresolved | None = None
    dp_attention: Located[bool] | None = None
    ep: Located[int] | Unresolved | None = None
    kv_cache_dtype: Located[str] | Unresolved | None = None
    max_model_len: Located[int] | Unresolved | None = None
    max_num_seqs: Located[int] | Unresolved | None = None
    max_num_batched_tokens: Located[int] | Unresolved | None = None
    """vLLM ``--max-num-batched-tokens``: the size of its start-up profile run."""
    kv_cache_memory_bytes: Located[int] | Unresolved | None = None
    """vLLM ``--kv-cache-memory-bytes``: the KV cache's bytes per GPU, set by hand."""
    extensible_kv_cache: Located[bool] | Unresolved | None = None
    """vLLM ``--[no-]enable-extensible-kv-cache`` (0.34.0)."""
    kv_tokens_cap: Located[int] | Unresolved | None = None
    """SGLang ``--max-total-tokens``: the most tokens its KV pool holds."""
    gpu_memory_utilization: Located[float] | Unresolved | None = None
    # SGLang --chunked-prefill-size (-1: none), --cuda-graph-max-bs, --page-size and
    # --speculative-algorithm (its memory at start); LMDeploy --backend
    prefill_chunk: Located[int] | Unresolved | None = None
    graph_batch: Located[int] | Unresolved | None = None
    graph_off: Located[bool] | Unresolved | None = None
    """SGLang ``--disable-cuda-graph``."""
    swa_ratio: Located[float] | Unresolved | None = None
    """SGLang ``--swa-full-tokens-ratio``."""
    lora: Located[bool] | Unresolved | None = None
    """vLLM ``--enable-lora``: LoRA adapters' buffers are allocated at start (kvlint.model.lora)."""
    max_loras: Located[int] | Unresolved | None = None
    max_lora_rank: Located[int] | Unresolved | None = None
    lora_sharded: Located[bool] | Unresolved | None = None
    """vLLM ``--fully-sharded-loras``."""
    cpu_offload: Located[float] | Unresolved | None = None
    """vLLM and SGLang ``--cpu-offload-gb``: GiB of weights each GPU keeps in CPU memory."""
    page_size: Located[int] | Unresolved | None = None
    speculative: Located[str] | Unresolved | None = None
    backend: Located[str] | Unresolved | None = None
    config_file: Located[str] | Unresolved | None = None
    unknown: tuple[str, ...] = ()
    expert_parallel: Located[bool] | None = None
    """vLLM ``--enable-expert-parallel``, SGLang ``--enable-ep-moe`` (the EP size follows
    from tp x dp)."""
    dp_local: Located[int] | Unresolved | None = None
    """vLLM ``--data-parallel-size-local``: DP ranks on this node."""
    nnodes: Located[int] | Unresolved | None = None
    """SGLang / LMDeploy ``--nnodes``."""
    dtype: Located[str] | Unresolved | None = None
    quantization: Located[str] | Unresolved | None = None
    """vLLM/SGLang ``--quantization``, TGI ``--quantize`` / ``QUANTIZE``, LMDeploy
    ``--model-format``: the weight format the engine loads (or converts) the checkpoint to."""
    node_rank: Located[int] | Unresolved | None = None
    """SGLang ``--node-rank``: which node of an ``--nnodes`` server this command starts (only
    node 0 serves requests)."""
    config_overrides: Located[str] | Unresolved | None = None
    """Model-config fields the command overrides (vLLM ``--hf-overrides``, ``--rope-scaling``,
    ``--rope-theta``; SGLang ``--json-model-override-args``), as canonical JSON text
    (:mod:`.model_overrides`)."""
    trust_remote_code: Located[bool] | Unresolved | None = None
    """vLLM/SGLang ``--trust-remote-code``; :class:`Unresolved` when the command has words
    kvlint cannot expand (or a ``--config`` file it did not read) that may give it."""
    notes: tuple[str, ...] = ()
    refused: tuple[EngineArgProblem, ...] = ()
    """What is wrong with the command line whatever the engine's version (KV707: the engine
    command is an argument of another command)."""
    options: Mapping[str, Located[Any] | Unresolved] = field(
        default_factory=dict, compare=False, hash=False, repr=False)
    env: Mapping[str, Located[str] | Unresolved] = field(
        default_factory=dict, compare=False, hash=False, repr=False)
    """Variables of the process's environment that change what the engine accepts
    (``manifests.engine_env``)."""
    uses: tuple[OptionUse, ...] = field(default=(), compare=False, hash=False, repr=False)
    """Every option word of the command line, in order, as the engine's parser meets it
    (judged against the engine version by :mod:`.engine_options`: KV701/KV702)."""


@dataclass(frozen=True)
class OptionUse:
    """One option as written on an engine command line.

    ``canonical`` is the option it resolves to in the union of the option tables (``None``:
    unknown, ambiguous or refused spelling; ``reason`` says which); ``values`` the words it
    took (``None`` for a value kvlint cannot expand); ``inline`` whether the value was given
    as ``--flag=value``; ``kind`` the option's arity (``value``, ``flag``, ``many``...)."""

    name: str
    canonical: str | None
    kind: str
    values: tuple[str | None, ...]
    line: int | None
    column: int | None
    inline: bool = False
    reason: str = ""
    source: str = ""
    """Where the value came from when not the command line (``env NUM_SHARD``)."""
    value_line: int | None = None
    """The last line of the option's value words when below the option's own line (a flag
    and its value on separate lines): the end of the finding's span, for suppressions."""
    written: str = ""
    """The first value as written when an expansion gave it (``${KV_CACHE_MEMORY_BYTES-}``);
    empty when it was written as it is."""


@dataclass(frozen=True)
class _Grammar:
    kinds: Mapping[str, str]
    longs: tuple[str, ...]
    underscores: bool
    abbrev: bool
    positional_model: bool


@cache
def _grammar(engine: str) -> _Grammar:
    kinds: dict[str, str] = {}
    for kind, names in OPTION_TABLES.get(engine, {}).items():
        for name in names.split():
            kinds[name] = "flag" if kind == "negatable" else kind
            if kind == "negatable" and name.startswith("--"):
                kinds["--no-" + name[2:]] = "flag"
    for fields in FIELD_OPTIONS.get(engine, {}).values():
        for name in fields:
            kinds.setdefault(name, "value")
    underscores, abbrev, positional = GRAMMAR_RULES.get(engine, (False, False, False))
    for name, kind in _table_spellings(engine).items():
        # engines.toml spellings are always recognised, unless argparse reaches them as
        # an abbreviation anyway (SGLang's --tp is a prefix of --tp-size, not an alias)
        if name not in kinds and not (abbrev and any(k.startswith(name) for k in kinds)):
            kinds[name] = kind
    longs = tuple(sorted(k for k in kinds if k.startswith("--")))
    return _Grammar(kinds, longs, underscores, abbrev, positional)


@cache
def _table_spellings(engine: str) -> dict[str, str]:
    """Option spellings of ``engines.toml`` ``[engines.X.flags]`` (kind by key)."""
    try:
        from kvlint.engines import load_engines

        spec = load_engines().get(engine)
    except Exception:  # pragma: no cover - the table is optional here
        return {}
    out: dict[str, str] = {}
    if spec is not None:
        for key, spellings in spec.flags.items():
            for name in spellings:
                if name.startswith("-"):
                    flag = key == "dp_attention" and engine == "sglang" and "size" not in name
                    out[name] = "flag" if flag else "value"
    return out


@cache
def _field_options(engine: str) -> dict[str, tuple[str, ...]]:
    """Semantic field → option spellings: kvlint's list, plus engines.toml's."""
    fields = {k: tuple(v) for k, v in FIELD_OPTIONS.get(engine, {}).items()}
    grammar = _grammar(engine)
    try:
        from kvlint.engines import load_engines

        spec = load_engines().get(engine)
    except Exception:  # pragma: no cover
        spec = None
    if spec is not None:
        for key, target in TABLE_FIELDS.items():
            for name in spec.flags.get(key, ()):
                if name in grammar.kinds and name not in fields.get(target, ()):
                    fields[target] = (*fields.get(target, ()), name)
    return fields


def _resolve_option(grammar: _Grammar, name: str) -> tuple[str | None, str, str]:
    """``(canonical, kind, note)``: ``canonical`` is ``None`` for an unknown or ambiguous
    option (``note`` says which)."""
    lookup = name
    if grammar.underscores and name.startswith("--"):
        head, dot, tail = name[2:].partition(".")
        lookup = "--" + head.replace("_", "-") + dot + tail
    base = lookup.split(".", 1)[0] if lookup.startswith("--") else lookup
    kind = grammar.kinds.get(base)
    if kind is not None:
        if base != lookup:
            return base, "value", ""  # --compilation-config.level 3: a JSON field
        return base, kind, ""
    if grammar.abbrev and base.startswith("--") and len(base) > 2:
        at = bisect.bisect_left(grammar.longs, base)
        matches = []
        while at < len(grammar.longs) and grammar.longs[at].startswith(base):
            matches.append(grammar.longs[at])
            at += 1
        if len(matches) == 1:
            full = matches[0]
            return full, grammar.kinds[full] if base == lookup else "value", (
                f"{name} is an abbreviation of {full} (argparse accepts unique prefixes)")
        if len(matches) > 1:
            shown = ", ".join(matches[:4]) + (", ..." if len(matches) > 4 else "")
            return None, "value", (f"{name} is an ambiguous abbreviation ({shown}); the "
                                   "engine refuses it")
    if grammar.underscores is False and name.startswith("--") and "_" in name:
        dashed = name.replace("_", "-")
        if dashed in grammar.kinds:
            return None, grammar.kinds[dashed], (
                f"{name}: this engine does not accept underscores for {dashed}")
    return None, "value", ""


def _is_option(token: Token) -> bool:
    text = token.text
    return (text is not None and text.startswith("-") and text != "-"
            and not re.fullmatch(r"-\d+(\.\d+)?", text))


@dataclass
class _Parsed:
    values: dict[str, tuple[str, list[Token], str]] = field(default_factory=dict)
    """canonical option → (spelling used, value tokens, note) of its last occurrence."""
    positionals: list[Token] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    order: dict[str, int] = field(default_factory=dict)
    """canonical option → position of its last occurrence (aliases: the last one wins)."""
    uses: list[OptionUse] = field(default_factory=list)

    def record(self, name: str, canonical: str | None, kind: str, note: str,
               values: list[Token], token: Token, *, inline: bool) -> None:
        reason = "" if canonical is not None else (
            "ambiguous" if "ambiguous" in note else
            "underscore" if "underscores" in note else "unknown")
        below = [v.line for v in values if v.line is not None and token.line is not None
                 and v.line > token.line]
        written = values[0].raw if values and "$" in values[0].raw else ""
        self.uses.append(OptionUse(name, canonical, kind, tuple(v.text for v in values),
                                   token.line, token.column, inline, reason,
                                   value_line=max(below) if below else None,
                                   written=written))
        if canonical is None:
            self.unknown.append(name)
            return
        self.values[canonical] = (name, values, note)
        self.order[canonical] = len(self.uses)


def _scan(engine: str, tokens: list[Token]) -> _Parsed:
    grammar = _grammar(engine)
    out = _Parsed()
    i = 0
    n = len(tokens)
    while i < n:
        token = tokens[i]
        i += 1
        if token.text is None:
            raw_name, raw_eq, raw_value = token.raw.partition("=")
            if raw_eq and raw_name.startswith("-") and "$" not in raw_name:
                canonical, kind, note = _resolve_option(grammar, raw_name)
                if note:
                    out.notes.append(note)
                # the value's own text (--model=$(MODEL) -> $(MODEL)), not the whole word
                value = replace(token, raw=raw_value, unresolved=replace(
                    token.unresolved, text=raw_value) if token.unresolved else None)
                out.record(raw_name, canonical, kind, note, [value], token, inline=True)
                continue
            out.positionals.append(token)
            continue
        if token.text == "--":
            out.positionals.extend(tokens[i:])
            break
        if not _is_option(token):
            out.positionals.append(token)
            continue
        text = token.text
        name, eq, inline = text.partition("=")
        if engine == "llamacpp" and eq:
            # llama.cpp looks the whole word up: --ctx-size=4096 is no option of its
            out.record(text, None, "flag", "", [], token, inline=True)
            out.uses[-1] = replace(out.uses[-1], reason="inline")
            continue
        if engine == "vllm" and re.fullmatch(r"-O\d", text):
            out.record(text, "--optimization-level", "value", "",
                       [Token(text[2:], None, token.line, text)], token, inline=True)
            continue
        canonical, kind, note = _resolve_option(grammar, name)
        if note:
            out.notes.append(note)
        values: list[Token] = []
        if eq:
            raw_value = token.raw.partition("=")[2] if "=" in token.raw else inline
            values = [Token(inline, None, token.line, raw_value)]
        elif kind == "value":
            # argparse and clap refuse an option-like word as the value ("expected one
            # argument"); click and llama.cpp take the next word whatever it is
            if i < n and (not _is_option(tokens[i]) or engine in TAKES_ANY_VALUE):
                values = [tokens[i]]
                i += 1
        elif kind == "optional":
            if i < n and not _is_option(tokens[i]) and (
                    engine != "llamacpp" or (tokens[i].text or "").lower() in (
                        "on", "off", "auto", "true", "false", "1", "0")):
                values = [tokens[i]]
                i += 1
        elif kind == "many":
            while i < n and not _is_option(tokens[i]):
                values.append(tokens[i])
                i += 1
        out.record(name, canonical, kind, note, values, token, inline=bool(eq))
    return out


def _source(spelling: str, tokens: list[Token]) -> str:
    raw = " ".join(t.raw for t in tokens if "$" in t.raw or "`" in t.raw)
    return f"{spelling} {raw}" if raw else spelling


def _convert(engine: str, key: str, spelling: str, canonical: str, values: list[Token],
             line: int | None) -> Located[Any] | Unresolved | None:
    source = _source(spelling, values)
    if key in BOOL_FIELDS:
        negated = canonical.startswith("--no-")
        if values:
            text = (values[0].text or "").strip().lower()
            if values[0].unresolved is not None:
                return values[0].unresolved
            flag = text in ("1", "true", "yes", "on", "")
            return Located(flag and not negated, line, source=source)
        return Located(not negated, line, source=source)
    if not values:
        return Unresolved(reason=f"{spelling} is given without a value", line=line,
                          text=spelling)
    first = values[0]
    if first.unresolved is not None:
        return Unresolved(reason=first.unresolved.reason, line=line,
                          text=first.unresolved.text or first.raw)
    text = (first.text or "").strip()
    if key in INT_FIELDS:
        number = integer_value(engine, key, text)
        if number is None:
            return Unresolved(reason=f"{spelling} {text!r} is not an integer the engine "
                              "accepts", line=line, text=text)
        if number < 0 and key == "max_model_len":
            return None  # -1 / auto: the engine derives it
        return Located(number, line, source=source)
    if key in ("gpu_memory_utilization", "swa_ratio", "cpu_offload"):
        try:
            return Located(float(text), line, source=source)
        except ValueError:
            return Unresolved(reason=f"{spelling} {text!r} is not a number", line=line,
                              text=text)
    if key == "kv_cache_dtype" and engine == "lmdeploy":
        mapped = LMDEPLOY_QUANT_POLICY.get(text.lower())
        if mapped is None:
            return Unresolved(reason=f"--quant-policy {text!r} is not a policy LMDeploy "
                              "knows", line=line, text=text)
        return Located(mapped, line, source=source)
    if key == "served_name" and len(values) > 1:
        return Located(text, line, source=source)
    return Located(text, line, source=source)


def field_of_option(engine: str) -> dict[str, str]:
    """Option spelling → the :class:`EngineArgs` field it sets (``--tensor-parallel-size``
    → ``tp``), for every spelling kvlint reads for ``engine``."""
    return {name: key for key, names in _field_options(engine).items() for name in names}


def command_arguments(engine: str, words: Sequence[Word], program: int, index: int
                      ) -> list[Word]:
    """The arguments of the engine command ``words`` (program at ``program``, arguments from
    ``index``), as the engine's parser reads them: ``sglang serve MODEL ...`` takes its first
    argument as ``--model-path`` when it is not an option (sglang/cli/serve.py
    ``_normalize_positional_model_path``, first in the 0.5.16 wheel; absent in 0.5.15)."""
    rest = list(words[index:])
    if engine == "sglang" and index - program == 2 and words[program + 1].text == "serve" \
            and rest and not rest[0].text.startswith("-"):
        return [Word("--model-path", rest[0].line, column=rest[0].column), *rest]
    return rest


def _lmdeploy_dp_world(fields: dict[str, Any], notes: list[str]) -> None:
    """LMDeploy's PyTorch backend with ``--dp`` > 1 starts one server per DP rank over
    ``max(dp, tp, ep)`` GPUs, each rank on ``world / dp`` of them
    (lmdeploy/serve/openai/launch_server.py@0.18.0 ``num_devices = max(dp, tp, ep)``,
    ``tp_per_dp = num_devices // dp``; an earlier copy, the code index's
    launch_server.py@011536f5, asserts ``tp <= dp`` and ``ep <= dp`` and gives each rank one
    GPU: the same world). In kvlint's terms that is tp = the world with
    DP attention over it (``--tp 1 --dp 8 --ep 8`` is 8 GPUs, like SGLang's ``--tp 8 --dp 8
    --enable-dp-attention``). Only with ``--backend pytorch`` given: TurboMind serves DP
    inside one server (lmdeploy/cli/serve.py@0.18.0), and the default backend is chosen
    by the model."""
    backend = fields.get("backend")
    if not (isinstance(backend, Located) and backend.value == "pytorch"):
        return
    degrees = [fields.get(name) for name in ("dp", "tp", "ep")]
    if any(isinstance(d, Unresolved) for d in degrees):
        return
    values = [d.value if isinstance(d, Located) else 1 for d in degrees]
    world = max(values)
    if world == values[1]:
        return
    tp = fields.get("tp")
    where = tp if isinstance(tp, Located) else fields["dp"]
    fields["tp"] = Located(world, where.line, where.column,
                           f"LMDeploy's DP world: max(--dp {values[0]}, --tp {values[1]}, "
                           f"--ep {values[2]}) GPUs, {world // values[0]} per DP rank")
    notes.append(f"--dp {values[0]} with the PyTorch backend runs {values[0]} servers over "
                 f"{world} GPUs (max of --dp, --tp, --ep): read as tp {world} with DP "
                 "attention")


def parse_engine_args(engine: str, words: Sequence[Word], env: Env) -> EngineArgs:
    """The arguments of an ``engine`` command line (``words`` after the program, as
    :func:`find_engine` indexes them), read with that engine's parser rules:

    ``--flag value`` and ``--flag=value``; vLLM's dash/underscore equivalence; argparse's
    unique-prefix abbreviations for vLLM, SGLang and LMDeploy (``--max-num-seq`` →
    ``--max-num-seqs``; an ambiguous prefix is reported, not guessed); click/clap/llama.cpp
    exact names for TensorRT-LLM, TGI and llama.cpp; boolean flags and ``--no-`` negations;
    a positional model for ``vllm serve``, ``lmdeploy serve api_server`` and
    ``trtllm-serve``; the last occurrence of an option wins, across its aliases
    (``--tensor-parallel-size=4 -tp=8`` is 8). Every option word is kept in
    ``EngineArgs.uses`` (with its line and column) for :mod:`.engine_options` to judge
    against the engine version (KV701/KV702). Every word is expanded through
    ``env`` first (unquoted expansions split into words); a value that cannot be resolved is
    :class:`Unresolved`. TGI and llama.cpp read options not given on the command line from
    their environment variables (``NUM_SHARD``, ``LLAMA_ARG_CTX_SIZE``...).
    """
    tokens = expand_words(words, env)
    parsed = _scan(engine, tokens)
    grammar = _grammar(engine)
    fields: dict[str, Any] = {}
    options: dict[str, Located[Any] | Unresolved] = {}
    last_line: dict[str, int | None] = {}  # each option word's line, its last use winning
    for token in tokens:
        if token.text is not None:
            last_line[token.text.split("=", 1)[0]] = token.line
    for canonical, (spelling, values, _note) in parsed.values.items():
        line = last_line.get(spelling)
        if values and line is None:
            line = values[0].line
        if values and values[0].unresolved is not None:
            options[canonical] = Unresolved(reason=values[0].unresolved.reason, line=line,
                                            text=values[0].unresolved.text or values[0].raw)
        else:
            value: Any = (True if not values else
                          values[0].text if len(values) == 1 else [v.text for v in values])
            if canonical.startswith("--no-") and not values:
                value = False
            options[canonical] = Located(value, line, source=_source(spelling, values),
                                         value_line=_value_line(line, values))
    notes = list(parsed.notes)
    unknown = list(parsed.unknown)
    uses = list(parsed.uses)
    for key, names in _field_options(engine).items():
        candidates = []
        for name in names:
            candidates.append(name)
            if name.startswith("--") and grammar.kinds.get("--no-" + name[2:]) == "flag":
                candidates.append("--no-" + name[2:])
        given = [c for c in candidates if c in parsed.values]
        if given:
            # the parser stores every alias in one destination: the last occurrence wins
            # (argparse, click, llama.cpp; clap refuses a repeat, which KV701 reports)
            candidate = max(given, key=lambda c: parsed.order.get(c, 0))
            spelling, values, _ = parsed.values[candidate]
            fields[key] = _convert(engine, key, spelling, candidate, values,
                                   _line(options.get(candidate)))
            fields[key] = _with_value_line(fields[key], values)
    positionals = list(parsed.positionals)
    if grammar.positional_model and positionals and "model" not in fields:
        first = positionals.pop(0)
        if first.unresolved is not None:
            fields["model"] = first.unresolved
        else:
            fields["model"] = Located(first.text or "", first.line,
                                      source=f"positional {first.raw}"
                                      if "$" in first.raw else "positional")
    for token in positionals:
        unknown.append(token.raw)
        if token.text is not None:  # a word the engine's parser has no place for
            uses.append(OptionUse(token.raw, None, "positional", (), token.line, token.column,
                                  reason="positional"))
        if token.unresolved is not None:
            notes.append(f"{token.raw} is not resolved ({token.unresolved.reason}); it may "
                         "add arguments kvlint cannot see")
    _unseen_trust(engine, fields, positionals)
    if engine == "sglang":
        _sglang_dp(fields, notes)
    if engine == "lmdeploy" and isinstance(fields.get("dp"), Located) and (
            fields["dp"].value > 1):
        dp = fields["dp"]
        fields["dp_attention"] = Located(True, dp.line, source=f"{dp.source} (LMDeploy's "
                                         "data parallelism is attention DP)")
        _lmdeploy_dp_world(fields, notes)
    if engine == "llamacpp" and isinstance(fields.get("max_model_len"), Located) and (
            fields["max_model_len"].value == 0):
        fields["max_model_len"] = None
        notes.append("-c 0: the context size is the model's training context")
    if engine == "llamacpp" and "--hf-file" in options:
        notes.append("llama.cpp reads the GGUF file named by --hf-file from the --hf-repo")
    overrides = config_overrides(engine, uses)
    if overrides is not None:
        fields["config_overrides"] = overrides
        if isinstance(overrides, Located):
            notes.append(f"{overrides.source} change the model's config as the engine "
                         "loads it: kvlint applies them before any check")
    result = EngineArgs(engine=engine, unknown=tuple(unknown), notes=tuple(notes),
                        options=options, uses=tuple(uses),
                        **{k: v for k, v in fields.items() if k in _ENGINE_ARG_FIELDS})
    if engine == "tgi":
        return _fill(result, env_args_tgi(env))
    if engine == "llamacpp":
        return router_mode(_fill(result, env_args_llamacpp(env)), env)
    return result


ROUTER_OPTIONS = (("--models-dir", "LLAMA_ARG_MODELS_DIR"),
                  ("--models-preset", "LLAMA_ARG_MODELS_PRESET"))
"""llama-server's router mode (ggml-org/llama.cpp common/arg.cpp and
tools/server/server-models.cpp@40103380): with no model given, it serves the GGUF files of
``--models-dir`` or the models of a ``--models-preset`` INI, each loaded on request in a child
server."""


def router_mode(args: EngineArgs, env: Env) -> EngineArgs:
    """A llama-server with no model in router mode: its model is the directory or preset it
    serves from, unresolved (no one model to check)."""
    if args.model is not None:
        return args
    for option, variable in ROUTER_OPTIONS:
        given = args.options.get(option)
        if given is None:
            given = _env_field(env, [variable], "model", "llamacpp")
            option = f"env {variable}"
        if given is None:
            continue
        text = str(given.value) if isinstance(given, Located) else given.text
        return replace(args, model=Unresolved(
            f"llama-server router mode ({option}): it serves the models of {text}, each "
            "loaded on request in a child server; name one with [tool.kvlint.models] to "
            "check it", given.line, given.column, text))
    return args


CONFIG_MAY_TRUST = "--config"
"""The text of an unresolved ``--trust-remote-code`` that only an unread ``--config`` file may
give (:func:`kvlint.manifests.config_files.apply_config` settles it once it reads the file)."""


def _unseen_trust(engine: str, fields: dict[str, Any], positionals: Sequence[Token]) -> None:
    """``--trust-remote-code`` as unresolved where the command does not give it but may: a
    word kvlint cannot expand, or a ``--config`` file (read later, if it can be)."""
    if engine not in ("vllm", "sglang") or "trust_remote_code" in fields:
        return
    hidden = next((t for t in positionals if t.unresolved is not None), None)
    if hidden is not None:
        fields["trust_remote_code"] = Unresolved(
            f"{hidden.raw} is not resolved and may give --trust-remote-code", hidden.line,
            None, hidden.raw)
    elif "config_file" in fields:
        fields["trust_remote_code"] = Unresolved(
            "the --config file may give --trust-remote-code", None, None, CONFIG_MAY_TRUST)


def judge_known_options_only(args: EngineArgs) -> EngineArgs:
    """``args`` for a command whose parser is not the engine's alone (a wrapper that adds
    options, a launcher kvlint rewrote as the engine's command): options the engine does not
    know are not reported (KV701), values of the ones it knows still are (KV702)."""
    return replace(args, uses=tuple(u for u in args.uses if u.canonical is not None))


_ENGINE_ARG_FIELDS = frozenset({
    "model", "served_name", "tp", "pp", "dp", "dp_attention", "ep", "kv_cache_dtype",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes",
    "extensible_kv_cache", "kv_tokens_cap", "gpu_memory_utilization", "config_file",
    "expert_parallel",
    "dp_local", "nnodes", "dtype", "quantization", "config_overrides", "node_rank",
    "prefill_chunk", "graph_batch", "graph_off", "page_size", "speculative", "backend",
    "swa_ratio", "lora", "max_loras", "max_lora_rank", "lora_sharded", "cpu_offload",
    "trust_remote_code"})


def _value_line(line: int | None, values: list[Token]) -> int | None:
    """The line of an option's value when it is not the option's own line."""
    where = values[0].line if values else None
    return where if where is not None and where != line else None


def _with_value_line(value: Any, values: list[Token]) -> Any:
    if isinstance(value, Located) and value.value_line is None:
        where = _value_line(value.line, values)
        return replace(value, value_line=where) if where is not None else value
    return value


def _line(value: object) -> int | None:
    return value.line if isinstance(value, (Located, Unresolved)) else None


def _sglang_dp(fields: dict[str, Any], notes: list[str]) -> None:
    """SGLang ≥ 0.5.22 spells DP attention ``--attn-dp-size N``."""
    attn = fields.pop("attn_dp", None)
    if attn is None:
        return
    if "dp" in fields:
        notes.append("--attn-dp-size with --dp-size: --dp-size then counts full replicas "
                     "(SGLang >= 0.5.22); dp below is the attention DP size")
    fields["dp"] = attn
    if isinstance(attn, Located):
        fields["dp_attention"] = Located(True, attn.line, source=attn.source)


def _fill(args: EngineArgs, fallback: EngineArgs) -> EngineArgs:
    """``args`` with the fields it lacks taken from ``fallback`` (the options the command
    line does not give are read from the environment)."""
    updates: dict[str, Any] = {}
    for name in _ENGINE_ARG_FIELDS:
        if getattr(args, name) is None and getattr(fallback, name) is not None:
            updates[name] = getattr(fallback, name)
    given = {u.canonical for u in args.uses}
    extra = tuple(u for u in fallback.uses if u.canonical not in given)
    if extra:
        updates["uses"] = args.uses + extra
    if not updates and not fallback.notes:
        return args
    return replace(args, notes=args.notes + tuple(n for n in fallback.notes
                                                  if n not in args.notes), **updates)


def _env_field(env: Env, names: Iterable[str], key: str, engine: str,
               note: str = "") -> Located[Any] | Unresolved | None:
    for name in names:
        value = env.get(name)
        if value is None:
            continue
        line = env.line_of(name)
        if isinstance(value, Unresolved):
            return Unresolved(reason=value.reason, line=line, text=f"${name}")
        expanded = env.expand(value, k8s=False) if "$" in value else value
        if isinstance(expanded, Unresolved):
            return Unresolved(reason=expanded.reason, line=line, text=value)
        token = Token(expanded, None, line, value)
        converted = _convert(engine, key, f"env {name}", name, [token], line)
        if isinstance(converted, Located) and note:
            converted = Located(converted.value, converted.line, converted.column,
                                source=f"{converted.source} ({note})")
        return converted
    return None


def _env_uses(env: Env, options: Mapping[str, str]) -> tuple[OptionUse, ...]:
    """The environment variables an engine reads as options (clap ``env``, llama.cpp
    ``LLAMA_ARG_*``), as option uses for KV702: a variable's value is parsed like the
    option's."""
    uses = []
    for name, option in options.items():
        value = env.get(name)
        if not isinstance(value, str):
            continue
        expanded = env.expand(value, k8s=False) if "$" in value else value
        if isinstance(expanded, str):
            uses.append(OptionUse(option, option, "value", (expanded,), env.line_of(name),
                                  None, source=f"env {name}"))
    return tuple(uses)


def env_args_tgi(env: Env) -> EngineArgs:
    """What TGI's launcher reads from its environment (clap ``long, env`` options:
    ``MODEL_ID``, ``NUM_SHARD``, ``MAX_TOTAL_TOKENS``, ``MAX_BATCH_SIZE`` /
    ``MAX_CONCURRENT_REQUESTS``, ``KV_CACHE_DTYPE``, ``CUDA_MEMORY_FRACTION``,
    ``SERVED_MODEL_NAME``, ``DTYPE``; launcher/src/main.rs@db931fcf). ``NUM_GPUS`` (the
    variable of early Azure ML TGI deployments, not read by the launcher itself) is taken as
    the shard count when ``NUM_SHARD`` is absent, with a note."""
    notes: list[str] = []
    tp = _env_field(env, ["NUM_SHARD"], "tp", "tgi")
    if tp is None:
        tp = _env_field(env, ["NUM_GPUS"], "tp", "tgi", note="legacy variable")
        if tp is not None:
            notes.append("NUM_GPUS is the shard count of early Azure ML TGI images; the TGI "
                         "launcher itself reads NUM_SHARD")
    return EngineArgs(
        engine="tgi",
        model=_env_field(env, ["MODEL_ID"], "model", "tgi"),
        served_name=_env_field(env, ["SERVED_MODEL_NAME"], "served_name", "tgi"),
        tp=tp,
        kv_cache_dtype=_env_field(env, ["KV_CACHE_DTYPE"], "kv_cache_dtype", "tgi"),
        max_model_len=_env_field(env, ["MAX_TOTAL_TOKENS"], "max_model_len", "tgi"),
        max_num_seqs=_env_field(env, ["MAX_BATCH_SIZE", "MAX_CONCURRENT_REQUESTS"],
                                "max_num_seqs", "tgi"),
        gpu_memory_utilization=_env_field(env, ["CUDA_MEMORY_FRACTION"],
                                          "gpu_memory_utilization", "tgi"),
        dtype=_env_field(env, ["DTYPE"], "dtype", "tgi"),
        quantization=_env_field(env, ["QUANTIZE"], "quantization", "tgi"),
        notes=tuple(notes),
        uses=_env_uses(env, TGI_ENV),
    )


def env_args_llamacpp(env: Env) -> EngineArgs:
    """What ``llama-server`` reads from ``LLAMA_ARG_*`` variables (common/arg.cpp
    ``set_env``: ``LLAMA_ARG_HF_REPO``, ``LLAMA_ARG_MODEL``, ``LLAMA_ARG_CTX_SIZE``,
    ``LLAMA_ARG_N_PARALLEL``, ``LLAMA_ARG_CACHE_TYPE_K``, ``LLAMA_ARG_ALIAS``)."""
    max_len = _env_field(env, ["LLAMA_ARG_CTX_SIZE"], "max_model_len", "llamacpp")
    if isinstance(max_len, Located) and max_len.value == 0:
        max_len = None
    return EngineArgs(
        engine="llamacpp",
        model=_env_field(env, ["LLAMA_ARG_HF_REPO", "LLAMA_ARG_MODEL"], "model", "llamacpp"),
        served_name=_env_field(env, ["LLAMA_ARG_ALIAS"], "served_name", "llamacpp"),
        kv_cache_dtype=_env_field(env, ["LLAMA_ARG_CACHE_TYPE_K"], "kv_cache_dtype",
                                  "llamacpp"),
        max_model_len=max_len,
        max_num_seqs=_env_field(env, ["LLAMA_ARG_N_PARALLEL"], "max_num_seqs", "llamacpp"),
        uses=_env_uses(env, LLAMACPP_ENV),
    )
