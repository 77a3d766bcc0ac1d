"""A TheRock dist tarball laid out exactly as TheRock's build makes it, with stand-in file contents.

Where each file sits comes from TheRock's build files (ROCm/TheRock 89553ce3:
``build_tools/build_tarballs.py`` runs ``tar cfz <tarball> .`` in the flattened
prefix, so every member starts with ``./`` and there is no top folder; the
artifacts' ``doc`` component takes ``**/share/doc/**``; each component's CMake
installs its license into ``share/doc/<project()>/``; the bundled system
libraries live under ``lib/rocm_sysdeps`` as ``librocm_sysdeps_<x>.so.N``, and
of them only xz installs its license). docs/supply-chain.md has the table.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

VERSION = "7.13.0a20260430"
# Real file -> its SONAME link (the dev .so links are not shipped in a bundle, so not made here).
LIBRARIES = {
    "lib/libamdhip64.so.7.13.0": "libamdhip64.so.7",
    "lib/libhsa-runtime64.so.1.18.0": "libhsa-runtime64.so.1",
    "lib/libamd_comgr.so.3.0.0": "libamd_comgr.so.3",
    "lib/librocblas.so.5.1.0": "librocblas.so.5",
    "lib/libhipblas.so.3.1.0": "libhipblas.so.3",
    "lib/libhipblaslt.so.1.1.0": "libhipblaslt.so.1",
    "lib/rocm_sysdeps/lib/librocm_sysdeps_z.so.1": None,
    "lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5": None,
    "lib/rocm_sysdeps/lib/librocm_sysdeps_zstd.so.1": None,
    "lib/rocm_sysdeps/lib/librocm_sysdeps_elf.so.1": None,
    "lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1": None,
    "lib/rocm_sysdeps/lib/librocm_sysdeps_drm.so.2": None,
    "lib/rocm_sysdeps/lib/librocm_sysdeps_drm_amdgpu.so.1": None,
}
DATA = (
    "lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat",
    "lib/hipblaslt/library/TensileLibrary_gfx1100.dat",
)
LICENSES = (
    "share/doc/hip/LICENSE.md",
    "share/doc/hsa-runtime64/LICENSE.md",
    "share/doc/amd_comgr/LICENSE.txt",
    "share/doc/amd_comgr/NOTICES.txt",
    "share/doc/rocblas/LICENSE.md",
    "share/doc/hipblas/LICENSE.md",
    "share/doc/hipblaslt/LICENSE.md",
    "share/doc/rocm-core/LICENSE.txt",
    "lib/rocm_sysdeps/share/doc/xz/COPYING",
    "lib/rocm_sysdeps/share/doc/xz/COPYING.0BSD",
    "lib/rocm_sysdeps/share/doc/xz/COPYING.GPLv2",
)
# Files of the doc component that are no licenses (the rule must not take them).
OTHER_DOCS = ("share/doc/amd_comgr/README.md", "lib/rocm_sysdeps/share/doc/xz/NEWS")


def license_text(rel: str) -> str:
    """Each license file's stand-in text names the file, so a wrong copy shows."""
    return f"license text of {rel}\n"


def make_therock_dist(staging: Path, tarball: Path) -> Path:
    """Lay the prefix out in ``staging`` and pack it as TheRock does (``tar cfz <tarball> .``)."""
    for rel, soname in LIBRARIES.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x7fELF " + rel.encode())
        if soname is not None:
            (path.parent / soname).symlink_to(path.name)
    for rel in DATA:
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_bytes(b"kernels")
    for rel in LICENSES:
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(license_text(rel))
    for rel in OTHER_DOCS:
        (staging / rel).write_text("not a license\n")
    (staging / ".info").mkdir()
    (staging / ".info" / "version").write_text(VERSION + "\n")
    (staging / "share" / "therock").mkdir(parents=True)
    (staging / "share" / "therock" / "therock_manifest.json").write_text("{}\n")
    subprocess.run(["tar", "cfz", str(tarball), "."], cwd=staging, check=True)
    return tarball
