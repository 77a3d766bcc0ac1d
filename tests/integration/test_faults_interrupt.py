"""Fault injection: runs killed mid-way, two runs of one leg at once, corrupt downloads.

Every case checks the exit code, the one line on stderr (no traceback),
exactly what is left on disk, that no child process outlives the pipeline
(read from /proc, no psutil), and that a plain rerun succeeds without any
manual cleanup. The pipeline runs as a real process (``python -m pipeline``)
and is signalled the way a CI runner or a user would: SIGTERM or SIGINT to
its own pid only. Downloads come from a real HTTP server on 127.0.0.1 that
can stall in the middle of a body.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix
from tests.support.rocm_leg import (
    FAMILY,
    INDEX,
    LEG,
    NOW,
    VERSION,
    make_therock_from_debian_clang,
    rocm_matrix,
    tarball_name,
)
from tests.support.therock_index import html_page

TARBALL = tarball_name("linux", FAMILY, VERSION)

# --------------------------------------------------------------------------
# Helpers: a pipeline process, waiting, and /proc


def start_pipeline(args: list[str], logs: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``python -m pipeline ARGS`` in the background; its output goes to files (a full pipe would block it)."""
    logs.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})},
        stdout=(logs / "stdout").open("wb"),
        stderr=(logs / "stderr").open("wb"),
        stdin=subprocess.DEVNULL,
    )


def wait_for(
    what: str,
    ready: Callable[[], bool],
    timeout: float = 300.0,
    proc: subprocess.Popen[bytes] | None = None,
    logs: Path | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc is not None and proc.poll() is not None:
            out = (logs / "stdout").read_text() + (logs / "stderr").read_text() if logs else ""
            raise AssertionError(f"the pipeline ended ({proc.returncode}) before {what}:\n{out}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def stderr_lines(logs: Path) -> list[str]:
    return [line for line in (logs / "stderr").read_text().splitlines() if line.strip()]


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (zombies have an empty cmdline)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def record_of(out: Path, leg: str) -> dict:
    return json.loads((out / leg / "record.json").read_text())


def listing(folder: Path) -> list[str]:
    """Everything under ``folder`` (names relative to it), lock files left out: they stay by design."""
    if not folder.exists():
        return []
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if not p.name.endswith(".lock") and not p.name.endswith(".lock.holder.json")
    )


def top_level(folder: Path) -> list[str]:
    """The names in ``folder`` but lock files and their holder notes (a SIGKILLed holder cannot remove its note)."""
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith((".lock", ".lock.holder.json")))


# --------------------------------------------------------------------------
# A project whose one build step waits (a compile that takes as long as the test wants)

SLOW_STEP = """\
import pathlib, sys, time
started, release, output = map(pathlib.Path, sys.argv[1:4])
started.write_text("started")
deadline = time.monotonic() + 180
while not release.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
output.write_text("int generated(void) { return 1; }\\n")
"""


def write_slow_project(root: Path, gate: Path) -> Path:
    """A C project whose generated source comes from a step that waits for ``gate/release``.

    The step writes ``gate/started`` first, so a test knows Ninja is running it.
    """
    root.mkdir(parents=True, exist_ok=True)
    gate.mkdir(parents=True, exist_ok=True)
    (root / "slow_step.py").write_text(SLOW_STEP)
    (root / "main.c").write_text("int generated(void);\nint main(void) { return generated() - 1; }\n")
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(slow C)\n"
        "add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/generated.c\n"
        f'  COMMAND "{sys.executable}" "${{CMAKE_SOURCE_DIR}}/slow_step.py" "{gate}/started" "{gate}/release"'
        " ${CMAKE_BINARY_DIR}/generated.c)\n"
        "add_executable(demo main.c ${CMAKE_BINARY_DIR}/generated.c)\n"
    )
    return root


def slow_step(ws: Path) -> str:
    """What a running slow step's command line holds: its gate (the tree's own path is the leg's link to it)."""
    return str(ws / "gate" / "started")


def pause_env(ws: Path, point: str) -> dict[str, str]:
    """Hold the run at ``point`` (processes/pause_points.py); it writes ``<ws>/pause/<point>.reached`` there."""
    (ws / "pause").mkdir(parents=True, exist_ok=True)
    return {"PIPELINE_PAUSE_AT": point, "PIPELINE_PAUSE_DIR": str(ws / "pause")}


def cpu_args(ws: Path, *extra: str) -> list[str]:
    return [
        "--matrix",
        str(ws / "matrix.toml"),
        "build",
        "cpu",
        "--source",
        str(ws / "project"),
        "--out",
        str(ws / "out"),
        "--ccache-dir",
        str(ws / "ccache"),
        "--no-bundle",
        *extra,
    ]


@pytest.fixture
def slow_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write_slow_project(ws / "project", ws / "gate")
    write_matrix(ws / "matrix.toml")
    return ws


# --------------------------------------------------------------------------
# Killed during Ninja


@pytest.mark.parametrize(
    ("sig", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")]
)
def test_signal_during_ninja_stops_the_whole_tree_and_records_interrupted(
    slow_ws: Path, tmp_path: Path, sig: signal.Signals, code: int, name: str
) -> None:
    ws, gate = slow_ws, slow_ws / "gate"
    # An earlier success in the same folder: the interrupted run must not leave it standing.
    (gate / "release").write_text("go")
    run_pipeline(cpu_args(ws), check=True)
    assert record_of(ws / "out", "cpu")["status"] == "success"
    (gate / "release").unlink()
    (gate / "started").unlink()

    proc = start_pipeline(cpu_args(ws), tmp_path / "logs")
    wait_for("the slow compile step", (gate / "started").exists, proc=proc, logs=tmp_path / "logs")
    during = record_of(ws / "out", "cpu")
    assert during["status"] == "running"
    assert processes_mentioning(slow_step(ws)), "the slow step should be running"

    proc.send_signal(sig)
    assert proc.wait(timeout=60) == code
    lines = stderr_lines(tmp_path / "logs")
    assert lines == [f"error: interrupted ({name}): child processes stopped"]
    # Nothing of the build outlives the pipeline: no Ninja, no compile step.
    assert processes_mentioning(str(ws / "out" / "cpu" / "build")) == []
    assert processes_mentioning(slow_step(ws)) == []
    after = record_of(ws / "out", "cpu")
    assert after["status"] == "interrupted"
    assert after["started"] == during["started"]
    assert "stopped: the pipeline was interrupted" in (ws / "out" / "cpu" / "build.log").read_text()
    assert not (ws / "out" / "cpu" / "build" / "demo").exists()
    # The report shows this run as interrupted, never the earlier success.
    report = run_pipeline(["report", "--out", str(ws / "out"), "--hit-rate-warning", "0.5"], check=True)
    assert "interrupted" in report.stdout and "success" not in report.stdout

    (gate / "release").write_text("go")
    rerun = run_pipeline(cpu_args(ws), check=True)
    assert "Traceback" not in rerun.stderr
    assert record_of(ws / "out", "cpu")["status"] == "success"
    assert (ws / "out" / "cpu" / "build" / "demo").is_file()


def test_killed_run_leaves_a_running_record_that_reads_as_interrupted(slow_ws: Path, tmp_path: Path) -> None:
    """SIGKILL: no handler runs; the record still says running, and every reader calls it interrupted."""
    ws, gate = slow_ws, slow_ws / "gate"
    proc = start_pipeline(cpu_args(ws), tmp_path / "logs")
    wait_for("the slow compile step", (gate / "started").exists, proc=proc, logs=tmp_path / "logs")
    try:
        proc.kill()
        assert proc.wait(timeout=30) == -signal.SIGKILL
        assert record_of(ws / "out", "cpu")["status"] == "running"
        report = run_pipeline(["report", "--out", str(ws / "out"), "--hit-rate-warning", "0.5"], check=True)
        assert "interrupted" in report.stdout and "running" not in report.stdout
    finally:
        # SIGKILL leaves the child group running (nothing can stop it from inside): the test ends it.
        (gate / "release").write_text("go")
        wait_for("the orphaned step to end", lambda: not processes_mentioning(slow_step(ws)), timeout=60)
    rerun = run_pipeline(cpu_args(ws), check=True)
    assert "Traceback" not in rerun.stderr
    assert record_of(ws / "out", "cpu")["status"] == "success"


# --------------------------------------------------------------------------
# Two runs of one leg into one --out


def test_second_run_of_a_leg_is_refused_naming_the_first_then_waits_with_wait_lock(
    slow_ws: Path, tmp_path: Path
) -> None:
    ws, gate = slow_ws, slow_ws / "gate"
    first = start_pipeline(cpu_args(ws), tmp_path / "first")
    wait_for("the first run's slow step", (gate / "started").exists, proc=first, logs=tmp_path / "first")
    build_before = sorted(p.name for p in (ws / "out" / "cpu" / "build").iterdir())

    second = run_pipeline(cpu_args(ws))
    assert second.returncode == 12
    assert "Traceback" not in second.stderr
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, second.stderr
    assert f"pid {first.pid} (python -m pipeline --matrix" in lines[0]
    assert str(ws / "out" / "cpu") in lines[0] and "--wait-lock" in lines[0]
    # The refused run touched nothing of the first one's.
    assert sorted(p.name for p in (ws / "out" / "cpu" / "build").iterdir()) == build_before
    assert record_of(ws / "out", "cpu")["status"] == "running"

    third = start_pipeline(cpu_args(ws, "--wait-lock", "300"), tmp_path / "third")
    time.sleep(1.0)
    assert third.poll() is None, "with --wait-lock the third run waits for the first"
    (gate / "release").write_text("go")
    assert first.wait(timeout=300) == 0
    assert third.wait(timeout=300) == 0, (tmp_path / "third" / "stderr").read_text()
    assert stderr_lines(tmp_path / "third") == []
    assert record_of(ws / "out", "cpu")["status"] == "success"
    assert "full log" not in (tmp_path / "third" / "stdout").read_text()


# --------------------------------------------------------------------------
# A TheRock index served by a server that can stall or corrupt the tarball


class TarballServer:
    """The index page and one tarball; ``mode`` says how the tarball is served.

    ``good``: whole. ``stall``: half the body, then nothing until released.
    ``truncated``: the first half, with a Content-Length that matches it.
    ``html``: an HTML error page under the tarball's name, with a matching Content-Length.
    """

    def __init__(self, tarball: bytes) -> None:
        self.tarball = tarball
        self.mode = "good"
        self.tarball_requests = 0
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == INDEX:
                    body = html_page([(TARBALL, "2025-01-04T09:30:00Z")]).encode()
                elif self.path == INDEX + TARBALL:
                    outer.tarball_requests += 1
                    body = outer.body()
                    if outer.mode == "stall":
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(outer.tarball)))
                        self.end_headers()
                        self.wfile.write(body[: len(body) // 2])
                        self.wfile.flush()
                        outer.release.wait(120)
                        self.close_connection = True
                        return
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def body(self) -> bytes:
        if self.mode == "truncated":
            return self.tarball[: len(self.tarball) // 2]
        if self.mode == "html":
            return b"<html><body><h1>503 Service Unavailable</h1></body></html>\n"
        return self.tarball

    @property
    def index_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{INDEX}"

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def padded_therock(dest: Path, padding_mb: int) -> bytes:
    """TheRock-shaped tarball from Debian's clang, plus incompressible padding.

    The stalling server sends half the body: the padding makes that half more than the downloader's
    1 MiB read, so a partial file is on disk when the test signals (a size, not a race).
    """
    plain = make_therock_from_debian_clang(dest.with_name("plain.tar.gz"))
    buffer = io.BytesIO()
    with tarfile.open(plain) as src, tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as out:
        for member in src:
            out.addfile(member, src.extractfile(member) if member.isreg() else None)
        if padding_mb:
            data = os.urandom(padding_mb << 20)
            info = tarfile.TarInfo("./share/padding.bin")
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            out.addfile(info, io.BytesIO(data))
    dest.write_bytes(buffer.getvalue())
    return buffer.getvalue()


@pytest.fixture(scope="module")
def padded_tarball(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """One tarball for the module's servers: every test gets the same bytes (and a server of its own)."""
    return padded_therock(tmp_path_factory.mktemp("therock") / "therock.tar.gz", padding_mb=4)


@pytest.fixture
def rocm_ws(tmp_path: Path, padded_tarball: bytes) -> Iterator[tuple[Path, TarballServer]]:
    server = TarballServer(padded_tarball)
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=2)
    rocm_matrix(ws / "matrix.toml", server.index_url, "content")
    try:
        yield ws, server
    finally:
        server.close()


def rocm_args(ws: Path) -> list[str]:
    return [
        "--matrix",
        str(ws / "matrix.toml"),
        "build",
        LEG,
        "--source",
        str(ws / "project"),
        "--now",
        NOW,
        "--out",
        str(ws / "out"),
        "--ccache-dir",
        str(ws / "ccache"),
        "--no-bundle",
    ]


def rocm_env(ws: Path) -> dict[str, str]:
    return {
        "PIPELINE_DOWNLOAD_CACHE": str(ws / "downloads"),
        "PIPELINE_TOOLCHAIN_DIR": str(ws / "toolchains"),
    }


def assert_rerun_installs_and_builds(ws: Path, server: TarballServer) -> None:
    server.mode = "good"
    server.release.set()
    rerun = run_pipeline(rocm_args(ws), env=rocm_env(ws), check=True)
    assert "Traceback" not in rerun.stderr
    assert record_of(ws / "out", LEG)["status"] == "success"
    # Exactly the install and the trusted download: no .part, no .partial, no .trash.
    assert top_level(ws / "toolchains") == [f"rocm-{VERSION}-linux-{FAMILY}"]
    assert top_level(ws / "downloads") == [TARBALL, TARBALL + ".json"]


# --------------------------------------------------------------------------
# Killed during the download


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_kill_during_download(
    rocm_ws: tuple[Path, TarballServer], tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    ws, server = rocm_ws
    server.mode = "stall"
    proc = start_pipeline(rocm_args(ws), tmp_path / "logs", env=rocm_env(ws))
    downloads = ws / "downloads"
    wait_for(
        "a partial download",
        lambda: (
            any(p.name.endswith(".part") and p.stat().st_size > 0 for p in downloads.glob(".*.part"))
            if downloads.exists()
            else False
        ),
        proc=proc,
        logs=tmp_path / "logs",
    )
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == code
    if sig == signal.SIGTERM:
        assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
        # The handler ran: the partial file is gone, the record says so.
        assert top_level(downloads) == []
        assert record_of(ws / "out", LEG)["status"] == "interrupted"
    else:
        # Nothing ran: the .part stays, the record still says running (and reads as interrupted).
        assert [name.endswith(".part") for name in top_level(downloads)] == [True]
        assert record_of(ws / "out", LEG)["status"] == "running"
    # Never trusted: no sidecar, no install.
    assert not (downloads / (TARBALL + ".json")).exists()
    assert top_level(ws / "toolchains") == []
    assert_rerun_installs_and_builds(ws, server)


# --------------------------------------------------------------------------
# Killed during the extraction


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_kill_during_extraction(
    rocm_ws: tuple[Path, TarballServer], tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    ws, server = rocm_ws
    # The run holds at the first member it extracts (processes/pause_points.py): the signal lands mid-extraction
    # however fast or slow the machine is.
    proc = start_pipeline(rocm_args(ws), tmp_path / "logs", env={**rocm_env(ws), **pause_env(ws, "extract")})
    toolchains = ws / "toolchains"
    wait_for("the extraction", (ws / "pause" / "extract.reached").exists, proc=proc, logs=tmp_path / "logs")
    assert [name.endswith(".partial") for name in top_level(toolchains)] == [True]
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == code
    if sig == signal.SIGTERM:
        assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
        assert top_level(toolchains) == []
        assert record_of(ws / "out", LEG)["status"] == "interrupted"
    else:
        left = top_level(toolchains)
        assert len(left) == 1 and left[0].endswith(".partial"), left
    # The download was complete and proven before extraction began: it stays trusted.
    assert top_level(ws / "downloads") == [TARBALL, TARBALL + ".json"]
    assert_rerun_installs_and_builds(ws, server)
    # The rerun reused the trusted download instead of fetching again.
    assert server.tarball_requests == 1


# --------------------------------------------------------------------------
# A corrupt tarball, served twice


@pytest.mark.parametrize("mode", ["truncated", "html"])
def test_corrupt_tarball_is_never_trusted(rocm_ws: tuple[Path, TarballServer], mode: str) -> None:
    ws, server = rocm_ws
    server.mode = mode
    for attempt in (1, 2):
        proc = run_pipeline(rocm_args(ws), env=rocm_env(ws))
        assert proc.returncode == 7, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert f"{TARBALL}: corrupt or unreadable archive" in lines[0]
        # Fetched again every time: nothing was cached, nothing installed.
        assert server.tarball_requests == attempt
        assert top_level(ws / "downloads") == []
        assert top_level(ws / "toolchains") == []
        assert record_of(ws / "out", LEG)["status"] == "failed"
    assert_rerun_installs_and_builds(ws, server)
    assert server.tarball_requests == 3


# --------------------------------------------------------------------------
# Killed during configure: a configure-time step that waits for the test


def write_slow_configure_project(root: Path, gate: Path) -> Path:
    """A C project whose configure runs a step (``execute_process``) that waits for ``gate/release``."""
    root.mkdir(parents=True, exist_ok=True)
    gate.mkdir(parents=True, exist_ok=True)
    (root / "slow_step.py").write_text(SLOW_STEP)
    (root / "main.c").write_text("int generated(void);\nint main(void) { return generated() - 1; }\n")
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(slowconf C)\n"
        f'execute_process(COMMAND "{sys.executable}" "${{CMAKE_SOURCE_DIR}}/slow_step.py" "{gate}/started"'
        f' "{gate}/release" "${{CMAKE_BINARY_DIR}}/generated.c" COMMAND_ERROR_IS_FATAL ANY)\n'
        "add_executable(demo main.c ${CMAKE_BINARY_DIR}/generated.c)\n"
    )
    return root


def test_sigterm_during_configure_stops_cmake_and_records_interrupted(tmp_path: Path) -> None:
    ws, gate = tmp_path / "ws", tmp_path / "ws" / "gate"
    write_slow_configure_project(ws / "project", gate)
    write_matrix(ws / "matrix.toml")
    proc = start_pipeline(cpu_args(ws), tmp_path / "logs")
    wait_for("the configure step", (gate / "started").exists, proc=proc, logs=tmp_path / "logs")
    assert processes_mentioning(slow_step(ws)), "the configure step should be running"

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
    assert processes_mentioning(slow_step(ws)) == []
    assert processes_mentioning(str(ws / "out" / "cpu" / "build")) == []
    assert record_of(ws / "out", "cpu")["status"] == "interrupted"

    (gate / "release").write_text("go")
    rerun = run_pipeline(cpu_args(ws), check=True)
    assert "Traceback" not in rerun.stderr
    assert record_of(ws / "out", "cpu")["status"] == "success"


# --------------------------------------------------------------------------
# Killed while the bundle is packed


def test_sigterm_during_packaging_leaves_no_half_bundle(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=1)
    write_matrix(ws / "matrix.toml")
    args = [a for a in cpu_args(ws, "--tag", "b4242") if a != "--no-bundle"]
    proc = start_pipeline(args, tmp_path / "logs", env=pause_env(ws, "pack"))
    wait_for(
        "the packaging",
        (ws / "pause" / "pack.reached").exists,
        timeout=600,
        proc=proc,
        logs=tmp_path / "logs",
    )
    dist = ws / "out" / "dist"
    assert record_of(ws / "out", "cpu")["status"] == "running"

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
    after = record_of(ws / "out", "cpu")
    assert after["status"] == "interrupted"
    assert after.get("bundle") is None
    # No archive, whole or half, under its own name or a temporary one.
    assert [name for name in top_level(dist) if "llama-b4242" in name] == []

    rerun = run_pipeline(args, check=True)
    assert "Traceback" not in rerun.stderr
    record = record_of(ws / "out", "cpu")
    assert record["status"] == "success"
    assert record["bundle"] == "dist/llama-b4242-bin-ubuntu-x64.tar.gz"
    assert (ws / "out" / record["bundle"]).is_file()


# --------------------------------------------------------------------------
# Killed during `source` and during a leg's clone: a git that waits for the test

GATED_GIT = """\
#!/bin/sh
# Real git, except that the subcommand named by GATE_AT first waits for $GATE/release.
for arg in "$@"; do
  if [ "$arg" = "$GATE_AT" ]; then
    : > "$GATE/started"
    while [ ! -e "$GATE/release" ]; do sleep 0.05; done
    break
  fi
done
exec {git} "$@"
"""


def gated_git(ws: Path, subcommand: str) -> tuple[Path, dict[str, str]]:
    """A ``git`` first on PATH that holds ``git <subcommand>``; returns it and the environment that uses it."""
    import shutil

    real = shutil.which("git")
    assert real is not None
    bindir = ws / "gatebin"
    bindir.mkdir(parents=True, exist_ok=True)
    wrapper = bindir / "git"
    wrapper.write_text(GATED_GIT.format(git=real))
    wrapper.chmod(0o755)
    (ws / "gate").mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "GATE": str(ws / "gate"),
        "GATE_AT": subcommand,
    }
    return wrapper, env


@pytest.fixture
def git_ws(tmp_path: Path) -> Path:
    from datetime import UTC, datetime, timedelta

    from tests.support.gitrepos import commit_files, init_repo, tag

    ws = tmp_path / "ws"
    project = write_cpp_project(tmp_path / "gen", units=1)
    upstream = init_repo(ws / "upstream")
    when = datetime(2026, 3, 11, 12, 0, tzinfo=UTC)
    commit_files(
        upstream,
        {str(p.relative_to(project)): p.read_text() for p in project.rglob("*") if p.is_file()},
        "demo",
        when=when,
    )
    tag(upstream, "b1", when=when + timedelta(minutes=1))
    write_matrix(ws / "matrix.toml")
    text = (ws / "matrix.toml").read_text().replace("https://example.invalid/llama.cpp.git", str(upstream))
    (ws / "matrix.toml").write_text(text.replace('tag = "b1"\n', 'tag = "b1"\nmin_age_hours = 0\n', 1))
    return ws


def test_sigterm_during_source_stops_git_and_leaves_no_archive(git_ws: Path, tmp_path: Path) -> None:
    ws = git_ws
    wrapper, env = gated_git(ws, "archive")
    args = [
        "--matrix",
        str(ws / "matrix.toml"),
        "source",
        "--out",
        str(ws / "out"),
        "--now",
        "2026-03-14T12:00:00Z",
    ]
    proc = start_pipeline(args, tmp_path / "logs", env=env)
    wait_for("git archive", (ws / "gate" / "started").exists, proc=proc, logs=tmp_path / "logs")
    assert processes_mentioning(str(wrapper))

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
    # git archive was stopped with the pipeline: no orphan still writing into the archive's pipe.
    assert processes_mentioning(str(wrapper)) == []
    # Nothing half written: no archive, no manifest, no temporary file.
    assert top_level(ws / "out" / "source") == []

    rerun = run_pipeline(args, check=True)
    assert "Traceback" not in rerun.stderr
    made = json.loads(rerun.stdout)
    assert Path(made["path"]).is_file() and made["tag"] == "b1"


def test_sigterm_while_a_child_is_starting_stops_it_before_the_pipeline_exits(
    git_ws: Path, tmp_path: Path
) -> None:
    """The race behind a surviving `git archive` under load: the signal lands after the child started but
    before the code that stops its group holds it. The run is held exactly there (the "child" point)."""
    ws = git_ws
    # The first child `source` starts is `git ls-remote`: gated, it would wait for ever if nothing stopped it.
    wrapper, env = gated_git(ws, "ls-remote")
    args = [
        "--matrix",
        str(ws / "matrix.toml"),
        "source",
        "--out",
        str(ws / "out"),
        "--now",
        "2026-03-14T12:00:00Z",
    ]
    proc = start_pipeline(args, tmp_path / "logs", env={**env, **pause_env(ws, "child")})
    wait_for("the child's start", (ws / "pause" / "child.reached").exists, proc=proc, logs=tmp_path / "logs")
    wait_for("git ls-remote", (ws / "gate" / "started").exists, proc=proc, logs=tmp_path / "logs")

    proc.send_signal(signal.SIGTERM)
    (ws / "pause" / "child.release").write_text("go")
    assert proc.wait(timeout=60) == 143
    assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
    # The pipeline waited for the child's group: nothing of it outlives the exit.
    assert processes_mentioning(str(wrapper)) == []


def test_sigterm_during_a_legs_clone_stops_git_and_records_interrupted(git_ws: Path, tmp_path: Path) -> None:
    ws = git_ws
    wrapper, env = gated_git(ws, "fetch")
    args = [
        "--matrix",
        str(ws / "matrix.toml"),
        "build",
        "cpu",
        "--out",
        str(ws / "out"),
        "--now",
        "2026-03-14T12:00:00Z",
        "--ccache-dir",
        str(ws / "ccache"),
        "--no-bundle",
    ]
    proc = start_pipeline(args, tmp_path / "logs", env=env)
    wait_for("git fetch", (ws / "gate" / "started").exists, proc=proc, logs=tmp_path / "logs")
    assert record_of(ws / "out", "cpu")["status"] == "running"

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert stderr_lines(tmp_path / "logs") == ["error: interrupted (SIGTERM): child processes stopped"]
    assert processes_mentioning(str(wrapper)) == []
    assert record_of(ws / "out", "cpu")["status"] == "interrupted"

    rerun = run_pipeline(args, check=True)
    assert "Traceback" not in rerun.stderr
    assert record_of(ws / "out", "cpu")["status"] == "success"


# --------------------------------------------------------------------------
# The group machinery itself (processes/groups.py)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_popen_child_stops_the_whole_group_when_its_block_fails(tmp_path: Path) -> None:
    from pipeline.processes.groups import popen_child

    # The child starts a grandchild and prints its pid: both must be gone after the failed block.
    script = (
        "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']);"
        " print(p.pid, flush=True); time.sleep(300)"
    )
    with (
        pytest.raises(KeyboardInterrupt),
        popen_child([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as proc,
    ):
        assert proc.stdout is not None
        grandchild = int(proc.stdout.readline())
        raise KeyboardInterrupt
    assert proc.returncode is not None
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
