"""Small file-system helpers shared by every module that writes results."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from pipeline.names import human_bytes as human_bytes


@contextmanager
def atomic_output(path: Path) -> Iterator[BinaryIO]:
    """A temp file beside ``path``, renamed over it only when the block succeeds.

    Readers see the old file or the new one, never half of one.
    """
    if path.is_dir():
        # Else the rename fails late with a temp file's name and "Device or resource busy".
        raise IsADirectoryError(errno.EISDIR, "is a folder, expected a file path", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_output`)."""
    with atomic_output(path) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    """Text flavour of :func:`atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


_CHUNK = 1 << 20


def stream_digest(fh: IO[bytes]) -> tuple[int, str]:
    """(size, sha256 hex) of what is left to read in ``fh``, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    while chunk := fh.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def file_digest(path: Path) -> tuple[int, str]:
    """(size, sha256 hex) of a file (symlinks followed), streamed."""
    with path.open("rb") as fh:
        return stream_digest(fh)
