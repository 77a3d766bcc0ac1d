"""The dead-man check: has a nightly been published lately? Pure, no I/O.

A run can go green and publish nothing (a schedule that stopped, a
``release-exists`` that wrongly said "done"); no failure alert sees that.
This watches the output instead: the newest published nightly release (not a
draft, not a prerelease: a partial manual run is one, see
:mod:`pipeline.release.plan`) older than the limit opens its own issue
(label ``nightly-stale``, apart from the failure alert's, which a green run
closes); a fresh release closes it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pipeline.util.timeutil import duration_text

DEFAULT_STALE_LABEL = "nightly-stale"
DEFAULT_STALE_DAYS = 2.0
TITLE = "No nightly release published lately"

DeadmanAction = Literal["open", "comment", "close", "none"]


@dataclass(frozen=True, kw_only=True)
class ReleaseSeen:
    """What the check needs of one release of the repository."""

    tag: str
    draft: bool
    prerelease: bool
    # None for a draft (GitHub's published_at is null until it is published).
    published_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class DeadmanPlan:
    stale: bool
    newest: ReleaseSeen | None
    age_seconds: float | None
    action: DeadmanAction
    issue: int | None
    # One line for the log: how old the newest nightly is, or that there is none.
    line: str
    body: str


def age_text(seconds: float) -> str:
    """``2.5 days``, or ``3h 20m`` under a day."""
    seconds = max(seconds, 0.0)
    return f"{seconds / 86400:.1f} days" if seconds >= 86400 else duration_text(seconds)


def newest_nightly(releases: Sequence[ReleaseSeen]) -> ReleaseSeen | None:
    """The most recently published release that is neither a draft nor a prerelease."""
    published = [r for r in releases if not r.draft and not r.prerelease and r.published_at is not None]
    return max(published, key=lambda r: (r.published_at, r.tag), default=None)


def _ignored(releases: Sequence[ReleaseSeen]) -> str:
    drafts = sum(r.draft for r in releases)
    pre = sum(r.prerelease and not r.draft for r in releases)
    parts = [f"{drafts} drafts" if drafts else "", f"{pre} prereleases" if pre else ""]
    kept = [p for p in parts if p]
    return f" ({' and '.join(kept)} not counted)" if kept else ""


def plan_deadman(
    releases: Sequence[ReleaseSeen],
    *,
    now: datetime,
    stale_days: float,
    open_issue: int | None,
    run_url: str | None = None,
) -> DeadmanPlan:
    """Stale when the newest nightly is more than ``stale_days`` old at ``now`` (or there is none)."""
    newest = newest_nightly(releases)
    limit = f"{stale_days:g} days"
    link = f" ([check]({run_url}))" if run_url else ""
    if newest is None or newest.published_at is None:
        age = None
        stale = True
        line = f"no published nightly release{_ignored(releases)}: stale (limit {limit})"
    else:
        age = (now - newest.published_at).total_seconds()
        stale = age > stale_days * 86400
        when = f"{newest.tag}, published {newest.published_at.isoformat()}, {age_text(age)} ago"
        line = f"newest nightly release: {when}: {'stale' if stale else 'fresh'} (limit {limit})"
    if stale:
        body = f"The dead-man check found {line[0].lower()}{line[1:]}{link}.\n"
        action: DeadmanAction = "comment" if open_issue else "open"
    elif open_issue is not None:
        body = f"A nightly is out again: {line}{link}. Closing.\n"
        action = "close"
    else:
        body, action = "", "none"
    return DeadmanPlan(
        stale=stale, newest=newest, age_seconds=age, action=action, issue=open_issue, line=line, body=body
    )


def release_seen(data: object, where: str) -> ReleaseSeen:
    """One release of GitHub's list as the check needs it; GitHubError naming ``where`` when malformed."""
    from pipeline.errors import GitHubError

    if not isinstance(data, dict) or not isinstance(data.get("tag_name"), str):
        raise GitHubError(f"{where}: malformed release: no 'tag_name'")
    raw = data.get("published_at")
    published: datetime | None = None
    if isinstance(raw, str) and raw:
        try:
            published = datetime.fromisoformat(raw)
        except ValueError:
            raise GitHubError(
                f"{where}: release {data['tag_name']}: published_at {raw!r} is not an ISO 8601 time"
            ) from None
        if published.tzinfo is None:
            raise GitHubError(f"{where}: release {data['tag_name']}: published_at {raw!r} has no time zone")
    return ReleaseSeen(
        tag=data["tag_name"],
        draft=bool(data.get("draft")),
        prerelease=bool(data.get("prerelease")),
        published_at=published,
    )
