"""``python -m pipeline publish``: the run's bundles as one GitHub release (dry run unless --apply)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pipeline import github
from pipeline.config import load_matrix
from pipeline.errors import GitHubError, PublishError, UsageError
from pipeline.github_releases import Release, ReleasesClient
from pipeline.release_inputs import bundles_present, read_results, release_files
from pipeline.release_plan import UploadPlan, check_coverage, plan_uploads, release_notes, run_tag

LEGS_ENV = "PIPELINE_LEGS"


def add_github_options(p: argparse.ArgumentParser) -> None:
    """--repo and --api-url, as prune takes them (shared by publish, alert, release-exists)."""
    p.add_argument("--repo", metavar="OWNER/NAME", default=os.environ.get("GITHUB_REPOSITORY"),
                   help="the repository (default: $GITHUB_REPOSITORY)")  # fmt: skip
    p.add_argument(
        "--api-url",
        metavar="URL",
        default=os.environ.get("GITHUB_API_URL") or github.DEFAULT_API_URL,
        help="REST API root, e.g. a GitHub Enterprise server's (default: $GITHUB_API_URL, else the public API)",
    )


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "publish",
        help="publish the run's bundles as a GitHub release (dry run unless --apply)",
        description=(
            "Check that every expected leg made its bundle, write SHA256SUMS and the notes under "
            "OUT/release/, then create (or find) the draft release for the run's tag, upload what is "
            "not there yet and publish it. A rerun resumes: assets already uploaded with the same "
            "sha256 are kept. Token: $GITHUB_TOKEN or $GH_TOKEN."
        ),
    )
    add_github_options(p)
    p.add_argument("--out", type=Path, default=Path("out"), metavar="DIR",
                   help="the run's output folder: OUT/*/record.json and the bundles (default: out)")  # fmt: skip
    p.add_argument("--tag", help="the release's tag (default: the llama.cpp tag the records name)")
    p.add_argument("--legs", metavar="A,B", help=f"the legs expected (default: ${LEGS_ENV}, else every leg)")
    p.add_argument("--allow-missing", action="append", default=[], metavar="LEG",
                   help="publish even though LEG failed or made no bundle (repeatable)")  # fmt: skip
    p.add_argument("--replace", action="store_true", help="overwrite assets that differ from this run's")
    p.add_argument("--apply", action="store_true", help="create, upload and publish; without it nothing changes")
    p.set_defaults(func=run)


def expected_legs(flag: str | None, env_value: str | None, all_legs: list[str]) -> list[str]:
    """The legs a run should have built: the flag, else the environment, else every leg."""
    text = flag if flag is not None else env_value
    if not text or not text.strip():
        return all_legs
    legs = [leg.strip() for leg in text.split(",") if leg.strip()]
    if unknown := [leg for leg in legs if leg not in all_legs]:
        raise UsageError(f"--legs: no leg {', '.join(unknown)} in the matrix (legs: {', '.join(all_legs)})")
    return legs


def run(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    expected = expected_legs(args.legs, os.environ.get(LEGS_ENV), list(matrix.legs))
    if unknown := sorted(set(args.allow_missing) - set(expected)):
        raise UsageError(f"--allow-missing: {', '.join(unknown)} is not an expected leg ({', '.join(expected)})")
    if args.apply and not args.repo:
        raise UsageError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    if not args.out.is_dir():
        raise UsageError(f"--out {args.out}: no such folder")

    # Everything that can fail without the network comes before the first request.
    token = _token(required=args.apply)
    results = read_results(args.out)
    coverage = check_coverage(expected, results, bundles_present(args.out, results), set(args.allow_missing))
    if not coverage.ok:
        raise PublishError(coverage.problem())
    if not coverage.present:
        raise PublishError("no leg to publish")
    tag = args.tag or run_tag(coverage.present)
    notes = release_notes(tag, coverage)
    assets = release_files(args.out, coverage.present, notes)

    client, release, remote = _remote_state(args, tag, token)
    plan = plan_uploads(assets, remote, replace=args.replace)
    _print_plan(tag, release, plan, coverage.allowed_missing, offline=client is None, apply=args.apply)
    if not args.apply:
        from pipeline.publishing import refuse_conflicts

        refuse_conflicts(plan, tag)
        return 0
    assert client is not None
    from pipeline.publishing import apply_release

    outcome = apply_release(
        client, tag=tag, name=f"llama.cpp {tag}", notes=notes, release=release, plan=plan,
        on_step=lambda action, name: print(f"  {action} {name}", flush=True),
    )  # fmt: skip
    url = outcome.release.html_url if outcome.release else ""
    print(f"release {tag}: {len(outcome.uploaded)} uploaded, {len(outcome.kept)} kept"
          f"{', published' if outcome.published else ', already live'} {url}")  # fmt: skip
    github.set_output("release-url", url)
    return 0


def _token(*, required: bool) -> str | None:
    """The token; a dry run may go without (then it plans offline)."""
    try:
        return github.token_from_env(permission=ReleasesClient.permission)
    except GitHubError:
        if required:
            raise
        return None


def _remote_state(
    args: argparse.Namespace, tag: str, token: str | None
) -> tuple[ReleasesClient | None, Release | None, list[Any]]:
    """The client, the release for ``tag`` and its assets; offline (all None) for a dry run without token."""
    if token is None or not args.repo:
        return None, None, []
    from pipeline.retry import default_backoff

    client = ReleasesClient(args.repo, token, api_url=args.api_url, backoff=default_backoff())
    release = client.find_release(tag)
    return client, release, client.list_assets(release) if release else []


def _print_plan(
    tag: str, release: Release | None, plan: UploadPlan, allowed: Any, *, offline: bool, apply: bool
) -> None:
    if offline:
        state = "not looked up (no token or repository: planned as if there were no release)"
    elif release is None:
        state = "none yet: a draft will be created"
    else:
        state = "draft" if release.draft else "published"
    print(f"release {tag}: {state}")
    width = max((len(s.name) for s in plan.steps), default=0)
    for step in plan.steps:
        print(f"  {step.action:<9} {step.name:<{width}}  {step.local.size:>12} B  {step.reason}")
    for name in plan.extra:
        print(f"  {'leave':<9} {name:<{width}}  (on the release, not made by this run)")
    for leg, why in allowed:
        print(f"  missing   {leg}: {why} (allowed)")
    if not apply:
        print(f"dry run: would upload {plan.count('upload') + plan.count('reupload') + plan.count('replace')}, "
              f"keep {plan.count('keep')} (pass --apply to publish)")  # fmt: skip
