"""``python -m pipeline deadman``: open an issue when no nightly release has been published lately."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.github_args import add_github_options, github_target
from pipeline.commands.shared.issue_actions import apply_issue_action
from pipeline.errors import UsageError
from pipeline.github import rest, runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.release.alert import check_label
from pipeline.release.deadman import DEFAULT_STALE_LABEL, TITLE, plan_deadman, release_seen
from pipeline.util.http_retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "deadman",
        help="open an issue when no nightly release was published for too long (dry run unless --apply)",
        description=(
            "Read the repository's releases; when the newest published nightly (not a draft, not a "
            "prerelease) is older than the limit, or there is none, open an issue with the label (or comment "
            "on the one open); when one is fresh, say how old it is and close that issue. A green run that "
            "published nothing is caught here, not by the failure alert. Token: $GITHUB_TOKEN or $GH_TOKEN."
        ),
    )
    add_github_options(p)
    S.add_flag(p, S.STALE_DAYS)
    S.add_flag(p, S.NOW, help="the moment the releases' ages are taken at, ISO-8601 (default: the clock)")
    p.add_argument(
        "--label",
        default=DEFAULT_STALE_LABEL,
        help=f"the stale issue's label, apart from the failure alert's (default: {DEFAULT_STALE_LABEL})",
    )
    p.add_argument("--apply", action="store_true", help="open, comment or close; without it nothing changes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    check_label(args.label)
    matrix = inputs.matrix
    stale_days = S.pick(
        S.STALE_DAYS,
        flag=args.stale_days,
        environ=inputs.environ,
        matrix=matrix.github.stale_days if matrix is not None else None,
    ).value
    repo, api_url = github_target(args, inputs)
    if not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    token = rest.token_from_env(inputs.environ, permission="issues: write")
    from pipeline.release.releases_client import ReleasesClient

    client = ReleasesClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)  # fmt: skip
    releases = [release_seen(item, "GET releases") for item in client.all_releases()]
    open_issue = client.open_issue_with_label(args.label)
    run_url = runner.run_url(inputs.environ, repo)
    plan = plan_deadman(
        releases, now=inputs.now, stale_days=float(stale_days), open_issue=open_issue, run_url=run_url
    )
    print(plan.line)
    if plan.action == "none":
        return 0
    prefix = "" if args.apply else "dry run: would "
    target = f"#{plan.issue}" if plan.issue else f"issue {TITLE!r}"
    print(f"{prefix}{plan.action} {target} (label {args.label})")
    if not args.apply:
        return 0
    apply_issue_action(client, plan.action, issue=plan.issue, title=TITLE, body=plan.body, label=args.label)
    return 0
