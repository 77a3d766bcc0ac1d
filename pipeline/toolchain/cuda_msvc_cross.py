"""Windows arm64 CUDA, cross-compiled on an x64 Windows machine: nvcc (x64) driving MSVC's arm64 compiler.

No Windows arm64 runner carries a CUDA toolkit, and nvcc takes only MSVC's
``cl.exe`` as its host compiler on Windows. llama.cpp's own
``cmake/arm64-windows-msvc-cuda.cmake`` (in the leg's ``cmake_args``, as upstream's
release and the reference pass it) sets the target system and processor, nvcc's
``-target-dir=arm64`` and the arm64 import libraries, and takes nvcc's host
compiler from ``VCToolsInstallDir``'s ``bin/Hostx64/arm64/cl.exe``: the cross
toolset ``vcvarsall.bat amd64_arm64`` loads. The pipeline loads that
environment once (:mod:`pipeline.toolchain.msvc`) and names the same ``cl.exe``
for C, C++ and nvcc's host side, so nothing depends on which compiler a
runner puts first on PATH. The MSVC toolset is in every object: its version
joins the identity, as on the ROCm Windows legs.

cl takes no ``-ffile-prefix-map``: this toolchain says so
(``Toolchain.prefix_map``), and its objects keep the build's folders in
``__FILE__``, as the reference's do.

The pure parts (which leg, which cl, the CMake arguments) are tested on any
machine; :func:`msvc_cross_toolchain` composes them with a captured MSVC
environment, which only a Windows machine gives.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path, PureWindowsPath

from pipeline.errors import ToolchainError
from pipeline.inputs.leg import Leg
from pipeline.toolchain.msvc import capture_msvc, identity_with_msvc, with_msvc
from pipeline.toolchain.msvc_env import MsvcEnv
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

# vcvarsall's argument: x64-hosted tools that emit arm64 code (Hostx64/arm64).
MSVC_CROSS_ARCH = "amd64_arm64"
# The leg's arch -> MSVC's name for the target folder under bin/Hostx64.
_MSVC_TARGET = {"arm64": "arm64"}


def is_msvc_cross(leg: Leg) -> bool:
    """A Windows arm64 CUDA leg: cross-compiled on x64 with MSVC's amd64_arm64 tools."""
    return leg.backend == "cuda" and leg.os == "windows" and leg.arch in _MSVC_TARGET


def msvc_cross_applies(request: ToolchainRequest) -> bool:
    """The leg is one, and this is the Windows machine that builds it (vcvarsall is there to run)."""
    return is_msvc_cross(request.leg) and sys.platform == "win32"


def cross_cl(tools_dir: str, arch: str) -> PureWindowsPath:
    """The x64-hosted ``cl.exe`` for ``arch`` in the toolset at ``tools_dir`` (``VCToolsInstallDir``)."""
    try:
        target = _MSVC_TARGET[arch]
    except KeyError:
        raise ToolchainError(f"MSVC has no x64-hosted compiler for {arch} here") from None
    return PureWindowsPath(tools_dir) / "bin" / "Hostx64" / target / "cl.exe"


def msvc_cross_cmake_args(
    cl: PureWindowsPath, root: Path | PureWindowsPath, architectures: tuple[str, ...]
) -> tuple[str, ...]:
    """The compilers and the toolkit: ``cl`` for C, C++ and nvcc's host side, the x64 nvcc of ``root``, the
    leg's CUDA architectures, and ``CUDAToolkit_ROOT`` (which the tree's toolchain file reads first)."""
    compiler = cl.as_posix()
    nvcc = f"{root.as_posix()}/bin/nvcc.exe"
    args = [
        f"-DCMAKE_C_COMPILER={compiler}",
        f"-DCMAKE_CXX_COMPILER={compiler}",
        f"-DCMAKE_CUDA_COMPILER={nvcc}",
        f"-DCMAKE_CUDA_HOST_COMPILER={compiler}",
    ]
    if architectures:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={';'.join(architectures)}")
    args.append(f"-DCUDAToolkit_ROOT={root.as_posix()}")
    return tuple(args)


def with_msvc_cross(toolchain: Toolchain, msvc: MsvcEnv, leg: Leg, environ: Mapping[str, str]) -> Toolchain:
    """The CUDA ``toolchain`` (its root in ``details["cuda_root"]``) built with MSVC's cross compiler: MSVC's
    environment beneath its own, MSVC's version in its identity, cl for every language, no prefix maps."""
    tools = msvc.tools_dir(environ)
    if not tools:
        raise ToolchainError(
            f"vcvarsall.bat {MSVC_CROSS_ARCH} set no VCToolsInstallDir: no {leg.arch} compiler"
        )
    cl = cross_cl(tools, leg.arch)
    layered = with_msvc(toolchain, msvc, environ)
    compilers = {
        **{k: v for k, v in layered.compilers.items() if k not in ("C", "CXX")},
        "C": f"MSVC {msvc.tools_version} {leg.arch} ({cl})",
        "CXX": f"MSVC {msvc.tools_version} {leg.arch} ({cl})",
        "CUDA_HOST": f"MSVC {msvc.tools_version} {leg.arch} ({cl})",
    }
    root = PureWindowsPath(toolchain.details["cuda_root"])
    return dataclasses.replace(
        layered,
        compilers=compilers,
        details={**layered.details, "cuda_host_compiler": f"msvc-{msvc.tools_version}-{leg.arch}"},
        cmake_args=msvc_cross_cmake_args(cl, root, leg.cuda_architectures),
        prefix_map=False,
    )


def msvc_cross_toolchain(toolchain: Toolchain, request: ToolchainRequest) -> Toolchain:
    """:func:`with_msvc_cross` with the MSVC environment ``vcvarsall.bat amd64_arm64`` sets on this machine."""
    msvc = capture_msvc(request.environ, arch=MSVC_CROSS_ARCH)
    return with_msvc_cross(toolchain, msvc, request.leg, request.environ)


def msvc_cross_identity(identity: str, request: ToolchainRequest) -> str:
    """``identity`` with the MSVC toolset that compiles the leg on this machine (cache-key's; nothing installed)."""
    return identity_with_msvc(identity, capture_msvc(request.environ, arch=MSVC_CROSS_ARCH))
