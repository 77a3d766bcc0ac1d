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
    subprocess.run(
        [
            glslc,
            "-fshader-stage=compute",
            "--target-env=vulkan1.2",
            str(project / "shaders" / "scale.comp"),
            "-o",
            str(direct),
            "-O",
            "-I",
            str(project / "shaders" / "lib"),
            "-DVARIANT=1",
        ],
        check=True,
    )
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
    assert [Path(p).name for p in depfile.split(": ", 1)[1].split()] == [
        "scale.comp",
        "inner.glsl",
        "common.glsl",
    ]
    # Every call went to the cache server the build step ran, which is gone, its socket too.
    launchers = build / "pipeline-glslc"
    assert (launchers / "server.log").read_text().splitlines()[-1] == (
        f"glslc cache server: {SHADER_CALLS} calls answered, 0 handed to the Python launcher"
    )
    assert not (launchers / "server.sock").exists()
    ninja = subprocess.run(
        [shutil.which("ninja", path=str(Path(sys.executable).parent)) or "ninja", "-C", str(build), "-n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "no work to do" in ninja, ninja

    # An include two levels down changes: the shader that includes it misses, the other still hits.
    inner = laptop / "project" / "shaders" / "lib" / "inner.glsl"
    inner.write_text("float inner_factor() { return 3.0; }\n")
    third = build_leg(laptop, "vulkan", cache)
    per_shader = len(SHADER_VARIANTS)
    assert _glslc_counts(third) == (per_shader, per_shader, 0)
    changed = _spv(laptop)
    assert changed["scale-1.spv"] != built["scale-1.spv"] and changed["add-1.spv"] == built["add-1.spv"]


def _results(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "glslc" / "results").glob("*/*") if p.is_dir())


@pytest.mark.parametrize("damage", ["flip a byte", "cut to 100 bytes", "lose the includes"])
def test_a_damaged_stored_result_is_never_served(tmp_path: Path, damage: str) -> None:
    """Before, with every stored SPIR-V damaged the build said 4 hits and shipped shaders glslc never wrote."""
    cache = tmp_path / "ccache"
    runner = _workspace(tmp_path / "runner")
    build_leg(runner, "vulkan", cache)
    built = _spv(runner)
    results = _results(cache)
    assert len(results) == SHADER_CALLS
    for result in results:
        output = result / "output"
        data = output.read_bytes()
        if damage == "flip a byte":
            output.write_bytes(data[:40] + bytes([data[40] ^ 0xFF]) + data[41:])
        elif damage == "cut to 100 bytes":
            output.write_bytes(data[:100])
        else:
            (result / "includes").unlink()
    laptop = _workspace(tmp_path / "elsewhere" / "laptop")
    record = build_leg(laptop, "vulkan", cache)
    glslc = record["ccache"]["glslc"]
    # Every damaged entry counted, compiled again by glslc, and stored again whole.
    assert (glslc["hits"], glslc["misses"], glslc["corrupt"]) == (0, SHADER_CALLS, SHADER_CALLS), glslc
    assert _spv(laptop) == built
    again = build_leg(_workspace(tmp_path / "third"), "vulkan", cache)["ccache"]["glslc"]
    assert (again["hits"], again["misses"], again["corrupt"]) == (SHADER_CALLS, 0, 0), again


def test_a_read_only_empty_glslc_cache_builds_uncached_and_says_so(tmp_path: Path) -> None:
    """Before, an empty read-only glslc/ folder failed the build with exit 11 (the launcher could not be written
    there). The folder is a read-only bind mount in a mount namespace of the build's own (root writes through
    mode bits): the build compiles every shader, says why the compiled launcher is not used, and exits 0."""
    import json
    import os
    import shlex

    from tests.support.pipeline_cli import ROOT

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare (util-linux)")
    cache = tmp_path / "ccache"
    folder = cache / "glslc"
    folder.mkdir(parents=True)
    ws = _workspace(tmp_path / "ws")
    build = [
        sys.executable,
        "-m",
        "pipeline",
        "--matrix",
        str(ws / "matrix.toml"),
        "build",
        "vulkan",
        "--source",
        str(ws / "project"),
        "--out",
        str(ws / "out"),
        "--ccache-dir",
        str(cache),
        "--no-bundle",
    ]
    script = (
        f"mount --bind {shlex.quote(str(folder))} {shlex.quote(str(folder))} && "
        f"mount -o remount,bind,ro {shlex.quote(str(folder))} && touch {shlex.quote(str(folder))}/probe "
        f"2>/dev/null && exit 99; exec {shlex.join(build)}"
    )
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "the glslc launcher cannot be written into" in proc.stdout + proc.stderr
    record = json.loads((ws / "out" / "vulkan" / "record.json").read_text())
    glslc = record["ccache"]["glslc"]
    assert (glslc["hits"], glslc["misses"]) == (0, SHADER_CALLS), glslc
    assert _spv(ws)["scale-1.spv"].startswith(SPIRV_MAGIC)
    assert list(folder.iterdir()) == [], "nothing was written into the read-only cache"
