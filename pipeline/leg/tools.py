"""The build tools a leg runs: CMake and Ninja, the pinned ones beside this Python first."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pipeline.errors import ToolchainError


def find_tool(name: str) -> Path:
    """cmake/ninja next to this Python first (pinned in the venv), then PATH."""
    suffix = ".exe" if sys.platform == "win32" else ""
    beside = Path(sys.executable).parent / f"{name}{suffix}"
    if beside.is_file():
        return beside
    found = shutil.which(name)
    if not found:
        raise ToolchainError(f"{name} not found: install the project (pip install .) or put {name} on PATH")
    return Path(found)
