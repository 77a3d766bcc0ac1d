"""Which LLVM tool a test runs: LLVM 15's (Debian 12's clang-15, what the tests were written with), else the default one."""

from __future__ import annotations

import shutil


def llvm_tool(name: str) -> str:
    """``name-15`` when it is installed, else ``name`` when that is, else ``name-15`` (for the skip message)."""
    return next((t for t in (f"{name}-15", name) if shutil.which(t)), f"{name}-15")
