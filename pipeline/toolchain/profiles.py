"""One profile per backend behind one small interface, picked from a table.

A profile turns a :class:`ToolchainRequest` (the leg, the run's resolved
ROCm build when it has one, where toolchains are cached, the environment)
into a :class:`~pipeline.toolchain.Toolchain`. What differs between Linux
and Windows lives inside each backend's module, never in the caller.
Adding a backend: a module under ``pipeline/toolchain/``, a profile here,
its name in :data:`pipeline.names.BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.errors import ToolchainError
from pipeline.run.matrix import Leg
from pipeline.toolchain.base import Toolchain, ToolchainRequest

if TYPE_CHECKING:
    from rich.console import Console



@dataclass(frozen=True, kw_only=True)
class BackendProfile:
    """How one backend gets its toolchain."""

    name: str
    # Whether its toolchain is downloaded (then worth an Actions cache of its own).
    downloads_toolchain: bool
    prepare: Callable[[ToolchainRequest, Console], Toolchain]


def _cpu(request: ToolchainRequest, console: Console) -> Toolchain:
    from pipeline.toolchain.host import host_toolchain

    return host_toolchain(request.environ)


def _rocm(request: ToolchainRequest, console: Console) -> Toolchain:
    from pipeline.toolchain.rocm import prepare_rocm

    return _with_msvc_on_windows(request, prepare_rocm(request, console))


def _cuda(request: ToolchainRequest, console: Console) -> Toolchain:
    """``--cuda-path``, else matrix.toml's pinned wheels, else a system CUDA."""
    import sys

    from pipeline.toolchain.cuda_wheels import prepare_cuda

    return prepare_cuda(
        request.leg, request.pins.cuda if request.pins else None, cuda_path=request.cuda_path,
        python=sys.executable, env=request.environ, root_dir=request.toolchain_dir,
        cache_dir=request.download_cache, console=console,
    )


def _vulkan(request: ToolchainRequest, console: Console) -> Toolchain:
    """``--vulkan-sdk``, else matrix.toml's pinned SDK for the leg's OS, else glslc and headers of the system."""
    from pipeline.toolchain.vulkan_sdk import prepare_vulkan

    pin = request.pins.vulkan.get(request.leg.os) if request.pins else None
    return prepare_vulkan(
        request.leg, pin, sdk_path=request.vulkan_sdk, env=request.environ,
        root_dir=request.toolchain_dir, cache_dir=request.download_cache, console=console,
    )


def _with_msvc_on_windows(request: ToolchainRequest, toolchain: Toolchain) -> Toolchain:
    """A Windows leg built on Windows links with MSVC: vcvarsall's environment, its version in the identity."""
    import sys

    if request.leg.os != "windows" or sys.platform != "win32":
        return toolchain
    from pipeline.toolchain.msvc import capture_msvc, with_msvc

    return with_msvc(toolchain, capture_msvc(request.environ), request.environ)


PROFILES: dict[str, BackendProfile] = {
    p.name: p
    for p in (
        BackendProfile(name="cpu", downloads_toolchain=False, prepare=_cpu),
        BackendProfile(name="rocm", downloads_toolchain=True, prepare=_rocm),
        BackendProfile(name="cuda", downloads_toolchain=False, prepare=_cuda),
        BackendProfile(name="vulkan", downloads_toolchain=False, prepare=_vulkan),
    )
}


def profile_of(leg: Leg) -> BackendProfile:
    try:
        return PROFILES[leg.backend]
    except KeyError:
        raise ToolchainError(f"leg {leg.name!r}: the {leg.backend} toolchain is not supported") from None


def prepare_toolchain(request: ToolchainRequest, console: Console) -> Toolchain:
    """Find (or install) the toolchain that builds ``request.leg``."""
    return profile_of(request.leg).prepare(request, console)
