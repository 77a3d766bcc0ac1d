"""A generated HIP project shaped like llama.cpp's ggml-hip, for the ROCm leg's compile tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

KERNELS = 3
COMPILATIONS = KERNELS + 1  # the .hip files and one C++ host file


def write_hip_project(root: Path) -> Path:
    """Like llama.cpp's ggml-hip: GPU_TARGETS -> CMAKE_HIP_ARCHITECTURES, then HIP enabled."""
    src = root / "src"
    src.mkdir(parents=True)
    names = []
    for i in range(KERNELS):
        (src / f"kernel{i}.hip").write_text(
            textwrap.dedent(
                f"""\
                #include <hip/hip_runtime.h>
                __global__ void scale{i}(float* data, float factor, int n) {{
                    int idx = blockIdx.x * blockDim.x + threadIdx.x;
                    if (idx < n) data[idx] = data[idx] * factor + {i}.0f;
                }}
                extern "C" void launch{i}(float* data, float factor, int n) {{
                    hipLaunchKernelGGL(scale{i}, dim3((n + 63) / 64), dim3(64), 0, 0, data, factor, n);
                }}
                """
            )
        )
        names.append(f"src/kernel{i}.hip")
    (src / "host.cpp").write_text(
        "".join(f'extern "C" void launch{i}(float*, float, int);\n' for i in range(KERNELS))
        + "void launch_all(float* d, int n) {"
        + "".join(f" launch{i}(d, 2.0f, n);" for i in range(KERNELS))
        + " }\n"
    )
    (root / "CMakeLists.txt").write_text(
        textwrap.dedent(
            f"""\
            cmake_minimum_required(VERSION 3.21)
            project(hipdemo LANGUAGES C CXX)
            if (GPU_TARGETS)
                set(CMAKE_HIP_ARCHITECTURES ${{GPU_TARGETS}})
            endif()
            enable_language(HIP)
            add_library(kernels STATIC {" ".join(names)} src/host.cpp)
            """
        )
    )
    return root
