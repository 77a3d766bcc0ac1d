"""A stand-in NVIDIA driver for check-bundle's smoke run on a machine that has none.

A CUDA bundle's ``libggml-cuda.so`` needs ``libcuda.so.1``, the driver's own
library: no bundle ships it (check-bundle refuses one that does), and on a
machine without an NVIDIA driver the module cannot load, so the check could
not tell a broken bundle from a missing driver. There, check-bundle makes a
stand-in: a ``libcuda.so.1`` exporting the driver entry points the bundle's
files import (read from their dynamic symbol tables), each answering
``CUDA_ERROR_NO_DEVICE``, plus the two the CUDA runtime looks up by name
when it starts (``cuDriverGetVersion``, reporting the runtime's own major
release, and ``cuGetProcAddress``, which hands out "no device" for every
name). It is compiled into a folder of its own, outside the unpacked
bundle and beside nothing that ships, and only the smoke run's programs
see it (``LD_LIBRARY_PATH`` naming that one folder, so every other library
still resolves through the bundle's own RUNPATH). The module must then
load, and ggml must report no CUDA device. Where the machine's loader finds
a real ``libcuda.so.1``, no stand-in is made: the real driver is used.
"""

from __future__ import annotations

import mmap
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from pipeline.bundle.elfdeps import ElfInfo, is_elf, read_elf, sections_of_type
from pipeline.processes.groups import run_child

DRIVER = "libcuda.so.1"
# CUresult CUDA_ERROR_NO_DEVICE (cuda.h).
NO_DEVICE = 100
# A driver API function: cu + a capital (cuInit, cuMemCreate); the runtime's are cuda*, cuBLAS's cublas*.
_DRIVER_SYMBOL = re.compile(r"^cu[A-Z][A-Za-z0-9_]*$")
# What the CUDA runtime looks up by name (dlsym) before anything else; the stand-in defines them itself.
_BOOTSTRAP = ("cuDriverGetVersion", "cuGetProcAddress", "cuGetProcAddress_v2")
_RUNTIME = re.compile(r"^libcudart\.so\.(\d+)$")


@dataclass(frozen=True, kw_only=True)
class DriverForSmoke:
    """How the smoke run meets the NVIDIA driver: ``library_dir`` holds the stand-in (None: the real one, or none needed)."""

    # The bundle's files that need libcuda.so.1 (empty: not a CUDA bundle).
    needed_by: tuple[str, ...] = ()
    library_dir: Path | None = None
    # Why no stand-in could be made where one was needed (no C compiler...).
    problem: str | None = None

    @property
    def line(self) -> str | None:
        """How the check met the driver, said once in the backends line; None for a bundle without CUDA."""
        if not self.needed_by:
            return None
        if self.library_dir is not None:
            return f"no NVIDIA driver here: {DRIVER} was a stand-in answering 'no device', made for the check"
        return None if self.problem else f"the machine's NVIDIA driver ({DRIVER})"

    @property
    def env(self) -> dict[str, str]:
        """What a smoke run's environment gets so its programs load the stand-in (nothing for the real driver)."""
        return {"LD_LIBRARY_PATH": str(self.library_dir)} if self.library_dir is not None else {}


def _names_the_driver(path: Path) -> bool:
    """Whether ``path``'s bytes hold the driver's name at all: a file that needs it has it in its
    dynamic string table. A search at C speed, so a bundle without CUDA has no ELF file parsed here
    (parsing them all was 0.03 s of CPU of a warm build's check)."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(DRIVER.encode()) != -1
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return True  # read_elf says what is wrong with it


def driver_users(root: Path, elves: Sequence[tuple[str, ElfInfo]] | None = None) -> tuple[str, ...]:
    """The ELF files at the bundle's root that need ``libcuda.so.1``, sorted.

    ``elves``: what check-bundle read of every ELF file at the root (bundle path, facts), so no file
    is parsed again; without it, the files are found and read here.
    """
    if elves is not None:
        return tuple(sorted(rel for rel, info in elves if "/" not in rel and DRIVER in info.needed))
    return tuple(
        p.name
        for p in sorted(root.iterdir())
        if is_elf(p) and _names_the_driver(p) and DRIVER in read_elf(p).needed
    )


def imported_driver_symbols(files: Iterable[Path]) -> tuple[str, ...]:
    """The driver API functions ``files`` import (undefined ``cu[A-Z]*`` dynamic symbols), sorted."""
    found: set[str] = set()
    for path in files:
        try:
            with path.open("rb") as fh:
                for section in sections_of_type(ELFFile(fh), "SHT_DYNSYM"):
                    if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                        for symbol in section.iter_symbols():
                            if symbol["st_shndx"] == "SHN_UNDEF" and _DRIVER_SYMBOL.match(symbol.name):
                                found.add(symbol.name)
        except (ELFError, OSError, ValueError):
            continue
    return tuple(sorted(found))


def runtime_driver_version(names: Iterable[str]) -> int:
    """The driver version the stand-in reports: the bundle's CUDA runtime's major release (``libcudart.so.13`` -> 13000).

    CUDA's minor-version compatibility lets a driver of the runtime's major
    release start it; 0 when the bundle has no runtime (nothing then asks).
    """
    majors = [int(m.group(1)) for n in names if (m := _RUNTIME.match(n))]
    return max(majors) * 1000 if majors else 0


def standin_source(symbols: Iterable[str], version: int) -> str:
    """C source of the stand-in (no C library: nothing but these functions).

    A function that ignores its arguments and returns an int is what a
    caller of any driver function sees (the x86-64 and AArch64 calling
    conventions leave unused argument registers alone).
    """
    lines = [
        "/* check-bundle's stand-in NVIDIA driver: every call answers CUDA_ERROR_NO_DEVICE. */",
        "typedef unsigned long long u64;",
        f"static int no_device(void) {{ return {NO_DEVICE}; }}",
        "static int same(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return *a == *b; }",
        f"int cuDriverGetVersion(int *version) {{ *version = {int(version)}; return 0; }}",
        "int cuGetProcAddress_v2(const char *name, void **fn, int version, u64 flags, int *status) {",
        "  (void) version; (void) flags;",
        '  if (same(name, "cuDriverGetVersion")) *fn = (void *) cuDriverGetVersion;',
        '  else if (same(name, "cuGetProcAddress")) *fn = (void *) cuGetProcAddress_v2;',
        "  else *fn = (void *) no_device;",
        "  if (status) *status = 0;",
        "  return 0;",
        "}",
        "int cuGetProcAddress(const char *name, void **fn, int version, u64 flags) {",
        "  return cuGetProcAddress_v2(name, fn, version, flags, 0);",
        "}",
    ]
    for name in sorted(set(symbols) - set(_BOOTSTRAP)):
        if not _DRIVER_SYMBOL.match(name):
            raise ValueError(f"not a CUDA driver symbol: {name!r}")
        lines.append(f"int {name}(void) {{ return {NO_DEVICE}; }}")
    return "\n".join(lines) + "\n"


def system_has_driver(env: Mapping[str, str]) -> bool:
    """Can a program started with ``env`` (the smoke run's scrubbed environment) load a real ``libcuda.so.1``?

    Asked of the machine's own loader, in a child process, with exactly the
    search path the smoke run's programs have.
    """
    probe = f"import ctypes; ctypes.CDLL({DRIVER!r})"
    try:
        proc = run_child([sys.executable, "-c", probe], env=dict(env), capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def driver_for_smoke(
    root: Path, folder: Path, env: Mapping[str, str], *, elves: Sequence[tuple[str, ElfInfo]] | None = None
) -> DriverForSmoke:
    """The driver the smoke run of the unpacked bundle ``root`` uses; a stand-in is built in ``folder`` when needed.

    ``folder`` must be outside the bundle and empty of anything else; ``env``:
    the smoke run's environment (the real driver is looked for with it); ``elves``: see :func:`driver_users`.
    """
    users = driver_users(root, elves) if root.is_dir() else ()
    if not users or system_has_driver(env):
        return DriverForSmoke(needed_by=users)
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return DriverForSmoke(
            needed_by=users,
            problem=(
                f"no NVIDIA driver here and no C compiler (cc) to make the stand-in {DRIVER} the check loads instead"
            ),
        )
    symbols = imported_driver_symbols(root / name for name in users)
    source = standin_source(symbols, runtime_driver_version(p.name for p in root.iterdir()))
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".standin-", dir=folder.parent) as tmp:
        src = Path(tmp) / "libcuda.c"
        src.write_text(source, encoding="utf-8")
        cmd = [
            cc,
            "-shared",
            "-fPIC",
            "-nostdlib",
            "-O0",
            f"-Wl,-soname,{DRIVER}",
            "-o",
            str(folder / DRIVER),
            src.name,
        ]
        try:
            proc = run_child(cmd, capture_output=True, text=True, timeout=300, cwd=tmp)
        except (OSError, subprocess.SubprocessError) as exc:
            return DriverForSmoke(
                needed_by=users, problem=f"cannot run {cc} for the stand-in {DRIVER}: {exc}"
            )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return DriverForSmoke(needed_by=users, problem=f"{cc} could not make the stand-in {DRIVER}: {last}")
    return DriverForSmoke(needed_by=users, library_dir=folder)
