"""Which license files cover one file an archive-installed toolchain (TheRock's tarball, a system ROCm) ships.

TheRock (read from its build at ROCm/TheRock 89553ce3; see docs/supply-chain.md) installs
every component's license with CMake's ``CMAKE_INSTALL_DOCDIR``: ``share/doc/<component>/``
under the prefix the component is installed to. The ROCm libraries sit at the top prefix
(``lib/libamdhip64.so.7``, ``share/doc/hip/LICENSE.md``); the bundled system libraries
("sysdeps") under ``lib/rocm_sysdeps`` (``lib/rocm_sysdeps/lib/librocm_sysdeps_liblzma.so.5``,
``lib/rocm_sysdeps/share/doc/xz/COPYING``). So a file is covered by:

1. the doc folders of the nearest prefix above it that has any (``share/doc``,
   ``share/licenses`` or ``licenses``): the component folder named by the file
   (the longest component name in its file name, or one of its folders,
   ``lib/rocblas/library/...`` -> ``rocblas``), or, for a library whose
   doc folder is named after its upstream project, the name map
   :data:`PROJECTS` (``liblzma`` -> ``xz``, ``libz`` -> ``zlib``, ...);
   outer prefixes are asked next;
2. else the license files at the top of the nearest such prefix (an install
   with one license for everything, a Homebrew keg);
3. else, for a mapped library TheRock ships without a license (zlib, zstd,
   bzip2, elfutils, numactl, libdrm), the declared source :data:`DECLARED`:
   the copyright file the building machine's Debian or Ubuntu package of the
   same upstream project carries, with the common license texts it refers to;
4. else nothing, and check-bundle refuses the bundle (fail closed: never
   "every license of the archive").

A Linux distribution's ROCm (``--rocm-path /usr`` on Debian) is dpkg's: each file's
package comes from ``dpkg-query -S`` and its license from that package's
``/usr/share/doc/<package>/copyright``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from pipeline.processes.groups import run_child

LICENSE_NAME = re.compile(r"^(?:licen[cs]e|copying|notice|eula)", re.IGNORECASE)
LICENSE_FOLDERS = ("share/doc", "share/licenses", "licenses")
# TheRock renames its bundled system libraries so they never clash with the host's.
SYSDEPS_PREFIX = "librocm_sysdeps_"
# A library's stem (lib, the sysdeps prefix and the .so suffix taken off) -> the doc folders its
# license may sit in, in order: the upstream project's name where it is not the library's.
PROJECTS: dict[str, tuple[str, ...]] = {
    "lzma": ("xz",),
    "z": ("zlib",),
    "elf": ("elfutils",),
    "dw": ("elfutils",),
    "asm": ("elfutils",),
    "numa": ("numactl",),
    "bz2": ("bzip2",),
    "zstd": ("zstd",),
    "drm": ("libdrm",),
    "drm_amdgpu": ("libdrm",),
    "atomic": ("libatomic",),
    # NVIDIA's redistributable CUDA (toolchain/cuda_redist.py): each archive's LICENSE under
    # licenses/<component>/, the component named for its package, not its library.
    **dict.fromkeys(("cudart", "cudart64_12", "cudart64_13"), ("cuda_cudart",)),
    **dict.fromkeys(
        ("cublas", "cublaslt", "cublas64_12", "cublas64_13", "cublaslt64_12", "cublaslt64_13"), ("libcublas",)
    ),
    # ROCR: hsa-runtime64 on Linux (its project() name), rocr where clr builds it, hsa-rocr in AMD's packages.
    "hsa-runtime64": ("hsa-runtime64", "rocr", "hsa-rocr"),
}
# Upstream projects whose license TheRock's tarball does not carry -> the Debian/Ubuntu packages of the
# same project whose /usr/share/doc/<package>/copyright holds it, first present wins.
DECLARED: dict[str, tuple[str, ...]] = {
    "zlib": ("zlib1g",),
    "zstd": ("libzstd1",),
    "bzip2": ("libbz2-1.0",),
    "elfutils": ("libelf1t64", "libelf1"),
    "numactl": ("libnuma1",),
    "libdrm": ("libdrm2", "libdrm-amdgpu1"),
    "xz": ("liblzma5",),
    "libatomic": ("libatomic1",),
}
DEBIAN_DOC = Path("/usr/share/doc")
_COMMON_LICENSES = re.compile(r"/usr/share/common-licenses/([A-Za-z0-9][A-Za-z0-9.+_-]*)")
_SUFFIX = re.compile(r"\.(?:so(?:\.\d+)*|dll|dylib)$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Covered:
    """License files for one file: paths relative to ``base``, and how they were chosen."""

    base: Path
    files: tuple[str, ...]
    source: str


def library_stem(name: str) -> str:
    """``librocm_sysdeps_liblzma.so.5`` -> ``lzma``; ``libhsa-runtime64.so.1`` -> ``hsa-runtime64``."""
    stem = _SUFFIX.sub("", name.lower()).removeprefix(SYSDEPS_PREFIX)
    return stem.removeprefix("lib")


def projects_of(name: str) -> tuple[str, ...] | None:
    """The doc folders a library's license must come from, when its name does not say them."""
    return PROJECTS.get(library_stem(name))


class InstallLicenses:
    """The license files of one install, read lazily, prefix by prefix."""

    def __init__(self, install: Path, declared_doc: Path = DEBIAN_DOC) -> None:
        self.install = install
        # Where the declared sources' packages keep their copyright files (this machine's /usr/share/doc).
        self.declared_doc = declared_doc

    @cache  # noqa: B019 - one instance per bundle; the install does not change while it is made
    def _components(self, prefix: str) -> dict[str, tuple[str, ...]]:
        """Component folder -> its license files (relative to the install), under ``prefix``'s doc folders."""
        found: dict[str, tuple[str, ...]] = {}
        for folder in LICENSE_FOLDERS:
            top = self.install / prefix / folder
            if not top.is_dir():
                continue
            for child in sorted(top.iterdir()):
                if child.is_dir() and child.name not in found:
                    files = tuple(
                        sorted(
                            p.relative_to(self.install).as_posix()
                            for p in child.rglob("*")
                            if p.is_file() and LICENSE_NAME.match(p.name)
                        )
                    )
                    if files:
                        found[child.name] = files
        return found

    @cache  # noqa: B019
    def _loose(self, prefix: str) -> tuple[str, ...]:
        """License files directly in ``prefix`` or directly in its doc folders (one license for all)."""
        tops = [self.install / prefix, *(self.install / prefix / f for f in LICENSE_FOLDERS)]
        return tuple(sorted(
            p.relative_to(self.install).as_posix() for top in tops if top.is_dir()
            for p in top.iterdir() if p.is_file() and LICENSE_NAME.match(p.name)
        ))  # fmt: skip

    def _prefixes(self, origin: PurePosixPath) -> Iterator[str]:
        """The folders above ``origin`` (nearest first, the install last) that hold license folders."""
        for parent in origin.parents:
            prefix = "" if str(parent) == "." else parent.as_posix()
            if self._components(prefix) or self._loose(prefix):
                yield prefix

    def covering(self, origin: str) -> Covered | None:
        """The license files of the file at ``origin`` (relative to the install), or None: see the module."""
        path = PurePosixPath(origin)
        name = path.name.lower()
        mapped = projects_of(name)
        folders = {p.lower() for p in path.parent.parts}
        prefixes = list(self._prefixes(path))
        for prefix in prefixes:
            components = self._components(prefix)
            if mapped is not None:
                chosen = next((c for c in mapped if c in components), None)
            else:
                named = [c for c in components if c.lower() in name] or [
                    c for c in components if c.lower() in folders
                ]
                chosen = max(named, key=len) if named else None
            if chosen is not None:
                return Covered(
                    base=self.install,
                    files=components[chosen],
                    source=f"{(prefix + '/') if prefix else ''}share/doc/{chosen}",
                )
        if mapped is None:
            for prefix in prefixes:
                if loose := self._loose(prefix):
                    return Covered(base=self.install, files=loose, source=f"the top of {prefix or '.'}")
            return None
        return declared(mapped, self.declared_doc)


def declared(projects: tuple[str, ...], doc: Path = DEBIAN_DOC) -> Covered | None:
    """The declared source of :data:`DECLARED` for the first of ``projects`` this machine has one for."""
    for project in projects:
        for package in DECLARED.get(project, ()):
            covered = debian_copyright(package, doc)
            if covered is not None:
                return Covered(
                    base=covered.base,
                    files=covered.files,
                    source=f"declared: {project}'s license from Debian's {package} package",
                )
    return None


def debian_copyright(package: str, doc: Path = DEBIAN_DOC) -> Covered | None:
    """``/usr/share/doc/<package>/copyright`` and the common license texts it refers to, if it is there."""
    copyright_file = doc / package / "copyright"
    if not copyright_file.is_file():
        return None
    base = doc.parent.parent  # /usr: the files are named share/doc/<package>/copyright, as in the install
    files = [copyright_file.relative_to(base).as_posix()]
    text = copyright_file.read_text(encoding="utf-8", errors="replace")
    common = doc.parent / "common-licenses"
    files += [
        (common / n).relative_to(base).as_posix()
        for n in sorted({m.rstrip(".") for m in _COMMON_LICENSES.findall(text)})
        if (common / n).is_file()
    ]
    return Covered(base=base, files=tuple(files), source=f"Debian's {package} package")


def dpkg_managed(install: Path) -> bool:
    """Whether ``install`` is this system's ``/usr``, whose files dpkg installed."""
    return (
        install.resolve() == Path("/usr")
        and Path("/var/lib/dpkg/status").is_file()
        and (shutil.which("dpkg-query") is not None)
    )


def dpkg_owner(path: Path) -> tuple[str, str | None] | None:
    """(package, version) dpkg says installed ``path`` (a merged-/usr file is also looked up without /usr)."""
    real = path.resolve()
    tries = [str(real)]
    if real.parts[:2] == ("/", "usr"):
        tries.append(str(Path("/", *real.parts[2:])))
    for candidate in tries:
        try:
            proc = run_child(["dpkg-query", "-S", candidate], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        line = next(
            (ln for ln in str(proc.stdout).splitlines() if ": " in ln and not ln.startswith("diversion")),
            None,
        )
        if proc.returncode == 0 and line:
            package = line.split(": ", 1)[0].split(",")[0].strip().split(":")[0]
            return package, _dpkg_version(package)
    return None


def _dpkg_version(package: str) -> str | None:
    try:
        proc = run_child(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return str(proc.stdout).strip() or None if proc.returncode == 0 else None
