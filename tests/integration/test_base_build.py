"""A leg with a ``base``: another leg's configuration built first in the same job, this leg's targets on top.

The Windows arm64 CUDA leg builds cpu-windows-arm64's configuration (clang) and
then ``ggml-cuda`` alone (MSVC); neither can run here. The mechanism is the
same on any OS, so it is tested with a generated project: a "base" library and
a program, and a plugin library that only the leg's own configuration enables.
Both builds link their own copy of the base library (as ggml-cuda's build makes
its own ggml-base): the bundle must take the base build's, and from the leg's
own build only what its target made. Real CMake, Ninja, ccache and
check-bundle; the expectations are read from the files, not from the code.
"""

from __future__ import annotations

import json
import tarfile
import textwrap
from pathlib import Path

import pytest

from pipeline.bundle.elfdeps import read_elf
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import PROJECT_LICENSE

pytestmark = pytest.mark.integration

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
project(basedemo C)
option(WITH_PLUG "the plugin library" OFF)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_library(demo-base SHARED src/base.c)
add_executable(llama-demo src/main.c)
target_link_libraries(llama-demo PRIVATE demo-base)
if(WITH_PLUG)
    # The configure that makes the plugin also compiles the base another way: its copy must not ship.
    target_compile_definitions(demo-base PRIVATE DEMO_WHICH="plug-configure")
    add_library(demo-plug SHARED src/plug.c)
    target_link_libraries(demo-plug PRIVATE demo-base)
endif()
"""

FILES = {
    "CMakeLists.txt": CMAKELISTS,
    "LICENSE": PROJECT_LICENSE,
    "src/base.c": textwrap.dedent(
        """\
        #ifndef DEMO_WHICH
        #define DEMO_WHICH "base-configure"
        #endif
        const char * demo_which(void) { return DEMO_WHICH; }
        int demo_base(int x) { return x + 1; }
        """
    ),
    "src/main.c": textwrap.dedent(
        """\
        #include <stdio.h>
        const char * demo_which(void);
        int demo_base(int);
        int main(void) { printf("%d %s\\n", demo_base(41), demo_which()); return 0; }
        """
    ),
    "src/plug.c": "int demo_base(int);\nint demo_plug(int x) { return demo_base(x) * 2; }\n",
}

MATRIX = """\
[source]
repo = "https://example.invalid/llama.cpp.git"
tag = "b1"

[ccache]
compiler_check = "content"

[cmake]
args = ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"]

[legs.cpu]
backend = "cpu"
os = "linux"

[legs.plugged]
backend = "cpu"
os = "linux"
base = "cpu"
bundle_name = "llama-{tag}-bin-ubuntu-plugged-{arch}"
build_targets = ["demo-plug"]
cmake_args = ["-DWITH_PLUG=ON"]
"""


def workspace(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / "project" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "project" / rel).write_text(text)
    (root / "matrix.toml").write_text(MATRIX)
    return root


def build(ws: Path, out: str, cache: Path) -> dict:
    proc = run_pipeline(["--matrix", str(ws / "matrix.toml"), "build", "plugged", "--source", str(ws / "project"),
                         "--out", str(ws / out), "--cache-dir", str(cache), "--tag", "b1"])  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((ws / out / "plugged" / "record.json").read_text())  # type: ignore[no-any-return]


def test_a_leg_with_a_base_builds_both_and_ships_the_bases_files_and_its_targets(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    cache = tmp_path / "ccache"
    record = build(ws, "out", cache)
    out = ws / "out"
    # Two configure lines: the base leg's own (no plugin) and this leg's (the plugin on).
    base = record["toolchain"]["base"]
    assert base["leg"] == "cpu"
    assert "-DWITH_PLUG=ON" not in base["cmake_args"] and "-DWITH_PLUG=ON" in record["cmake_args"]
    assert any(a.endswith("/plugged/build-base") for a in base["cmake_args"])
    # Each build in its own folder; the leg's own build made only its target (and what that target links).
    assert (out / "plugged" / "build-base" / "bin" / "llama-demo").is_file()
    own = out / "plugged" / "build" / "bin"
    assert sorted(p.name for p in own.iterdir()) == ["libdemo-base.so", "libdemo-plug.so"]
    # Both builds through the leg's one ccache: base.c and main.c, then base.c (another define) and plug.c.
    assert (record["ccache"]["hits"], record["ccache"]["misses"]) == (0, 4)

    with tarfile.open(out / "dist" / record["bundle"].rsplit("/", 1)[-1]) as tar:
        names = sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile())
        shipped_base = tar.extractfile(
            next(m for m in tar.getmembers() if m.name.endswith("/libdemo-base.so"))
        )
        assert shipped_base is not None
        base_bytes = shipped_base.read()
    programs = [n for n in names if n.startswith(("lib", "llama-"))]
    assert sorted(programs) == ["libdemo-base.so", "libdemo-plug.so", "llama-demo"]
    # The base library is the base build's (its define says so), not the copy the plugin's configure made.
    assert base_bytes == (out / "plugged" / "build-base" / "bin" / "libdemo-base.so").read_bytes()
    assert b"base-configure" in base_bytes and b"plug-configure" not in base_bytes
    # The plugin finds the base library beside it in the bundle, and the whole bundle passes check-bundle.
    staged = out / "plugged" / "bundle"
    assert "libdemo-base.so" in read_elf(staged / "libdemo-plug.so").needed
    assert record["bundle_check"]["ok"] is True, record["bundle_check"]

    # Built again in another folder with the same cache: every unit of both builds hits.
    again = build(ws, "out2", cache)
    assert (again["ccache"]["hits"], again["ccache"]["misses"]) == (4, 0)


def test_a_base_that_is_not_a_cpu_leg_of_the_same_os_and_arch_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    (ws / "matrix.toml").write_text(MATRIX.replace('base = "cpu"', 'base = "cpu-arm"')
                                    + '\n[legs.cpu-arm]\nbackend = "cpu"\nos = "linux"\narch = "arm64"\n')  # fmt: skip
    proc = run_pipeline(["--matrix", str(ws / "matrix.toml"), "legs"])
    assert proc.returncode == 2, proc.stderr  # a configuration error, before any work
    assert proc.stderr.strip() == (
        f"error: {ws / 'matrix.toml'}: legs.plugged.base: 'cpu-arm' must be a cpu leg for linux/x64 without a "
        "base of its own (it is a cpu leg for linux/arm64)"
    )
