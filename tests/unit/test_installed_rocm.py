"""An installed ROCm of either standard layout: each piece found, a missing one named, the identity."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.errors import ToolchainError
from pipeline.toolchain.installed_rocm import find_installed_rocm
from tests.support.toolchains import HIP_VERSION, LAYOUTS, make_rocm_tree


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_piece_is_found_where_the_layout_keeps_it(tmp_path: Path, layout: str) -> None:
    root = make_rocm_tree(tmp_path / "rocm", layout)
    found = find_installed_rocm(root, "linux", what="--rocm-path X")
    where = LAYOUTS[layout]
    assert found.clang_dir == root / where["clang"]
    assert found.device_libs == root / where["device_libs"]
    assert found.hip.version == HIP_VERSION
    assert found.hip.source == str(root / where["hip_cmake"] / "hip-config-version.cmake")
    # Both layouts' CMake prefix is the root: CMake adds lib/<triplet>/cmake itself.
    assert found.cmake_prefix == root
    assert (
        found.identity.startswith(f"rocm-hip{HIP_VERSION}-")
        and len(found.identity) == len(f"rocm-hip{HIP_VERSION}-") + 12
    )


def test_the_clang_the_device_libraries_belong_to_comes_before_a_newer_one(tmp_path: Path) -> None:
    """A Debian machine with clang 22 installed for other work and ROCm on clang 21."""
    root = make_rocm_tree(tmp_path / "usr", "debian-sid")
    (root / "lib/llvm-22/bin").mkdir(parents=True)
    (root / "lib/llvm-22/bin/clang").write_bytes(b"another clang")
    assert find_installed_rocm(root, "linux", what="x").clang_dir == root / "lib/llvm-21/bin"


@pytest.mark.parametrize(("piece", "message"), [
    ("clang", "{root}: no clang under llvm/bin or lib/llvm/bin (is this a ROCm install?)"),
    ("device_libs", "--rocm-path {root}: no AMDGPU device libraries (amdgcn/bitcode) for {root}/lib/llvm-21/bin/"
                    "clang; looked in lib/llvm/amdgcn/bitcode, amdgcn/bitcode, llvm/amdgcn/bitcode, "
                    "lib/llvm-21/lib/clang/*/amdgcn/bitcode, lib/llvm-21/lib/clang/*/lib/amdgcn/bitcode, "
                    "lib/*/amdgcn/bitcode"),
    ("hip_cmake", "--rocm-path {root}: no HIP CMake package (hip-config.cmake under lib/cmake/hip, "
                  "lib/<triplet>/cmake/hip or share/cmake/hip)"),
    ("hip_version", "--rocm-path {root}: no HIP version (no PACKAGE_VERSION in lib/x86_64-linux-gnu/cmake/hip/"
                    "hip-config-version.cmake, no bin/.hipVersion or share/hip/version, no bin/hipconfig)"),
])  # fmt: skip
def test_a_missing_piece_is_one_line_naming_it(tmp_path: Path, piece: str, message: str) -> None:
    root = make_rocm_tree(tmp_path / "usr", "debian-sid", skip=(piece,))
    with pytest.raises(ToolchainError) as err:
        find_installed_rocm(root, "linux", what=f"--rocm-path {root}")
    assert err.value.message == message.format(root=root)
    assert "\n" not in err.value.message


def test_the_identity_follows_the_content_not_the_mtime(tmp_path: Path) -> None:
    root = make_rocm_tree(tmp_path / "a", "therock")
    first = find_installed_rocm(root, "linux", what="x").identity
    # Re-installed: same bytes, new mtimes (ccache's compiler_check=content sees the same compiler).
    for path in root.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000), follow_symlinks=False)
    assert find_installed_rocm(root, "linux", what="x").identity == first
    # The same install elsewhere is the same toolchain.
    assert find_installed_rocm(make_rocm_tree(tmp_path / "b", "therock"), "linux", what="x").identity == first
    # Another compiler build with the same HIP version, or other device libraries: another identity.
    other = make_rocm_tree(tmp_path / "c", "therock", clang=b"\x7fELF another clang build")
    assert find_installed_rocm(other, "linux", what="x").identity != first
    (root / LAYOUTS["therock"]["device_libs"] / "ockl.bc").write_bytes(b"patched")
    assert find_installed_rocm(root, "linux", what="x").identity != first
    newer = make_rocm_tree(tmp_path / "d", "therock", hip_version="7.0.2")
    assert find_installed_rocm(newer, "linux", what="x").identity.startswith("rocm-hip7.0.2-")


def test_an_empty_device_library_folder_is_refused(tmp_path: Path) -> None:
    """Before, the folder alone passed, and the build went on with no ockl.bc to link."""
    root = make_rocm_tree(tmp_path / "usr", "debian-sid")
    device_libs = root / LAYOUTS["debian-sid"]["device_libs"]
    for bitcode in device_libs.glob("*.bc"):
        bitcode.unlink()
    with pytest.raises(ToolchainError) as err:
        find_installed_rocm(root, "linux", what=f"--rocm-path {root}")
    assert err.value.message == f"--rocm-path {root}: {device_libs} holds no AMDGPU device library (*.bc)"


@pytest.mark.parametrize("version", ["9" * 5000, "1.2.3.4.5", "6.1234567890.0"])
def test_a_hip_version_that_is_not_a_version_is_refused(tmp_path: Path, version: str) -> None:
    """Before, a 5,000-digit version made a 5,063-character cache key (GitHub takes 512)."""
    root = make_rocm_tree(tmp_path / "usr", "debian-sid", hip_version=version)
    with pytest.raises(
        ToolchainError, match=r"is not a version \(up to four numbers of at most 9 digits\)"
    ) as err:
        find_installed_rocm(root, "linux", what="--rocm-path X")
    assert len(err.value.message) < 400


def test_every_cache_key_fits_githubs_limit_or_is_refused() -> None:
    from pipeline.actions_cache.cache_keys import GITHUB_KEY_MAX, cache_key, toolchain_cache_key
    from pipeline.errors import UsageError

    assert GITHUB_KEY_MAX == 512  # GitHub's documented limit for an Actions cache key
    assert len(cache_key("rocm-linux-gfx110X", "rocm-hip6.4.43483-0123456789ab", "b7000")) < 512
    # A run tag is b<digits>: nothing else bounds its length.
    with pytest.raises(UsageError, match=r"is 5[0-9]{3} characters: GitHub's cache takes at most 512"):
        cache_key("cpu", "gcc-12.2.0", "b" + "7" * 5000)
    assert len(toolchain_cache_key("rocm-linux-gfx110X", "rocm-10.1.0a20261205")) < 512
