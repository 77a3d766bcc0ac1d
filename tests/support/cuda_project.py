"""A generated CUDA project: kernels in .cu files and one C++ file."""

from __future__ import annotations

import textwrap
from pathlib import Path

KERNELS = 2
COMPILATIONS = KERNELS + 1  # the .cu files and one C++ file


def write_cuda_project(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    names = []
    for i in range(KERNELS):
        (src / f"kernel{i}.cu").write_text(
            textwrap.dedent(
                f"""\
                __global__ void axpy{i}(float a, const float* x, float* y, int n) {{
                    int idx = blockIdx.x * blockDim.x + threadIdx.x;
                    if (idx < n) y[idx] = a * x[idx] + y[idx] + {i}.0f;
                }}
                void launch{i}(const float* x, float* y, int n) {{
                    axpy{i}<<<(n + 127) / 128, 128>>>(2.0f, x, y, n);
                }}
                """
            )
        )
        names.append(f"src/kernel{i}.cu")
    (src / "host.cpp").write_text(
        "".join(f"void launch{i}(const float*, float*, int);\n" for i in range(KERNELS))
        + "void launch_all(const float* x, float* y, int n) {"
        + "".join(f" launch{i}(x, y, n);" for i in range(KERNELS))
        + " }\n"
    )
    (root / "CMakeLists.txt").write_text(
        textwrap.dedent(
            f"""\
            cmake_minimum_required(VERSION 3.18)
            project(cudademo LANGUAGES C CXX CUDA)
            add_library(kernels STATIC {" ".join(names)} src/host.cpp)
            """
        )
    )
    return root
