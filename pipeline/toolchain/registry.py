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

        return prepare_rocm(leg, matrix, options, console)
    if leg.backend == "cuda":
        from pipeline.toolchain.cuda import cuda_toolchain

        return cuda_toolchain(leg)
    if leg.backend == "vulkan":
        from pipeline.toolchain.vulkan import vulkan_toolchain

        return vulkan_toolchain(leg)
    raise ToolchainError(f"leg {leg.name!r}: the {leg.backend} toolchain is not supported")
