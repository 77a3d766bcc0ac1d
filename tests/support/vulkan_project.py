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


# A shader project compiled as llama.cpp's vulkan-shaders-gen compiles: one glslc call per variant
# (``-DVARIANT=``), ``-O``, ``--target-env``, and a depfile (``-MD -MF``) Ninja reads. ``scale.comp``
# includes ``lib/common.glsl``, which includes ``inner.glsl``; ``add.comp`` includes ``bias.glsl``, found
# through the ``-I`` folder, and nothing of scale's. Every name is a literal the tests use.
SHADER_VARIANTS = ("1", "2")
SHADER_CALLS = 2 * len(SHADER_VARIANTS)
SHADER_SOURCES = {
    "shaders/scale.comp": """\
#version 450
#extension GL_GOOGLE_include_directive : require
#include "lib/common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] = scaled(values[i]) * float(VARIANT);
}
""",
    "shaders/add.comp": """\
#version 450
#extension GL_GOOGLE_include_directive : require
#include "bias.glsl"
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Data { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] = values[i] + bias() * float(VARIANT);
}
""",
    "shaders/lib/bias.glsl": "float bias() { return 0.5; }\n",
    "shaders/lib/common.glsl": """\
#include "inner.glsl"
float scaled(float x) { return x * inner_factor(); }
""",
    "shaders/lib/inner.glsl": "float inner_factor() { return 2.0; }\n",
}


def write_shader_project(root: Path) -> Path:
    """The shader project: ``build/<name>-<variant>.spv`` for each shader and variant, and a C++ program."""
    for name, text in SHADER_SOURCES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "main.cpp").write_text('#include <cstdio>\nint main() { std::puts("shaders built"); }\n')
    (root / "CMakeLists.txt").write_text(
        textwrap.dedent(
            """\
            cmake_minimum_required(VERSION 3.24)
            project(shaders LANGUAGES C CXX)
            find_package(Vulkan REQUIRED COMPONENTS glslc)
            set(SPV)
            foreach(shader scale add)
              foreach(variant """
            + " ".join(SHADER_VARIANTS)
            + """)
                set(out ${CMAKE_CURRENT_BINARY_DIR}/${shader}-${variant}.spv)
                add_custom_command(
                    OUTPUT ${out}
                    DEPFILE ${out}.d
                    COMMAND ${Vulkan_GLSLC_EXECUTABLE} -fshader-stage=compute --target-env=vulkan1.2
                            ${CMAKE_CURRENT_SOURCE_DIR}/shaders/${shader}.comp -o ${out} -O -MD -MF ${out}.d
                            -I ${CMAKE_CURRENT_SOURCE_DIR}/shaders/lib -DVARIANT=${variant}
                    DEPENDS shaders/${shader}.comp)
                list(APPEND SPV ${out})
              endforeach()
            endforeach()
            add_custom_target(shaders ALL DEPENDS ${SPV})
            add_executable(demo main.cpp)
            """
        )
    )
    return root
