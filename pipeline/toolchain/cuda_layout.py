"""Where things sit in a CUDA toolkit installed from NVIDIA's wheels (pure).

The 13.x wheels all unpack into one ``nvidia/cu13/`` tree (``bin/nvcc``,
``include/``, ``lib/``, ``nvvm/``). The libraries come only with their
versioned names (``libcudart.so.13``); CMake's FindCUDAToolkit looks for the
unversioned ``libcudart.so``, so the installer adds those links.

No wheel carries the driver's link stub (a full toolkit's
``lib64/stubs/libcuda.so``), and FindCUDAToolkit makes ``CUDA::cuda_driver``
(which llama.cpp's ggml-cuda links) only when it finds one. The installer
makes it from the toolkit's own ``cuda.h``: every driver entry point the
header declares, under every name a program compiled against that header can
import (``cuMemAlloc`` is ``cuMemAlloc_v2``, a per-thread-stream build's
``cuMemcpy`` is ``cuMemcpy_ptds``), each answering ``CUDA_ERROR_NO_DEVICE``.
It is for linking only: the real ``libcuda.so.1`` comes with the driver.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

# The libraries llama.cpp's CUDA backend links: FindCUDAToolkit looks each up by its unversioned name.
UNVERSIONED_LIBS = ("cudart", "cublas", "cublasLt", "nvrtc")
# The driver's link stub, relative to the toolkit tree, where FindCUDAToolkit looks (``<lib>/stubs``).
DRIVER_STUB = "lib/stubs/libcuda.so"
# The driver library's soname: what a program linked against the stub needs at run time.
DRIVER_SONAME = "libcuda.so.1"
# CUresult CUDA_ERROR_NO_DEVICE (cuda.h): what every entry point of a stub or stand-in answers.
NO_DEVICE = 100

# `CUresult CUDAAPI cuInit(unsigned int Flags);` -> cuInit
_DECLARED = re.compile(r"\bCUDAAPI\s+(cu[A-Za-z0-9_]+)\s*\(")
# `#define cuMemAlloc cuMemAlloc_v2`, `#define cuMemcpy __CUDA_API_PTDS(cuMemcpy)`
_RENAMED = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+cu[A-Za-z0-9_]+[ \t]+(?:(__CUDA_API_PT(?:DS|SZ))\()?[ \t]*"
    r"(cu[A-Za-z0-9_]+)[ \t]*\)?[ \t]*$",
    re.MULTILINE,
)
_SUFFIX = {"__CUDA_API_PTDS": "_ptds", "__CUDA_API_PTSZ": "_ptsz"}
_SYMBOL = re.compile(r"^cu[A-Za-z0-9_]+$")


def wheel_tree(version: str) -> str:
    """The folder the wheels of CUDA ``version`` share, relative to the install: ``nvidia/cu13``."""
    major = version.split(".", 1)[0]
    if not major.isdigit():
        raise ValueError(f"not a CUDA version: {version!r}")
    return f"nvidia/cu{major}"


def install_folder(version: str, os_name: str, arch: str = "x64") -> str:
    """The toolchain-cache folder of one pinned toolkit: ``cuda-13.2.86-linux``, ``cuda-13.4.59-windows-arm64``
    (another arch's target libraries are another install)."""
    return f"cuda-{version}-{os_name}" + ("" if arch == "x64" else f"-{arch}")


# Where a toolkit for another arch than its compiler's keeps what a cross build reads, per (os, arch): llama.cpp's
# cmake/arm64-windows-msvc-cuda.cmake takes ${CUDA_ROOT}/bin/nvcc.exe (the x64 compiler) and points
# FindCUDAToolkit at ${CUDA_ROOT}/lib/arm64/{cudart,cublas,cublasLt,cuda}.lib; the DLLs a bundle ships sit in
# bin/arm64 (upstream's release.yml copies cudart64_*, cublas64_*, cublasLt64_* from there). Each file with
# the component whose archive carries it. {major}: the toolkit's major version (the DLLs' suffix).
CROSS_LAYOUT: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("windows", "arm64"): (
        ("bin/nvcc.exe", "cuda_nvcc"),
        ("lib/arm64/cudart.lib", "cuda_cudart"),
        ("lib/arm64/cuda.lib", "cuda_cudart"),
        ("lib/arm64/cublas.lib", "libcublas"),
        ("lib/arm64/cublasLt.lib", "libcublas"),
        ("bin/arm64/cudart64_{major}.dll", "cuda_cudart"),
        ("bin/arm64/cublas64_{major}.dll", "libcublas"),
        ("bin/arm64/cublasLt64_{major}.dll", "libcublas"),
    ),
}


def cross_layout(os_name: str, arch: str, version: str) -> tuple[tuple[str, str], ...]:
    """(path under the toolkit root, component) a cross toolkit for ``os_name``/``arch`` must hold; () when the
    pair has no cross layout."""
    major = version.split(".", 1)[0]
    return tuple(
        (path.format(major=major), component) for path, component in CROSS_LAYOUT.get((os_name, arch), ())
    )


def missing_layout(files: Iterable[str], expected: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (path, component) of ``expected`` absent from ``files`` (paths under the root, '/'-separated; Windows
    names compared without case)."""
    have = {f.lower() for f in files}
    return [(path, component) for path, component in expected if path.lower() not in have]


def unversioned_links(file_names: Iterable[str], libs: Iterable[str] = UNVERSIONED_LIBS) -> dict[str, str]:
    """``{"libcudart.so": "libcudart.so.13", ...}`` for the ``libs`` found in ``file_names``.

    The link points at the shortest versioned name (the soname, ``.so.13``,
    rather than ``.so.13.2.86``). A library absent from ``file_names`` is
    absent from the answer; an unversioned name that already exists needs no link.
    """
    names = set(file_names)
    links: dict[str, str] = {}
    for lib in libs:
        plain = f"lib{lib}.so"
        if plain in names:
            continue
        pattern = re.compile(rf"^{re.escape(plain)}\.\d+(?:\.\d+)*$")
        versioned = sorted((n for n in names if pattern.match(n)), key=lambda n: (n.count("."), n))
        if versioned:
            links[plain] = versioned[0]
    return links


def driver_entry_points(cuda_h: str) -> tuple[str, ...]:
    """Every driver symbol a program compiled against ``cuda_h`` (cuda.h's text) may import, sorted.

    The declared names (``cuInit``), what cuda.h's ``#define`` renames them to
    (``cuMemAlloc_v2``), and for the per-thread default stream variants both
    spellings (``cuMemcpyHtoD_v2`` and ``cuMemcpyHtoD_v2_ptds``).
    """
    names = set(_DECLARED.findall(cuda_h))
    for wrapper, target in _RENAMED.findall(cuda_h):
        names.add(target)
        if wrapper:
            names.add(target + _SUFFIX[wrapper])
    return tuple(sorted(names))


def no_device_source(symbols: Iterable[str]) -> str:
    """C source of a library exporting ``symbols``, each a function answering ``CUDA_ERROR_NO_DEVICE``.

    The driver's own functions take arguments and return ``CUresult``; a
    function that ignores its arguments and returns an int is what a caller
    of any of them sees (the System V and Windows x64 calling conventions
    leave unused argument registers alone).
    """
    lines = ["/* Made by the pipeline: driver entry points that answer CUDA_ERROR_NO_DEVICE. */"]
    for name in sorted(set(symbols)):
        if not _SYMBOL.match(name):
            raise ValueError(f"not a CUDA driver symbol: {name!r}")
        lines.append(f"int {name}(void) {{ return {NO_DEVICE}; }}")
    return "\n".join(lines) + "\n"


def pinned_identity(version: str, wheels: Iterable[tuple[str, str]], host_identity: str) -> str:
    """The identity of a toolkit installed from pinned wheels, known before anything is installed.

    ``cuda-13.2.86-<digest>-gcc-12.2.0``: the toolkit's version, the first 8
    hex digits of the sha256 of every ``name==version sha256`` line (so a
    re-pinned wheel, cuBLAS say, changes it), and the host compiler's identity.
    Not yet key-safe (``safe_identity`` makes it so).
    """
    lines = "".join(f"{requirement} {sha.lower()}\n" for requirement, sha in sorted(wheels))
    return f"cuda-{version}-{hashlib.sha256(lines.encode()).hexdigest()[:8]}-{host_identity}"
