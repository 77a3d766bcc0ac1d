"""A Vulkan project through the ``vulkan`` leg: a compute shader compiled by glslc,
embedded in C++ that includes the Vulkan headers."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

from tests.integration.conftest import build_leg
from tests.support.projects import write_matrix

COMPILATIONS = 2  # main.cpp and pipeline.cpp; glslc is not a ccache call

SHADER = """\
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float values[]; };
layout(push_constant) uniform Params { float factor; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] = values[i] * factor;
}
"""


def write_vulkan_project(root: Path) -> Path:
    (root / "shaders").mkdir(parents=True)
    (root / "shaders" / "scale.comp").write_text(SHADER)
    (root / "pipeline.cpp").write_text(
        textwrap.dedent(
            """\
            #include <vulkan/vulkan.h>
            #include <cstdint>
            #include <cstddef>
            static const uint32_t kScaleSpv[] =
            #include "scale.spv.h"
            ;
            VkShaderModuleCreateInfo scale_module_info() {
                VkShaderModuleCreateInfo info{};
                info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
                info.codeSize = sizeof(kScaleSpv);
                info.pCode = kScaleSpv;
                return info;
            }
            """
        )
    )
    (root / "main.cpp").write_text(
        textwrap.dedent(
            """\
            #include <vulkan/vulkan.h>
            #include <cstdio>
            VkShaderModuleCreateInfo scale_module_info();
            int main() {
                VkShaderModuleCreateInfo info = scale_module_info();
                std::printf("header %d magic %08x words %zu\\n", VK_HEADER_VERSION,
                            info.pCode[0], info.codeSize / 4);
                return 0;
            }
            """
        )
    )
    (root / "CMakeLists.txt").write_text(
        textwrap.dedent(
            """\
            cmake_minimum_required(VERSION 3.24)
            project(vkdemo LANGUAGES C CXX)
            find_package(Vulkan REQUIRED COMPONENTS glslc)
            set(SPV_HEADER ${CMAKE_CURRENT_BINARY_DIR}/scale.spv.h)
            add_custom_command(
                OUTPUT ${SPV_HEADER}
                COMMAND Vulkan::glslc -mfmt=c -fshader-stage=compute
                        ${CMAKE_CURRENT_SOURCE_DIR}/shaders/scale.comp -o ${SPV_HEADER}
                DEPENDS shaders/scale.comp)
            add_executable(vkdemo main.cpp pipeline.cpp ${SPV_HEADER})
            target_include_directories(vkdemo PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
            target_link_libraries(vkdemo PRIVATE Vulkan::Vulkan)
            """
        )
    )
    return root


def test_vulkan_shader_and_headers_through_the_leg(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_vulkan_project(ws / "project")
    write_matrix(
        ws / "matrix.toml",
        extra="""
[legs.vulkan]
backend = "vulkan"
os = "linux"
cmake_args = ["-DGGML_VULKAN=ON"]
""",
    )
    cache = tmp_path / "ccache"

    def build() -> dict:
        return build_leg(ws, "vulkan", cache)

    first = build()
    tc = first["toolchain"]
    headers, shaderc = tc["details"]["vulkan_headers"], tc["details"]["glslc"]
    assert re.fullmatch(r"1\.\d+\.\d+", headers)
    # Both versions are part of the identity, and so of the cache key.
    assert tc["identity"].startswith(f"vulkan-{headers}-glslc-{shaderc}-")
    assert any(a.startswith("-DVulkan_GLSLC_EXECUTABLE=") for a in first["cmake_args"])
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)

    program = ws / "out" / "vulkan" / "build" / "vkdemo"
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    # The program was built against the headers the identity names, with real SPIR-V inside.
    assert f"header {headers.rsplit('.', 1)[1]} " in out
    assert "magic 07230203" in out

    second = build()
    assert second["toolchain"]["identity"] == tc["identity"]
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)
