"""Deterministic tar.gz and zip archives, and reading entries back for comparison.

The same entries give the same bytes on every run: entries sorted by name,
one fixed mtime, owner 0/0 named ``root``, fixed modes, gzip header with
mtime 0 and no file name. What a file's content is, is the caller's business.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from pipeline.errors import BundleError
from pipeline.fsutil import atomic_output, stream_digest
from pipeline.names import member_name_problem

# 1980-01-01T00:00:00Z: the earliest moment a zip can store, used for tar too.
FIXED_MTIME = 315532800
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
DIR_MODE = 0o755
_CHUNK = 1 << 20


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One archive member: a file (from disk or bytes), a symlink, or a directory."""

    name: str
    mode: int = 0o644
    path: Path | None = None
    data: bytes | None = None
    link: str | None = None
    is_dir: bool = False

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        return self.path.stat().st_size if self.path is not None else 0

    def open(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None, f"{self.name}: a file entry needs data or a path"
        return self.path.open("rb")


@dataclass(frozen=True, kw_only=True)
class Member:
    """One member read back: a file with its size and digest, or a symlink."""

    name: str
    size: int = 0
    sha256: str | None = None
    link: str | None = None


def _sorted(entries: Sequence[Entry]) -> list[Entry]:
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise ValueError("duplicate archive entry names")
    return sorted(entries, key=lambda e: e.name)


def write_tar_gz(path: Path, entries: Sequence[Entry]) -> None:
    """Write a reproducible ``.tar.gz`` (PAX format) atomically."""
    # filename="" keeps the temp file's name out of the gzip header.
    with (
        atomic_output(path) as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for entry in _sorted(entries):
            info = tarfile.TarInfo(entry.name.rstrip("/") if entry.is_dir else entry.name)
            info.mtime = FIXED_MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = entry.mode
            if entry.is_dir:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif entry.link is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = entry.link
                tar.addfile(info)
            else:
                info.size = entry.size()
                with entry.open() as fh:
                    tar.addfile(info, fh)


def write_zip(path: Path, entries: Sequence[Entry]) -> None:
    """Write a reproducible ``.zip`` atomically (symlinks are stored as the files they name)."""
    with atomic_output(path) as raw, zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for entry in _sorted(entries):
            info = zipfile.ZipInfo(entry.name, date_time=_ZIP_DATE)
            info.create_system = 3  # unix, so the mode bits below mean the same everywhere
            if entry.is_dir:
                info.external_attr = ((stat.S_IFDIR | entry.mode) << 16) | 0x10
                info.compress_type = zipfile.ZIP_STORED
                zf.writestr(info, b"")
                continue
            if entry.link is not None:
                raise ValueError(f"{entry.name}: resolve symlinks before writing a zip")
            info.external_attr = (stat.S_IFREG | entry.mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            size = entry.size()
            info.file_size = size
            with entry.open() as src, zf.open(info, "w", force_zip64=size >= zipfile.ZIP64_LIMIT) as dst:
                shutil.copyfileobj(src, dst, _CHUNK)


def _safe_name(archive: Path, name: str) -> str:
    if problem := member_name_problem(name):
        raise BundleError(f"{archive}: foreign archive: unsafe member name {name!r} ({problem})")
    return name.replace("\\", "/").removeprefix("./")


def archive_kind(path: Path) -> str | None:
    """'tar.gz' or 'zip' from the first bytes of ``path``; None when neither."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror}") from None
    if magic[:2] == b"\x1f\x8b":
        return "tar.gz"
    if magic == b"PK\x03\x04" or magic == b"PK\x05\x06":
        return "zip"
    return None


def read_members(path: Path) -> Iterator[tuple[Member, bytes | None]]:
    """Every file and symlink of an archive (directories skipped), with its digest.

    The content is also yielded for a member called ``manifest.json`` (small)
    so the caller needs a single pass. A damaged archive raises BundleError.
    """
    kind = archive_kind(path)
    if kind is None:
        raise BundleError(f"{path}: not a bundle (neither a .tar.gz nor a .zip)")
    try:
        if kind == "tar.gz":
            yield from _read_tar(path)
        else:
            yield from _read_zip(path)
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, gzip.BadGzipFile) as exc:
        raise BundleError(f"{path}: corrupt bundle: {exc or type(exc).__name__}") from None


def _file_member(name: str, fh: IO[bytes]) -> tuple[Member, bytes | None]:
    """A regular file's entry; the manifest's bytes are kept, every other file is only hashed."""
    if name == "manifest.json":
        data = fh.read()
        return Member(name=name, size=len(data), sha256=hashlib.sha256(data).hexdigest()), data
    size, digest = stream_digest(fh)
    return Member(name=name, size=size, sha256=digest), None


def _read_tar(path: Path) -> Iterator[tuple[Member, bytes | None]]:
    with tarfile.open(path, mode="r:gz") as tar:
        for info in tar:
            name = _safe_name(path, info.name)
            if info.isdir():
                continue
            if info.issym():
                yield Member(name=name, link=info.linkname), None
            elif info.isfile():
                fh = tar.extractfile(info)
                assert fh is not None
                yield _file_member(name, fh)
            else:
                raise BundleError(f"{path}: foreign archive: {name} is neither a file, a symlink nor a folder")


def _read_zip(path: Path) -> Iterator[tuple[Member, bytes | None]]:
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = _safe_name(path, info.filename)
            if info.is_dir():
                continue
            with zf.open(info) as fh:
                if stat.S_ISLNK(info.external_attr >> 16):
                    yield Member(name=name, link=fh.read().decode("utf-8", "replace")), None
                else:
                    yield _file_member(name, fh)
