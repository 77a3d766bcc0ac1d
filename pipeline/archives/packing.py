"""Fast, incremental packaging: every file compressed on its own, in parallel, reused by content.

Why this shape:
- A ``.tar.gz`` may be a concatenation of gzip members (RFC 1952; ``gzip``,
  ``tar -xzf`` and Python's ``tarfile`` read them all), and a zip compresses
  each member on its own. So each file's content is one raw deflate stream,
  the same bytes in both formats, compressed once and reused.
- zlib releases the GIL: a thread pool compresses files on every core.
- The next night re-packages mostly the same files (the ROCm runtime is
  over 1 GB): a packaging cache keyed by the content's sha256 and the level
  turns them into a copy. The archive's bytes never depend on the cache:
  a cached stream is the very stream compressing the content would give.

The layout is fixed by the entries alone: a file of ``MEMBER_MIN`` bytes or
more is its own member; headers, padding and small files go into the glue
members between them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import tempfile
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LEVEL = 6
# Smaller files compress in the glue: a member of their own costs 18 bytes and a cache file.
MEMBER_MIN = 32 * 1024
_CHUNK = 1 << 20
# A gzip member header: deflate, no flags, mtime 0, no extra flags, OS "unknown" (as Python's gzip).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
# After each cached stream: the content's size and crc32.
_TRAILER = struct.Struct("<QI")


@dataclass(frozen=True, kw_only=True)
class Deflated:
    """One file's content as a raw deflate stream, with what both formats record of it."""

    data: bytes
    size: int
    crc32: int
    # "" when no cache asked for it.
    sha256: str
    reused: bool


@dataclass(kw_only=True)
class PackStats:
    """What one packaging did: for the console, the record and the benchmark."""

    files: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    members: int = 0
    reused: int = 0
    seconds: float = 0.0
    reused_bytes: int = 0

    def to_json(self) -> dict[str, float | int]:
        return {
            "files": self.files,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "members": self.members,
            "reused": self.reused,
            "reused_bytes": self.reused_bytes,
            "seconds": round(self.seconds, 3),
        }


class PackCache:
    """Raw deflate streams by (content sha256, level), under one folder; a missing folder is made.

    Each file ends with the content's size and crc32: a stream cut short (a
    crash between write and rename, a full disk) fails that check and is
    compressed again, never copied into a bundle.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha256: str, level: int) -> Path:
        return self.root / sha256[:2] / f"{sha256}-{level}.deflate"

    def get(self, sha256: str, level: int, *, size: int, crc32: int) -> bytes | None:
        path = self.path(sha256, level)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        if len(blob) < _TRAILER.size or _TRAILER.unpack(blob[-_TRAILER.size :]) != (size, crc32):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # last use, for whoever prunes the folder
        return blob[: -_TRAILER.size]

    def put(self, sha256: str, level: int, data: bytes, *, size: int, crc32: int) -> None:
        path = self.path(sha256, level)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Renamed into place, so readers never see half a file; no fsync: the trailer catches a torn one.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.write(_TRAILER.pack(size, crc32))
            Path(tmp).replace(path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


@dataclass(frozen=True, kw_only=True)
class ContentDigest:
    """What the packaging cache keys a file's content by, and checks a cached stream against."""

    size: int
    crc32: int
    sha256: str


def content_digest(path: Path) -> ContentDigest:
    """Size, crc32 and sha256 of a file, in one read. A caller that hashes the files it packs anyway (a
    bundle's manifest lists each file's sha256) hands this to the writer, which then reads a file that
    the cache holds not at all."""
    sha = hashlib.sha256()
    crc = 0
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return ContentDigest(size=size, crc32=crc, sha256=sha.hexdigest())


def raw_deflate(data: bytes, level: int) -> bytes:
    """``data`` as a raw deflate stream (no header): what a zip stores and a gzip member wraps."""
    return _deflate_chunks(iter((data,)), level)


def _deflate_chunks(chunks: Iterator[bytes], level: int) -> bytes:
    comp = zlib.compressobj(level, zlib.DEFLATED, -15, 9)
    parts = [comp.compress(chunk) for chunk in chunks]
    parts.append(comp.flush())
    return b"".join(parts)


def _file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def deflate_file(
    path: Path, level: int, cache: PackCache | None, known: ContentDigest | None = None
) -> Deflated:
    """``path``'s content as raw deflate, from the cache when it holds the same content.

    Without a cache the file is read once (size and crc32 while compressing;
    no sha256, which only the cache needs). ``known``: the file's digest, when the caller has it: a
    cached stream is then taken without reading the file. A stream compressed here is stored under the
    digest of what was read while compressing it, and carries that digest (a file changed since the
    caller hashed it shows as a different sha256, never as a cache entry under the old one).
    """
    if cache is None:
        return _deflate_uncached(path, level)
    digest = known or content_digest(path)
    if (hit := cache.get(digest.sha256, level, size=digest.size, crc32=digest.crc32)) is not None:
        return Deflated(data=hit, size=digest.size, crc32=digest.crc32, sha256=digest.sha256, reused=True)
    sha = hashlib.sha256()

    def hashed(chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            sha.update(chunk)
            yield chunk

    made = _deflate_uncached(path, level, hashed)
    cache.put(sha.hexdigest(), level, made.data, size=made.size, crc32=made.crc32)
    return Deflated(data=made.data, size=made.size, crc32=made.crc32, sha256=sha.hexdigest(), reused=False)


def _deflate_uncached(
    path: Path, level: int, through: Callable[[Iterator[bytes]], Iterator[bytes]] | None = None
) -> Deflated:
    comp = zlib.compressobj(level, zlib.DEFLATED, -15, 9)
    parts = []
    crc = size = 0
    chunks = _file_chunks(path)
    for chunk in through(chunks) if through is not None else chunks:
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
        parts.append(comp.compress(chunk))
    parts.append(comp.flush())
    return Deflated(data=b"".join(parts), size=size, crc32=crc, sha256="", reused=False)


def gzip_member(raw: bytes, crc32: int, size: int) -> bytes:
    """A complete gzip member around a raw deflate stream."""
    return _GZIP_HEADER + raw + struct.pack("<II", crc32 & 0xFFFFFFFF, size & 0xFFFFFFFF)


def gzip_bytes(data: bytes, level: int) -> bytes:
    """``data`` as one gzip member (the glue between big files)."""
    return gzip_member(raw_deflate(data, level), zlib.crc32(data), len(data))


def parallel_deflate(
    paths: Sequence[Path | None],
    *,
    level: int,
    cache: Path | None,
    workers: int | None,
    known: Sequence[ContentDigest | None] | None = None,
) -> Iterator[Future[Deflated] | None]:
    """For each of ``paths`` in order: a future of that file's deflated content (None stays None);
    ``known``: each file's digest where the caller has it (see :func:`deflate_file`).

    At most a few files per worker are in flight, so memory stays bounded
    whatever the payload's size.
    """
    store = PackCache(cache) if cache is not None else None
    count = workers or os.cpu_count() or 1
    window = count * 2
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="pack") as pool:
        queue: deque[Future[Deflated] | None] = deque()
        in_flight = 0
        for index, path in enumerate(paths):
            digest = known[index] if known is not None else None
            job = None if path is None else pool.submit(deflate_file, path, level, store, digest)
            queue.append(job)
            in_flight += job is not None
            while in_flight > window:
                done = queue.popleft()
                in_flight -= done is not None
                yield done
        yield from queue


def count_member(stats: PackStats, deflated: Deflated) -> None:
    stats.files += 1
    stats.bytes_in += deflated.size
    stats.members += 1
    if deflated.reused:
        stats.reused += 1
        stats.reused_bytes += deflated.size


def finish_stats(stats: PackStats, target: Path, started: float) -> PackStats:
    stats.bytes_out = target.stat().st_size
    stats.seconds = time.monotonic() - started
    return stats
