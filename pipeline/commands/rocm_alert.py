"""``python -m pipeline rocm-alert``: one issue naming each stale ROCm family, closed when none is stale."""

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
from pipeline.release.rocm_alert import DEFAULT_ROCM_STALE_LABEL, TITLE, plan_rocm_alert
from pipeline.util.http_retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "rocm-alert",
        help="open an issue naming each stale ROCm family, or close it (dry run unless --apply)",
        description=(
            "Read OUT/*/record.json: a ROCm leg that built with a build older than rocm.max_age_days has the "
            "line in its record (toolchain.stale). Open one issue with the label naming each stale family, "
            "comment only for a family it does not name yet, close it when none is stale. "
            "Token: $GITHUB_TOKEN or $GH_TOKEN."
        ),
    )
    add_github_options(p)
    S.add_flag(p, S.OUT, help="where the records are")
    p.add_argument(
        "--label",
        default=DEFAULT_ROCM_STALE_LABEL,
        help=f"the issue's label, apart from the failure alert's (default: {DEFAULT_ROCM_STALE_LABEL})",
    )
    p.add_argument("--apply", action="store_true", help="open, comment or close; without it nothing changes")
    p.set_defaults(func=run)


def stale_families(inputs: RunInputs) -> dict[str, str]:
    """``<os> <family>`` -> the stale line, from the ROCm records in the run's output folder."""
    from pipeline.release.collect import read_results

    out = inputs.out
    found: dict[str, str] = {}
    for result in (read_results(out) if out.is_dir() else {}).values():
        if result.stale_family is not None and result.stale is not None:
            # Legs of one family (gfx90a's two OSes are two families) share one line: named once.
            found.setdefault(result.stale_family, result.stale)
    return found


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    check_label(args.label)
    repo, api_url = github_target(args, inputs)
    if not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    stale = stale_families(inputs)
    token = rest.token_from_env(inputs.environ, permission="issues: write")
    from pipeline.release.releases_client import ReleasesClient

    client = ReleasesClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)  # fmt: skip
    open_issue = client.open_issue_with_label(args.label)
    said = client.issue_texts(open_issue) if open_issue is not None and stale else []
    run_url = runner.run_url(inputs.environ, repo)
    plan = plan_rocm_alert(stale, open_issue=open_issue, said=said, run_url=run_url)
    print(
        f"stale ROCm families: {', '.join(plan.stale) or 'none'}"
        + (f"; already named in #{open_issue}" if plan.stale and not plan.new else "")
    )
    if plan.action == "none":
        return 0
    prefix = "" if args.apply else "dry run: would "
    target = f"#{plan.issue}" if plan.issue else f"issue {TITLE!r}"
    print(f"{prefix}{plan.action} {target} (label {args.label})")
    print(plan.body, end="")
    if not args.apply:
        return 0
    apply_issue_action(client, plan.action, issue=plan.issue, title=TITLE, body=plan.body, label=args.label)
    return 0
