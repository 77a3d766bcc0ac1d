"""A CUDA leg's identity without installing anything: what ``cache-key`` keys on and the build reports.

Pinned wheels or NVIDIA's redistributable archives (:mod:`.cuda_redist_identity`): from the pins and the host compiler's version alone
(:func:`pipeline.toolchain.cuda_layout.pinned_identity`), nothing downloaded
or written. ``--cuda-path`` or a system CUDA: that nvcc's ``--version``, as
the build reads it. This module never imports the installer (an
import-linter contract in pyproject.toml holds it): a cache key cannot
install a toolkit, whatever the order of the branches here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.errors import ToolchainError
from pipeline.names import safe_identity
from pipeline.toolchain.cuda_layout import pinned_identity
from pipeline.toolchain.cuda_msvc_cross import msvc_cross_applies, msvc_cross_identity
from pipeline.toolchain.cuda_nvcc import cuda_toolchain
from pipeline.toolchain.cuda_redist_identity import redist_cuda_identity
from pipeline.toolchain.host_compiler import host_toolchain
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

if TYPE_CHECKING:
    from pipeline.inputs.pins import CudaPins, WheelPin


def given_cuda(request: ToolchainRequest) -> Toolchain:
    """The toolkit of ``--cuda-path`` (which must be set), as it is: nothing installed."""
    root = request.cuda_path
    assert root is not None
    if not (root / "bin" / ("nvcc.exe" if request.leg.os == "windows" else "nvcc")).is_file():
        raise ToolchainError(f"--cuda-path {root}: no bin/nvcc there")
    return cuda_toolchain(request.leg, request.environ, root=root, origin="cuda-path")


def pinned_wheels(pins: CudaPins, os_name: str) -> tuple[tuple[WheelPin, str], ...]:
    """(wheel, sha256) of every pinned wheel for ``os_name``; a ToolchainError when a sha256 is missing."""
    pairs = pins.wheels_for(os_name)
    if not pairs:
        raise ToolchainError(
            f"[toolchains.cuda] pins no {os_name} sha256 for every wheel: cannot install CUDA {pins.version}"
        )
    return pairs


def pinned_cuda_identity(pins: CudaPins, request: ToolchainRequest) -> str:
    """The key-safe identity of the toolkit the pinned wheels install for the leg's OS, with the host compiler."""
    pairs = pinned_wheels(pins, request.leg.os)
    return safe_identity(
        pinned_identity(
            pins.version, [(w.requirement, sha) for w, sha in pairs], host_toolchain(request.environ).identity
        )
    )


def cuda_identity(request: ToolchainRequest) -> str:
    """The leg's CUDA identity, the one :meth:`pipeline.backends.cuda.Cuda.prepare` gives; a Windows arm64 leg on
    its Windows runner adds the MSVC toolset that cross-compiles it (offline elsewhere: the pins alone)."""
    identity = _identity(request)
    if msvc_cross_applies(request):
        return msvc_cross_identity(identity, request)
    return identity


def _identity(request: ToolchainRequest) -> str:
    if request.cuda_path is not None:
        return given_cuda(request).identity
    pins = request.pins.cuda if request.pins else None
    if pins is None:
        return cuda_toolchain(request.leg, request.environ).identity
    if pins.redist is not None:
        return redist_cuda_identity(pins, pins.redist, request)
    return pinned_cuda_identity(pins, request)
