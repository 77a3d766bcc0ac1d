"""The rocm backend: TheRock's tarball for the leg's GPU family, or an installed ROCm of either standard
layout (``--rocm-path``: TheRock's, or a distribution's ``/usr``), MSVC on Windows.

Its cache identity comes from the run's resolution alone, so every leg of a
run agrees on its key without installing anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.protocol import DataFolder, OpenedLibrary, RuntimeProfile

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.compiler_set import Toolchain, ToolchainRequest

# TheRock's layout (lib/, its LLVM and system dependencies beside it); a distribution's /usr keeps its
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
    # HIP loads its code-object compiler by name where it was built to (Debian's is).
    opened=(OpenedLibrary(owner="libamdhip64", pattern=r"libamd_comgr\.so\.[0-9]+"),),
)
_WINDOWS = RuntimeProfile(
    library_dirs=("bin", "lib/llvm/bin"),
    data_folders=(
        DataFolder(source="bin/rocblas/library", dest="rocblas/library", owner="rocblas"),
        DataFolder(source="bin/hipblaslt/library", dest="hipblaslt/library", owner="hipblaslt"),
    ),
)


class Rocm:
    name = "rocm"
    downloads_toolchain = True

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        if request.rocm is not None and request.rocm.source == "wheels":
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
