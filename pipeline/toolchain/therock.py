"""The ROCm toolchain: TheRock's clang, its environment and the HIP configure.

One code path for both operating systems: the OS is a parameter, so the
Windows leg's environment and CMake arguments are produced (and tested) on
Linux too. Paths are ``PurePath`` flavours of the leg's OS for that reason.

Facts (TheRock's layout, checked against its tarballs): TheRock's compilers live under ``llvm/bin`` or
``lib/llvm/bin``. Linux needs ROCM_PATH, HIP_PATH, HIP_PLATFORM=amd,
HIP_CLANG_PATH, HIP_DEVICE_LIB_PATH, PATH and LD_LIBRARY_PATH; Windows needs
HIP_PATH and PATH, with clang.exe from ``lib\\llvm\\bin``. CMake on Windows
has no HIP language for llama.cpp, which compiles HIP as C++ there; so ccache
launches HIP only on Linux.

This module installs nothing: the tarball is installed by
:mod:`pipeline.toolchain.therock_tarball`, the wheels by
:mod:`pipeline.toolchain.therock_wheels`, and a leg's identity
(:mod:`pipeline.toolchain.rocm_identity`) reads a given ``--rocm-path`` here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from pipeline.errors import ToolchainError
from pipeline.inputs.leg import Leg
from pipeline.names import safe_identity, therock_identity
from pipeline.toolchain.toolchain import Toolchain
from pipeline.util.fsutil import file_digest

# Where TheRock (and /opt/rocm) keep clang, relative to the install root.
CLANG_DIRS = ("llvm/bin", "lib/llvm/bin")
# TheRock's device libraries; other layouts are searched too.
THEROCK_DEVICE_LIBS = "lib/llvm/amdgcn/bitcode"
_LLVM_VERSIONED = re.compile(r"^llvm-(\d+)$")


def pure_path(os_name: str, path: str | PurePath) -> PurePath:
    """``path`` as a path of ``os_name`` (Windows paths stay Windows paths on Linux)."""
    return PureWindowsPath(path) if os_name == "windows" else PurePosixPath(path)


def exe(os_name: str, name: str) -> str:
    return f"{name}.exe" if os_name == "windows" else name


def cmake_path(path: PurePath) -> str:
    """CMake wants forward slashes on every OS."""
    return path.as_posix()


@dataclass(frozen=True, kw_only=True)
class RocmLayout:
    """Where the parts of one ROCm install are, in the leg's OS's path flavour."""

    os: str
    root: PurePath
    clang_dir: PurePath
    device_lib_dir: PurePath
    # Where CMake finds hip's package (the root in both standard layouts); None: the root.
    cmake_prefix: PurePath | None = None

    @property
    def clang(self) -> PurePath:
        return self.clang_dir / exe(self.os, "clang")

    @property
    def clangxx(self) -> PurePath:
        return self.clang_dir / exe(self.os, "clang++")


# --------------------------------------------------------------------------
# Discovery (reads the file system)


# Debian's rocm-device-libs (sid, clang 21) installs into clang's resource folder,
# lib/clang/<N>/amdgcn/bitcode; upstream clang also looks in lib/clang/<N>/lib/amdgcn/bitcode.
_RESOURCE_DEVICE_LIBS = ("lib/clang/*/amdgcn/bitcode", "lib/clang/*/lib/amdgcn/bitcode")


def _resource_device_libs(llvm: Path) -> list[Path]:
    """The device libraries in the resource folder of the clang at ``llvm``."""
    return [d for pattern in _RESOURCE_DEVICE_LIBS for d in sorted(llvm.glob(pattern))]


def clang_dir_candidates(root: Path) -> list[Path]:
    """TheRock's and /opt/rocm's folders first, then Debian's ``lib/llvm-N/bin``.

    Of several ``lib/llvm-N`` (a Debian machine may hold clang 14, 15 and 21 side by side), the ones
    whose resource folder holds the AMDGPU device libraries come first (that clang is the one ROCm was
    built for), newest N first within each group.
    """
    found = [root / rel for rel in CLANG_DIRS]
    lib = root / "lib"
    versioned: list[tuple[bool, int, Path]] = []
    if lib.is_dir():
        for child in lib.iterdir():
            if m := _LLVM_VERSIONED.match(child.name):
                has_libs = any(d.is_dir() for d in _resource_device_libs(child))
                versioned.append((has_libs, int(m.group(1)), child / "bin"))
    found += [p for *_, p in sorted(versioned, reverse=True)]
    return found


def find_clang_dir(root: Path, os_name: str) -> Path:
    """The folder holding the install's clang; ToolchainError naming where it looked."""
    name = exe(os_name, "clang")
    for candidate in clang_dir_candidates(root):
        if (candidate / name).is_file():
            return candidate
    raise ToolchainError(f"{root}: no {name} under {' or '.join(CLANG_DIRS)} (is this a ROCm install?)")


def device_lib_places(root: Path, clang_dir: Path) -> list[str]:
    """Where an install may keep its AMDGPU bitcode libraries, relative to ``root``, in the order taken."""
    llvm = clang_dir.parent
    try:
        llvm_rel = llvm.relative_to(root).as_posix()
    except ValueError:
        llvm_rel = str(llvm)
    return [
        THEROCK_DEVICE_LIBS,
        "amdgcn/bitcode",
        "llvm/amdgcn/bitcode",
        *(f"{llvm_rel}/{pattern}" for pattern in _RESOURCE_DEVICE_LIBS),
        # Debian 12's multiarch layout: /usr/lib/x86_64-linux-gnu/amdgcn/bitcode.
        "lib/*/amdgcn/bitcode",
    ]


def device_lib_candidates(root: Path, clang_dir: Path) -> list[Path]:
    """The folders :func:`device_lib_places` names that exist or may exist (globs expanded)."""
    found: list[Path] = []
    for place in device_lib_places(root, clang_dir):
        found += sorted(root.glob(place)) if "*" in place else [root / place]
    return found


def find_device_lib_dir(root: Path, clang_dir: Path) -> Path | None:
    """The AMDGPU bitcode libraries of the install, if any (TheRock, /opt/rocm, Debian)."""
    return next((c for c in device_lib_candidates(root, clang_dir) if c.is_dir()), None)


def layout_of(root: Path, clang_dir: Path, os_name: str) -> RocmLayout:
    """The layout of an install whose clang folder is known, in ``os_name``'s path flavour."""
    device_libs = find_device_lib_dir(root, clang_dir)
    return RocmLayout(
        os=os_name,
        root=pure_path(os_name, root),
        clang_dir=pure_path(os_name, clang_dir),
        # Absent from a C/C++-only install; TheRock's place is the honest default.
        device_lib_dir=pure_path(os_name, device_libs or root / THEROCK_DEVICE_LIBS),
    )


# --------------------------------------------------------------------------
# Environment and CMake arguments (pure)


def _prepend(os_name: str, entries: list[PurePath], current: str | None) -> str:
    sep = ";" if os_name == "windows" else ":"
    parts = [str(p) for p in entries]
    if current:
        parts.append(current)
    return sep.join(parts)


def rocm_env(layout: RocmLayout, base_env: Mapping[str, str]) -> dict[str, str]:
    """The variables the build needs, merged over ``base_env``'s PATH-like values."""
    root = layout.root
    if layout.os == "windows":
        return {
            "HIP_PATH": str(root),
            "PATH": _prepend("windows", [root / "bin", layout.clang_dir], base_env.get("PATH")),
        }
    lib_dirs: list[PurePath] = [root / "lib"]
    llvm_lib = layout.clang_dir.parent / "lib"
    if llvm_lib != root / "lib":
        lib_dirs.append(llvm_lib)
    return {
        "ROCM_PATH": str(root),
        "HIP_PATH": str(root),
        "HIP_PLATFORM": "amd",
        "HIP_CLANG_PATH": str(layout.clang_dir),
        "HIP_DEVICE_LIB_PATH": str(layout.device_lib_dir),
        "PATH": _prepend("linux", [root / "bin", layout.clang_dir], base_env.get("PATH")),
        "LD_LIBRARY_PATH": _prepend("linux", lib_dirs, base_env.get("LD_LIBRARY_PATH")),
    }


def hip_cmake_args(layout: RocmLayout, targets: tuple[str, ...]) -> tuple[str, ...]:
    """TheRock's clang as C/C++ (and on Linux HIP) compiler, and the GPU targets."""
    args = [
        f"-DCMAKE_C_COMPILER={cmake_path(layout.clang)}",
        f"-DCMAKE_CXX_COMPILER={cmake_path(layout.clangxx)}",
    ]
    if layout.os != "windows":
        args.append(f"-DCMAKE_HIP_COMPILER={cmake_path(layout.clangxx)}")
    args += [
        f"-DCMAKE_PREFIX_PATH={cmake_path(layout.cmake_prefix or layout.root)}",
        f"-DGPU_TARGETS={';'.join(targets)}",
    ]
    return tuple(args)


def launcher_languages(os_name: str) -> tuple[str, ...]:
    """ccache launches HIP on Linux; on Windows llama.cpp compiles HIP as C++."""
    return () if os_name == "windows" else ("HIP",)


def derived_identity(clang_version: str, fingerprint: str) -> str:
    """The identity of an install without a version: clang's version and a content hash.

    ``clang --version`` alone is not enough: ROCm's clang prints the same
    string for different builds.
    """
    return safe_identity(f"rocm-clang{clang_version}-{fingerprint[:12]}")


# --------------------------------------------------------------------------
# The toolchain


def file_sha256(path: Path) -> str:
    """sha256 of a file's content (symlinks followed)."""
    try:
        return file_digest(path.resolve())[1]
    except OSError as exc:
        raise ToolchainError(f"{path}: cannot read: {exc.strerror}") from None


def install_fingerprint(clang: Path, device_lib_dir: Path | None) -> str:
    """sha256 over clang's binary and the device libraries' names and contents.

    ccache hashes the compiler binary, but not the bitcode that
    HIP_DEVICE_LIB_PATH links into every HIP object; an install without a
    version must change identity when either changes.
    """
    digest = hashlib.sha256(b"clang\0" + file_sha256(clang).encode())
    if device_lib_dir is not None and device_lib_dir.is_dir():
        for lib in sorted(device_lib_dir.iterdir()):
            if lib.is_file():
                digest.update(f"\0{lib.name}\0{file_sha256(lib)}".encode())
    return digest.hexdigest()


def installed_version(root: Path) -> str | None:
    """The version an /opt/rocm-style install records in ``.info/version``, if any."""
    try:
        text = (root / ".info" / "version").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text.splitlines()[0].strip() if text else None


def rocm_toolchain(
    root: Path,
    leg: Leg,
    *,
    version: str | None,
    identity: str | None = None,
    cmake_prefix: Path | None = None,
    details: Mapping[str, str] | None = None,
    environ: Mapping[str, str],
) -> Toolchain:
    """The toolchain of the ROCm install at ``root`` for ``leg`` (its OS and targets).

    ``identity`` None: ``rocm-<version>``; ``version`` None too: clang's
    version and a hash of its binary and device libraries, stable for one
    install and different for another build.
    """
    from pipeline.toolchain.host_compiler import compiler_version

    if not root.is_dir():
        raise ToolchainError(f"{root}: ROCm install not found (no such directory)")
    clang_dir = find_clang_dir(root, leg.os)
    layout = layout_of(root, clang_dir, leg.os)
    if cmake_prefix is not None:
        layout = dataclasses.replace(layout, cmake_prefix=pure_path(leg.os, cmake_prefix))
    # The file on this machine (a Windows leg's layout holds Windows paths).
    clang = clang_dir / exe(leg.os, "clang")
    clang_hash = file_sha256(clang)
    try:
        _, clang_ver = compiler_version(clang)
    except ToolchainError:
        if leg.os == "linux" and os.name != "nt":
            raise
        # A Windows leg prepared on Linux (or the reverse) cannot run its clang.
        clang_ver = "unknown"
    if identity is None and version:
        identity = safe_identity(therock_identity(version))
    elif identity is None:
        fingerprint = install_fingerprint(clang, find_device_lib_dir(root, clang_dir))
        identity = derived_identity(clang_ver, fingerprint)
    description = f"clang {clang_ver} ({cmake_path(layout.clang)})"
    compilers = {"C": description, "CXX": f"clang++ {clang_ver} ({cmake_path(layout.clangxx)})"}
    if leg.os != "windows":
        compilers["HIP"] = compilers["CXX"]
    info = {
        "root": str(layout.root),
        "clang_version": clang_ver,
        "clang_sha256": clang_hash,
        "device_libs": str(layout.device_lib_dir),
        "targets": ";".join(leg.targets),
        **(details or {}),
    }
    if version:
        info["version"] = version
    return Toolchain(
        kind="rocm",
        identity=identity,
        compilers=compilers,
        details=info,
        env=rocm_env(layout, environ),
        cmake_args=hip_cmake_args(layout, leg.targets),
        launcher_languages=launcher_languages(leg.os),
    )


def install_check(os_name: str) -> Callable[[Path], None]:
    """What a new TheRock install must pass before it replaces the working one: its clang runs.

    A tarball without clang, an empty one, or one whose clang cannot run is
    refused here, not kept as a complete install that fails every later run.
    A Windows install checked on another OS can only show that clang is there.
    """
    import sys

    from pipeline.toolchain.toolchain import version_output

    def check(root: Path) -> None:
        clang = find_clang_dir(root, os_name) / exe(os_name, "clang")
        if (os_name == "windows") == (sys.platform == "win32"):
            version_output(clang)

    return check
