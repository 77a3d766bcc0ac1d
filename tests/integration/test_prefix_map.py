"""Reproducible in any folder, on a small generated project.

The project does what llama.cpp does: ``__FILE__`` in an assert-style macro
compiled into a shared library, and (built RelWithDebInfo here) debug info,
whose ``DW_AT_comp_dir`` is the compiler's absolute working directory even
when ccache's base_dir has made the source paths relative. The same source
is built through ``python -m pipeline build`` in three folders: cold in one,
warm (same cache) in a second, cold again with an empty cache in a third.
All three bundles are byte-identical and name no folder of the machine; the
warm one is 100% hits; ``reproduce`` of the first bundle in a fourth folder
compares equal.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepos import commit_files, init_repo
from tests.support.pipeline_cli import run_pipeline

pytestmark = pytest.mark.integration

# A build's record and its bundle.
Built = tuple[dict[str, Any], Path]

# where.c, main.cpp
COMPILATIONS = 2

FILES = {
    # Every bundle carries the tree's LICENSE (check-bundle refuses one without).
    "LICENSE": "MIT License\n\nwheredemo, a test project.\n",
    "CMakeLists.txt": textwrap.dedent(
        """\
        cmake_minimum_required(VERSION 3.16)
        project(wheredemo C CXX)
        set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
        set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
        add_library(where SHARED src/where.c)
        add_executable(wheredemo src/main.cpp)
        target_link_libraries(wheredemo PRIVATE where)
        """
    ),
    # As GGML_ASSERT: the file name is compiled into the message.
    "src/where.c": textwrap.dedent(
        """\
        #define CHECK_MSG(x) (#x " failed at " __FILE__)
        const char * where_message(void) { return CHECK_MSG(1 == 1); }
        """
    ),
    "src/main.cpp": textwrap.dedent(
        """\
        #include <cstdio>
        extern "C" const char * where_message(void);
        int main() { std::printf("%s | %s\\n", where_message(), __FILE__); return 0; }
        """
    ),
}

MATRIX = """\
[source]
repo = "https://example.invalid/wheredemo.git"
tag = "b1"

[ccache]
compiler_check = "content"

[cmake]
# Debug info on: DW_AT_comp_dir is the path that ccache's base_dir cannot make relative.
args = ["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"]

[legs.cpu]
backend = "cpu"
os = "linux"
"""


def build_in(ws: Path, source_repo: Path, cache: Path) -> Built:
    """Clone the project into ``ws/project``, build the cpu leg into ``ws/out``; record and bundle."""
    ws.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", str(source_repo), str(ws / "project")], check=True)
    (ws / "matrix.toml").write_text(MATRIX)
    run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "build", "cpu", "--source", str(ws / "project"), "--tag", "b1",
         "--out", str(ws / "out"), "--ccache-dir", str(cache)],
        check=True,
    )  # fmt: skip
    record = json.loads((ws / "out" / "cpu" / "record.json").read_text())
    return record, ws / "out" / record["bundle"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    root = tmp_path_factory.mktemp("prefix-map")
    repo = init_repo(root / "upstream")
    commit_files(repo, FILES, "wheredemo", when=datetime(2026, 3, 1, tzinfo=UTC))
    cache = root / "ccache"
    return {
        "runner": build_in(root / "runner", repo, cache),
        "laptop": build_in(root / "a" / "much" / "deeper" / "laptop", repo, cache),
        "clean": build_in(root / "clean", repo, root / "empty-ccache"),
        # Windows users' folders often have spaces; names are not ASCII everywhere.
        "spaced": build_in(root / "my dir" / "Jürgen Müller's $HOME", repo, root / "spaced-ccache"),
    }


def test_warm_build_in_another_folder_hits_every_object(builds: dict[str, Built]) -> None:
    (cold, _), (warm, _), (clean, _) = builds["runner"], builds["laptop"], builds["clean"]
    assert (cold["ccache"]["hits"], cold["ccache"]["misses"]) == (0, COMPILATIONS)
    assert (warm["ccache"]["hits"], warm["ccache"]["misses"], warm["ccache"]["hit_rate"]) == (
        COMPILATIONS,
        0,
        1.0,
    )
    assert (clean["ccache"]["hits"], clean["ccache"]["misses"]) == (0, COMPILATIONS)
    assert any(a.startswith("-DCMAKE_C_FLAGS=-ffile-prefix-map=") for a in cold["cmake_args"])


def test_cold_warm_and_clean_bundles_are_byte_identical(builds: dict[str, Built]) -> None:
    bundles = [bundle for _, bundle in builds.values()]
    for other in bundles[1:]:
        proc = run_pipeline(["compare", str(bundles[0]), str(other)])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "3 of 3 files identical (identical)"  # LICENSE, the library, the program in proc.stdout
        assert other.read_bytes() == bundles[0].read_bytes()


def test_objects_name_no_folder_of_the_machine(builds: dict[str, Built], tmp_path: Path) -> None:
    _, bundle = builds["clean"]
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path, filter="tar")
    # Upstream's layout: one llama-<tag>/ folder holding the programs and libraries.
    (root,) = tmp_path.iterdir()
    assert root.name.startswith("llama-")
    lib = next(root.glob("libwhere.so*"))
    # readelf, not our code, reads the debug info: the compile directory is the mapped workspace.
    info = subprocess.run(
        ["readelf", "--debug-dump=info", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    comp_dirs = set(re.findall(r"DW_AT_comp_dir\s*:.*?:\s*(\S+)\s*$", info, re.MULTILINE))
    assert comp_dirs == {"."}, comp_dirs
    proc = subprocess.run([str(root / "wheredemo")], capture_output=True, text=True, check=True)
    # The path inside the source tree, wherever the tree and the build folder were.
    assert proc.stdout.strip() == "1 == 1 failed at ./src/where.c | ./src/main.cpp"
    manifest = json.loads((root / "manifest.json").read_text())
    # The maps name the machine's folders and change nothing in the output: not an input.
    assert not any("prefix-map" in arg for arg in manifest["cmake_args"]), manifest["cmake_args"]
    for path in root.iterdir():
        if path.is_file() and path.name not in ("manifest.json", "LICENSE"):
            assert b"/tmp/" not in path.read_bytes(), f"{path.name} names a folder of the build machine"


def test_reproduce_of_a_bundle_made_elsewhere_compares_equal(
    builds: dict[str, Built], tmp_path: Path
) -> None:
    _, bundle = builds["runner"]
    source = builds["laptop"][1].parents[2] / "project"
    (tmp_path / "matrix.toml").write_text(MATRIX)
    proc = run_pipeline(
        ["--matrix", str(tmp_path / "matrix.toml"), "reproduce", str(bundle), "--source", str(source),
         "--out", str(tmp_path / "out"), "--ccache-dir", str(tmp_path / "fresh-ccache")],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 of 3 files identical (identical)"  # LICENSE, the library, the program in proc.stdout


def test_a_folder_with_a_space_and_a_non_ascii_name_builds_the_same_bundle(builds: dict[str, Built]) -> None:
    (record, bundle), (_, runner) = builds["spaced"], builds["runner"]
    assert record["status"] == "success" and (record["ccache"]["hits"], record["ccache"]["misses"]) == (
        0,
        COMPILATIONS,
    )
    assert bundle.read_bytes() == runner.read_bytes()
    flags = next(a for a in record["cmake_args"] if a.startswith("-DCMAKE_C_FLAGS="))
    assert '"-ffile-prefix-map=' in flags and "my dir/Jürgen Müller's \\$$HOME" in flags
