"""What a llama.cpp tree requires of a GPU toolchain, read from the tree where it states it.

Pure: file texts in, requirements out (:mod:`pipeline.leg.preflight` reads
the files and compares). The tree is the authority, not a number written
here: a newer llama.cpp that raises its HIP floor raises the check with it.

- HIP: ``ggml/src/ggml-hip/CMakeLists.txt`` ends configure with
  ``if (${hip_VERSION} VERSION_LESS 6.1) message(FATAL_ERROR ...)``, after
  ``find_package(hip)``; :func:`hip_minimum` reads that version.
- Vulkan: ``ggml/src/ggml-vulkan/ggml-vulkan.cpp`` uses vulkan.hpp types
  that only headers with a given extension declare (``vk::LayerSettingEXT``:
  ``VK_EXT_layer_settings``); :func:`vulkan_extensions_used` says which of
  :data:`VULKAN_EXTENSIONS` it uses. Code the tree guards with ``#if
  VK_HEADER_VERSION >= N`` is optional and not a requirement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Where the tree states what it needs, relative to its root.
HIP_CMAKELISTS = "ggml/src/ggml-hip/CMakeLists.txt"
VULKAN_SOURCE = "ggml/src/ggml-vulkan/ggml-vulkan.cpp"

_HIP_FLOOR = re.compile(
    r"if\s*\(\s*(?:\$\{hip_VERSION\}|hip_VERSION)\s+VERSION_LESS\s+\"?(\d+(?:\.\d+)*)\"?\s*\)", re.I
)
_VERSION_PARTS = re.compile(r"\d+")


@dataclass(frozen=True, kw_only=True)
class Requirement:
    """A minimum version the tree states, and where (``file:line``)."""

    minimum: str
    where: str


@dataclass(frozen=True, kw_only=True)
class VulkanExtension:
    """A Vulkan extension whose declarations the headers must carry, the first Vulkan-Headers release with
    it, and the vulkan.hpp names that show a source uses it."""

    name: str
    first_header: int
    uses: tuple[str, ...]


# The extensions a tree may use unconditionally; the header version is for the message only (the check
# reads the extension's own #define in vulkan_core.h). VK_EXT_layer_settings entered the public
# headers in 1.3.272.
VULKAN_EXTENSIONS: tuple[VulkanExtension, ...] = (
    VulkanExtension(
        name="VK_EXT_layer_settings",
        first_header=272,
        uses=("vk::LayerSettingEXT", "vk::LayerSettingsCreateInfoEXT", "vk::LayerSettingTypeEXT"),
    ),
)


def cmake_version_numbers(text: str) -> tuple[int, ...]:
    """``"5.2.21153-0"`` -> ``(5, 2, 21153, 0)``: every number, in order, as CMake's VERSION_LESS reads a
    version it was given (looser than :func:`pipeline.names.dotted_version`, on purpose: a HIP version
    carries a build suffix)."""
    return tuple(int(part) for part in _VERSION_PARTS.findall(text))


def version_less(left: str, right: str) -> bool:
    """CMake's ``VERSION_LESS``: component by component, a missing component counting as 0."""
    a, b = cmake_version_numbers(left), cmake_version_numbers(right)
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)) < b + (0,) * (width - len(b))


def hip_minimum(text: str, where: str = HIP_CMAKELISTS) -> Requirement | None:
    """The HIP version ``ggml-hip``'s CMakeLists.txt refuses to go below, or None when it states none."""
    for line_no, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        if match := _HIP_FLOOR.search(line):
            return Requirement(minimum=match.group(1), where=f"{where}:{line_no}")
    return None


def _without_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def _unguarded(source: str) -> str:
    """``source`` without the blocks under ``#if VK_HEADER_VERSION >= N`` (optional with older headers)."""
    out: list[str] = []
    depth = 0  # nesting inside a guarded block (0: outside)
    for line in source.splitlines():
        stripped = line.strip()
        if depth:
            if stripped.startswith("#if"):
                depth += 1
            elif stripped.startswith("#endif"):
                depth -= 1
            elif stripped.startswith(("#else", "#elif")) and depth == 1:
                # The other branch is what older headers compile.
                depth = 0
            continue
        if re.match(r"#\s*if\s+VK_HEADER_VERSION\s*>=", stripped):
            depth = 1
            continue
        out.append(line)
    return "\n".join(out)


def vulkan_extensions_used(source: str) -> list[VulkanExtension]:
    """The :data:`VULKAN_EXTENSIONS` whose vulkan.hpp names ``source`` uses outside header-version guards."""
    code = _unguarded(_without_comments(source))
    return [ext for ext in VULKAN_EXTENSIONS if any(name in code for name in ext.uses)]
