"""A POST whose answer is lost (the server acted, a proxy answered 502) is never sent a second time;
an answer of the wrong shape is one error line.

The fake GitHub carries the request out and only then answers 502, once: each
client must find what its first attempt made (the issue, the release, the
asset, the re-run) instead of making another one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.release.releases_client import ReleasesClient
from pipeline.release.runs_client import RunsClient
from pipeline.util.http_retry import RetryPolicy
from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.release_runs import (
    COMMIT,
    MATRIX,
    REPO,
    TOKEN,
    assert_release_complete,
    env_for,
    make_run,
    publish,
)

# No waits between attempts: these servers answer at once, and a test never sleeps.
NO_WAIT = RetryPolicy(backoff=0)

pytestmark = pytest.mark.integration

STALE = "nightly-stale"
# The cuda leg's bundle (not cuda-13-older's: its name goes on with "-13").
CUDA = "llama-b7000-bin-ubuntu-cuda-x64.tar.gz"


def posts(gh: FakeGitHub, path_end: str) -> list[int]:
    """The statuses of the POSTs whose path ends with ``path_end``, in order."""
    return [r.status for r in gh.requests if r.method == "POST" and r.path.endswith(path_end)]


def test_deadman_opens_one_issue_when_the_answer_to_creating_it_is_lost() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_release("b7000", published_at="2026-08-01T09:00:00Z")
        gh.fault("POST", r"/issues$", 502, lost=True)
        proc = run_pipeline(
            ["--matrix", str(ROOT / "matrix.toml"), "deadman", "--repo", REPO, "--api-url", gh.api_url,
             "--now", "2026-08-10T09:30:00Z", "--apply"],
            env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "", "PIPELINE_HTTP_BACKOFF": "0", "PIPELINE_STALE_DAYS": ""},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert [i["number"] for i in gh.issues] == [1]
        assert "opened #1" in proc.stdout
        # The one POST was answered 502 and never sent again: the open issue list was read instead.
        assert posts(gh, "/issues") == [502]


def test_alert_opens_one_issue_when_the_answer_to_creating_it_is_lost(tmp_path: Path) -> None:
    make_run(tmp_path / "out", failed=("cuda",), legs=("cpu", "cuda"))
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        # A closed alert issue from before: the new one is #2, and only one is opened.
        gh.add_issue("an older alert, renamed", ["nightly-failure"], state="closed")
        gh.fault("POST", r"/issues$", 502, lost=True)
        proc = run_pipeline(
            ["--matrix", str(MATRIX), "alert", "--repo", REPO, "--api-url", gh.api_url, "--status", "failure",
             "--out", str(tmp_path / "out"), "--apply"],
            env=env_for(gh, PIPELINE_LEGS="cpu,cuda", GITHUB_REPOSITORY=REPO, GITHUB_RUN_ID="77"),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert len(gh.issues) == 2 and "opened #2" in proc.stdout
        assert posts(gh, "/issues") == [502]


def test_the_issue_client_still_retries_a_post_that_did_not_go_through() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.fault("POST", r"/issues$", 502)  # refused before the issue was made
        client = ReleasesClient(REPO, TOKEN, api_url=gh.api_url, retry=NO_WAIT)
        assert client.create_issue("No nightly", "body", STALE) == 1
        assert posts(gh, "/issues") == [502, 201] and len(gh.issues) == 1


def test_a_lost_answer_to_creating_the_release_and_to_an_upload_makes_each_once(tmp_path: Path) -> None:
    bundles = make_run(tmp_path / "out")
    # A repository that holds the built commit: the first POST makes the release.
    with FakeGitHub(repo=REPO, token=TOKEN, commits=(COMMIT,)) as gh:
        gh.fault("POST", r"/releases$", 502, lost=True)
        gh.fault("POST", rf"/assets\?name={CUDA}", 502, lost=True)
        proc = publish(gh, tmp_path / "out", "--apply")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_release_complete(gh, bundles, tmp_path)
        # Each was sent once: no second POST met GitHub's 422 already_exists.
        assert posts(gh, "/releases") == [502]
        cuda = [r.status for r in gh.requests if r.uploads and r.query["name"][0].startswith(CUDA)]
        assert cuda == [502]


def test_a_lost_answer_to_a_rerun_starts_one_rerun() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_run(4242, jobs=[{"name": "cuda", "conclusion": "failure", "steps": []}])
        gh.fault("POST", r"/rerun-failed-jobs$", 502, lost=True)
        client = RunsClient(REPO, TOKEN, api_url=gh.api_url, retry=NO_WAIT)
        client.rerun_failed_jobs(4242, attempt=1)
        assert gh.reruns == [4242]
        assert gh.runs[4242]["run"]["run_attempt"] == 2


def test_the_cli_rerun_survives_a_lost_answer() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        lost = "The hosted runner: GitHub Actions 12 lost communication with the server."
        gh.add_run(
            4242,
            jobs=[
                {
                    "name": "cuda",
                    "conclusion": "failure",
                    "annotations": [lost],
                    "steps": [{"name": "Build", "conclusion": "failure", "number": 1}],
                }
            ],
        )
        gh.fault("POST", r"/rerun-failed-jobs$", 502, lost=True)
        proc = subprocess_retry(gh)
        assert proc.returncode == 0, proc.stderr
        assert "retried:" in proc.stdout and gh.reruns == [4242]


def subprocess_retry(gh: FakeGitHub) -> subprocess.CompletedProcess[str]:
    return run_pipeline(
        ["retry", "--repo", REPO, "--api-url", gh.api_url, "--run-id", "4242", "--apply"],
        env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "", "PIPELINE_HTTP_BACKOFF": "0"},
    )


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [("steps", 3, "'steps' is not a list"), ("conclusion", 7, "'conclusion' is not a string")],
)
def test_a_job_answer_of_the_wrong_shape_is_one_error_line(field: str, value: object, says: str) -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_run(4242, jobs=[{"name": "cuda", "conclusion": "failure", "steps": [], field: value}])
        proc = subprocess_retry(gh)
        assert "Traceback" not in proc.stderr
        [line] = proc.stderr.splitlines()
        assert line.startswith("error: GET jobs of run 4242: malformed ") and line.endswith(says), line
        assert proc.returncode == 8 and gh.reruns == []


def test_a_lost_answer_to_a_comment_posts_it_once() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        number = gh.add_issue("No nightly", [STALE])
        gh.fault("POST", r"/comments$", 502, lost=True)
        client = ReleasesClient(REPO, TOKEN, api_url=gh.api_url, retry=NO_WAIT)
        client.comment(number, "still stale: run 78")
        assert gh.issues[0]["comments"] == ["still stale: run 78"]
        assert posts(gh, "/comments") == [502]
