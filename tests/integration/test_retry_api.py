"""`retry` against the fake GitHub: a run's jobs, their check-run annotations, and the one re-run."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.pipeline_cli import run_pipeline

pytestmark = pytest.mark.integration

REPO = "octo/llama"
TOKEN = "ghs_retry_secret_0123456789"
RUN = 4242
LOST = "The hosted runner: GitHub Actions 12 lost communication with the server."


def retry(gh: FakeGitHub, *extra: str) -> subprocess.CompletedProcess[str]:
    proc = run_pipeline(
        ["retry", "--repo", REPO, "--api-url", gh.api_url, "--run-id", str(RUN), *extra],
        env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "", "PIPELINE_HTTP_BACKOFF": "0"},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    return proc


def job(
    name: str, conclusion: str, *steps: tuple[str, str | None], annotations: tuple[str, ...] = ()
) -> dict:
    return {
        "name": name,
        "conclusion": conclusion,
        "steps": [{"name": s, "conclusion": c, "number": i + 1} for i, (s, c) in enumerate(steps)],
        "annotations": list(annotations),
    }


def test_a_lost_runner_and_a_cancelled_publish_are_retried_once() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN, max_per_page=2) as gh:
        gh.add_run(RUN, jobs=[
            job("resolve", "success", ("Resolve", "success")),
            job("cpu", "success", ("Build", "success")),
            job("cuda", "failure", ("Build", "failure"), annotations=(LOST,)),
            job("publish", "cancelled", ("Publish", "cancelled")),
            job("alert", "skipped"),
        ])  # fmt: skip
        dry = retry(gh)
        assert dry.returncode == 0, dry.stderr
        assert f"cuda: external: {LOST}" in dry.stdout
        assert "publish: external: cancelled with no step failed" in dry.stdout
        assert "dry run: would retry: every failure is external (cuda, publish)" in dry.stdout
        assert gh.reruns == []
        applied = retry(gh, "--apply")
        assert applied.returncode == 0, applied.stderr
        assert gh.reruns == [RUN]
        # The jobs came over three pages; only the failed jobs' annotations were read.
        assert sum(r.path.endswith("/jobs") for r in gh.requests if r.method == "GET") == 6
        assert sum("/check-runs/" in r.path for r in gh.requests) == 4
        # The re-run is attempt 2: a second call never retries it again.
        again = retry(gh, "--apply")
        assert "no retry: attempt 2: this run was re-run already" in again.stdout
        assert gh.reruns == [RUN]


def test_a_compile_failure_is_never_retried() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_run(RUN, jobs=[
            job("cuda", "failure", ("Configure", "success"), ("Build", "failure"),
                annotations=("Process completed with exit code 1.",)),
            job("rocm", "failure", ("Build", "failure"), annotations=(LOST,)),
            job("publish", "skipped"),
        ])  # fmt: skip
        proc = retry(gh, "--apply")
        assert proc.returncode == 0, proc.stderr
        assert "no retry: cuda failed on its own (step 'Build' failed)" in proc.stdout
        assert gh.reruns == [] and gh.hits("POST") == 0


def test_a_green_run_and_an_unknown_run_are_left_alone() -> None:
    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        gh.add_run(RUN, conclusion="success", jobs=[job("cpu", "success", ("Build", "success"))])
        assert "no retry: no job failed" in retry(gh, "--apply").stdout
        gh.add_run(RUN + 1)
        missing = run_pipeline(
            ["retry", "--repo", REPO, "--api-url", gh.api_url, "--run-id", "999", "--apply"],
            env={"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "", "PIPELINE_HTTP_BACKOFF": "0"},
        )
        assert missing.returncode == 8 and "404" in missing.stderr and "Traceback" not in missing.stderr
        assert gh.reruns == []
