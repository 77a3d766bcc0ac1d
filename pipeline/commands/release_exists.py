"""``python -m pipeline release-exists``: is the run's release already published? Then there is nothing to build.

Sets the step outputs ``exists`` and ``build`` (``build=false`` when the
release exists and the run is not forced), so the workflow skips the build
jobs of a tag that is already out.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.commands.shared.build_args import is_forced
from pipeline.commands.shared.github_args import add_github_options, github_target
from pipeline.errors import UsageError
from pipeline.github import rest, runner
from pipeline.inputs import settings as S
from pipeline.inputs.resolution_file import Resolution
from pipeline.inputs.run_inputs import RunInputs
from pipeline.util.http_retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "release-exists",
        help="say whether the release for the run's tag is already published (step outputs exists, build)",
        description="Looks up the published release for the tag (from --tag, else the resolution file's "
        "source tag). build=false when it exists, unless --force. A partial release (a prerelease, "
        "published by `publish --partial`) does not count. Token: $GITHUB_TOKEN or $GH_TOKEN.",
    )
    add_github_options(p)
    p.add_argument("--tag", help="the release's tag")
    S.add_flag(p, S.RESOLVED, help="the run's resolution: the tag is its source's")
    p.add_argument("--force", action="store_true", default=None,
                   help=f"build even when the release exists (default: ${S.FORCE.env_var}=true)")  # fmt: skip
    p.set_defaults(func=run, reads_resolution=True)


def tag_from_resolution(resolution: Resolution, where: str) -> str:
    """The llama.cpp tag a resolution names; UsageError naming where it came from otherwise."""
    if resolution.source is None:
        raise UsageError(f"{where}: no source tag in it (resolved with --no-source?): pass --tag")
    return resolution.source.tag


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    repo, api_url = github_target(args, inputs)
    if not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    if args.tag:
        tag = args.tag
    elif inputs.resolution is not None:
        tag = tag_from_resolution(inputs.resolution, inputs.resolution_where or "--resolved")
    else:
        raise UsageError("no tag: pass --tag TAG or --resolved PATH")
    force = is_forced(args.force, inputs.environ)
    token = rest.token_from_env(inputs.environ, permission="contents: read")
    from pipeline.release.releases_client import ReleasesClient

    client = ReleasesClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)
    found = client.published_release(tag)
    # A partial release (a prerelease: a manual run of some legs) is not the tag's release: the run
    # builds every leg and publish completes it.
    release = found if found is not None and not found.prerelease else None
    build = release is None or force
    runner.set_output("exists", "true" if release else "false", env=inputs.environ)
    runner.set_output("build", "true" if build else "false", env=inputs.environ)
    runner.set_output("tag", tag, env=inputs.environ)
    if found is not None and release is None:
        print(f"release {tag}: only a partial release (prerelease) is published: build, publish completes it")
    elif release is None:
        print(f"release {tag}: not published yet: build")
    elif force:
        print(f"release {tag}: already published ({release.html_url}), rebuilding anyway (forced)")
    else:
        runner.annotate(
            "notice",
            f"release {tag} is already published ({release.html_url}): nothing to build",
            env=inputs.environ,
        )
    return 0
