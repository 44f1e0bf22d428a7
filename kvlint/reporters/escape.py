"""Visible escapes for the human-readable formats (text, markdown, github, junit).

Configs, manifests, file names and Hub model names are input an attacker may write. Printed
raw, an ESC or BEL retitles or clears a terminal, a CR overwrites what a line said, a newline
forges a line of output, a bidirectional override reorders it, and a lone surrogate cannot be
encoded at all. :func:`printable` turns each such character into the escape Python would
write for it (``\\x1b``, ``\\n``, ``\\u202e``, ``\\udc80``), so the text shows what is there
and nothing acts on it.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"          # C0 controls (newline and tab included), DEL, C1 controls
    "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"  # bidi marks, line separators
    "\ud800-\udfff"                # lone surrogates (from undecodable file names)
    "\ufeff\ufff9-\ufffb]")        # BOM, interlinear annotation controls


def _escape(match: re.Match[str]) -> str:
    return ascii(match.group())[1:-1]


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control, bidirectional-override and lone-surrogate character
    written as a visible escape, except those in ``keep`` (e.g. ``"\\n"`` for a report's own
    line breaks)."""
    if not keep:
        return _UNSAFE.sub(_escape, text)
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
