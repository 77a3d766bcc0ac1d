"""The vulkan backend: ``--vulkan-sdk``, else matrix.toml's pinned SDK for the leg's OS, else the system's.

Its runtime is the Vulkan loader, which comes with the GPU driver (the base
system): a bundle carries nothing from the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.protocol import NO_RUNTIME, RuntimeProfile

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest


class Vulkan:
    name = "vulkan"
    downloads_toolchain = True

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        from pipeline.toolchain.vulkan_sdk import prepare_vulkan

        return prepare_vulkan(request, console)

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        # From the pin (or the given SDK / the system's tools): a cache key never installs the SDK.
        from pipeline.toolchain.vulkan_identity import vulkan_identity

        return vulkan_identity(request)

    def runtime(self, os_name: str) -> RuntimeProfile:
        return NO_RUNTIME

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        return "-vulkan"


BACKEND = Vulkan()
