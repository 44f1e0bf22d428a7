"""The engine release a manifest's comments name, for a deployment whose image or pins name
none.

A script that runs ``vllm serve`` from a virtual environment says nothing of the release in
its commands, yet its author often writes it down (``# Uses .venv (vLLM 0.19.0 + FA2)``).
kvlint reads it only when nothing else dates the engine (an image tag, a pip pin, or
``latest`` all win) and only when the comments name **one** release of that engine: a file
whose comments compare two releases names none. The value's source says it came from a
comment, so a finding judged at that release says so too. Comments are those
:mod:`.comment_gpus` reads.
"""

from __future__ import annotations

import re

from kvlint.manifests.base import COMMENT_SOURCE, Located
from kvlint.manifests.comment_gpus import comment_lines

__all__ = ["comment_version"]

_RELEASE = r"[\s=:_-]{0,3}v?(\d+\.\d+(?:\.\d+){0,2}(?:\.?post\d+|rc\d+)?)(?![\w.])"
_NAMES = {
    "vllm": r"vLLM", "sglang": r"SGLang", "lmdeploy": r"LMDeploy",
    "tgi": r"(?:TGI|text-generation-inference)", "trtllm": r"(?:TensorRT-LLM|TRT-LLM)",
}
_PATTERNS = {engine: re.compile(rf"(?<![\w/]){name}{_RELEASE}", re.IGNORECASE)
             for engine, name in _NAMES.items()}


def comment_version(text: str, engine: str) -> Located[str] | None:
    """The one release of ``engine`` the comments of ``text`` name, with the line of its first
    mention; ``None`` when they name none or several (or kvlint has no name for the
    engine)."""
    pattern = _PATTERNS.get(engine)
    if pattern is None:
        return None
    found: dict[str, int] = {}
    for number, comment in comment_lines(text):
        for mention in pattern.finditer(comment):
            found.setdefault(mention.group(1), number)
            if len(found) > 1:
                return None
    if len(found) != 1:
        return None
    ((version, line),) = found.items()
    return Located(version, line, None, COMMENT_SOURCE)
