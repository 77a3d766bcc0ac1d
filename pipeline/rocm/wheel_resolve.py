"""Which wheel build of TheRock a leg takes: fetch the simple index's project pages, apply the policy.

The I/O edge of :mod:`pipeline.rocm.wheel_index`. Pages are fetched with the
same retry policy as the tarball index (connection errors, truncated bodies,
5xx and 429 are retried with backoff within the run's budget; a 404 or
another 4xx is not), then the run's policy picks among the complete builds
exactly as it does among tarballs (:func:`pipeline.rocm.policy.select_build`),
so ``--now`` replays what the index held then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pipeline.errors import NetworkError, PipelineError, ResolutionError, UsageError
from pipeline.inputs.resolution_file import ResolvedRocm, ResolvedWheel
from pipeline.names import family_suggestion
from pipeline.rocm.index_fetch import get_page
from pipeline.rocm.policy import cutoff_for, parse_policy, select_build
from pipeline.rocm.wheel_index import (
    ACCEPT,
    JSON_TYPE,
    IndexFile,
    normalize,
    parse_families,
    parse_project_names,
    parse_project_page,
    project_url,
    projects_for,
    wheel_builds,
)
from pipeline.util.http_retry import DEFAULT_RETRY, RetryPolicy

if TYPE_CHECKING:
    import requests

# url -> (text, Content-Type)
PageFetch = Callable[[str], tuple[str, str]]


def fetch_page(
    url: str,
    *,
    timeout: float = 30,
    retry: RetryPolicy = DEFAULT_RETRY,
    on_wait: Callable[[str], None] | None = None,
    session: requests.Session | None = None,
) -> tuple[str, str]:
    """One project page of a simple index: its text and Content-Type (``file://``: a ``.json`` file is JSON)."""
    scheme = urlsplit(url).scheme
    if scheme == "file":
        from urllib.request import url2pathname

        folder = Path(url2pathname(urlsplit(url).path))
        for name, kind in (("index.json", JSON_TYPE), ("index.html", "text/html")):
            if (folder / name).is_file():
                return (folder / name).read_text(encoding="utf-8"), kind
        raise NetworkError.missing(f"{url}: no index.json or index.html there")
    if scheme not in ("http", "https"):
        raise UsageError(f"wheel index URL {url!r}: expected an http(s):// or file:// URL")
    import requests

    own = session is None
    sess = session or requests.Session()
    try:
        return get_page(
            sess,
            url,
            timeout=timeout,
            retry=retry,
            on_wait=on_wait,
            accept=ACCEPT,
            not_found="no such project on the wheel index",
        )
    finally:
        if own:
            sess.close()


def load_pages(
    index_url: str, family: str, fetch: PageFetch, targets: Sequence[str] = ()
) -> dict[str, list[IndexFile]]:
    """Every project page one build needs (:func:`~pipeline.rocm.wheel_index.projects_for`), parsed."""
    pages: dict[str, list[IndexFile]] = {}
    for project in projects_for(family, targets):
        url = project_url(index_url, project)
        text, content_type = fetch(url)
        pages[project] = parse_project_page(text, content_type, where=url)
    return pages


def _unknown_family(family: str, os_name: str, listing_url: str, fetch: PageFetch) -> ResolutionError | None:
    """The error for a family the index's listing does not name; None when it names it or cannot be read."""
    try:
        text, content_type = fetch(listing_url)
        families = parse_families(text, content_type, where=listing_url)
    except PipelineError:
        return None
    if not families or family in families:
        return None
    hint = family_suggestion(family, families)
    # The tarball index's words (tarball_resolve), so both distributions read alike.
    return ResolutionError(
        f"unknown ROCm family {family!r} for {os_name} in the wheel index {listing_url}{hint}; "
        f"the index has: {', '.join(families)}"
    )


def _unknown_target(targets: Sequence[str], index_url: str, fetch: PageFetch) -> ResolutionError | None:
    """On an index for every GPU: the error for a target it has no device project of, naming the targets it
    has; None when the index's own listing (its root page) cannot be read or names them all."""
    try:
        text, content_type = fetch(index_url)
        names = [normalize(n) for n in parse_project_names(text, content_type, where=index_url)]
    except PipelineError:
        return None
    have = sorted(n.removeprefix("rocm-sdk-device-") for n in names if n.startswith("rocm-sdk-device-"))
    missing = [t for t in targets if t.lower() not in have]
    if not have or not missing:
        return None
    return ResolutionError(
        f"the wheel index {index_url} has no device wheels for {', '.join(missing)}; "
        f"it has them for: {', '.join(have)}"
    )


def resolve_wheels(
    os_name: str,
    family: str,
    *,
    policy: str,
    now: datetime,
    index_url: str,
    fetch: PageFetch | None = None,
    pages: dict[str, list[IndexFile]] | None = None,
    listing_url: str | None = None,
    targets: Sequence[str] = (),
) -> ResolvedRocm:
    """The wheel build of one os/family that ``policy`` takes at ``now``, with every file and its sha256.

    ``targets``: the leg's GPU targets, on an index for every GPU (one device project each); none on a
    per-family index. ``listing_url``: the page that lists a per-family index's families
    (:func:`~pipeline.rocm.wheel_index.families_url`). When a page of ``family`` (or of a target) is not
    there and the listing does not name it, it is unknown (ResolutionError naming what the index has), not
    a network failure.
    """
    parse_policy(policy, where="policy")
    fetch = fetch or fetch_page
    if pages is None:
        try:
            pages = load_pages(index_url, family, fetch, targets)
        except NetworkError as err:
            unknown = None
            if err.not_found and targets:
                unknown = _unknown_target(targets, index_url, fetch)
            elif err.not_found and listing_url:
                unknown = _unknown_family(family, os_name, listing_url, fetch)
            if unknown is not None:
                raise unknown from None
            raise
    builds = wheel_builds(pages, os_name=os_name, family=family, index_url=index_url, targets=targets)
    if not builds:
        have = ", ".join(f"{p} ({len(files)} files)" for p, files in pages.items())
        raise ResolutionError(
            f"{index_url}: no version has a {os_name} file with a sha256 for each of "
            f"{', '.join(projects_for(family, targets))}; the index has: {have}"
        )
    by_build = {id(b.build): b for b in builds}
    try:
        chosen = select_build([b.build for b in builds], policy=policy, now=now)
    except ResolutionError as err:
        raise ResolutionError(err.message, hint=f"wheel index {index_url}") from None
    files = by_build[id(chosen)].files
    wheels = tuple(
        ResolvedWheel(
            project=f.project,
            file=f.entry.file,
            url=f.entry.url,
            sha256=str(f.entry.sha256),
            published=f.entry.published,
        )
        for f in files
    )
    return ResolvedRocm(
        policy=policy,
        cutoff=cutoff_for(policy, now),
        version=chosen.version,
        file=chosen.name,
        url=chosen.url,
        published=chosen.published,
        os=os_name,
        family=family,
        distribution="wheels",
        wheels=wheels,
        index_url=index_url,
    )
