"""``--wait-lock``, the retry backoff and the retry budget reach every backend's downloads.

Each backend's toolchain comes from a real server on 127.0.0.1: TheRock's
tarball (and its checksum) for ROCm, a pip index serving a pinned wheel for
CUDA, the pinned SDK archive for Vulkan. The request is built as a build
builds it (:func:`pipeline.backends.toolchain_request` from the run's inputs,
the settings given as environment variables), then:

- another run holds the install lock: without ``--wait-lock`` the install
  fails at once; with it, the install waits for the holder and completes;
- the server fails (503) once: the download is retried after the configured
  backoff; with a retry budget shorter than the backoff, it is not.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.backends import toolchain_request
from pipeline.errors import BusyError, NetworkError, ToolchainError
from pipeline.inputs.matrix import load_matrix
from pipeline.processes.locks import hold
from pipeline.run_resolution import leg_rocm
from pipeline.toolchain.toolchain import ToolchainRequest
from tests.support.archives import make_tar, make_zip, tar_file, therock_members
from tests.support.httpserver import LocalServer, Response
from tests.support.inputs import make_inputs
from tests.support.projects import write_matrix
from tests.support.rocm_leg import FAMILY, LEG, VERSION, rocm_matrix, serve_index, tarball_name

NOW = datetime(2025, 1, 8, 12, tzinfo=UTC)
CUDA_VERSION = "13.2.86"
WHEEL_NAME = "nvidia-cuda-fake"
WHEEL_FILE = f"nvidia_cuda_fake-{CUDA_VERSION}-py3-none-any.whl"
SDK_VERSION = "1.3.998.0"
SDK_FILE = f"vulkansdk-linux-x86_64-{SDK_VERSION}.tar.gz"


@dataclass
class Served:
    """One backend's toolchain on the server: its leg, the archive's route, the install's lock."""

    leg: str
    matrix: Path
    archive_route: str
    archive: Response
    lock_name: str
    install: Callable[[ToolchainRequest], Path]


def _rocm(server: LocalServer, tmp: Path) -> Served:
    from pipeline.backends import prepare_toolchain

    name = tarball_name("linux", FAMILY, VERSION)
    body = make_tar(tmp / name, therock_members()).read_bytes()
    index = serve_index(server, {name: body})

    def install(request: ToolchainRequest) -> Path:
        toolchain = prepare_toolchain(request, Console(file=io.StringIO()))
        assert toolchain.identity.startswith(f"rocm-{VERSION}")
        return request.toolchain_dir / f"rocm-{VERSION}-linux-{FAMILY}"

    return Served(
        leg=LEG,
        matrix=rocm_matrix(tmp / "matrix.toml", index, "content"),
        archive_route=f"/tarball-multi-arch/{name}",
        archive=Response(200, body, {"Content-Type": "application/gzip"}),
        lock_name=f".rocm-{VERSION}-linux-{FAMILY}.lock",
        install=install,
    )


def _wheel(tmp: Path) -> Path:
    """A minimal, valid wheel holding the libraries the CUDA installer links and the driver header its stub is made from."""
    info = f"nvidia_cuda_fake-{CUDA_VERSION}.dist-info"
    libs = {f"nvidia/cu13/lib/lib{lib}.so.13": b"lib" for lib in ("cudart", "cublas", "cublasLt", "nvrtc")}
    return make_zip(tmp / WHEEL_FILE, {
        **libs,
        "nvidia/cu13/include/cuda.h": b"typedef int CUresult;\nCUresult CUDAAPI cuInit(unsigned int Flags);\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {WHEEL_NAME}\nVersion: {CUDA_VERSION}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/RECORD": b"",
    })  # fmt: skip


def _cuda(server: LocalServer, tmp: Path) -> Served:
    from pipeline.toolchain.cuda_wheels import install_cuda_wheels

    body = _wheel(tmp).read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    page = f'<html><body><a href="/files/{WHEEL_FILE}#sha256={digest}">{WHEEL_FILE}</a></body></html>'
    server.route(f"/simple/{WHEEL_NAME}/", Response(200, page.encode(), {"Content-Type": "text/html"}))
    matrix = write_matrix(
        tmp / "matrix.toml",
        extra=f"""
[toolchains.cuda]
version = "{CUDA_VERSION}"

[[toolchains.cuda.wheels]]
name = "{WHEEL_NAME}"
version = "{CUDA_VERSION}"
sha256.linux = "{digest}"

[legs.cuda]
backend = "cuda"
os = "linux"
cuda_architectures = ["75"]
""",
    )

    def install(request: ToolchainRequest) -> Path:
        assert request.pins is not None and request.pins.cuda is not None
        return install_cuda_wheels(request.pins.cuda, request, python=sys.executable)

    return Served(
        leg="cuda",
        matrix=matrix,
        archive_route=f"/files/{WHEEL_FILE}",
        archive=Response(200, body, {"Content-Type": "application/octet-stream"}),
        lock_name=f".cuda-{CUDA_VERSION}-linux.lock",
        install=install,
    )


def _vulkan(server: LocalServer, tmp: Path) -> Served:
    from pipeline.toolchain.vulkan_sdk import install_vulkan_sdk

    body = make_tar(
        tmp / SDK_FILE, [tar_file(f"{SDK_VERSION}/x86_64/bin/glslc", b"#!/bin/sh\n", 0o755)]
    ).read_bytes()
    matrix = write_matrix(
        tmp / "matrix.toml",
        extra=f"""
[toolchains.vulkan.linux]
url = "{server.url("/sdk/" + SDK_FILE)}"
sha256 = "{hashlib.sha256(body).hexdigest()}"
version = "{SDK_VERSION}"
root = "x86_64"

[legs.vulkan]
backend = "vulkan"
os = "linux"
""",
    )

    def install(request: ToolchainRequest) -> Path:
        assert request.pins is not None
        return install_vulkan_sdk(request.pins.vulkan["linux"], request)

    return Served(
        leg="vulkan",
        matrix=matrix,
        archive_route=f"/sdk/{SDK_FILE}",
        archive=Response(200, body, {"Content-Type": "application/gzip"}),
        lock_name=f".vulkan-sdk-{SDK_VERSION}-linux.lock",
        install=install,
    )


BACKENDS = {"rocm": _rocm, "cuda": _cuda, "vulkan": _vulkan}


@pytest.fixture(params=sorted(BACKENDS))
def served(request: pytest.FixtureRequest, http_server: LocalServer, tmp_path: Path) -> Served:
    return BACKENDS[request.param](http_server, tmp_path)


def _request(served: Served, server: LocalServer, tmp: Path, **settings: str) -> ToolchainRequest:
    environ = {
        **os.environ,
        "PIPELINE_DOWNLOAD_CACHE": str(tmp / "downloads"),
        "PIPELINE_TOOLCHAIN_DIR": str(tmp / "toolchains"),
        # pip's index is the local server, and pip keeps no cache of its own between tests.
        "PIP_INDEX_URL": server.url("/simple/"),
        "PIP_NO_CACHE_DIR": "1",
        "PIP_CONFIG_FILE": os.devnull,
        **settings,
    }
    matrix = load_matrix(served.matrix)
    inputs, leg = make_inputs(matrix, now=NOW, environ=environ), matrix.leg(served.leg)
    # Resolved first, as a leg run's command does (pipeline.run_resolution.resolve_leg).
    return toolchain_request(inputs, leg, rocm=leg_rocm(inputs, leg, rocm_path=None))


def _archive_requests(server: LocalServer, route: str) -> int:
    return sum(1 for r in server.requests if r.path == route and r.method == "GET")


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[Callable[[str, float], None]]:
    """``held(name, seconds)``: another run holds the lock ``<toolchains>/<name>`` for ``seconds``."""
    threads: list[threading.Thread] = []

    def held(name: str, seconds: float) -> None:
        taken = threading.Event()

        def holder() -> None:
            (tmp_path / "toolchains" / name).parent.mkdir(parents=True, exist_ok=True)
            with hold(tmp_path / "toolchains" / name, what="another run's install", since=None):
                taken.set()
                time.sleep(seconds)

        thread = threading.Thread(target=holder, daemon=True)
        thread.start()
        threads.append(thread)
        assert taken.wait(10)

    yield held
    for thread in threads:
        thread.join()


def test_a_held_install_lock_fails_at_once_without_wait_lock(
    served: Served, http_server: LocalServer, tmp_path: Path, held_lock: Callable[[str, float], None]
) -> None:
    http_server.route(served.archive_route, served.archive)
    held_lock(served.lock_name, 3.0)
    started = time.monotonic()
    with pytest.raises(BusyError):
        served.install(_request(served, http_server, tmp_path))
    assert time.monotonic() - started < 2.0
    assert _archive_requests(http_server, served.archive_route) == 0


def test_with_wait_lock_the_install_waits_for_the_holder(
    served: Served, http_server: LocalServer, tmp_path: Path, held_lock: Callable[[str, float], None]
) -> None:
    http_server.route(served.archive_route, served.archive)
    held_lock(served.lock_name, 1.5)
    started = time.monotonic()
    root = served.install(_request(served, http_server, tmp_path, PIPELINE_WAIT_LOCK="30"))
    assert time.monotonic() - started >= 1.4
    assert root.is_dir()
    assert _archive_requests(http_server, served.archive_route) == 1


def test_a_failed_download_is_retried_after_the_configured_backoff(
    served: Served, http_server: LocalServer, tmp_path: Path
) -> None:
    http_server.route(served.archive_route, Response(503, b"busy"), served.archive)
    started = time.monotonic()
    root = served.install(_request(served, http_server, tmp_path, PIPELINE_HTTP_BACKOFF="2.5"))
    # The retry policy's jitter waits 50 to 100% of the step: at least 1.25 s, more than the default's 1 s.
    assert time.monotonic() - started >= 1.25
    assert root.is_dir()
    assert _archive_requests(http_server, served.archive_route) == 2


def test_the_retry_budget_ends_the_retries_before_a_longer_backoff(
    served: Served, http_server: LocalServer, tmp_path: Path
) -> None:
    http_server.route(served.archive_route, Response(503, b"busy"))
    started = time.monotonic()
    with pytest.raises((NetworkError, ToolchainError)) as err:
        served.install(
            _request(served, http_server, tmp_path, PIPELINE_HTTP_BACKOFF="5", PIPELINE_HTTP_RETRY_BUDGET="1")
        )
    assert "retry budget" in str(err.value)
    assert time.monotonic() - started < 5.0
    assert _archive_requests(http_server, served.archive_route) == 1


def test_with_wait_lock_rocm_waits_for_the_download_of_its_checksum(
    http_server: LocalServer, tmp_path: Path, held_lock: Callable[[str, float], None]
) -> None:
    served = _rocm(http_server, tmp_path)
    http_server.route(served.archive_route, served.archive)
    checksum = tarball_name("linux", FAMILY, VERSION) + ".sha256sum"
    # Another run is fetching the checksum into the same download cache.
    held_lock(f"../downloads/.{checksum}.lock", 1.5)
    started = time.monotonic()
    root = served.install(_request(served, http_server, tmp_path, PIPELINE_WAIT_LOCK="30"))
    assert time.monotonic() - started >= 1.4
    assert root.is_dir()
