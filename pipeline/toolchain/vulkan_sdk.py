"""The Vulkan SDK from a pinned archive, installed into the toolchain cache.

``[toolchains.vulkan.<os>]`` names the SDK archive, its sha256 and the SDK
folder inside it (LunarG's Linux tarball holds ``<version>/x86_64/{bin,include,lib}``;
the installer drops the single top folder, so ``root = "x86_64"``). The
archive goes through the one installer (download verified and cached, safe
extraction, atomic install); the leg then sees it as ``VULKAN_SDK``. The
identity comes from :mod:`pipeline.toolchain.vulkan_identity`, which computes
it without this module.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.archives.extract import check_archive
from pipeline.errors import ToolchainError
from pipeline.inputs.pins import SdkPin
from pipeline.toolchain.host_compiler import host_toolchain
from pipeline.toolchain.installer.download import download
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest
from pipeline.toolchain.vulkan_identity import pinned_sdk_identity, sdk_pin, uninstalled_vulkan
from pipeline.toolchain.vulkan_tools import vulkan_toolchain

if TYPE_CHECKING:
    from rich.console import Console


def install_vulkan_sdk(pin: SdkPin, request: ToolchainRequest, console: Console | None = None) -> Path:
    """Install the pinned SDK archive for the leg's OS; the SDK folder (the one holding ``bin/glslc``)."""
    os_name = request.leg.os

    def fetch(ref: ArchiveRef) -> Path:
        return download(
            ref.label,
            download_cache=request.download_cache,
            sha256=ref.sha256,
            console=console,
            verify=check_archive,
            retry=request.retry,
            wait_lock=request.wait_lock,
            since=request.started,
        ).path

    glslc_in_sdk = Path(pin.root or ".") / "bin" / ("glslc.exe" if os_name == "windows" else "glslc")

    def check(tree: Path) -> None:
        # Before it replaces anything: an SDK without glslc is never kept as a complete install.
        if not (tree / glslc_in_sdk).is_file():
            raise ToolchainError(
                f"{pin.url}: the SDK has no {glslc_in_sdk.as_posix()} "
                f"(check [toolchains.vulkan.{os_name}].root)"
            )

    ref = ArchiveRef(label=pin.url, sha256=pin.sha256)
    installed = install_archive_set(
        [ref],
        request.toolchain_dir / f"vulkan-sdk-{pin.version}-{os_name}",
        fetch=fetch,
        check=check,
        wait_lock=request.wait_lock,
        since=request.started,
    )
    sdk = installed.root / pin.root if pin.root else installed.root
    glslc = installed.root / glslc_in_sdk
    if not glslc.is_file():
        raise ToolchainError(
            f"{pin.url}: the installed SDK has no {glslc_in_sdk.as_posix()} (check [toolchains.vulkan.{os_name}].root)"
        )
    if console is not None:
        state = "reused" if installed.reused else "installed"
        console.print(f"vulkan: {state} SDK {pin.version} at {sdk}", highlight=False)
    return sdk


def prepare_vulkan(request: ToolchainRequest, console: Console | None = None) -> Toolchain:
    """``--vulkan-sdk`` wins; else matrix.toml's pinned SDK for the leg's OS; else glslc and headers from the system."""
    pin = sdk_pin(request)
    if request.vulkan_sdk is not None or pin is None:
        return uninstalled_vulkan(request)
    sdk = install_vulkan_sdk(pin, request, console)
    env = request.environ
    toolchain = vulkan_toolchain(request.leg, {**env, "VULKAN_SDK": str(sdk)})
    # The identity the cache key was computed with before the install (vulkan_identity).
    return dataclasses.replace(toolchain, identity=pinned_sdk_identity(pin, host_toolchain(env).identity))
