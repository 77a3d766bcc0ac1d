"""The glslc cache as one process for a whole build: a Unix socket server the compiled launcher talks to.

A Python launcher per call paid an interpreter start at every hit (about 25 ms of CPU, 1,117 times for
llama.cpp's shaders). For the length of a vulkan leg's build, the pipeline
(:mod:`pipeline.ccache.glslc_serving`) runs this module once; the launcher CMake runs as glslc is then a
small C program (``glslc_client.c``) that sends its arguments, its folder and its environment here and
writes back what :func:`pipeline.ccache.glslc_cache.handle` answers: the same key, manifest, stats file and
atomic writes as the Python launcher, which stays the fallback when no server answers.

The exchange, one call per connection (the client shuts its side down after the request):

- request: NUL-terminated fields: :data:`PROTOCOL`, the folder, the argument count, the arguments, the
  environment's count, its ``NAME=value`` entries;
- reply: ``R <code> <stdout bytes> <stderr bytes>\\n`` then both outputs; or ``X <glslc>``: run glslc
  itself, unchanged (an uncacheable call); or ``F``: run the Python launcher instead (a request this
  server cannot read, or a fault of its own).

Standard library only, as :mod:`pipeline.ccache.glslc_cache`: it runs with ``python -I -S``. It serves
until its standard input ends (the pipeline closes it, or dies) or SIGTERM, then removes its socket.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import socketserver
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path

from pipeline.ccache import glslc_cache

# The first field of every request; glslc_client.c sends the same string (and prints it when probed).
PROTOCOL = "glslc-cache-request-1"
# A request larger than this is refused (answered F): arguments and environment are a few kB.
MAX_REQUEST = 16 << 20
# Connections waiting to be accepted: vulkan-shaders-gen runs glslc from many threads, Ninja several of it.
BACKLOG = 256
FALLBACK = b"F"


class Request:
    """One glslc call as the client sent it: the folder it ran in, glslc's arguments, its environment."""

    __slots__ = ("argv", "cwd", "env")

    def __init__(self, *, cwd: str, argv: list[str], env: dict[str, str]) -> None:
        self.cwd, self.argv, self.env = cwd, argv, env

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Request) and (self.cwd, self.argv, self.env) == (
            other.cwd,
            other.argv,
            other.env,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Request(cwd={self.cwd!r}, argv={self.argv!r}, env={self.env!r})"


def encode_request(request: Request) -> bytes:
    """The request as the C client sends it (for tests and the Python side of the benchmark)."""
    env = [f"{k}={v}" for k, v in request.env.items()]
    fields = [PROTOCOL, request.cwd, str(len(request.argv)), *request.argv, str(len(env)), *env]
    return b"".join(os.fsencode(f) + b"\0" for f in fields)


def parse_request(data: bytes) -> Request:
    """A request's bytes as a :class:`Request`; ValueError for anything else."""
    if not data.endswith(b"\0"):
        raise ValueError("a request ends with a NUL")
    fields = [os.fsdecode(f) for f in data[:-1].split(b"\0")]
    if not fields or fields[0] != PROTOCOL:
        raise ValueError(f"not a {PROTOCOL} request")
    if len(fields) < 4 or not fields[1].startswith("/"):
        raise ValueError("a request names an absolute folder")
    argc = _count_field(fields[2])
    env_at = 3 + argc
    if env_at >= len(fields):
        raise ValueError("fewer arguments than the request counts")
    envc = _count_field(fields[env_at])
    if len(fields) != env_at + 1 + envc:
        raise ValueError("the environment's count does not match its entries")
    env: dict[str, str] = {}
    for entry in fields[env_at + 1 :]:
        name, sep, value = entry.partition("=")
        if sep and name:
            env.setdefault(name, value)
    return Request(cwd=fields[1], argv=fields[3:env_at], env=env)


def _count_field(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ValueError(f"expected a count, got {text!r}")
    return int(text)


def encode_reply(reply: glslc_cache.Reply) -> bytes:
    """The reply the client acts on: glslc's code and outputs, or the glslc to run itself."""
    if reply.exec_glslc is not None:
        return b"X " + os.fsencode(reply.exec_glslc)
    return b"R %d %d %d\n" % (reply.code, len(reply.stdout), len(reply.stderr)) + reply.stdout + reply.stderr


def answer(config: dict[str, str], data: bytes) -> bytes:
    """The reply to one request's bytes: F for one it cannot read or a call that failed inside the cache."""
    try:
        request = parse_request(data)
    except ValueError as exc:
        print(f"glslc cache server: refused a request: {exc}", file=sys.stderr, flush=True)
        return FALLBACK
    try:
        return encode_reply(glslc_cache.handle(config, request.argv, request.cwd, request.env))
    except Exception:
        # A fault here never fails the build: the Python launcher takes the call over.
        traceback.print_exc(file=sys.stderr)
        return FALLBACK


def _receive(conn: socket.socket) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while chunk := conn.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            return None
    return b"".join(chunks)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(self, path: str, config: dict[str, str]) -> None:
        self.config = config
        # Calls answered, and calls handed back to the Python launcher (F): its log's last line.
        self.answered = self.handed_back = 0
        self.counts_lock = threading.Lock()
        super().__init__(path, _Handler)

    def summary(self) -> str:
        return (
            f"glslc cache server: {self.answered} calls answered, {self.handed_back} handed to the "
            "Python launcher"
        )


class _Handler(socketserver.BaseRequestHandler):
    server: _Server
    request: socket.socket

    def handle(self) -> None:
        data = _receive(self.request)
        reply = FALLBACK if data is None else answer(self.server.config, data)
        with self.server.counts_lock:
            if reply == FALLBACK:
                self.server.handed_back += 1
            else:
                self.server.answered += 1
        self.request.sendall(reply)


def _serve(server: _Server, stdin: int) -> None:
    """Accept calls until ``stdin`` ends; each call is answered on a thread of its own.

    One loop over both, not ``serve_forever``: its shutdown waits for its next poll (half a second by
    default), which every build would wait for at its end.
    """
    with selectors.DefaultSelector() as selector:
        selector.register(server, selectors.EVENT_READ)
        selector.register(stdin, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj != stdin:
                    server.handle_request()
                elif not os.read(stdin, 4096):
                    return


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """``SETTINGS SOCKET``: serve the launcher's settings on ``SOCKET`` until standard input ends."""
    settings, path = (Path(a).absolute() for a in (sys.argv[1:] if argv is None else argv))
    config = glslc_cache.read_settings(str(settings))
    signal.signal(signal.SIGTERM, _stop)
    # Bound by its name in its own folder: a socket's path is limited to about 100 bytes, a build folder's is not.
    os.chdir(path.parent)
    name = Path(path.name)
    name.unlink(missing_ok=True)  # a server of an earlier build that was killed
    old_mask = os.umask(0o077)
    try:
        server = _Server(str(name), config)
    finally:
        os.umask(old_mask)
    try:
        print("ready", flush=True)
        _serve(server, sys.stdin.fileno())
    finally:
        server.server_close()
        name.unlink(missing_ok=True)
        print(server.summary(), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
