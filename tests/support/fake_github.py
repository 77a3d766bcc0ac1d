"""A fake GitHub API (Actions caches, releases, issues) over real HTTP on 127.0.0.1.

It speaks the real protocol: ``GET /repos/{o}/{r}/actions/caches`` with
``per_page``/``page`` and a ``Link`` header, ``DELETE .../caches/{id}``,
bearer-token auth (401), unknown repositories (404), and scripted faults
(5xx, 429 with ``Retry-After``, rate-limit 403s, malformed bodies) that fire
a given number of times on matching requests; a ``lost`` fault lets the
request take effect and replaces only its answer (a proxy losing a response).

Releases as GitHub has them: ``GET .../releases/tags/{tag}`` sees published
releases only (drafts are listed by ``GET .../releases``), a second release
for a tag answers 422 ``already_exists``, assets are uploaded to a second
server (GitHub's separate uploads host) named by the release's
``upload_url`` template and carry a ``digest``; a duplicate name answers 422
``already_exists``. ``PATCH .../releases/assets/{id}`` renames an asset (422
``already_exists`` when another asset has the name), ``GET
.../releases/assets/{id}`` with ``Accept: application/octet-stream`` answers
its bytes; ``digests=False`` plays a server that reports no ``digest``.
``history`` holds each release's assets (name -> bytes) and notes after every
change, so a test checks every moment, not only the end; ``on_change`` runs
after a change took effect and before its answer is sent (a test kills the
client there: a run killed between two steps). A release records ``target_commitish``, ``prerelease``
and which release is latest (``make_latest``, default true for a published
non-prerelease); a ``target_commitish`` naming a commit the repository does
not hold (``commits``: the SHAs it has) answers 422 ``invalid``, as GitHub
does for a commit of another repository. Issues: list by label and state, create, comment, close.
Workflow runs: a run, its jobs (paged, under ``jobs``), each job's check-run
annotations, and ``POST .../runs/{id}/rerun-failed-jobs``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
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
    # Matching requests let through before the fault fires.
    after: int = 0
    # The request takes effect and only its answer is replaced: a proxy that lost the response.
    lost: bool = False


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str | None
    status: int
    # True for a request to the uploads host.
    uploads: bool = False


class FakeGitHub:
    """``with FakeGitHub(repo="o/r", token="t") as gh: gh.add_cache(...); gh.api_url``."""

    def __init__(
        self,
        *,
        repo: str = "octo/llama",
        token: str = "test-token",
        max_per_page: int = 7,
        commits: tuple[str, ...] = (),
        digests: bool = True,
    ) -> None:
        self.repo = repo
        self.digests = digests
        # After every change (a 2xx POST, PATCH or DELETE): the method and path, and per tag the
        # release's draft flag, notes and assets (name -> bytes).
        self.history: list[tuple[str, dict[str, dict[str, Any]]]] = []
        # Called with each change's request after it took effect, before the answer is sent.
        self.on_change: Callable[[Seen], None] | None = None
        # The commits this repository holds (a target_commitish must be one of them, or a branch).
        self.commits = set(commits)
        # The id of the release GitHub shows as "Latest".
        self.latest_id: int | None = None
        self.token = token
        self.max_per_page = max_per_page
        # The order caches are listed in: whatever order they were added (tests shuffle).
        self.caches: list[dict[str, Any]] = []
        self.deleted: list[int] = []
        self.faults: list[Fault] = []
        self.requests: list[Seen] = []
        self.releases: list[dict[str, Any]] = []
        # Asset bytes by asset id (the test reads back what was uploaded).
        self.asset_bytes: dict[int, bytes] = {}
        self.issues: list[dict[str, Any]] = []
        # Called after each finished upload with the number of uploads so far (a test's crash hook).
        self.on_upload: Callable[[int], None] | None = None
        self.uploads_done = 0
        self._next_id = 1000
        # Workflow runs by id ({"run": ..., "jobs": [...]}), check-run annotations by job id, runs re-run.
        self.runs: dict[int, dict[str, Any]] = {}
        self.annotations: dict[int, list[dict[str, Any]]] = {}
        self.reruns: list[int] = []
        # The nightly workflow's finished runs, newest first; each run's artifacts; an artifact's zip bytes
        # (served from the uploads host, as GitHub serves them from its storage host, behind a redirect);
        # the Authorization header each zip download arrived with (the token must not leave the API).
        self.workflow_runs: list[dict[str, Any]] = []
        self.run_artifacts: dict[int, list[dict[str, Any]]] = {}
        self.blobs: dict[int, bytes] = {}
        self.blob_auth: list[str | None] = []
        # What the fake stamps on a release it creates or publishes (created_at, published_at).
        self.now = "2026-03-14T12:00:00Z"
        self._lock = threading.Lock()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                headers = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                uploads = self.server is outer._uploads
                # A client that died mid-body: GitHub keeps such an asset in the "starter" state.
                status, body, headers = outer._handle(
                    self.command,
                    self.path,
                    self.headers.get("Authorization"),
                    data,
                    uploads=uploads,
                    partial=len(data) < length,
                )
                if outer.on_change and self.command != "GET" and status < 300:
                    outer.on_change(outer.requests[-1])
                self._reply(status, body, headers)
                if uploads and status == 201 and outer.on_upload:
                    outer.on_upload(outer.uploads_done)

            do_GET = do_DELETE = do_POST = do_PATCH = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        # GitHub uploads assets to another host than the API's: so does the fake.
        self._uploads = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._uploads.daemon_threads = True
        self._uploads_thread = threading.Thread(target=self._uploads.serve_forever, daemon=True)

    # -- test API

    @property
    def api_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def uploads_url(self) -> str:
        host, port = self._uploads.server_address[:2]
        return f"http://{host!s}:{port}"

    def add_release(
        self,
        tag: str,
        *,
        draft: bool = False,
        prerelease: bool = False,
        assets: dict[str, bytes] | None = None,
        published_at: str | None = None,
    ) -> dict[str, Any]:
        """A release already on the repository (with ``assets``: name -> bytes, all uploaded).

        ``published_at``: when it was published (ISO 8601; GitHub's field is null for a draft).
        """
        with self._lock:
            release = self._new_release(
                {"tag_name": tag, "name": tag, "body": "", "draft": draft, "prerelease": prerelease}
            )
            if published_at is not None and not draft:
                release["published_at"] = release["created_at"] = published_at
            for name, data in (assets or {}).items():
                self._store_asset(release, name, data)
        return release

    def release(self, tag: str) -> dict[str, Any] | None:
        return next((r for r in self.releases if r["tag_name"] == tag), None)

    def asset_names(self, tag: str) -> list[str]:
        release = self.release(tag)
        return sorted(a["name"] for a in release["assets"]) if release else []

    def add_issue(self, title: str, labels: list[str], *, state: str = "open") -> int:
        with self._lock:
            return self._new_issue({"title": title, "body": "", "labels": labels}, state=state)["number"]

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

    def fault(
        self,
        method: str,
        pattern: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        after: int = 0,
        lost: bool = False,
    ) -> None:
        """Answer the next ``times`` requests matching ``method`` and ``pattern`` with ``status``
        (once ``after`` of them went through). ``lost``: the request is carried out first, and only
        its answer is replaced, as by a proxy that loses the response on its way back."""
        self.faults.append(
            Fault(
                method,
                pattern,
                status,
                headers or {},
                body if body is not None else b'{"message": "fault"}',
                times,
                after,
                lost,
            )
        )

    def hits(self, method: str, status: int | None = None) -> int:
        return sum(1 for r in self.requests if r.method == method and (status is None or r.status == status))

    # -- the server side

    def _handle(
        self,
        method: str,
        raw_path: str,
        auth: str | None,
        data: bytes = b"",
        *,
        uploads: bool = False,
        partial: bool = False,
    ) -> tuple[int, bytes, dict[str, str]]:
        parts = urlsplit(raw_path)
        query = parse_qs(parts.query)
        with self._lock:
            fault = self._fault(method, parts.path, parts.query)
            # The status the request really had (None: it never reached the repository).
            done: int | None = None
            if fault is None or fault.lost:
                status, body, headers = self._route(method, parts.path, parts.query, query, auth, data, uploads,
                                                    partial)  # fmt: skip
                done = status
            if fault is not None:
                status, body, headers = fault.status, fault.body, fault.headers
            self.requests.append(Seen(method, parts.path, query, auth, status, uploads))
            if method != "GET" and done is not None and done < 300:
                self.history.append((f"{method} {parts.path}", self.snapshot()))
        return status, body, headers

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per tag: ``draft``, ``prerelease``, ``body`` and ``assets`` (name -> bytes, uploaded ones only)."""
        return {
            r["tag_name"]: {
                "draft": r["draft"],
                "prerelease": r["prerelease"],
                "body": r["body"],
                "assets": {
                    a["name"]: self.asset_bytes[a["id"]] for a in r["assets"] if a["state"] == "uploaded"
                },
                "starter": sorted(a["name"] for a in r["assets"] if a["state"] != "uploaded"),
            }
            for r in self.releases
        }

    def _fault(self, method: str, path: str, raw_query: str) -> Fault | None:
        """The scripted fault this request meets (used up by one), or None."""
        target = f"{path}?{raw_query}" if raw_query else path
        for fault in self.faults:
            if fault.times > 0 and fault.method == method and re.search(fault.pattern, target):
                if fault.after > 0:
                    fault.after -= 1
                    continue
                fault.times -= 1
                return fault
        return None

    def _route(
        self,
        method: str,
        path: str,
        raw_query: str,
        query: dict[str, list[str]],
        auth: str | None,
        data: bytes = b"",
        uploads: bool = False,
        partial: bool = False,
    ) -> tuple[int, bytes, dict[str, str]]:
        if uploads and method == "GET" and (blob := re.fullmatch(r"/blobs/(\d+)\.zip", path)):
            # A pre-signed storage URL: no token needed, and none must arrive.
            self.blob_auth.append(auth)
            stored = self.blobs.get(int(blob.group(1)))
            return (
                (404, _json({"message": "Not Found"}), {})
                if stored is None
                else (200, stored, {"Content-Type": "application/zip"})
            )
        if auth != f"Bearer {self.token}":
            return 401, _json({"message": "Bad credentials", "status": "401"}), {}
        if uploads:
            return self._upload(method, path, query, data, partial)
        repo = f"/repos/{self.repo}"
        if path.startswith(f"{repo}/releases"):
            return self._releases(method, path[len(repo) :], query, data)
        if path.startswith(f"{repo}/issues"):
            return self._issues(method, path[len(repo) :], query, data)
        if (
            path.startswith(f"{repo}/actions/workflows/")
            or path.startswith(f"{repo}/actions/artifacts/")
            or (re.fullmatch(rf"{re.escape(repo)}/actions/runs/\d+/artifacts", path))
        ):
            return self._artifacts(method, path[len(repo) :], query)
        if path.startswith((f"{repo}/actions/runs/", f"{repo}/check-runs/")):
            return self._runs(method, path[len(repo) :], query)
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

    def _page(
        self, items: list[Any], base: str, query: dict[str, list[str]]
    ) -> tuple[int, bytes, dict[str, str]]:
        """One page of a plain JSON list (releases, jobs are wrapped by their callers) with its Link header."""
        per_page = min(int(query.get("per_page", ["30"])[0]), self.max_per_page)
        page = int(query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        extra = "".join(f"&{k}={v[0]}" for k, v in sorted(query.items()) if k not in ("per_page", "page"))
        links = []
        if page < last:
            links.append(f'<{self.api_url}{base}?per_page={per_page}&page={page + 1}{extra}>; rel="next"')
            links.append(f'<{self.api_url}{base}?per_page={per_page}&page={last}{extra}>; rel="last"')
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, _json(items[(page - 1) * per_page : page * per_page]), headers

    # -- releases

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _release_json(self, release: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in release.items() if k != "assets"} | {"assets": release["assets"]}

    def _new_release(self, body: dict[str, Any]) -> dict[str, Any]:
        ident = self._new_id()
        release = {
            "id": ident,
            "tag_name": body["tag_name"],
            "name": body.get("name") or body["tag_name"],
            "body": body.get("body", ""),
            "draft": bool(body.get("draft", False)),
            "prerelease": bool(body.get("prerelease", False)),
            "target_commitish": body.get("target_commitish") or "main",
            "html_url": f"https://github.invalid/{self.repo}/releases/tag/{body['tag_name']}",
            "upload_url": f"{self.uploads_url}/repos/{self.repo}/releases/{ident}/assets{{?name,label}}",
            "created_at": self.now,
            # GitHub: null until the release is published.
            "published_at": None if body.get("draft") else self.now,
            "assets": [],
        }
        self.releases.append(release)
        self._maybe_latest(release, body)
        return release

    def _maybe_latest(self, release: dict[str, Any], body: dict[str, Any]) -> None:
        # GitHub: make_latest "true" | "false" | "legacy"; a draft or a prerelease is never latest.
        if release["draft"] or release["prerelease"] or str(body.get("make_latest", "true")) == "false":
            return
        self.latest_id = release["id"]

    def latest_tag(self) -> str | None:
        return next((r["tag_name"] for r in self.releases if r["id"] == self.latest_id), None)

    def _store_asset(
        self, release: dict[str, Any], name: str, data: bytes, state: str = "uploaded"
    ) -> dict[str, Any]:
        ident = self._new_id()
        asset = {
            "id": ident,
            "name": name,
            "size": len(data),
            "state": state,
            "digest": f"sha256:{hashlib.sha256(data).hexdigest()}" if self.digests else None,
            "content_type": "application/octet-stream",
        }
        release["assets"].append(asset)
        self.asset_bytes[ident] = data
        return asset

    def _releases(
        self, method: str, path: str, query: dict[str, list[str]], data: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        if method == "GET" and (m := re.fullmatch(r"/releases/tags/(.+)", path)):
            found = next((r for r in self.releases if r["tag_name"] == m.group(1) and not r["draft"]), None)
            return (
                (200, _json(self._release_json(found)), {})
                if found
                else (404, _json({"message": "Not Found"}), {})
            )
        if method == "GET" and path == "/releases":
            # Newest first, paged as GitHub pages it (per_page, page, a Link header).
            return self._page(
                [self._release_json(r) for r in reversed(self.releases)],
                f"/repos/{self.repo}/releases",
                query,
            )
        if method == "POST" and path == "/releases":
            body = json.loads(data or b"{}")
            if any(r["tag_name"] == body.get("tag_name") for r in self.releases):
                errors = [{"resource": "Release", "code": "already_exists", "field": "tag_name"}]
                return 422, _json({"message": "Validation Failed", "errors": errors}), {}
            target = body.get("target_commitish")
            if target is not None and target not in self.commits and target != "main":
                errors = [{"resource": "Release", "code": "invalid", "field": "target_commitish"}]
                return 422, _json({"message": "Validation Failed", "errors": errors}), {}
            return 201, _json(self._release_json(self._new_release(body))), {}
        if m := re.fullmatch(r"/releases/(\d+)(/assets)?", path):
            release = next((r for r in self.releases if r["id"] == int(m.group(1))), None)
            if release is None:
                return 404, _json({"message": "Not Found"}), {}
            if method == "GET" and m.group(2):
                return 200, _json(release["assets"]), {}
            if method == "PATCH" and not m.group(2):
                patch = json.loads(data or b"{}")
                newly_published = release["draft"] and patch.get("draft") is False
                if newly_published:
                    release["published_at"] = self.now
                release.update(
                    {k: v for k, v in patch.items() if k in ("draft", "body", "name", "prerelease")}
                )
                if self.latest_id == release["id"] and (
                    release["prerelease"] or patch.get("make_latest") == "false"
                ):
                    self.latest_id = None
                # make_latest defaults to true for a newly published release only.
                if newly_published or patch.get("make_latest") == "true":
                    self._maybe_latest(release, patch)
                return 200, _json(self._release_json(release)), {}
        if method in ("GET", "PATCH") and (m := re.fullmatch(r"/releases/assets/(\d+)", path)):
            found = next(
                ((r, a) for r in self.releases for a in r["assets"] if a["id"] == int(m.group(1))), None
            )
            if found is None:
                return 404, _json({"message": "Not Found"}), {}
            release, asset = found
            if method == "GET":
                return 200, self.asset_bytes[asset["id"]], {"Content-Type": "application/octet-stream"}
            name = json.loads(data or b"{}").get("name", asset["name"])
            if any(a["name"] == name and a is not asset for a in release["assets"]):
                errors = [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}]
                return 422, _json({"message": "Validation Failed", "errors": errors}), {}
            asset["name"] = name
            return 200, _json(asset), {}
        if method == "DELETE" and (m := re.fullmatch(r"/releases/assets/(\d+)", path)):
            for release in self.releases:
                for i, asset in enumerate(release["assets"]):
                    if asset["id"] == int(m.group(1)):
                        del release["assets"][i]
                        return 204, b"", {}
            return 404, _json({"message": "Not Found"}), {}
        return 404, _json({"message": "Not Found"}), {}

    def _upload(
        self, method: str, path: str, query: dict[str, list[str]], data: bytes, partial: bool = False
    ) -> tuple[int, bytes, dict[str, str]]:
        m = re.fullmatch(rf"/repos/{re.escape(self.repo)}/releases/(\d+)/assets", path)
        release = next((r for r in self.releases if m and r["id"] == int(m.group(1))), None)
        if method != "POST" or release is None or "name" not in query:
            return 404, _json({"message": "Not Found"}), {}
        name = query["name"][0]
        if any(a["name"] == name for a in release["assets"]):
            errors = [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}]
            return 422, _json({"message": "Validation Failed", "errors": errors}), {}
        if partial:
            self._store_asset(release, name, data, state="starter")
            return 400, _json({"message": "incomplete body"}), {}
        asset = self._store_asset(release, name, data)
        self.uploads_done += 1
        return 201, _json(asset), {}

    # -- workflow runs

    def add_run(
        self,
        run_id: int,
        *,
        attempt: int = 1,
        conclusion: str = "failure",
        jobs: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A finished workflow run; ``jobs``: GitHub's job objects (``name``, ``conclusion``, ``steps``,
        and ``annotations``: the messages of its check run)."""
        run = {
            "id": run_id,
            "name": "nightly",
            "run_attempt": attempt,
            "status": "completed",
            "conclusion": conclusion,
            "html_url": f"https://github.invalid/{self.repo}/actions/runs/{run_id}",
        }
        made = []
        for job in jobs or []:
            ident = self._new_id()
            self.annotations[ident] = [
                {"message": m, "annotation_level": "failure"} for m in job.get("annotations", [])
            ]
            made.append(
                {
                    "id": ident,
                    "run_id": run_id,
                    "run_attempt": attempt,
                    "status": "completed",
                    **{k: v for k, v in job.items() if k != "annotations"},
                }
            )
        self.runs[run_id] = {"run": run, "jobs": made}
        return run

    def _runs(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, bytes, dict[str, str]]:
        if method == "GET" and (m := re.fullmatch(r"/check-runs/(\d+)/annotations", path)):
            found = self.annotations.get(int(m.group(1)))
            if found is None:
                return 404, _json({"message": "Not Found"}), {}
            return self._page(found, f"/repos/{self.repo}{path}", query)
        m = re.fullmatch(r"/actions/runs/(\d+)(/jobs|/rerun-failed-jobs)?", path)
        entry = self.runs.get(int(m.group(1))) if m else None
        if m is None or entry is None:
            return 404, _json({"message": "Not Found"}), {}
        if method == "GET" and m.group(2) is None:
            return 200, _json(entry["run"]), {}
        if method == "GET" and m.group(2) == "/jobs":
            status, body, headers = self._page(entry["jobs"], f"/repos/{self.repo}{path}", query)
            return status, _json({"total_count": len(entry["jobs"]), "jobs": json.loads(body)}), headers
        if method == "POST" and m.group(2) == "/rerun-failed-jobs":
            self.reruns.append(int(m.group(1)))
            entry["run"]["run_attempt"] += 1
            return 201, _json({}), {}
        return 404, _json({"message": "Not Found"}), {}

    # -- workflow runs and their artifacts (report --history)

    def add_workflow_run(
        self,
        run_id: int,
        *,
        number: int,
        started: str,
        conclusion: str = "success",
        artifacts: dict[str, bytes] | None = None,
        expired: tuple[str, ...] = (),
    ) -> None:
        """A finished run of the nightly (added oldest first, listed newest first) and its artifacts' zips."""
        self.workflow_runs.insert(
            0,
            {
                "id": run_id,
                "run_number": number,
                "status": "completed",
                "conclusion": conclusion,
                "run_started_at": started,
                "name": "nightly",
            },
        )
        listed = []
        for name, data in (artifacts or {}).items():
            ident = self._new_id()
            self.blobs[ident] = data
            listed.append(
                {
                    "id": ident,
                    "name": name,
                    "size_in_bytes": len(data),
                    "expired": name in expired,
                    "archive_download_url": f"{self.api_url}/repos/{self.repo}/actions/artifacts/{ident}/zip",
                }
            )
        self.run_artifacts[run_id] = listed

    def _artifacts(
        self, method: str, path: str, query: dict[str, list[str]]
    ) -> tuple[int, bytes, dict[str, str]]:
        if method != "GET":
            return 404, _json({"message": "Not Found"}), {}
        if re.fullmatch(r"/actions/workflows/[^/]+/runs", path):
            runs = [r for r in self.workflow_runs if query.get("status", ["completed"])[0] == r["status"]]
            status, body, headers = self._page(runs, f"/repos/{self.repo}{path}", query)
            return status, _json({"total_count": len(runs), "workflow_runs": json.loads(body)}), headers
        if m := re.fullmatch(r"/actions/runs/(\d+)/artifacts", path):
            found = self.run_artifacts.get(int(m.group(1)))
            if found is None:
                return 404, _json({"message": "Not Found"}), {}
            status, body, headers = self._page(found, f"/repos/{self.repo}{path}", query)
            return status, _json({"total_count": len(found), "artifacts": json.loads(body)}), headers
        if (m := re.fullmatch(r"/actions/artifacts/(\d+)/zip", path)) and int(m.group(1)) in self.blobs:
            return 302, b"", {"Location": f"{self.uploads_url}/blobs/{m.group(1)}.zip"}
        return 404, _json({"message": "Not Found"}), {}

    # -- issues

    def _new_issue(self, body: dict[str, Any], state: str = "open") -> dict[str, Any]:
        issue = {
            "number": len(self.issues) + 1,
            "title": body.get("title", ""),
            "body": body.get("body", ""),
            "state": state,
            "labels": [{"name": n} for n in body.get("labels", [])],
            "comments": [],
        }
        self.issues.append(issue)
        return issue

    def _issues(
        self, method: str, path: str, query: dict[str, list[str]], data: bytes
    ) -> tuple[int, bytes, dict[str, str]]:
        if path == "/issues" and method == "GET":
            state = query.get("state", ["open"])[0]
            wanted = set(query.get("labels", [""])[0].split(",")) - {""}
            found = [
                i
                for i in self.issues
                if (state == "all" or i["state"] == state) and wanted <= {lb["name"] for lb in i["labels"]}
            ]
            return 200, _json(found), {}
        if path == "/issues" and method == "POST":
            return 201, _json(self._new_issue(json.loads(data or b"{}"))), {}
        m = re.fullmatch(r"/issues/(\d+)(/comments)?", path)
        issue = self.issues[int(m.group(1)) - 1] if m and 0 < int(m.group(1)) <= len(self.issues) else None
        if issue is None:
            return 404, _json({"message": "Not Found"}), {}
        if method == "GET" and m and m.group(2):
            comments = [{"id": i + 1, "body": text} for i, text in enumerate(issue["comments"])]
            return self._page(comments, f"/repos/{self.repo}{path}", query)
        if method == "GET" and m:
            # GitHub's issue, without its comments (their count only).
            return (
                200,
                _json(
                    {k: v for k, v in issue.items() if k != "comments"} | {"comments": len(issue["comments"])}
                ),
                {},
            )
        body = json.loads(data or b"{}")
        if method == "POST" and m and m.group(2):
            issue["comments"].append(body.get("body", ""))
            return 201, _json({"id": self._new_id(), "body": body.get("body", "")}), {}
        if method == "PATCH" and m and not m.group(2):
            issue.update({k: v for k, v in body.items() if k in ("state", "title", "body")})
            return 200, _json(issue), {}
        return 404, _json({"message": "Not Found"}), {}

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        self._uploads_thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self._server, self._uploads):
            server.shutdown()
            server.server_close()


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")
