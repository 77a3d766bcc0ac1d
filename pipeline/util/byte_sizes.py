"""How a byte count reads in a message (pure)."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    """``512 B``, ``1.5 KiB`` ... ``12.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
