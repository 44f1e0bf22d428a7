"""Integers as the engines' parsers read them (vLLM's human-readable sizes), apart from
:mod:`.engine_command` so the rules' option checks can read a value the same way."""

from __future__ import annotations

import math
import re

from kvlint.manifests.cli_options import HUMAN_READABLE, NO_AUTO_OR_TERA, PLAIN_INT_AT

__all__ = ["integer_value"]


def integer_value(engine: str, key: str, text: str, version: str | None = None) -> int | None:
    """``text`` as ``engine``'s parser reads the integer option of field ``key`` (``None``
    when it refuses it); ``version``: as that known vLLM version's parser reads it (one of
    the option tables' versions; ``None``: as the newest does)."""
    return _integer(engine, key, text, version)


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _integer(engine: str, key: str, text: str, version: str | None = None) -> int | None:
    """An integer as the engine's parser reads it. vLLM's ``--max-model-len`` takes
    ``human_readable_int_or_auto`` (vllm/utils/argparse_utils.py@v0.33.0): ``k/m/g/t`` are
    powers of 1000 (decimals allowed: ``25.6k`` = 25600), ``K/M/G/T`` powers of 1024
    (integers only), and ``-1``/``auto`` mean "derive it" (returned as -1);
    ``--max-num-batched-tokens`` and ``--kv-cache-memory-bytes`` take ``human_readable_int``
    (the same without ``auto``: ``human_readable_int_args``, vllm/engine/arg_utils.py@v0.34.0
    lines 396-408; ``human_readable_ints``, arg_utils.py@v0.11.0 lines 233-239)."""
    if engine == "vllm" and key in HUMAN_READABLE and \
            key not in PLAIN_INT_AT.get(version or "", ()):
        old = version in NO_AUTO_OR_TERA
        if key == "max_model_len" and text.lower() == "auto" and not old:
            return -1
        match = _HUMAN.fullmatch(text)
        if match and not (old and match.group(2) in "tT"):
            number, suffix = match.groups()
            if len(number) > _MAX_DIGITS:
                return None
            if suffix.islower():
                scaled = float(number) * _DECIMAL[suffix]
                # vLLM computes int(float(...)): past the float range it fails to start
                return int(scaled) if math.isfinite(scaled) else None
            if "." in number:
                return None
            return int(number) * _BINARY[suffix]
    if re.fullmatch(r"[-+]?\d+", text) and len(text) <= _MAX_DIGITS:
        return int(text)
    return None


_MAX_DIGITS = 4300
"""Python's int() refuses longer decimal strings (sys.int_info.default_max_str_digits), so an
engine whose parser is Python's refuses such a value at start."""
