"""The identity of a CUDA toolkit from NVIDIA's redistributable archives, from its pins alone: nothing fetched, nothing installed (cache-key's; no installer import)."""

from __future__ import annotations

from pipeline.errors import ToolchainError
from pipeline.inputs.pins import CudaPins, RedistPins
from pipeline.names import safe_identity
from pipeline.toolchain.cuda_layout import pinned_identity
from pipeline.toolchain.host_compiler import host_toolchain
from pipeline.toolchain.toolchain import ToolchainRequest

# NVIDIA's platform names in the manifest, per (os, arch): an arm64 Linux runner is a server (sbsa), not a Jetson.
PLATFORMS = {
    ("linux", "x64"): "linux-x86_64",
    ("linux", "arm64"): "linux-sbsa",
    ("windows", "x64"): "windows-x86_64",
    ("windows", "arm64"): "windows-arm64",
}


def platform_of(os_name: str, arch: str) -> str:
    """The manifest's platform key for a leg (``linux-x86_64``); ToolchainError for one NVIDIA does not publish."""
    try:
        return PLATFORMS[(os_name, arch)]
    except KeyError:
        raise ToolchainError(f"NVIDIA's redistributable CUDA has no archives for {os_name}/{arch}") from None


def redist_identity(pins: CudaPins, redist: RedistPins, platform: str, host_identity: str) -> str:
    """The identity of the toolkit these pins install, before anything is downloaded.

    The manifest's sha256 fixes every archive's sha256, so each component
    line carries it: a re-pinned manifest, another component or another
    platform is another toolkit. ``platform`` is the leg's; a cross build's host
    components carry the host's (:meth:`RedistPins.platforms`).
    """
    lines = [
        (f"{redist.manifest}:{where}:{name}", redist.sha256) for name, where in redist.platforms(platform)
    ]
    return safe_identity(pinned_identity(pins.version, lines, host_identity))


def redist_cuda_identity(pins: CudaPins, redist: RedistPins, request: ToolchainRequest) -> str:
    """The leg's identity from the pins and the host compiler alone (``cache-key``: nothing fetched)."""
    platform = platform_of(request.leg.os, request.leg.arch)
    return redist_identity(pins, redist, platform, host_toolchain(request.environ).identity)
