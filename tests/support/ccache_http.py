"""A real server of ccache's HTTP storage protocol on 127.0.0.1: GET, HEAD, PUT and DELETE of ``/<path>``.

ccache's ``http://`` remote backend (its manual, "HTTP storage backend") needs
nothing more: a GET answers the entry or 404, a PUT stores it. Entries live in
memory (a throw-away server for one test) or in a folder, written to a temporary
file and renamed into place, so that every worker of a test run can serve the
same folder at once (tests/support/shared_units.py) and a reader never sees half
an entry.
"""

from __future__ import annotations

import os
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The path every entry is under (the URL's path): a probe of the server's root is not a storage request.
PREFIX = "/cache"


class HttpStorage:
    """ccache's HTTP storage, in memory or in ``directory``.

    ``failing`` makes every storage request answer 500 while a probe of the
    base path still gets a 404: a server that is up but broken.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.store: dict[str, bytes] = {}
        self.failing = False
        self.requests: list[str] = []
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, body: bytes = b"") -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _storage(self) -> bool:
                outer.requests.append(f"{self.command} {self.path}")
                if outer.failing and self.path.startswith(PREFIX + "/"):
                    self._reply(500)
                    return False
                return True

            def do_GET(self) -> None:
                if self._storage():
                    body = outer.get(self.path)
                    self._reply(404) if body is None else self._reply(200, body)

            do_HEAD = do_GET

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self._storage():
                    outer.put(self.path, body)
                    self._reply(201)

            def do_DELETE(self) -> None:
                if self._storage():
                    outer.delete(self.path)
                    self._reply(204)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{PREFIX}"

    def _file(self, path: str) -> Path | None:
        """The file of an entry's URL path; None for a path outside the prefix or one that climbs out."""
        assert self.directory is not None
        parts = path.split("?", 1)[0].removeprefix(PREFIX + "/").split("/")
        if not path.startswith(PREFIX + "/") or any(p in ("", ".", "..") for p in parts):
            return None
        return self.directory.joinpath(*parts)

    def get(self, path: str) -> bytes | None:
        if self.directory is None:
            return self.store.get(path)
        file = self._file(path)
        try:
            return file.read_bytes() if file is not None else None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def put(self, path: str, body: bytes) -> None:
        if self.directory is None:
            self.store[path] = body
            return
        file = self._file(path)
        if file is None:
            return
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=file.parent, prefix=".put-")
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(temp, file)

    def delete(self, path: str) -> None:
        if self.directory is None:
            self.store.pop(path, None)
        elif (file := self._file(path)) is not None:
            file.unlink(missing_ok=True)

    def entries(self) -> int:
        """How many entries the storage holds."""
        if self.directory is None:
            return len(self.store)
        return sum(1 for p in self.directory.rglob("*") if p.is_file() and not p.name.startswith(".put-"))

    def __enter__(self) -> HttpStorage:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
