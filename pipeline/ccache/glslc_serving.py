"""The glslc cache server's life: started before a vulkan leg's Ninja runs, stopped when it ends.

:func:`serving_glslc` starts :mod:`pipeline.ccache.glslc_server` in a process group of its own, with
its standard input a pipe from this process: it stops when that pipe ends, so it never outlives the
pipeline, even one killed outright. On the way out (the build done or failed, an interrupt, an
exception) the pipe is closed, the server is given a few seconds and then its group is stopped, and its
socket is removed whatever became of it. Until the server answers, and after it is gone, the compiled
launcher hands each call to the Python launcher: a build never waits on the server.
"""

from __future__ import annotations

import contextlib
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.ccache.glslc_session import GlslcCache
from pipeline.processes.groups import popen_child, stop_group, wait_for_exit

if TYPE_CHECKING:
    from subprocess import Popen

# The server runs with the pipeline's interpreter, isolated and without site-packages: it needs only the
# standard library and this package, put first on its path.
SERVER_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from pipeline.ccache.glslc_server import main; sys.exit(main(sys.argv[2:]))"
)
LOG_NAME = "server.log"
READY_SECONDS = 30.0
STOP_SECONDS = 10.0


def server_command(cache: GlslcCache, socket: Path) -> list[str]:
    root = Path(__file__).resolve().parents[2]
    return [sys.executable, "-I", "-S", "-c", SERVER_BOOT, str(root), str(cache.settings), str(socket)]


def _ready(proc: Popen[Any], log: Path) -> str | None:
    """None once the server says it listens; else why it does not."""
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], READY_SECONDS)
    if not readable:
        return f"the glslc cache server did not start in {READY_SECONDS:.0f} s (its log: {log})"
    if proc.stdout.readline() != b"ready\n":
        return f"the glslc cache server stopped as it started (its log: {log})"
    return None


@contextlib.contextmanager
def serving_glslc(cache: GlslcCache | None) -> Iterator[str | None]:
    """The glslc cache server of ``cache`` for the block; yields None, or why no server runs (the block then
    runs with the Python launcher). Nothing to serve (no cache, no compiled launcher): yields None."""
    if cache is None or cache.socket is None:
        yield None
        return
    socket = cache.socket
    log_path = socket.with_name(LOG_NAME)
    try:
        with (
            log_path.open("ab") as log,
            popen_child(
                server_command(cache, socket), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log
            ) as proc,
        ):
            assert proc.stdin is not None
            try:
                problem = _ready(proc, log_path)
                if problem is not None:
                    stop_group(proc)
                yield problem
            finally:
                # End of its input: the server stops accepting and removes its socket.
                with contextlib.suppress(OSError):
                    proc.stdin.close()
                try:
                    wait_for_exit(proc, STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    stop_group(proc)
    finally:
        socket.unlink(missing_ok=True)
