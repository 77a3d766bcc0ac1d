"""Cross-building a Linux arm64 leg on an x86-64 machine with Debian's aarch64 GCC.

Debian's ``gcc-aarch64-linux-gnu`` / ``g++-aarch64-linux-gnu`` compile for
aarch64 against the sysroot ``/usr/aarch64-linux-gnu`` (its glibc and
libstdc++). CMake is told through a toolchain file the pipeline writes
(:func:`toolchain_file_text`, pure): the target system and processor, the
compilers, and a find root at the sysroot so no x86-64 library is found for
an aarch64 build. The cross compiler is the leg's toolchain identity
(``gcc-12.2.0-aarch64-linux-gnu``), so its ccache and cache key can never be
a native build's.

On an arm64 runner the same leg builds natively with the host compiler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.inputs.leg import Leg
from pipeline.names import safe_identity
from pipeline.toolchain.host_compiler import compiler_version, find_compiler
from pipeline.toolchain.toolchain import Toolchain
from pipeline.util.fsutil import atomic_write_text


@dataclass(frozen=True, kw_only=True)
class CrossTarget:
    """A target the pipeline cross-builds for: the GNU triple, CMake's processor name, the sysroot."""

    triple: str
    processor: str
    sysroot: str


# (os, arch) of a leg -> how to cross-build it from another architecture of the same OS.
CROSS_TARGETS: dict[tuple[str, str], CrossTarget] = {
    ("linux", "arm64"): CrossTarget(
        triple="aarch64-linux-gnu", processor="aarch64", sysroot="/usr/aarch64-linux-gnu"
    ),
}


def cross_target(leg: Leg, *, host_os: str, host: str) -> CrossTarget | None:
    """The cross target of ``leg`` on a ``host_os``/``host`` machine; None when it builds natively.

    A leg for another OS (Windows arm64: llama.cpp's own clang toolchain file
    in its ``cmake_args``; macOS: its runner) is never cross-built here.
    """
    if leg.os != host_os or leg.arch == host:
        return None
    return CROSS_TARGETS.get((leg.os, leg.arch))


def toolchain_file_text(target: CrossTarget, cc: Path, cxx: Path) -> str:
    """The CMake toolchain file for ``target`` with these compilers (the same inputs give the same bytes)."""
    lines = [
        "# Written by the pipeline: a cross build for " + target.triple + ".",
        "set(CMAKE_SYSTEM_NAME Linux)",
        f"set(CMAKE_SYSTEM_PROCESSOR {target.processor})",
        f'set(CMAKE_C_COMPILER "{cc.as_posix()}")',
        f'set(CMAKE_CXX_COMPILER "{cxx.as_posix()}")',
        f"set(CMAKE_C_COMPILER_TARGET {target.triple})",
        f"set(CMAKE_CXX_COMPILER_TARGET {target.triple})",
        f'set(CMAKE_FIND_ROOT_PATH "{target.sysroot}")',
        # Programs (git, glslc) are the build machine's; libraries and headers only the target's.
        "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)",
        "set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)",
        "set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)",
        "set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)",
    ]
    return "\n".join(lines) + "\n"


def cross_toolchain(
    target: CrossTarget, environ: Mapping[str, str], folder: Path, *, write: bool = True
) -> Toolchain:
    """The cross compilers of ``target`` (``<triple>-gcc``/``-g++`` on PATH) and the toolchain file written
    under ``folder``; a ToolchainError naming the Debian packages when they are missing.

    ``write=False``: the same toolchain, its file not written (a cache key is computed, nothing is built).
    """
    try:
        cc = find_compiler("CC_" + target.processor.upper(), (f"{target.triple}-gcc",), environ)
        cxx = find_compiler("CXX_" + target.processor.upper(), (f"{target.triple}-g++",), environ)
    except ToolchainError:
        raise ToolchainError(
            f"no {target.triple} cross compiler found",
            hint=f"install Debian's gcc-{target.triple} and g++-{target.triple}, or build on an {target.processor} runner",
        ) from None
    if not Path(target.sysroot).is_dir():
        raise ToolchainError(
            f"no {target.triple} sysroot at {target.sysroot}",
            hint=f"install Debian's libc6-dev-{target.processor.replace('aarch64', 'arm64')}-cross",
        )
    family, version = compiler_version(cc)
    cxx_family, cxx_version = compiler_version(cxx)
    path = folder / "cross" / f"{target.triple}-{family}-{version}.cmake"
    text = toolchain_file_text(target, cc, cxx)
    if write and (not path.is_file() or path.read_text(encoding="utf-8") != text):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    return Toolchain(
        kind=family,
        identity=safe_identity(f"{family}-{version}-{target.triple}"),
        compilers={"C": f"{family} {version} ({cc})", "CXX": f"{cxx_family} {cxx_version} ({cxx})"},
        details={"version": version, "target": target.triple, "toolchain_file": str(path)},
        cmake_args=(f"-DCMAKE_TOOLCHAIN_FILE={path}",),
    )


def cross_problem(leg: Leg, *, host_os: str, host: str) -> str | None:
    """Why ``leg`` cannot be built on a ``host_os``/``host`` machine, or None.

    Another arch builds only where a cross build is declared: Linux through
    :data:`CROSS_TARGETS` (the cpu backend), Windows arm64 through llama.cpp's
    own toolchain files in the leg's ``cmake_args``: clang's for the cpu legs,
    ``arm64-windows-msvc-cuda.cmake`` with MSVC's amd64_arm64 tools for CUDA
    (:mod:`pipeline.toolchain.cuda_msvc_cross`, from an x64 machine). Anything
    else would be a host-arch bundle under an arm64 name.
    """
    if leg.arch == host or leg.os != host_os:
        return None
    if leg.backend == "cpu" and (leg.os == "windows" or (leg.os, leg.arch) in CROSS_TARGETS):
        return None
    if leg.backend == "cuda" and (leg.os, leg.arch, host) == ("windows", "arm64", "x64"):
        return None
    return f"leg {leg.name} ({leg.backend}) builds for {leg.arch} on an {leg.arch} runner: this machine is {host}"
