"""What a PE file (a Windows .exe or .dll) imports, read with pefile.

Reading only, like :mod:`pipeline.bundle.elfdeps`: the DLL names of the import table
and of the delay-load table. Windows has no RUNPATH: a DLL is found beside
the program, so a Windows bundle keeps every DLL in ``bin/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import BundleError

if TYPE_CHECKING:
    import pefile

PE_MAGIC = b"MZ"


def is_pe(path: Path) -> bool:
    """True when ``path`` is a regular file starting with the DOS ``MZ`` header."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(2) == PE_MAGIC
    except OSError:
        return False


# IMAGE_FILE_HEADER.Machine -> the architecture in matrix.toml's words.
_MACHINES = {0x8664: "x64", 0xAA64: "arm64"}


def _open(path: Path) -> pefile.PE:
    # pefile is imported for a Windows bundle only: a Linux one's packing and check never load it.
    import pefile

    try:
        return pefile.PE(str(path), fast_load=True)
    except (pefile.PEFormatError, OSError) as exc:
        raise BundleError(f"{path}: not a readable PE file: {exc}") from None


def pe_arch(path: Path) -> str:
    """The architecture ``path`` was built for: ``x64``, ``arm64``, or the machine number in hex."""
    pe = _open(path)
    try:
        machine = int(pe.FILE_HEADER.Machine)
    finally:
        pe.close()
    return _MACHINES.get(machine, hex(machine))


def read_pe_imports(path: Path) -> tuple[str, ...]:
    """The DLLs ``path`` imports (normal and delay-loaded), in table order, without duplicates."""
    import pefile

    pe = _open(path)
    try:
        pe.parse_data_directories(
            directories=[
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
            ]
        )
        names: list[str] = []
        for attr in ("DIRECTORY_ENTRY_IMPORT", "DIRECTORY_ENTRY_DELAY_IMPORT"):
            for entry in getattr(pe, attr, []):
                name = entry.dll.decode("ascii", "replace")
                if name not in names:
                    names.append(name)
        return tuple(names)
    finally:
        pe.close()
