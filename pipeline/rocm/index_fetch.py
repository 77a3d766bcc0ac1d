"""Fetching TheRock's index: the I/O edge of :mod:`pipeline.rocm.index`.

Timeouts, retries with backoff on connection errors, 5xx and 429 (never on
404 or another 4xx), S3 pagination, and ``file://`` URLs for offline use. A
page cut short in transfer is retried and, if it stays short, is an error: a
partial list would silently resolve to an older build.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pipeline.errors import IndexFormatError, NetworkError, UsageError
from pipeline.redaction import redact
from pipeline.rocm.index import (
    IndexEntry,
    next_page_url,
    parse_html_index,
    parse_s3_page,
    sniff_format,
)
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

# An S3 listing of this many pages is a server in a loop, not an index.
MAX_PAGES = 10_000
_CHARSET = re.compile(r"charset=[\"']?([\w.:-]+)", re.IGNORECASE)
_INCOMPLETE = re.compile(r"IncompleteRead\((\d+) bytes read, (\d+) more expected\)")
_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")\]]+")

# --------------------------------------------------------------------------
# Fetching (the I/O edge)


def _describe(exc: BaseException) -> str:
    """One short line for a requests/urllib3 failure (they nest the useful part deep inside)."""
    text = re.sub(r"\s+", " ", str(exc)) or type(exc).__name__
    short = _INCOMPLETE.search(text)
    if short:
        return f"truncated page ({short[1]} bytes read, {short[2]} more expected)"
    if "Connection broken" in text:
        return "truncated page (connection broken mid-transfer)"
    if "timed out" in text.lower():
        return "timed out"
    errno = _ERRNO.search(text)
    if errno:
        return errno.group(0).strip()
    return text if len(text) <= 200 else text[:197] + "..."


# What the tarball index is asked for: its HTML page or the S3 XML listing.
_INDEX_ACCEPT = "text/html, application/xml, */*"


def _get_once(
    session: requests.Session, url: str, timeout: float, accept: str, not_found: str
) -> tuple[str, str]:
    import requests

    try:
        resp = session.get(url, timeout=timeout, headers={"Accept": accept})
    except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
        raise Retryable(_describe(exc)) from None
    except requests.RequestException as exc:
        raise NetworkError(f"{url}: {_describe(exc)}") from None
    status = resp.status_code
    if status == 429 or status >= 500:
        raise Retryable(
            f"HTTP {status} {resp.reason}", retry_after(resp.headers.get("Retry-After"), epoch_now())
        )
    if status == 404:
        raise NetworkError.missing(
            f"{url}: HTTP 404 {resp.reason}" + (f" ({not_found})" if not_found else "")
        )
    if status >= 400:
        raise NetworkError(f"{url}: HTTP {status} {resp.reason}")
    declared = resp.headers.get("Content-Length")
    # Compressed bodies are longer on the wire than decoded; only plain ones can be checked here
    # (urllib3 already refuses a body shorter than its Content-Length).
    if (
        declared
        and declared.isdigit()
        and not resp.headers.get("Content-Encoding")
        and len(resp.content) < int(declared)
    ):
        raise Retryable(f"truncated page: {len(resp.content)} of {declared} bytes")
    # requests guesses ISO-8859-1 for text/* without a charset; an index is UTF-8 unless it says so.
    content_type = resp.headers.get("Content-Type", "text/html")
    charset = _CHARSET.search(content_type)
    encoding = charset.group(1) if charset else "utf-8-sig"
    try:
        return resp.content.decode(encoding), content_type
    except (UnicodeDecodeError, LookupError):
        named = encoding if charset else "UTF-8"
        raise IndexFormatError(f"{url}: the page is not {named} text") from None


def get_page(
    session: requests.Session,
    url: str,
    *,
    timeout: float,
    retry: RetryPolicy,
    on_wait: Callable[[str], None] | None = None,
    accept: str = _INDEX_ACCEPT,
    not_found: str = "",
) -> tuple[str, str]:
    """One page over HTTP(S) under the retry policy: its text and Content-Type.

    Connection errors, truncated bodies, 5xx and 429 are retried as ``retry`` says;
    another 4xx is one error (a 404 says ``not_found`` when given).
    """
    try:
        return call_with_retries(
            _get_once,
            session,
            url,
            timeout,
            accept,
            not_found,
            policy=retry,
            on_wait=on_wait,
            what=redact(f"GET {url}"),
        )
    except RetriesExhausted as err:
        raise NetworkError(redact(f"{url}: failed after {err.attempts_text}: {err.last.reason}")) from None


def _read_file_url(url: str) -> str:
    from urllib.request import url2pathname

    path = Path(url2pathname(urlsplit(url).path))
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NetworkError(f"{url}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NetworkError(f"{url}: cannot read: {_describe(exc)}") from None


def fetch_index(
    url: str,
    *,
    timeout: float = 30,
    retry: RetryPolicy = DEFAULT_RETRY,
    session: requests.Session | None = None,
    on_page: Callable[[int, int], None] | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> list[IndexEntry]:
    """Every entry of the index at ``url`` (HTML or S3 XML, all pages).

    Retries connection errors, truncated transfers, 5xx and 429 as ``retry``
    says (the run's: :attr:`~pipeline.inputs.run_inputs.RunInputs.retry`);
    raises NetworkError when the host stays unreachable or answers another
    4xx, IndexFormatError when the page is not an index. ``on_page(pages,
    entries)`` is called after each page (progress); ``on_wait`` gets a line
    before each retry's wait (see :func:`pipeline.util.http_retry.call_with_retries`).
    """
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https", "file"):
        raise UsageError(f"index URL {url!r}: expected an http(s):// or file:// URL")
    own_session = None
    if scheme != "file" and session is None:
        import requests

        own_session = session = requests.Session()
    try:
        entries: list[IndexEntry] = []
        page_url = url
        visited = {url}
        for page_no in range(1, MAX_PAGES + 1):
            if scheme == "file":
                text = _read_file_url(page_url)
            else:
                assert session is not None
                text, _ = get_page(session, page_url, timeout=timeout, retry=retry, on_wait=on_wait)
            if sniff_format(text) == "html":
                if page_no > 1:
                    raise IndexFormatError(f"{page_url}: page {page_no} of an S3 listing is not XML")
                entries = parse_html_index(text, where=page_url)
                if on_page:
                    on_page(1, len(entries))
                return entries
            page = parse_s3_page(text, where=page_url)
            entries.extend(page.entries)
            if on_page:
                on_page(page_no, len(entries))
            if not page.truncated:
                return entries
            if scheme == "file":
                raise IndexFormatError(f"{url}: a file:// listing cannot be paged (IsTruncated is true)")
            page_url = next_page_url(page_url, page)
            if page_url in visited:
                raise IndexFormatError(f"{page_url}: the listing pages in a loop (a continuation repeats)")
            visited.add(page_url)
        raise IndexFormatError(f"{url}: more than {MAX_PAGES} pages; refusing to page further")
    finally:
        if own_session is not None:
            own_session.close()
