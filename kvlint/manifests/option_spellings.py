"""How an engine's parser looks an option word up, by release: vLLM's ``_`` to ``-`` (from
0.5.1), its dotted JSON-option fields (from 0.9.2), the optional True/False values of its
releases before 0.8.5, llama.cpp's ``_`` to ``-``. Used by :mod:`.engine_options`, which
judges the words against each release's option table."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.engine_command import OptionUse
from kvlint.manifests.option_versions import KINDS
from kvlint.model.memory import release_version

__all__ = ["VLLM_DOTTED_SINCE", "VLLM_UNDERSCORES_SINCE", "as_looked_up", "dotted_refused",
           "early_value", "normalise", "old_boolean_value", "word_before"]


def normalise(engine: str, name: str) -> str:
    """The spelling the engine's parser looks up: vLLM turns ``_`` into ``-`` before the first
    ``.`` (``--json-arg.field``) and looks up a one-dash dotted word by its head
    (``-cc.field``); llama.cpp turns ``_`` into ``-`` in the whole ``--`` argument."""
    if engine == "vllm" and name.startswith("--"):
        head = name[2:].partition(".")[0]
        return "--" + head.replace("_", "-")
    if engine == "vllm" and name.startswith("-O"):
        return "-O"  # -O3, -O 3, -O.level: -O (0.8.5) or --optimization-level (0.33.0)
    if engine == "vllm" and name.startswith("-") and "." in name:
        # FlexibleArgumentParser folds any dotted word into its JSON option: -cc.mode X is
        # -cc '{"mode": "X"}' (vllm/utils/argparse_utils.py)
        return name.partition(".")[0]
    if engine == "llamacpp" and name.startswith("--"):
        return name.replace("_", "-")
    return name


VLLM_DOTTED_SINCE = Version("0.9.2")
"""vLLM reads ``--json-option.key VALUE`` (a field of a JSON option) from 0.9.2: its
FlexibleArgumentParser folds dotted words into a nested dict (vllm/utils/__init__.py@0.9.2,
create_nested_dict / recursive_dict_update); 0.7.3 and 0.8.5 have no such step, so argparse
refuses the dotted word as an unrecognized argument."""


def dotted_refused(engine: str, word: str, version: str | None) -> bool:
    """Whether ``engine`` at ``version`` refuses ``word`` as a dotted JSON-option field."""
    if engine != "vllm" or version is None or not word.startswith("--") or \
            "." not in word.split("=", 1)[0]:
        return False
    try:
        return Version(version) < VLLM_DOTTED_SINCE
    except InvalidVersion:
        return False


VLLM_UNDERSCORES_SINCE = Version("0.5.1")
"""vLLM turns ``_`` into ``-`` in an option's name from 0.5.1: FlexibleArgumentParser
(vllm-project/vllm#5718, merged 2024-06-20; its first release is v0.5.1, 2024-07-05). Before
it the OpenAI server's parser is plain ``argparse.ArgumentParser``
(vllm/entrypoints/openai/cli_args.py@v0.4.3 ``make_arg_parser``), which looks the word up as
written: ``--trust_remote_code`` is an unrecognized argument there."""


def as_looked_up(engine: str, written: str, name: str,
                  version: Located[str] | Unresolved | None, table: str | None) -> str:
    """The spelling ``engine``'s parser looks ``written`` up by at the release ``version``
    (judged by the option table of ``table``): vLLM before 0.5.1 keeps the underscores
    (:data:`VLLM_UNDERSCORES_SINCE`); otherwise ``name``, the normalised spelling."""
    if engine != "vllm" or name == written or not written.startswith("--"):
        return name
    release = release_version(version.value) if isinstance(version, Located) and version.value \
        else None
    if release is None and table is not None:
        release = release_version(table)
    if release is None or release >= VLLM_UNDERSCORES_SINCE:
        return name
    return written.partition("=")[0]


OLD_BOOLEAN_VALUES = frozenset({"--enable-chunked-prefill", "--multi-step-stream-outputs",
                                "--disable-logprobs-during-spec-decoding"})
"""vLLM options that took an optional ``True``/``False`` before 0.8.5 (``StoreBoolean``,
``nargs="?"``, ``const="True"``: vllm/engine/arg_utils.py@v0.5.5, @v0.6.3, @v0.6.6, @v0.7.3;
flags from 0.8.5, whose dataclass-built parser gives them ``BooleanOptionalAction``)."""


def word_before(uses: Sequence[OptionUse], use: OptionUse) -> OptionUse | None:
    """The option written just before ``use`` (by line and column; the parser lists
    positional words after the options), or ``None`` when positions are not known."""
    if use.line is None or use.column is None:
        return None
    at = (use.line, use.column)
    earlier = [u for u in uses if u is not use and u.line is not None and
               u.column is not None and (u.line, u.column) < at]
    return max(earlier, key=lambda u: (u.line or 0, u.column or 0)) if earlier else None


def old_boolean_value(engine: str, option: str, word: str) -> bool:
    """Whether ``word`` is the ``True``/``False`` value a vLLM release before 0.8.5 took
    after ``option``."""
    return engine == "vllm" and word.lower() in ("true", "false") and \
        normalise(engine, option.partition("=")[0]) in OLD_BOOLEAN_VALUES


def early_value(engine: str, version: str | None, option: str, word: str) -> bool:
    """Whether ``engine`` at ``version``, a release whose own option kinds kvlint read
    (:data:`~.option_versions.KINDS`), takes ``word`` as the value of ``option`` written
    just before it: an option that took one there (``--enable-chunked-prefill False``:
    ``StoreBoolean``, ``nargs="?"``, True/False only) where a later release made it a flag."""
    kind = KINDS.get(engine, {}).get(version or "", {}).get(
        normalise(engine, option.partition("=")[0]))
    if kind is None or "=" in option:
        return False
    if kind == "optional":  # StoreBoolean: True or False
        return word.lower() in ("true", "false")
    return kind in ("value", "many")
