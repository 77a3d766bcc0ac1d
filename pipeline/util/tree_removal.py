"""Removing a folder and everything in it, and nothing outside it.

``shutil.rmtree`` with an error handler that makes paths writable (the usual
recipe for a read-only folder unpacked from an archive) calls ``chmod`` on
each path it failed on, and ``chmod`` follows a symbolic link: a link in the
tree to a file elsewhere gets that file's mode changed. ``rmtree`` also
descends into a filesystem mounted inside the tree and empties it.

:func:`remove_tree` never follows a link (a link is unlinked; a mode is only
ever changed on a folder of the tree itself, checked with ``lstat`` and, where
the OS can, changed without following links) and stays on the tree's own
filesystem: a folder on another device (a bind or tmpfs mount inside) is left
in place, with everything in it, and named in the error.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

# What a read-only folder of the tree is made before its entries are removed: its owner may
# list, enter and change it.
_WRITABLE = stat.S_IRWXU


def _make_writable(folder: str) -> None:
    """Give the tree's own folder ``folder`` its owner's rwx, never through a link."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        return  # a link (or anything else) is never chmod'ed: that would change its target
    mode = stat.S_IMODE(info.st_mode) | _WRITABLE
    if os.chmod in os.supports_follow_symlinks:
        Path(folder).chmod(mode, follow_symlinks=False)
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        # An unreadable folder cannot be opened by a non-root owner: lstat said it is a folder.
        Path(folder).chmod(mode)
        return
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _retry_writable(action: Callable[[str], None], path: str, parent: str) -> None:
    """Run ``action(path)``; on a permission error make ``parent`` (a folder of the tree) writable, once more."""
    try:
        action(path)
    except PermissionError:
        _make_writable(parent)
        action(path)


def _remove_folder(folder: str, device: int, *, top: bool = False) -> None:
    try:
        entries = list(os.scandir(folder))
    except PermissionError:
        _make_writable(folder)
        entries = list(os.scandir(folder))
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.stat(follow_symlinks=False).st_dev != device:
                raise OSError(
                    errno.EXDEV,
                    "another filesystem is mounted there: left in place (unmount it first)",
                    entry.path,
                )
            _remove_folder(entry.path, device)
        else:
            _retry_writable(os.unlink, entry.path, folder)
    if top:
        Path(folder).rmdir()  # its parent is outside the tree: never made writable here
    else:
        _retry_writable(os.rmdir, folder, str(Path(folder).parent))


def remove_tree(path: Path) -> None:
    """Delete ``path`` (a folder and all in it, or a file or link) without touching anything outside it.

    OSError when something cannot be removed, naming it; a mount inside the tree is one
    (``EXDEV``), left in place with what it holds.
    """
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        path.unlink()
        return
    _remove_folder(str(path), info.st_dev, top=True)


class Removal:
    """Folders moved aside, removed by a thread of their own (:func:`remove_aside`)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.errors: list[OSError] = []
        self._thread = threading.Thread(target=self._remove, name="remove-aside", daemon=True)
        self._thread.start()

    def _remove(self) -> None:
        for path in self.paths:
            try:
                remove_tree(path)
            except OSError as exc:
                self.errors.append(exc)

    def wait(self) -> list[OSError]:
        """Wait until every folder is removed; what could not be (a mount inside: left in place)."""
        self._thread.join()
        return self.errors


def aside_name(path: Path) -> str:
    """The prefix of the folders :func:`remove_aside` moves ``path`` into (hidden, beside it)."""
    return f".{path.name}.old-"


def remove_aside(path: Path) -> Removal:
    """Free ``path`` at once and remove what it held in the background, by :func:`remove_tree`'s rules.

    ``path`` is renamed into a new hidden folder beside it (the same filesystem: a rename, instant),
    which a thread removes; so do folders left there by a run that was stopped before its removal
    ended. Why: a warm build's fresh build folder waited for the old one's deletion (thousands of
    files, a second on a busy disk) before CMake could start. Call :meth:`Removal.wait` before the
    process ends, or a daemon thread's removal is cut short (the next call finishes it).
    """
    stale = sorted(path.parent.glob(aside_name(path) + "*"))
    aside = Path(tempfile.mkdtemp(dir=path.parent, prefix=aside_name(path)))
    path.rename(aside / path.name)
    return Removal([aside, *stale])
