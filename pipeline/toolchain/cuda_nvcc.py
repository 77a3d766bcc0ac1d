"""The CUDA toolchain: nvcc, its version, and the host compiler it drives."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.inputs.cuda_driver import driver_floor
from pipeline.inputs.matrix import Leg
from pipeline.inputs.settings import CUDA_PATH
from pipeline.toolchain.compiler_set import Toolchain, safe_identity, version_output
from pipeline.toolchain.host_compiler import host_toolchain

DEFAULT_CUDA_ROOT = Path("/usr/local/cuda")
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
    raise ToolchainError("nvcc not found: set CUDA_PATH, install CUDA under /usr/local/cuda or put nvcc on PATH")


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
    leg: Leg, environ: Mapping[str, str], *, root: Path | None = None, source: str = "system"
) -> Toolchain:
    """nvcc + the host compiler; the identity carries both versions.

    ``root``: a toolkit given by ``--cuda-path`` or installed from wheels; None finds a system one.
    """
    env = environ
    host = host_toolchain(environ)
    nvcc = (root / "bin" / ("nvcc.exe" if os.name == "nt" else "nvcc")) if root is not None else find_nvcc(env)
    version = nvcc_version(nvcc)
    root = root if root is not None else cuda_root_of(nvcc)
    host_cxx = Path(cmake_value(host.cmake_args, "CMAKE_CXX_COMPILER"))
    return Toolchain(
        kind="cuda",
        identity=safe_identity(f"cuda-{version}-{host.identity}"),
        compilers={**host.compilers, "CUDA": f"nvcc {version} ({nvcc})"},
        details={
            "version": version,
            "cuda_root": str(root),
            "host_compiler": host.identity,
            "architectures": ";".join(leg.cuda_architectures),
            "source": source,
            # The oldest driver the shipped runtime starts on: the manifest and the release notes say it.
            **({"driver_min": floor.text(leg.os)} if (floor := driver_floor(version)) is not None else {}),
        },
        env=cuda_env(root, env),
        cmake_args=(
            *host.cmake_args,
            *cuda_cmake_args(nvcc, host_cxx, leg.cuda_architectures),
            # FindCUDAToolkit looks here first, not beside a system nvcc.
            f"-DCUDAToolkit_ROOT={root.as_posix()}",
        ),
        launcher_languages=("CUDA",),
    )
