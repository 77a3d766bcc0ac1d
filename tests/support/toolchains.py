"""Toolchain helpers for tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.toolchain.therock import RocmLayout, find_clang_dir, layout_of


def find_layout(root: Path, os_name: str) -> RocmLayout:
    """Discover clang and the device libraries of the install at ``root``."""
    if not root.is_dir():
        raise ToolchainError(f"{root}: ROCm install not found (no such directory)")
    return layout_of(root, find_clang_dir(root, os_name), os_name)
