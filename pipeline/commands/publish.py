"""``python -m pipeline publish``: the run's bundles as one GitHub release (dry run unless --apply)."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.build_args import is_forced
from pipeline.commands.shared.github_args import add_github_options, expected_legs, github_target
from pipeline.errors import GitHubError, PublishError, UsageError
from pipeline.github import rest, runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.release.collect import (
    bundles_present,
    find_source_archive,
    read_results,
    refuse_oversized,
    release_files,
)
from pipeline.release.plan import (
    UploadPlan,
    built_commit,
    built_tag,
    check_coverage,
    left_out,
    plan_uploads,
    refuse_unplanned_partial,
    release_notes,
    replaces_assets,
)
from pipeline.release.releases_client import Release, ReleasesClient
from pipeline.util.http_retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "publish",
        help="publish the run's bundles as a GitHub release (dry run unless --apply)",
        description=(
            "Check that every expected leg made its bundle, write SHA256SUMS and the notes under "
            "OUT/release/, then create (or find) the draft release for the run's tag, upload what is "
            "not there yet and publish it. A rerun resumes: assets already uploaded with the same "
            "sha256 are kept. An asset is replaced, never removed first: the new bytes go up under a "
            "staged name, are checked, then take the name (SHA256SUMS last, the notes after). "
            "Token: $GITHUB_TOKEN or $GH_TOKEN."
        ),
    )
    add_github_options(p)
    S.add_flag(p, S.OUT, help="the run's output folder: OUT/*/record.json and the bundles")
    p.add_argument("--tag", help="the release's tag (default: the llama.cpp tag the records name)")
    S.add_flag(p, S.LEGS, help="the legs expected")
    S.add_flag(
        p,
        S.SOURCE_ARCHIVE,
        help="the run's source archive, uploaded as llama.cpp-source-<tag>.tar.gz "
        "(default: OUT/source/llama.cpp-<tag>.tar.gz, as `source` writes it)",
    )
    p.add_argument("--allow-missing", action="append", default=[], metavar="LEG",
                   help="publish even though LEG failed or made no bundle (repeatable)")  # fmt: skip
    p.add_argument("--partial", action="store_true",
                   help="publish although the run built only some legs of matrix.toml (--legs): the release "
                   "is a prerelease, never latest, and a later full run completes it")  # fmt: skip
    p.add_argument("--replace", action="store_true",
                   help=f"overwrite assets that differ from this run's (default: ${S.FORCE.env_var}=true, a forced rebuild)")  # fmt: skip
    p.add_argument(
        "--apply", action="store_true", help="create, upload and publish; without it nothing changes"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    expected = expected_legs(args, inputs)
    repo, api_url = github_target(args, inputs)
    out = inputs.out
    if unknown := sorted(set(args.allow_missing) - set(expected)):
        raise UsageError(
            f"--allow-missing: {', '.join(unknown)} is not an expected leg ({', '.join(expected)})"
        )
    if args.apply and not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    if not out.is_dir():
        raise UsageError(f"--out {out}: no such folder")

    # Everything that can fail without the network comes before the first request.
    token = _token(inputs, required=args.apply)
    results = read_results(out)
    coverage = check_coverage(expected, results, bundles_present(out, results), set(args.allow_missing))
    if not coverage.ok:
        raise PublishError(coverage.problem())
    if not coverage.present:
        raise PublishError("no leg to publish")
    all_legs = list(inputs.require_matrix().legs)
    refuse_unplanned_partial(expected, all_legs, partial_allowed=args.partial)
    partial = left_out(all_legs, coverage)
    tag = args.tag or built_tag(coverage.present)
    notes = release_notes(tag, coverage, partial)
    source = find_source_archive(out, tag, inputs.source_archive)
    if source is None:
        print(
            f"warning: no source archive for {tag} (OUT/source/ or --source-archive): the release carries none"
        )
    # Before any hashing or request: GitHub takes no asset of 2 GiB or more.
    refuse_oversized(out, coverage.present, source)
    assets = release_files(out, coverage.present, notes, tag=tag, source_archive=source)

    client, release, remote = _remote_state(repo, api_url, tag, token, inputs)
    replace = replaces_assets(
        asked=args.replace,
        forced=is_forced(None, inputs.environ),
        release_is_prerelease=release is not None and release.prerelease,
        partial=partial,
    )
    plan = plan_uploads(assets, remote, replace=replace)
    _print_plan(tag, release, plan, coverage.allowed_missing, offline=client is None, apply=args.apply)
    if partial:
        print(f"partial release: no bundle for {', '.join(partial)}: published as a prerelease, never latest")
    from pipeline.release.publish import apply_release, refuse_conflicts, refuse_partial_onto_full

    if not args.apply:
        refuse_conflicts(plan, tag)
        refuse_partial_onto_full(release, tag, partial)
        return 0
    assert client is not None

    outcome = apply_release(
        client, tag=tag, name=f"llama.cpp {tag}", notes=notes, release=release, plan=plan, partial=partial,
        target_commitish=built_commit(coverage.present),
        on_step=lambda action, name: print(f"  {action} {name}", flush=True),
    )  # fmt: skip
    url = outcome.release.html_url if outcome.release else ""
    print(f"release {tag}: {len(outcome.uploaded)} uploaded, {len(outcome.kept)} kept"
          f"{', published' if outcome.published else ', already live'} {url}")  # fmt: skip
    runner.set_output("release-url", url, env=inputs.environ)
    return 0


def _token(inputs: RunInputs, *, required: bool) -> str | None:
    """The token; a dry run may go without (then it plans offline)."""
    try:
        return rest.token_from_env(inputs.environ, permission=ReleasesClient.permission)
    except GitHubError:
        if required:
            raise
        return None


def _remote_state(
    repo: str | None, api_url: str, tag: str, token: str | None, inputs: RunInputs
) -> tuple[ReleasesClient | None, Release | None, list[Any]]:
    """The client, the release for ``tag`` and its assets; offline (all None) for a dry run without token."""
    if token is None or not repo:
        return None, None, []
    client = ReleasesClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)
    from pipeline.release.publish import with_digests

    release = client.find_release(tag)
    return client, release, with_digests(client, client.list_assets(release)) if release else []


def _print_plan(
    tag: str, release: Release | None, plan: UploadPlan, allowed: Any, *, offline: bool, apply: bool
) -> None:
    if offline:
        state = "not looked up (no token or repository: planned as if there were no release)"
    elif release is None:
        state = "none yet: a draft will be created"
    else:
        state = "draft" if release.draft else "published"
        state += " (prerelease: a partial release)" if release.prerelease else ""
    print(f"release {tag}: {state}")
    width = max((len(s.name) for s in plan.steps), default=0)
    for step in plan.steps:
        print(f"  {step.action:<9} {step.name:<{width}}  {step.local.size:>12} B  {step.reason}")
    for name in plan.extra:
        print(f"  {'leave':<9} {name:<{width}}  (on the release, not made by this run)")
    for asset in plan.leftovers:
        print(f"  {'remove':<9} {asset.name}  (staged by an interrupted run, not these bytes)")
    for asset in plan.retired:
        print(f"  {'remove':<9} {asset.name}  (set aside by an interrupted replacement)")
    for leg, why in allowed:
        print(f"  missing   {leg}: {why} (allowed)")
    if not apply:
        print(f"dry run: would upload {plan.count('upload') + plan.count('reupload') + plan.count('replace')}, "
              f"keep {plan.count('keep')} (pass --apply to publish)")  # fmt: skip
