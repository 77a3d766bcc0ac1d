"""``python -m pipeline retry --run-id ID``: re-run a nightly's failed jobs once when every failure is external."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from pipeline.commands.shared.github_args import add_github_options, github_target
from pipeline.errors import UsageError
from pipeline.github import rest
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.release.rerun_decision import decide_retry
from pipeline.util.http_retry import say_on_stderr


def _run_id(text: str) -> int:
    if not text.strip().isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a workflow run id (a positive integer), got {text!r}")
    return int(text)


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "retry",
        help="re-run a run's failed jobs once when every failure is external (dry run unless --apply)",
        description=(
            "Read the run's jobs and their annotations. Re-run the failed jobs once when every failed job "
            "failed outside itself (its runner lost communication with the server or shut down, or it was "
            "cancelled with no step failed); never when a step failed on its own (a compile error) or a job "
            "timed out, never for a run that is a re-run already (attempt > 1). Token: $GITHUB_TOKEN or "
            "$GH_TOKEN (actions: write, checks: read)."
        ),
    )
    add_github_options(p)
    p.add_argument(
        "--run-id", type=_run_id, required=True, metavar="ID", help="the workflow run (the nightly's)"
    )
    p.add_argument("--apply", action="store_true", help="re-run the failed jobs; without it nothing changes")
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    repo, api_url = github_target(args, inputs)
    if not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    token = rest.token_from_env(inputs.environ, permission="actions: write")
    from pipeline.release.runs_client import RunsClient

    client = RunsClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)  # fmt: skip
    info = client.run(args.run_id)
    attempt = int(info["run_attempt"])
    jobs = []
    for check_run, job in client.jobs(args.run_id):
        if job.failed:
            job = replace(job, annotations=client.annotations(check_run))
        jobs.append(job)
    decision = decide_retry(attempt, jobs)
    print(f"run {args.run_id} (attempt {attempt}, {info.get('conclusion') or 'no conclusion'})")
    for verdict in decision.jobs:
        print(f"  {verdict.line}")
    if not decision.retry:
        print(f"no retry: {decision.reason}")
        return 0
    if not args.apply:
        print(f"dry run: would retry: {decision.reason}")
        return 0
    client.rerun_failed_jobs(args.run_id, attempt=attempt)
    print(f"retried: {decision.reason}")
    return 0
