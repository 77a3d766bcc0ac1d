"""The machine this process runs on, in matrix.toml's words (``linux``/``windows``/``macos``, ``x64``/``arm64``)."""

from __future__ import annotations

import platform
import sys

_MACHINES = {"x86_64": "x64", "amd64": "x64", "x64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def host_os(platform_name: str | None = None) -> str:
    """``sys.platform`` (or ``platform_name``) as an OS of matrix.toml."""
    name = sys.platform if platform_name is None else platform_name
    return "windows" if name == "win32" else "macos" if name == "darwin" else "linux"


def host_arch(machine: str | None = None) -> str:
    """``platform.machine()`` (or ``machine``) as an arch of matrix.toml; an unknown one as it is, lower-case."""
    raw = (platform.machine() if machine is None else machine).lower()
    return _MACHINES.get(raw, raw)
