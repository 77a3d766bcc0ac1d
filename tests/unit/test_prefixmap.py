"""The prefix maps added to every compiler's flags, and kept out of manifests (pure)."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

from pipeline.toolchain.prefixmap import prefix_map_flags, quote_flag, strip_prefix_maps, with_prefix_map

WS = PurePosixPath("/home/runner/work/out")
SRC = WS / "src" / "llama.cpp"
BUILD = WS / "cpu" / "build"
MAPS = [
    "-ffile-prefix-map=/home/runner/work/out=.",
    "-ffile-prefix-map=/home/runner/work/out/src/llama.cpp=.",
    "-ffile-prefix-map=../../src/llama.cpp=.",
    "-ffile-prefix-map=/home/runner/work/out/cpu/build=.",
]


def test_workspace_source_both_ways_then_build() -> None:
    assert prefix_map_flags(WS, SRC, BUILD) == MAPS


def test_a_source_that_holds_the_build_folder() -> None:
    # `--source .` with out/ inside the tree: the workspace is the source itself.
    src = PurePosixPath("/w/llama.cpp")
    assert prefix_map_flags(src, src, src / "out" / "cpu" / "build") == [
        "-ffile-prefix-map=/w/llama.cpp=.",
        "-ffile-prefix-map=../../..=.",
        "-ffile-prefix-map=/w/llama.cpp/out/cpu/build=.",
    ]


def test_a_root_workspace_is_not_mapped() -> None:
    # Mapping "/" would rewrite system header paths too.
    flags = prefix_map_flags(PurePosixPath("/"), PurePosixPath("/src"), PurePosixPath("/out/b"))
    assert flags == [
        "-ffile-prefix-map=/src=.",
        "-ffile-prefix-map=../../src=.",
        "-ffile-prefix-map=/out/b=.",
    ]


def test_windows_maps_both_spellings() -> None:
    ws = PureWindowsPath(r"D:\a\out")
    flags = prefix_map_flags(ws, ws / "src", ws / "b")
    assert flags == [
        r"-ffile-prefix-map=D:\a\out=.",
        "-ffile-prefix-map=D:/a/out=.",
        r"-ffile-prefix-map=D:\a\out\src=.",
        "-ffile-prefix-map=D:/a/out/src=.",
        r"-ffile-prefix-map=..\src=.",
        "-ffile-prefix-map=../src=.",
        r"-ffile-prefix-map=D:\a\out\b=.",
        "-ffile-prefix-map=D:/a/out/b=.",
    ]
    # Another drive has no relative spelling.
    assert prefix_map_flags(ws, PureWindowsPath("E:/src"), ws / "b")[2:5] == [
        r"-ffile-prefix-map=E:\src=.",
        "-ffile-prefix-map=E:/src=.",
        r"-ffile-prefix-map=D:\a\out\b=.",
    ]


def test_each_language_gets_its_flags_variable() -> None:
    flags = ["-ffile-prefix-map=/w=."]
    args = with_prefix_map(["-G", "Ninja", "-DGGML_HIP=ON"], ["C", "CXX", "HIP"], flags)
    assert args == [
        "-G",
        "Ninja",
        "-DGGML_HIP=ON",
        "-DCMAKE_C_FLAGS=-ffile-prefix-map=/w=.",
        "-DCMAKE_CXX_FLAGS=-ffile-prefix-map=/w=.",
        "-DCMAKE_HIP_FLAGS=-ffile-prefix-map=/w=.",
    ]


def test_nvcc_gets_only_the_relative_maps_for_its_host_compiler() -> None:
    """ccache hashes -Xcompiler=... verbatim: an absolute folder in it would miss in any other folder."""
    flags = [
        "-ffile-prefix-map=/w=.",
        "-ffile-prefix-map=../src/llama.cpp=.",
        "-ffile-prefix-map=/w/b=.",
        "-ffile-prefix-map=C:\\w\\b=.",
        "-ffile-prefix-map=C:/w/b=.",
    ]
    assert with_prefix_map([], ["CXX", "CUDA"], flags) == [
        # A backslash is special to the POSIX shell Ninja runs: that flag is one quoted word.
        "-DCMAKE_CXX_FLAGS=-ffile-prefix-map=/w=. -ffile-prefix-map=../src/llama.cpp=. -ffile-prefix-map=/w/b=. "
        '"-ffile-prefix-map=C:\\\\w\\\\b=." -ffile-prefix-map=C:/w/b=.',
        "-DCMAKE_CUDA_FLAGS=-Xcompiler=-ffile-prefix-map=../src/llama.cpp=.",
    ]
    # No relative map at all: CUDA's flags are left alone.
    assert with_prefix_map([], ["CUDA"], ["-ffile-prefix-map=/w=."]) == []


def test_flags_already_given_are_kept_and_the_last_one_extended() -> None:
    args = ["-DCMAKE_CXX_FLAGS=-O1", "-DX=1", "-DCMAKE_CXX_FLAGS:STRING=-Wall -g", "-DCMAKE_C_FLAGS="]
    assert with_prefix_map(args, ["C", "CXX"], ["-ffile-prefix-map=/w=."]) == [
        "-DCMAKE_CXX_FLAGS=-O1",
        "-DX=1",
        "-DCMAKE_CXX_FLAGS:STRING=-Wall -g -ffile-prefix-map=/w=.",
        "-DCMAKE_C_FLAGS=-ffile-prefix-map=/w=.",
    ]


def test_no_flags_or_unknown_languages_change_nothing() -> None:
    assert with_prefix_map(["-G", "Ninja"], ["C"], []) == ["-G", "Ninja"]
    assert with_prefix_map([], ["Fortran", "C", "C"], ["-ffile-prefix-map=/w=."]) == [
        "-DCMAKE_C_FLAGS=-ffile-prefix-map=/w=."
    ]


def test_strip_undoes_with() -> None:
    base = ["-G", "Ninja", "-DCMAKE_CXX_FLAGS=-Wall -g", "-DCMAKE_CUDA_ARCHITECTURES=75"]
    mapped = with_prefix_map(base, ["C", "CXX", "CUDA"], MAPS)
    assert mapped != base
    assert strip_prefix_maps(mapped) == base


def test_a_folder_with_a_space_is_one_quoted_word_on_posix() -> None:
    ws = PurePosixPath("/home/me/my dir/out")
    maps = prefix_map_flags(ws, ws / "src" / "llama.cpp", ws / "cpu" / "build")
    args = with_prefix_map(["-G", "Ninja"], ["C", "CUDA"], maps)
    assert args[2] == (
        '-DCMAKE_C_FLAGS="-ffile-prefix-map=/home/me/my dir/out=." '
        '"-ffile-prefix-map=/home/me/my dir/out/src/llama.cpp=." '
        "-ffile-prefix-map=../../src/llama.cpp=. "
        '"-ffile-prefix-map=/home/me/my dir/out/cpu/build=."'
    )
    # nvcc gets only the folder-independent map (its -Xcompiler flags are hashed verbatim).
    assert args[3] == "-DCMAKE_CUDA_FLAGS=-Xcompiler=-ffile-prefix-map=../../src/llama.cpp=."
    assert strip_prefix_maps(args) == ["-G", "Ninja"]


def test_shell_specials_are_escaped_and_non_ascii_is_left_alone() -> None:
    assert quote_flag("-ffile-prefix-map=/w/café=.", windows=False) == "-ffile-prefix-map=/w/café=."
    # The shell's escapes inside double quotes, then Ninja's "$$" for a "$".
    assert quote_flag('-ffile-prefix-map=/w/$HOME "x" `id`\\=.', windows=False) == (
        '"-ffile-prefix-map=/w/\\$$HOME \\"x\\" \\`id\\`\\\\=."'
    )
    assert quote_flag("-ffile-prefix-map=C:\\a$b=.", windows=True) == "-ffile-prefix-map=C:\\a$$b=."


def test_windows_folders_with_spaces_are_quoted_by_msvc_rules() -> None:
    ws = PureWindowsPath(r"C:\Users\Jürgen Müller\out")
    maps = prefix_map_flags(ws, ws / "src", ws / "b")
    args = with_prefix_map([], ["C"], maps, windows=True)
    assert args == [
        r'-DCMAKE_C_FLAGS="-ffile-prefix-map=C:\Users\Jürgen Müller\out=." '
        r'"-ffile-prefix-map=C:/Users/Jürgen Müller/out=." '
        r'"-ffile-prefix-map=C:\Users\Jürgen Müller\out\src=." '
        r'"-ffile-prefix-map=C:/Users/Jürgen Müller/out/src=." '
        r"-ffile-prefix-map=..\src=. -ffile-prefix-map=../src=. "
        r'"-ffile-prefix-map=C:\Users\Jürgen Müller\out\b=." '
        r'"-ffile-prefix-map=C:/Users/Jürgen Müller/out/b=."'
    ]
    # Backslashes stay as they are (MSVC reads them literally before anything but a quote).
    assert quote_flag(r"-ffile-prefix-map=D:\a\out=.", windows=True) == r"-ffile-prefix-map=D:\a\out=."
    assert strip_prefix_maps(args) == []
