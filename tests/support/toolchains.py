"""Toolchain helpers for tests: discovery, and ROCm trees shaped like each standard layout."""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.toolchain.therock import RocmLayout, find_clang_dir, layout_of

HIP_VERSION = "6.4.43484"
# Where each layout keeps each piece, relative to the install root (read from the real installs: a
# TheRock dist tarball, Debian sid's /usr with ROCm 6.4 on clang 21, Debian 12's /usr with HIP 5.2).
LAYOUTS: dict[str, dict[str, str]] = {
    "therock": {
        "clang": "lib/llvm/bin",
        "device_libs": "lib/llvm/amdgcn/bitcode",
        "hip_cmake": "lib/cmake/hip",
    },
    "debian-sid": {
        "clang": "lib/llvm-21/bin",
        "device_libs": "lib/llvm-21/lib/clang/21/amdgcn/bitcode",
        "hip_cmake": "lib/x86_64-linux-gnu/cmake/hip",
    },
    "debian-12": {
        "clang": "lib/llvm-15/bin",
        "device_libs": "lib/x86_64-linux-gnu/amdgcn/bitcode",
        "hip_cmake": "lib/x86_64-linux-gnu/cmake/hip",
    },
}


def find_layout(root: Path, os_name: str) -> RocmLayout:
    """Discover clang and the device libraries of the install at ``root``."""
    if not root.is_dir():
        raise ToolchainError(f"{root}: ROCm install not found (no such directory)")
    return layout_of(root, find_clang_dir(root, os_name), os_name)


def make_rocm_tree(
    root: Path,
    layout: str,
    *,
    skip: tuple[str, ...] = (),
    clang: bytes = b"\x7fELF clang",
    hip_version: str = HIP_VERSION,
) -> Path:
    """A ROCm install shaped like ``layout`` (a key of :data:`LAYOUTS`), with stand-in files; ``skip``
    leaves out pieces (``clang``, ``device_libs``, ``hip_cmake``, ``hip_version``)."""
    where = LAYOUTS[layout]
    if "clang" not in skip:
        (root / where["clang"]).mkdir(parents=True)
        (root / where["clang"] / "clang").write_bytes(clang)
        (root / where["clang"] / "clang++").symlink_to("clang")
    if "device_libs" not in skip:
        (root / where["device_libs"]).mkdir(parents=True)
        for name in ("ockl.bc", "ocml.bc", "oclc_isa_version_1100.bc"):
            (root / where["device_libs"] / name).write_bytes(f"bitcode {name}".encode())
    if "hip_cmake" not in skip:
        cmake = root / where["hip_cmake"]
        cmake.mkdir(parents=True)
        (cmake / "hip-config.cmake").write_text("cmake_minimum_required(VERSION 3.5)\n")
        if "hip_version" not in skip:
            (cmake / "hip-config-version.cmake").write_text(f'set(PACKAGE_VERSION "{hip_version}")\n')
    return root
