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
                raise OSError(errno.EXDEV, "another filesystem is mounted there: left in place (unmount it first)",
                              entry.path)
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
