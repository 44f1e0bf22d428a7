"""What KV601 and ``kvlint probe`` share: the measured/theory ratios at which a cache is
flagged, and how the probe's notes on why a cache holds more begin (the rule quotes them).
Pure data, in the core, so that neither the rules nor the probe import the other."""

from __future__ import annotations

WARNING_RATIO = 1.3
"""KV601 warns at this measured/theory ratio (docs/design.md §6)."""
ERROR_RATIO = 2.0
"""KV601 is an error at this ratio."""


CACHE_CAUSE = "the cache holds"
"""How a note naming why the cache holds more than theory begins (KV601 quotes it)."""
STATIC_CACHE = "StaticCache holds"
"""How the note on a static cache's extra positions begins (KV601's fix follows it)."""
