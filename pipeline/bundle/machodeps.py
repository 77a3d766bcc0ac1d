"""What a Mach-O file (a macOS program or ``.dylib``) needs at run time, read with macholib.

Reading only, like :mod:`pipeline.bundle.elfdeps`: the install name
(``LC_ID_DYLIB``), the libraries it loads (``LC_LOAD_DYLIB`` and its weak,
re-export and upward kinds), its ``LC_RPATH`` entries, the oldest macOS it
asks for (``LC_BUILD_VERSION`` minos, or the older ``LC_VERSION_MIN_MACOSX``),
its architecture and whether it carries a code signature
(``LC_CODE_SIGNATURE``: arm64 macOS kills an unsigned program). A universal
(fat) file is read slice by slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from macholib import mach_o
from macholib.MachO import MachO

from pipeline.errors import BundleError

# The first four bytes of a thin Mach-O (either byte order) or a universal file.
MACHO_MAGICS = (
    b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xce",
    b"\xca\xfe\xba\xbe",
)  # fmt: skip
_LOADS = {
    mach_o.LC_LOAD_DYLIB,
    mach_o.LC_LOAD_WEAK_DYLIB,
    mach_o.LC_REEXPORT_DYLIB,
    mach_o.LC_LOAD_UPWARD_DYLIB,
}
# CPU type -> the architecture in matrix.toml's words.
_ARCHES = {mach_o.CPU_TYPE_NAMES.get(16777228): "arm64", mach_o.CPU_TYPE_NAMES.get(16777223): "x64"}


@dataclass(frozen=True, kw_only=True)
class MachoInfo:
    """The dynamic-linking facts of one Mach-O slice."""

    arch: str
    # "dylib", "execute", "bundle" (a loadable module), ...
    filetype: str
    install_name: str | None = None
    needed: tuple[str, ...] = ()
    rpaths: tuple[str, ...] = ()
    # "13.3": LC_BUILD_VERSION's minos; None when the file names none.
    minos: str | None = None
    signed: bool = False


def is_macho(path: Path) -> bool:
    """True when ``path`` is a regular file starting with a Mach-O or universal magic.

    ``0xcafebabe`` is also a Java class file's magic; macholib tells them apart when it reads the file.
    """
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(4) in MACHO_MAGICS
    except OSError:
        return False


def _string(data: bytes) -> str:
    return data.split(b"\x00", 1)[0].decode("utf-8", "replace")


def _version(packed: int) -> str:
    """``0x000D0300`` -> ``"13.3"`` (xxxx.yy.zz, the patch dropped when 0)."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def read_macho(path: Path) -> tuple[MachoInfo, ...]:
    """Each slice of ``path``; BundleError when it is no readable Mach-O file."""
    try:
        macho = MachO(str(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BundleError(f"{path}: not a readable Mach-O file: {exc}") from None
    slices = []
    for header in macho.headers:
        cpu = mach_o.CPU_TYPE_NAMES.get(header.header.cputype, str(header.header.cputype))
        filetype = mach_o.MH_FILETYPE_SHORTNAMES.get(header.header.filetype, str(header.header.filetype))
        install_name = None
        needed: list[str] = []
        rpaths: list[str] = []
        minos = None
        signed = False
        for load, command, data in header.commands:
            kind = load.cmd
            if kind == mach_o.LC_ID_DYLIB:
                install_name = _string(data)
            elif kind in _LOADS:
                needed.append(_string(data))
            elif kind == mach_o.LC_RPATH:
                rpaths.append(_string(data))
            elif kind == mach_o.LC_BUILD_VERSION:
                minos = _version(command.minos)
            elif kind == mach_o.LC_VERSION_MIN_MACOSX and minos is None:
                minos = _version(command.version)
            elif kind == mach_o.LC_CODE_SIGNATURE:
                signed = True
        slices.append(
            MachoInfo(
                arch=_ARCHES.get(cpu, cpu),
                filetype=filetype,
                install_name=install_name,
                needed=tuple(needed),
                rpaths=tuple(rpaths),
                minos=minos,
                signed=signed,
            )
        )
    return tuple(slices)


# The code signature's blobs (Apple's cs_blobs.h): a SuperBlob indexing a CodeDirectory that
# holds one hash per page of the file up to codeLimit. macholib reads the load commands only.
_SUPERBLOB = 0xFADE0CC0
_CODEDIRECTORY = 0xFADE0C02
_HASHES = {1: "sha1", 2: "sha256"}


def _signature_slices(path: Path) -> list[tuple[int, int, int]]:
    """(slice offset, signature offset in the slice, its size) for each signed slice."""
    macho = MachO(str(path))
    found = []
    for header in macho.headers:
        for load, command, _data in header.commands:
            if load.cmd == mach_o.LC_CODE_SIGNATURE:
                found.append((header.offset, command.dataoff, command.datasize))
    return found


def signature_matches(path: Path) -> bool | None:
    """Whether every signed slice's page hashes match its bytes (None: no slice is signed).

    An edit to a load command after signing changes the first page: its hash
    no longer matches, and arm64 macOS kills the program. Only the page hashes
    are checked (what an edit breaks), not who signed.
    """
    import hashlib
    import struct

    try:
        slices = _signature_slices(path)
        if not slices:
            return None
        data = path.read_bytes()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BundleError(f"{path}: not a readable Mach-O file: {exc}") from None
    for base, offset, size in slices:
        blob = data[base + offset : base + offset + size]
        if len(blob) < 12 or struct.unpack(">I", blob[:4])[0] != _SUPERBLOB:
            return False
        count = struct.unpack(">I", blob[8:12])[0]
        directory = None
        for i in range(count):
            kind, at = struct.unpack(">II", blob[12 + 8 * i : 20 + 8 * i])
            if kind == 0 and struct.unpack(">I", blob[at : at + 4])[0] == _CODEDIRECTORY:
                directory = blob[at:]
        if directory is None or len(directory) < 44:
            return False
        hash_offset, _ident, _special, n_slots, code_limit = struct.unpack(">IIIII", directory[16:36])
        hash_size, hash_type, _platform, page_log = directory[36], directory[37], directory[38], directory[39]
        algorithm = _HASHES.get(hash_type)
        if algorithm is None:
            return False
        page = 1 << page_log if page_log else code_limit
        code = data[base : base + code_limit]
        for slot in range(n_slots):
            want = directory[hash_offset + slot * hash_size : hash_offset + (slot + 1) * hash_size]
            got = hashlib.new(algorithm, code[slot * page : (slot + 1) * page]).digest()[:hash_size]
            if want != got:
                return False
    return True
