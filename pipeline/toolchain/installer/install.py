"""Install a toolchain archive into the toolchain cache: download, verify, extract, reuse.

A complete install (its marker names the same archive, and the same sha256
when one is known) is reused as is: re-extraction gives every file a new
mtime, which is why ccache runs with ``compiler_check=content``.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable
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
from pipeline.util.fsutil import atomic_write_json, confined
from pipeline.util.retry import DEFAULT_BACKOFF

if TYPE_CHECKING:
    import requests
    from rich.console import Console


# Gets an extracted install before it replaces the working one; raises ToolchainError if unusable.
Check = Callable[[Path], None]


@dataclass(frozen=True, kw_only=True)
class Installed:
    """A complete toolchain install."""

    root: Path
    url: str
    archive: str
    sha256: str
    # True when the complete install was already there (nothing extracted).
    reused: bool
    # True when the archive came from the download cache (nothing fetched).
    download_reused: bool


def read_marker(target: Path) -> dict[str, Any] | None:
    """The install marker of ``target``, or None when the install is absent or incomplete."""
    try:
        data = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def install_archive(
    url: str,
    name: str,
    *,
    sha256: str | None = None,
    console: Console | None = None,
    root_dir: Path,
    cache_dir: Path,
    force: bool = False,
    session: requests.Session | None = None,
    attempts: int = 5,
    backoff_seconds: float = DEFAULT_BACKOFF,
    check: Check | None = None,
    wait_lock: float = 0.0,
    since: datetime | None = None,
    retry_budget: float | None = None,
) -> Installed:
    """Install the archive at ``url`` as ``<root_dir>/<name>``, reusing a complete install.

    A complete install (its marker names the same archive, and the same
    sha256 when one is known) is reused as is; ``force`` re-installs it.
    ``check`` gets the extracted tree before it replaces anything (e.g. the
    compiler runs ``--version``). One run at a time installs a given folder.
    """
    if name_problem(name) or "/" in name or "\\" in name or name in (".", ".."):
        raise ToolchainError(f"unsafe install folder name {name!r}")
    target = confined(root_dir, name, "install folder", ToolchainError)
    archive_name = file_name_of(url)

    def complete() -> Installed | None:
        marker = read_marker(target)
        if (
            marker is None
            or marker.get("archive") != archive_name
            or (sha256 is not None and str(marker.get("sha256", "")).lower() != sha256.lower())
            or not isinstance(listed := marker.get("files"), dict)
            # Reused only while its files are what was extracted: an edited, replaced or removed
            # file has it installed again (from the download cache). Quick: sizes and times first,
            # only files whose time changed are hashed. Files added by tools are left alone.
            or tree_change(target, listed, quick=True, added=False) is not None
        ):
            return None
        return Installed(
            root=target,
            url=url,
            archive=archive_name,
            sha256=str(marker.get("sha256", "")),
            reused=True,
            download_reused=True,
        )

    from pipeline.guard.locks import hold

    with hold(root_dir / f".{name}.lock", what=f"the install {target}", since=since, wait_seconds=wait_lock):
        # Under the lock, every staging folder of this install is a dead run's.
        remove_stale(root_dir, f".{name}.", (".partial", ".trash"))
        if not force and (done := complete()) is not None:
            return done
        got = download(
            url,
            cache_dir=cache_dir,
            sha256=sha256,
            console=console,
            session=session,
            attempts=attempts,
            backoff_seconds=backoff_seconds,
            retry_budget=retry_budget,
            verify=check_archive,
            wait_lock=wait_lock,
            since=since,
        )
        status = console.status(f"installing {archive_name}") if console is not None else contextlib.nullcontext()
        with status:
            stage_and_swap(
                got.path,
                target,
                marker={"url": url, "archive": archive_name, "sha256": got.sha256, "size": got.size},
                check=check,
            )
    return Installed(
        root=target,
        url=url,
        archive=archive_name,
        sha256=got.sha256,
        reused=False,
        download_reused=got.reused,
    )


def stage_and_swap(
    archive: Path, target: Path, *, marker: dict[str, Any], check: Check | None = None
) -> None:
    """Extract ``archive`` beside ``target``, check it, then put it in ``target``'s place.

    The working install at ``target`` is moved aside only once the new one is
    complete and has passed ``check``, and is put back if the new one cannot
    be moved in: a failed install never removes the old one.
    """
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    try:
        new = extract_archive(archive, staging / "new")
        if check is not None:
            try:
                check(new)
            except ToolchainError as err:
                # Out of the download cache too: a re-published archive is fetched again next time.
                archive.with_name(archive.name + ".json").unlink(missing_ok=True)
                archive.unlink(missing_ok=True)
                kept = "the working install was kept" if target.exists() else "nothing was installed"
                raise ToolchainError(f"{archive.name} is not a usable install: {err.message}; {kept}") from None
        atomic_write_json(new / MARKER, {**marker, "files": tree_digests(new)})
        swap_into_place(new, target, staging)
    finally:
        remove_install(staging)
