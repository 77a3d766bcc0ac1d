"""Which toolchain a leg uses: one entry point per backend."""

from __future__ import annotations

from rich.console import Console

from pipeline.config import Leg, Matrix
from pipeline.errors import ToolchainError
from pipeline.options import LegOptions
from pipeline.toolchain import Toolchain
from pipeline.toolchain.host import host_toolchain


def prepare_toolchain(leg: Leg, matrix: Matrix, options: LegOptions, console: Console) -> Toolchain:
    """Find (and for ROCm, resolve and install) the toolchain that builds ``leg``."""
    if leg.backend == "cpu":
        return host_toolchain()
    if leg.backend == "rocm":
        from pipeline.toolchain.rocm import prepare_rocm

        toolchain = prepare_rocm(leg, matrix, options, console)
        return _with_msvc_on_windows(leg, toolchain)
    if leg.backend in ("cuda", "vulkan"):
        # Pinned toolchains (issue 17): installed into the toolchain cache unless a path flag names one.
        import os
        import sys

        from pipeline.rocm.install import download_cache_dir, toolchains_dir

        env, root_dir, cache_dir = os.environ, toolchains_dir(), download_cache_dir()
        if leg.backend == "cuda":
            from pipeline.toolchain.cuda_wheels import prepare_cuda

            return prepare_cuda(leg, matrix.toolchains.cuda, cuda_path=options.cuda_path, python=sys.executable,
                                env=env, root_dir=root_dir, cache_dir=cache_dir, console=console)  # fmt: skip
        from pipeline.toolchain.vulkan_sdk import prepare_vulkan

        return prepare_vulkan(leg, matrix.toolchains.vulkan.get(leg.os), sdk_path=options.vulkan_sdk,
                              env=env, root_dir=root_dir, cache_dir=cache_dir, console=console)  # fmt: skip
    raise ToolchainError(f"leg {leg.name!r}: the {leg.backend} toolchain is not supported")


def _with_msvc_on_windows(leg: Leg, toolchain: Toolchain) -> Toolchain:
    """A Windows leg on Windows links with MSVC: vcvarsall's environment, its version in the identity."""
    import os

    if leg.os != "windows" or os.name != "nt":
        return toolchain
    from pipeline.toolchain.msvc import capture_msvc, with_msvc

    return with_msvc(toolchain, capture_msvc(os.environ), os.environ)
