"""A generated Vulkan project: a GLSL shader compiled by glslc and C++ against the Vulkan headers."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
