"""The Vulkan SDK from a pinned archive, installed into the toolchain cache.

``[toolchains.vulkan.<os>]`` names the SDK archive, its sha256 and the SDK
folder inside it (LunarG's Linux tarball holds ``<version>/x86_64/{bin,include,lib}``;
the installer drops the single top folder, so ``root = "x86_64"``). The
archive goes through the one installer (download verified and cached, safe
extraction, atomic install); the leg then sees it as ``VULKAN_SDK``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.archives.extract import check_archive
from pipeline.errors import ToolchainError
from pipeline.inputs.pins import SdkPin
from pipeline.toolchain.compiler_set import Toolchain, ToolchainRequest, safe_identity
from pipeline.toolchain.host_compiler import host_toolchain
from pipeline.toolchain.installer.download import download
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set
from pipeline.toolchain.vulkan_tools import vulkan_toolchain

if TYPE_CHECKING:
    from rich.console import Console


def install_vulkan_sdk(pin: SdkPin, request: ToolchainRequest, console: Console | None = None) -> Path:
    """Install the pinned SDK archive for the leg's OS; the SDK folder (the one holding ``bin/glslc``)."""
    os_name = request.leg.os

    def fetch(ref: ArchiveRef) -> Path:
        return download(ref.label, cache_dir=request.download_cache, sha256=ref.sha256, console=console,
                        verify=check_archive, backoff_seconds=request.http_backoff,
                        retry_budget=request.http_retry_budget, wait_lock=request.wait_lock,
                        since=request.started).path

    glslc_in_sdk = Path(pin.root or ".") / "bin" / ("glslc.exe" if os_name == "windows" else "glslc")

    def check(tree: Path) -> None:
        # Before it replaces anything: an SDK without glslc is never kept as a complete install.
        if not (tree / glslc_in_sdk).is_file():
            raise ToolchainError(f"{pin.url}: the SDK has no {glslc_in_sdk.as_posix()} "
                                 f"(check [toolchains.vulkan.{os_name}].root)")

    ref = ArchiveRef(label=pin.url, sha256=pin.sha256)
    installed = install_archive_set([ref], request.toolchain_dir / f"vulkan-sdk-{pin.version}-{os_name}",
                                    fetch=fetch, check=check, wait_lock=request.wait_lock, since=request.started)
    sdk = installed.root / pin.root if pin.root else installed.root
    glslc = installed.root / glslc_in_sdk
    if not glslc.is_file():
        raise ToolchainError(f"{pin.url}: the installed SDK has no {glslc_in_sdk.as_posix()} (check [toolchains.vulkan.{os_name}].root)")
    if console is not None:
        state = "reused" if installed.reused else "installed"
        console.print(f"vulkan: {state} SDK {pin.version} at {sdk}", highlight=False)
    return sdk


def prepare_vulkan(request: ToolchainRequest, console: Console | None = None) -> Toolchain:
    """``--vulkan-sdk`` wins; else matrix.toml's pinned SDK for the leg's OS; else glslc and headers from the system."""
    leg, env = request.leg, request.environ
    pin = request.pins.vulkan.get(leg.os) if request.pins else None
    if request.vulkan_sdk is not None:
        return vulkan_toolchain(leg, {**env, "VULKAN_SDK": str(request.vulkan_sdk)})
    if pin is None:
        return vulkan_toolchain(leg, env)
    sdk = install_vulkan_sdk(pin, request, console)
    toolchain = vulkan_toolchain(leg, {**env, "VULKAN_SDK": str(sdk)})
    # The identity the cache key was computed with before the install (vulkan_identity).
    return dataclasses.replace(toolchain, identity=pinned_sdk_identity(pin, host_toolchain(env).identity))


def pinned_sdk_identity(pin: SdkPin, host_identity: str) -> str:
    """``vulkan-sdk-1.4.357.1-<sha256[:8]>-gcc-12.2.0``: the pinned SDK (its glslc and headers) and the host compiler."""
    return safe_identity(f"vulkan-sdk-{pin.version}-{pin.sha256.lower()[:8]}-{host_identity}")


def vulkan_identity(request: ToolchainRequest) -> str:
    """The leg's Vulkan identity without installing anything (``cache-key``), the one :func:`prepare_vulkan` gives.

    A pinned SDK: from its pin and the host compiler's version; ``--vulkan-sdk``
    or the system's glslc and headers: read from them, as the build does.
    """
    pin = request.pins.vulkan.get(request.leg.os) if request.pins else None
    if request.vulkan_sdk is not None or pin is None:
        return prepare_vulkan(request).identity
    return pinned_sdk_identity(pin, host_toolchain(request.environ).identity)
