"""One automatic retry of a nightly that broke for reasons of its own machinery. Pure, no I/O.

Two nights this exists for: every build passed and ``publish`` was
cancelled 15 s in with nothing failing; one build's runner "lost
communication with the server" 78 minutes into nvcc. Both left a finished
build set unpublished until a person noticed. The rule, over the run's jobs
(their latest attempt) and the annotations GitHub wrote on them:

- nothing failed, or the run is already a re-run (``run_attempt`` > 1): no retry;
- a job is **external** when an annotation says its runner went away (lost
  communication with the server, a shutdown signal, a runner that stopped
  responding), or when it was cancelled with no step failed;
- a job is **its own failure** when it timed out (the build is too slow: a
  retry fails the same way), when a person cancelled the run, or when a step
  failed with no such annotation (a compile error);
- anything else failed for a reason not known here: not retried;
- the failed jobs are re-run once when every failed job is external, never
  when one is its own failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# What GitHub writes on a job whose runner went away (the annotation's message).
EXTERNAL = (
    re.compile(r"lost communication with the server", re.IGNORECASE),
    re.compile(r"received a shutdown signal", re.IGNORECASE),
    re.compile(
        r"runner .*(?:shut ?down|stopped responding|did not respond|has been deprovisioned)", re.IGNORECASE
    ),
)
# A job or step over its time limit: the job's own, a retry would time out again. A person cancelling
# the run ("The run was canceled by @octocat."): meant, not broken.
TIMED_OUT = re.compile(r"exceeded the maximum execution time|has timed out", re.IGNORECASE)
CANCELLED_BY = re.compile(r"was cancel+ed by @", re.IGNORECASE)
FAILED_CONCLUSIONS = ("failure", "cancelled", "timed_out", "startup_failure")

Verdict = Literal["external", "own", "unknown"]


@dataclass(frozen=True, kw_only=True)
class JobSeen:
    """One job of the run, its latest attempt: its conclusion, its steps' conclusions, its annotations."""

    name: str
    conclusion: str | None
    # (step name, conclusion)
    steps: tuple[tuple[str, str | None], ...] = ()
    annotations: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED_CONCLUSIONS


@dataclass(frozen=True, kw_only=True)
class JobVerdict:
    job: str
    verdict: Verdict
    why: str

    @property
    def line(self) -> str:
        return f"{self.job}: {self.verdict}: {self.why}"


@dataclass(frozen=True, kw_only=True)
class RetryDecision:
    retry: bool
    reason: str
    jobs: tuple[JobVerdict, ...] = ()


def judge_job(job: JobSeen) -> JobVerdict:
    """Why one failed job failed: external, its own, or unknown (see the module docstring)."""
    for message in job.annotations:
        if TIMED_OUT.search(message):
            return JobVerdict(job=job.name, verdict="own", why=f"timed out: {message}")
    if job.conclusion == "timed_out":
        return JobVerdict(job=job.name, verdict="own", why="timed out")
    for message in job.annotations:
        if CANCELLED_BY.search(message):
            return JobVerdict(job=job.name, verdict="own", why=f"cancelled on purpose: {message}")
    for message in job.annotations:
        if any(p.search(message) for p in EXTERNAL):
            return JobVerdict(job=job.name, verdict="external", why=message)
    failed_steps = [name for name, conclusion in job.steps if conclusion == "failure"]
    if failed_steps:
        return JobVerdict(job=job.name, verdict="own", why=f"step {failed_steps[0]!r} failed")
    if job.conclusion == "cancelled":
        return JobVerdict(job=job.name, verdict="external", why="cancelled with no step failed")
    return JobVerdict(
        job=job.name, verdict="unknown", why=f"{job.conclusion} with no failed step and no runner message"
    )


def decide_retry(run_attempt: int, jobs: Sequence[JobSeen]) -> RetryDecision:
    """Re-run the failed jobs of a run's first attempt when every failure is external; else say why not."""
    failed = [j for j in jobs if j.failed]
    verdicts = tuple(judge_job(j) for j in failed)
    if run_attempt > 1:
        return RetryDecision(
            retry=False,
            reason=f"attempt {run_attempt}: this run was re-run already (once is the limit)",
            jobs=verdicts,
        )
    if not failed:
        return RetryDecision(retry=False, reason="no job failed")
    if own := [v for v in verdicts if v.verdict == "own"]:
        return RetryDecision(
            retry=False, reason=f"{own[0].job} failed on its own ({own[0].why})", jobs=verdicts
        )
    if unknown := [v for v in verdicts if v.verdict == "unknown"]:
        return RetryDecision(
            retry=False, reason=f"{unknown[0].job}: {unknown[0].why}: not known to be external", jobs=verdicts
        )
    names = ", ".join(v.job for v in verdicts)
    return RetryDecision(
        retry=True,
        reason=f"every failure is external ({names}): re-running the failed jobs once",
        jobs=verdicts,
    )
