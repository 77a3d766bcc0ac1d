"""The glslc cache's fast path with the real glslc: the compiled launcher, the server, and every fallback.

Each test sets the cache up as the leg does (:func:`setup_glslc_cache`, the host's C compiler) over the
shader sources of tests/support/vulkan_project.py and runs the launcher as vulkan-shaders-gen runs glslc:
one call per variant, ``-O``, a depfile, an include two levels down and a ``-I`` folder. What is checked is
what a build sees (the SPIR-V, the depfile, the exit code, what glslc printed) and the stats file's counts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.ccache.glslc_serving import server_command, serving_glslc
from pipeline.ccache.glslc_session import GlslcCache, setup_glslc_cache
from tests.support.vulkan_project import SHADER_SOURCES

pytestmark = pytest.mark.integration

GLSLC = shutil.which("glslc")
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
if GLSLC is None or CC is None:
    pytest.skip("needs glslc and a C compiler (Debian: glslc, gcc)", allow_module_level=True)
SHADERS = ("scale", "add")
SPIRV_MAGIC = bytes.fromhex("03022307")


def _workspace(ws: Path) -> Path:
    for name, text in SHADER_SOURCES.items():
        (ws / "project" / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / "project" / name).write_text(text)
    (ws / "build").mkdir(parents=True)
    return ws


def _setup(ws: Path, cache: Path, cc: str | None = CC) -> GlslcCache:
    args = [f"-DCMAKE_C_COMPILER={cc}", f"-DVulkan_GLSLC_EXECUTABLE={GLSLC}"]
    glslc = setup_glslc_cache(
        args, ccache_dir=cache, base_dir=ws, build=ws / "build", stats_log=ws / "ccache-stats.log"
    )
    assert glslc is not None
    return glslc


def _call(ws: Path, shader: str, variant: int) -> list[str]:
    out = ws / "build" / f"{shader}-{variant}.spv"
    return [
        "-fshader-stage=compute",
        "--target-env=vulkan1.2",
        str(ws / "project" / "shaders" / f"{shader}.comp"),
        "-o",
        str(out),
        "-O",
        "-MD",
        "-MF",
        f"{out}.d",
        "-I",
        str(ws / "project" / "shaders" / "lib"),
        f"-DVARIANT={variant}",
    ]


def _calls(ws: Path, variants: range) -> list[list[str]]:
    return [_call(ws, shader, v) for shader in SHADERS for v in variants]


def _run(glslc: GlslcCache, argv: list[str], ws: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(glslc.launcher), *argv], cwd=ws / "build", capture_output=True, timeout=120, check=False
    )


def _run_all(glslc: GlslcCache, calls: list[list[str]], ws: Path, threads: int = 1) -> None:
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for proc in pool.map(lambda argv: _run(glslc, argv, ws), calls):
            assert proc.returncode == 0, proc.stderr.decode()


def _counts(glslc: GlslcCache) -> tuple[int, int, int]:
    counts = glslc.read_stats()
    return counts["hit"], counts["miss"], counts["uncacheable"]


def _spv(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((ws / "build").glob("*.spv"))}


def _server_summary(glslc: GlslcCache) -> str:
    assert glslc.socket is not None
    return glslc.socket.with_name("server.log").read_text().strip().splitlines()[-1]


def _servers_of(glslc: GlslcCache) -> list[int]:
    """The pids of running processes whose command line names this cache's socket."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if str(glslc.socket).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def test_the_launcher_is_the_compiled_client_and_the_python_one_stays_beside_it(tmp_path: Path) -> None:
    glslc = _setup(_workspace(tmp_path / "ws"), tmp_path / "ccache")
    assert glslc.client_problem is None
    assert glslc.launcher.read_bytes()[:4] == b"\x7fELF"
    assert glslc.fallback.read_text().startswith("#!/bin/sh")
    assert glslc.socket == glslc.launcher.with_name("server.sock")
    # Only this user can reach the server: whoever can connect can have it write files.
    assert glslc.launcher.parent.stat().st_mode & 0o777 == 0o700
    # Built once per cache: the next folder's setup copies the same program.
    built = list((tmp_path / "ccache" / "glslc" / "client").glob("*/glslc-client"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    second = _setup(_workspace(tmp_path / "ws2"), tmp_path / "ccache")
    assert second.launcher.read_bytes() == glslc.launcher.read_bytes()
    assert built[0].stat().st_mtime_ns == mtime


def test_through_the_server_another_folder_hits_and_a_changed_include_misses(tmp_path: Path) -> None:
    cache = tmp_path / "ccache"
    runner = _workspace(tmp_path / "runner")
    first = _setup(runner, cache)
    calls = _calls(runner, range(1, 3))
    with serving_glslc(first) as problem:
        assert problem is None
        assert first.socket is not None and first.socket.exists()
        _run_all(first, calls, runner)
    assert _counts(first) == (0, 4, 0)
    assert _server_summary(first) == "glslc cache server: 4 calls answered, 0 handed to the Python launcher"
    built = _spv(runner)
    direct = tmp_path / "direct.spv"
    subprocess.run([str(GLSLC), *calls[0][:3], "-o", str(direct), "-O", *calls[0][-3:]], check=True)
    assert built["scale-1.spv"] == direct.read_bytes()
    assert all(data.startswith(SPIRV_MAGIC) for data in built.values())

    laptop = _workspace(tmp_path / "elsewhere" / "laptop")
    second = _setup(laptop, cache)
    with serving_glslc(second) as problem:
        assert problem is None
        _run_all(second, _calls(laptop, range(1, 3)), laptop)
    assert _counts(second) == (4, 0, 0)
    assert _server_summary(second) == "glslc cache server: 4 calls answered, 0 handed to the Python launcher"
    assert _spv(laptop) == built
    depfile = (laptop / "build" / "scale-1.spv.d").read_text()
    assert str(laptop) in depfile and str(runner) not in depfile, depfile
    assert [Path(p).name for p in depfile.split(": ", 1)[1].split()] == [
        "scale.comp",
        "inner.glsl",
        "common.glsl",
    ]

    (laptop / "project" / "shaders" / "lib" / "inner.glsl").write_text(
        "float inner_factor() { return 3.0; }\n"
    )
    third = _setup(laptop, cache)
    with serving_glslc(third):
        _run_all(third, _calls(laptop, range(1, 3)), laptop)
    assert _counts(third) == (2, 2, 0)
    changed = _spv(laptop)
    assert changed["scale-1.spv"] != built["scale-1.spv"] and changed["add-1.spv"] == built["add-1.spv"]


def test_through_the_server_glslc_s_errors_and_uncacheable_calls_reach_the_caller(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, tmp_path / "ccache")
    broken = ws / "project" / "shaders" / "broken.comp"
    broken.write_text("#version 450\nvoid main() { undefined_thing(); }\n")
    with serving_glslc(glslc):
        failed = _run(glslc, ["-fshader-stage=compute", str(broken), "-o", str(ws / "build" / "b.spv")], ws)
        # `-o -`: the SPIR-V on standard output, as CMake's configure-time checks ask; glslc itself writes it.
        piped = _run(
            glslc,
            [
                "-fshader-stage=compute",
                _call(ws, "add", 1)[2],
                "-o",
                "-",
                "-I",
                str(ws / "project" / "shaders" / "lib"),
                "-DVARIANT=1",
            ],
            ws,
        )
    assert failed.returncode != 0
    assert b"broken.comp:2: error" in failed.stderr, failed.stderr
    assert not (ws / "build" / "b.spv").exists()
    assert piped.returncode == 0 and piped.stdout.startswith(SPIRV_MAGIC), piped.stderr
    assert _counts(glslc) == (0, 1, 1)
    assert _server_summary(glslc) == "glslc cache server: 2 calls answered, 0 handed to the Python launcher"


def test_without_a_server_the_client_hands_each_call_to_the_python_launcher(tmp_path: Path) -> None:
    cache = tmp_path / "ccache"
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, cache)
    _run_all(glslc, _calls(ws, range(1, 3)), ws)
    assert _counts(glslc) == (0, 4, 0)
    other = _workspace(tmp_path / "other")
    warm = _setup(other, cache)
    _run_all(warm, _calls(other, range(1, 3)), other)
    assert _counts(warm) == (4, 0, 0)
    assert _spv(other) == _spv(ws)
    assert str(other) in (other / "build" / "add-2.spv.d").read_text()


def test_without_a_c_compiler_cmake_gets_the_python_launcher(tmp_path: Path) -> None:
    cache = tmp_path / "ccache"
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, cache, cc=str(tmp_path / "no-such-cc"))
    assert glslc.launcher == glslc.fallback and glslc.socket is None
    assert glslc.client_problem is not None and "no C compiler" in glslc.client_problem
    with serving_glslc(glslc) as problem:  # nothing to serve: the block runs, no server starts
        assert problem is None
        _run_all(glslc, _calls(ws, range(1, 3)), ws)
    assert _counts(glslc) == (0, 4, 0)
    # A compiler that fails to build the client is the same: the Python launcher.
    fake_cc = tmp_path / "bad-cc"
    fake_cc.write_text("#!/bin/sh\necho 'bad-cc: cannot compile' >&2\nexit 1\n")
    fake_cc.chmod(0o755)
    bad = _setup(_workspace(tmp_path / "ws2"), tmp_path / "other-cache", cc=str(fake_cc))
    assert bad.launcher == bad.fallback and bad.client_problem is not None
    assert "bad-cc: cannot compile" in bad.client_problem


def test_a_server_gone_mid_build_hands_the_rest_to_the_python_launcher(tmp_path: Path) -> None:
    cache = tmp_path / "ccache"
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, cache)
    assert glslc.socket is not None
    server = subprocess.Popen(
        server_command(glslc, glslc.socket),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"
        _run_all(glslc, _calls(ws, range(1, 2)), ws)
        server.send_signal(signal.SIGKILL)
        server.wait()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    # Killed outright: its socket is left behind, refusing connections.
    assert glslc.socket.exists()
    _run_all(glslc, _calls(ws, range(1, 4)), ws)
    assert _counts(glslc) == (2, 6, 0)
    assert len(_spv(ws)) == 6


@contextlib.contextmanager
def _fake_server(path: Path, reply: bytes) -> Iterator[list[bytes]]:
    """A server on ``path`` that reads each request and answers ``reply`` (b"": hangs up without a word)."""
    received: list[bytes] = []
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Bound by its name in its folder, as the real server binds (a socket's path is limited to about 100 bytes,
    # a test's folder is not).
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        listener.bind(path.name)
    finally:
        os.chdir(here)
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                received.append(data)
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=10)
        path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    "reply", [b"", b"F", b"R 0 10 0\nshort", b"Q what"], ids=["hangs-up", "F", "cut-short", "unknown"]
)
def test_a_server_that_does_not_answer_in_full_leaves_the_call_to_the_python_launcher(
    tmp_path: Path, reply: bytes
) -> None:
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, tmp_path / "ccache")
    assert glslc.socket is not None
    call = _call(ws, "scale", 1)
    os.environ["GLSLC_TEST_MARK"] = "seen"
    try:
        with _fake_server(glslc.socket, reply) as received:
            proc = _run(glslc, call, ws)
    finally:
        del os.environ["GLSLC_TEST_MARK"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert _counts(glslc) == (0, 1, 0)
    assert (ws / "build" / "scale-1.spv").read_bytes().startswith(SPIRV_MAGIC)
    # What the client sent: protocol, folder, arguments and environment, NUL-terminated.
    fields = received[0].split(b"\0")
    assert fields[:4] == [
        b"glslc-cache-request-1",
        str(ws / "build").encode(),
        str(len(call)).encode(),
        call[0].encode(),
    ]
    assert b"GLSLC_TEST_MARK=seen" in fields


def test_concurrent_calls_through_one_server(tmp_path: Path) -> None:
    """vulkan-shaders-gen runs glslc from many threads at once: every call is counted once and every
    output is whole."""
    cache = tmp_path / "ccache"
    variants = range(1, 13)
    ws = _workspace(tmp_path / "ws")
    cold = _setup(ws, cache)
    with serving_glslc(cold):
        _run_all(cold, _calls(ws, variants), ws, threads=12)
    assert _counts(cold) == (0, 24, 0)
    assert cold.stats.read_text().splitlines() == ["miss"] * 24
    built = _spv(ws)
    assert len(built) == 24 and len(set(built.values())) == 24

    other = _workspace(tmp_path / "other")
    warm = _setup(other, cache)
    with serving_glslc(warm):
        _run_all(warm, _calls(other, variants), other, threads=12)
        # And again in the same folder, twice over at once: the same outputs, written whole.
        _run_all(warm, _calls(other, variants) * 2, other, threads=16)
    assert _counts(warm) == (72, 0, 0)
    assert _spv(other) == built
    assert _server_summary(warm) == "glslc cache server: 72 calls answered, 0 handed to the Python launcher"
    assert not list((other / "build").glob(".*.tmp"))


def test_the_server_is_stopped_and_its_socket_removed_when_the_block_ends(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, tmp_path / "ccache")
    assert glslc.socket is not None
    with serving_glslc(glslc):
        assert glslc.socket.exists() and len(_servers_of(glslc)) == 1
    assert not glslc.socket.exists() and _servers_of(glslc) == []

    # Also when the build is interrupted, or fails with an exception.
    for exc in (KeyboardInterrupt, RuntimeError):
        with pytest.raises(exc), serving_glslc(glslc):
            assert len(_servers_of(glslc)) == 1
            raise exc()
        assert not glslc.socket.exists() and _servers_of(glslc) == []
    # The calls after it: the Python launcher.
    _run_all(glslc, _calls(ws, range(1, 2)), ws)
    assert _counts(glslc) == (0, 2, 0)


def test_a_server_that_cannot_start_is_a_problem_and_the_build_goes_on(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    glslc = _setup(ws, tmp_path / "ccache")
    glslc.settings.unlink()  # the server reads it first: it exits at once
    with serving_glslc(glslc) as problem:
        assert problem is not None and "stopped as it started" in problem
    assert glslc.socket is not None and not glslc.socket.exists()
    assert "FileNotFoundError" in glslc.socket.with_name("server.log").read_text()
