"""Install a toolchain archive into the toolchain cache: download, verify, extract, reuse.

A complete install (its marker names the same archive, and the same sha256
when one is known) is reused as is: re-extraction gives every file a new
mtime, which is why ccache runs with ``compiler_check=content``.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import ToolchainError
from pipeline.installer.download import download, file_name_of
from pipeline.installer.extract import MARKER, extract_archive, name_problem, remove_install
from pipeline.retry import DEFAULT_BACKOFF

if TYPE_CHECKING:
    import requests
    from rich.console import Console


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
    retry_budget: float | None = None,
) -> Installed:
    """Install the archive at ``url`` as ``<root_dir>/<name>``, reusing a complete install.

    A complete install (its marker names the same archive, and the same
    sha256 when one is known) is reused as is; ``force`` re-installs it.
    """
    if name_problem(name) or "/" in name or "\\" in name or name in (".", ".."):
        raise ToolchainError(f"unsafe install folder name {name!r}")
    target = root_dir / name
    archive_name = file_name_of(url)

    def complete() -> Installed | None:
        marker = read_marker(target)
        if (
            marker is None
            or marker.get("archive") != archive_name
            or (sha256 is not None and str(marker.get("sha256", "")).lower() != sha256.lower())
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
    )
    remove_install(target)
    status = console.status(f"installing {archive_name}") if console is not None else contextlib.nullcontext()
    try:
        with status:
            extract_archive(
                got.path,
                target,
                marker={"url": url, "archive": archive_name, "sha256": got.sha256, "size": got.size},
            )
    except ToolchainError:
        # Another run on this machine may have installed the same archive meanwhile.
        if (done := complete()) is not None:
            return done
        raise
    return Installed(
        root=target,
        url=url,
        archive=archive_name,
        sha256=got.sha256,
        reused=False,
        download_reused=got.reused,
    )
