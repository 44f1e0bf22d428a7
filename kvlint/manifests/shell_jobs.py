"""Which servers a shell script leaves running side by side.

A server started in the foreground holds the script until it exits, so only one started in
the background runs beside those started after it: a command that ends in ``&`` (``nohup
... &``, ``cmd > log 2>&1 &``), ``pm2 start``, ``docker run -d``. Anything between two servers
that could end the first or make them alternatives (``kill``, ``pkill``, ``wait``, ``exit``,
``docker stop``, ``pm2 delete``, ``else``, ``;;``), or a server inside a shell function
(which may never be called, or be called for one of them), makes kvlint assume they do not
run together: the check is meant to be right when it speaks, not to speak on every script.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ScriptLines"]

_REDIRECT = re.compile(r"\d*>&\d*-?|&>>?\s*\S+|>&\s*\S+|\d*[<>]{1,2}\s*\S+")
_BACKGROUND = re.compile(r"(?<![&|])&(?!&)")
_COMMENT = re.compile(r"(?:^|\s)#.*$")
_PM2_START = re.compile(r"\bpm2\s+start\b")
_STOPS = re.compile(
    r"\b(?:kill|pkill|killall|wait|exit|fuser)\b|\bdocker\s+(?:container\s+)?(?:stop|kill|rm)\b"
    r"|\bdocker[\s-]+compose\s+(?:down|stop|kill|rm)\b|\bpm2\s+(?:stop|delete|kill)\b"
    r"|\bsystemctl\s+stop\b|\btmux\s+kill|^\s*(?:else|elif)\b|;;|\bthen\b.*\belse\b")
_FUNCTION = re.compile(r"^\s*(?:function\s+[\w.:-]+\s*(?:\(\s*\))?|[\w.:-]+\s*\(\s*\))\s*\{?\s*$")

MAX_LINES = 100_000


class ScriptLines:
    """A script's lines, for the questions above (lines are 1-based)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()[:MAX_LINES]
        self._functions: list[tuple[int, int]] | None = None
        self._stops: list[int] | None = None
        """How many lines up to each line may stop a server (``_stops[n]``: lines 1..n)."""

    def _logical(self, line: int) -> tuple[int, int]:
        """The first and last line of the logical line (``\\`` continuations) of ``line``."""
        first = last = line
        while first > 1 and self._text(first - 1).rstrip().endswith("\\") and \
                line - first < 200:
            first -= 1
        while last < len(self.lines) and self._text(last).rstrip().endswith("\\") and \
                last - line < 200:
            last += 1
        return first, last

    def _text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def _code(self, first: int, last: int) -> str:
        rows = (self._text(n) for n in range(first, last + 1))
        return " ".join(_COMMENT.sub("", r.rstrip().removesuffix("\\")) for r in rows
                        if not r.lstrip().startswith("#"))

    def span(self, lines: Sequence[int]) -> tuple[int, int]:
        """The logical lines a command whose words are on ``lines`` spans."""
        return self._logical(min(lines))[0], self._logical(max(lines))[1]

    def detached(self, first: int, last: int) -> bool:
        """Whether the command on lines ``first``-``last`` leaves the script running on."""
        code = self._code(first, last)
        return bool(_PM2_START.search(code) or _BACKGROUND.search(_REDIRECT.sub(" ", code)))

    def stops_between(self, after: int, before: int) -> bool:
        """Whether a line strictly between ``after`` and ``before`` may end a server started
        before it or makes what follows an alternative (each line read once per script, so
        many servers in a long script stay linear)."""
        if self._stops is None:
            self._stops = [0]
            for n in range(1, len(self.lines) + 1):
                self._stops.append(self._stops[-1] + bool(_STOPS.search(self._code(n, n))))
        low, high = max(after, 0), min(before - 1, len(self.lines))
        return high > low and self._stops[high] - self._stops[low] > 0

    def in_function(self, line: int) -> bool:
        """Whether ``line`` is inside a shell function's body."""
        if self._functions is None:
            self._functions = []
            n = 1
            while n <= len(self.lines):
                if _FUNCTION.match(self._text(n)):
                    end = next((m for m in range(n + 1, len(self.lines) + 1)
                                if self._text(m).startswith("}")), len(self.lines))
                    self._functions.append((n, end))
                    n = end
                n += 1
        return any(start < line <= end for start, end in self._functions)
