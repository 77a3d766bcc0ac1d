"""TheRock's tarball for a leg: fetched with its published checksum, installed by the one installer.

A downloaded tarball is checked against the ``.sha256sum`` the index lists
beside it (``ResolvedRocm.sha256_url``). The checksum file goes through the
download cache like the tarball, so a second run with a complete install
fetches nothing and still matches the install's recorded digest against it.
The install is then the toolchain of :mod:`pipeline.toolchain.therock`.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from pipeline.errors import NetworkError, ToolchainError
from pipeline.toolchain.installer.download import Downloaded, download, file_name_of
from pipeline.toolchain.installer.install import install_archive
from pipeline.toolchain.therock import install_check, rocm_toolchain
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.inputs.resolution_file import ResolvedRocm

# One line of sha256sum's output: the digest, then "  name" (text) or " *name" (binary) mode.
_CHECKSUM_LINE = re.compile(r"([0-9A-Fa-f]{64})(?:\s+\*?(\S.*))?")
# A checksum file is one short line per file; anything this big is something else.
MAX_CHECKSUM_BYTES = 64 * 1024


def parse_sha256sum(text: str, *, file_name: str, where: str) -> str:
    """The sha256 of ``file_name`` in a checksum file, lower case.

    Accepts sha256sum's output (``<64 hex>  <name>``, or ``*<name>`` in binary
    mode; one line per file) and a bare digest. A listed name must be
    ``file_name`` (a leading folder is ignored). ToolchainError naming
    ``where`` for anything else.
    """
    lines = [line.strip() for line in text.lstrip("\ufeff").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        raise ToolchainError(f"{where}: empty checksum file (expected '<64 hex digits>  {file_name}')")
    found: set[str] = set()
    others: list[str] = []
    for line in lines:
        m = _CHECKSUM_LINE.fullmatch(line)
        if m is None:
            raise ToolchainError(
                f"{where}: malformed checksum line {line[:80]!r} (expected '<64 hex digits>  {file_name}')"
            )
        digest, listed = m.group(1).lower(), m.group(2)
        if listed is None and len(lines) > 1:
            raise ToolchainError(f"{where}: a bare digest among {len(lines)} lines names no file")
        if listed is None or PurePosixPath(listed.strip().replace("\\", "/")).name == file_name:
            found.add(digest)
        else:
            others.append(listed.strip())
    if not found:
        raise ToolchainError(f"{where}: the checksum is for {', '.join(others)[:200]}, not {file_name}")
    if len(found) > 1:
        raise ToolchainError(f"{where}: {len(found)} different sha256 digests for {file_name}")
    return found.pop()


def _fetch_checksum(resolved: ResolvedRocm, request: ToolchainRequest) -> tuple[str, Downloaded]:
    """The digest the index publishes for ``resolved``'s tarball, and the cached checksum file.

    Fetched through the download cache (same retries, backoff, budget and lock wait as the
    tarball), so a later run reads it from disk. A checksum the index lists
    but that cannot be had is an error, never a reason to skip the check.
    """
    url = resolved.sha256_url
    assert url is not None
    try:
        got = download(
            url,
            download_cache=request.download_cache,
            retry=request.retry,
            wait_lock=request.wait_lock,
            since=request.started,
        )
    except NetworkError as err:
        # download's message leads with "download of <url>"; say it once.
        reason = err.message.replace(f"download of {url} ", "", 1)
        raise ToolchainError(
            f"cannot verify {resolved.file}: the index lists the checksum {url}, but its download {reason}"
        ) from None
    try:
        if got.size > MAX_CHECKSUM_BYTES:
            raise ToolchainError(f"{url}: {got.size} bytes is not a checksum file")
        try:
            text = got.path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolchainError(f"{url}: the checksum file is not UTF-8 text") from None
        except OSError as exc:
            raise ToolchainError(f"{got.path}: cannot read: {exc.strerror}") from None
        return parse_sha256sum(text, file_name=resolved.file, where=url), got
    except ToolchainError:
        # A bad copy must not stay cached: the next run fetches it again.
        got.path.unlink(missing_ok=True)
        raise


def prepare_rocm(request: ToolchainRequest, console: Console) -> Toolchain:
    """Download and install the run's resolved TheRock build (``--rocm-path`` is :mod:`.installed_rocm`'s).

    When the index lists a ``.sha256sum`` beside the tarball, the tarball (or
    the complete install's recorded digest) must match it.
    """
    leg = request.leg
    resolved = request.rocm
    if resolved is None:
        raise ToolchainError(f"leg {leg.name}: no ROCm build was resolved for it")
    digest: str | None = None
    checksum: Downloaded | None = None
    if resolved.sha256_url is not None:
        digest, checksum = _fetch_checksum(resolved, request)
    try:
        installed = install_archive(
            resolved.url,
            f"{resolved.identity}-{resolved.os}-{resolved.family}",
            sha256=digest,
            console=console,
            root_dir=request.toolchain_dir,
            download_cache=request.download_cache,
            retry=request.retry,
            check=install_check(leg.os),
            wait_lock=request.wait_lock,
            since=request.started,
        )
    except ToolchainError as err:
        if checksum is None:
            raise
        # Fetch the checksum afresh next time: the mismatch may be a stale or corrected checksum.
        checksum.path.unlink(missing_ok=True)
        if err.message.startswith("sha256 mismatch"):
            raise ToolchainError(err.message, hint=f"expected digest from {resolved.sha256_url}") from None
        raise
    checked = f", sha256 checked against {file_name_of(resolved.sha256_url)}" if resolved.sha256_url else ""
    console.print(
        f"{leg.name}: ROCm {resolved.version} ({resolved.policy}) "
        f"{'reused' if installed.reused else 'installed'} at {installed.root}{checked}",
        highlight=False,
    )
    details = {
        "origin": "download",
        "policy": resolved.policy,
        "url": resolved.url,
        "file": resolved.file,
        "sha256": installed.sha256,
        "family": resolved.family,
    }
    if resolved.sha256_url is not None:
        # The digest above was checked against this published checksum.
        details["sha256_url"] = resolved.sha256_url
    if resolved.published is not None:
        details["published"] = resolved.published.isoformat()
    if resolved.index_url is not None:
        # The host that published it: TheRock's hosts changed on 2026-08-23 (pipeline/inputs/rocm_hosts.py).
        details["index_url"] = resolved.index_url
    return rocm_toolchain(
        installed.root, leg, version=resolved.version, details=details, environ=request.environ
    )
