"""The llama.cpp source: which tag a run builds, and a working tree at that commit.

Git is driven as a subprocess (``git`` on PATH). Resolution reads the tags with
``git ls-remote --tags`` (any git URL or a local path) and, for ``latest``,
needs each candidate tag's date, which ls-remote does not give: candidates are
fetched newest first, commits only (``--depth=1 --filter=tree:0``), into a
throw-away bare repository, in growing batches, until one is old enough.

A mix build merges pinned pull-request commits onto the base tag with a fixed
identity and dates derived from the base commit (see :mod:`pipeline.inputs.mix`), so
the same inputs give the same merge commit SHA everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipeline.errors import ResolutionError, SourceError
from pipeline.inputs.matrix import SourceConfig
from pipeline.inputs.mix import (
    check_pins,
)
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.names import SAFE_TAG_MAX, is_safe_tag, safe_identity
from pipeline.source.git_commands import fetch_base, fetch_location, git_url, prepare_clone, run_git
from pipeline.source.mix_merge import _fetch_pin, _merge_pins
from pipeline.source.tags import build_tags_newest_first, latest_tag, ls_remote_tags

# --------------------------------------------------------------------------
# Pure helpers


# --------------------------------------------------------------------------
# The resolved source


@dataclass(frozen=True, kw_only=True)
class CheckoutInfo:
    """What an arbitrary source folder is, as far as git can tell."""

    commit: str | None
    # The tag at HEAD, else ``git describe --tags --always``, else None.
    tag: str | None
    dirty: bool


# --------------------------------------------------------------------------
# Git as a subprocess


def resolve_source(
    cfg: SourceConfig,
    *,
    now: datetime,
    tag: str | None = None,
    git_url_template: str,
    environ: Mapping[str, str],
) -> SourceSpec:
    """Which tag (and mix set) this run builds.

    ``tag`` overrides ``cfg.tag``: ``latest`` or an explicit tag that must
    exist. Mix pins are checked for form and their repositories for
    existence (``git ls-remote``); their commits are fetched at checkout.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    wanted = tag or cfg.tag
    check_pins(cfg.mix, "source.mix")
    tags = ls_remote_tags(cfg.repo, environ=environ)
    if wanted == "latest":
        base_tag, when = latest_tag(cfg.repo, tags, now=now, min_age_hours=cfg.min_age_hours, environ=environ)
        base_date: str | None = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        if wanted not in tags:
            newest = build_tags_newest_first(tags)
            hint = f" (newest: {newest[0]})" if newest else ""
            raise ResolutionError(f"tag {wanted!r} not found in {cfg.repo}{hint}")
        base_tag, base_date = wanted, None
    template = git_url_template
    for repo in dict.fromkeys(pin.repo for pin in cfg.mix):
        url = git_url(repo, template)
        # HEAD only: proves the repository answers without listing every branch.
        run_git(["ls-remote", url, "HEAD"], what=f"mix pin repo {repo} not found at {url}", base=environ)
    base_commit = tags[base_tag]
    return SourceSpec(
        repo=cfg.repo,
        base_tag=base_tag,
        base_commit=base_commit,
        base_date=base_date,
        mix=cfg.mix,
        commit=None if cfg.mix else base_commit,
    )


# --------------------------------------------------------------------------
# Checkout and mix


def checkout_source(
    spec: SourceSpec, dest: Path, *, git_url_template: str, environ: Mapping[str, str]
) -> str:
    """Make ``dest`` a clean working tree at ``spec``'s deterministic commit; return its SHA.

    ``dest`` belongs to the pipeline: an existing clone of the same repository
    is re-used (fetching only what is missing), then forcibly checked out and
    cleaned of untracked and ignored files, so nothing stale leaks into a build.
    """
    template = git_url_template
    check_pins(spec.mix, "source.mix")
    dest = dest.resolve()
    prepare_clone(dest, fetch_location(spec.repo), environ=environ)
    base_commit = fetch_base(dest, spec, environ=environ)
    for pin in spec.mix:
        _fetch_pin(dest, pin, template, environ=environ)
    run_git(
        ["checkout", "--quiet", "--force", "--detach", base_commit],
        cwd=dest,
        what=f"cannot check out {spec.base_tag}",
        base=environ,
    )
    run_git(["clean", "--quiet", "-ffdx"], cwd=dest, what=f"cannot clean {dest}", base=environ)
    _merge_pins(dest, spec, base_commit, environ=environ)
    head = run_git(["rev-parse", "HEAD"], cwd=dest, what="cannot read HEAD", base=environ).stdout.strip()
    if spec.commit is not None and head != spec.commit:
        raise SourceError(
            f"{dest}: checked out {head[:12]} for {spec.tag}, but the run expected {spec.commit[:12]}"
        )
    return head


def describe_checkout(path: Path, *, environ: Mapping[str, str]) -> CheckoutInfo:
    """Commit, tag and dirtiness of a source folder given with ``--source`` (no git: all unknown).

    A folder inside another repository (a plain copy of the tree under some
    project's checkout) is no repository of its own: git would answer for
    the other project, so it counts as no git at all.
    """
    # One git for both: the top of the repository holding the folder, then its HEAD (fails without one).
    found = run_git(["rev-parse", "--show-toplevel", "HEAD"], cwd=path, what="", check=False, base=environ)
    # The commit is the last line; the top is all before it (a folder's name may hold a newline).
    top, _, commit = found.stdout.removesuffix("\n").rpartition("\n")
    if found.returncode != 0 or not top or Path(top).resolve() != path.resolve():
        return CheckoutInfo(commit=None, tag=None, dirty=False)
    exact = run_git(
        ["describe", "--tags", "--exact-match", "HEAD"], cwd=path, what="", check=False, base=environ
    )
    described = (
        exact
        if exact.returncode == 0
        else run_git(
            ["describe", "--tags", "--always"],
            cwd=path,
            what="",
            check=False,
            base=environ,
        )
    )
    status = run_git(
        ["status", "--porcelain", "--untracked-files=no"], cwd=path, what="", check=False, base=environ
    )
    return CheckoutInfo(
        commit=commit,
        tag=(described.stdout.strip() or None) if described.returncode == 0 else None,
        dirty=bool(status.stdout.strip()),
    )


def _safe_described(tag: str | None) -> str | None:
    """A tag found by ``git describe`` under the rule ``--tag`` obeys: it names files (``rel/v1`` -> ``rel_v1``)."""
    if tag is None or is_safe_tag(tag):
        return tag
    if not any(c.isalnum() for c in tag):
        return None  # nothing to keep: the commit names the bundle instead
    squashed = safe_identity(tag)[:SAFE_TAG_MAX]
    return squashed if is_safe_tag(squashed) else None


def folder_tag(info: CheckoutInfo, explicit: str | None = None) -> str:
    """The bundle tag of a ``--source`` build: ``--tag``, else git's description, else ``local``.

    A tree with uncommitted changes gets ``-dirty``: its bundle cannot be
    reproduced from the commit alone.
    """
    fallback = f"g{info.commit[:7]}" if info.commit else "local"
    base = explicit or _safe_described(info.tag) or fallback
    return f"{base}-dirty" if info.dirty and not explicit else base
