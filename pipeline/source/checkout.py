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

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipeline.errors import ResolutionError, SourceError
from pipeline.inputs.matrix import MixPin, SourceConfig
from pipeline.inputs.mix import (
    check_pins,
    merge_identity_env,
    merge_message,
)
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.names import BUILD_TAG, SAFE_TAG_MAX, is_safe_tag, safe_identity
from pipeline.processes.groups import run_child

_PEELED = "^{}"
# Candidate tags whose dates are read per fetch: 1, 2, 4, ... up to this many.
_MAX_DATE_BATCH = 64


# --------------------------------------------------------------------------
# Pure helpers


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


def git_url(repo: str, template: str) -> str:
    """The fetch URL of a pin's ``owner/name`` repo."""
    if "{repo}" not in template:
        raise SourceError(f"git URL template {template!r} has no '{{repo}}' placeholder")
    return template.replace("{repo}", repo)


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


def _git_env(base: Mapping[str, str], extra: Mapping[str, str] | None = None, *, isolated: bool = False) -> dict[str, str]:
    env = dict(base)
    # A private or missing repository must fail, not wait for a password.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    # Every call names its repository by cwd; an inherited GIT_DIR would override it.
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
        env.pop(key, None)
    if isolated:
        # The merge commits must not depend on ~/.gitconfig or /etc/gitconfig
        # (merge.log, rerere, signing, a user identity...).
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_CONFIG_GLOBAL"] = os.devnull
        for key in [k for k in env if k.startswith("GIT_CONFIG_") and k not in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL")]:
            del env[key]
    if extra:
        env.update(extra)
    return env


def _git(
    args: Sequence[str],
    *,
    base: Mapping[str, str],
    cwd: Path | None = None,
    what: str,
    env: Mapping[str, str] | None = None,
    isolated: bool = False,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``git args``; on failure raise SourceError naming ``what`` and git's last message."""
    try:
        proc = run_child(
            ["git", *args],
            cwd=cwd,
            env=_git_env(base, env, isolated=isolated),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise SourceError("git not found on PATH: install git") from None
    if check and proc.returncode != 0:
        raise SourceError(f"{what}: {_last_message(proc)}")
    return proc


def _last_message(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (fatal or lines or [f"git exited with {proc.returncode}"])[-1]


def _fetch_location(repo: str) -> str:
    """A URL git can fetch from any working directory (relative local paths made absolute)."""
    if "://" in repo or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        return repo
    path = Path(repo)
    return str(path.resolve()) if path.exists() else repo


def ls_remote_tags(repo: str, *, environ: Mapping[str, str]) -> dict[str, str]:
    """Tag name -> commit SHA of ``repo`` (a git URL or a local path)."""
    proc = _git(["ls-remote", "--tags", _fetch_location(repo)], what=f"cannot list the tags of {repo}", base=environ)
    return parse_ls_remote_tags(proc.stdout)


def _tag_times(scratch: Path, repo: str, names: Sequence[str], *, environ: Mapping[str, str]) -> dict[str, datetime]:
    """Fetch ``names`` (commits and tag objects only) into ``scratch`` and read their dates."""
    refspecs = [f"+refs/tags/{n}:refs/tags/{n}" for n in names]
    _git(
        ["fetch", "--quiet", "--no-tags", "--depth=1", "--filter=tree:0", "origin", *refspecs],
        cwd=scratch,
        what=f"cannot fetch tags {', '.join(names)} from {repo}",
        base=environ,
    )
    out = _git(
        ["for-each-ref", "--format=%(refname:lstrip=2) %(creatordate:unix)", *[f"refs/tags/{n}" for n in names]],
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
    _git(["init", "--quiet", "--bare", str(scratch)], what="cannot create a scratch repository", base=environ)
    for key, value in (
        ("remote.origin.url", _fetch_location(repo)),
        ("remote.origin.promisor", "true"),
        ("remote.origin.partialclonefilter", "tree:0"),
        ("extensions.partialclone", "origin"),
        ("core.repositoryformatversion", "1"),
    ):
        _git(["config", key, value], cwd=scratch, what="cannot configure the scratch repository", base=environ)


def latest_tag(repo: str, tags: Mapping[str, str], *, now: datetime, min_age_hours: float, environ: Mapping[str, str]) -> tuple[str, datetime]:
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
        _git(["ls-remote", url, "HEAD"], what=f"mix pin repo {repo} not found at {url}", base=environ)
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


def _prepare_clone(dest: Path, url: str, *, environ: Mapping[str, str]) -> None:
    """Make ``dest`` a git repository whose origin is ``url`` (re-using one that already is)."""
    if (dest / ".git").exists():
        current = _git(["config", "--get", "remote.origin.url"], cwd=dest, what="", check=False, base=environ).stdout.strip()
        if current != url:
            raise SourceError(f"{dest}: already a clone of {current or 'an unknown repository'}, not of {url}")
        return
    if dest.exists() and any(dest.iterdir()):
        raise SourceError(f"{dest}: exists and is not a git clone; choose an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    _git(["init", "--quiet", str(dest)], what=f"cannot create a repository in {dest}", base=environ)
    _git(["remote", "add", "origin", url], cwd=dest, what=f"cannot add origin to {dest}", base=environ)
    # Same bytes in the tree on every OS: no line-ending conversion.
    _git(["config", "core.autocrlf", "false"], cwd=dest, what=f"cannot configure {dest}", base=environ)


def _local_commit(dest: Path, rev: str, *, environ: Mapping[str, str]) -> str | None:
    proc = _git(["rev-parse", "-q", "--verify", f"{rev}^{{commit}}"], cwd=dest, what="", check=False, base=environ)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _fetch_base(dest: Path, spec: SourceSpec, *, environ: Mapping[str, str]) -> str:
    ref = f"refs/tags/{spec.base_tag}"
    have = _local_commit(dest, ref, environ=environ)
    shallow = _git(["rev-parse", "--is-shallow-repository"], cwd=dest, what="", base=environ).stdout.strip() == "true"
    # Merging needs the true merge base, so a mix needs the full history; a
    # plain tag build needs only its commit. The history comes blobless
    # (a partial clone): commits and trees only, and checkout and merge fetch
    # the blobs they touch from origin (a server without filters sends all).
    up_to_date = have is not None and (spec.base_commit in (None, have)) and not (spec.mix and shallow)
    if not up_to_date:
        blobless = ["--filter=blob:none"] if spec.mix else []
        depth = ["--unshallow", *blobless] if spec.mix and shallow else blobless if spec.mix else ["--depth=1"]
        _git(
            ["fetch", "--quiet", "--no-tags", *depth, "origin", f"+{ref}:{ref}"],
            cwd=dest,
            what=f"cannot fetch tag {spec.base_tag} from {spec.repo}",
            base=environ,
        )
        have = _local_commit(dest, ref, environ=environ)
    if have is None:
        raise SourceError(f"tag {spec.base_tag} of {spec.repo} is not a commit")
    if spec.base_commit is not None and have != spec.base_commit:
        raise SourceError(
            f"tag {spec.base_tag} of {spec.repo} moved: it points at {have[:12]}, the run resolved {spec.base_commit[:12]}"
        )
    return have


def _fetch_pin(dest: Path, pin: MixPin, template: str, *, environ: Mapping[str, str]) -> None:
    if _local_commit(dest, pin.sha, environ=environ) == pin.sha:
        return
    url = git_url(pin.repo, template)
    first = _git(["fetch", "--quiet", "--no-tags", url, pin.sha], cwd=dest, what="", check=False, base=environ)
    if first.returncode != 0:
        # Some servers only serve advertised refs: try the pull request's head.
        _git(
            ["fetch", "--quiet", "--no-tags", url, f"refs/pull/{pin.number}/head"],
            cwd=dest,
            what="",
            check=False,
            base=environ,
        )
    if _local_commit(dest, pin.sha, environ=environ) != pin.sha:
        raise SourceError(
            f"mix pin {pin.repo}#{pin.number}: commit {pin.sha} not found at {url} ({_last_message(first)})"
        )
    # Keep the pinned commit reachable so a later gc in a re-used clone keeps it.
    _git(["update-ref", f"refs/pipeline/pins/{pin.sha}", pin.sha], cwd=dest, what="cannot record the pin", base=environ)


def _merge_pins(dest: Path, spec: SourceSpec, base_commit: str, *, environ: Mapping[str, str]) -> None:
    base_time = int(_git(["log", "-1", "--no-walk", "--format=%ct", base_commit], cwd=dest, what="cannot read the base commit", base=environ).stdout)
    settings = ("merge.log=false", "rerere.enabled=false", "commit.gpgsign=false", "merge.renormalize=false",
                "core.autocrlf=false", f"core.hooksPath={os.devnull}")  # fmt: skip
    fixed = [arg for setting in settings for arg in ("-c", setting)]
    options = ["--no-ff", "--no-edit", "--no-log", "--no-gpg-sign", "--no-verify", "--no-rerere-autoupdate"]
    for index, pin in enumerate(spec.mix):
        proc = _git(
            [*fixed, "merge", *options, "-m", merge_message(pin, spec.base_tag), pin.sha],
            cwd=dest,
            what="",
            env=merge_identity_env(base_time, index),
            isolated=True,
            check=False,
            base=environ,
        )
        if proc.returncode == 0:
            continue
        conflicts = _git(["diff", "--name-only", "--diff-filter=U"], cwd=dest, what="", check=False, base=environ).stdout.split()
        _git(["merge", "--abort"], cwd=dest, what="", check=False, base=environ)
        onto = spec.base_tag + "".join(f" + #{p.number}" for p in spec.mix[:index])
        if conflicts:
            raise SourceError(
                f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}) conflicts with {onto} in: {', '.join(conflicts)}"
            )
        raise SourceError(f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}) cannot be merged onto {onto}: {_last_message(proc)}")


@dataclass(frozen=True, kw_only=True)
class MixPreflight:
    """The mix as it will be merged, and the pins left out (with why)."""

    spec: SourceSpec
    # (pin, why): pull requests already in the base tag, dropped with a warning.
    dropped: tuple[tuple[MixPin, str], ...] = ()


def _trial_merge(dest: Path, onto: str, pin: MixPin, *, environ: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """(tree of the merge, conflicting paths) of ``pin`` onto ``onto``, in memory: nothing is checked out."""
    proc = _git(["merge-tree", "--write-tree", "--name-only", "--no-messages", onto, pin.sha], cwd=dest, what="",
                check=False, isolated=True, base=environ)  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode == 0 and lines:
        return lines[0], []
    if proc.returncode == 1 and lines:
        return None, sorted(dict.fromkeys(lines[1:]))
    raise SourceError(f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}): trial merge onto {onto[:12]} failed: "
                      f"{_last_message(proc)}")  # fmt: skip


def preflight_mix(spec: SourceSpec, dest: Path, *, git_url_template: str, environ: Mapping[str, str]) -> MixPreflight:
    """Check each mix pin before the merge: its commit exists, it merges onto the tag, it is not upstream yet.

    Every pin is fetched into the clone at ``dest`` (SourceError naming the
    pull request when its commit is gone) and merged onto the base tag in
    memory (``git merge-tree``). A pull request whose commit the tag already
    holds, or whose merge changes nothing (squash-merged upstream), is
    dropped: the returned spec leaves it out. A conflict is one SourceError
    naming the pull request and the conflicting paths.
    """
    if not spec.mix:
        return MixPreflight(spec=spec)
    check_pins(spec.mix, "source.mix")
    dest = dest.resolve()
    _prepare_clone(dest, _fetch_location(spec.repo), environ=environ)
    base_commit = _fetch_base(dest, spec, environ=environ)
    base_tree = _git(["rev-parse", f"{base_commit}^{{tree}}"], cwd=dest, what="cannot read the tag's tree",
                     base=environ).stdout.strip()  # fmt: skip
    kept: list[MixPin] = []
    dropped: list[tuple[MixPin, str]] = []
    for pin in spec.mix:
        _fetch_pin(dest, pin, git_url_template, environ=environ)
        ancestor = _git(["merge-base", "--is-ancestor", pin.sha, base_commit], cwd=dest, what="", check=False,
                        base=environ)  # fmt: skip
        if ancestor.returncode == 0:
            dropped.append((pin, f"its commit {pin.sha[:12]} is already in {spec.base_tag} (merged upstream)"))
            continue
        tree, conflicts = _trial_merge(dest, base_commit, pin, environ=environ)
        if conflicts:
            raise SourceError(f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}) does not merge onto {spec.base_tag}: "
                              f"conflicts in {', '.join(conflicts)}")  # fmt: skip
        if tree == base_tree:
            dropped.append((pin, f"merging it onto {spec.base_tag} changes nothing (merged upstream)"))
            continue
        kept.append(pin)
    if not dropped:
        return MixPreflight(spec=spec)
    reduced = replace(spec, mix=tuple(kept), commit=None if kept else spec.base_commit)
    return MixPreflight(spec=reduced, dropped=tuple(dropped))


def checkout_source(spec: SourceSpec, dest: Path, *, git_url_template: str, environ: Mapping[str, str]) -> str:
    """Make ``dest`` a clean working tree at ``spec``'s deterministic commit; return its SHA.

    ``dest`` belongs to the pipeline: an existing clone of the same repository
    is re-used (fetching only what is missing), then forcibly checked out and
    cleaned of untracked and ignored files, so nothing stale leaks into a build.
    """
    template = git_url_template
    check_pins(spec.mix, "source.mix")
    dest = dest.resolve()
    _prepare_clone(dest, _fetch_location(spec.repo), environ=environ)
    base_commit = _fetch_base(dest, spec, environ=environ)
    for pin in spec.mix:
        _fetch_pin(dest, pin, template, environ=environ)
    _git(["checkout", "--quiet", "--force", "--detach", base_commit], cwd=dest, what=f"cannot check out {spec.base_tag}", base=environ)
    _git(["clean", "--quiet", "-ffdx"], cwd=dest, what=f"cannot clean {dest}", base=environ)
    _merge_pins(dest, spec, base_commit, environ=environ)
    head = _git(["rev-parse", "HEAD"], cwd=dest, what="cannot read HEAD", base=environ).stdout.strip()
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
    head = _git(["rev-parse", "HEAD"], cwd=path, what="", check=False, base=environ)
    if head.returncode != 0:
        return CheckoutInfo(commit=None, tag=None, dirty=False)
    top = _git(["rev-parse", "--show-toplevel"], cwd=path, what="", check=False, base=environ)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != path.resolve():
        return CheckoutInfo(commit=None, tag=None, dirty=False)
    exact = _git(["describe", "--tags", "--exact-match", "HEAD"], cwd=path, what="", check=False, base=environ)
    described = exact if exact.returncode == 0 else _git(
        ["describe", "--tags", "--always"], cwd=path, what="", check=False,
        base=environ,
    )
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd=path, what="", check=False, base=environ)
    return CheckoutInfo(
        commit=head.stdout.strip(),
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
