"""The cpu backend: the host C/C++ compiler (a cross compiler for another arch), nothing downloaded, nothing to carry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.backends.protocol import NO_RUNTIME, RuntimeProfile

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest


class Cpu:
    name = "cpu"
    downloads_toolchain = False

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        return self._toolchain(request, write=True)

    def _toolchain(self, request: ToolchainRequest, *, write: bool) -> Toolchain:
        from pipeline.toolchain.cross import cross_target, cross_toolchain
        from pipeline.toolchain.host_compiler import host_toolchain
        from pipeline.util.this_machine import host_arch, host_os

        # A Linux arm64 leg on an x86-64 machine: Debian's aarch64 GCC through a toolchain file.
        target = cross_target(request.leg, host_os=host_os(), host=host_arch())
        if target is not None:
            return cross_toolchain(target, request.environ, request.toolchain_dir, write=write)
        return host_toolchain(request.environ)

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        # Nothing written: a key is computed where nothing is built (the workflow's "Cache keys" step).
        return self._toolchain(request, write=False).identity

    def runtime(self, os_name: str) -> RuntimeProfile:
        return NO_RUNTIME

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        # Upstream's CPU assets carry no backend word on Linux and macOS (llama-<tag>-bin-ubuntu-x64,
        # llama-<tag>-bin-macos-x64), and "cpu" on Windows (llama-<tag>-bin-win-cpu-arm64).
        return "-cpu" if os_name == "windows" else ""


BACKEND = Cpu()
