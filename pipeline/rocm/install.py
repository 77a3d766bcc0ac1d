"""Download a toolchain archive once, and install it safely and atomically.

- Download: streamed with a progress bar, retried with backoff on transient
  failures, checked against ``Content-Length`` and (when known) a sha256,
  then renamed into a local download cache, so a second run downloads
  nothing.
- Extraction: every member is checked before it is written (no absolute
  path, no ``..``, no device, no link leaving the install), on top of
  tarfile's ``data`` filter. The archive is unpacked into a hidden staging
  folder beside the target and renamed into place with a marker inside, so
  an interrupted or refused extraction leaves no partial install, and a
  complete install is reused instead of being re-extracted (re-extraction
  gives every file a new mtime; see DESIGN.md on ``compiler_check``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from pipeline.errors import NetworkError, ToolchainError, UsageError
from pipeline.fsutil import atomic_write_json, human_bytes
from pipeline.retry import RetriesExhausted, Retryable, call_with_retries, default_backoff

if TYPE_CHECKING:
    import requests
    from rich.console import Console

DOWNLOAD_CACHE_ENV = "PIPELINE_DOWNLOAD_CACHE"
TOOLCHAIN_DIR_ENV = "PIPELINE_TOOLCHAIN_DIR"
# Written inside the install as the last step before it is renamed into place.
MARKER = ".pipeline-install.json"
CHUNK = 1024 * 1024
# Folder names that are the top of an install's layout, never a wrapper folder
# to strip: an archive holding only "lib/" is flat, not wrapped in "lib".
LAYOUT_DIRS = frozenset({"bin", "lib", "lib64", "llvm", "include", "share", "libexec", "etc", "amdgcn"})
_DRIVE = re.compile(r"^[A-Za-z]:")


# --------------------------------------------------------------------------
# Where things go


def _cache_home() -> Path:
    from pipeline.ccache import pipeline_cache_home

    return pipeline_cache_home()


def download_cache_dir() -> Path:
    """``$PIPELINE_DOWNLOAD_CACHE``, else ``<pipeline cache home>/downloads``."""
    if explicit := os.environ.get(DOWNLOAD_CACHE_ENV):
        return Path(explicit)
    return _cache_home() / "downloads"


def toolchains_dir() -> Path:
    """``$PIPELINE_TOOLCHAIN_DIR``, else ``<pipeline cache home>/toolchains``."""
    if explicit := os.environ.get(TOOLCHAIN_DIR_ENV):
        return Path(explicit)
    return _cache_home() / "toolchains"


def file_name_of(url: str) -> str:
    """The last path segment of ``url``: the name the download is cached under."""
    name = unquote(posixpath.basename(urlsplit(url).path))
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ToolchainError(f"{url}: no file name at the end of the URL")
    return name


# --------------------------------------------------------------------------
# Download


@dataclass(frozen=True, kw_only=True)
class Downloaded:
    """An archive in the download cache."""

    path: Path
    url: str
    size: int
    sha256: str
    # True when the cache already held it and nothing was fetched.
    reused: bool


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def cached_download(url: str, cache_dir: Path, sha256: str | None = None) -> Downloaded | None:
    """The cached copy of ``url`` when it is complete and matches ``sha256``, else None."""
    path = cache_dir / file_name_of(url)
    try:
        meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("size") != size:
        return None
    if sha256 is not None:
        if str(meta.get("sha256", "")).lower() != sha256.lower():
            return None
    elif meta.get("url") != url:
        return None
    return Downloaded(path=path, url=url, size=size, sha256=str(meta["sha256"]), reused=True)


def download(
    url: str,
    *,
    cache_dir: Path | None = None,
    sha256: str | None = None,
    console: Console | None = None,
    session: requests.Session | None = None,
    attempts: int = 5,
    backoff_seconds: float | None = None,
    timeout_seconds: float = 60.0,
) -> Downloaded:
    """Fetch ``url`` into the download cache (or reuse the cached copy).

    Transient failures (connection errors, 5xx, 429, a body shorter than its
    ``Content-Length``) are retried ``attempts`` times with exponential
    backoff; then NetworkError. A sha256 mismatch is a ToolchainError and is
    not retried. The cache only ever holds complete, verified files.
    """
    import requests

    cache_dir = cache_dir or download_cache_dir()
    if (hit := cached_download(url, cache_dir, sha256)) is not None:
        if console is not None:
            console.print(f"download cache: {hit.path.name} ({human_bytes(hit.size)})", highlight=False)
        return hit
    cache_dir.mkdir(parents=True, exist_ok=True)
    scheme = urlsplit(url).scheme
    if scheme == "file":
        path, size, digest = _copy_local(url, cache_dir)
    elif scheme not in ("http", "https"):
        raise UsageError(f"toolchain URL {url!r}: expected an http(s):// or file:// URL")
    else:
        backoff = default_backoff() if backoff_seconds is None else backoff_seconds
        own_session = session is None
        http = session or requests.Session()
        try:
            path, size, digest = call_with_retries(
                _fetch_once, http, url, cache_dir, console, timeout_seconds,
                attempts=attempts, backoff=backoff, max_wait=max(backoff, 30.0),
            )  # fmt: skip
        except RetriesExhausted as err:
            raise NetworkError(f"download of {url} failed after {attempts} attempts: {err.last.reason}") from None
        finally:
            if own_session:
                http.close()
    try:
        if sha256 is not None and digest.lower() != sha256.lower():
            raise ToolchainError(f"sha256 mismatch for {url}: expected {sha256.lower()}, got {digest}")
        final = cache_dir / file_name_of(url)
        # An older sidecar must never vouch for the new file.
        _sidecar(final).unlink(missing_ok=True)
        path.replace(final)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    # The sidecar is written last: a file without one is never trusted.
    atomic_write_json(_sidecar(final), {"url": url, "size": size, "sha256": digest})
    return Downloaded(path=final, url=url, size=size, sha256=digest, reused=False)


def _fetch_once(
    http: requests.Session, url: str, cache_dir: Path, console: Console | None, timeout: float
) -> tuple[Path, int, str]:
    """One attempt: stream ``url`` into a temp file; (temp path, size, sha256)."""
    import requests

    name = file_name_of(url)
    try:
        resp = http.get(url, stream=True, timeout=timeout)
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise Retryable(f"cannot connect: {type(exc).__name__}") from None
    with resp:
        if resp.status_code == 429 or resp.status_code >= 500:
            raise Retryable(f"HTTP {resp.status_code}")
        if resp.status_code != 200:
            raise NetworkError(f"download of {url} failed: HTTP {resp.status_code}")
        declared = _content_length(resp.headers)
        fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{name}.", suffix=".part")
        tmp = Path(tmp_name)
        digest = hashlib.sha256()
        size = 0
        try:
            with os.fdopen(fd, "wb") as out, _progress(console, name, declared) as advance:
                try:
                    for chunk in resp.iter_content(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
                        advance(len(chunk))
                except (requests.RequestException, OSError) as exc:
                    if isinstance(exc, OSError) and not isinstance(exc, requests.RequestException):
                        raise ToolchainError(f"cannot write {tmp}: {exc.strerror}") from None
                    got = f"got {size} of {declared} bytes" if declared is not None else f"got {size} bytes"
                    raise Retryable(f"transfer truncated ({got})") from None
            if declared is not None and size != declared:
                raise Retryable(f"transfer truncated (got {size} of {declared} bytes)")
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return tmp, size, digest.hexdigest()


def _copy_local(url: str, cache_dir: Path) -> tuple[Path, int, str]:
    """A ``file://`` archive (offline use): copied into the cache like a download."""
    from urllib.request import url2pathname

    source = Path(url2pathname(urlsplit(url).path))
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{file_name_of(url)}.", suffix=".part")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            while chunk := src.read(CHUNK):
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        tmp.unlink(missing_ok=True)
        raise NetworkError(f"{url}: no such file") from None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise NetworkError(f"{url}: cannot read: {exc.strerror}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, size, digest.hexdigest()


def _content_length(headers: Mapping[str, str]) -> int | None:
    value = headers.get("Content-Length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


@contextlib.contextmanager
def _progress(console: Console | None, name: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A byte progress bar with size and speed; sparse lines off a terminal (CI logs)."""
    if console is None:
        yield lambda n: None
        return
    started = time.monotonic()
    done = 0

    def summary() -> str:
        seconds = max(time.monotonic() - started, 1e-6)
        return f"{human_bytes(done)} in {seconds:.1f}s ({human_bytes(int(done / seconds))}/s)"

    if not console.is_terminal:
        # One line per tenth of the transfer (or per 256 MiB when the size is unknown).
        step = total // 10 if total else 256 * CHUNK
        next_mark = max(step, 1)

        def report(n: int) -> None:
            nonlocal done, next_mark
            done += n
            if done >= next_mark and (total is None or done < total):
                share = f" of {human_bytes(total)}" if total else ""
                console.print(f"download {name}: {human_bytes(done)}{share}, {summary()}", highlight=False)
                next_mark = done + max(step, 1)

        yield report
    else:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        with Progress(
            TextColumn("[bold]download[/] {task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task(name, total=total)

            def advance(n: int) -> None:
                nonlocal done
                done += n
                progress.update(task, advance=n)

            yield advance
    console.print(f"downloaded {name}: {summary()}", highlight=False)


# --------------------------------------------------------------------------
# Member checks (pure)


def name_problem(name: str) -> str | None:
    """Why an archive member name is unsafe to extract, or None when it is fine."""
    if not name or "\x00" in name:
        return "empty or NUL in name"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "absolute path"
    parts = re.split(r"[/\\]", name)
    if ".." in parts:
        return "'..' in path"
    return None


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


# --------------------------------------------------------------------------
# Install


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
    root_dir: Path | None = None,
    cache_dir: Path | None = None,
    force: bool = False,
    session: requests.Session | None = None,
    attempts: int = 5,
    backoff_seconds: float | None = None,
) -> Installed:
    """Install the archive at ``url`` as ``<root_dir>/<name>``, reusing a complete install.

    A complete install (its marker names the same archive, and the same
    sha256 when one is known) is reused as is; ``force`` re-installs it.
    """
    root_dir = root_dir or toolchains_dir()
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
