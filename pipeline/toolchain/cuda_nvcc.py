"""The CUDA toolchain: nvcc, its version, and the host compiler it drives."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.inputs.cuda_driver import driver_floor
from pipeline.inputs.leg import Leg
from pipeline.names import CUDA_PATH, safe_identity
from pipeline.toolchain.host_compiler import compiler_version, host_toolchain
from pipeline.toolchain.toolchain import Toolchain, version_output

DEFAULT_CUDA_ROOT = Path("/usr/local/cuda")
# Debian's nvidia-cuda-toolkit (``--cuda-path /usr``): ``bin/nvcc`` is a script that puts this folder
# first on PATH and runs the real nvcc from it. Its ``g++`` is Debian's choice of host compiler: a
# script running the newest g++ the packaged CUDA supports (g++-13 for 12.4, where the system's
# default g++ 14 is refused by nvcc). A -ccbin naming the system's g++ would bypass that choice.
DEBIAN_TOOLKIT_BIN = Path("lib/nvidia-cuda-toolkit/bin")
_RELEASE = re.compile(r"release\s+(\d+\.\d+)(?:,\s*V(\d+\.\d+\.\d+))?")


def nvcc_candidates(env: Mapping[str, str], *, windows: bool = os.name == "nt") -> list[Path]:
    """Where nvcc is looked for, in order: ``$CUDA_PATH/bin``, ``/usr/local/cuda/bin``, PATH."""
    name = "nvcc.exe" if windows else "nvcc"
    found: list[Path] = []
    if cuda_path := env.get(CUDA_PATH):
        found.append(Path(cuda_path) / "bin" / name)
    if not windows:
        found.append(DEFAULT_CUDA_ROOT / "bin" / name)
    on_path = shutil.which(name, path=env.get("PATH"))
    if on_path:
        found.append(Path(on_path))
    return found


def find_nvcc(env: Mapping[str, str]) -> Path:
    """The first nvcc of :func:`nvcc_candidates` that exists."""
    for candidate in nvcc_candidates(env):
        if candidate.is_file():
            return candidate
    raise ToolchainError(
        "nvcc not found: set CUDA_PATH, install CUDA under /usr/local/cuda or put nvcc on PATH"
    )


def parse_nvcc_version(text: str) -> str:
    """``nvcc --version`` -> "13.0.88" (the full V number when printed, else "13.0")."""
    match = _RELEASE.search(text)
    if match is None:
        raise ToolchainError(f"cannot read the CUDA version from nvcc --version: {text.strip()[:120]!r}")
    return match.group(2) or match.group(1)


def nvcc_version(nvcc: Path) -> str:
    return parse_nvcc_version(version_output(nvcc))


def cuda_root_of(nvcc: Path) -> Path:
    """The CUDA install holding ``nvcc`` (``<root>/bin/nvcc``), symlinks followed."""
    return nvcc.resolve().parent.parent


def packaged_host_compiler(root: Path) -> Path | None:
    """The host C++ compiler a distribution's toolkit at ``root`` names for nvcc (Debian's), else None."""
    chosen = root / DEBIAN_TOOLKIT_BIN / "g++"
    return chosen if chosen.is_file() and os.access(chosen, os.X_OK) else None


def cuda_cmake_args(nvcc: Path, host_cxx: Path, architectures: tuple[str, ...]) -> tuple[str, ...]:
    """nvcc as CUDA compiler, the host C++ compiler it drives, and the leg's architectures."""
    args = [f"-DCMAKE_CUDA_COMPILER={nvcc.as_posix()}", f"-DCMAKE_CUDA_HOST_COMPILER={host_cxx.as_posix()}"]
    if architectures:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={';'.join(architectures)}")
    return tuple(args)


def cuda_env(root: Path, base_env: Mapping[str, str]) -> dict[str, str]:
    sep = ";" if os.name == "nt" else ":"
    path = base_env.get("PATH")
    return {
        "CUDA_PATH": str(root),
        "PATH": f"{root / 'bin'}{sep}{path}" if path else str(root / "bin"),
    }


def cmake_value(args: tuple[str, ...], name: str) -> str:
    """The value of ``-D<name>=...`` among ``args``."""
    prefix = f"-D{name}="
    for arg in args:
        if arg.startswith(prefix):
            return arg[len(prefix) :]
    raise ToolchainError(f"the host toolchain sets no {name}")


def cuda_toolchain(
    leg: Leg, environ: Mapping[str, str], *, root: Path | None = None, origin: str = "system"
) -> Toolchain:
    """nvcc + the host compiler; the identity carries both versions.

    ``root``: a toolkit given by ``--cuda-path`` or installed from wheels; None finds a system one.
    ``origin``: where the toolkit came from, as the record's toolchain details say it.
    """
    env = environ
    host = host_toolchain(environ)
    nvcc = (
        (root / "bin" / ("nvcc.exe" if os.name == "nt" else "nvcc")) if root is not None else find_nvcc(env)
    )
    version = nvcc_version(nvcc)
    root = root if root is not None else cuda_root_of(nvcc)
    host_cxx = Path(cmake_value(host.cmake_args, "CMAKE_CXX_COMPILER"))
    # nvcc's host compiler: the toolkit's own choice where it makes one, else the leg's C++ compiler.
    packaged = packaged_host_compiler(root)
    identity, compilers, extra = (
        f"cuda-{version}-{host.identity}",
        {**host.compilers, "CUDA": f"nvcc {version} ({nvcc})"},
        {},
    )
    if packaged is not None:
        # Another compiler for the CUDA units' host code: part of what the objects are made with.
        family, number = compiler_version(packaged)
        identity += f"-ccbin-{family}-{number}"
        compilers["CUDA_HOST"] = f"{family} {number} ({packaged})"
        extra["cuda_host_compiler"] = f"{family}-{number}"
    return Toolchain(
        kind="cuda",
        identity=safe_identity(identity),
        compilers=compilers,
        details={
            "version": version,
            "cuda_root": str(root),
            "host_compiler": host.identity,
            **extra,
            "architectures": ";".join(leg.cuda_architectures),
            "origin": origin,
            # The oldest driver the shipped runtime starts on: the manifest and the release notes say it.
            **({"driver_min": floor.text(leg.os)} if (floor := driver_floor(version)) is not None else {}),
        },
        env=cuda_env(root, env),
        cmake_args=(
            *host.cmake_args,
            *cuda_cmake_args(nvcc, packaged or host_cxx, leg.cuda_architectures),
            # FindCUDAToolkit looks here first, not beside a system nvcc.
            f"-DCUDAToolkit_ROOT={root.as_posix()}",
        ),
        launcher_languages=("CUDA",),
    )
