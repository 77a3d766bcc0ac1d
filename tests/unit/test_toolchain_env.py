"""The toolchains' environments, CMake arguments and version parsing, Linux and Windows."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from pipeline.errors import ToolchainError
from pipeline.toolchain.cuda_nvcc import cuda_cmake_args, cuda_env, parse_nvcc_version
from pipeline.toolchain.therock import (
    RocmLayout,
    derived_identity,
    find_clang_dir,
    find_device_lib_dir,
    hip_cmake_args,
    install_fingerprint,
    launcher_languages,
    rocm_env,
)
from pipeline.toolchain.vulkan_tools import parse_glslc_version, parse_header_version
from tests.support.toolchains import find_layout

TARGETS = ("gfx1100", "gfx1101", "gfx1102", "gfx1103")

LINUX = RocmLayout(
    os="linux",
    root=PurePosixPath("/opt/therock"),
    clang_dir=PurePosixPath("/opt/therock/lib/llvm/bin"),
    device_lib_dir=PurePosixPath("/opt/therock/lib/llvm/amdgcn/bitcode"),
)
WINDOWS = RocmLayout(
    os="windows",
    root=PureWindowsPath("C:/therock"),
    clang_dir=PureWindowsPath("C:/therock/lib/llvm/bin"),
    device_lib_dir=PureWindowsPath("C:/therock/lib/llvm/amdgcn/bitcode"),
)


def test_linux_env_has_every_variable_and_keeps_existing_paths() -> None:
    env = rocm_env(LINUX, {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/lib"})
    assert env == {
        "ROCM_PATH": "/opt/therock",
        "HIP_PATH": "/opt/therock",
        "HIP_PLATFORM": "amd",
        "HIP_CLANG_PATH": "/opt/therock/lib/llvm/bin",
        "HIP_DEVICE_LIB_PATH": "/opt/therock/lib/llvm/amdgcn/bitcode",
        "PATH": "/opt/therock/bin:/opt/therock/lib/llvm/bin:/usr/bin:/bin",
        "LD_LIBRARY_PATH": "/opt/therock/lib:/opt/therock/lib/llvm/lib:/usr/local/lib",
    }


def test_linux_env_without_previous_library_path() -> None:
    env = rocm_env(LINUX, {"PATH": "/bin"})
    assert env["LD_LIBRARY_PATH"] == "/opt/therock/lib:/opt/therock/lib/llvm/lib"


def test_windows_env_is_hip_path_and_path_only() -> None:
    env = rocm_env(WINDOWS, {"PATH": r"C:\Windows\system32;C:\Windows"})
    assert env == {
        "HIP_PATH": r"C:\therock",
        "PATH": r"C:\therock\bin;C:\therock\lib\llvm\bin;C:\Windows\system32;C:\Windows",
    }


def test_linux_hip_configure() -> None:
    assert hip_cmake_args(LINUX, TARGETS) == (
        "-DCMAKE_C_COMPILER=/opt/therock/lib/llvm/bin/clang",
        "-DCMAKE_CXX_COMPILER=/opt/therock/lib/llvm/bin/clang++",
        "-DCMAKE_HIP_COMPILER=/opt/therock/lib/llvm/bin/clang++",
        "-DCMAKE_PREFIX_PATH=/opt/therock",
        "-DGPU_TARGETS=gfx1100;gfx1101;gfx1102;gfx1103",
    )
    assert launcher_languages("linux") == ("HIP",)


def test_windows_hip_configure_uses_clang_exe_and_no_hip_language() -> None:
    args = hip_cmake_args(WINDOWS, ("gfx1151",))
    assert args == (
        "-DCMAKE_C_COMPILER=C:/therock/lib/llvm/bin/clang.exe",
        "-DCMAKE_CXX_COMPILER=C:/therock/lib/llvm/bin/clang++.exe",
        "-DCMAKE_PREFIX_PATH=C:/therock",
        "-DGPU_TARGETS=gfx1151",
    )
    assert not any("HIP_COMPILER" in a for a in args)
    assert launcher_languages("windows") == ()


def test_derived_identity_is_stable_and_depends_on_the_binary() -> None:
    a = derived_identity("15.0.6", "ab" * 32)
    assert a == derived_identity("15.0.6", "ab" * 32) == "rocm-clang15.0.6-abababababab"
    assert derived_identity("15.0.6", "cd" * 32) != a


def test_fingerprint_covers_clang_and_device_libs(tmp_path: Path) -> None:
    clang = tmp_path / "lib/llvm/bin/clang"
    libs = tmp_path / "lib/llvm/amdgcn/bitcode"
    libs.mkdir(parents=True)
    clang.parent.mkdir(parents=True)
    clang.write_bytes(b"clang build 1")
    (libs / "ocml.bc").write_bytes(b"ocml 1")
    base = install_fingerprint(clang, libs)
    assert install_fingerprint(clang, libs) == base
    (libs / "ocml.bc").write_bytes(b"ocml 2")
    changed_lib = install_fingerprint(clang, libs)
    assert changed_lib != base
    clang.write_bytes(b"clang build 2")
    assert install_fingerprint(clang, libs) not in (base, changed_lib)
    assert install_fingerprint(clang, None) != install_fingerprint(clang, libs)


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


@pytest.mark.parametrize("rel", ["llvm/bin", "lib/llvm/bin"])
def test_clang_found_in_therock_layouts(tmp_path: Path, rel: str) -> None:
    _touch(tmp_path / rel / "clang")
    assert find_clang_dir(tmp_path, "linux") == tmp_path / rel


def test_windows_clang_is_clang_exe(tmp_path: Path) -> None:
    _touch(tmp_path / "lib/llvm/bin/clang")
    with pytest.raises(ToolchainError, match=r"no clang\.exe under llvm/bin or lib/llvm/bin"):
        find_clang_dir(tmp_path, "windows")
    _touch(tmp_path / "lib/llvm/bin/clang.exe")
    assert find_clang_dir(tmp_path, "windows") == tmp_path / "lib/llvm/bin"


def test_debian_layout_takes_newest_llvm(tmp_path: Path) -> None:
    for version in ("9", "14", "15"):
        _touch(tmp_path / f"lib/llvm-{version}/bin/clang")
    (tmp_path / "lib/x86_64-linux-gnu/amdgcn/bitcode").mkdir(parents=True)
    layout = find_layout(tmp_path, "linux")
    assert layout.clang_dir == PurePosixPath(tmp_path / "lib/llvm-15/bin")
    assert layout.device_lib_dir == PurePosixPath(tmp_path / "lib/x86_64-linux-gnu/amdgcn/bitcode")


def test_therock_device_libs_preferred(tmp_path: Path) -> None:
    _touch(tmp_path / "lib/llvm/bin/clang")
    (tmp_path / "lib/llvm/amdgcn/bitcode").mkdir(parents=True)
    (tmp_path / "amdgcn/bitcode").mkdir(parents=True)
    assert find_device_lib_dir(tmp_path, tmp_path / "lib/llvm/bin") == tmp_path / "lib/llvm/amdgcn/bitcode"


def test_missing_device_libs_default_to_therock_place(tmp_path: Path) -> None:
    _touch(tmp_path / "lib/llvm/bin/clang")
    assert find_layout(tmp_path, "linux").device_lib_dir == PurePosixPath(
        tmp_path / "lib/llvm/amdgcn/bitcode"
    )


def test_not_a_rocm_install(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="is this a ROCm install"):
        find_layout(tmp_path, "linux")
    with pytest.raises(ToolchainError, match="no such directory"):
        find_layout(tmp_path / "absent", "linux")


# --------------------------------------------------------------------------
# CUDA


NVCC_13 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""


def test_nvcc_version() -> None:
    assert parse_nvcc_version(NVCC_13) == "13.0.88"
    assert parse_nvcc_version("Cuda compilation tools, release 11.8") == "11.8"
    with pytest.raises(ToolchainError, match="cannot read the CUDA version"):
        parse_nvcc_version("command not found")


def test_cuda_configure() -> None:
    args = cuda_cmake_args(Path("/usr/local/cuda/bin/nvcc"), Path("/usr/bin/g++"), ("75", "80", "120"))
    assert args == (
        "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc",
        "-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++",
        "-DCMAKE_CUDA_ARCHITECTURES=75;80;120",
    )
    assert not any("ARCHITECTURES" in a for a in cuda_cmake_args(Path("nvcc"), Path("g++"), ()))


def test_cuda_env_prepends_bin() -> None:
    env = cuda_env(Path("/usr/local/cuda-13.0"), {"PATH": "/usr/bin"})
    assert env == {"CUDA_PATH": "/usr/local/cuda-13.0", "PATH": "/usr/local/cuda-13.0/bin:/usr/bin"}


# --------------------------------------------------------------------------
# Vulkan


def test_glslc_version() -> None:
    debian = "shaderc 2023.2-1\nspirv-tools 2022.4+1.3.236.0-1\nglslang 11.13.0-1\n\nTarget: SPIR-V 1.0\n"
    sdk = "shaderc v2024.1 v2024.1\nspirv-tools v2024.1 v2022.4-406-g0cfe9e72\n"
    assert parse_glslc_version(debian) == "2023.2-1"
    assert parse_glslc_version(sdk) == "2024.1"
    with pytest.raises(ToolchainError):
        parse_glslc_version("glslc: error")


def test_vulkan_header_version() -> None:
    text = (
        "// Version of this file\n#define VK_HEADER_VERSION 239\n\n"
        "// Complete version of this file\n"
        "#define VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION(0, 1, 3, VK_HEADER_VERSION)\n"
    )
    assert parse_header_version(text) == "1.3.239"
    old = "#define VK_HEADER_VERSION 131\n#define VK_HEADER_VERSION_COMPLETE VK_MAKE_VERSION(1, 2, VK_HEADER_VERSION)\n"
    assert parse_header_version(old) == "1.2.131"
    with pytest.raises(ToolchainError, match="VK_HEADER_VERSION"):
        parse_header_version("/* nothing */")
