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

from pipeline.errors import PipelineError
from pipeline.util.byte_sizes import human_bytes as human_bytes


def current_umask() -> int:
    """The process's umask (read from /proc on Linux, else set and restored at once)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a plain ``open()`` would give a new file: 0666 less the umask."""
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    """The mode a plain ``mkdir()`` would give a new folder: 0777 less the umask."""
    return 0o777 & ~current_umask()


def fix_mode(path: Path, *, folder: bool = False) -> None:
    """Give a file made by mkstemp/mkdtemp (0600/0700) the mode the umask asks for."""
    path.chmod(dir_mode() if folder else file_mode())


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
        # mkstemp makes 0600; a result is as readable as any file this process creates.
        Path(tmp).chmod(file_mode())
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


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a folder to work in: "no such directory", or "not a directory" for a file; None for one."""
    if path.is_dir():
        return None
    # A file given for a folder is a different mistake from a typo in the name: say which.
    return "not a directory" if path.exists() else "no such directory"


def file_digest(path: Path) -> tuple[int, str]:
    """(size, sha256 hex) of a file (symlinks followed), streamed."""
    with path.open("rb") as fh:
        return stream_digest(fh)


def confined(base: Path, relative: str, what: str, error: type[PipelineError] = PipelineError) -> Path:
    """``base / relative``, refused unless it stays inside ``base``.

    For every path or file name built from something the pipeline read (a
    record's bundle, a manifest's tag, an asset name, an archive member):
    such data comes from other jobs and files, so an absolute name, a ``..``
    or a symlinked folder that leads out of ``base`` must not reach the
    filesystem. ``what`` names the value in the one-line ``error`` raised.
    """
    text = str(relative)
    if not text or "\x00" in text:
        raise error(f"{what} {relative!r}: not a file name")
    if Path(text).is_absolute() or text.startswith(("/", "\\")) or (len(text) > 1 and text[1] == ":"):
        raise error(f"{what} {relative!r}: an absolute path, expected one inside {base}")
    parts = text.replace("\\", "/").split("/")
    if ".." in parts:
        raise error(f"{what} {relative!r}: '..' leads out of {base}")
    target = base / text
    # Symlinked folders on the way: what the path resolves to must still be inside.
    root = base.resolve()
    if not target.resolve().is_relative_to(root):
        raise error(f"{what} {relative!r}: leads out of {base} (through a link)")
    return target
