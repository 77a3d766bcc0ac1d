"""A failed configure or build ends with one line quoting its first real error, then the log's path.

Real CMake, Ninja and GCC on generated projects, one per cause the real
llama.cpp tree has shown: a target linking an imported target nobody made
(``CUDA::cuda_driver`` without the driver's link stub), a package config
the pinned CMake refuses (Debian's ``hip-config.cmake`` asks for CMake 3.3),
and a compile error (``vk::LayerSettingEXT`` with Vulkan headers too old).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from pipeline.errors import BuildError
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import PROJECT_LICENSE, write_matrix

pytestmark = pytest.mark.integration


def _project(root: Path, cmake: str, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    (root / "LICENSE").write_text(PROJECT_LICENSE)
    (root / "CMakeLists.txt").write_text(textwrap.dedent(cmake))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _failed_build(tmp_path: Path, *extra: str) -> tuple[list[str], Path]:
    ws = tmp_path
    write_matrix(ws / "matrix.toml")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "ccache"),
            "--no-bundle",
            *extra,
        ]
    )
    assert proc.returncode == BuildError.exit_code, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors, ws / "out" / "cpu" / "build.log"


def test_a_missing_imported_target_is_quoted(tmp_path: Path) -> None:
    _project(
        tmp_path / "project",
        """\
        cmake_minimum_required(VERSION 3.14)
        project(stub C)
        add_library(ggml-cuda SHARED ggml-cuda/cuda.c)
        # As ggml-cuda links the driver's target, which FindCUDAToolkit makes only with a link stub.
        target_link_libraries(ggml-cuda PRIVATE CUDA::cuda_driver)
        """,
        {"ggml-cuda/cuda.c": "int cuda(void) { return 0; }\n"},
    )
    (line,), log = _failed_build(tmp_path)
    assert line == (
        "error: cpu: CMake configure failed: CMake Error at CMakeLists.txt:5 (target_link_libraries): "
        'Target "ggml-cuda" links to: CUDA::cuda_driver but the target was not found; '
        f"full log: {log}"
    )


def test_a_refused_package_config_is_quoted(tmp_path: Path) -> None:
    _project(
        tmp_path / "project",
        """\
        cmake_minimum_required(VERSION 3.14)
        project(old C)
        find_package(oldhip REQUIRED CONFIG PATHS ${CMAKE_CURRENT_SOURCE_DIR}/prefix NO_DEFAULT_PATH)
        """,
        {
            "prefix/lib/cmake/oldhip/oldhip-config.cmake": "cmake_minimum_required(VERSION 2.8)\nset(oldhip_FOUND TRUE)\n"
        },
    )
    (line,), log = _failed_build(tmp_path)
    assert line == (
        "error: cpu: CMake configure failed: CMake Error at prefix/lib/cmake/oldhip/oldhip-config.cmake:1 "
        "(cmake_minimum_required): Compatibility with CMake < 3.5 has been removed from CMake "
        f"(called from CMakeLists.txt:3 (find_package)); full log: {log}"
    )


def test_a_compile_error_is_quoted_with_its_file_and_line(tmp_path: Path) -> None:
    _project(
        tmp_path / "project",
        """\
        cmake_minimum_required(VERSION 3.14)
        project(vk CXX)
        add_library(ggml-vulkan STATIC ok.cpp ggml-vulkan.cpp)
        """,
        {
            "ok.cpp": "int ok() { return 0; }\n",
            "ggml-vulkan.cpp": "namespace vk {}\nint init() {\n    vk::LayerSettingEXT setting;\n    return 0;\n}\n",
        },
    )
    (line,), log = _failed_build(tmp_path)
    # The failed step, then GCC's own words with the file, line and column it names (the source as the
    # compile command names it: relative to the build folder, through the leg's one tree place
    # out/<leg>/src/llama.cpp, docs/flags-and-reproduce.md), then the log.
    assert line.startswith(
        "error: cpu: Ninja build failed at CMakeFiles/ggml-vulkan.dir/ggml-vulkan.cpp.o: "
        "../src/llama.cpp/ggml-vulkan.cpp:3:9: error: "
    )
    # GCC's quotes depend on the locale (typographic in UTF-8, ASCII in C).
    assert re.search(r"error: .LayerSettingEXT. is not a member of .vk.; full log: ", line), line
    assert line.endswith(f"; full log: {log}")
