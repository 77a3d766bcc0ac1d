"""The cuda backend: ``--cuda-path``, else matrix.toml's pins (NVIDIA's wheels, or its
redistributable archives for a line pinned by its ``redist`` manifest), else a system CUDA.

Its cache identity comes from the pins and the host compiler alone, so a
cache key installs nothing (the wheels or archives are fetched by the build).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.protocol import RuntimeProfile

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

_LINUX = RuntimeProfile(library_dirs=("lib64", "lib", "targets/x86_64-linux/lib"))
# An arm64 bundle's DLLs come from bin/arm64 alone: a cross toolkit's bin/ holds the x64 compiler's.
_WINDOWS = RuntimeProfile(library_dirs=("bin", "bin/x64"), arch_library_dirs=(("arm64", ("bin/arm64",)),))


class Cuda:
    name = "cuda"
    downloads_toolchain = True

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        from pipeline.toolchain.cuda_msvc_cross import msvc_cross_applies, msvc_cross_toolchain

        toolchain = self._prepare(request, console)
        # Windows arm64 on the x64 runner: MSVC's amd64_arm64 compiler for nvcc's host side and the C/C++ units.
        return msvc_cross_toolchain(toolchain, request) if msvc_cross_applies(request) else toolchain

    def _prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        import sys

        pins = request.pins.cuda if request.pins else None
        if request.cuda_path is None and pins is not None and pins.redist is not None:
            from pipeline.toolchain.cuda_redist import prepare_cuda_redist

            return prepare_cuda_redist(pins, pins.redist, request, console)
        from pipeline.toolchain.cuda_wheels import prepare_cuda

        return prepare_cuda(request, console, python=sys.executable)

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        # From the pins (or the given nvcc): a cache key never installs the toolkit.
        from pipeline.toolchain.cuda_identity import cuda_identity

        return cuda_identity(request)

    def runtime(self, os_name: str) -> RuntimeProfile:
        return _WINDOWS if os_name == "windows" else _LINUX

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        return "-cuda"


BACKEND = Cuda()
