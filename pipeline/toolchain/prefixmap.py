"""Map the build's folders out of compiled files, so a bundle does not depend on where it was built.

A release engineer reproduces a nightly in another folder than the runner's.
Whatever path reaches the compiler ends up in the objects: ``__FILE__``
(llama.cpp's ``GGML_ASSERT`` messages), ``__builtin_FILE()``, and the debug
info's ``DW_AT_comp_dir`` (the compiler's working directory, always
absolute). GCC's and Clang's ``-ffile-prefix-map=OLD=NEW`` rewrites all of
them. Three maps, in this order:

1. the workspace (ccache's ``base_dir``) -> ``.``: any other path under it;
2. the source tree -> ``.``, absolute and as seen from the build directory:
   ccache's base_dir rewriting hands the compiler *relative* paths
   (``../src/llama.cpp/ggml/src/ggml.c``; a leg always compiles its tree
   from the same place beside its build folder, pipeline/leg/layout.py, so
   that spelling does not change with the depth of the output folder); both
   spellings become ``./ggml/src/ggml.c``;
3. the build directory -> ``.``: ``DW_AT_comp_dir``.

GCC takes the last matching map and Clang the longest, so the more specific
maps come later (a build directory inside the source tree is mapped by its
own entry under both). ccache keeps hitting across folders although the
maps name them: it leaves the OLD half of a prefix map out of its hash
(checked with the pinned ccache 4.14: tests/integration/test_prefix_map.py).

nvcc is the exception: the maps reach its host compiler as
``-Xcompiler=-ffile-prefix-map=...``, an argument ccache neither recognises
nor rewrites, so an absolute folder in it is hashed as it is and a build in
another folder missed every ``.cu`` unit. nvcc gets only the maps whose OLD
half is relative (the source as seen from the build directory): ccache's
base_dir rewriting hands nvcc relative paths to everything under the
workspace, so those are the only spellings its host compiler sees
(``DW_AT_comp_dir`` aside, which a Release build has none of).

The maps are the pipeline's own, like the ccache launcher, and name folders
of the machine: :func:`strip_prefix_maps` takes them out of the CMake
arguments a bundle's manifest records. Pure: every path is a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath, PurePosixPath, PureWindowsPath

FLAG = "-ffile-prefix-map="
# Languages whose compiler takes GCC-style flags directly (the HIP compiler is clang).
_DIRECT = ("C", "CXX", "HIP", "OBJC", "OBJCXX")
# nvcc hands host-compiler flags on through -Xcompiler.
_THROUGH_NVCC = ("CUDA",)
_NVCC_FLAG = "-Xcompiler=" + FLAG
_FLAGS_ARG = re.compile(r"^(-DCMAKE_[A-Za-z]+_FLAGS(?::[A-Z]+)?=)(.*)$", re.DOTALL)


def _spellings(path: str, windows: bool) -> list[str]:
    # CMake hands Windows compilers forward slashes; the working directory has backslashes.
    return list(dict.fromkeys([path, path.replace("\\", "/")] if windows else [path]))


def _relative(target: PurePath, start: PurePath) -> str | None:
    """``target`` as seen from ``start`` (``../../src``), in their own flavour; None across drives."""
    if target.anchor != start.anchor:
        return None
    common = 0
    for a, b in zip(target.parts, start.parts, strict=False):
        if a != b:
            break
        common += 1
    parts = [".."] * (len(start.parts) - common) + list(target.parts[common:])
    return str(type(target)(*parts)) if parts else None


def prefix_map_flags(workspace: PurePath, source_tree: PurePath, build: PurePath) -> list[str]:
    """The ``-ffile-prefix-map`` flags for a build of ``source_tree`` in ``build`` under ``workspace``.

    A filesystem root is never mapped (it would rewrite system header paths too).
    """
    windows = "\\" in str(workspace) or bool(workspace.drive)
    maps: list[str] = []
    for folder in (workspace, source_tree):
        if folder.parent != folder:
            maps.extend(_spellings(str(folder), windows))
    relative = _relative(source_tree, build)
    if relative:
        maps.extend(_spellings(relative, windows))
    if build.parent != build:
        maps.extend(_spellings(str(build), windows))
    return [f"{FLAG}{old}=." for old in dict.fromkeys(maps)]


# Characters a POSIX shell (Ninja runs each command through /bin/sh -c) would split on or expand.
_SHELL_SPECIAL = re.compile(r"[\s'\"\\$`&|;<>()*?\[\]#~!{}^]")
_WINDOWS_SPECIAL = re.compile(r'[\s"^&|<>()%!]')
# One word of a flags string: unquoted characters and "quoted" runs.
_WORD = re.compile(r'(?:"(?:\\.|[^"\\])*"|[^\s"])+')


def quote_flag(flag: str, *, windows: bool) -> str:
    """``flag`` as one word of a ``CMAKE_<LANG>_FLAGS`` string.

    CMake puts that string verbatim into every compile command, which Ninja
    runs through ``/bin/sh`` (POSIX) or hands to the compiler's own
    command-line parser (Windows, MSVC rules): a folder with a space
    (``/home/me/my dir``) must be quoted, or the compiler gets half a path.
    Double quotes work under both; inside them the shell still expands
    ``$``, backquotes and backslashes, so those are escaped on POSIX. Last,
    Ninja (the pipeline's generator; CMake copies the flags into
    ``build.ninja`` as they are) reads ``$`` as its own escape: ``$$``.
    """
    return _quoted(flag, windows=windows).replace("$", "$$")


def _quoted(flag: str, *, windows: bool) -> str:
    if windows:
        if not _WINDOWS_SPECIAL.search(flag):
            return flag
        # Backslashes are literal under MSVC's rules unless a quote follows; the flag ends in "=.".
        return '"' + flag.replace('"', '\\"') + '"'
    if not _SHELL_SPECIAL.search(flag):
        return flag
    return '"' + re.sub(r'([\\"$`])', r"\\\1", flag) + '"'


def _is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def _language_flags(lang: str, flags: Sequence[str], windows: bool) -> str:
    if lang in _THROUGH_NVCC:
        # Only the folder-independent maps: nvcc's are hashed verbatim (see the module docstring).
        relative = [
            f for f in flags if not (f.startswith(FLAG) and _is_absolute(f[len(FLAG) :].rsplit("=", 1)[0]))
        ]
        return " ".join(f"-Xcompiler={quote_flag(flag, windows=windows)}" for flag in relative)
    return " ".join(quote_flag(flag, windows=windows) for flag in flags)


def with_prefix_map(
    args: Sequence[str], languages: Sequence[str], flags: Sequence[str], *, windows: bool = False
) -> list[str]:
    """``args`` with ``flags`` added to ``CMAKE_<LANG>_FLAGS`` of each language.

    A ``-DCMAKE_<LANG>_FLAGS[:TYPE]=...`` already in ``args`` keeps its flags,
    with the maps appended to its last occurrence (CMake takes the last one);
    otherwise one is added at the end. Languages whose compiler takes no
    GCC-style flags are left as they are. Each flag is quoted for the build
    machine's command line (``windows``: MSVC's rules, else the shell's).
    """
    result = list(args)
    if not flags:
        return result
    for lang in dict.fromkeys(languages):
        if lang not in _DIRECT and lang not in _THROUGH_NVCC:
            continue
        extra = _language_flags(lang, flags, windows)
        if not extra:
            continue
        pattern = re.compile(rf"^-DCMAKE_{lang}_FLAGS(?::[A-Z]+)?=")
        hits = [i for i, arg in enumerate(result) if pattern.match(arg)]
        if hits:
            current = result[hits[-1]]
            result[hits[-1]] = current + extra if current.endswith("=") else f"{current} {extra}"
        else:
            result.append(f"-DCMAKE_{lang}_FLAGS={extra}")
    return result


def strip_prefix_maps(args: Sequence[str]) -> list[str]:
    """``args`` without any prefix map; a flags argument left empty is dropped."""
    result: list[str] = []
    for arg in args:
        match = _FLAGS_ARG.match(arg)
        if not match or (FLAG not in arg):
            result.append(arg)
            continue
        # A quoted map ("-ffile-prefix-map=/my dir=.") is one word: quotes are read, not split on.
        words = _WORD.findall(match.group(2))
        kept = [w for w in words if not w.replace('"', "").startswith((FLAG, _NVCC_FLAG))]
        if kept:
            result.append(match.group(1) + " ".join(kept))
    return result
