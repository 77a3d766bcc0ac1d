"""A Vulkan leg's identity without installing anything: what ``cache-key`` keys on and the build reports.

A pinned SDK: from its pin and the host compiler's version; ``--vulkan-sdk``
or the system's glslc and headers: read from them, as the build does. This
module never imports the installer (an import-linter contract in
pyproject.toml holds it): a cache key cannot install the SDK, whatever the
order of the branches here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.names import safe_identity
from pipeline.toolchain.host_compiler import host_toolchain
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest
from pipeline.toolchain.vulkan_tools import vulkan_toolchain

if TYPE_CHECKING:
    from pipeline.inputs.pins import SdkPin


def sdk_pin(request: ToolchainRequest) -> SdkPin | None:
    """matrix.toml's pinned SDK for the leg's OS; None when it pins none."""
    return request.pins.vulkan.get(request.leg.os) if request.pins else None


def uninstalled_vulkan(request: ToolchainRequest) -> Toolchain:
    """The toolchain of ``--vulkan-sdk`` (when given) or of the system's glslc and headers: nothing installed."""
    env = request.environ
    if request.vulkan_sdk is not None:
        return vulkan_toolchain(request.leg, {**env, "VULKAN_SDK": str(request.vulkan_sdk)})
    return vulkan_toolchain(request.leg, env)


def pinned_sdk_identity(pin: SdkPin, host_identity: str) -> str:
    """``vulkan-sdk-1.4.357.1-<sha256[:8]>-gcc-12.2.0``: the pinned SDK (its glslc and headers) and the host compiler."""
    return safe_identity(f"vulkan-sdk-{pin.version}-{pin.sha256.lower()[:8]}-{host_identity}")


def vulkan_identity(request: ToolchainRequest) -> str:
    """The leg's Vulkan identity, the one :func:`pipeline.toolchain.vulkan_sdk.prepare_vulkan` gives."""
    pin = sdk_pin(request)
    if request.vulkan_sdk is not None or pin is None:
        return uninstalled_vulkan(request).identity
    return pinned_sdk_identity(pin, host_toolchain(request.environ).identity)
