"""Which llama.cpp tag a run builds: the remote's b<digits> tags, newest first, and the newest one old enough (its commit time read in a scratch repository)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipeline.errors import ResolutionError, SourceError
from pipeline.names import BUILD_TAG
from pipeline.source.git_commands import fetch_location, run_git

_PEELED = "^{}"


# Candidate tags whose dates are read per fetch: 1, 2, 4, ... up to this many.
_MAX_DATE_BATCH = 64


def parse_ls_remote_tags(text: str) -> dict[str, str]:
    """Tag name -> commit SHA from ``git ls-remote --tags`` output (peeled when annotated)."""
    tags: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 2 or not parts[1].startswith("refs/tags/"):
            continue
        sha, name = parts[0].strip(), parts[1][len("refs/tags/") :]
        if name.endswith(_PEELED):
            peeled[name[: -len(_PEELED)]] = sha
        else:
            tags[name] = sha
    return {name: peeled.get(name, sha) for name, sha in tags.items()}


def build_tags_newest_first(names: Iterable[str]) -> list[str]:
    """The ``b<digits>`` tags, highest build number first (numeric, not text order)."""
    builds = [(int(m.group(1)), name) for name in names if (m := BUILD_TAG.match(name))]
    return [name for _, name in sorted(builds, reverse=True)]


def old_enough(tag_time: datetime, now: datetime, min_age_hours: float) -> bool:
    """Whether a tag dated ``tag_time`` is at least ``min_age_hours`` old at ``now``."""
    return now - tag_time >= timedelta(hours=min_age_hours)


def ls_remote_tags(repo: str, *, environ: Mapping[str, str]) -> dict[str, str]:
    """Tag name -> commit SHA of ``repo`` (a git URL or a local path)."""
    proc = run_git(
        ["ls-remote", "--tags", fetch_location(repo)], what=f"cannot list the tags of {repo}", base=environ
    )
    return parse_ls_remote_tags(proc.stdout)


def _tag_times(
    scratch: Path, repo: str, names: Sequence[str], *, environ: Mapping[str, str]
) -> dict[str, datetime]:
    """Fetch ``names`` (commits and tag objects only) into ``scratch`` and read their dates."""
    refspecs = [f"+refs/tags/{n}:refs/tags/{n}" for n in names]
    run_git(
        ["fetch", "--quiet", "--no-tags", "--depth=1", "--filter=tree:0", "origin", *refspecs],
        cwd=scratch,
        what=f"cannot fetch tags {', '.join(names)} from {repo}",
        base=environ,
    )
    out = run_git(
        [
            "for-each-ref",
            "--format=%(refname:lstrip=2) %(creatordate:unix)",
            *[f"refs/tags/{n}" for n in names],
        ],
        cwd=scratch,
        what="cannot read tag dates",
        base=environ,
    ).stdout
    times: dict[str, datetime] = {}
    for line in out.splitlines():
        name, _, stamp = line.rpartition(" ")
        if name and stamp.isdigit():
            times[name] = datetime.fromtimestamp(int(stamp), UTC)
    return times


def _init_scratch(scratch: Path, repo: str, *, environ: Mapping[str, str]) -> None:
    # A partial-clone remote, so that --filter=tree:0 is allowed: dates need
    # the commits and tag objects, never the trees and blobs.
    run_git(
        ["init", "--quiet", "--bare", str(scratch)], what="cannot create a scratch repository", base=environ
    )
    for key, value in (
        ("remote.origin.url", fetch_location(repo)),
        ("remote.origin.promisor", "true"),
        ("remote.origin.partialclonefilter", "tree:0"),
        ("extensions.partialclone", "origin"),
        ("core.repositoryformatversion", "1"),
    ):
        run_git(
            ["config", key, value], cwd=scratch, what="cannot configure the scratch repository", base=environ
        )


def latest_tag(
    repo: str, tags: Mapping[str, str], *, now: datetime, min_age_hours: float, environ: Mapping[str, str]
) -> tuple[str, datetime]:
    """The newest ``b<digits>`` tag at least ``min_age_hours`` old at ``now``, with its date."""
    candidates = build_tags_newest_first(tags)
    if not candidates:
        raise ResolutionError(f"{repo}: no b<digits> tags found")
    with tempfile.TemporaryDirectory(prefix="pipeline-tags-") as tmp:
        scratch = Path(tmp) / "tags.git"
        _init_scratch(scratch, repo, environ=environ)
        start, size = 0, 1
        while start < len(candidates):
            batch = candidates[start : start + size]
            times = _tag_times(scratch, repo, batch, environ=environ)
            for name in batch:
                if name not in times:
                    raise SourceError(f"{repo}: cannot read the date of tag {name}")
                if old_enough(times[name], now, min_age_hours):
                    return name, times[name]
            start += size
            size = min(size * 2, _MAX_DATE_BATCH)
    raise ResolutionError(
        f"{repo}: no b<digits> tag is at least {min_age_hours:g} h old at {now.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
        f" (newest: {candidates[0]})"
    )
