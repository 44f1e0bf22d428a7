"""How numbers read: exact bytes with thousands separators, and binary units beside them."""

from __future__ import annotations

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def fmt_int(value: int) -> str:
    """``131072`` -> ``131,072``."""
    return f"{value:,}"


def fmt_bytes(value: float) -> str:
    """Binary units: ``540 MiB``, ``67.5 KiB``, ``7.9 GiB``; below 1 KiB exact bytes."""
    if abs(value) < 1024:
        return f"{value:,.0f} B"
    size = float(value)
    index = 0
    while True:
        size /= 1024
        if abs(size) < 1024 or index == len(_UNITS) - 1:
            break
        index += 1
    unit = _UNITS[index]
    return f"{size:.0f} {unit}" if abs(size) >= 100 else f"{size:.1f} {unit}"


def fmt_tokens(value: int) -> str:
    """``8192`` -> ``8K``, ``131072`` -> ``128K``, else exact."""
    if value % 1024 == 0 and value >= 1024:
        return f"{value // 1024}K"
    return fmt_int(value)


def fmt_ratio(value: float) -> str:
    """``2.0`` -> ``2``, ``2.2069`` -> ``2.21``."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"
