"""Judge an engine command line the way the engine's parser would, for the engine version a
manifest runs: options it refuses (KV701) and values it rejects (KV702).

:func:`engine_command.parse_engine_args` records every option word (``EngineArgs.uses``)
resolved against the union of the option tables; :func:`engine_problems` judges them against the
options of the manifest's engine version (:mod:`.option_versions`; an unpinned version
(``latest``, a rolling tag, an unpinned pip requirement) is the newest kvlint knows, an
unknown one (a custom tag, another engine's image) is judged by every version kvlint knows):

- argparse engines (vLLM, SGLang, LMDeploy) accept unique prefixes of long options; an
  ambiguous prefix is refused ("ambiguous option"); of them only vLLM turns ``_`` into ``-``;
- click (TensorRT-LLM), clap (TGI) and llama.cpp accept exact names only (llama.cpp turns
  ``_`` into ``-`` and has no ``--name=value`` form);
- clap refuses a repeated option ("cannot be used multiple times"); the others keep the last;
- a version between two versions kvlint knows is judged by both: an option (or value) either
  of them accepts is not reported, since it may have been added or removed in between.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date
from functools import cache

from packaging.version import Version

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.cli_option_tables import OPTION_TABLES
from kvlint.manifests.engine_command import OptionUse, field_of_option
from kvlint.manifests.engine_integers import integer_value
from kvlint.manifests.images import FIXED_BUILD, model_then_options
from kvlint.manifests.option_spellings import (
    VLLM_UNDERSCORES_SINCE,
    as_looked_up,
    dotted_refused,
    early_value,
    normalise,
    old_boolean_value,
    word_before,
)
from kvlint.manifests.option_versions import (
    ABSENT,
    CASELESS,
    CHOICES,
    POSITIVE,
    REFUSED,
    VERSIONS,
)
from kvlint.manifests.sglang_layout import (
    sglang_dp_attention_alone as _sglang_dp_attention_alone,
)
from kvlint.manifests.sglang_layout import (
    sglang_node_rank_outside as _sglang_node_rank_outside,
)
from kvlint.model.engine_args import EngineArgProblem
from kvlint.model.memory import release_version as _parse

__all__ = ["engine_display", "engine_problems", "known_options"]

_PARSER = {"vllm": "argparse", "sglang": "argparse", "lmdeploy": "argparse",
           "trtllm": "click", "tgi": "clap", "llamacpp": "llama.cpp"}
_ABBREV = frozenset({"vllm", "sglang", "lmdeploy"})
_UNSIGNED = frozenset({"tgi"})
"""Engines whose integer options are unsigned (clap ``usize``/``u32``): negatives refused."""
_REFUSAL = {
    "argparse": {"unknown": "unrecognized arguments: {name}",
                 "positional": "unrecognized arguments: {name}",
                 "ambiguous": "ambiguous option: {name} could match {matches}",
                 "missing": "argument {name}: expected one argument",
                 "missing_many": "argument {name}: expected at least one argument",
                 "integer": "argument {name}: invalid int value: {value!r}",
                 "number": "argument {name}: invalid float value: {value!r}",
                 "choice": "argument {name}: invalid choice: {value!r}"},
    "click": {"unknown": "No such option: {name}",
              "positional": "Got unexpected extra argument ({name})",
              "missing": "Option '{name}' requires an argument.",
              "integer": "{value!r} is not a valid integer.",
              "number": "{value!r} is not a valid float.",
              "choice": "{value!r} is not one of the choices"},
    "clap": {"unknown": "unexpected argument '{name}' found",
             "positional": "unexpected argument '{name}' found",
             "repeat": "the argument '{name}' cannot be used multiple times",
             "missing": "a value is required for '{name}' but none was supplied",
             "integer": "invalid value '{value}' for '{name}': invalid digit found in string",
             "number": "invalid value '{value}' for '{name}'",
             "choice": "invalid value '{value}' for '{name}'"},
    "llama.cpp": {"unknown": "error: invalid argument: {name}",
                  "positional": "error: invalid argument: {name}",
                  "missing": "error: expected value for argument {name}",
                  "integer": "error while handling argument {name}: stoi",
                  "number": "error while handling argument {name}: stof",
                  "choice": "error while handling argument {name}: Unsupported cache type"},
}


def engine_display(engine: str) -> str:
    try:
        from kvlint.engines import load_engines

        spec = load_engines().get(engine)
    except Exception:  # pragma: no cover - the engine table is optional here
        spec = None
    return spec.display if spec is not None else engine


@cache
def known_options(engine: str) -> frozenset[str]:
    """Every option (long and short) some release of ``engine`` kvlint read accepts."""
    return frozenset(_names(engine, ()))


MIN_TELLING_OPTIONS = 3
"""Options a command must give before :func:`options_engine` names its engine from them."""


def options_engine(words: Sequence[str]) -> str | None:
    """The one engine whose server accepts every ``--option`` of ``words`` (an options-only
    command, as an image of unknown ENTRYPOINT is given one, or a model then options, which
    only vLLM's ``vllm serve`` entrypoint takes), by the option tables of every
    release kvlint read; ``None`` when fewer than :data:`MIN_TELLING_OPTIONS` options are
    given, or when no engine, or more than one, accepts them all. vLLM's ``--max-model-len``
    or ``--gpu-memory-utilization`` are no other engine's, so a command that uses them is
    vLLM's; SGLang's aliases (``--model``, ``--tensor-parallel-size``) alone tell nothing."""
    names = {w.split("=", 1)[0] for w in words if w.startswith("--") and len(w) > 2}
    model_first = bool(words) and not words[0].startswith("-") and model_then_options(words)
    if not words or not (words[0].startswith("-") or model_first) or \
            len(names) < MIN_TELLING_OPTIONS:
        return None
    fits = [engine for engine in OPTION_TABLES
            if all(normalise(engine, n) in known_options(engine) for n in names)]
    if model_first:  # a model then options: vllm serve's form (no other server takes it)
        return "vllm" if fits == ["vllm"] else None
    return fits[0] if len(fits) == 1 else None


def _names(engine: str, absent: Iterable[str]) -> set[str]:
    gone = set(absent)
    out: set[str] = set()
    table: set[str] = set()
    for kind, text in OPTION_TABLES.get(engine, {}).items():
        for name in text.split():
            table.add(name)
            if name in gone:
                continue
            out.add(name)
            if kind == "negatable" and name.startswith("--"):
                out.add("--no-" + name[2:])
    # spellings kvlint reads that the tables lack (engines.toml) count in every version
    out.update(n for n in field_of_option(engine) if n not in table and
               not n.startswith("--no-"))
    return out


@cache
def _options_at(engine: str, version: str | None) -> frozenset[str]:
    """Every option (long and short) of ``engine`` at a known ``version`` (``None``: the
    union, for engines with one source)."""
    if version is None:
        return known_options(engine)
    return frozenset(_names(engine, ABSENT.get(engine, {}).get(version, "").split()))


def _bracket(engine: str, version: Located[str] | Unresolved | None,
             built: date | None = None, dated: Sequence[str] = ()
             ) -> tuple[list[str | None], str, str]:
    """The known versions that judge ``version`` (one, or the two around it), a label for
    messages (``vLLM 0.33.0``) and, when the label is not the manifest's own version, a note
    saying which version judged it. ``built``: the day an image of no stated version was
    built (its tag's date), which bounds the releases it can hold to ``dated``
    (:func:`_built_bracket`)."""
    name = engine_display(engine)
    known = VERSIONS.get(engine)
    if not known:
        return [None], name, ""
    newest = known[-1]
    if not isinstance(version, Located) and built is not None and dated:
        return list(dated), name, (
            f"the {name} version is unknown; the image tag dates the build {built}: "
            f"judged by {_listed(dated)}, the releases around that day")
    if not isinstance(version, Located):
        # nothing names the version (a custom or date tag, another engine's base image, an
        # unexpanded variable): whatever any known version accepts may be what runs
        return list(known), name, (
            f"the {name} version is unknown: judged by every version kvlint knows, "
            f"{_listed(known)}")
    text = version.value
    parsed = _parse(text) if text else None
    if parsed is None:
        return [newest], f"{name} {newest}", (
            f"no {name} version is pinned: judged by {newest}, the newest kvlint knows")
    ordered = [(Version(v), v) for v in known]
    for v, raw in ordered:
        if v == parsed:
            return [raw], f"{name} {raw}", ""
    if parsed > ordered[-1][0]:
        return [newest], f"{name} {text}", (
            f"judged by {name} {newest}, the newest version kvlint knows")
    if parsed < ordered[0][0]:
        return [known[0]], f"{name} {text}", (
            f"judged by {name} {known[0]}, the oldest version kvlint knows")
    upper = min((raw for v, raw in ordered if v > parsed), key=Version)
    lower = max((raw for v, raw in ordered if v < parsed), key=Version)
    return [lower, upper], f"{name} {text}", ""


def _built_bracket(engine: str, known: Sequence[str], built: date) -> list[str]:
    """The known versions a build of ``built`` runs between: the newest kvlint has a table
    for that was published by then, and the next (a build of that day may hold what the
    next release adds); every earlier one when the day predates the newest table's."""
    from kvlint.engines.release_dates import released

    days = [(v, released(engine, v)) for v in known]
    before = [v for v, day in days if day is not None and day <= built]
    after = [v for v, day in days if day is not None and day > built]
    return ([before[-1]] if before else []) + after[:1]


def _listed(versions: Sequence[str]) -> str:
    """``0.8.5, 0.11.0, 0.33.0`` for a few versions; ``0.4.6.post1 to 0.5.23 (20 releases)``
    for many."""
    if len(versions) <= 4:
        return ", ".join(versions)
    return f"{versions[0]} to {versions[-1]} ({len(versions)} releases)"


def _past_the_newest(engine: str, version: Located[str] | Unresolved | None) -> bool:
    """Whether the release that runs may be newer than every option table kvlint read for
    ``engine``: a version above the newest table; or a tag that names no version (``latest``,
    ``server-cuda``, nothing at all) when the newest table is older than the newest release
    kvlint knows of (engines.toml ``latest``); or any release at all when the engine's table
    comes from one source of no stated release (TGI, TensorRT-LLM, llama.cpp), which kvlint
    cannot place before or after it."""
    known = VERSIONS.get(engine)
    if not known:  # one source of no stated release: any release may be newer than it
        return True
    parsed = _parse(version.value) if isinstance(version, Located) and version.value \
        else None
    if parsed is not None:
        return parsed > Version(known[-1])
    from kvlint.engines import load_engines

    latest = getattr(load_engines().get(engine), "latest", None)
    return latest is not None and Version(known[-1]) < latest


def _rolling(engine: str, name: str, version: Located[str] | Unresolved | None,
             problem: EngineArgProblem) -> EngineArgProblem:
    """A refusal by the newest version of an option an older known version accepts, on a
    rolling tag (``latest``, ``nightly``, ``dev``, a commit build, an unpinned install: a
    version that is not a release number): said so, naming the last release that accepts it.
    A warning (``older_may_accept``), as for a version kvlint cannot date: a rolling tag pulls
    the newest build (Kubernetes pulls ``latest`` at every start), which refuses it, but the
    manifest may have been written for an older build that accepts it; held-out reviewers
    judged such files so (batches 38 and 44-45 of bench/manifest_corpus.md)."""
    if not isinstance(version, Located) or not isinstance(version.value, str) or \
            _parse(version.value) is not None or problem.kind != "option" or \
            problem.data.get("reason") not in ("unknown", "ambiguous"):
        return problem
    older = [v for v in VERSIONS.get(engine, ())[:-1]
             if _status(engine, name, _options_at(engine, v))[0] == "ok"]
    if not older:
        return problem
    last = f"{engine_display(engine)} {older[-1]}"
    if version.source == FIXED_BUILD:  # one build of no stated date: it may predate removal
        return replace(problem, message=f"{problem.message}; the image is one fixed build of no "
                       f"stated release: a build from before the removal ({last} accepts it) "
                       "starts, a newer one does not: pin a release",
                       data={**problem.data, "older_release_accepts": older[-1],
                             "fixed_build": True})
    return replace(problem, message=f"{problem.message}; no release is pinned (a rolling "
                   "tag or an unpinned install): a pull or install now gets the newest build, "
                   f"which refuses it; {last} is the last release kvlint knows that accepts it "
                   "(a node still holding an older build starts until its next pull): pin that "
                   "release or drop the option",
                   data={**problem.data, "older_release_accepts": older[-1],
                         "older_may_accept": True})


def _removed_since(engine: str, use: OptionUse, name: str, versions: Sequence[str | None],
                   statuses: Sequence[tuple[str, list[str]]], newest_set: frozenset[str],
                   parser: str, texts: dict[str, str]) -> EngineArgProblem:
    """An option an older release accepts and the newest refuses, where the version that
    runs is not known (an unpinned install, a custom image): a warning that names the last
    release accepting it, since an install or pull today gets one that refuses it."""
    display = engine_display(engine)
    last = [v for v, (status, _) in zip(versions, statuses, strict=True) if status == "ok"][-1]
    problem = _refused(engine, use, name, statuses[-1], newest_set,
                       f"{display} {versions[-1]}", parser, texts)
    return replace(problem, message=f"{problem.message}; the {display} version is not "
                   f"pinned: {display} {last} is the last release kvlint knows that accepts "
                   "it, and an install or pull today gets one that refuses it: pin a release "
                   "or drop the option",
                   data={**problem.data, "older_may_accept": True,
                         "older_release_accepts": last})


def _misspelt(name: str, suggestion: object) -> bool:
    """Whether ``name`` reads as a misspelling of the known option ``suggestion``: cut short
    (``--ctx`` for ``--ctx-size``) or nearly the same spelling (difflib's ratio, which
    :func:`_closest` ranks by, at 0.85 or more: ``--tp`` for ``-tp``)."""
    import difflib

    if not isinstance(suggestion, str) or not suggestion:
        return False
    return suggestion.startswith(name) or \
        difflib.SequenceMatcher(None, name, suggestion).ratio() >= 0.85


def _twin(name: str, suggestion: object) -> bool:
    """Whether ``name`` and ``suggestion`` differ only in ``_`` against ``-``."""
    return isinstance(suggestion, str) and name != suggestion and \
        name.replace("_", "-") == suggestion.replace("_", "-")


def _counterpart(name: str, known: frozenset[str]) -> bool:
    """Whether ``name`` is the switch-off or switch-on twin of a known option
    (``--disable-piecewise-cuda-graph`` beside ``--enable-piecewise-cuda-graph``, ``--no-X``
    beside ``--X``): the form a release adds when it turns a feature's default around, not
    a misspelling."""
    for a, b in (("--disable-", "--enable-"), ("--enable-", "--disable-"), ("--no-", "--")):
        if name.startswith(a) and b + name[len(a):] in known:
            return True
    return name.startswith("--") and "--no-" + name[2:] in known


def _maybe_newer(problem: EngineArgProblem, newest: str | None,
                 known: frozenset[str] = frozenset(), *, twins: bool = False
                 ) -> EngineArgProblem:
    """An unknown option no release kvlint read ever had, on an engine that may be newer:
    said so (KV701 then warns instead of failing the run). A near spelling of a known option
    stays an error (a misspelling), unless it is a known option's on/off twin, or (``twins``:
    an engine whose tools spell options both ways, TensorRT-LLM's ``--max_seq_len`` and
    ``--max-seq-len``) its ``_``/``-`` twin."""
    than = f" newer than {newest}" if newest else " newer than the source kvlint read"
    if problem.kind == "value" and problem.data.get("reason") == "choice" and \
            "suggestion" not in problem.data:  # a value no release read has, not a misspelling
        return replace(problem, message=f"{problem.message}; no release kvlint read accepts "
                       f"it, and the server may be a build{than} (or a fork) that does: pin "
                       "the version to be sure", data={**problem.data, "newer_may_accept": True})
    if problem.kind != "option" or problem.data.get("reason") != "unknown" or \
            "history" in problem.data or (
                _misspelt(problem.option, problem.data.get("suggestion"))
                and not _counterpart(problem.option, known)
                and not (twins and _twin(problem.option, problem.data.get("suggestion")))):
        return problem
    return replace(problem, message=f"{problem.message}; no release kvlint read has it, and "
                   f"the image may run one{than}: pin the version to be sure",
                   data={**problem.data, "newer_may_accept": True})


def _before_the_oldest(engine: str, version: Located[str] | Unresolved | None) -> bool:
    """Whether ``version`` is a release older than every option table kvlint read for
    ``engine`` (judged by the oldest table, which that release's parser may not match)."""
    known = VERSIONS.get(engine)
    parsed = _parse(version.value) if isinstance(version, Located) and \
        isinstance(version.value, str) and version.value else None
    return known is not None and len(known) > 0 and parsed is not None and \
        parsed < Version(known[0])


def _maybe_older(problem: EngineArgProblem, oldest: str | None,
                 known: frozenset[str] = frozenset()) -> EngineArgProblem:
    """A refusal judged by a newer release's parser than the one that runs: said so (KV701
    and KV702 then warn instead of failing the run). A near spelling of a known option stays
    an error (a misspelling)."""
    if problem.data.get("reason") == "too-many" or (
            problem.kind == "option" and problem.data.get("reason") == "unknown" and
            _misspelt(problem.option, problem.data.get("suggestion")) and
            not _counterpart(problem.option, known)):
        return problem
    return replace(problem, message=f"{problem.message}; the release that runs is older than "
                   f"{oldest or 'every release'} kvlint read, whose parser judged it: an older "
                   "parser may take it, so check that release's options",
                   data={**problem.data, "older_may_accept": True})


def _status(engine: str, name: str, options: frozenset[str]) -> tuple[str, list[str]]:
    """``("ok" | "unknown" | "ambiguous", matches)`` of one option word."""
    if name in options:
        return "ok", [name]
    if name == "-O" and engine == "vllm" and "--optimization-level" in options:
        return "ok", ["--optimization-level"]  # FlexibleArgumentParser rewrites -O<n>
    if engine in _ABBREV and len(name) > 2 and name[1] != "-" and name[:2] in options:
        return "ok", [name[:2]]  # argparse: a one-letter option with its value attached
    if engine in _ABBREV and name.startswith("--") and len(name) > 2:
        matches = _prefixed(options, name)
        if len(matches) == 1:
            return "ok", matches
        if matches:
            return "ambiguous", matches
    return "unknown", []


_SORTED: dict[frozenset[str], list[str]] = {}
"""Each option set kvlint has looked words up in, sorted (a few per run)."""


def _prefixed(options: frozenset[str], prefix: str) -> list[str]:
    """The options that start with ``prefix``, sorted (found by bisection)."""
    ordered = _SORTED.get(options)
    if ordered is None:
        ordered = _SORTED[options] = sorted(options)
    i = bisect.bisect_left(ordered, prefix)
    found = []
    while i < len(ordered) and ordered[i].startswith(prefix):
        found.append(ordered[i])
        i += 1
    return found


def _history(engine: str, option: str) -> str:
    """When ``option`` came and went among the versions kvlint knows (``--x was added after
    vLLM 0.8.5 (it is in 0.33.0)``); empty when every known version has it, or none."""
    known = VERSIONS.get(engine, ())
    have = [v for v in known if option in _options_at(engine, v)]
    if not have or len(have) == len(known):
        return ""
    first, last = known.index(have[0]), known.index(have[-1])
    parts = []
    if first > 0:
        parts.append(f"added after {known[first - 1]}")
    if last < len(known) - 1:
        parts.append(f"removed after {known[last]}")
    return (f"{option} was {' and '.join(parts)} (of the {engine_display(engine)} versions "
            f"kvlint knows, {', '.join(have)} {'has' if len(have) == 1 else 'have'} it)")


def _choices(engine: str, option: str, versions: Sequence[str | None]) -> set[str] | None:
    """The values every judging version accepts for ``option`` (``None``: not judged)."""
    table = CHOICES.get(engine, {}).get(option)
    if not table:
        return None
    allowed: set[str] = set()
    for version in versions:
        text = table.get("*") or (table.get(version) if version else None)
        if text is None:
            return None
        allowed |= set(text.split())
    return allowed


def _positive(engine: str, option: str, versions: Sequence[str | None]) -> bool:
    table = POSITIVE.get(engine, {})
    return bool(versions) and all(
        v is not None and option in table.get(v, "").split() for v in versions)


MAX_PROBLEMS = 64
"""Refusals reported one by one per command; a command with more (a generated or hostile
file) gets one more problem for the rest, unjudged."""


def engine_problems(engine: str, version: Located[str] | Unresolved | None,
                    uses: Sequence[OptionUse], built: date | None = None, *,
                    custom: bool = False) -> tuple[EngineArgProblem, ...]:
    """What ``engine`` at ``version`` refuses in the options ``uses`` (in command order);
    ``built``: the day the image was built, where its tag says and no version is known;
    ``custom``: the server runs in a team's or a fork's image of no known version, which may
    hold a build newer than every release kvlint read (or patched): an option no release
    has, unless a near spelling of a known one, is then a warning."""
    if engine not in _PARSER or not uses:
        return ()
    dated = _built_bracket(engine, VERSIONS.get(engine) or (), built) \
        if built is not None and not isinstance(version, Located) else []
    versions, label, basis = _bracket(engine, version, built, dated)
    sets = [_options_at(engine, v) for v in versions]
    newest_set = sets[-1]
    parser = _PARSER[engine]
    texts = _REFUSAL[parser]
    problems: list[EngineArgProblem] = []
    seen: dict[str, OptionUse] = {}
    fields = field_of_option(engine)
    for index, use in enumerate(uses):
        if len(problems) >= MAX_PROBLEMS:  # a hostile command: the rest summed up, unjudged
            problems.append(EngineArgProblem(
                "option", use.name, f"{label} is given {len(uses) - index} more options and "
                f"arguments after {MAX_PROBLEMS} it refuses; they were not judged one by one",
                use.line, use.column, {"engine": engine, "reason": "too-many"}))
            break
        if use.reason == "positional":
            refusal = texts["positional"].format(name=use.name)
            problem = EngineArgProblem(
                "option", use.name, f"{label} has no place for the argument {use.name!r}: "
                f"the server exits at start ({refusal})", use.line, use.column,
                {"engine": engine, "reason": "positional"})
            before = word_before(uses, use)
            early = [v for v in versions if before is not None and
                     early_value(engine, v, before.name, use.name)]
            if early and len(early) == len(versions):
                continue  # the value the option before it takes at these early releases
            if not isinstance(version, Located) and before is not None and \
                    old_boolean_value(engine, before.name, use.name):
                problem = replace(problem, message=f"{problem.message}; vLLM 0.5.5 to 0.7.3 "
                                  f"took {use.name!r} as the value of {before.name}, and the "
                                  "version that runs is not known",
                                  data={**problem.data, "older_may_accept": True})
            problems.append(problem)
            continue
        name = normalise(engine, use.name)
        looked = [as_looked_up(engine, use.name, name, version, v) for v in versions]
        statuses = [("unknown", []) if dotted_refused(engine, use.name, v)
                    else _status(engine, word, s)
                    for v, word, s in zip(versions, looked, sets, strict=True)]
        if name != use.name and name not in looked:
            use = replace(use, reason="underscore")  # the hint: vLLM's - spelling
        # the engine at this version decides, whatever the union tables made of the word
        canonical = next((m[0] for st, m in statuses if st == "ok"), None) \
            if use.reason in ("", "unknown", "ambiguous") else None
        if canonical is None:
            problem = _refused(engine, use, name, statuses[-1], newest_set, label, parser,
                               texts)
            problems.append(_rolling(engine, name, version,
                                     _declared_to_refuse(engine, name, versions, label, problem)))
            continue
        if not isinstance(version, Located) and len(versions) > 1 and \
                statuses[-1][0] != "ok" and use.reason in ("", "unknown", "ambiguous"):
            problems.append(_removed_since(engine, use, name, versions, statuses, newest_set,
                                           parser, texts))
        if parser == "clap" and canonical in seen:
            first = seen[canonical]
            where = f" (first on line {first.line})" if first.line != use.line else ""
            problems.append(EngineArgProblem(
                "option", use.name,
                f"{use.name} is given more than once{where}: {label} refuses it at start "
                f"({texts['repeat'].format(name=use.name)}); keep one",
                use.line, use.column, {"engine": engine, "reason": "repeated"}))
        seen.setdefault(canonical, use)
        if len(canonical) == 2 and use.name != canonical and not use.name.startswith("-O"):
            continue  # -qfp8: a one-letter option with its value attached, not judged
        value_problem = _value(engine, use, canonical, fields.get(canonical), versions,
                               label, texts)
        if value_problem is not None:
            problems.append(value_problem)
    if engine == "llamacpp":
        problems.extend(_bare_flash_attn(uses))
    if engine == "sglang":
        problems.extend(_sglang_dp_attention_alone(uses, version, fields))
        problems.extend(_sglang_node_rank_outside(uses, fields))
    if custom or _past_the_newest(engine, version):
        # a floating tag (latest, server-cuda) or a release newer than every table kvlint
        # read: an option no known release has may be one a newer release added
        known = _options_at(engine, versions[-1]) if versions else frozenset()
        problems = [_maybe_newer(p, versions[-1], known, twins=engine == "trtllm")
                    for p in problems]
    if _before_the_oldest(engine, version):
        # a release older than every table kvlint read: its own parser was not read, and an
        # older one took forms a later one refuses (vLLM 0.6.3's --enable-chunked-prefill
        # False: StoreBoolean, nargs="?", vllm/engine/arg_utils.py@v0.6.3 line 623)
        known = _options_at(engine, versions[0]) if versions else frozenset()
        problems = [_maybe_older(p, versions[0] if versions else None, known)
                    for p in problems]
    if dated:
        # a day in a tag bounds the build, but a fork or a backport may differ: warnings
        problems = [replace(p, data={**p.data, "newer_may_accept": True})
                    if p.kind in ("option", "value") else p for p in problems]
    if basis:
        problems = [replace(p, message=f"{p.message} ({basis})",
                            data={**p.data, "judged_by": basis}) for p in problems]
    # a finding spans the option's line and its value's (a suppression on either matches)
    below = {(u.name, u.line, u.column): u.value_line for u in uses if u.value_line}
    return tuple(replace(p, end_line=below.get((p.option, p.line, p.column)))
                 for p in problems)


LLAMACPP_FLASH_ATTN_VALUE = "late August 2025"
"""When llama.cpp's ``-fa``/``--flash-attn`` came to take a value, ``on|off|auto``: a switch in
common/arg.cpp@4227c9be (Aug 2025), a value in the later revisions kvlint read (7c158fbb4,
0c1e57098); the server's own error is quoted in yazon/flexllama#15 (a build at 4bf55492,
Sept 2025), and WasmEdge's bump to b6343 (2025-09-01) names the change. No build number is
encoded: a build of no stated date is judged by both."""


def _bare_flash_attn(uses: Sequence[OptionUse]) -> list[EngineArgProblem]:
    """llama.cpp's ``--flash-attn`` given without a value: a switch in older builds, in newer
    ones it reads the next word as its value (``unknown value for --flash-attn: '--x'``) or
    stops for the missing one. A warning, since the build is not known."""
    out: list[EngineArgProblem] = []
    for index, use in enumerate(uses):
        if use.canonical not in ("-fa", "--flash-attn") or use.values or use.inline:
            continue
        after = uses[index + 1].name if index + 1 < len(uses) else None
        what = (f"reads the next word {after!r} as its value and the server stops "
                f"(\"unknown value for --flash-attn: '{after}'\")" if after else
                "expects a value after it and the server stops")
        out.append(EngineArgProblem(
            "value", use.name, f"{use.name} without a value: llama.cpp builds since "
            f"{LLAMACPP_FLASH_ATTN_VALUE} take on|off|auto, so a current build {what}; older "
            f"builds take it as a switch. Write {use.name} on",
            use.line, use.column, {"engine": "llamacpp", "reason": "flash-attn-value",
                                   "older_may_accept": True, "suggestion": f"{use.name} on"}))
    return out


def _refused(engine: str, use: OptionUse, name: str, status: tuple[str, list[str]],
             options: frozenset[str], label: str, parser: str,
             texts: dict[str, str]) -> EngineArgProblem:
    kind, matches = status
    data: dict[str, object] = {"engine": engine, "reason": kind}
    if kind == "ambiguous":
        shown = ", ".join(matches[:4]) + (", ..." if len(matches) > 4 else "")
        refusal = texts["ambiguous"].format(name=use.name, matches=shown)
        message = f"{use.name} is an ambiguous abbreviation in {label} ({shown}): the " \
                  f"server exits at start ({refusal}); spell the option out"
        data["matches"] = matches
        return EngineArgProblem("option", use.name, message, use.line, use.column, data)
    refusal = texts["unknown"].format(name=use.name)
    parts = [f"{label} has no option {use.name}: the server exits at start ({refusal})"]
    if use.reason == "inline":
        option, _, value = use.name.partition("=")
        parts.append(f"{engine_display(engine)} does not split an argument at '=': write "
                     f"{option} {value}")
        data["suggestion"] = f"{option} {value}"
    elif use.reason == "underscore":
        dashed = use.name.replace("_", "-")
        since = f" before {VLLM_UNDERSCORES_SINCE}" if engine == "vllm" else ""
        parts.append(f"{engine_display(engine)}{since} does not turn _ into - ({dashed} is the "
                     "option)")
        data["suggestion"] = dashed
    elif " " in use.name.strip() and use.name.split()[0] in options:
        option, _, value = use.name.strip().partition(" ")
        value = value.strip()
        parts.append(f"one argument holds both {option} and its value: give them as two "
                     f"arguments ({option}, then {value})")
        data["suggestion"] = f"{option} {value}"
    else:
        history = _history(engine, name) or (_history(engine, matches[0]) if matches else "")
        if history:
            parts.append(history)
            data["history"] = history
        longer = sorted((o for o in options if o.startswith(name)), key=len)
        close = longer[:1] or _closest(name, options)
        ours = _own_spelling(engine, name, options)
        if ours and close and field_of_option(engine).get(close[0]) == \
                field_of_option(engine).get(ours):
            ours = None  # the close spelling is this engine's option for the same value
        if ours:
            close = [ours]
        if close and close[0] != name and (ours or not history):  # a removed option: no guess
            parts.append(f"did you mean {close[0]}?" if not ours else
                         f"{name} is another engine's spelling; {engine_display(engine)}'s is "
                         f"{ours}")
            data["suggestion"] = close[0]
    return EngineArgProblem("option", use.name, "; ".join(parts), use.line, use.column, data)


def _declared_to_refuse(engine: str, name: str, versions: Sequence[str | None], label: str,
                        problem: EngineArgProblem) -> EngineArgProblem:
    """``problem`` in the release's own words when every version judged declares the option
    (or the one option ``name`` abbreviates) only to refuse it (:data:`REFUSED`)."""
    refused = REFUSED.get(engine, {})
    matches = [o for o in refused if o == name] or \
        [o for o in refused if o.startswith(name)]
    if len(matches) != 1 or not versions or \
            not all(v is not None and v in refused[matches[0]] for v in versions):
        return problem
    said = refused[matches[0]][str(versions[-1])]
    return replace(problem, message=f"{label} declares {matches[0]} only to refuse it, and "
                   f"the server exits at start: {said}",
                   data={**problem.data, "reason": "refused", "refusal": said})


def _own_spelling(engine: str, name: str, options: frozenset[str]) -> str | None:
    """``engine``'s option for the value another engine spells ``name`` (SGLang's
    ``--tp-size`` is vLLM's ``--tensor-parallel-size``), when kvlint reads that value."""
    for other in _PARSER:
        if other == engine:
            continue
        key = field_of_option(other).get(name)
        if key is None:
            continue
        mine = [o for o, k in field_of_option(engine).items() if k == key and o in options]
        if mine:
            return max(mine, key=len)
    return None


def _grams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 3] for i in range(max(1, len(text) - 2)))


@cache
def _table_grams(candidates: frozenset[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((c, _grams(c)) for c in sorted(candidates))


def _closest(name: str, candidates: Iterable[str]) -> list[str]:
    """The closest spelling by difflib's ratio (>= 0.6), among the 24 candidates that share
    the most character trigrams with ``name`` (difflib over a whole option table takes
    ~0.1 s per long name)."""
    import difflib

    mine = _grams(name)
    table = _table_grams(frozenset(candidates))
    near = [c for c, _ in sorted(table, key=lambda item: -len(mine & item[1]))[:24]]
    return difflib.get_close_matches(name, near, n=1, cutoff=0.6)


def _value(engine: str, use: OptionUse, canonical: str, key: str | None,
           versions: Sequence[str | None], label: str,
           texts: dict[str, str]) -> EngineArgProblem | None:
    shown = use.source or use.name
    data: dict[str, object] = {"engine": engine, "option": canonical}
    if (use.kind == "value" or (use.kind == "many" and engine == "vllm")) and \
            not use.values:
        # vLLM's list-typed options take nargs="+" (EngineArgs._compute_kwargs and the
        # frontend's --api-key, --served-model-name, --lora-modules): one value at least,
        # and an option-like word or the end of the command leaves them none
        refusal = texts["missing_many" if use.kind == "many" else "missing"].format(
            name=use.name)
        return EngineArgProblem(
            "value", use.name, f"{shown} is given without a value: {label} refuses it "
            f"at start ({refusal})", use.line, use.column, {**data, "reason": "missing"})
    if not use.values or use.values[0] is None:
        return None  # no value, or one kvlint cannot expand (KV902 territory)
    text = use.values[0].strip()
    if "{{" in text and "}}" in text:
        return None  # a template reference the chart renders: not the value that runs
    data["value"] = text
    quoted = _clipped(text)  # what messages quote: a 400-digit value is not repeated whole
    if use.written:  # the value an expansion gave: say what was written
        shown = f"{shown} (from {_clipped(use.written)})"
    if key in _INTEGER_KEYS:
        # what any judging version's parser reads may be what runs
        number = next((n for v in versions
                       if (n := integer_value(engine, key, text, v)) is not None), None)
        if number is None:
            refusal = texts["integer"].format(name=use.name, value=quoted)
            return EngineArgProblem(
                "value", use.name, f"{shown} {quoted!r} is not an integer: {label} refuses "
                f"it at start ({refusal})", use.line, use.column, {**data, "reason": "integer"})
        if number < 1 and _positive(engine, canonical, versions):
            return EngineArgProblem(
                "value", use.name, f"{shown} {quoted}: {label} needs at least 1 "
                "(ParallelConfig validation fails at start)", use.line, use.column,
                {**data, "reason": "range"})
        if number < 0 and engine in _UNSIGNED:
            refusal = texts["integer"].format(name=use.name, value=quoted)
            return EngineArgProblem(
                "value", use.name, f"{shown} {quoted}: {label} reads an unsigned integer "
                f"and refuses it at start ({refusal})", use.line, use.column,
                {**data, "reason": "range"})
    if key in _NUMBER_KEYS:
        try:
            float(text)
        except ValueError:
            refusal = texts["number"].format(name=use.name, value=quoted)
            return EngineArgProblem(
                "value", use.name, f"{shown} {quoted!r} is not a number: {label} refuses it "
                f"at start ({refusal})", use.line, use.column, {**data, "reason": "number"})
    allowed = _choices(engine, canonical, versions)
    if allowed is not None:
        probe = text.lower() if (engine, canonical) in CASELESS else text
        if probe not in allowed:
            refusal = texts["choice"].format(name=use.name, value=quoted)
            listed = ", ".join(sorted(allowed))
            close = _closest(text, allowed)
            hint = f"; did you mean {close[0]}?" if close else ""
            return EngineArgProblem(
                "value", use.name, f"{shown} {quoted!r} is not a value {label} accepts "
                f"({listed}): the server exits at start ({refusal}){hint}", use.line,
                use.column, {**data, "reason": "choice", "choices": sorted(allowed),
                             **({"suggestion": close[0]} if close else {})})
    return None


def _clipped(text: str, most: int = 60) -> str:
    """``text``, or its start and end around an ellipsis when longer than ``most``."""
    return text if len(text) <= most else f"{text[:40]}...{text[-12:]} ({len(text)} characters)"


_INTEGER_KEYS = frozenset({"tp", "pp", "dp", "dp_local", "ep", "max_num_seqs",
                           "max_num_batched_tokens", "kv_cache_memory_bytes", "kv_tokens_cap",
                           "max_model_len", "nnodes", "attn_dp", "max_loras",
                           "max_lora_rank"})
_NUMBER_KEYS = frozenset({"gpu_memory_utilization"})
