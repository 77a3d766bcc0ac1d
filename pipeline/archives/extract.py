"""Safe, atomic extraction of a toolchain or bundle archive.

Every member is checked before it is written (no absolute path, no ``..``,
no device, no link leaving the root), on top of tarfile's ``data`` filter.
The archive is unpacked into a hidden staging folder beside the target and
renamed into place with a marker inside, so an interrupted or refused
extraction leaves no partial install. The member-name rules
(:func:`name_problem`) are the ones bundles are written and read with too.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, cast

from pipeline.errors import ToolchainError
from pipeline.names import is_absolute_name, member_name_problem
from pipeline.processes.pause_points import checkpoint
from pipeline.util.fsutil import atomic_write_json, confined, file_digest, fix_mode
from pipeline.util.tree_removal import remove_tree

# Written inside the install as the last step before it is renamed into place.
MARKER = ".pipeline-install.json"
# The one rule for member names, shared with the bundles (pipeline.names).
name_problem = member_name_problem
# Folder names that are the top of an install's layout, never a wrapper folder
# to strip: an archive holding only "lib/" is flat, not wrapped in "lib".
LAYOUT_DIRS = frozenset({"bin", "lib", "lib64", "llvm", "include", "share", "libexec", "etc", "amdgcn"})
CHUNK = 1024 * 1024


def link_problem(name: str, linkname: str, *, hard: bool) -> str | None:
    """Why a link member is unsafe: absolute, or pointing outside the install root.

    A symbolic link is relative to its own folder; a hard link's target is a
    member name, relative to the archive root.
    """
    if not linkname:
        return "link without a target"
    if is_absolute_name(linkname):
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
    # Permission bits without file-type bits (what zipfile.writestr and many
    # Windows tools write) say nothing of the type: a plain file or folder.
    if stat.S_IFMT(mode) == 0:
        return None
    if stat.S_ISLNK(mode):
        return "symbolic link in a zip archive"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "special file"
    return None


def _member_key(name: str) -> str:
    """A member's place in the tree: ``./a/b/`` and ``a/b`` are one place."""
    return posixpath.normpath(_strip_dot(name.replace("\\", "/"))).rstrip("/")


def tar_placement_problems(members: Iterable[tarfile.TarInfo]) -> tuple[str, str] | None:
    """(member, why) for the first member that cannot be placed in the tree, or None.

    On top of each member's own checks: a name given twice (the second would
    silently replace the first, or a link would be followed by a write), and
    a hard link whose target is not an earlier file of the archive (tarfile
    fails on it with a KeyError; a later one would link to nothing yet).
    """
    placement = TarPlacement()
    for member in members:
        if problem := placement.problem(member):
            return member.name, problem
    return None


class TarPlacement:
    """:func:`tar_placement_problems` one member at a time, in the archive's order: each verdict
    depends only on the members before it, so an archive can be checked as it streams."""

    def __init__(self) -> None:
        self._kinds: dict[str, bool] = {}  # place -> is a folder

    def problem(self, member: tarfile.TarInfo) -> str | None:
        """Why ``member``, coming after every member seen so far, cannot be placed; None: placed."""
        kinds = self._kinds
        if problem := tar_member_problem(member):
            return problem
        key = _member_key(member.name)
        if key in kinds and not (kinds[key] and member.isdir()):
            return "duplicate name: a member of this name comes earlier"
        if member.islnk():
            target = _member_key(member.linkname)
            if target not in kinds:
                return f"hard link to {member.linkname!r}, which is no earlier member"
            if kinds[target]:
                return f"hard link to folder {member.linkname!r}"
        kinds[key] = member.isdir()
        return None


def zip_placement_problems(infos: Iterable[zipfile.ZipInfo]) -> tuple[str, str] | None:
    """(member, why) for the first zip member that cannot be placed (its own checks, or a repeated name)."""
    kinds: dict[str, bool] = {}
    for info in infos:
        if problem := zip_member_problem(info):
            return info.filename, problem
        key = _member_key(info.filename)
        if key in kinds and not (kinds[key] and info.is_dir()):
            return info.filename, "duplicate name: a member of this name comes earlier"
        kinds[key] = info.is_dir()
    return None


# --------------------------------------------------------------------------
# Extraction


def _refused(archive: Path, member: str, problem: str) -> ToolchainError:
    return ToolchainError(f"{archive.name}: refused member {member!r}: {problem}; nothing was installed")


def _extract_tar(archive: Path, dest: Path) -> None:
    """One pass over the archive as it streams: each member is placed (checked against the members
    before it, :class:`TarPlacement`) just before it is written, into ``dest``, the staging folder;
    a refusal removes that folder, so nothing is installed. Reading every header first and the data
    after inflated the whole archive twice (the seek back starts a compressed stream over)."""
    placement = TarPlacement()

    def guard(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        if problem := placement.problem(member):
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
        with _decompressed(archive) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            tar.errorlevel = 1
            tar.extractall(dest, filter=guard)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError) as exc:
        raise ToolchainError(f"{archive.name}: corrupt or unreadable archive: {exc}") from None


def _decompressed(archive: Path) -> IO[bytes]:
    """``archive`` read through its compression (gzip, xz, bzip2, or none: a plain tar), by the module
    that reads every member of a concatenated stream: the pipeline's own tar.gz is one gzip member per
    file (pipeline.archives.deterministic), which tarfile's own stream mode ("r|gz") stops after."""
    with archive.open("rb") as fh:
        magic = fh.read(6)
    if magic[:2] == b"\x1f\x8b":
        # GzipFile is a binary file; typeshed does not call it IO[bytes].
        return cast(IO[bytes], gzip.open(archive, "rb"))
    if magic == b"\xfd7zXZ\x00":
        return lzma.open(archive, "rb")
    if magic[:3] == b"BZh":
        return bz2.open(archive, "rb")
    return archive.open("rb")


def _extract_zip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if refused := zip_placement_problems(infos):
                raise _refused(archive, *refused)
            for info in infos:
                checkpoint("extract")
                rel = _strip_dot(info.filename.replace("\\", "/"))
                # Checked above by name; the one confinement rule still has the last word.
                target = confined(dest, rel, f"{archive.name}: member", ToolchainError) if rel else dest
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


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of every file and symbolic link under ``root``, the marker left out."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        for name in [*dirs, *files]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel != MARKER and (path.is_symlink() or path.is_file()):
                yield rel, path


def tree_digests(root: Path) -> dict[str, str]:
    """What a tree holds, to verify it later: ``{path: "<sha256> <size> <mtime_ns>[ x]" | "-> <target>"}``.

    Every file (content, size, modification time, whether it is executable)
    and every symbolic link; folders are implied by their contents.
    """
    found: dict[str, str] = {}
    for rel, path in _walk(root):
        if path.is_symlink():
            found[rel] = f"-> {path.readlink()}"
            continue
        info = path.stat()
        executable = " x" if info.st_mode & 0o100 else ""
        found[rel] = f"{file_digest(path)[1]} {info.st_size} {info.st_mtime_ns}{executable}"
    return dict(sorted(found.items()))


def tree_change(root: Path, listed: Mapping[str, Any], *, quick: bool, added: bool) -> str | None:
    """The first way ``root`` differs from its :func:`tree_digests` listing, or None.

    ``quick``: a file whose size and modification time are as listed is
    taken as unchanged, and only the others are hashed (a toolchain of
    gigabytes); else every file is hashed. ``added``: a file or link that is
    not listed counts as a change too.
    """
    for rel, want in listed.items():
        path = root / rel
        if not isinstance(want, str) or name_problem(rel):
            return f"{rel!r}: not a listing entry"
        if want.startswith("-> "):
            if not path.is_symlink() or str(path.readlink()) != want[3:]:
                return f"{rel} changed"
            continue
        try:
            digest, size, mtime, *executable = want.split()
            info = path.lstat()
        except (ValueError, OSError):
            return f"{rel} is missing"
        if (
            not stat.S_ISREG(info.st_mode)
            or str(info.st_size) != size
            or bool(info.st_mode & 0o100) != bool(executable)
        ):
            return f"{rel} changed"
        if (not quick or str(info.st_mtime_ns) != mtime) and file_digest(path)[1] != digest:
            return f"{rel} changed"
    if added:
        for rel, _path in _walk(root):
            if rel not in listed:
                return f"{rel} was added"
    return None


def extract_archive(
    archive: Path,
    target: Path,
    *,
    marker: Mapping[str, Any] | None = None,
    digests: bool = False,
    lift: bool = True,
) -> Path:
    """Unpack ``archive`` (tar.* or zip) so that ``target`` appears complete or not at all.

    ``target`` must not exist. ``marker`` is written inside the install just
    before the final rename, so a folder with a marker is always complete.
    ``digests``: the marker also lists every file's digest (:func:`tree_digests`),
    so a reuse can verify the tree is still what the archive held. ``lift``: an
    archive's one wrapper folder becomes ``target`` (:func:`content_root`); without
    it ``target`` holds the archive's top level as it is (check-bundle reads the
    manifest's place from there).
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
        root = content_root(staging) if lift else staging
        if root == staging:
            # mkdtemp made it 0700; an install is as readable as any folder this process makes.
            fix_mode(root, folder=True)
        if marker is not None:
            atomic_write_json(root / MARKER, {**marker, **({"files": tree_digests(root)} if digests else {})})
        try:
            root.rename(target)
        except OSError as exc:
            raise ToolchainError(f"cannot move the install into {target}: {exc.strerror}") from None
    finally:
        if staging.exists():
            _remove_tree(staging, quiet=True)
    return target


def _remove_tree(path: Path, *, quiet: bool = False) -> None:
    """Remove a tree of ours: a read-only folder inside (from an archive) does not stop it; a link
    inside never has its target changed, a mount inside is left alone (util.tree_removal).
    ToolchainError naming what is left, unless ``quiet`` (a clean-up after another error)."""
    try:
        remove_tree(path)
    except OSError as exc:
        if not quiet:
            raise ToolchainError(f"cannot remove {exc.filename or path}: {exc.strerror}") from None


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

    A truncated tarball, an HTML page served under the tarball's name, a
    zip with a bad CRC or a member extraction would refuse (see
    :func:`tar_placement_problems`) all fail here, before the download is trusted.
    ``name`` is what the message calls the file (default: its own name).
    """
    shown = name or archive.name
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                if (bad := zf.testzip()) is not None:
                    raise ToolchainError(f"{shown}: corrupt archive: member {bad!r} fails its CRC")
                if refused := zip_placement_problems(zf.infolist()):
                    raise ToolchainError(f"{shown}: refused member {refused[0]!r}: {refused[1]}")
            return
        try:
            tar = tarfile.open(archive, "r:*")  # noqa: SIM115 - closed by the with block below
        except tarfile.ReadError:
            with archive.open("rb") as start:
                head = start.read(40)
            what = "empty" if not head else f"starts with {head.decode('ascii', 'replace')!r}"
            raise ToolchainError(
                f"{shown}: corrupt or unreadable archive: not a tar or zip archive ({what})"
            ) from None
        with tar:
            for member in tar:
                if member.isreg() and (data := tar.extractfile(member)) is not None:
                    with data:
                        while data.read(CHUNK):
                            pass
            # An archive that extraction would refuse is not a whole download either: never trusted.
            if refused := tar_placement_problems(tar.getmembers()):
                raise ToolchainError(f"{shown}: refused member {refused[0]!r}: {refused[1]}")
    except (tarfile.TarError, EOFError, zlib.error, zipfile.BadZipFile, OSError) as exc:
        raise ToolchainError(f"{shown}: corrupt or unreadable archive: {exc}") from None


def remove_stale(folder: Path, prefix: str, suffixes: tuple[str, ...]) -> list[Path]:
    """Remove ``prefix*suffix`` leftovers of dead runs in ``folder``; the caller holds the lock that owns them."""
    removed = []
    for leftover in sorted(folder.glob(f"{glob_escape(prefix)}*")):
        if leftover.name.endswith(suffixes):
            with contextlib.suppress(OSError):
                if leftover.is_dir() and not leftover.is_symlink():
                    _remove_tree(leftover, quiet=True)
                else:
                    leftover.unlink()
                removed.append(leftover)
    return removed


def glob_escape(text: str) -> str:
    """``text`` with glob's special characters taken literally."""
    return re.sub(r"([*?\[])", r"[\1]", text)
