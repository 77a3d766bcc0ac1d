"""Deterministic tar.gz and zip archives, and reading entries back for comparison.

The same entries give the same bytes on every run: entries sorted by name,
one fixed mtime, owner 0/0 named ``root``, fixed modes, gzip header with
mtime 0 and no file name. What a file's content is, is the caller's business.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import stat
import tarfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from pipeline.archives import packing
from pipeline.archives.zipwriter import ZipWriter
from pipeline.errors import BundleError
from pipeline.names import member_name_problem
from pipeline.processes.pause_points import checkpoint
from pipeline.util.fsutil import atomic_output, stream_digest
from pipeline.util.json_text import MAX_DOCUMENT_BYTES, too_big

# 1980-01-01T00:00:00Z: the earliest moment a zip can store, used for tar too.
FIXED_MTIME = 315532800


# The member whose bytes read_members yields by default: a bundle's manifest.
MANIFEST_MEMBER = "manifest.json"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One archive member: a file (from disk or bytes), a symlink, or a directory."""

    name: str
    mode: int = 0o644
    path: Path | None = None
    data: bytes | None = None
    link: str | None = None
    is_dir: bool = False
    # The file's digest, when the caller hashed it already: the writer takes a cached stream of it
    # without reading the file (and refuses the file when what it compresses is other content).
    digest: packing.ContentDigest | None = None

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


def _tar_info(entry: Entry) -> tarfile.TarInfo:
    info = tarfile.TarInfo(entry.name.rstrip("/") if entry.is_dir else entry.name)
    info.mtime = FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = entry.mode
    if entry.is_dir:
        info.type = tarfile.DIRTYPE
    elif entry.link is not None:
        info.type = tarfile.SYMTYPE
        info.linkname = entry.link
    else:
        info.size = entry.size()
    return info


def _big_path(entry: Entry) -> Path | None:
    """The file compressed as a member of its own (and cached), or None for everything else."""
    if entry.path is None or entry.data is not None or entry.link is not None or entry.is_dir:
        return None
    return entry.path if entry.size() >= packing.MEMBER_MIN else None


def _checked(entry: Entry, deflated: packing.Deflated, size: int) -> packing.Deflated:
    if deflated.size != size:
        raise BundleError(f"{entry.path}: changed while being packaged ({size} then {deflated.size} bytes)")
    if entry.digest is not None and deflated.sha256 and deflated.sha256 != entry.digest.sha256:
        raise BundleError(f"{entry.path}: changed while being packaged (its content is not what was hashed)")
    return deflated


# An entry and the future of its compressed content (None: the writer compresses it itself, if at all).
_Member = tuple["Entry", Future[packing.Deflated] | None]
# Writes one format's archive from the members in order, counting into the stats, at the level given.
_Fill = Callable[[BinaryIO, Iterator[_Member], packing.PackStats, int], None]


def write_tar_gz(
    path: Path,
    entries: Sequence[Entry],
    *,
    level: int = packing.DEFAULT_LEVEL,
    cache: Path | None = None,
    workers: int | None = None,
) -> packing.PackStats:
    """Write a reproducible ``.tar.gz`` (PAX format) atomically, as a concatenation of gzip members.

    The tar stream inside is byte for byte what ``tarfile`` writes for the
    same entries; each big file is a gzip member of its own (see
    :mod:`pipeline.archives.packing`), so ``cache`` can hold it for the next run.
    """
    return _write(path, entries, _fill_tar_gz, level=level, cache=cache, workers=workers)


def write_zip(
    path: Path,
    entries: Sequence[Entry],
    *,
    level: int = packing.DEFAULT_LEVEL,
    cache: Path | None = None,
    workers: int | None = None,
) -> packing.PackStats:
    """Write a reproducible ``.zip`` atomically (symlinks are stored as the files they name).

    Each member's deflate stream comes from :mod:`pipeline.archives.packing` (in
    parallel, reused from ``cache``); the container is written here.
    """
    for entry in entries:
        if entry.link is not None:
            raise ValueError(f"{entry.name}: resolve symlinks before writing a zip")
    return _write(path, entries, _fill_zip, level=level, cache=cache, workers=workers)


def _write(
    path: Path, entries: Sequence[Entry], fill: _Fill, *, level: int, cache: Path | None, workers: int | None
) -> packing.PackStats:
    """What both formats do: entries in order, big files compressed in parallel (or taken from ``cache``),
    the archive written atomically by ``fill``, the figures at the end."""
    started = time.monotonic()
    stats = packing.PackStats()
    ordered = _sorted(entries)
    with atomic_output(path) as raw:
        jobs = packing.parallel_deflate(
            [_big_path(e) for e in ordered],
            level=level,
            cache=cache,
            workers=workers,
            known=[e.digest for e in ordered],
        )
        fill(raw, _held_at_pack(zip(ordered, jobs, strict=True)), stats, level)
    return packing.finish_stats(stats, path, started)


def _held_at_pack(members: Iterator[_Member]) -> Iterator[_Member]:
    for member in members:
        # Where an interrupt test holds the run: the archive is half written under its temporary name.
        checkpoint("pack")
        yield member


def _fill_tar_gz(raw: BinaryIO, members: Iterator[_Member], stats: packing.PackStats, level: int) -> None:
    glue = bytearray()
    offset = 0  # in the uncompressed tar stream
    for entry, job in members:
        info = _tar_info(entry)
        header = info.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape")
        glue += header
        offset += len(header)
        if info.type != tarfile.REGTYPE:
            continue
        if job is None:
            data = _read(entry)
            if len(data) != info.size:
                raise BundleError(f"{entry.name}: changed while being packaged")
            glue += data
            stats.files += 1
            stats.bytes_in += len(data)
        else:
            deflated = _checked(entry, job.result(), info.size)
            if glue:
                raw.write(packing.gzip_bytes(bytes(glue), level))
                stats.members += 1
                glue.clear()
            raw.write(packing.gzip_member(deflated.data, deflated.crc32, deflated.size))
            packing.count_member(stats, deflated)
        offset += info.size
        pad = -info.size % tarfile.BLOCKSIZE
        glue += b"\0" * pad
        offset += pad
    # What tarfile's close() writes: two zero blocks, then zeros up to a whole record.
    end = 2 * tarfile.BLOCKSIZE
    end += -(offset + end) % tarfile.RECORDSIZE
    glue += b"\0" * end
    raw.write(packing.gzip_bytes(bytes(glue), level))
    stats.members += 1


def _fill_zip(raw: BinaryIO, members: Iterator[_Member], stats: packing.PackStats, level: int) -> None:
    central: list[bytes] = []
    writer = ZipWriter(raw)
    for entry, job in members:
        if entry.is_dir:
            attr = ((stat.S_IFDIR | entry.mode) << 16) | 0x10
            central.append(writer.member(entry.name, b"", stored=True, crc=0, size=0, attr=attr))
            continue
        if job is None:
            data = _read(entry)
            deflated = packing.Deflated(
                data=packing.raw_deflate(data, level),
                size=len(data),
                crc32=zlib.crc32(data),
                sha256="",
                reused=False,
            )
            stats.files += 1
            stats.bytes_in += len(data)
            stats.members += 1
        else:
            deflated = _checked(entry, job.result(), entry.size())
            packing.count_member(stats, deflated)
        attr = (stat.S_IFREG | entry.mode) << 16
        central.append(
            writer.member(
                entry.name, deflated.data, stored=False, crc=deflated.crc32, size=deflated.size, attr=attr
            )
        )
    writer.finish(central)


def _read(entry: Entry) -> bytes:
    with entry.open() as fh:
        data: bytes = fh.read()
    return data


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


def read_members(
    path: Path, keep: tuple[str, ...] = (MANIFEST_MEMBER,)
) -> Iterator[tuple[Member, bytes | None]]:
    """Every file and symlink of an archive (directories skipped), with its digest.

    The content is also yielded for a member named in ``keep`` (small: the
    manifest, the SBOM), at the top or one folder down, so the caller needs a
    single pass. A damaged archive raises BundleError.
    """
    kind = archive_kind(path)
    if kind is None:
        raise BundleError(f"{path}: not a bundle (neither a .tar.gz nor a .zip)")
    try:
        if kind == "tar.gz":
            yield from _read_tar(path, keep)
        else:
            yield from _read_zip(path, keep)
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, gzip.BadGzipFile) as exc:
        raise BundleError(f"{path}: corrupt bundle: {exc or type(exc).__name__}") from None


def _file_member(
    archive: Path, name: str, fh: IO[bytes], keep: tuple[str, ...]
) -> tuple[Member, bytes | None]:
    """A regular file's entry; the bytes of those in ``keep`` are kept, every other file is only hashed."""
    # A bundle's manifest sits at the top or in the bundle's one top folder (``llama-<tag>/manifest.json``).
    if name.rsplit("/", 1)[-1] in keep and name.count("/") <= 1:
        # Bounded: a member posing as the manifest may be gigabytes that inflate from a few bytes.
        data = fh.read(MAX_DOCUMENT_BYTES + 1)
        if message := too_big(len(data), f"{archive}:{name}", "a manifest or SBOM"):
            raise BundleError(message)
        return Member(name=name, size=len(data), sha256=hashlib.sha256(data).hexdigest()), data
    size, digest = stream_digest(fh)
    return Member(name=name, size=size, sha256=digest), None


def _read_tar(path: Path, keep: tuple[str, ...]) -> Iterator[tuple[Member, bytes | None]]:
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
                yield _file_member(path, name, fh, keep)
            else:
                raise BundleError(
                    f"{path}: foreign archive: {name} is neither a file, a symlink nor a folder"
                )


# PATH_MAX on Linux and macOS.
_MAX_LINK = 4096


def _read_zip(path: Path, keep: tuple[str, ...]) -> Iterator[tuple[Member, bytes | None]]:
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = _safe_name(path, info.filename)
            if info.is_dir():
                continue
            with zf.open(info) as fh:
                if stat.S_ISLNK(info.external_attr >> 16):
                    # A link target is a path: a "link" of megabytes is a forged member, not read whole.
                    target = fh.read(_MAX_LINK + 1)
                    if len(target) > _MAX_LINK:
                        raise BundleError(
                            f"{path}: foreign archive: {name} is a symlink over {_MAX_LINK} bytes long"
                        )
                    yield Member(name=name, link=target.decode("utf-8", "replace")), None
                else:
                    yield _file_member(path, name, fh, keep)


def member_sizes(path: Path) -> list[tuple[str, int]]:
    """Every regular file of an archive with its unpacked size, read from the headers (nothing is hashed).

    A zip's sizes are in its central directory; a tar.gz is read through once, its data skipped. A damaged
    archive raises BundleError."""
    kind = archive_kind(path)
    if kind is None:
        raise BundleError(f"{path}: not a bundle (neither a .tar.gz nor a .zip)")
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as zf:
                return [
                    (info.filename, info.file_size)
                    for info in zf.infolist()
                    if not info.is_dir() and not stat.S_ISLNK(info.external_attr >> 16)
                ]
        with tarfile.open(path, mode="r:gz") as tar:
            return [(info.name, info.size) for info in tar if info.isfile()]
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, gzip.BadGzipFile) as exc:
        raise BundleError(f"{path}: corrupt bundle: {exc or type(exc).__name__}") from None
