"""A CMake sub-build compiles through the leg's ccache, and is counted in the record.

ggml-vulkan builds its shader generator (``vulkan-shaders-gen``) as an ExternalProject: Ninja configures that
sub-build during the build, with none of the leg's ``-D`` flags, so it never got the compiler launcher and
every vulkan build, warm or cold, compiled it from scratch. The project here has the same shape: a program
whose build first builds and installs a generator as an ExternalProject given only its install prefix. Real
CMake, Ninja, ccache and the machine's compiler; the generator's own CMakeCache.txt and ccache's counts judge.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.pipeline_cli import build_leg
from tests.support.projects import PROJECT_LICENSE, write_matrix

pytestmark = pytest.mark.integration

TOP = """cmake_minimum_required(VERSION 3.16)
project(demo C CXX)
include(ExternalProject)
# As ggml-vulkan's: the sub-build is given its install folder and build type, nothing of the parent's.
ExternalProject_Add(gen
    SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/gen
    CMAKE_ARGS -DCMAKE_INSTALL_PREFIX=${CMAKE_BINARY_DIR}/gen-install -DCMAKE_BUILD_TYPE=Release
    BUILD_ALWAYS TRUE)
add_executable(llama-demo main.cpp)
add_dependencies(llama-demo gen)
"""
GEN = """cmake_minimum_required(VERSION 3.16)
project(gen CXX)
add_executable(gen gen.cpp)
install(TARGETS gen)
"""


def _workspace(root: Path) -> Path:
    project = root / "project"
    (project / "gen").mkdir(parents=True)
    (project / "CMakeLists.txt").write_text(TOP)
    (project / "main.cpp").write_text("int main() { return 0; }\n")
    (project / "LICENSE").write_text(PROJECT_LICENSE)
    (project / "gen" / "CMakeLists.txt").write_text(GEN)
    (project / "gen" / "gen.cpp").write_text(
        '#include <cstdio>\nint main() { std::puts("shaders"); return 0; }\n'
    )
    write_matrix(root / "matrix.toml")
    return root


def test_an_external_project_compiles_through_the_legs_cache_and_hits_in_another_folder(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "ccache"
    ws = _workspace(tmp_path / "ws")
    cold = build_leg(ws, "cpu", cache, "--no-bundle")
    # ccache's own log of the build's calls: main.cpp, the sub-build's gen.cpp, and the compiler check CMake
    # runs when Ninja configures the sub-build (with its launcher too); the parent's ran at configure time.
    calls = [
        line[2:]
        for line in (ws / "out" / "cpu" / "ccache-stats.log").read_text().splitlines()
        if line.startswith("# ")
    ]
    assert sorted(Path(c).name for c in calls) == ["CMakeCXXCompilerABI.cpp", "gen.cpp", "main.cpp"], calls
    assert (cold["ccache"]["misses"], cold["ccache"]["hits"]) == (3, 0), cold["ccache"]
    sub_cache = next((ws / "out" / "cpu" / "build").rglob("gen-build/CMakeCache.txt")).read_text()
    launcher = next(line for line in sub_cache.splitlines() if line.startswith("CMAKE_CXX_COMPILER_LAUNCHER"))
    assert launcher.rsplit("=", 1)[1].endswith("ccache"), launcher

    other = tmp_path / "elsewhere"
    shutil.copytree(ws / "project", other / "project")
    shutil.copy2(ws / "matrix.toml", other / "matrix.toml")
    warm = build_leg(other, "cpu", cache, "--no-bundle")
    assert (warm["ccache"]["hits"], warm["ccache"]["misses"]) == (3, 0), warm["ccache"]
