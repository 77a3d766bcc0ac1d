"""What the tree requires of a GPU toolchain, and what an install says of itself: the pure readers."""

from __future__ import annotations

import pytest

from pipeline.source.requirements import (
    cmake_version_numbers,
    hip_minimum,
    version_less,
    vulkan_extensions_used,
)
from pipeline.toolchain.gpu_versions import (
    header_declares,
    parse_hip_version_file,
    parse_hipconfig_version,
    parse_package_version,
)

# ggml/src/ggml-hip/CMakeLists.txt of llama.cpp 0c1e570, lines 46-56 (its line 54 states the floor).
GGML_HIP_EXCERPT = """\
find_package(hip     REQUIRED)
find_package(hipblas REQUIRED)
find_package(rocblas REQUIRED)

if (GGML_HIP_RCCL)
    find_package(rccl REQUIRED)
endif()

if (${hip_VERSION} VERSION_LESS 6.1)
    message(FATAL_ERROR "At least ROCM/HIP V6.1 is required")
endif()
"""


def test_the_hip_floor_and_where_the_tree_states_it() -> None:
    found = hip_minimum(GGML_HIP_EXCERPT, "ggml/src/ggml-hip/CMakeLists.txt")
    assert found is not None and (found.minimum, found.where) == ("6.1", "ggml/src/ggml-hip/CMakeLists.txt:9")
    assert hip_minimum("# if (${hip_VERSION} VERSION_LESS 9.0)\nfind_package(hip)\n") is None
    assert hip_minimum('if(hip_VERSION VERSION_LESS "7.0")\n') is not None


@pytest.mark.parametrize(
    ("left", "right", "less"),
    [
        ("5.2.0", "6.1", True),
        ("6.1", "6.1", False),
        ("6.1.40091", "6.1", False),
        ("10.0.0", "6.1", False),
        ("5.2.21153", "6.1", True),
        ("6", "6.0.1", True),
    ],
)
def test_version_less_is_cmakes(left: str, right: str, less: bool) -> None:
    assert version_less(left, right) is less


def test_version_tuple() -> None:
    assert cmake_version_numbers("5.2.21153-0") == (5, 2, 21153, 0)


def test_install_version_files() -> None:
    # Debian 12's /usr/lib/x86_64-linux-gnu/cmake/hip/hip-config-version.cmake (its version line).
    assert (
        parse_package_version('\n\nset(PACKAGE_VERSION "5.2.0")\n\nif(PACKAGE_VERSION VERSION_LESS x)\n')
        == "5.2.0"
    )
    assert parse_package_version("set(OTHER 1)\n") is None
    # ROCm's bin/.hipVersion.
    assert (
        parse_hip_version_file(
            "# Auto-generated\nHIP_VERSION_MAJOR=6\nHIP_VERSION_MINOR=1\nHIP_VERSION_PATCH=40091\n"
        )
        == "6.1.40091"
    )
    assert parse_hip_version_file("HIP_VERSION_MAJOR=6\n") is None
    # Debian 12's `hipconfig --version`.
    assert parse_hipconfig_version("5.2.21153-0") == "5.2.21153"
    assert parse_hipconfig_version("perl: warning") is None


# ggml-vulkan.cpp's shape in 0c1e570: unconditional layer settings, and an optional block behind a header guard.
VULKAN_SOURCE = """\
#if VK_HEADER_VERSION >= 287
    auto id = vk::DriverId::eMesaHoneykrisp;  // vk::LayerSettingEXT in a comment is not a use
#endif
    std::vector<vk::LayerSettingEXT> settings = {};
    vk::LayerSettingsCreateInfoEXT layer_setting_info(settings);
"""


def test_the_vulkan_extensions_a_tree_uses() -> None:
    assert [ext.name for ext in vulkan_extensions_used(VULKAN_SOURCE)] == ["VK_EXT_layer_settings"]
    # Behind a header-version guard, with an #else for older headers, the use is optional.
    guarded = "#if VK_HEADER_VERSION >= 272\n    vk::LayerSettingEXT s;\n#else\n    int s;\n#endif\n"
    assert vulkan_extensions_used(guarded) == []
    assert vulkan_extensions_used("// vk::LayerSettingEXT\n/* vk::LayerSettingEXT */\n") == []


def test_a_header_declares_an_extension_by_its_define() -> None:
    assert header_declares(
        "#define VK_EXT_layer_settings 1\n#define VK_EXT_LAYER_SETTINGS_SPEC_VERSION 2\n",
        "VK_EXT_layer_settings",
    )
    # Debian 12's 1.3.239 vulkan_core.h names other extensions only.
    assert not header_declares(
        "#define VK_EXT_layer_settings_x 1\n#define VK_HEADER_VERSION 239\n", "VK_EXT_layer_settings"
    )
