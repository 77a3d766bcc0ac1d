"""What an ELF file needs at run time, read with pyelftools (no hand parsing).

Reading only: DT_NEEDED, DT_SONAME, DT_RUNPATH / DT_RPATH and the symbol
versions required from each library (``GLIBC_2.34`` ...). No subprocess, no
network: the runtime closure and ``check-bundle`` build on this.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.common.utils import struct_parse
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import Section

from pipeline.errors import BundleError
from pipeline.names import dotted_version

ELF_MAGIC = b"\x7fELF"
_DYNAMIC_STRINGS = {
    "DT_NEEDED": "needed",
    "DT_SONAME": "soname",
    "DT_RUNPATH": "runpath",
    "DT_RPATH": "rpath",
}
_GLIBC = re.compile(r"^GLIBC_(\d+(?:\.\d+)*)$")
# e_machine -> the architecture in matrix.toml's words (names.ARCHES); anything else keeps pyelftools' name.
_MACHINES = {"EM_X86_64": "x64", "EM_AARCH64": "arm64"}


@dataclass(frozen=True, kw_only=True)
class ElfInfo:
    """The dynamic-linking facts of one ELF file."""

    needed: tuple[str, ...] = ()
    soname: str | None = None
    # Each split on ':', empty entries kept (the loader reads one as the current working folder);
    # an empty tuple when the tag is absent.
    runpath: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    # Version names required from each needed library, e.g. {"libc.so.6": ("GLIBC_2.34",)}.
    version_needs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The architecture it was built for: ``x64``, ``arm64``, or pyelftools' ``EM_*`` name.
    arch: str = ""

    @property
    def search_paths(self) -> tuple[str, ...]:
        """The paths the loader tries: RUNPATH when present (then RPATH is ignored), else RPATH."""
        return self.runpath or self.rpath

    @property
    def glibc_versions(self) -> tuple[tuple[int, ...], ...]:
        """Every ``GLIBC_x.y`` required, as sorted version tuples."""
        found = {
            dotted_version(m.group(1))
            for _, names in self.version_needs
            for name in names
            if (m := _GLIBC.match(name))
        }
        return tuple(sorted(found))


def is_elf(path: Path) -> bool:
    """True when ``path`` is a regular file starting with the ELF magic."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(4) == ELF_MAGIC
    except OSError:
        return False


def _split(value: str) -> tuple[str, ...]:
    # Empty entries are kept: "$ORIGIN:" makes ld.so search the current working folder, and the
    # closure and check-bundle must see that entry to rewrite or refuse it.
    return tuple(value.split(":"))


def sections_of_type(elf: ELFFile, *types: str) -> Iterator[Section]:
    """The sections of ``elf`` whose header type is one of ``types`` (``"SHT_DYNAMIC"``...), in order.

    ``iter_sections`` builds every section, and building a GNU hash section parses its whole
    bucket and chain arrays: that was most of the CPU of a bundle's and a check's ELF reads. The
    others are skipped here from their headers alone.
    """
    start, size = elf["e_shoff"], elf["e_shentsize"]
    for index in range(elf.num_sections()):
        header = struct_parse(elf.structs.Elf_Shdr, elf.stream, stream_pos=start + index * size)
        if header["sh_type"] in types:
            yield elf.get_section(index)


def read_elf(path: Path) -> ElfInfo:
    """The dynamic section and version needs of ``path``; BundleError when it is no readable ELF."""
    try:
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            machine = str(elf.header["e_machine"])
            needed: list[str] = []
            soname: str | None = None
            runpath: tuple[str, ...] = ()
            rpath: tuple[str, ...] = ()
            needs: list[tuple[str, tuple[str, ...]]] = []
            for section in sections_of_type(elf, "SHT_DYNAMIC", "SHT_GNU_verneed"):
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        # pyelftools names the decoded string after the tag (tag.needed, tag.runpath...).
                        attr = _DYNAMIC_STRINGS.get(tag.entry.d_tag)
                        if attr is None:
                            continue
                        value = str(getattr(tag, attr))
                        if attr == "needed":
                            needed.append(value)
                        elif attr == "soname":
                            soname = value
                        elif attr == "runpath":
                            runpath = _split(value)
                        else:
                            rpath = _split(value)
                elif isinstance(section, GNUVerNeedSection):
                    for verneed, aux in section.iter_versions():
                        needs.append((str(verneed.name), tuple(str(a.name) for a in aux)))
    except (ELFError, OSError, ValueError) as exc:
        raise BundleError(f"{path}: not a readable ELF file: {exc}") from None
    return ElfInfo(
        needed=tuple(needed),
        soname=soname,
        runpath=runpath,
        rpath=rpath,
        version_needs=tuple(needs),
        arch=_MACHINES.get(machine, machine),
    )
