"""The metal backend: macOS on Apple silicon, the runner's Xcode clang, Metal's shaders embedded.

Nothing is downloaded and nothing carried: Metal and its frameworks are the
base system (``/System/Library``), and ``GGML_METAL_EMBED_LIBRARY=ON`` puts
the shader library inside ``libggml-metal``. Upstream's asset has no backend
word: ``llama-<tag>-bin-macos-arm64``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.protocol import NO_RUNTIME, RuntimeProfile

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest


class Metal:
    name = "metal"
    downloads_toolchain = False

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        from pipeline.toolchain.host_compiler import host_toolchain

        return host_toolchain(request.environ)

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        return self.prepare(request, console).identity

    def runtime(self, os_name: str) -> RuntimeProfile:
        return NO_RUNTIME

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        return ""


BACKEND = Metal()
