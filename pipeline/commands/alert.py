"""``python -m pipeline alert``: one labelled issue while the nightly fails, closed when it succeeds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.commands.shared.github_args import add_github_options, expected_legs, github_target
from pipeline.commands.shared.issue_actions import apply_issue_action
from pipeline.errors import UsageError
from pipeline.github import rest, runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.release.alert import DEFAULT_LABEL, STATUSES, check_label, check_status, plan_alert
from pipeline.release.collect import read_results
from pipeline.release.plan import NO_STATUS, LegResult
from pipeline.release.releases_client import ReleasesClient
from pipeline.util.http_retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "alert",
        help="open (or comment on) the nightly-failure issue, or close it on success (dry run unless --apply)",
        description=(
            "On failure: open one issue with the label naming the failed legs and linking the run, or "
            "comment on the one already open. On success: close the open one. Failed legs are read from "
            "OUT/*/record.json: an expected leg without a record failed too. Token: $GITHUB_TOKEN or $GH_TOKEN."
        ),
    )
    add_github_options(p)
    S.add_flag(p, S.NIGHTLY_STATUS, choices=STATUSES)
    S.add_flag(p, S.OUT, help="where the records are")
    S.add_flag(p, S.LEGS, help="the legs expected")
    p.add_argument(
        "--label", default=DEFAULT_LABEL, help=f"the alert issue's label (default: {DEFAULT_LABEL})"
    )
    p.add_argument("--tag", help="the run's llama.cpp tag, named in the issue (default: the records')")
    p.add_argument("--run-url", metavar="URL", help="the run to link (default: this Actions run)")
    p.add_argument(
        "--run-name",
        default="nightly",
        choices=("nightly", "warm-up"),
        help="the workflow the issue speaks of (default: nightly; warm-up.yml says warm-up)",
    )
    p.add_argument("--apply", action="store_true", help="open, comment or close; without it nothing changes")
    p.set_defaults(func=run)


def default_run_url(env: Any) -> str | None:
    """This Actions run's page, from the runner's variables; None outside Actions."""
    return runner.run_url(env, env.get(S.GITHUB_REPOSITORY.env_var))


def failure_reason(result: LegResult) -> str:
    """Why a leg that did not succeed failed, from its record: a check-bundle verdict is named as such."""
    code = f" (exit {result.exit_code})" if result.exit_code is not None else ""
    if result.check_ok is False:
        # The build and the packing passed: the bundle did not.
        return f"its bundle fails check-bundle{code}: {result.check_problem or result.check_text}"
    if result.error:
        # The error line names the leg first ("cpu: Ninja build failed ..."): the list names it already.
        return f"the build {result.status}{code}: {result.error.removeprefix(f'{result.leg}: ')}"
    return f"the build {result.status}"


def failed_legs(expected: list[str], out: Path) -> tuple[list[tuple[str, str]], str | None]:
    """(leg, why) for every expected leg that did not succeed, and the tag the records name."""
    results = read_results(out) if out.is_dir() else {}
    failed = []
    for leg in expected:
        result = results.get(leg)
        if result is None:
            failed.append((leg, "no record: the job failed before writing one, timed out or was skipped"))
        elif result.status == NO_STATUS:
            failed.append((leg, "its record has no status"))
        elif result.status not in ("success", "warmed"):
            failed.append((leg, failure_reason(result)))
    tags = sorted({str(r.source["tag"]) for r in results.values() if r.source.get("tag")})
    return failed, tags[0] if len(tags) == 1 else None


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    status = S.pick(S.NIGHTLY_STATUS, flag=args.status, environ=inputs.environ).value
    if not status:
        raise UsageError(f"no status: pass --status success|failure or set {S.NIGHTLY_STATUS.env_var}")
    check_status(status)
    check_label(args.label)
    args.status = status
    repo, api_url = github_target(args, inputs)
    if not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    expected = expected_legs(args, inputs)
    failed, record_tag = failed_legs(expected, inputs.out) if args.status == "failure" else ([], None)
    token = rest.token_from_env(inputs.environ, permission="issues: write")

    client = ReleasesClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)
    open_issue = client.open_issue_with_label(args.label)
    run_url = args.run_url or default_run_url(inputs.environ)
    plan = plan_alert(
        args.status,
        open_issue,
        tag=args.tag or record_tag,
        failed=failed,
        run_url=run_url,
        run_name=args.run_name,
    )
    target = f"#{plan.issue}" if plan.issue else "a new issue"
    prefix = "" if args.apply else "dry run: would "
    if plan.action == "none":
        print(f"{args.run_name} {args.status}: no open '{args.label}' issue, nothing to do")
        return 0
    print(f"{prefix}{plan.action} {target if plan.action != 'open' else f'issue {plan.title!r}'} "
          f"(label {args.label})")  # fmt: skip
    print(plan.body, end="")
    if not args.apply:
        return 0
    apply_issue_action(
        client, plan.action, issue=plan.issue, title=plan.title, body=plan.body, label=args.label
    )
    return 0
