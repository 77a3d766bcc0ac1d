"""A bundle never loads a library from the user's working folder.

ld.so reads an empty RUNPATH entry (``$ORIGIN:``, ``:$ORIGIN``) or a relative
one (``.``) against the current working folder, after the bundle's own folder
and before the system's. The files here are built with gcc and CMake; what
their RUNPATH says is read with binutils' ``readelf``; whether a planted
library is loaded is what the real loader does when the program runs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from pipeline.bundle.check import check_tree
from pipeline.bundle.closure import complete_runtime
from pipeline.bundle.elfdeps import read_elf
from tests.support.planted import PLANTED_EXIT, PLANTED_MESSAGE, plant_libraries

pytestmark = pytest.mark.integration

PROGRAM_SOURCE = """\
#include <math.h>
#include <stdio.h>
int main(int argc, char **argv) { volatile double x = argc + 3.0; printf("%g\\n", sqrt(x)); return 0; }
"""


def readelf_runpath(path: Path) -> str | None:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\(RUNPATH\)\s+Library runpath: \[(.*)\]", out)
    return found.group(1) if found else None


def build_program(root: Path, runpath: str) -> Path:
    """``root/llama-demo``: needs libm.so.6 (from the system), RUNPATH ``runpath``."""
    root.mkdir(parents=True, exist_ok=True)
    (root.parent / "main.c").write_text(PROGRAM_SOURCE)
    program = root / "llama-demo"
    subprocess.run(["gcc", "-o", str(program), str(root.parent / "main.c"), "-Wl,--no-as-needed", "-lm",
                    "-Wl,--enable-new-dtags", f"-Wl,-rpath,{runpath}"], check=True)  # fmt: skip
    (root / "LICENSE").write_text("MIT\n")
    return program


@pytest.fixture
def planted_folder(tmp_path: Path) -> Path:
    """A user's working folder holding a file named like a library the program needs from the system."""
    return plant_libraries(tmp_path / "downloads", ("libm.so.6",))


def run_from(folder: Path, program: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program)], cwd=folder, capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})  # fmt: skip


@pytest.mark.parametrize("runpath", ["$ORIGIN:", ":$ORIGIN", "$ORIGIN:."])
def test_a_runpath_that_searches_the_working_folder_is_refused_then_rewritten(
    runpath: str, tmp_path: Path, planted_folder: Path
) -> None:
    bundle = tmp_path / "bundle"
    program = build_program(bundle, runpath)
    assert readelf_runpath(program) == runpath
    # The reader keeps every entry, the empty one too: joined back, it is what binutils reads.
    assert ":".join(read_elf(program).runpath) == runpath

    # The danger is real: run from that folder, the loader takes the planted libm.so.6.
    before = run_from(planted_folder, program)
    assert before.returncode == PLANTED_EXIT, before.stderr
    assert PLANTED_MESSAGE in before.stderr

    what = "the relative entry '.'" if runpath.endswith(".") else "an empty entry"
    assert [p.line for p in check_tree(bundle, os_name="linux", glibc_max=None).problems] == [
        f"llama-demo: RUNPATH {runpath!r} has {what}: the loader searches the current working folder there "
        "(want $ORIGIN-relative entries only)"
    ]

    closure = complete_runtime(bundle, os_name="linux", backend="cpu", targets=(), toolchain_root=None)
    assert closure.runpaths == (("llama-demo", "$ORIGIN"),)
    assert readelf_runpath(program) == "$ORIGIN"
    assert check_tree(bundle, os_name="linux", glibc_max=None).problems == ()
    after = run_from(planted_folder, program)
    assert (after.returncode, after.stdout, after.stderr) == (0, "2\n", "")


def test_cmake_default_build_rpath_becomes_origin(tmp_path: Path, planted_folder: Path) -> None:
    """Without CMAKE_BUILD_RPATH_USE_ORIGIN, CMake's build RPATH is the absolute build folder."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "demo.c").write_text("int demo_value(void) { return 2; }\n")
    (project / "src" / "main.c").write_text(
        "#include <math.h>\n#include <stdio.h>\nint demo_value(void);\n"
        'int main(int c, char **v) { volatile double x = c + 3.0; printf("%g %d\\n", sqrt(x), demo_value()); return 0; }\n'
    )
    (project / "CMakeLists.txt").write_text(
        textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.16)
        project(demo C)
        set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
        set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
        add_library(demo SHARED src/demo.c)
        set_target_properties(demo PROPERTIES VERSION 1.2.3 SOVERSION 1)
        add_executable(llama-demo src/main.c)
        target_link_libraries(llama-demo PRIVATE demo m)
        """)
    )
    build = tmp_path / "build"
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    assert cmake and ninja
    subprocess.run([cmake, "-S", str(project), "-B", str(build), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)  # fmt: skip
    subprocess.run([ninja, "-C", str(build)], check=True, capture_output=True)
    assert readelf_runpath(build / "bin" / "llama-demo") == str(build / "bin")

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for item in (build / "bin").iterdir():
        shutil.copy2(item, bundle / item.name, follow_symlinks=False)
    (bundle / "LICENSE").write_text("MIT\n")
    lines = [p.line for p in check_tree(bundle, os_name="linux", glibc_max=None).problems]
    assert lines == [
        f"llama-demo: absolute or build-machine RUNPATH/RPATH entry '{build / 'bin'}' (want $ORIGIN-relative)",
        "llama-demo: needs libdemo.so.1: it is in the bundle (libdemo.so.1) but not on its RUNPATH",
    ]
    closure = complete_runtime(bundle, os_name="linux", backend="cpu", targets=(), toolchain_root=None)
    assert closure.runpaths == (("llama-demo", "$ORIGIN"),)
    assert readelf_runpath(bundle / "llama-demo") == "$ORIGIN"
    assert check_tree(bundle, os_name="linux", glibc_max=None).problems == ()
    # The build folder gone (as on a user's machine), run from the folder holding a planted libm.so.6.
    shutil.rmtree(build)
    after = run_from(planted_folder, bundle / "llama-demo")
    assert (after.returncode, after.stdout) == (0, "2 2\n"), after.stderr
