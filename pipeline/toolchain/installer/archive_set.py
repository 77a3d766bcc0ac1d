"""One installer for every toolchain archive: a verified set, merged into one tree.

A toolchain is one or more archives (TheRock's tarball, the CUDA wheels, the
Vulkan SDK). Each is fetched by a caller-given function that returns a local,
sha256-verified file (an HTTP download through :func:`pipeline.toolchain.installer.download.download`,
or ``pip download`` for wheels). This module unpacks each one with the one
safe extractor (:func:`pipeline.archives.extract.extract_archive`), merges them,
lets the caller finish the tree (e.g. add links), writes a marker naming
every archive and its sha256, and renames the tree into place: the install is
complete or absent, and a complete one is reused without touching it (new
mtimes would cost ccache's ``compiler_check``).
"""

from __future__ import annotations

import filecmp
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipeline.archives.extract import (
    MARKER,
    extract_archive,
    name_problem,
    remove_install,
    remove_stale,
    swap_into_place,
    tree_change,
    tree_digests,
)
from pipeline.errors import ToolchainError
from pipeline.toolchain.installer.install import read_marker
from pipeline.util.fsutil import atomic_write_json, fix_mode


@dataclass(frozen=True, kw_only=True)
class ArchiveRef:
    """One archive of a set: a stable label (URL or ``name==version``) and its sha256."""

    label: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class InstalledSet:
    root: Path
    archives: tuple[ArchiveRef, ...]
    # True when the complete install was already there (nothing fetched or extracted).
    reused: bool


Fetch = Callable[[ArchiveRef], Path]
Finish = Callable[[Path], None]


def _marker_archives(refs: Sequence[ArchiveRef]) -> list[dict[str, str]]:
    return [{"label": r.label, "sha256": r.sha256.lower()} for r in refs]


def installed_set(target: Path, refs: Sequence[ArchiveRef]) -> InstalledSet | None:
    """The complete install at ``target`` when its marker names exactly ``refs``, else None."""
    marker = read_marker(target)
    if marker is None or marker.get("archives") != _marker_archives(refs):
        return None
    # Reused only while its files are what was installed (see install.install_archive).
    listed = marker.get("files")
    if not isinstance(listed, dict) or tree_change(target, listed, quick=True, added=False) is not None:
        return None
    return InstalledSet(root=target, archives=tuple(refs), reused=True)


def merge_tree(src: Path, dst: Path, *, origin: str) -> None:
    """Move everything under ``src`` into ``dst``; identical files may repeat, different ones may not.

    Wheels of one toolkit share folders (``nvidia/cu13/include``) and a few
    identical files (``nvidia/__init__.py``); two archives that disagree on a
    file are a broken pin set, not something to resolve silently.
    """
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir()):
        there = dst / entry.name
        if not there.exists() and not there.is_symlink():
            entry.rename(there)
        elif entry.is_dir() and not entry.is_symlink() and there.is_dir() and not there.is_symlink():
            merge_tree(entry, there, origin=origin)
        elif entry.is_file() and there.is_file() and filecmp.cmp(entry, there, shallow=False):
            entry.unlink()
        else:
            raise ToolchainError(f"{origin}: {entry.name} clashes with a different file already installed at {there}")


def install_archive_set(
    refs: Sequence[ArchiveRef],
    target: Path,
    *,
    fetch: Fetch,
    finish: Finish | None = None,
    force: bool = False,
    check: Callable[[Path], None] | None = None,
    wait_lock: float = 0.0,
    since: datetime | None = None,
) -> InstalledSet:
    """Install ``refs`` as one tree at ``target``, reusing a complete install of the same set.

    ``fetch`` returns each archive as a local file whose sha256 it has
    verified; ``finish`` may add files to the merged tree before it is
    sealed. Nothing appears at ``target`` unless every step succeeded.
    """
    if not refs:
        raise ToolchainError(f"{target.name}: no archives to install")
    if name_problem(target.name) or target.name in (".", ".."):
        raise ToolchainError(f"unsafe install folder name {target.name!r}")
    from pipeline.guard.locks import hold

    target.parent.mkdir(parents=True, exist_ok=True)
    with hold(target.parent / f".{target.name}.lock", what=f"the install {target}", since=since,
              wait_seconds=wait_lock):
        # Under the lock, every staging folder of this install is a dead run's.
        remove_stale(target.parent, f".{target.name}.", (".partial", ".trash"))
        if not force and (done := installed_set(target, refs)) is not None:
            return done
        files = [(ref, fetch(ref)) for ref in refs]
        _stage_and_swap(files, target, finish=finish, check=check,
                        marker={"archives": _marker_archives(refs)})
    return InstalledSet(root=target, archives=tuple(refs), reused=False)


def _stage_and_swap(
    files: Sequence[tuple[ArchiveRef, Path]], target: Path, *, finish: Finish | None,
    check: Callable[[Path], None] | None, marker: dict[str, object],
) -> None:
    """Merge the archives beside ``target``, check the tree, then swap it in; the old install stays on failure."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    try:
        tree = staging / "tree"
        tree.mkdir()
        fix_mode(tree, folder=True)
        for i, (ref, path) in enumerate(files):
            part = extract_archive(path, staging / f"part{i}")
            merge_tree(part, tree, origin=ref.label)
        if finish is not None:
            finish(tree)
        if check is not None:
            check(tree)
        atomic_write_json(tree / MARKER, {**marker, "files": tree_digests(tree)})
        swap_into_place(tree, target, staging)
    finally:
        remove_install(staging)
