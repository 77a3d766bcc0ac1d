"""Safe, atomic extraction of a toolchain or bundle archive.

Every member is checked before it is written (no absolute path, no ``..``,
no device, no link leaving the root), on top of tarfile's ``data`` filter.
The archive is unpacked into a hidden staging folder beside the target and
renamed into place with a marker inside, so an interrupted or refused
extraction leaves no partial install. The member-name rules
(:func:`name_problem`) are the ones bundles are written and read with too.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.errors import ToolchainError
from pipeline.guard.checkpoints import checkpoint
from pipeline.names import member_name_problem
from pipeline.util.fsutil import atomic_write_json, fix_mode

# Written inside the install as the last step before it is renamed into place.
MARKER = ".pipeline-install.json"
# The one rule for member names, shared with the bundles (pipeline.names).
name_problem = member_name_problem
# Folder names that are the top of an install's layout, never a wrapper folder
# to strip: an archive holding only "lib/" is flat, not wrapped in "lib".
LAYOUT_DIRS = frozenset({"bin", "lib", "lib64", "llvm", "include", "share", "libexec", "etc", "amdgcn"})
_DRIVE = re.compile(r"^[A-Za-z]:")
CHUNK = 1024 * 1024



def link_problem(name: str, linkname: str, *, hard: bool) -> str | None:
    """Why a link member is unsafe: absolute, or pointing outside the install root.

    A symbolic link is relative to its own folder; a hard link's target is a
    member name, relative to the archive root.
    """
    if not linkname:
        return "link without a target"
    if linkname.startswith(("/", "\\")) or _DRIVE.match(linkname):
        return f"link to absolute path {linkname!r}"
    base = "" if hard else posixpath.dirname(_strip_dot(name))
    resolved = posixpath.normpath(posixpath.join(base, linkname.replace("\\", "/")))
    if resolved == ".." or resolved.startswith("../"):
        return f"link {linkname!r} points outside the install"
    return None


def _strip_dot(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name


def tar_member_problem(member: tarfile.TarInfo) -> str | None:
    """Why a tar member must be refused, or None."""
    if problem := name_problem(member.name):
        return problem
    if member.ischr() or member.isblk():
        return "device file"
    if member.isfifo():
        return "FIFO"
    if member.issym() or member.islnk():
        return link_problem(member.name, member.linkname, hard=member.islnk())
    if not (member.isreg() or member.isdir()):
        return "unsupported member type"
    return None


def zip_member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member must be refused, or None (zip symlinks are refused outright)."""
    if problem := name_problem(info.filename):
        return problem
    mode = info.external_attr >> 16
    if mode and stat.S_ISLNK(mode):
        return "symbolic link in a zip archive"
    if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "special file"
    return None


# --------------------------------------------------------------------------
# Extraction


def _refused(archive: Path, member: str, problem: str) -> ToolchainError:
    return ToolchainError(f"{archive.name}: refused member {member!r}: {problem}; nothing was installed")


def _extract_tar(archive: Path, dest: Path) -> None:
    def guard(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        if problem := tar_member_problem(member):
            raise _refused(archive, member.name, problem)
        # Where an interrupt test holds the run: the staging folder exists, the install does not.
        checkpoint("extract")
        try:
            # The second layer: the data filter resolves links against the
            # files already extracted (a link through an earlier link).
            return tarfile.data_filter(member, path)
        except tarfile.FilterError as exc:
            raise _refused(archive, member.name, str(exc)) from None

    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.errorlevel = 1
            tar.extractall(dest, filter=guard)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise ToolchainError(f"{archive.name}: corrupt or unreadable archive: {exc}") from None


def _extract_zip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                if problem := zip_member_problem(info):
                    raise _refused(archive, info.filename, problem)
            for info in infos:
                checkpoint("extract")
                rel = _strip_dot(info.filename.replace("\\", "/"))
                target = dest / rel
                if info.is_dir() or not rel:
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
                mode = info.external_attr >> 16
                if mode & 0o100:
                    target.chmod(0o755)
                stamp = time.mktime((*info.date_time, 0, 0, -1))
                os.utime(target, (stamp, stamp))
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise ToolchainError(f"{archive.name}: corrupt or unreadable archive: {exc}") from None


def content_root(staging: Path) -> Path:
    """The folder that holds the install: a single wrapper folder, or the staging folder itself."""
    entries = [p for p in staging.iterdir() if p.name != MARKER]
    if len(entries) == 1:
        only = entries[0]
        if only.is_dir() and not only.is_symlink() and only.name not in LAYOUT_DIRS:
            return only
    return staging


def extract_archive(archive: Path, target: Path, *, marker: Mapping[str, Any] | None = None) -> Path:
    """Unpack ``archive`` (tar.* or zip) so that ``target`` appears complete or not at all.

    ``target`` must not exist. ``marker`` is written inside the install just
    before the final rename, so a folder with a marker is always complete.
    """
    if target.exists() or target.is_symlink():
        raise ToolchainError(f"{target}: already exists; remove it before installing again")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    try:
        if zipfile.is_zipfile(archive):
            _extract_zip(archive, staging)
        else:
            _extract_tar(archive, staging)
        root = content_root(staging)
        if root == staging:
            # mkdtemp made it 0700; an install is as readable as any folder this process makes.
            fix_mode(root, folder=True)
        if marker is not None:
            atomic_write_json(root / MARKER, dict(marker))
        try:
            root.rename(target)
        except OSError as exc:
            raise ToolchainError(f"cannot move the install into {target}: {exc.strerror}") from None
    finally:
        if staging.exists():
            _remove_tree(staging)
    return target


def _remove_tree(path: Path) -> None:
    def make_writable(func: Any, p: str, _exc: object) -> None:
        # A read-only folder inside an archive must not make cleanup fail.
        with contextlib.suppress(OSError):
            Path(p).parent.chmod(0o755)
            Path(p).chmod(0o755)
            func(p)

    shutil.rmtree(path, onerror=make_writable)


def swap_into_place(new: Path, target: Path, staging: Path) -> None:
    """Move the finished tree ``new`` to ``target``; the old install (if any) goes aside into ``staging``.

    If the final rename fails, the old install is put back: a working
    install is never lost to a failed new one.
    """
    old = staging / "old"
    if target.exists() or target.is_symlink():
        target.rename(old)
    try:
        new.rename(target)
    except OSError as exc:
        if old.exists():
            old.rename(target)
        raise ToolchainError(f"cannot move the install into {target}: {exc.strerror}") from None


def remove_install(target: Path) -> None:
    """Delete an install so it is never seen half-deleted: rename it aside, then remove."""
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or target.is_file():
        target.unlink()
        return
    trash = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".trash"))
    target.rename(trash / "old")
    _remove_tree(trash)


def check_archive(archive: Path, *, name: str | None = None) -> None:
    """Read every member of ``archive`` to its end; ToolchainError when it is not a whole archive.

    A truncated tarball, an HTML page served under the tarball's name or a
    zip with a bad CRC all fail here, before the download is trusted.
    ``name`` is what the message calls the file (default: its own name).
    """
    shown = name or archive.name
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                if (bad := zf.testzip()) is not None:
                    raise ToolchainError(f"{shown}: corrupt archive: member {bad!r} fails its CRC")
            return
        try:
            tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - closed by the with block below
        except tarfile.ReadError:
            with archive.open("rb") as start:
                head = start.read(40)
            what = "empty" if not head else f"starts with {head.decode('ascii', 'replace')!r}"
            raise ToolchainError(f"{shown}: corrupt or unreadable archive: not a tar or zip archive ({what})") from None
        with tar:
            for member in tar:
                if member.isreg() and (data := tar.extractfile(member)) is not None:
                    with data:
                        while data.read(CHUNK):
                            pass
    except (tarfile.TarError, EOFError, zlib.error, zipfile.BadZipFile, OSError) as exc:
        raise ToolchainError(f"{shown}: corrupt or unreadable archive: {exc}") from None


def remove_stale(folder: Path, prefix: str, suffixes: tuple[str, ...]) -> list[Path]:
    """Remove ``prefix*suffix`` leftovers of dead runs in ``folder``; the caller holds the lock that owns them."""
    removed = []
    for leftover in sorted(folder.glob(f"{glob_escape(prefix)}*")):
        if leftover.name.endswith(suffixes):
            with contextlib.suppress(OSError):
                if leftover.is_dir() and not leftover.is_symlink():
                    _remove_tree(leftover)
                else:
                    leftover.unlink()
                removed.append(leftover)
    return removed


def glob_escape(text: str) -> str:
    """``text`` with glob's special characters taken literally."""
    return re.sub(r"([*?\[])", r"[\1]", text)


