"""A ``--source`` whose ``.git`` is a file: a submodule checkout and a git worktree build, with their tag and commit.

llama-cpp-python's ``vendor/llama.cpp`` is a submodule: its ``.git`` is the
file ``gitdir: ../../.git/modules/vendor/llama.cpp``. llama.cpp's
``common/CMakeLists.txt`` reads that file and, when the index it names
exists, makes the configure depend on ``${PROJECT_SOURCE_DIR}/<gitdir>/index``.
The leg compiles its tree through ``<out>/<leg>/src/llama.cpp``
(pipeline/leg/layout.py): through a link, CMake finds the index (the file
system follows the link before the ``..``) but Ninja collapses the ``..``
in the path it is given, to a file that does not exist, and re-runs the
configure until "manifest 'build.ninja' still dirty after 100 tries".

The project here does what llama.cpp's CMake does with git
(``common/CMakeLists.txt``'s index dependency, ``cmake/build-info.cmake``'s
``rev-parse --short HEAD`` and ``rev-list --count HEAD``, the top-level
``if (NOT DEFINED LLAMA_BUILD_NUMBER)``) and compiles the answer into its
program, which prints it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepos import commit_files, git, init_repo, tag
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_matrix

pytestmark = pytest.mark.integration

WHEN = datetime(2026, 3, 1, tzinfo=UTC)
TAG = "b4242"

# common/CMakeLists.txt and cmake/build-info.cmake of llama.cpp 0c1e570, cut to their git calls.
CMAKELISTS = textwrap.dedent(
    """\
    cmake_minimum_required(VERSION 3.16)
    project(gitfile C)
    if(EXISTS "${PROJECT_SOURCE_DIR}/.git")
        set(GIT_DIR "${PROJECT_SOURCE_DIR}/.git")
        if(NOT IS_DIRECTORY "${GIT_DIR}")
            file(READ ${GIT_DIR} REAL_GIT_DIR_LINK)
            string(REGEX REPLACE "gitdir: (.*)\\n$" "\\\\1" REAL_GIT_DIR ${REAL_GIT_DIR_LINK})
            string(FIND "${REAL_GIT_DIR}" "/" SLASH_POS)
            if (SLASH_POS EQUAL 0)
                set(GIT_DIR "${REAL_GIT_DIR}")
            else()
                set(GIT_DIR "${PROJECT_SOURCE_DIR}/${REAL_GIT_DIR}")
            endif()
        endif()
        if(EXISTS "${GIT_DIR}/index")
            set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${GIT_DIR}/index")
        else()
            message(WARNING "Git index not found in git repository.")
        endif()
    endif()
    set(BUILD_NUMBER 0)
    set(BUILD_COMMIT "unknown")
    find_package(Git)
    if(Git_FOUND)
        execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short HEAD
            WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} OUTPUT_VARIABLE HEAD
            OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE RES)
        if (RES EQUAL 0)
            set(BUILD_COMMIT ${HEAD})
        endif()
        execute_process(COMMAND ${GIT_EXECUTABLE} rev-list --count HEAD
            WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} OUTPUT_VARIABLE COUNT
            OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE RES)
        if (RES EQUAL 0)
            set(BUILD_NUMBER ${COUNT})
        endif()
    endif()
    if (NOT DEFINED LLAMA_BUILD_NUMBER)
        set(LLAMA_BUILD_NUMBER ${BUILD_NUMBER})
    endif()
    if (NOT DEFINED LLAMA_BUILD_COMMIT)
        set(LLAMA_BUILD_COMMIT ${BUILD_COMMIT})
    endif()
    add_executable(info src/info.c)
    target_compile_definitions(info PRIVATE BUILD_NUMBER=${LLAMA_BUILD_NUMBER} BUILD_COMMIT="${LLAMA_BUILD_COMMIT}")
    set_target_properties(info PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
    """
)
INFO_C = '#include <stdio.h>\nint main(void) { printf("build %d, commit %s\\n", BUILD_NUMBER, BUILD_COMMIT); return 0; }\n'


def upstream(path: Path) -> str:
    """The tree's own repository: one commit, tagged ``TAG``; its SHA."""
    init_repo(path)
    sha = commit_files(path, {"CMakeLists.txt": CMAKELISTS, "src/info.c": INFO_C}, "tree", when=WHEN)
    tag(path, TAG, when=WHEN)
    return sha


def submodule_checkout(tmp_path: Path) -> tuple[Path, str]:
    """``super/vendor/llama.cpp``, a submodule of the superproject ``super``, as llama-cpp-python has it."""
    sha = upstream(tmp_path / "upstream")
    superproject = init_repo(tmp_path / "super")
    git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "--quiet",
        str(tmp_path / "upstream"), "vendor/llama.cpp")  # fmt: skip
    git(superproject, "commit", "--quiet", "-m", "vendor llama.cpp", when=WHEN)
    return superproject / "vendor" / "llama.cpp", sha


def worktree(tmp_path: Path, *, relative: bool) -> tuple[Path, str]:
    """A linked worktree of the tree's repository; ``relative``: its ``.git`` names the gitdir relatively
    (what ``git worktree add --relative-paths``, git 2.48, writes)."""
    sha = upstream(tmp_path / "upstream")
    tree = tmp_path / "wt"
    git(tmp_path / "upstream", "worktree", "add", "--quiet", "--detach", str(tree), TAG)
    if relative:
        gitdir = Path((tree / ".git").read_text().removeprefix("gitdir: ").strip())
        (tree / ".git").write_text(f"gitdir: ../{gitdir.relative_to(tmp_path)}\n")
    return tree, sha


def build(tmp_path: Path, tree: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    write_matrix(tmp_path / "m.toml")
    proc = run_pipeline(
        ["--matrix", str(tmp_path / "m.toml"), "build", "cpu", "--source", str(tree), "--out", str(tmp_path / "out"),
         "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"],
        env={"COLUMNS": "400"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    return proc, json.loads((tmp_path / "out" / "cpu" / "record.json").read_text())


@pytest.mark.parametrize("shape", ["submodule", "worktree", "relative-worktree"])
def test_a_tree_whose_git_is_a_file_builds_with_its_tag_and_commit(tmp_path: Path, shape: str) -> None:
    tree, sha = (submodule_checkout(tmp_path) if shape == "submodule"
                 else worktree(tmp_path, relative=shape == "relative-worktree"))  # fmt: skip
    assert (tree / ".git").is_file()
    _, record = build(tmp_path, tree)
    assert (record["source"]["tag"], record["source"]["commit"], record["source"]["dirty"]) == (
        TAG,
        sha,
        False,
    )
    place = tmp_path / "out" / "cpu" / "src" / "llama.cpp"
    # The reproduce-warm rule: the tree is compiled from the leg's one place, whatever its shape.
    assert record["cmake_args"][record["cmake_args"].index("-S") + 1] == str(place)
    shown = subprocess.run([tmp_path / "out" / "cpu" / "build" / "bin" / "info"], capture_output=True, text=True,
                           check=True).stdout  # fmt: skip
    assert shown == f"build 4242, commit {sha[:7]}\n"
    # The user's tree is left as it was: the same files, its own .git file, nothing committed or staged.
    assert git(tree, "status", "--porcelain") == ""


def test_a_second_build_through_the_place_configures_nothing_anew(tmp_path: Path) -> None:
    """The index the configure depends on is one Ninja finds: a rebuild has nothing to do."""
    tree, _ = submodule_checkout(tmp_path)
    build(tmp_path, tree)
    # The Ninja the pipeline ran (the project's, beside Python): another version keeps another log.
    tool = next((str(p) for p in (Path(sys.executable).parent / "ninja",) if p.exists()), "ninja")
    ninja = subprocess.run([tool, "-C", str(tmp_path / "out" / "cpu" / "build"), "-n"], capture_output=True,
                           text=True, check=True, timeout=60).stdout  # fmt: skip
    assert ninja.strip().splitlines()[-1] == "ninja: no work to do."
