"""The Vulkan toolchain: the host compiler, glslc and the Vulkan headers.

llama.cpp compiles its compute shaders with glslc and embeds the SPIR-V in
C++ objects, so glslc's version and the headers' version change what the
cache holds: both go into the identity.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.inputs.leg import Leg
from pipeline.names import safe_identity
from pipeline.toolchain.host_compiler import host_toolchain
from pipeline.toolchain.toolchain import Toolchain, version_output

HEADER_DIRS = (Path("/usr/include"), Path("/usr/local/include"))
_SHADERC = re.compile(r"shaderc\s+v?(\S+)")
_HEADER_VERSION = re.compile(r"^#define\s+VK_HEADER_VERSION\s+(\d+)\s*$", re.MULTILINE)
_HEADER_COMPLETE = re.compile(
    r"^#define\s+VK_HEADER_VERSION_COMPLETE\s+VK_MAKE_(?:API_)?VERSION\(\s*(?:\d+\s*,\s*)?(\d+)\s*,\s*(\d+)\s*,",
    re.MULTILINE,
)


def find_glslc(env: Mapping[str, str]) -> Path:
    """``$VULKAN_SDK/bin/glslc``, else glslc on PATH."""
    name = "glslc.exe" if os.name == "nt" else "glslc"
    if sdk := env.get("VULKAN_SDK"):
        candidate = Path(sdk) / "bin" / name
        if candidate.is_file():
            return candidate
    found = shutil.which(name, path=env.get("PATH"))
    if found:
        return Path(found)
    raise ToolchainError("glslc not found: set VULKAN_SDK or install glslc (Debian: glslc)")


def parse_glslc_version(text: str) -> str:
    """``glslc --version`` -> shaderc's version, e.g. "2023.2-1"."""
    match = _SHADERC.search(text)
    if match is None:
        raise ToolchainError(f"cannot read glslc's version from: {text.strip()[:120]!r}")
    return match.group(1)


def glslc_version(glslc: Path) -> str:
    return parse_glslc_version(version_output(glslc))


def find_vulkan_header(env: Mapping[str, str]) -> Path:
    """``vulkan/vulkan_core.h`` under ``$VULKAN_SDK/include``, else the system include folders."""
    roots = [Path(sdk) / "include" for sdk in [env.get("VULKAN_SDK")] if sdk] + list(HEADER_DIRS)
    for root in roots:
        candidate = root / "vulkan" / "vulkan_core.h"
        if candidate.is_file():
            return candidate
    raise ToolchainError(
        "Vulkan headers not found (vulkan/vulkan_core.h): set VULKAN_SDK or install libvulkan-dev"
    )


def parse_header_version(text: str) -> str:
    """vulkan_core.h -> "1.3.239" (VK_HEADER_VERSION_COMPLETE's major.minor + VK_HEADER_VERSION)."""
    patch = _HEADER_VERSION.search(text)
    if patch is None:
        raise ToolchainError("vulkan_core.h has no '#define VK_HEADER_VERSION <n>'")
    complete = _HEADER_COMPLETE.search(text)
    if complete is None:
        return patch.group(1)
    return f"{complete.group(1)}.{complete.group(2)}.{patch.group(1)}"


def vulkan_toolchain(leg: Leg, environ: Mapping[str, str]) -> Toolchain:
    """The host compiler plus glslc and the Vulkan headers, all three in the identity."""
    env = environ
    host = host_toolchain(environ)
    glslc = find_glslc(env)
    shaderc = glslc_version(glslc)
    header = find_vulkan_header(env)
    try:
        headers = parse_header_version(header.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise ToolchainError(f"{header}: cannot read: {exc.strerror}") from None
    include_dir = header.parent.parent
    extra_env = {"VULKAN_SDK": env["VULKAN_SDK"]} if env.get("VULKAN_SDK") else {}
    return Toolchain(
        kind="vulkan",
        identity=safe_identity(f"vulkan-{headers}-glslc-{shaderc}-{host.identity}"),
        compilers={**host.compilers, "GLSL": f"glslc {shaderc} ({glslc})"},
        details={
            "vulkan_headers": headers,
            "glslc": shaderc,
            "include_dir": str(include_dir),
            "host_compiler": host.identity,
        },
        env=extra_env,
        cmake_args=(
            *host.cmake_args,
            f"-DVulkan_GLSLC_EXECUTABLE={glslc.as_posix()}",
            f"-DVulkan_INCLUDE_DIR={include_dir.as_posix()}",
        ),
    )
