"""A real HTTP server on 127.0.0.1 for tests: routes answer scripted responses.

Each route holds a queue of responses; the last one repeats. That expresses
"a 503, then success" or "a 429 with Retry-After, then the page" without
patching any client code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    # Announce this Content-Length but send only `body` (a truncated transfer).
    declared_length: int | None = None


Handler = Callable[["Request"], Response]


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


class LocalServer:
    """``with LocalServer() as srv: srv.route("/x", Response(...)); srv.url("/x")``."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], list[Response | Handler]] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, parts.path, parts.query, dict(self.headers), body)
                resp = outer._next(req)
                self.send_response(resp.status)
                declared = resp.declared_length if resp.declared_length is not None else len(resp.body)
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(declared))
                if resp.declared_length is not None:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(resp.body)
                    self.wfile.flush()

            do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str = "/") -> str:
        return self.base_url + path

    def route(self, path: str, *responses: Response | Handler, method: str = "GET") -> None:
        """Answer ``method path`` with ``responses`` in turn; the last one repeats."""
        with self._lock:
            self._routes[(method, path)] = list(responses)

    def _next(self, req: Request) -> Response:
        with self._lock:
            self.requests.append(req)
            queue = self._routes.get((req.method, req.path))
            if not queue:
                return Response(404, b"not found")
            item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item(req) if callable(item) else item

    def hits(self, path: str, method: str = "GET") -> int:
        return sum(1 for r in self.requests if r.path == path and r.method == method)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve() -> Iterator[LocalServer]:
    """Generator for a pytest fixture: ``srv = pytest.fixture(serve)``."""
    with LocalServer() as srv:
        yield srv
