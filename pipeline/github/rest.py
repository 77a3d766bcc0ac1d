"""GitHub's REST API: :class:`RestClient`, the one transport (token headers, the
shared retry policy, one-line errors). Its clients live with their features:
Actions caches in :mod:`pipeline.actions_cache.caches_client`, releases and issues in
:mod:`pipeline.release.releases_client`; the runner's files and commands are
:mod:`pipeline.github.runner`. The token comes from
``GITHUB_TOKEN`` or ``GH_TOKEN``; it lives only in the session's headers and
never appears in a message, a repr or a log line: error lines are redacted,
also when a server echoes the token back.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from pipeline.errors import GitHubError, NetworkError, PipelineError, UsageError
from pipeline.inputs import settings
from pipeline.redaction import redact
from pipeline.util.http_retry import (
    DEFAULT_RETRY,
    RetriesExhausted,
    Retryable,
    RetryPolicy,
    call_with_retries,
    retry_after,
)
from pipeline.util.timeutil import epoch_now

if TYPE_CHECKING:
    import requests

_T = TypeVar("_T")

TOKEN_ENVS = settings.GITHUB_TOKEN.env
# A runaway Link chain (a server bug) must not loop forever.
MAX_PAGES = 10_000


# --------------------------------------------------------------------------
# Token and repository


def token_from_env(env: Mapping[str, str], *, permission: str = "actions: write") -> str:
    """The API token from GITHUB_TOKEN or GH_TOKEN; GitHubError (naming ``permission``) when neither is set."""
    for name in TOKEN_ENVS:
        if value := env.get(name, "").strip():
            return value
    raise GitHubError(
        f"no GitHub token: set {' or '.join(TOKEN_ENVS)} (on Actions: a token with '{permission}')"
    )


def parse_repo(text: str) -> tuple[str, str]:
    """``owner/name`` -> (owner, name), else a UsageError."""
    if not re.match(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", text):
        raise UsageError(f"bad repository {text!r}: expected OWNER/NAME")
    owner, name = text.split("/")
    return owner, name


# --------------------------------------------------------------------------
# The transport


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float | None:
    """How long a 403/429 asks to wait: Retry-After, else X-RateLimit-Reset when exhausted."""
    if value := headers.get("Retry-After"):
        return retry_after(value, now)
    if headers.get("X-RateLimit-Remaining") == "0" and (reset := headers.get("X-RateLimit-Reset")):
        try:
            return max(0.0, float(reset) - now)
        except ValueError:
            return None
    return None


class RestClient:
    """The GitHub REST transport: token headers, bounded retries, one-line errors.

    Every error message passes through :meth:`redact`, so the token never
    reaches a log line, even when a server echoes it in an error body.
    """

    # Named in a 403's hint: the permission the command needs.
    permission = "actions: write"
    user_agent = "llama-pipeline"

    def __init__(
        self,
        repo: str,
        token: str,
        *,
        api_url: str = settings.DEFAULT_API_URL,
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = epoch_now,
        session: requests.Session | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        import requests

        owner, name = parse_repo(repo)
        self.repo = f"{owner}/{name}"
        self.api_url = api_url.rstrip("/")
        parts = urlsplit(self.api_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"bad API URL {api_url!r}: expected http(s)://HOST[/PATH]")
        self._origin = (parts.scheme, parts.netloc)
        # A rate-limit reset further away than the policy's longest wait fails the command instead of
        # holding a runner idle (GitHub's primary limit resets hourly).
        self.retry = retry
        self.timeout = timeout
        self._sleep = sleep
        self._clock = clock
        # Where a retry's wait line goes.
        self._on_wait = on_wait
        self.requests_made = 0
        self._secret = token
        self._session = session or requests.Session()
        self._session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {token}",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": self.user_agent,
            }
        )

    @property
    def repo_url(self) -> str:
        """The repository's REST root, ``<api>/repos/<owner>/<name>``."""
        return f"{self.api_url}/repos/{self.repo}"

    def __repr__(self) -> str:  # never the headers: they hold the token
        return f"{type(self).__name__}(repo={self.repo!r}, api_url={self.api_url!r})"

    def _say_wait(self, line: str) -> None:
        if self._on_wait is not None:
            self._on_wait(self.hide_token(line))

    def hide_token(self, text: str) -> str:
        """``text`` with the token replaced by ``***``."""
        return redact_token(text, self._secret)

    # -- internals

    def _path(self, url: str) -> str:
        parts = urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _pages(self, url: str, *, key: str | None = None) -> Iterator[tuple[str, list[Any]]]:
        """Each page of a paged answer, following ``Link: rel="next"``: (where, its items).

        The items are the answer itself (a list) or the list under ``key`` of an
        object; a chain longer than ``MAX_PAGES`` or back onto itself is an error.
        """
        next_url: str | None = url
        seen: set[str] = set()
        while next_url:
            if next_url in seen or len(seen) >= MAX_PAGES:
                raise GitHubError(
                    f"GET {self._path(next_url)}: the Link header loops; gave up after {len(seen)} pages"
                )
            seen.add(next_url)
            resp = self._request("GET", next_url)
            where = f"GET {self._path(next_url)}"
            body = _json_body(resp, where)
            items = body if key is None else body.get(key) if isinstance(body, dict) else None
            if not isinstance(items, list):
                raise GitHubError(
                    f"{where}: malformed answer: expected a list{f' under {key!r}' if key else ''}"
                )
            yield where, items
            next_url = self._next_url(resp, where)

    def _items(self, url: str, *, key: str | None = None) -> Iterator[Any]:
        """Every item of a paged answer (see :meth:`_pages`), page after page."""
        for _, items in self._pages(url, key=key):
            yield from items

    def _next_url(self, resp: requests.Response, where: str) -> str | None:
        nxt = resp.links.get("next", {}).get("url")
        if not nxt:
            return None
        parts = urlsplit(nxt)
        # The token goes with every request: never follow a link to another host.
        if (parts.scheme, parts.netloc) != self._origin:
            raise GitHubError(f"{where}: the next page points to another host ({parts.netloc}); refused")
        return str(nxt)

    def _request(
        self, method: str, url: str, *, accept: Collection[int] = (), **send: Any
    ) -> requests.Response:
        """One call with retries; a status in ``accept`` is returned instead of raised.

        ``send`` goes to ``requests`` (``json=``, ``headers=``; ``body=`` is a
        callable returning a fresh body per attempt, e.g. an opened file).
        Only for calls that are safe to repeat: one that makes something is :meth:`_create`.
        """
        return self._retrying(method, url, lambda: self._send(method, url, frozenset(accept), send))

    def _create(
        self,
        method: str,
        url: str,
        *,
        answer: Callable[[requests.Response], _T],
        made: Callable[[], _T | None],
        accept: Collection[int] = (),
        **send: Any,
    ) -> _T:
        """A call that makes something (an issue, a release, an asset, a re-run), sent at most once per thing.

        A 5xx or a dropped connection does not say whether the server acted: a proxy may have lost
        the answer to a request that succeeded. Before such a call is sent again, ``made()`` looks
        for what it would have made and, when that is there, returns it instead of making a second
        one. ``answer`` reads a response (its status in ``accept`` or 2xx) into the result. A rate
        limit's answer (403/429 asking to wait) says the request was refused: no look then.
        """
        unsure = False

        def attempt() -> _T:
            nonlocal unsure
            if unsure and (found := made()) is not None:
                return found
            unsure = False
            try:
                resp = self._send(method, url, frozenset(accept), send)
            except Retryable as exc:
                unsure = exc.wait is None
                raise
            return answer(resp)

        return self._retrying(method, url, attempt)

    def _retrying(self, method: str, url: str, attempt: Callable[[], _T]) -> _T:
        """``attempt()`` under the retry policy, its failures turned into one redacted line."""
        try:
            return call_with_retries(
                attempt, policy=self.retry, sleep=self._sleep, on_wait=self._say_wait,
                what=f"{method} {self._path(url)}", clock=self._clock,
            )  # fmt: skip
        except RetriesExhausted as err:
            # Out of attempts while rate limited is GitHub saying no; otherwise the host is unwell.
            cls = NetworkError if err.last.wait is None else GitHubError
            raise cls(
                self.hide_token(
                    f"{method} {self._path(url)}: failed after {err.attempts_text}: {err.last.reason}"
                )
            ) from None
        except PipelineError as err:
            err.message = self.hide_token(err.message)
            raise

    def _send(
        self, method: str, url: str, accept: frozenset[int], send: Mapping[str, Any]
    ) -> requests.Response:
        import requests

        where = f"{method} {self._path(url)}"
        self.requests_made += 1
        kwargs = dict(send)
        body = kwargs.pop("body", None)
        try:
            if body is not None:
                with body() as data:
                    resp = self._session.request(method, url, timeout=self.timeout, data=data, **kwargs)
            else:
                resp = self._session.request(method, url, timeout=self.timeout, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise Retryable(self.hide_token(_one_line(exc))) from None
        except requests.RequestException as exc:
            raise NetworkError(f"{where}: {_one_line(exc)}") from None
        status = resp.status_code
        if status < 300 or status in accept:
            return resp
        if status >= 500:
            raise Retryable(f"HTTP {status} {resp.reason}")
        if status in (403, 429):
            wait = retry_after_seconds(resp.headers, self._clock())
            limited = status == 429 or wait is not None
            if limited:
                wait = 1.0 if wait is None else wait
                if wait > self.retry.max_wait:
                    raise GitHubError(
                        f"{where}: rate limited for {wait:.0f} s more (over the {self.retry.max_wait:.0f} s "
                        "this command waits); run it again later"
                    )
                raise Retryable(f"HTTP {status} rate limited", wait)
        raise GitHubError(
            f"{where}: HTTP {status} {resp.reason}{_hint(status, self.repo, self.permission)}{_api_message(resp)}"
        )


def redact_token(text: str, token: str) -> str:
    """``text`` without ``token``, URL credentials or auth headers (:func:`pipeline.redaction.redact`)."""
    return redact(text, (token,))


def _hint(status: int, repo: str, permission: str = "actions: write") -> str:
    if status == 401:
        return ": the token is missing, expired or invalid"
    if status == 403:
        return f": the token may lack '{permission}' on {repo}"
    if status == 404:
        return f": no repository {repo}, or the token cannot see it"
    return ""


def _api_message(resp: requests.Response) -> str:
    try:
        message = resp.json().get("message")
    except (ValueError, AttributeError):
        return ""
    return f" ({_one_line(message)[:200]})" if isinstance(message, str) and message else ""


def _json_body(resp: requests.Response, where: str) -> Any:
    try:
        return json.loads(resp.content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise GitHubError(f"{where}: malformed JSON from the API: {_one_line(exc)[:200]}") from None


def _one_line(exc: object) -> str:
    return re.sub(r"\s+", " ", str(exc) or type(exc).__name__).strip()
