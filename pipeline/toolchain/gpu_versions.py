"""What a GPU toolchain install says of itself, read before anything is configured.

- HIP's version, from the first of: ``hip-config-version.cmake`` (the
  ``PACKAGE_VERSION`` that ``find_package(hip)`` hands the tree as
  ``hip_VERSION``, so the number its own check compares), ``.hipVersion``
  (``HIP_VERSION_MAJOR=...``), ``hipconfig --version``.
- The oldest ``cmake_minimum_required`` among the ROCm package configs the
  tree loads: CMake 4 refuses one below 3.5 (Debian 12's hip-config.cmake
  asks for 3.3).
- The Vulkan headers' version and whether they declare an extension
  (``#define VK_EXT_layer_settings 1`` in ``vulkan_core.h``).

The parsers are pure; the readers only read files, except the last HIP
fallback, which runs ``hipconfig``.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pipeline.processes.groups import run_child

# The ROCm packages ggml-hip's configure loads (find_package and enable_language(HIP)).
ROCM_PACKAGES = ("hip", "hip-lang", "hipblas", "hipblaslt", "rocblas", "rccl", "amd_comgr", "hsa-runtime64")
# Where an install keeps its CMake package folders, relative to its root (Debian: lib/<triplet>/cmake).
_CMAKE_DIRS = ("lib/cmake", "lib64/cmake", "lib/*/cmake", "share/cmake", "hip/lib/cmake")
# The lowest cmake_minimum_required CMake 4 accepts.
CMAKE4_FLOOR = "3.5"

_PACKAGE_VERSION = re.compile(r'^\s*set\s*\(\s*PACKAGE_VERSION\s+"?(\d+(?:\.\d+)*)"?\s*\)', re.M)
_HIP_VERSION_FILE = re.compile(r"^HIP_VERSION_(MAJOR|MINOR|PATCH)\s*=\s*(\d+)", re.M)
_HIPCONFIG = re.compile(r"^\s*(\d+\.\d+(?:\.\d+)?)")
_CMAKE_MINIMUM = re.compile(r"^\s*cmake_minimum_required\s*\(\s*VERSION\s+(\d+(?:\.\d+)*)", re.M | re.I)


@dataclass(frozen=True, kw_only=True)
class Found:
    """A version and the file (or command) it was read from."""

    version: str
    source: str


def parse_package_version(text: str) -> str | None:
    """``set(PACKAGE_VERSION "5.2.0")`` in a ``*-config-version.cmake``."""
    match = _PACKAGE_VERSION.search(text)
    return match.group(1) if match else None


def parse_hip_version_file(text: str) -> str | None:
    """``.hipVersion``'s ``HIP_VERSION_MAJOR=6`` / ``MINOR`` / ``PATCH`` lines -> ``"6.1.40091"``."""
    parts = dict(_HIP_VERSION_FILE.findall(text))
    if "MAJOR" not in parts or "MINOR" not in parts:
        return None
    return ".".join(parts[key] for key in ("MAJOR", "MINOR", "PATCH") if key in parts)


def parse_hipconfig_version(text: str) -> str | None:
    """``hipconfig --version`` -> ``"5.2.21153"`` (its build suffix ``-0`` dropped)."""
    match = _HIPCONFIG.match(text)
    return match.group(1) if match else None


def cmake_package_dirs(root: Path, package: str) -> list[Path]:
    """The folders of ``package``'s CMake config under the install ``root``."""
    found: list[Path] = []
    for pattern in _CMAKE_DIRS:
        found += [d for d in sorted(root.glob(f"{pattern}/{package}")) if d.is_dir()]
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def hip_version(root: Path) -> Found | None:
    """HIP's version in the install at ``root`` (see the module docstring), or None when nothing says it."""
    for folder in cmake_package_dirs(root, "hip"):
        path = folder / "hip-config-version.cmake"
        if (text := _read(path)) is not None and (version := parse_package_version(text)):
            return Found(version=version, source=str(path))
    for path in (root / "bin" / ".hipVersion", root / "share" / "hip" / "version"):
        if (text := _read(path)) is not None and (version := parse_hip_version_file(text)):
            return Found(version=version, source=str(path))
    hipconfig = root / "bin" / "hipconfig"
    if hipconfig.is_file():
        try:
            proc = run_child([str(hipconfig), "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        if proc.returncode == 0 and (version := parse_hipconfig_version(str(proc.stdout))):
            return Found(version=version, source=f"{hipconfig} --version")
    return None


def old_cmake_minimums(root: Path, below: str = CMAKE4_FLOOR) -> list[Found]:
    """The ROCm package configs under ``root`` whose ``cmake_minimum_required`` is below ``below``."""
    from pipeline.source.requirements import version_less

    found: list[Found] = []
    for package in ROCM_PACKAGES:
        for folder in cmake_package_dirs(root, package):
            for path in sorted(folder.glob("*.cmake")):
                text = _read(path) or ""
                found += [
                    Found(version=v, source=str(path))
                    for v in _CMAKE_MINIMUM.findall(text)
                    if version_less(v, below)
                ]
    return found


def header_declares(text: str, extension: str) -> bool:
    """Whether ``vulkan_core.h``'s ``text`` declares ``extension`` (its ``#define <name> 1``)."""
    return re.search(rf"^#define\s+{re.escape(extension)}\s+1\b", text, re.M) is not None


def vulkan_header(include_dir: Path) -> tuple[Path, str, str] | None:
    """``(vulkan_core.h, its version "1.3.239", its text)`` under ``include_dir``, or None when it is missing."""
    from pipeline.toolchain.vulkan_tools import parse_header_version

    header = include_dir / "vulkan" / "vulkan_core.h"
    text = _read(header)
    if text is None:
        return None
    return header, parse_header_version(text), text
