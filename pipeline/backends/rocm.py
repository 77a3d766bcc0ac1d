"""The rocm backend: TheRock's tarball for the leg's GPU family, or an installed ROCm of either standard
layout (``--rocm-path``: TheRock's, or a Linux distribution's ``/usr``), MSVC on Windows.

Its cache identity comes from the run's resolution alone, so every leg of a
run agrees on its key without installing anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.protocol import DataFolder, OpenedLibrary, RuntimeProfile

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from pipeline.toolchain.installed_rocm import InstalledRocm
    from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

# What a ROCm bundle needs that no import of its files names, or that the toolchain does not hold: data with
# its evidence, the same for every toolchain origin (TheRock's tarball and wheels, a Linux distribution's
# /usr), each entry applying where its owner ships and asks for the name (pipeline/backends/protocol.py,
# OpenedLibrary).
_LINUX_OPENED = (
    # HIP loads its code-object compiler by name at run time, TheRock's and Debian's alike.
    OpenedLibrary(
        owner="libamdhip64",
        pattern=r"libamd_comgr\.so\.[0-9]+",
        evidence="ROCm/rocm-systems projects/clr/rocclr/device/comgrctx.cpp at 16cec59a639f (Comgr::LoadLib "
        "opens libamd_comgr.so.<N> by name); Debian's libamdhip64 has no DT_NEEDED on it",
    ),
    # hipBLASLt's TensileLite host code, a library of its own in TheRock's nightlies since 2026-09, and the LLVM
    # OpenMP runtime it loads, by its unversioned name, from lib/llvm/lib.
    OpenedLibrary(
        owner="libtensilelite-host",
        pattern=r"libomp\.so(?![.0-9])",
        evidence="ROCm/TheRock build_tools/github_actions/test_executable_scripts/pytest_runner.py at "
        "89553ce3746e (TensileLite links libomp.so from lib/llvm/lib); the reference release "
        "(unslothai/llama.cpp 9c124eab, as the survey read it) ships libomp.so beside "
        "libtensilelite-host; lemonade-sdk/llamacpp-rocm #146 (libtensilelite-host missing)",
    ),
    # TheRock's private libnuma needs GCC's libatomic, which its tarball does not carry and a clean machine
    # may lack: copied from the build machine (Ubuntu's libatomic1, its copyright with it).
    OpenedLibrary(
        owner="librocm_sysdeps_numa",
        pattern=r"libatomic\.so\.1",
        from_system=True,
        evidence="unslothai/llama.cpp .github/workflows/unsloth-prebuilt-rocm.yml at d32676d7 "
        "(libhsa-runtime64 -> librocm_sysdeps_numa -> libatomic.so.1; lemonade-sdk/lemonade#1349)",
    ),
)
_WINDOWS_OPENED = (
    # amdhip64 loads comgr with LoadLibrary, under the name TheRock's build gives it (amd_comgr0713.dll, ...):
    # not in its import table, so a zip without it lists no GPU.
    OpenedLibrary(
        owner="amdhip64",
        pattern=r"amd_comgr[0-9A-Za-z_]*\.dll",
        evidence="ROCm/rocm-systems projects/clr/rocclr/device/comgrctx.cpp at 16cec59a639f; ROCm/TheRock "
        "core/CMakeLists.txt at 89553ce3746e (THEROCK_COMGR_DLL_NAME, the DLL CLR loads)",
    ),
)

# TheRock's layout (lib/, its LLVM and system dependencies beside it); a Linux distribution's /usr keeps its
# libraries in the multiarch folder, which the closure searches for every backend, and rocBLAS's kernels
# in lib/<triplet>/rocblas/<version>/library, where its librocblas looks, relative to itself: the bundle
# keeps that relative place.
_LINUX = RuntimeProfile(
    library_dirs=("lib", "lib/llvm/lib", "lib/rocm_sysdeps/lib", "lib64"),
    data_folders=(
        DataFolder(source="lib/rocblas/library", dest="rocblas/library", owner="librocblas"),
        DataFolder(source="lib/hipblaslt/library", dest="hipblaslt/library", owner="libhipblaslt"),
        DataFolder(source="lib/x86_64-linux-gnu/rocblas", dest="rocblas", owner="librocblas"),
        DataFolder(source="lib/x86_64-linux-gnu/hipblaslt", dest="hipblaslt", owner="libhipblaslt"),
    ),
    opened=_LINUX_OPENED,
)
_WINDOWS = RuntimeProfile(
    library_dirs=("bin", "lib/llvm/bin"),
    opened=_WINDOWS_OPENED,
    data_folders=(
        DataFolder(source="bin/rocblas/library", dest="rocblas/library", owner="rocblas"),
        DataFolder(source="bin/hipblaslt/library", dest="hipblaslt/library", owner="hipblaslt"),
    ),
)


class Rocm:
    name = "rocm"
    downloads_toolchain = True

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        if request.rocm is not None and request.rocm.distribution == "wheels":
            from pipeline.toolchain.therock_wheels import prepare_rocm_wheels

            toolchain = prepare_rocm_wheels(request, console)
        elif request.rocm_path is not None:
            from pipeline.toolchain.installed_rocm import existing_install

            toolchain = existing_install(request.rocm_path, request)
        else:
            from pipeline.toolchain.therock_tarball import prepare_rocm

            toolchain = prepare_rocm(request, console)
        from pipeline.toolchain.rocm_identity import msvc_applies

        if not msvc_applies(request):
            return toolchain
        from pipeline.toolchain.msvc import capture_msvc, with_msvc

        # vcvarsall's environment beneath the toolchain's, its version in the identity.
        return with_msvc(toolchain, capture_msvc(request.environ), request.environ)

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        # From the resolution (or the given --rocm-path): a cache key never installs TheRock.
        from pipeline.toolchain.rocm_identity import rocm_cache_identity

        return rocm_cache_identity(request)

    def runtime(self, os_name: str) -> RuntimeProfile:
        return _WINDOWS if os_name == "windows" else _LINUX

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        # Upstream's Windows ROCm assets say "hip"; the family keeps one bundle per GPU family apart.
        word = "hip" if os_name == "windows" else "rocm"
        return f"-{word}-{family}" if family else f"-{word}"


BACKEND = Rocm()


def installed_rocm(root: Path, os_name: str, *, what: str) -> InstalledRocm:
    """The pieces of the ROCm installed at ``root`` as a ``--rocm-path`` build finds them (clang, the device
    libraries, HIP and its version, the identity), for the GPU check to show before it builds
    (scripts/gpu_check/check.py); ToolchainError, ``what`` first, naming a missing one."""
    from pipeline.toolchain.installed_rocm import find_installed_rocm

    return find_installed_rocm(root, os_name, what=what)
