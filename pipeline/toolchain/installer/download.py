"""Download a toolchain archive once into a local cache, verified before it is trusted.

Streamed with a progress bar, retried with backoff on transient failures,
checked against ``Content-Length`` and (when known) a sha256, then renamed
into the download cache with a sidecar written last, so a second run
downloads nothing and a file without its sidecar is never trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from pipeline.errors import NetworkError, ToolchainError, UsageError
from pipeline.redaction import redact
from pipeline.util.fsutil import atomic_write_json, confined, fix_mode, human_bytes
from pipeline.util.http_retry import (
    DEFAULT_RETRY,
    RetriesExhausted,
    Retryable,
    RetryPolicy,
    call_with_retries,
)

if TYPE_CHECKING:
    import requests
    from rich.console import Console

CHUNK = 1024 * 1024


def file_name_of(url: str) -> str:
    """The last path segment of ``url``: the name the download is cached under."""
    try:
        name = unquote(posixpath.basename(urlsplit(url).path))
    except ValueError as exc:  # "Invalid IPv6 URL": an unclosed bracket in the host
        raise ToolchainError(f"{redact(url)}: malformed URL ({exc})") from None
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ToolchainError(f"{url}: no file name at the end of the URL")
    return name


def cached_path(url: str, download_cache: Path) -> Path:
    """Where the download cache keeps ``url``: its file name, confined to ``download_cache``."""
    return confined(download_cache, file_name_of(url), f"{redact(url)}: file name", ToolchainError)


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


def cached_download(url: str, download_cache: Path, sha256: str | None = None) -> Downloaded | None:
    """The cached copy of ``url`` when it is complete and matches ``sha256``, else None."""
    path = cached_path(url, download_cache)
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
    download_cache: Path,
    sha256: str | None = None,
    console: Console | None = None,
    session: requests.Session | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    timeout_seconds: float = 60.0,
    verify: Callable[[Path], None] | None = None,
    wait_lock: float = 0.0,
    since: datetime | None = None,
) -> Downloaded:
    """Fetch ``url`` into the download cache (or reuse the cached copy).

    Transient failures (connection errors, 5xx, 429, a body shorter than its
    ``Content-Length``) are retried as ``retry`` says (its attempts, waits and
    budget); then NetworkError. A sha256 mismatch is a ToolchainError and is
    not retried. ``verify`` (e.g. a full read of an archive) must pass too
    before the sidecar is written: the cache only ever holds complete,
    verified files. One process at a time fetches a given file (a lock beside
    it), and that one removes the ``.part`` files dead runs left. Each
    retry's wait is said on ``console``.
    """
    if (hit := cached_download(url, download_cache, sha256)) is not None:
        if console is not None:
            console.print(f"download cache: {hit.path.name} ({human_bytes(hit.size)})", highlight=False)
        return hit
    from pipeline.archives.extract import remove_stale
    from pipeline.processes.locks import hold

    download_cache.mkdir(parents=True, exist_ok=True)
    name = file_name_of(url)
    with hold(
        download_cache / f".{name}.lock",
        what=f"the download of {name} into {download_cache}",
        since=since,
        wait_seconds=wait_lock,
    ):
        # Another run may have fetched it while this one waited for the lock.
        if (hit := cached_download(url, download_cache, sha256)) is not None:
            return hit
        # Under the lock, every .part of this name is a dead run's.
        remove_stale(download_cache, f".{name}.", (".part",))
        return _download_locked(url, download_cache, sha256, console, session, retry, timeout_seconds, verify)


def _download_locked(
    url: str,
    download_cache: Path,
    sha256: str | None,
    console: Console | None,
    session: requests.Session | None,
    retry: RetryPolicy,
    timeout_seconds: float,
    verify: Callable[[Path], None] | None,
) -> Downloaded:
    import requests

    scheme = urlsplit(url).scheme
    if scheme == "file":
        path, size, digest = _copy_local(url, download_cache)
    elif scheme not in ("http", "https"):
        raise UsageError(f"toolchain URL {url!r}: expected an http(s):// or file:// URL")
    else:
        own_session = session is None
        http = session or requests.Session()
        try:
            path, size, digest = call_with_retries(
                _fetch_once, http, url, download_cache, console, timeout_seconds,
                policy=retry, what=redact(f"GET {url}"),
                on_wait=None if console is None else lambda line: console.print(line, highlight=False, markup=False),
            )  # fmt: skip
        except RetriesExhausted as err:
            raise NetworkError(
                redact(f"download of {url} failed after {err.attempts_text}: {err.last.reason}")
            ) from None
        finally:
            if own_session:
                http.close()
    try:
        final = cached_path(url, download_cache)
        if sha256 is not None and digest.lower() != sha256.lower():
            raise ToolchainError(f"sha256 mismatch for {url}: expected {sha256.lower()}, got {digest}")
        if verify is not None:
            try:
                verify(path)
            except ToolchainError as err:
                raise ToolchainError(
                    err.message.replace(path.name, final.name),
                    hint="not kept: the next run downloads it again",
                ) from None
        fix_mode(path)
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
    http: requests.Session, url: str, download_cache: Path, console: Console | None, timeout: float
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
        fd, tmp_name = tempfile.mkstemp(dir=download_cache, prefix=f".{name}.", suffix=".part")
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


def _copy_local(url: str, download_cache: Path) -> tuple[Path, int, str]:
    """A ``file://`` archive (offline use): copied into the cache like a download."""
    from urllib.request import url2pathname

    source = Path(url2pathname(urlsplit(url).path))
    fd, tmp_name = tempfile.mkstemp(dir=download_cache, prefix=f".{file_name_of(url)}.", suffix=".part")
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
