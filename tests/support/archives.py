"""Archives built by tests: tarballs and zips with chosen (also hostile) members."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

from pipeline.archives import packing
from pipeline.archives.deterministic import Entry, write_tar_gz, write_zip


def tar_file(
    name: str, data: bytes = b"x", mode: int = 0o644, mtime: int = 1_600_000_000
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = mtime
    return info, data


def tar_dir(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info, None


def tar_symlink(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, None


def tar_hardlink(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE
    info.linkname = target
    return info, None


def tar_device(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info, None


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def make_zip(path: Path, members: dict[str, bytes], *, symlink: tuple[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            zf.writestr(info, data)
        if symlink:
            info = zipfile.ZipInfo(symlink[0])
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, symlink[1])
    return path


# A clang that runs `--version` as a TheRock install's must before it is installed.
FAKE_CLANG = b"#!/bin/sh\necho 'clang version 20.0.0 (fake TheRock)'\n"


def therock_members(prefix: str = "./") -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [
        tar_dir(prefix or "."),
        tar_dir(f"{prefix}lib/llvm/bin"),
        tar_file(f"{prefix}lib/llvm/bin/clang", FAKE_CLANG, mode=0o755),
        tar_symlink(f"{prefix}lib/llvm/bin/clang++", "clang"),
        tar_file(f"{prefix}lib/llvm/lib/clang/20/include/stddef.h", b"/* stddef */"),
        tar_symlink(f"{prefix}bin/amdclang", "../lib/llvm/bin/clang"),
    ]


def folder_entries(folder: Path, *, symlinks: bool = True) -> list[Entry]:
    """Every file and symlink under ``folder`` as entries (modes 0755 for executables, else 0644)."""
    entries = []
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if symlinks and path.is_symlink():
            entries.append(Entry(name=name, link=str(path.readlink()), mode=0o777))
        elif path.is_file():
            executable = bool(path.stat().st_mode & 0o111)
            entries.append(Entry(name=name, path=path, mode=0o755 if executable else 0o644))
    return entries


def package_folder(
    folder: Path,
    target: Path,
    *,
    cache: Path | None = None,
    level: int = packing.DEFAULT_LEVEL,
    workers: int | None = None,
) -> packing.PackStats:
    """Package ``folder`` as the bundles are (``.zip`` when ``target`` ends so, else ``.tar.gz``)."""
    zipped = target.name.endswith(".zip")
    entries = folder_entries(folder, symlinks=not zipped)
    write = write_zip if zipped else write_tar_gz
    return write(target, entries, cache=cache, level=level, workers=workers)
