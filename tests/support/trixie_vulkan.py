"""Trixie's Vulkan 1.4 headers and loader as an SDK-shaped folder in the test cache (see scripts/trixie_vulkan.py).

Made among the scripts, because the GPU check carries the same SDK and a script never imports the
tests; the tests take it from here, kept in their cache root.
"""

from __future__ import annotations

from pathlib import Path

from scripts.trixie_vulkan import VERSION, SdkUnavailable, debian_mirror
from scripts.trixie_vulkan import trixie_vulkan_sdk as _sdk_in
from tests.support.cache_root import e2e_cache_root

__all__ = ["VERSION", "SdkUnavailable", "debian_mirror", "trixie_vulkan_sdk"]


def trixie_vulkan_sdk(cache_root: Path | None = None) -> Path:
    """The SDK folder in ``cache_root`` (default: the tests' cache root), made once."""
    return _sdk_in(cache_root or e2e_cache_root())
