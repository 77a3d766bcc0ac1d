"""An installed ROCm (``--rocm-path`` / ``[rocm] path``): each piece found where its layout keeps it.

Two standard layouts, and anything between them:

==================  ==============================  =============================================
piece               TheRock (``/opt/rocm`` alike)   a Linux distribution (Debian: ``/usr``)
==================  ==============================  =============================================
compiler            ``lib/llvm/bin/clang``          ``lib/llvm-<N>/bin/clang``
device libraries    ``lib/llvm/amdgcn/bitcode``     ``lib/llvm-<N>/lib/clang/<N>/amdgcn/bitcode``
                                                    (Debian 12: ``lib/<triplet>/amdgcn/bitcode``)
HIP version         ``lib/cmake/hip/``              ``lib/<triplet>/cmake/hip/``
                    ``hip-config-version.cmake``    ``hip-config-version.cmake``
CMake prefix        the root                        the root (CMake adds ``lib/<triplet>``)
==================  ==============================  =============================================

A missing piece is one error line naming it and where it was looked for: a
HIP build without device libraries would otherwise stop minutes later in
CMake's HIP compiler test ("cannot find ROCm device library").

The identity (cache key, record) is ``rocm-hip<HIP version>-<12 hex>``: the
version the install states, and a digest of the compiler's content and the
device libraries (:func:`pipeline.toolchain.therock.install_fingerprint`).
Nothing is installed or run to get it, except ``hipconfig --version`` when
no file states HIP's version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pipeline.errors import ToolchainError, UsageError
from pipeline.names import safe_identity
from pipeline.toolchain.gpu_versions import Found, cmake_package_dirs, hip_version
from pipeline.toolchain.therock import (
    device_lib_places,
    exe,
    find_clang_dir,
    find_device_lib_dir,
    install_fingerprint,
    installed_version,
    rocm_toolchain,
)
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest
from pipeline.util.fsutil import folder_problem

# What says where HIP's CMake package is; its folder's prefix is what CMake is pointed at.
HIP_CONFIG = "hip-config.cmake"


@dataclass(frozen=True, kw_only=True)
class InstalledRocm:
    """The pieces of an installed ROCm, each where it was found."""

    root: Path
    clang_dir: Path
    device_libs: Path
    hip: Found
    cmake_prefix: Path
    fingerprint: str

    @property
    def identity(self) -> str:
        return installed_identity(self.hip.version, self.fingerprint)


def installed_identity(hip: str, fingerprint: str) -> str:
    """``rocm-hip6.4.43484-<first 12 hex of the compiler and device-library digest>``."""
    return safe_identity(f"rocm-hip{hip}-{fingerprint[:12]}")


def _shown(root: Path, paths: list[Path]) -> str:
    rel = []
    for p in paths:
        try:
            rel.append(PurePosixPath(p.relative_to(root)).as_posix())
        except ValueError:
            rel.append(str(p))
    return ", ".join(dict.fromkeys(rel))


def cmake_prefix_of(root: Path, config_dir: Path) -> Path:
    """The prefix CMake searches to find the package in ``config_dir`` (``<prefix>/lib[/<triplet>]/cmake/hip``)."""
    rel = config_dir.relative_to(root).parts
    for word in ("lib", "lib64", "share"):
        if word in rel:
            return root.joinpath(*rel[: rel.index(word)])
    return root


# A HIP version as the identity takes it: "5.2.0", "6.4.43483".
_HIP_VERSION = re.compile(r"\d{1,9}(?:\.\d{1,9}){0,3}")


def find_installed_rocm(root: Path, os_name: str, *, what: str) -> InstalledRocm:
    """Each piece of the ROCm at ``root``; ToolchainError (one line, ``what`` first) naming a missing one."""
    clang_dir = find_clang_dir(root, os_name)
    device_libs = find_device_lib_dir(root, clang_dir)
    if device_libs is None:
        raise ToolchainError(
            f"{what}: no AMDGPU device libraries (amdgcn/bitcode) for {clang_dir / exe(os_name, 'clang')}; "
            f"looked in {', '.join(device_lib_places(root, clang_dir))}",
            hint="install the device libraries (TheRock ships them; Debian: rocm-device-libs)",
        )
    if not any(device_libs.glob("*.bc")):
        # The folder alone builds nothing: every HIP compile links ockl.bc, ocml.bc and the oclc_*.bc.
        raise ToolchainError(
            f"{what}: {device_libs} holds no AMDGPU device library (*.bc)",
            hint="install the device libraries (TheRock ships them; Debian: rocm-device-libs)",
        )
    configs = [d for d in cmake_package_dirs(root, "hip") if (d / HIP_CONFIG).is_file()]
    if not configs:
        raise ToolchainError(
            f"{what}: no HIP CMake package ({HIP_CONFIG} under lib/cmake/hip, lib/<triplet>/cmake/hip or "
            f"share/cmake/hip)",
            hint="install HIP's development files (Debian: libamdhip64-dev)",
        )
    found = hip_version(root)
    if found is None:
        raise ToolchainError(
            f"{what}: no HIP version (no PACKAGE_VERSION in {_shown(root, [configs[0] / 'hip-config-version.cmake'])}, "
            "no bin/.hipVersion or share/hip/version, no bin/hipconfig)"
        )
    if not _HIP_VERSION.fullmatch(found.version):
        # It goes into the toolchain identity and the cache key (GitHub: 512 characters at most).
        raise ToolchainError(
            f"{what}: the HIP version {found.version[:40]!r}{'...' if len(found.version) > 40 else ''}"
            f" read from {found.source} is not a version (up to four numbers of at most 9 digits)"
        )
    return InstalledRocm(
        root=root, clang_dir=clang_dir, device_libs=device_libs, hip=found,
        cmake_prefix=cmake_prefix_of(root, configs[0]),
        fingerprint=install_fingerprint(clang_dir / exe(os_name, "clang"), device_libs),
    )  # fmt: skip


def existing_install(path: Path, request: ToolchainRequest) -> Toolchain:
    """The toolchain of the ROCm installed at ``path``."""
    from pipeline.names import is_rocm_version

    if (problem := folder_problem(path)) is not None:
        raise UsageError(f"--rocm-path {path}: {problem}")
    root = path.resolve()
    installed = find_installed_rocm(root, request.leg.os, what=f"--rocm-path {root}")
    # An explicit --rocm-version names this install's version; a policy does not. It is recorded, but the
    # identity stays the install's own: two installs called the same can differ in every object.
    asked = request.rocm_version
    version = asked if asked and is_rocm_version(asked) else installed_version(root)
    return rocm_toolchain(
        root, request.leg, version=version, identity=installed.identity, cmake_prefix=installed.cmake_prefix,
        details={"origin": "rocm-path", "hip_version": installed.hip.version, "hip_version_from": installed.hip.source,
                 "cmake_prefix": str(installed.cmake_prefix), "fingerprint": installed.fingerprint},
        environ=request.environ,
    )  # fmt: skip
