"""Downloading and installing a toolchain archive from a real local HTTP server."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.errors import NetworkError, ToolchainError
from pipeline.toolchain.installer.download import download
from pipeline.toolchain.installer.install import install_archive
from pipeline.util.http_retry import RetryPolicy
from tests.support.archives import FAKE_CLANG, make_tar, therock_members
from tests.support.httpserver import LocalServer, Response

# No waits between attempts: these servers answer at once, and a test never sleeps.
NO_WAIT = RetryPolicy(backoff=0)

NAME = "therock-dist-linux-gfx110X-all-7.0.0a20250101.tar.gz"
PATH = f"/tarballs/{NAME}"


@pytest.fixture
def tarball(tmp_path: Path) -> bytes:
    return make_tar(tmp_path / NAME, therock_members()).read_bytes()


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "toolchains", tmp_path / "downloads"


def _contents(folder: Path) -> list[str]:
    # Lock files stay on purpose (an empty file; deleting one would race another run).
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.exists() else []


def test_download_install_then_cache_reuse_makes_no_request(
    http_server: LocalServer, tarball: bytes, tmp_path: Path
) -> None:
    http_server.route(PATH, Response(200, tarball, {"Content-Type": "application/gzip"}))
    roots, downloads = _dirs(tmp_path)
    out = io.StringIO()
    console = Console(file=out, width=200)
    first = install_archive(
        http_server.url(PATH), "rocm-7", root_dir=roots, download_cache=downloads, console=console
    )
    assert first.sha256 == hashlib.sha256(tarball).hexdigest()
    assert (first.root / "lib/llvm/bin/clang").read_bytes() == FAKE_CLANG
    assert http_server.hits(PATH) == 1
    assert f"downloaded {NAME}" in out.getvalue()

    # A second run with the install gone (a fresh runner with a warm download
    # cache) re-extracts from the cache and never asks the server.
    again = install_archive(
        http_server.url(PATH), "rocm-7", root_dir=roots, download_cache=downloads, console=console, force=True
    )
    assert not again.reused and again.download_reused
    assert http_server.hits(PATH) == 1
    # And with the install present nothing is even extracted.
    third = install_archive(http_server.url(PATH), "rocm-7", root_dir=roots, download_cache=downloads)
    assert third.reused
    assert http_server.hits(PATH) == 1


def test_transient_failures_are_retried(http_server: LocalServer, tarball: bytes, tmp_path: Path) -> None:
    http_server.route(
        PATH,
        Response(503, b"busy"),
        Response(429, b"slow down"),
        Response(200, tarball[:100], declared_length=len(tarball)),
        Response(200, tarball),
    )
    got = download(http_server.url(PATH), download_cache=tmp_path / "dl", retry=NO_WAIT)
    assert got.size == len(tarball) and not got.reused
    assert http_server.hits(PATH) == 4
    assert _contents(tmp_path / "dl") == [NAME, f"{NAME}.json"]


def test_truncated_download_is_refused_and_leaves_nothing(
    http_server: LocalServer, tarball: bytes, tmp_path: Path
) -> None:
    http_server.route(PATH, Response(200, tarball[: len(tarball) // 2], declared_length=len(tarball)))
    roots, downloads = _dirs(tmp_path)
    with pytest.raises(
        NetworkError, match=r"failed after 3 attempts: transfer truncated \(got \d+ of \d+ bytes\)"
    ):
        install_archive(
            http_server.url(PATH),
            "rocm-7",
            root_dir=roots,
            download_cache=downloads,
            retry=RetryPolicy(attempts=3, backoff=0),
        )
    assert http_server.hits(PATH) == 3
    assert _contents(downloads) == []
    assert _contents(roots) == []


def test_checksum_mismatch_is_refused_and_leaves_nothing(
    http_server: LocalServer, tarball: bytes, tmp_path: Path
) -> None:
    http_server.route(PATH, Response(200, tarball))
    roots, downloads = _dirs(tmp_path)
    wrong = hashlib.sha256(b"another build").hexdigest()
    with pytest.raises(ToolchainError, match=f"sha256 mismatch for .*{NAME}: expected {wrong}, got "):
        install_archive(
            http_server.url(PATH), "rocm-7", sha256=wrong, root_dir=roots, download_cache=downloads
        )
    assert _contents(downloads) == []
    assert _contents(roots) == []
    # A mismatch is not a transient failure: one request, no retries.
    assert http_server.hits(PATH) == 1


def test_missing_file_is_not_retried(http_server: LocalServer, tmp_path: Path) -> None:
    with pytest.raises(NetworkError, match=r"download of .* failed: HTTP 404"):
        download(http_server.url(PATH), download_cache=tmp_path / "dl", retry=NO_WAIT)
    assert http_server.hits(PATH) == 1
    assert _contents(tmp_path / "dl") == []


def test_refused_archive_from_server_leaves_no_install(http_server: LocalServer, tmp_path: Path) -> None:
    import tarfile

    evil = tarfile.TarInfo("../../escaped")
    evil.size = 1
    bad = make_tar(tmp_path / "bad.tar.gz", [*therock_members(), (evil, b"x")]).read_bytes()
    http_server.route(PATH, Response(200, bad))
    roots, downloads = _dirs(tmp_path)
    with pytest.raises(ToolchainError, match=r"refused member '\.\./\.\./escaped': '\.\.' in path"):
        install_archive(http_server.url(PATH), "rocm-7", root_dir=roots, download_cache=downloads)
    assert _contents(roots) == []
    assert not (tmp_path / "escaped").exists()


def test_progress_off_a_terminal_prints_sparse_lines(http_server: LocalServer, tmp_path: Path) -> None:
    body = os.urandom(3 * 1024 * 1024 + 5)
    http_server.route(PATH, Response(200, body))
    out = io.StringIO()
    got = download(
        http_server.url(PATH), download_cache=tmp_path / "dl", console=Console(file=out, width=200)
    )
    assert got.size == len(body)
    lines = out.getvalue().splitlines()
    # Intermediate lines with size and speed (a CI log has no live bar), then the summary.
    assert any(
        line.startswith(f"download {NAME}: ") and " of 3.0 MiB, " in line and "/s)" in line for line in lines
    )
    assert lines[-1].startswith(f"downloaded {NAME}: 3.0 MiB in ")


def test_each_retry_wait_of_a_download_is_said_on_the_console(
    http_server: LocalServer, tarball: bytes, tmp_path: Path
) -> None:
    http_server.route(PATH, Response(503, b"busy"), Response(503, b"busy"), Response(200, tarball))
    out = io.StringIO()
    got = download(
        http_server.url(PATH),
        download_cache=tmp_path / "dl",
        retry=NO_WAIT,
        console=Console(file=out, width=300),
    )
    assert got.size == len(tarball)
    waits = [line for line in out.getvalue().splitlines() if "retrying in" in line]
    assert [w.split("; ")[1].split(" failed")[0] for w in waits] == ["attempt 1 of 5", "attempt 2 of 5"]
    assert all(w.startswith(f"GET {http_server.url(PATH)}: HTTP 503") for w in waits)


def test_a_download_retry_budget_ends_the_retries(http_server: LocalServer, tmp_path: Path) -> None:
    http_server.route(PATH, *[Response(503, b"busy")] * 5)
    with pytest.raises(NetworkError, match=r"after 1 attempt \(the retry budget of 0\.5 s is spent"):
        download(
            http_server.url(PATH), download_cache=tmp_path / "dl", retry=RetryPolicy(backoff=1, budget=0.5)
        )
    assert http_server.hits(PATH) == 1
    assert _contents(tmp_path / "dl") == []
