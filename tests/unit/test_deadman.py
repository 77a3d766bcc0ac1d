"""The dead-man check's decision: the newest published nightly's age against the limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipeline.errors import GitHubError
from pipeline.release.deadman import ReleaseSeen, newest_nightly, plan_deadman, release_seen

NOW = datetime(2026, 8, 10, 9, 30, tzinfo=UTC)


def rel(tag: str, hours_ago: float | None, *, draft: bool = False, prerelease: bool = False) -> ReleaseSeen:
    return ReleaseSeen(
        tag=tag,
        draft=draft,
        prerelease=prerelease,
        published_at=None if hours_ago is None else NOW - timedelta(hours=hours_ago),
    )


@pytest.mark.parametrize(
    ("releases", "stale", "newest"),
    [
        ([rel("b7001", 20), rel("b7000", 44)], False, "b7001"),
        # Exactly at the limit is still fresh; a minute past it is not.
        ([rel("b7000", 48)], False, "b7000"),
        ([rel("b7000", 48 + 1 / 60)], True, "b7000"),
        ([], True, None),
        # Drafts (never published) and prereleases (a partial manual run) are no nightly.
        ([rel("b7002", None, draft=True), rel("b7001", 1, draft=True)], True, None),
        ([rel("b7002", 1, prerelease=True), rel("b7000", 100)], True, "b7000"),
        ([rel("b7002", 1, prerelease=True)], True, None),
        # The newest by publish time, whatever the list's order.
        ([rel("b6999", 100), rel("b7000", 3), rel("b7001", 60)], False, "b7000"),
    ],
)
def test_stale_when_the_newest_published_nightly_is_older_than_the_limit(
    releases: list[ReleaseSeen], stale: bool, newest: str | None
) -> None:
    plan = plan_deadman(releases, now=NOW, stale_days=2, open_issue=None)
    assert plan.stale is stale
    assert (plan.newest.tag if plan.newest else None) == newest
    assert plan.action == ("open" if stale else "none")


def test_the_lines_say_how_old_and_what_was_not_counted() -> None:
    fresh = plan_deadman([rel("b7000", 30)], now=NOW, stale_days=2, open_issue=None)
    assert (
        fresh.line
        == "newest nightly release: b7000, published 2026-08-09T03:30:00+00:00, 1.2 days ago: fresh (limit 2 days)"
    )
    none = plan_deadman(
        [rel("b1", None, draft=True), rel("b2", 1, prerelease=True)], now=NOW, stale_days=2, open_issue=None
    )
    assert (
        none.line
        == "no published nightly release (1 drafts and 1 prereleases not counted): stale (limit 2 days)"
    )


def test_an_open_issue_gets_a_comment_while_stale_and_is_closed_once_fresh() -> None:
    assert plan_deadman([rel("b7000", 72)], now=NOW, stale_days=2, open_issue=5).action == "comment"
    fresh = plan_deadman(
        [rel("b7001", 2)], now=NOW, stale_days=2, open_issue=5, run_url="https://x.invalid/r/1"
    )
    assert (fresh.action, fresh.issue) == ("close", 5)
    assert "b7001" in fresh.body and "https://x.invalid/r/1" in fresh.body
    assert plan_deadman([rel("b7001", 2)], now=NOW, stale_days=0.05, open_issue=None).stale is True


def test_newest_nightly_ignores_drafts_and_prereleases() -> None:
    assert newest_nightly([rel("a", 1, draft=True), rel("b", 2, prerelease=True), rel("c", 9)]) == rel("c", 9)


def test_release_seen_reads_githubs_fields_and_refuses_a_bad_time() -> None:
    seen = release_seen(
        {"tag_name": "b1", "draft": False, "prerelease": True, "published_at": "2026-08-09T03:30:00Z"},
        "GET releases",
    )
    assert seen == ReleaseSeen(
        tag="b1", draft=False, prerelease=True, published_at=datetime(2026, 8, 9, 3, 30, tzinfo=UTC)
    )
    assert release_seen({"tag_name": "b2", "draft": True, "published_at": None}, "x").published_at is None
    with pytest.raises(GitHubError, match="published_at 'yesterday' is not an ISO 8601 time"):
        release_seen({"tag_name": "b3", "published_at": "yesterday"}, "GET releases")
    with pytest.raises(GitHubError, match="no 'tag_name'"):
        release_seen({"name": "x"}, "GET releases")
