"""How a byte count reads in a message (pure)."""

from __future__ import annotations

import math
import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}
# No cache or budget comes near a pebibyte: past it a size is a typo (and past ~1e308 a float).
MAX_SIZE_BYTES = 2**50
MAX_SIZE_TEXT = "1 PiB"


def human_bytes(n: float) -> str:
    """``512 B``, ``1.5 KiB`` ... ``12.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def parse_size(text: str) -> int:
    """ccache's size notation -> bytes: ``5G`` is 5*10**9, ``5Gi`` is 5*2**30 (as ccache reads them).

    ValueError for anything else, and for a size over :data:`MAX_SIZE_BYTES`.
    """
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    number, unit, binary = match.groups()
    base = 1024 if binary else 1000
    value = float(number) * base ** _UNITS[unit.upper()]
    if not math.isfinite(value) or value > MAX_SIZE_BYTES:
        raise ValueError(f"size {text[:40]!r} is over {MAX_SIZE_TEXT}")
    return int(value)
