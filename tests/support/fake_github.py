"""A fake GitHub Actions caches API over real HTTP on 127.0.0.1.

It speaks the real protocol: ``GET /repos/{o}/{r}/actions/caches`` with
``per_page``/``page`` and a ``Link`` header, ``DELETE .../caches/{id}``,
bearer-token auth (401), unknown repositories (404), and scripted faults
(5xx, 429 with ``Retry-After``, rate-limit 403s, malformed bodies) that fire
a given number of times on matching requests.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Fault:
    method: str
    # Matched against "<path>?<query>" with re.search.
    pattern: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b'{"message": "scripted fault"}'
    times: int = 1


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str | None
    status: int


class FakeGitHub:
    """``with FakeGitHub(repo="o/r", token="t") as gh: gh.add_cache(...); gh.api_url``."""

    def __init__(self, *, repo: str = "octo/llama", token: str = "test-token", max_per_page: int = 7) -> None:
        self.repo = repo
        self.token = token
        self.max_per_page = max_per_page
        # The order caches are listed in: whatever order they were added (tests shuffle).
        self.caches: list[dict[str, Any]] = []
        self.deleted: list[int] = []
        self.faults: list[Fault] = []
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _serve(self) -> None:
                status, body, headers = outer._handle(self.command, self.path, self.headers.get("Authorization"))
                self._reply(status, body, headers)

            do_GET = do_DELETE = do_POST = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- test API

    @property
    def api_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add_cache(
        self, ident: int, key: str, *, ref: str = "refs/heads/main", created_at: str, size: int = 1000
    ) -> None:
        self.caches.append(
            {
                "id": ident,
                "ref": ref,
                "key": key,
                "version": f"v{ident:04d}",
                "last_accessed_at": created_at,
                "created_at": created_at,
                "size_in_bytes": size,
            }
        )

    def fault(self, method: str, pattern: str, status: int, *, times: int = 1, headers: dict[str, str] | None = None,
              body: bytes | None = None) -> None:
        """Answer the next ``times`` requests matching ``method`` and ``pattern`` with ``status``."""
        self.faults.append(
            Fault(method, pattern, status, headers or {}, body if body is not None else b'{"message": "fault"}', times)
        )

    def hits(self, method: str, status: int | None = None) -> int:
        return sum(1 for r in self.requests if r.method == method and (status is None or r.status == status))

    # -- the server side

    def _handle(self, method: str, raw_path: str, auth: str | None) -> tuple[int, bytes, dict[str, str]]:
        parts = urlsplit(raw_path)
        query = parse_qs(parts.query)
        with self._lock:
            status, body, headers = self._route(method, parts.path, parts.query, query, auth)
            self.requests.append(Seen(method, parts.path, query, auth, status))
        return status, body, headers

    def _route(
        self, method: str, path: str, raw_query: str, query: dict[str, list[str]], auth: str | None
    ) -> tuple[int, bytes, dict[str, str]]:
        target = f"{path}?{raw_query}" if raw_query else path
        for fault in self.faults:
            if fault.times > 0 and fault.method == method and re.search(fault.pattern, target):
                fault.times -= 1
                return fault.status, fault.body, fault.headers
        if auth != f"Bearer {self.token}":
            return 401, _json({"message": "Bad credentials", "status": "401"}), {}
        base = f"/repos/{self.repo}/actions/caches"
        if method == "GET" and path == base:
            return self._list(base, query)
        match = re.fullmatch(re.escape(base) + r"/(\d+)", path)
        if method == "DELETE" and match:
            ident = int(match.group(1))
            for i, cache in enumerate(self.caches):
                if cache["id"] == ident:
                    del self.caches[i]
                    self.deleted.append(ident)
                    return 204, b"", {}
            return 404, _json({"message": "Not Found"}), {}
        return 404, _json({"message": "Not Found"}), {}

    def _list(self, base: str, query: dict[str, list[str]]) -> tuple[int, bytes, dict[str, str]]:
        per_page = min(int(query.get("per_page", ["30"])[0]), self.max_per_page)
        page = int(query.get("page", ["1"])[0])
        total = len(self.caches)
        last = max(1, -(-total // per_page))
        items = self.caches[(page - 1) * per_page : page * per_page]
        links = []
        if page < last:
            links.append(f'<{self.api_url}{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{self.api_url}{base}?per_page={per_page}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{self.api_url}{base}?per_page={per_page}&page=1>; rel="first"')
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, _json({"total_count": total, "actions_caches": items}), headers

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")
