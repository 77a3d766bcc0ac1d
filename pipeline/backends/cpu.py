"""The cpu backend: the host C/C++ compiler, nothing downloaded, nothing to carry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.base import NO_RUNTIME, RuntimeProfile

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.base import Toolchain, ToolchainRequest


class Cpu:
    name = "cpu"
    downloads_toolchain = False

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        from pipeline.toolchain.host import host_toolchain

        return host_toolchain(request.environ)

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        return self.prepare(request, console).identity

    def runtime(self, os_name: str) -> RuntimeProfile:
        return NO_RUNTIME

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        # Upstream's CPU assets carry no backend word: llama-<tag>-bin-ubuntu-x64.
        return ""


BACKEND = Cpu()
