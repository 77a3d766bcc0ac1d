"""The ROCm leg checks the tarball against the ``.sha256sum`` its index lists beside it.

A real local HTTP server serves the index page, a TheRock-shaped tarball made
from Debian's clang and its checksum file (right, wrong, malformed or missing);
the leg is prepared through ``prepare_toolchain`` as a build would, and once
through the CLI for the message a user sees.
"""

from __future__ import annotations

import hashlib
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.archives.extract import MARKER
from pipeline.errors import ToolchainError
from pipeline.inputs.matrix import Matrix, load_matrix
from pipeline.toolchain.toolchain import Toolchain
from tests.support.httpserver import LocalServer, Response
from tests.support.inputs import download_cache_dir, prepare_leg_toolchain, toolchains_dir
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project
from tests.support.rocm_leg import (
    FAMILY,
    INDEX,
    LEG,
    NOW,
    VERSION,
    make_therock_from_debian_clang,
    rocm_matrix,
    serve_index,
    sha256sum,
    tarball_name,
)

NAME = tarball_name("linux", FAMILY, VERSION)
CHECKSUM = NAME + ".sha256sum"
INSTALL = f"rocm-{VERSION}-linux-{FAMILY}"


@pytest.fixture(scope="module")
def therock(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_therock_from_debian_clang(tmp_path_factory.mktemp("therock") / NAME).read_bytes()


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "0")


def _matrix(tmp_path: Path, index_url: str) -> Matrix:
    return load_matrix(rocm_matrix(tmp_path / "matrix.toml", index_url, "content"))


def _prepare(matrix: Matrix) -> Toolchain:
    return prepare_leg_toolchain(
        matrix, LEG, Console(file=io.StringIO(), width=200), now=datetime(2025, 1, 8, 12, tzinfo=UTC)
    )


def _nothing_installed() -> None:
    """No install, no staging folder, and no tarball in the download cache."""
    # Lock files stay on purpose (an empty file; deleting one would race another run).
    assert not toolchains_dir().exists() or all(p.name.endswith(".lock") for p in toolchains_dir().iterdir())
    cached = (
        sorted(p.name for p in download_cache_dir().iterdir() if not p.name.endswith(".lock"))
        if download_cache_dir().exists()
        else []
    )
    assert NAME not in cached and not any(n.endswith(".part") for n in cached), cached


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(lambda body: sha256sum(NAME, body), id="sha256sum-text-mode"),
        pytest.param(
            lambda body: f"{hashlib.sha256(body).hexdigest().upper()} *{NAME}\n".encode(), id="binary-mode"
        ),
        pytest.param(lambda body: f"{hashlib.sha256(body).hexdigest()}\n".encode(), id="bare-digest"),
    ],
)
def test_good_checksum_installs_and_records_the_digest(
    http_server: LocalServer, therock: bytes, tmp_path: Path, form
) -> None:
    index_url = serve_index(http_server, {NAME: therock}, checksums={NAME: form(therock)})
    matrix = _matrix(tmp_path, index_url)

    toolchain = _prepare(matrix)
    digest = hashlib.sha256(therock).hexdigest()
    assert toolchain.details["sha256"] == digest
    assert toolchain.details["sha256_url"] == http_server.url(INDEX + CHECKSUM)
    root = toolchains_dir() / INSTALL
    assert (root / "lib/llvm/bin/clang").is_file() and (root / MARKER).is_file()
    assert (http_server.hits(INDEX + NAME), http_server.hits(INDEX + CHECKSUM)) == (1, 1)

    # A second run reuses the complete install and asks for neither file.
    again = _prepare(matrix)
    assert again.details["sha256"] == digest
    assert (http_server.hits(INDEX + NAME), http_server.hits(INDEX + CHECKSUM)) == (1, 1)


def test_checksum_retried_on_server_errors(http_server: LocalServer, therock: bytes, tmp_path: Path) -> None:
    index_url = serve_index(http_server, {NAME: therock})
    http_server.route(INDEX + CHECKSUM, Response(503), Response(200, sha256sum(NAME, therock)))
    toolchain = _prepare(_matrix(tmp_path, index_url))
    assert toolchain.details["sha256"] == hashlib.sha256(therock).hexdigest()
    assert http_server.hits(INDEX + CHECKSUM) == 2


def test_wrong_checksum_is_refused_and_nothing_is_installed(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    wrong = hashlib.sha256(b"another tarball").hexdigest()
    index_url = serve_index(http_server, {NAME: therock}, checksums={NAME: f"{wrong}  {NAME}\n".encode()})
    with pytest.raises(ToolchainError) as err:
        _prepare(_matrix(tmp_path, index_url))
    message = str(err.value)
    assert message.startswith(f"sha256 mismatch for {http_server.url(INDEX + NAME)}: expected {wrong}, got ")
    assert hashlib.sha256(therock).hexdigest() in message
    assert f"expected digest from {http_server.url(INDEX + CHECKSUM)}" in message
    assert "\n" not in message
    _nothing_installed()

    # The refused checksum is not kept: once the index serves the right one, the leg installs.
    serve_index(http_server, {NAME: therock})
    toolchain = _prepare(_matrix(tmp_path, index_url))
    assert toolchain.details["sha256"] == hashlib.sha256(therock).hexdigest()
    assert http_server.hits(INDEX + CHECKSUM) == 2


def test_wrong_checksum_through_the_cli(http_server: LocalServer, therock: bytes, tmp_path: Path) -> None:
    wrong = "0" * 64
    index_url = serve_index(http_server, {NAME: therock}, checksums={NAME: f"{wrong}  {NAME}\n".encode()})
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=1)
    rocm_matrix(ws / "matrix.toml", index_url, "content")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            LEG,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--now",
            NOW,
            "--no-bundle",
        ],
        env={"PIPELINE_HTTP_BACKOFF": "0"},
    )
    assert proc.returncode == ToolchainError.exit_code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"sha256 mismatch for {http_server.url(INDEX + NAME)}: expected {wrong}" in proc.stderr
    assert http_server.url(INDEX + CHECKSUM) in proc.stderr
    _nothing_installed()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not a checksum\n", r"malformed checksum line 'not a checksum'"),
        (b"abc123  " + NAME.encode() + b"\n", r"malformed checksum line 'abc123 "),
        (("0" * 63 + "  " + NAME + "\n").encode(), r"malformed checksum line"),
        (b"\n\n", r"empty checksum file"),
        (
            ("1" * 64 + "  therock-dist-linux-gfx110X-all-7.0.0a20250103.tar.gz\n").encode(),
            r"the checksum is for therock-dist-linux-gfx110X-all-7\.0\.0a20250103\.tar\.gz, not " + NAME,
        ),
        (b"\xff\xfe\x00garbage", r"the checksum file is not UTF-8 text"),
    ],
)
def test_malformed_checksum_file_is_a_clear_error(
    http_server: LocalServer, therock: bytes, tmp_path: Path, body: bytes, message: str
) -> None:
    index_url = serve_index(http_server, {NAME: therock}, checksums={NAME: body})
    with pytest.raises(ToolchainError, match=rf"^{http_server.url(INDEX + CHECKSUM)}: {message}") as err:
        _prepare(_matrix(tmp_path, index_url))
    assert "\n" not in str(err.value)
    # Checked before the tarball is fetched: a bad checksum costs no download.
    assert http_server.hits(INDEX + NAME) == 0
    _nothing_installed()
    # Nor is the bad copy cached: the next run asks again.
    with pytest.raises(ToolchainError):
        _prepare(_matrix(tmp_path, index_url))
    assert http_server.hits(INDEX + CHECKSUM) == 2


@pytest.mark.parametrize(
    ("responses", "reason"),
    [
        ([Response(404, b"not found")], "failed: HTTP 404"),
        ([Response(503)], "failed after 5 attempts: HTTP 503"),
    ],
)
def test_listed_checksum_that_cannot_be_fetched_fails(
    http_server: LocalServer, therock: bytes, tmp_path: Path, responses: list[Response], reason: str
) -> None:
    index_url = serve_index(http_server, {NAME: therock})
    http_server.route(INDEX + CHECKSUM, *responses)
    with pytest.raises(ToolchainError) as err:
        _prepare(_matrix(tmp_path, index_url))
    assert str(err.value) == (
        f"cannot verify {NAME}: the index lists the checksum {http_server.url(INDEX + CHECKSUM)}, "
        f"but its download {reason}"
    )
    assert http_server.hits(INDEX + NAME) == 0
    _nothing_installed()


def test_no_checksum_listed_installs_on_size_alone(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    index_url = serve_index(http_server, {NAME: therock})
    # The same index without the checksum entry (an older index, or a build published without one).
    from tests.support.therock_index import html_page

    http_server.route(
        INDEX,
        Response(200, html_page([(NAME, "2025-01-04T09:30:00Z")]).encode(), {"Content-Type": "text/html"}),
    )
    toolchain = _prepare(_matrix(tmp_path, index_url))
    assert toolchain.details["sha256"] == hashlib.sha256(therock).hexdigest()
    assert "sha256_url" not in toolchain.details
    assert http_server.hits(INDEX + CHECKSUM) == 0
