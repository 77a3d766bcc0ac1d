"""GitHub's hosted runners as matrix.toml uses them: the label per OS and arch, and each image's floors (pure)."""

from __future__ import annotations

import re

# GitHub's hosted runner label per (os, arch) when a leg names none: the release job's runners.
DEFAULT_RUNNERS: dict[tuple[str, str], str] = {
    ("linux", "x64"): "ubuntu-22.04",
    ("linux", "arm64"): "ubuntu-22.04-arm",
    ("windows", "x64"): "windows-2022",
    # Windows on arm64 is cross-compiled on an x64 runner with clang, as the release job does.
    ("windows", "arm64"): "windows-2022",
    ("macos", "arm64"): "macos-26",
    ("macos", "x64"): "macos-15-intel",
}
# The glibc of each Linux runner image: a bundle built there may require no newer GLIBC_x.y.
RUNNER_GLIBC: dict[str, str] = {
    "ubuntu-22.04": "2.35",
    "ubuntu-22.04-arm": "2.35",
    "ubuntu-24.04": "2.39",
    "ubuntu-24.04-arm": "2.39",
}
# A Linux runner this table does not know (a self-hosted one): Ubuntu 22.04's floor.
DEFAULT_GLIBC = "2.35"
# The oldest macOS a macOS bundle runs on (LC_BUILD_VERSION minos), as the release job's.
DEFAULT_MACOS_MIN = "13.3"


def default_runner(os_name: str, arch: str) -> str:
    """The hosted runner a leg of ``os_name``/``arch`` runs on when matrix.toml names none."""
    return DEFAULT_RUNNERS[(os_name, arch)]


def runner_glibc(runner: str) -> str:
    """The glibc floor of a Linux runner label (:data:`RUNNER_GLIBC`; 2.35 for one it does not know)."""
    return RUNNER_GLIBC.get(runner, DEFAULT_GLIBC)


def glibc_problem(value: str) -> str | None:
    """Why ``value`` is not a glibc version like '2.35', or None."""
    return None if re.match(r"^2\.\d+$", value) else "a glibc version like '2.35'"
