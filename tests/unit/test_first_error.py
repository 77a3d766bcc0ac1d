"""The first real error of a failed configure or build, as one line, from real tools' outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.leg.first_error import MAX_MESSAGE, first_error, first_sentence

DATA = Path(__file__).parent / "data" / "first_error"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # A target linking an imported target nobody made (the real tree's CUDA::cuda_driver without a stub).
        (
            "cmake_missing_target.txt",
            'CMake Error at CMakeLists.txt:4 (target_link_libraries): Target "ggml-cuda" links to: '
            "CUDA::cuda_driver but the target was not found",
        ),
        # A package config the pinned CMake refuses (Debian's hip-config.cmake asks for 3.3), and who asked for it.
        (
            "cmake_refused_package_config.txt",
            "CMake Error at pkg/lib/cmake/oldpkg/oldpkg-config.cmake:1 (cmake_minimum_required): "
            "Compatibility with CMake < 3.5 has been removed from CMake (called from CMakeLists.txt:3 (find_package))",
        ),
        # A warning first: the error is what the line names (ggml-hip's own check, as the tree words it).
        (
            "cmake_warning_then_fatal_error.txt",
            "CMake Error at CMakeLists.txt:5 (message): At least ROCM/HIP V6.1 is required",
        ),
        (
            "cmake_missing_ninja.txt",
            "CMake Error at CMakeLists.txt:2 (project): Running '/nonexistent/ninja' '--version' failed with: "
            "no such file or directory",
        ),
        # Ninja's FAILED line and the command come first; the compiler's error is the cause.
        (
            "ninja_gcc_compile_error.txt",
            "/tmp/i26/err/t3/bad.cpp:4:7: error: \u2018LayerSettingEXT\u2019 is not a member of \u2018vk\u2019",
        ),
        (
            "clang_compile_error.txt",
            "t3/bad.cpp:4:7: error: no type named 'LayerSettingEXT' in namespace 'vk'",
        ),
        ("nvcc_compile_error.txt", 't3/bad.cpp(4): error: namespace "vk" has no member "LayerSettingEXT"'),
        ("gcc_missing_header.txt", "f.c:1:10: fatal error: nothere.h: No such file or directory"),
        # The linker's own line, not collect2's summary after it.
        ("ld_undefined_reference.txt", "m.c:(.text+0x5): undefined reference to `foo'"),
        ("lld_undefined_symbol.txt", "ld.lld: error: undefined symbol: foo"),
    ],
)
def test_the_first_real_error_of_real_outputs(name: str, expected: str) -> None:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines(keepends=True)
    assert first_error(lines) == expected


def test_only_a_later_error_without_location_stands_in() -> None:
    assert first_error(
        ["[1/2] Building C object a.o\n", "ninja: error: loading 'build.ninja': No such file or directory\n"]
    ) == ("ninja: error: loading 'build.ninja': No such file or directory")
    # A located error after it still wins: it is the cause, the other a summary.
    assert first_error(
        ["collect2: error: ld returned 1 exit status\n", "x.c:3:1: error: expected ';'\n"]
    ) == ("x.c:3:1: error: expected ';'")
    assert first_error(["-- Configuring done\n", "warning: unused\n"]) is None


def test_a_cmake_error_at_the_end_of_the_output() -> None:
    assert first_error(["CMake Error at CMakeLists.txt:9 (message):\n", "  Boom.\n"]) == (
        "CMake Error at CMakeLists.txt:9 (message): Boom"
    )


def test_first_sentence() -> None:
    assert first_sentence("  Compatibility with CMake < 3.5 has been\n removed.  Update it.") == (
        "Compatibility with CMake < 3.5 has been removed"
    )
    long = first_sentence("x" * 1000)
    assert len(long) == MAX_MESSAGE and long.endswith("...")
