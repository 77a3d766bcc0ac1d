"""`deadman` against the fake GitHub: the releases it lists, the stale issue it opens, comments on and closes."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

REPO = "octo/llama"
TOKEN = "ghs_deadman_secret_0123456789"
NOW = "2026-08-10T09:30:00Z"
LABEL = "nightly-stale"


def deadman(
    gh: FakeGitHub, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = run_pipeline(
        ["--matrix", str(ROOT / "matrix.toml"), "deadman", "--repo", REPO, "--api-url", gh.api_url, "--now", NOW, *extra],
        env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "", "PIPELINE_HTTP_BACKOFF": "0", "PIPELINE_STALE_DAYS": "",
             **(env or {})},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def stale_issues(gh: FakeGitHub) -> list[dict]:
    return [i for i in gh.issues if LABEL in {lb["name"] for lb in i["labels"]}]


def test_a_fresh_nightly_says_how_old_it_is_and_opens_nothing() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_release("b7000", published_at="2026-08-08T09:00:00Z")
        gh.add_release("b7001", published_at="2026-08-09T21:30:00Z")
        proc = deadman(gh, "--apply")
        assert proc.returncode == 0, proc.stderr
        # matrix.toml's github.stale_days = 2.
        assert (
            "newest nightly release: b7001, published 2026-08-09T21:30:00+00:00, 12h 00m ago: fresh "
            "(limit 2 days)"
        ) in proc.stdout
        assert gh.issues == []


def test_a_stale_nightly_opens_the_issue_then_comments_then_a_fresh_one_closes_it() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_release("b7000", published_at="2026-08-07T09:00:00Z")
        dry = deadman(gh)
        assert "3.0 days ago: stale (limit 2 days)" in dry.stdout
        assert "dry run: would open issue 'No nightly release published lately'" in dry.stdout
        assert gh.issues == [] and gh.hits("POST") == 0
        first = deadman(gh, "--apply")
        assert first.returncode == 0, first.stderr
        [issue] = stale_issues(gh)
        assert issue["state"] == "open" and "b7000" in issue["body"]
        # The failure alert's issue is another one: a green nightly closing it says nothing about this.
        assert {lb["name"] for lb in issue["labels"]} == {LABEL}
        deadman(gh, "--apply")
        assert len(stale_issues(gh)) == 1 and len(issue["comments"]) == 1
        gh.add_release("b7002", published_at="2026-08-10T09:00:00Z")
        fresh = deadman(gh, "--apply")
        assert "b7002" in fresh.stdout and "fresh" in fresh.stdout
        assert issue["state"] == "closed" and "b7002" in issue["comments"][-1]


def test_the_limit_comes_from_the_environment_before_matrix_toml() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_release("b7000", published_at="2026-08-09T09:30:00Z")
        assert "fresh (limit 2 days)" in deadman(gh).stdout
        assert "stale (limit 0.5 days)" in deadman(gh, env={"PIPELINE_STALE_DAYS": "0.5"}).stdout
        assert (
            "fresh (limit 3 days)"
            in deadman(gh, "--stale-days", "3", env={"PIPELINE_STALE_DAYS": "0.5"}).stdout
        )
        bad = deadman(gh, env={"PIPELINE_STALE_DAYS": "soon"})
        assert bad.returncode == 2 and "PIPELINE_STALE_DAYS: expected days above 0" in bad.stderr


@pytest.mark.parametrize(
    ("releases", "line"),
    [
        ([], "no published nightly release: stale"),
        (
            [("b7000", {"draft": True}), ("b7001", {"draft": True})],
            "no published nightly release (2 drafts not counted): stale",
        ),
        (
            [("b7000", {"prerelease": True, "published_at": "2026-08-10T08:00:00Z"})],
            "no published nightly release (1 prereleases not counted): stale",
        ),
    ],
    ids=["no-releases", "drafts-only", "prereleases-only"],
)
def test_no_published_nightly_is_stale(releases: list[tuple[str, dict]], line: str) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        for tag, kwargs in releases:
            gh.add_release(tag, **kwargs)
        proc = deadman(gh, "--apply")
        assert proc.returncode == 0, proc.stderr
        assert line in proc.stdout
        assert len(stale_issues(gh)) == 1


def test_the_nightly_is_found_on_a_later_page() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN, max_per_page=3) as gh:
        gh.add_release("b7000", published_at="2026-08-10T01:00:00Z")
        # Listed newest first: eight partial runs push the one nightly to the third page.
        for i in range(8):
            gh.add_release(f"b70{i + 1:02d}", prerelease=True, published_at="2026-08-10T02:00:00Z")
        proc = deadman(gh, "--apply")
        assert proc.returncode == 0, proc.stderr
        assert "newest nightly release: b7000" in proc.stdout and "fresh" in proc.stdout
        assert [r.query.get("page", ["1"])[0] for r in gh.requests if r.path.endswith("/releases")] == [
            "1",
            "2",
            "3",
        ]
        assert gh.issues == []


@pytest.mark.parametrize("junk", [b'[1, "x", null]', b'[{"tag_name": "b7000", "published_at": null}, "x"]'])
def test_a_releases_answer_of_junk_is_an_error_and_opens_nothing(junk: bytes) -> None:
    """Not "no published nightly: stale" plus an issue: GitHub answered something that is no list of releases."""
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.fault("GET", r"/releases", 200, body=junk)
        proc = deadman(gh, "--apply")
        assert proc.returncode == 8, proc.stdout + proc.stderr  # GitHubError: an answer it cannot read
        lines = proc.stderr.strip().splitlines()
        n = 0 if junk.startswith(b"[1") else 1
        assert len(lines) == 1 and f"malformed answer: item {n} is " in lines[0], lines
        assert lines[0].startswith(f"error: GET /repos/{REPO}/releases"), lines
        assert "stale" not in proc.stdout and gh.issues == [] and gh.hits("POST") == 0
