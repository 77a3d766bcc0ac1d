"""GitHub releases and issues over REST: the I/O edge of ``publish``, ``alert`` and ``release-exists``.

Built on :class:`pipeline.github.rest.RestClient` (token headers, the one retry
policy, one-line errors with the token redacted). Assets go to the host of
the release's ``upload_url`` (GitHub's uploads host, not the API's), the URI
template's ``{?name,label}`` replaced by the asset's name.

``GET /releases/tags/{tag}`` answers published releases only: a draft is
found by listing the releases, so a rerun finds the draft a crashed run left.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlsplit

from pipeline.errors import GitHubError
from pipeline.github.limits import GITHUB_PER_PAGE as PER_PAGE
from pipeline.github.rest import RestClient, _json_body
from pipeline.release.plan import RemoteAsset, parse_digest

_TEMPLATE = re.compile(r"\{[^}]*\}$")


class AssetExists(GitHubError):
    """The upload answered 422 ``already_exists``: an asset of that name is on the release."""


@dataclass(frozen=True, kw_only=True)
class Release:
    id: int
    tag: str
    draft: bool
    upload_url: str
    html_url: str
    # A partial release (some legs of the matrix missing) is a prerelease: see release.plan.left_out.
    prerelease: bool = False
    # Where GitHub creates (created) the tag: a commit SHA or a branch ("" when the answer has none).
    target_commitish: str = ""
    # The notes as the release holds them now: a rerun compares them with its own (owed or not).
    body: str = ""

    @classmethod
    def from_api(cls, data: Any, *, where: str) -> Release:
        if not isinstance(data, dict):
            raise GitHubError(f"{where}: a release is not an object")
        ident, tag, upload = data.get("id"), data.get("tag_name"), data.get("upload_url")
        if not isinstance(ident, int) or not isinstance(tag, str) or not isinstance(upload, str):
            raise GitHubError(
                f"{where}: malformed release: needs an integer 'id', 'tag_name' and 'upload_url'"
            )
        return cls(id=ident, tag=tag, draft=bool(data.get("draft")), upload_url=upload,
                   html_url=str(data.get("html_url", "")), prerelease=bool(data.get("prerelease")),
                   target_commitish=str(data.get("target_commitish") or ""),
                   body=str(data.get("body") or ""))  # fmt: skip


def _asset(data: Any, where: str) -> RemoteAsset:
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("id"), int)
        or not isinstance(data.get("name"), str)
    ):
        raise GitHubError(f"{where}: malformed asset: needs an integer 'id' and a 'name'")
    size = data.get("size", 0)
    return RemoteAsset(id=data["id"], name=data["name"], size=size if isinstance(size, int) else -1,
                       state=str(data.get("state", "uploaded")), sha256=parse_digest(data.get("digest")))  # fmt: skip


def _has_error(resp: Any, code: str, field: str | None = None) -> bool:
    """Whether a 422's ``errors`` hold one with ``code`` (and ``field``)."""
    try:
        errors = resp.json().get("errors") or []
    except (ValueError, AttributeError):
        return False
    return any(isinstance(e, dict) and e.get("code") == code and (field is None or e.get("field") == field)
               for e in errors)  # fmt: skip


def _is_already_exists(resp: Any) -> bool:
    return _has_error(resp, "already_exists")


class ReleasesClient(RestClient):
    """Releases, their assets, and the alert issues of one repository."""

    permission = "contents: write"
    user_agent = "llama-pipeline-publish"

    # -- releases

    def published_release(self, tag: str) -> Release | None:
        """The published release for ``tag``, None when there is none (drafts are not seen)."""
        url = f"{self.repo_url}/releases/tags/{quote(tag, safe='')}"
        resp = self._request("GET", url, accept=(404,))
        if resp.status_code == 404:
            return None
        return Release.from_api(_json_body(resp, f"GET {self._path(url)}"), where=f"GET {self._path(url)}")

    def find_release(self, tag: str) -> Release | None:
        """The release for ``tag``, draft or published; None when there is none."""
        if found := self.published_release(tag):
            return found
        for item in self._items(f"{self.repo_url}/releases?per_page={PER_PAGE}"):
            release = Release.from_api(item, where="GET releases")
            if release.tag == tag:
                return release
        return None

    def all_releases(self) -> list[dict[str, Any]]:
        """Every release of the repository, drafts included, as GitHub lists them (all pages).

        An item that is no object is a malformed answer (GitHubError), never
        skipped: the dead-man check, left with no release, would call a
        healthy repository stale and open an issue.
        """
        releases: list[dict[str, Any]] = []
        for where, items in self._pages(f"{self.repo_url}/releases?per_page={PER_PAGE}"):
            for n, item in enumerate(items):
                if not isinstance(item, dict):
                    shown = repr(item) if len(repr(item)) <= 40 else repr(item)[:37] + "..."
                    raise GitHubError(
                        f"{where}: malformed answer: item {n} is {shown}, expected a release object"
                    )
                releases.append(item)
        return releases

    def create_draft(
        self, tag: str, name: str, body: str, *, target_commitish: str | None = None, prerelease: bool = False
    ) -> Release:
        """A new draft release; when the tag already has one (422), that one is found and returned.

        ``target_commitish``: the commit GitHub creates the tag on when the release goes live. The
        release lives in the pipeline's repository, whose history does not hold llama.cpp's commits
        (unless it is a fork or mirror of llama.cpp): GitHub answers 422 ``invalid`` for a
        ``target_commitish`` it cannot find there. Then the draft is created without one (GitHub
        tags the default branch, as before) and the release body, which names llama.cpp's tag and
        commit, is what ties the bundles to their source.
        """
        url = f"{self.repo_url}/releases"
        fields: dict[str, Any] = {
            "tag_name": tag,
            "name": name,
            "body": body,
            "draft": True,
            "prerelease": prerelease,
        }
        if target_commitish:
            fields["target_commitish"] = target_commitish
        resp = self._post_release(url, tag, fields)
        if isinstance(resp, Release):
            return resp
        if resp.status_code == 422 and target_commitish and _has_error(resp, "invalid", "target_commitish"):
            del fields["target_commitish"]
            resp = self._post_release(url, tag, fields)
            if isinstance(resp, Release):
                return resp
        if resp.status_code == 422:
            # Another run (or an earlier attempt whose answer was lost) made it: never a second one.
            if _is_already_exists(resp) and (existing := self.find_release(tag)):
                return existing
            raise GitHubError(
                self.hide_token(f"POST {self._path(url)}: HTTP 422 creating the release for {tag}")
            )
        return Release.from_api(_json_body(resp, f"POST {self._path(url)}"), where=f"POST {self._path(url)}")

    def _post_release(self, url: str, tag: str, fields: dict[str, Any]) -> Release | Any:
        """The POST's response, or the release for ``tag`` an attempt made although its answer was lost."""

        def answer(resp: Any) -> Release | Any:
            return resp

        return self._create(
            "POST", url, json=fields, accept=(422,), answer=answer, made=lambda: self.find_release(tag)
        )

    def publish(
        self, release: Release, body: str, *, prerelease: bool = False, make_latest: bool | None = None
    ) -> Release:
        """Turn the draft live (``draft: false``), or update a live one, with its final notes and kind.

        ``make_latest`` None leaves GitHub's default: a newly published release becomes latest, a
        live one keeps its place. A prerelease is never latest.
        """
        url = f"{self.repo_url}/releases/{release.id}"
        fields: dict[str, Any] = {"draft": False, "body": body, "prerelease": prerelease}
        if prerelease:
            make_latest = False
        if make_latest is not None:
            fields["make_latest"] = "true" if make_latest else "false"
        resp = self._request("PATCH", url, json=fields)
        return Release.from_api(
            _json_body(resp, f"PATCH {self._path(url)}"), where=f"PATCH {self._path(url)}"
        )

    def list_assets(self, release: Release) -> list[RemoteAsset]:
        """Every asset of ``release``, all pages."""
        url = f"{self.repo_url}/releases/{release.id}/assets?per_page={PER_PAGE}"
        return [_asset(item, "GET assets") for item in self._items(url)]

    def delete_asset(self, asset_id: int) -> bool:
        """Delete one asset; False when it was already gone."""
        resp = self._request("DELETE", f"{self.repo_url}/releases/assets/{asset_id}", accept=(404,))
        return resp.status_code != 404

    def rename_asset(self, asset_id: int, name: str) -> RemoteAsset:
        """Give asset ``asset_id`` the name ``name`` (``PATCH .../releases/assets/{id}``); AssetExists on a clash."""
        url = f"{self.repo_url}/releases/assets/{asset_id}"
        resp = self._request("PATCH", url, json={"name": name}, accept=(422,))
        return self._asset_answer(resp, f"PATCH {self._path(url)}", name, doing=f"renaming to {name}")

    def asset_sha256(self, asset_id: int) -> str:
        """The sha256 of an asset's bytes, read back (for a server that reports no digest)."""
        url = f"{self.repo_url}/releases/assets/{asset_id}"
        resp = self._request("GET", url, headers={"Accept": "application/octet-stream"}, stream=True)
        digest = hashlib.sha256()
        try:
            for chunk in resp.iter_content(chunk_size=1 << 20):
                digest.update(chunk)
        except OSError as exc:
            raise GitHubError(f"GET {self._path(url)}: reading the asset back failed: {exc}") from None
        finally:
            resp.close()
        return digest.hexdigest()

    def upload_asset(self, release: Release, name: str, path: Path, content_type: str) -> RemoteAsset:
        """Upload ``path`` as asset ``name``; AssetExists on GitHub's 422 ``already_exists``."""
        base = _TEMPLATE.sub("", release.upload_url)
        if urlsplit(base).scheme not in ("http", "https"):
            raise GitHubError(f"release {release.tag}: bad upload_url {release.upload_url!r}")
        url = f"{base}?name={quote(name, safe='')}"

        @contextmanager
        def body() -> Iterator[IO[bytes]]:
            # A fresh handle per attempt: a retry sends the file from its start.
            with path.open("rb") as fh:
                yield fh

        headers = {"Content-Type": content_type, "Content-Length": str(path.stat().st_size)}

        def uploaded() -> RemoteAsset | None:
            # A partial copy ("starter") is not what the upload would have made: the POST goes again.
            return next(
                (a for a in self.list_assets(release) if a.name == name and a.state == "uploaded"), None
            )

        return self._create(
            "POST", url, body=body, headers=headers, accept=(422,), made=uploaded,
            answer=lambda resp: self._asset_answer(resp, f"POST {self._path(url)}", name, doing=f"uploading {name}"),
        )  # fmt: skip

    def _asset_answer(self, resp: Any, where: str, name: str, *, doing: str) -> RemoteAsset:
        """The asset an upload or a rename answers; AssetExists on GitHub's 422 ``already_exists``."""
        if resp.status_code == 422:
            if _is_already_exists(resp):
                raise AssetExists(f"{where}: an asset named {name} is already on the release")
            raise GitHubError(self.hide_token(f"{where}: HTTP 422 {doing}"))
        return _asset(_json_body(resp, where), where)

    # -- issues

    def open_issue_with_label(self, label: str, *, title: str | None = None) -> int | None:
        """The number of the oldest open issue labelled ``label`` (and titled ``title``), pull requests excluded."""
        url = f"{self.repo_url}/issues?state=open&labels={quote(label, safe='')}&per_page={PER_PAGE}"
        numbers = [
            item["number"]
            for item in self._items(url)
            if isinstance(item, dict)
            and isinstance(item.get("number"), int)
            and "pull_request" not in item
            and (title is None or item.get("title") == title)
        ]
        return min(numbers) if numbers else None

    def create_issue(self, title: str, body: str, label: str) -> int:
        """A new open issue; when an attempt's answer was lost, the issue that attempt opened."""
        url = f"{self.repo_url}/issues"
        where = f"POST {self._path(url)}"
        return self._create("POST", url, json={"title": title, "body": body, "labels": [label]},
                            answer=lambda resp: _number(_json_body(resp, where), where),
                            made=lambda: self.open_issue_with_label(label, title=title))  # fmt: skip

    def comment(self, number: int, body: str) -> None:
        """Comment ``body`` on issue ``number``; once, when an attempt's answer was lost (see :meth:`_create`)."""
        url = f"{self.repo_url}/issues/{number}/comments"

        def posted() -> bool | None:
            # The newest comments come last; one with this very text is the attempt's (the text names
            # the run, so an older comment does not carry it).
            listed = self._items(f"{url}?per_page={PER_PAGE}")
            return True if any(isinstance(c, dict) and c.get("body") == body for c in listed) else None

        self._create("POST", url, json={"body": body}, answer=lambda resp: True, made=posted)

    def issue_texts(self, number: int) -> list[str]:
        """Issue ``number``'s body, then each of its comments' (what an alert already said there)."""
        url = f"{self.repo_url}/issues/{number}"
        where = f"GET {self._path(url)}"
        data = _json_body(self._request("GET", url), where)
        if not isinstance(data, dict):
            raise GitHubError(f"{where}: malformed issue: not an object")
        texts = [data["body"] if isinstance(data.get("body"), str) else ""]
        texts += [
            c["body"]
            for c in self._items(f"{url}/comments?per_page={PER_PAGE}")
            if isinstance(c, dict) and isinstance(c.get("body"), str)
        ]
        return texts

    def close_issue(self, number: int) -> None:
        self._request(
            "PATCH", f"{self.repo_url}/issues/{number}", json={"state": "closed", "state_reason": "completed"}
        )


def _number(data: Any, where: str) -> int:
    if not isinstance(data, dict) or not isinstance(data.get("number"), int):
        raise GitHubError(f"{where}: malformed issue: no integer 'number'")
    return int(data["number"])
