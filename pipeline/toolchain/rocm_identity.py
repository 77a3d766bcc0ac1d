"""A ROCm leg's identity without installing anything: what ``cache-key`` keys on and the build reports.

A resolved build (tarball or wheels): the resolution's identity, the version
(a wheel build adds its wheels' digest), so every leg of a run agrees on its
key. ``--rocm-path``: the install itself says what it is. A Windows leg built
on Windows adds the MSVC toolset, which is in every object. This module never
imports the installer (an import-linter contract in pyproject.toml holds it):
a cache key cannot install TheRock, whatever the order of the branches here.
"""

from __future__ import annotations

import sys

from pipeline.errors import ToolchainError
from pipeline.toolchain.installed_rocm import existing_install
from pipeline.toolchain.msvc import capture_msvc, identity_with_msvc, with_msvc
from pipeline.toolchain.toolchain import ToolchainRequest


def msvc_applies(request: ToolchainRequest) -> bool:
    """A Windows leg built on Windows links with MSVC."""
    return request.leg.os == "windows" and sys.platform == "win32"


def rocm_cache_identity(request: ToolchainRequest) -> str:
    """The leg's ROCm identity, the one :meth:`pipeline.backends.rocm.Rocm.prepare` gives (not yet key-safe)."""
    if request.rocm is None:
        # --rocm-path: read from the given install, with MSVC as the build adds it.
        if request.rocm_path is None:
            raise ToolchainError(f"leg {request.leg.name}: no ROCm build was resolved for it")
        toolchain = existing_install(request.rocm_path, request)
        if msvc_applies(request):
            toolchain = with_msvc(toolchain, capture_msvc(request.environ), request.environ)
        return toolchain.identity
    if msvc_applies(request):
        return identity_with_msvc(request.rocm.identity, capture_msvc(request.environ))
    return request.rocm.identity
