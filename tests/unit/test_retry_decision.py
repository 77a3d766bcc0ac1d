"""The one automatic retry: which failures are external, which are a job's own, and the run's verdict."""

from __future__ import annotations

import pytest

from pipeline.release.rerun_decision import JobSeen, decide_retry, judge_job

LOST = "The hosted runner: GitHub Actions 12 lost communication with the server. Anything in your workflow that terminates the runner process, starves it for CPU/Memory, or blocks its network access can cause this error."
SHUTDOWN = "The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled."
JOB_TIMEOUT = (
    "The job running on runner GitHub Actions 7 has exceeded the maximum execution time of 240 minutes."
)
COMPILE = "Process completed with exit code 1."

OK = JobSeen(name="cpu", conclusion="success", steps=(("Build", "success"),))
SKIPPED = JobSeen(name="alert", conclusion="skipped")
COMPILE_ERROR = JobSeen(
    name="cuda", conclusion="failure", steps=(("Build", "failure"),), annotations=(COMPILE,)
)
RUNNER_LOST = JobSeen(name="rocm", conclusion="failure", steps=(("Build", "failure"),), annotations=(LOST,))
RUNNER_SHUTDOWN = JobSeen(
    name="vulkan", conclusion="failure", steps=(("Build", None),), annotations=(SHUTDOWN,)
)
CANCELLED_CLEAN = JobSeen(name="publish", conclusion="cancelled", steps=(("Publish", "cancelled"),))
CANCELLED_AFTER_FAILURE = JobSeen(name="publish", conclusion="cancelled", steps=(("Publish", "failure"),))
TIMED_OUT = JobSeen(
    name="cuda", conclusion="cancelled", steps=(("Build", "cancelled"),), annotations=(JOB_TIMEOUT,)
)
STEP_TIMEOUT = JobSeen(
    name="cuda",
    conclusion="failure",
    steps=(("Build", "failure"),),
    annotations=("The action 'Build' has timed out after 210 minutes.",),
)
BY_A_PERSON = JobSeen(
    name="cuda",
    conclusion="cancelled",
    steps=(("Build", "cancelled"),),
    annotations=("The run was canceled by @octocat.",),
)
UNEXPLAINED = JobSeen(name="summary", conclusion="failure", steps=(("Report", "success"),))


@pytest.mark.parametrize(
    ("job", "verdict"),
    [
        (COMPILE_ERROR, "own"),
        (RUNNER_LOST, "external"),
        (RUNNER_SHUTDOWN, "external"),
        (CANCELLED_CLEAN, "external"),
        (CANCELLED_AFTER_FAILURE, "own"),
        (TIMED_OUT, "own"),
        (STEP_TIMEOUT, "own"),
        (JobSeen(name="x", conclusion="timed_out"), "own"),
        (BY_A_PERSON, "own"),
        (UNEXPLAINED, "unknown"),
    ],
    ids=[
        "compile-error",
        "runner-lost",
        "runner-shutdown",
        "cancelled-clean",
        "cancelled-after-failure",
        "job-timeout",
        "step-timeout",
        "timed-out",
        "cancelled-by-a-person",
        "unexplained",
    ],
)
def test_each_failed_job_is_judged(job: JobSeen, verdict: str) -> None:
    assert judge_job(job).verdict == verdict


@pytest.mark.parametrize(
    ("attempt", "jobs", "retry", "reason"),
    [
        (1, [OK, SKIPPED], False, "no job failed"),
        (1, [OK, CANCELLED_CLEAN], True, "every failure is external (publish)"),
        (1, [OK, RUNNER_LOST, CANCELLED_CLEAN], True, "every failure is external (rocm, publish)"),
        (1, [RUNNER_SHUTDOWN, SKIPPED], True, "every failure is external (vulkan)"),
        # A real compile failure anywhere: never retried, even beside an external one.
        (1, [COMPILE_ERROR], False, "cuda failed on its own (step 'Build' failed)"),
        (1, [RUNNER_LOST, COMPILE_ERROR], False, "cuda failed on its own"),
        (1, [TIMED_OUT, CANCELLED_CLEAN], False, "cuda failed on its own (timed out"),
        (1, [UNEXPLAINED], False, "not known to be external"),
        # Never twice for one run.
        (2, [RUNNER_LOST], False, "attempt 2: this run was re-run already"),
        (3, [CANCELLED_CLEAN], False, "attempt 3"),
    ],
)
def test_the_run_is_retried_once_only_when_every_failure_is_external(
    attempt: int, jobs: list[JobSeen], retry: bool, reason: str
) -> None:
    decision = decide_retry(attempt, jobs)
    assert decision.retry is retry
    assert reason in decision.reason
    assert [v.job for v in decision.jobs] == [j.name for j in jobs if j.failed]
