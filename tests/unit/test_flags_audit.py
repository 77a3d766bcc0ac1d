"""Every ``-D`` variable matrix.toml passes means something to the tree it builds.

CMake does not warn about a variable nobody reads when the project reads
variables by pattern (ggml collects every ``GGML_*`` for its package
config), so a flag that a tree dropped, or never had, is passed silently
for ever. This reads the real tree (llama.cpp 0c1e570, from the
llama-cpp-python sdist in the test cache) and checks each variable of the
shipped ``[cmake] args`` and every leg's ``cmake_args`` by name: read by one
of the tree's CMake files, or a variable of CMake's own (documented by the
pinned CMake, ``Help/variable/<NAME>.rst``), and not one the tree reads only
to say it is ignored.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from pipeline.inputs.matrix import load_matrix
from scripts.workload.llama_sdist import cached_sdist, missing_reason
from scripts.workload.reduction import flag_variable
from tests.support.tree_files import is_cmake_file, tree_texts

# tests/conftest.py fetches the sdist before the run: a unit test starts no pip.
READS_THE_SDIST = True

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = load_matrix(ROOT / "matrix.toml")


def _cmake_help_variables() -> set[str]:
    import cmake  # the pinned CMake (PyPI), whose documentation ships with it

    help_dirs = list(Path(cmake.CMAKE_DATA).glob("share/cmake-*/Help/variable"))
    assert help_dirs, f"no Help/variable folder under {cmake.CMAKE_DATA}"
    return {path.stem for path in help_dirs[0].glob("*.rst")}


@cache
def _tree_cmake() -> dict[str, str]:
    sdist = cached_sdist()
    if sdist is None:
        pytest.skip(missing_reason())
    return tree_texts(sdist, is_cmake_file)


def _without_comments(text: str) -> str:
    return re.sub(r"(?m)#.*$", "", text)


def _readers(variable: str) -> list[str]:
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(variable)}(?![A-Za-z0-9_])")
    return sorted(path for path, text in _tree_cmake().items() if word.search(_without_comments(text)))


def _ignored_by_the_tree() -> set[str]:
    """Options the tree declares dead: ``llama_option_depr(TYPE OLD)`` with no replacement is "ignored"."""
    found = set()
    for text in _tree_cmake().values():
        found |= set(re.findall(r"(?m)^\s*llama_option_depr\(\s*\w+\s+(\w+)\s*\)", _without_comments(text)))
    return found


def _passed() -> list[tuple[str, str]]:
    """(where, variable) for every -D flag of the shipped matrix."""
    out = [("[cmake] args", flag_variable(f)) for f in SHIPPED.cmake_args]
    for name, leg in SHIPPED.legs.items():
        out += [(f"[legs.{name}] cmake_args", flag_variable(f)) for f in leg.cmake_args]
    return [(where, var) for where, var in out if var is not None]


def test_the_tree_is_read_from_the_sdist() -> None:
    files = _tree_cmake()
    # The tree's top CMakeLists.txt and ggml's, and the HIP backend's that states its ROCm floor.
    assert {"CMakeLists.txt", "ggml/CMakeLists.txt", "ggml/src/ggml-hip/CMakeLists.txt"} <= set(files)


@pytest.mark.parametrize(("where", "variable"), _passed(), ids=lambda v: str(v))
def test_every_flag_matrix_toml_passes_is_read(where: str, variable: str) -> None:
    readers = _readers(variable)
    assert readers or variable in _cmake_help_variables(), (
        f"matrix.toml {where}: -D{variable} is read by none of the tree's {len(_tree_cmake())} CMake files "
        "and is not a CMake variable"
    )
    assert variable not in _ignored_by_the_tree(), (
        f"matrix.toml {where}: -D{variable} is read only to warn that it is ignored ({readers[0]})"
    )


def test_the_audit_finds_a_dead_flag() -> None:
    """The checks above can fail: the flag the ROCm legs used to pass, and one the tree ignores."""
    assert _readers("GGML_HIP_ROCWMMA_FATTN") == []
    assert "GGML_HIP_ROCWMMA_FATTN" not in _cmake_help_variables()
    assert "LLAMA_CURL" in _ignored_by_the_tree()
    # And it tells the tree's own variables from CMake's.
    assert _readers("GGML_HIP") == ["ggml/CMakeLists.txt"] or "ggml/CMakeLists.txt" in _readers("GGML_HIP")
    assert (
        _readers("CMAKE_BUILD_RPATH_USE_ORIGIN") == []
        and "CMAKE_BUILD_RPATH_USE_ORIGIN" in _cmake_help_variables()
    )
