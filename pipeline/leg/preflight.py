"""Before configuring: does the toolchain meet what the tree requires? One line and exit 7 when it does not.

The tree states its needs (:mod:`pipeline.source.requirements`); the
toolchain says what it is (:mod:`pipeline.toolchain.gpu_versions`). Without
this step a too-old install fails minutes in (Vulkan headers 1.3.239: 10+
minutes into the build, at ``ggml-vulkan.cpp``) with the cause somewhere in
a log tail.

- rocm: the install's HIP version against ``ggml-hip``'s floor. A ROCm
  package config that asks for CMake < 3.5, which the pinned CMake 4
  refuses, gets ``-DCMAKE_POLICY_VERSION_MINIMUM=3.5`` (see
  :func:`cmake_policy_floor`).
- vulkan: the headers the leg compiles against must declare every
  extension the tree's ``ggml-vulkan.cpp`` uses.

A tree that states nothing (a generated test project, an older llama.cpp)
is not checked.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from pipeline.errors import ToolchainError
from pipeline.leg import console_lines as render
from pipeline.source.requirements import (
    HIP_CMAKELISTS,
    VULKAN_SOURCE,
    hip_minimum,
    version_less,
    vulkan_extensions_used,
)
from pipeline.toolchain.gpu_versions import (
    CMAKE4_FLOOR,
    header_declares,
    hip_version,
    old_cmake_minimums,
    vulkan_header,
)
from pipeline.toolchain.toolchain import Toolchain

# What makes CMake 4 configure a package config that asks for an older CMake.
POLICY_FLOOR_FLAG = f"-DCMAKE_POLICY_VERSION_MINIMUM={CMAKE4_FLOOR}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def check_hip(leg: str, root: Path, tree: Path) -> None:
    """ToolchainError (one line, both versions) when the HIP at ``root`` is older than the tree's floor."""
    text = _read(tree / HIP_CMAKELISTS)
    needed = hip_minimum(text) if text is not None else None
    if needed is None:
        return
    found = hip_version(root)
    if found is None:
        # Unknown: CMake's own check (the tree's) still runs at configure.
        return
    if version_less(found.version, needed.minimum):
        raise ToolchainError(
            f"{leg}: HIP {found.version} at {root} (from {found.source}) is older than HIP {needed.minimum}, "
            f"which this llama.cpp requires ({needed.where})"
        )


def cmake_policy_floor(root: Path) -> list[str]:
    """The package configs under ``root`` that ask for CMake < 3.5.

    CMake 4 refuses them ("Compatibility with CMake < 3.5 has been
    removed"); ``CMAKE_POLICY_VERSION_MINIMUM=3.5`` makes it take them. That
    is safe here: it only raises a ``cmake_minimum_required`` /
    ``cmake_policy(VERSION)`` that asks for less than 3.5, so llama.cpp's
    own (3.14) is untouched; ``find_package`` loads a config in a policy
    scope of its own, so the raised policies (those of CMake 3.3 to 3.5)
    apply inside that config only; and it changes no compile command, so
    the objects, the ccache keys and the bundle stay the same.
    """
    return [f.source for f in old_cmake_minimums(root)]


def check_vulkan(leg: str, include_dir: Path, tree: Path) -> None:
    """ToolchainError (one line) when the headers lack an extension the tree's ggml-vulkan.cpp uses."""
    source = _read(tree / VULKAN_SOURCE)
    if source is None:
        return
    used = vulkan_extensions_used(source)
    if not used:
        return
    found = vulkan_header(include_dir)
    if found is None:
        raise ToolchainError(f"{leg}: no vulkan/vulkan_core.h under {include_dir}")
    header, version, text = found
    missing = [ext for ext in used if not header_declares(text, ext.name)]
    if missing:
        first = missing[0]
        raise ToolchainError(
            f"{leg}: Vulkan headers {version} ({header}) lack {', '.join(e.name for e in missing)}, which this "
            f"llama.cpp's {VULKAN_SOURCE} uses (Vulkan-Headers 1.3.{first.first_header} or newer declare it)",
            hint="use the pinned SDK ([toolchains.vulkan]) or --vulkan-sdk DIR with newer headers",
        )


def preflight(leg: str, toolchain: Toolchain, tree: Path, console: Console) -> Toolchain:
    """The checks of the module docstring; the toolchain comes back with what configure then needs."""
    if toolchain.kind == "rocm" and toolchain.details.get("root"):
        root = Path(toolchain.details["root"])
        check_hip(leg, root, tree)
        if old := cmake_policy_floor(root):
            more = f" (and {len(old) - 1} more)" if len(old) > 1 else ""
            render.note(
                console,
                leg,
                f"{old[0]}{more} asks for CMake < {CMAKE4_FLOOR}: configuring with {POLICY_FLOOR_FLAG}",
            )
            return with_policy_floor(toolchain)
    elif toolchain.kind == "vulkan" and toolchain.details.get("include_dir"):
        check_vulkan(leg, Path(toolchain.details["include_dir"]), tree)
    return toolchain


def with_policy_floor(toolchain: Toolchain) -> Toolchain:
    """``toolchain`` with :data:`POLICY_FLOOR_FLAG` on its configure line (said in its details)."""
    return dataclasses.replace(
        toolchain,
        cmake_args=(*toolchain.cmake_args, POLICY_FLOOR_FLAG),
        details={**toolchain.details, "cmake_policy_version_minimum": CMAKE4_FLOOR},
    )
