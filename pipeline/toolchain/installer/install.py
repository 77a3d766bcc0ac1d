"""The one installer for every toolchain: fetch, verify, populate, check, seal, swap, reuse.

A toolchain is one or more files (TheRock's tarball or its wheels, the CUDA
wheels, the Vulkan SDK). Each is fetched by a caller-given function that
returns a local, verified file (an HTTP download through :func:`pipeline.toolchain.installer.download.download`,
or ``pip download`` for wheels). The installer holds one lock per install
folder (``--wait-lock`` waits for it), removes what dead runs left, and fills
a staging folder beside the install from the files: by default it unpacks
each archive with the one safe extractor (:func:`pipeline.archives.extract.extract_archive`)
and merges them; a caller may populate it otherwise (``pip install`` of the
verified wheel files, :mod:`pipeline.toolchain.therock_wheels`). It then lets
the caller finish and check the tree, writes a marker naming every file and
its sha256, and swaps the tree into place: the install is complete or absent,
a failed install never removes the working one, and a complete one is reused
without touching it (re-extraction gives every file a new mtime, which is why
ccache runs with ``compiler_check=content``).
"""

from __future__ import annotations

import contextlib
import filecmp
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.archives.extract import (
    MARKER,
    check_archive,
    extract_archive,
    name_problem,
    remove_install,
    remove_stale,
    swap_into_place,
    tree_change,
    tree_digests,
)
from pipeline.errors import ToolchainError
from pipeline.toolchain.installer.download import download, file_name_of
from pipeline.util.fsutil import atomic_write_json, confined, file_digest, fix_mode
from pipeline.util.http_retry import DEFAULT_RETRY, RetryPolicy

if TYPE_CHECKING:
    import requests
    from rich.console import Console


# Gets an extracted install before it replaces the working one; raises ToolchainError if unusable.
Check = Callable[[Path], None]
# Adds files to the merged tree before it is checked and sealed (e.g. links).
Finish = Callable[[Path], None]


@dataclass(frozen=True, kw_only=True)
class ArchiveRef:
    """One archive of an install: a stable label (a file name, a URL or ``name==version``) and its sha256.

    ``sha256`` None: not known before the fetch (a tarball published without a checksum).
    """

    label: str
    sha256: str | None


# Returns the archive of ``ref`` as a local file whose sha256 (when the ref names one) it has verified.
Fetch = Callable[[ArchiveRef], Path]
# Fills the empty tree (the 2nd argument) from each ref's fetched file; the 3rd is an empty scratch folder
# beside it, removed with the staging folder whatever happens.
Populate = Callable[[Sequence[tuple[ArchiveRef, Path]], Path, Path], None]


@dataclass(frozen=True, kw_only=True)
class InstalledSet:
    root: Path
    archives: tuple[ArchiveRef, ...]
    # True when the complete install was already there (nothing fetched or extracted).
    reused: bool


def read_marker(target: Path) -> dict[str, Any] | None:
    """The install marker of ``target``, or None when the install is absent or incomplete."""
    try:
        data = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def installed_set(target: Path, refs: Sequence[ArchiveRef]) -> InstalledSet | None:
    """The complete install at ``target`` when its marker names exactly ``refs``, else None.

    A ref without a sha256 matches its label alone; the marker says which digest was installed.
    """
    marker = read_marker(target)
    listed = marker.get("archives") if marker is not None else None
    if not isinstance(listed, list) or len(listed) != len(refs):
        return None
    found: list[ArchiveRef] = []
    for ref, entry in zip(refs, listed, strict=True):
        if not isinstance(entry, dict) or entry.get("label") != ref.label:
            return None
        digest = str(entry.get("sha256", "")).lower()
        if ref.sha256 is not None and digest != ref.sha256.lower():
            return None
        found.append(ArchiveRef(label=ref.label, sha256=digest))
    # Reused only while its files are what was extracted: an edited, replaced or removed file has it
    # installed again (from the download cache). Quick: sizes and times first, only files whose time
    # changed are hashed. Files added by tools (caches a compiler writes) are left alone.
    files = marker.get("files") if marker is not None else None
    if not isinstance(files, dict) or tree_change(target, files, quick=True, added=False) is not None:
        return None
    return InstalledSet(root=target, archives=tuple(found), reused=True)


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
            raise ToolchainError(
                f"{origin}: {entry.name} clashes with a different file already installed at {there}"
            )


def extract_each(files: Sequence[tuple[ArchiveRef, Path]], tree: Path, scratch: Path) -> None:
    """The default :data:`Populate`: unpack each archive (tar.gz, tar.xz, zip, a wheel) and merge them into ``tree``."""
    for i, (ref, path) in enumerate(files):
        part = extract_archive(path, scratch / f"part{i}")
        merge_tree(part, tree, origin=ref.label)


def install_archive_set(
    refs: Sequence[ArchiveRef],
    target: Path,
    *,
    fetch: Fetch,
    populate: Populate = extract_each,
    finish: Finish | None = None,
    force: bool = False,
    check: Check | None = None,
    wait_lock: float = 0.0,
    since: datetime | None = None,
    console: Console | None = None,
) -> InstalledSet:
    """Install ``refs`` as one tree at ``target``, reusing a complete install of the same set.

    ``fetch`` returns each archive as a local file whose sha256 it has
    verified; ``populate`` fills the staging tree from those files (by
    default each archive is extracted and merged); ``finish`` may add files to the tree, and ``check`` gets
    it (e.g. the compiler runs ``--version``) before it replaces anything;
    ``force`` re-installs a complete install. One run at a time installs a
    given folder (``wait_lock``: seconds to wait for another). Nothing appears
    at ``target`` unless every step succeeded.
    """
    if not refs:
        raise ToolchainError(f"{target.name}: no archives to install")
    if name_problem(target.name) or target.name in (".", ".."):
        raise ToolchainError(f"unsafe install folder name {target.name!r}")
    from pipeline.processes.locks import hold

    target.parent.mkdir(parents=True, exist_ok=True)
    with hold(
        target.parent / f".{target.name}.lock",
        what=f"the install {target}",
        since=since,
        wait_seconds=wait_lock,
    ):
        # Under the lock, every staging folder of this install is a dead run's.
        remove_stale(target.parent, f".{target.name}.", (".partial", ".trash"))
        if not force and (done := installed_set(target, refs)) is not None:
            return done
        files = [(ref, fetch(ref)) for ref in refs]
        got = tuple(
            ArchiveRef(label=ref.label, sha256=ref.sha256.lower() if ref.sha256 else file_digest(path)[1])
            for ref, path in files
        )
        status = (
            console.status(f"installing {', '.join(path.name for _, path in files)}")
            if console is not None
            else contextlib.nullcontext()
        )
        with status:
            _stage_and_swap(files, target, populate=populate, finish=finish, check=check, marker=_marker(got))
    return InstalledSet(root=target, archives=got, reused=False)


def _marker(refs: Sequence[ArchiveRef]) -> dict[str, object]:
    marker: dict[str, object] = {"archives": [{"label": r.label, "sha256": r.sha256} for r in refs]}
    if len(refs) == 1:
        # A one-archive install (TheRock's tarball) also names its digest at the top, as the record does.
        marker["sha256"] = refs[0].sha256
    return marker


def _stage_and_swap(
    files: Sequence[tuple[ArchiveRef, Path]],
    target: Path,
    *,
    populate: Populate,
    finish: Finish | None,
    check: Check | None,
    marker: dict[str, object],
) -> None:
    """Populate a tree beside ``target``, check it, then swap it in; the old install stays on failure."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    try:
        tree = staging / "tree"
        tree.mkdir()
        fix_mode(tree, folder=True)
        scratch = staging / "scratch"
        scratch.mkdir()
        populate(files, tree, scratch)
        if finish is not None:
            finish(tree)
        if check is not None:
            try:
                check(tree)
            except ToolchainError as err:
                # Out of the download cache too: a re-published archive is fetched again next time.
                for _, path in files:
                    path.with_name(path.name + ".json").unlink(missing_ok=True)
                    path.unlink(missing_ok=True)
                kept = "the working install was kept" if target.exists() else "nothing was installed"
                names = ", ".join(path.name for _, path in files)
                verb = "is" if len(files) == 1 else "are"
                raise ToolchainError(f"{names} {verb} not a usable install: {err.message}; {kept}") from None
        atomic_write_json(tree / MARKER, {**marker, "files": tree_digests(tree)})
        swap_into_place(tree, target, staging)
    finally:
        remove_install(staging)


@dataclass(frozen=True, kw_only=True)
class Installed:
    """A complete one-archive install."""

    root: Path
    url: str
    archive: str
    sha256: str
    # True when the complete install was already there (nothing extracted).
    reused: bool
    # True when the archive came from the download cache (nothing fetched).
    download_reused: bool


def install_archive(
    url: str,
    name: str,
    *,
    sha256: str | None = None,
    console: Console | None = None,
    root_dir: Path,
    download_cache: Path,
    force: bool = False,
    session: requests.Session | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    check: Check | None = None,
    wait_lock: float = 0.0,
    since: datetime | None = None,
) -> Installed:
    """Install the one archive at ``url`` as ``<root_dir>/<name>`` (:func:`install_archive_set`).

    The archive is downloaded through the download cache with the run's
    retry policy and lock wait; a complete install of the
    same file name (and sha256, when one is known) is reused as is.
    """
    if "/" in name or "\\" in name:
        raise ToolchainError(f"unsafe install folder name {name!r}")
    archive_name = file_name_of(url)
    fetched_from_cache: list[bool] = []

    def fetch(ref: ArchiveRef) -> Path:
        got = download(
            url,
            download_cache=download_cache,
            sha256=sha256,
            console=console,
            session=session,
            retry=retry,
            verify=check_archive,
            wait_lock=wait_lock,
            since=since,
        )
        fetched_from_cache.append(got.reused)
        return got.path

    target = confined(root_dir, name, "install folder", ToolchainError)
    installed = install_archive_set(
        [ArchiveRef(label=archive_name, sha256=sha256)],
        target,
        fetch=fetch,
        force=force,
        check=check,
        wait_lock=wait_lock,
        since=since,
        console=console,
    )
    return Installed(
        root=installed.root,
        url=url,
        archive=archive_name,
        sha256=str(installed.archives[0].sha256),
        reused=installed.reused,
        download_reused=installed.reused or all(fetched_from_cache),
    )
