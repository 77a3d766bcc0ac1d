"""ccache's remote storage through the pipeline: a real redis-server, a real HTTP storage server.

Two "machines" are two empty local cache directories pointing at the same
remote: the second one must be served entirely from the remote. A remote
that is down must not fail the build.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.ccache.remote import RemoteBackend, parse_remote, probe_endpoint
from tests.support.ccache_http import HttpStorage
from tests.support.gitrepos import commit_tree
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import MINIMAL_MATRIX, write_cpp_project

UNITS = 8
COMPILATIONS = UNITS + 1  # the units and main.cpp
REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A throw-away redis-server on 127.0.0.1: no persistence, its own directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                REDIS,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
                "--daemonize",
                "no",
                "--logfile",
                str(self.directory / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while self.ping() is not None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (
                    (self.directory / "redis.log").read_text(errors="replace")
                    if (self.directory / "redis.log").exists()
                    else ""
                )
                self.stop()
                raise RuntimeError(f"redis-server did not come up on port {self.port}:\n{log}")
            time.sleep(0.05)

    def ping(self) -> str | None:
        backend = parse_remote(self.url, where="test")[0]
        return probe_endpoint(backend, "127.0.0.1", self.port, 1.0)

    def keys(self) -> int:
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
            reply = sock.recv(64)
        assert reply.startswith(b":"), reply
        return int(reply[1:].strip())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http_storage() -> Iterator[HttpStorage]:
    with HttpStorage() as server:
        yield server


def _workspace(root: Path, *, matrix_remote: str | None = None) -> Path:
    # A checkout, as users build: the tests below count the remote cache's warnings alone.
    commit_tree(write_cpp_project(root / "project", units=UNITS), when=datetime(2026, 3, 1, tzinfo=UTC))
    text = MINIMAL_MATRIX.format(compiler_check="content")
    if matrix_remote:
        text = text.replace("[ccache]\n", f'[ccache]\nremote = "{matrix_remote}"\n')
    (root / "matrix.toml").write_text(text)
    return root


def _build(ws: Path, cache: Path, *extra: str) -> tuple[dict, subprocess.CompletedProcess[str]]:
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(cache),
            "--no-bundle",
            *extra,
        ],
        check=True,
    )
    return json.loads((ws / "out" / "cpu" / "record.json").read_text()), proc


def test_second_machine_is_served_from_redis(tmp_path: Path, redis_server: RedisServer) -> None:
    # The first machine takes the remote from matrix.toml, the second from the flag.
    ws = _workspace(tmp_path / "ws", matrix_remote=redis_server.url)
    first, _ = _build(ws, tmp_path / "cache-a")
    assert first["ccache"]["misses"] == COMPILATIONS
    assert first["ccache"]["remote"] == redis_server.url
    assert first["ccache"]["remote_status"] == "ok"
    assert first["warnings"] == []
    # Each compilation stored a result and a manifest.
    assert redis_server.keys() >= COMPILATIONS

    second, proc = _build(ws, tmp_path / "cache-b", "--remote-cache", redis_server.url)
    cc = second["ccache"]
    assert (cc["hits"], cc["misses"], cc["hit_rate"]) == (COMPILATIONS, 0, 1.0)
    assert cc["remote_hits"] == cc["hits"]
    assert cc["local_hits"] == 0 and cc["remote_errors"] == 0
    assert second["warnings"] == []
    assert "remote" in proc.stdout  # the summary table shows the remote hits


def test_stopped_redis_warns_and_builds_with_the_local_cache(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    ws = _workspace(tmp_path / "ws")
    cache = tmp_path / "cache"
    _build(ws, cache, "--remote-cache", redis_server.url)
    redis_server.stop()
    # Credentials in the URL must not reach the record or the console.
    with_password = redis_server.url.replace("redis://", "redis://:s3cr3t@")

    record, proc = _build(ws, cache, "--remote-cache", with_password)
    assert record["status"] == "success"
    cc = record["ccache"]
    assert (cc["hits"], cc["remote_hits"], cc["misses"]) == (COMPILATIONS, 0, 0)
    assert cc["remote_status"] == "unreachable"
    assert cc["remote_errors"] == 0  # ccache was never handed the dead server
    [warning] = record["warnings"]
    assert f"127.0.0.1:{redis_server.port}" in warning and "connection refused" in warning
    assert "local cache only" in warning
    assert "warning:" in proc.stdout and "unreachable" in proc.stdout
    everything = proc.stdout + proc.stderr + (ws / "out" / "cpu" / "record.json").read_text()
    assert "s3cr3t" not in everything


def test_warning_becomes_an_annotation_on_github_actions(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    dead = f"redis://127.0.0.1:{_free_port()}"
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--no-bundle",
            "--remote-cache",
            dead,
        ],
        env={"GITHUB_ACTIONS": "true"},
        check=True,
    )
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::warning::")]
    assert len(annotations) == 1 and "unreachable" in annotations[0]


def test_second_machine_is_served_from_http_storage(tmp_path: Path, http_storage: HttpStorage) -> None:
    ws = _workspace(tmp_path / "ws")
    first, _ = _build(ws, tmp_path / "cache-a", "--remote-cache", http_storage.url)
    assert first["ccache"]["misses"] == COMPILATIONS
    # ccache's default "subdirs" layout: /cache/<2 hex>/<rest of the key>.
    assert any(req.startswith("PUT /cache/") for req in http_storage.requests)
    assert http_storage.entries() >= COMPILATIONS

    second, _ = _build(ws, tmp_path / "cache-b", "--remote-cache", http_storage.url)
    cc = second["ccache"]
    assert (cc["hits"], cc["remote_hits"], cc["misses"]) == (COMPILATIONS, COMPILATIONS, 0)
    assert second["warnings"] == []


def test_server_failing_during_the_build_is_counted_and_reported(
    tmp_path: Path, http_storage: HttpStorage
) -> None:
    # Up for the probe, 500 for every storage request: ccache falls back per call.
    http_storage.failing = True
    ws = _workspace(tmp_path / "ws")
    record, _ = _build(ws, tmp_path / "cache", "--remote-cache", http_storage.url)
    cc = record["ccache"]
    assert record["status"] == "success"
    assert cc["remote_status"] == "ok"
    assert cc["misses"] == COMPILATIONS
    assert cc["remote_errors"] >= COMPILATIONS
    [warning] = record["warnings"]
    assert f"{cc['remote_errors']} remote storage error(s)" in warning
    assert "fell back to the local cache" in warning


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://127.0.0.1/cache", "storage helper"),
        ("ftp://127.0.0.1/", "unsupported remote cache scheme 'ftp'"),
        ("redis://127.0.0.1:99999", "port"),
    ],
)
def test_bad_remote_url_fails_before_any_work(tmp_path: Path, url: str, expected: str) -> None:
    ws = _workspace(tmp_path / "ws")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--no-bundle",
            "--remote-cache",
            url,
        ],
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: --remote-cache: ") and expected in line
    assert not (ws / "out").exists()


# --------------------------------------------------------------------------
# The probe against real servers (no builds)


def _backend(url: str) -> RemoteBackend:
    return parse_remote(url, where="test")[0]


def test_probe_accepts_a_live_redis(redis_server: RedisServer) -> None:
    assert probe_endpoint(_backend(redis_server.url), "127.0.0.1", redis_server.port) is None


def test_probe_accepts_a_live_http_storage(http_storage: HttpStorage) -> None:
    port = int(http_storage.url.split(":")[2].split("/")[0])
    assert probe_endpoint(_backend(http_storage.url), "127.0.0.1", port) is None
    assert "HEAD /cache" in http_storage.requests


def test_probe_reports_a_closed_port() -> None:
    port = _free_port()
    assert probe_endpoint(_backend(f"redis://127.0.0.1:{port}"), "127.0.0.1", port) == "connection refused"


def test_probe_reports_the_wrong_protocol(http_storage: HttpStorage) -> None:
    port = int(http_storage.url.split(":")[2].split("/")[0])
    reason = probe_endpoint(_backend(f"redis://127.0.0.1:{port}"), "127.0.0.1", port, 2.0)
    assert reason == f"something answers on port {port}, but not a Redis server"


def test_probe_gives_up_on_a_silent_server() -> None:
    # Accepts connections (the kernel's backlog) but never answers.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        reason = probe_endpoint(_backend(f"redis://127.0.0.1:{port}"), "127.0.0.1", port, 0.3)
        assert reason == "no answer within 0.3 s"
