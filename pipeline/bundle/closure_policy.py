"""What a bundle may leave to the machine it runs on, and what it must carry: data, no I/O.

A bundle carries every shared library its programs need except the base
system. The base system is an allowlist per OS, in the spirit of auditwheel's
manylinux policies: the glibc family, the GCC runtime every distribution
ships (libstdc++, libgcc_s, libgomp), the Vulkan loader and the GPU driver's
own libraries (libcuda). Everything else a program needs must be in the
bundle, copied from the toolchain (:mod:`pipeline.bundle.closure`).

Where each backend's toolchain keeps the runtime libraries, and which data
folders go with them, is the backend's own (:mod:`pipeline.backends`).
"""

from __future__ import annotations

import fnmatch
import re

# The glibc floor of a Linux leg when matrix.toml names none: Ubuntu 22.04's glibc.
DEFAULT_GLIBC_MAX = "2.35"

LINUX_BASE_SYSTEM: tuple[str, ...] = (
    # glibc (its loader and libmvec differ per architecture: LINUX_ARCH_BASE_SYSTEM)
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libresolv.so.2",
    # The GCC runtime (libgomp: GGML's OpenMP; upstream's Ubuntu bundles rely on it too)
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libgomp.so.1",
    # The Vulkan loader: installed with the GPU driver, never shipped by an application
    "libvulkan.so.1",
    # The GPU driver's own libraries (the CUDA driver API, NVML)
    "libcuda.so.1",
    "libnvidia-ml.so.1",
    # OpenSSL 3, for llama.cpp's HTTPS (model downloads, the server's TLS): upstream's Ubuntu
    # release links the system libssl too, and Ubuntu 22.04 (the Linux legs' floor) ships libssl3
    # in its base image. Shipping a copy would pin a TLS library the bundle can never patch;
    # BoringSSL built in (the release job's way) is fetched at configure time, and legs build
    # offline from a pinned source. docs/matrix.md, "Flags per backend".
    "libssl.so.3",
    "libcrypto.so.3",
)

WINDOWS_BASE_SYSTEM: tuple[str, ...] = (
    "kernel32.dll",
    "user32.dll",
    "gdi32.dll",
    "advapi32.dll",
    "shell32.dll",
    "shlwapi.dll",
    "ole32.dll",
    "oleaut32.dll",
    "ws2_32.dll",
    "bcrypt.dll",
    "crypt32.dll",
    "secur32.dll",
    "iphlpapi.dll",
    "psapi.dll",
    "dbghelp.dll",
    "winmm.dll",
    "version.dll",
    "ntdll.dll",
    "ucrtbase.dll",
    "msvcrt.dll",
    # The Universal CRT's API sets
    "api-ms-win-*.dll",
    # The Visual C++ runtime: part of every supported Windows image's redistributable
    "vcruntime140.dll",
    "vcruntime140_1.dll",
    "msvcp140*.dll",
    "vcomp140.dll",
    # Drivers
    "vulkan-1.dll",
    "nvcuda.dll",
)

# glibc's dynamic loader is named for its architecture; libmvec (vector math) is x86-64's only in
# Ubuntu 22.04's glibc 2.35 (aarch64 got one in 2.38): an arm64 bundle needing it would not load there.
LINUX_ARCH_BASE_SYSTEM: dict[str, tuple[str, ...]] = {
    "x64": ("ld-linux-x86-64.so.2", "libmvec.so.1"),
    "arm64": ("ld-linux-aarch64.so.1",),
}

# Debian's and Ubuntu's multiarch folder per architecture: where a distribution's toolkit at /usr
# (--cuda-path /usr, --rocm-path /usr) keeps its libraries, under lib/.
LINUX_MULTIARCH: dict[str, str] = {"x64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}

# macOS: a library is named by its install name, a path. What the OS itself keeps there (libSystem,
# libc++, the frameworks: Metal, Foundation, Accelerate) is the base system; anything else, and every
# @rpath/@loader_path name, must be in the bundle.
MACOS_BASE_PREFIXES: tuple[str, ...] = ("/usr/lib/", "/System/Library/")

BASE_SYSTEM: dict[tuple[str, str], tuple[str, ...]] = {
    **{("linux", arch): LINUX_BASE_SYSTEM + extra for arch, extra in LINUX_ARCH_BASE_SYSTEM.items()},
    # The same DLL names on x64 and arm64 Windows.
    ("windows", "x64"): WINDOWS_BASE_SYSTEM,
    ("windows", "arm64"): WINDOWS_BASE_SYSTEM,
}


def is_base_system(os_name: str, library: str, arch: str = "x64") -> bool:
    """Is ``library`` (a DT_NEEDED or DLL name, a Mach-O install name) part of the base system of
    ``os_name`` on ``arch``?

    Windows names are case-insensitive; Linux names are exact; macOS install names are paths.
    """
    if os_name == "macos":
        return library.startswith(MACOS_BASE_PREFIXES)
    patterns = BASE_SYSTEM.get((os_name, arch), ())
    if os_name == "windows":
        name = library.lower()
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)
    return library in patterns


_GFX = re.compile(r"gfx[0-9a-f]+", re.IGNORECASE)


def keeps_data_file(name: str, targets: tuple[str, ...]) -> bool:
    """Does a kernel-library file belong in a bundle for ``targets``?

    Files naming no GPU target (``TensileLibrary_fallback.dat``) go in every
    bundle; a file naming targets goes in when one of them is the leg's.
    """
    named = {m.group(0).lower() for m in _GFX.finditer(name)}
    if not named:
        return True
    return bool(named & {t.lower() for t in targets})


def is_origin_relative(entry: str) -> bool:
    """A RUNPATH entry the loader resolves inside the bundle: ``$ORIGIN`` or ``${ORIGIN}`` first."""
    return entry == "$ORIGIN" or entry == "${ORIGIN}" or entry.startswith(("$ORIGIN/", "${ORIGIN}/"))


def origin_runpath(own_folder: str, folders: set[str]) -> str:
    """The RUNPATH of a file in ``own_folder`` that needs libraries from ``folders`` (bundle-relative).

    ``$ORIGIN`` first, then each other folder relative to it, sorted: the same
    inputs give the same bytes.
    """
    entries = ["$ORIGIN"]
    depth = own_folder.count("/") + 1 if own_folder else 0
    for folder in sorted(folders - {own_folder}):
        entries.append(("$ORIGIN/" + "../" * depth + folder).rstrip("/"))
    return ":".join(entries)
