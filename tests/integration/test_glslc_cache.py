"""The vulkan leg's shader cache with the real glslc: a rebuild in another folder compiles no shader.

The project (tests/support/vulkan_project.py) calls glslc as llama.cpp's
vulkan-shaders-gen does: one call per shader variant, ``-O``, a depfile
Ninja reads, an include two levels deep and a ``-I`` folder. Built through
the pipeline, every call goes through the launcher the leg points
``Vulkan_GLSLC_EXECUTABLE`` at.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pipeline_cli import build_leg
from tests.support.projects import write_matrix
from tests.support.vulkan_project import SHADER_CALLS, SHADER_VARIANTS, write_shader_project

pytestmark = pytest.mark.integration

MATRIX = """
[legs.vulkan]
backend = "vulkan"
os = "linux"
cmake_args = []
"""
SPIRV_MAGIC = bytes.fromhex("03022307")  # 0x07230203, little-endian: the first word of every SPIR-V module
OUTPUTS = [f"{shader}-{variant}.spv" for shader in ("scale", "add") for variant in SHADER_VARIANTS]


def _workspace(root: Path) -> Path:
    write_shader_project(root / "project")
    write_matrix(root / "matrix.toml", extra=MATRIX)
    return root


def _spv(ws: Path) -> dict[str, bytes]:
    build = ws / "out" / "vulkan" / "build"
    return {name: (build / name).read_bytes() for name in OUTPUTS}


def _glslc_counts(record: dict) -> tuple[int, int, int]:
    glslc = record["ccache"]["glslc"]
    return glslc["hits"], glslc["misses"], glslc["uncacheable"]


def test_a_rebuild_in_another_folder_is_all_hits_and_a_changed_include_misses(tmp_path: Path) -> None:
    glslc = shutil.which("glslc")
    assert glslc, "glslc is not installed (Debian: glslc; .ci/run installs it)"
    cache = tmp_path / "ccache"
    runner = _workspace(tmp_path / "runner")
    first = build_leg(runner, "vulkan", cache)
    assert _glslc_counts(first) == (0, SHADER_CALLS, 0)
    assert first["ccache"]["glslc"]["cache_dir"] == str(cache.resolve() / "glslc")
    built = _spv(runner)
    # What glslc itself writes for the same call, in a folder of its own: the launcher changed nothing.
    direct = tmp_path / "direct.spv"
    project = runner / "project"
    subprocess.run([glslc, "-fshader-stage=compute", "--target-env=vulkan1.2", str(project / "shaders" / "scale.comp"),
                    "-o", str(direct), "-O", "-I", str(project / "shaders" / "lib"), "-DVARIANT=1"], check=True)
    assert built["scale-1.spv"] == direct.read_bytes()
    assert all(data.startswith(SPIRV_MAGIC) for data in built.values())
    assert built["scale-1.spv"] != built["scale-2.spv"]

    laptop = _workspace(tmp_path / "elsewhere" / "laptop")
    second = build_leg(laptop, "vulkan", cache)
    assert _glslc_counts(second) == (SHADER_CALLS, 0, 0)
    assert _spv(laptop) == built
    build = laptop / "out" / "vulkan" / "build"
    # The depfiles a hit writes name this folder's files, and Ninja reads them: nothing left to do.
    depfile = (build / "scale-1.spv.d").read_text()
    assert str(laptop) in depfile and str(runner) not in depfile, depfile
    assert [Path(p).name for p in depfile.split(": ", 1)[1].split()] == ["scale.comp", "inner.glsl", "common.glsl"]
    # Every call went to the cache server the build step ran, which is gone, its socket too.
    launchers = build / "pipeline-glslc"
    assert (launchers / "server.log").read_text().splitlines()[-1] == (
        f"glslc cache server: {SHADER_CALLS} calls answered, 0 handed to the Python launcher")
    assert not (launchers / "server.sock").exists()
    ninja = subprocess.run([shutil.which("ninja", path=str(Path(sys.executable).parent)) or "ninja", "-C", str(build), "-n"], capture_output=True, text=True, check=True).stdout
    assert "no work to do" in ninja, ninja

    # An include two levels down changes: the shader that includes it misses, the other still hits.
    inner = laptop / "project" / "shaders" / "lib" / "inner.glsl"
    inner.write_text("float inner_factor() { return 3.0; }\n")
    third = build_leg(laptop, "vulkan", cache)
    per_shader = len(SHADER_VARIANTS)
    assert _glslc_counts(third) == (per_shader, per_shader, 0)
    changed = _spv(laptop)
    assert changed["scale-1.spv"] != built["scale-1.spv"] and changed["add-1.spv"] == built["add-1.spv"]
