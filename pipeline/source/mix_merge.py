"""A mix set on top of the base: each pinned pull request fetched and merged, and the preflight that says, before any build, whether each pin exists, merges and is not upstream yet."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline.errors import SourceError
from pipeline.inputs.matrix import MixPin
from pipeline.inputs.mix import (
    check_pins,
    merge_identity_env,
    merge_message,
)
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.source.git_commands import (
    fetch_base,
    fetch_location,
    git_url,
    last_message,
    local_commit,
    prepare_clone,
    run_git,
)

# --------------------------------------------------------------------------
# Pure helpers


# --------------------------------------------------------------------------
# The resolved source


def _fetch_pin(dest: Path, pin: MixPin, template: str, *, environ: Mapping[str, str]) -> None:
    if local_commit(dest, pin.sha, environ=environ) == pin.sha:
        return
    url = git_url(pin.repo, template)
    first = run_git(
        ["fetch", "--quiet", "--no-tags", url, pin.sha], cwd=dest, what="", check=False, base=environ
    )
    if first.returncode != 0:
        # Some servers only serve advertised refs: try the pull request's head.
        run_git(
            ["fetch", "--quiet", "--no-tags", url, f"refs/pull/{pin.number}/head"],
            cwd=dest,
            what="",
            check=False,
            base=environ,
        )
    if local_commit(dest, pin.sha, environ=environ) != pin.sha:
        raise SourceError(
            f"mix pin {pin.repo}#{pin.number}: commit {pin.sha} not found at {url} ({last_message(first)})"
        )
    # Keep the pinned commit reachable so a later gc in a re-used clone keeps it.
    run_git(
        ["update-ref", f"refs/pipeline/pins/{pin.sha}", pin.sha],
        cwd=dest,
        what="cannot record the pin",
        base=environ,
    )


def _merge_pins(dest: Path, spec: SourceSpec, base_commit: str, *, environ: Mapping[str, str]) -> None:
    base_time = int(
        run_git(
            ["log", "-1", "--no-walk", "--format=%ct", base_commit],
            cwd=dest,
            what="cannot read the base commit",
            base=environ,
        ).stdout
    )
    settings = ("merge.log=false", "rerere.enabled=false", "commit.gpgsign=false", "merge.renormalize=false",
                "core.autocrlf=false", f"core.hooksPath={os.devnull}")  # fmt: skip
    fixed = [arg for setting in settings for arg in ("-c", setting)]
    options = ["--no-ff", "--no-edit", "--no-log", "--no-gpg-sign", "--no-verify", "--no-rerere-autoupdate"]
    for index, pin in enumerate(spec.mix):
        proc = run_git(
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
        conflicts = run_git(
            ["diff", "--name-only", "--diff-filter=U"], cwd=dest, what="", check=False, base=environ
        ).stdout.split()
        run_git(["merge", "--abort"], cwd=dest, what="", check=False, base=environ)
        onto = spec.base_tag + "".join(f" + #{p.number}" for p in spec.mix[:index])
        if conflicts:
            raise SourceError(
                f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}) conflicts with {onto} in: {', '.join(conflicts)}"
            )
        raise SourceError(
            f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}) cannot be merged onto {onto}: {last_message(proc)}"
        )


@dataclass(frozen=True, kw_only=True)
class MixPreflight:
    """The mix as it will be merged, and the pins left out (with why)."""

    spec: SourceSpec
    # (pin, why): pull requests already in the base tag, dropped with a warning.
    dropped: tuple[tuple[MixPin, str], ...] = ()


def _trial_merge(
    dest: Path, onto: str, pin: MixPin, *, environ: Mapping[str, str]
) -> tuple[str | None, list[str]]:
    """(tree of the merge, conflicting paths) of ``pin`` onto ``onto``, in memory: nothing is checked out."""
    proc = run_git(["merge-tree", "--write-tree", "--name-only", "--no-messages", onto, pin.sha], cwd=dest, what="",
                check=False, isolated=True, base=environ)  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode == 0 and lines:
        return lines[0], []
    if proc.returncode == 1 and lines:
        return None, sorted(dict.fromkeys(lines[1:]))
    raise SourceError(f"mix pin {pin.repo}#{pin.number} ({pin.sha[:12]}): trial merge onto {onto[:12]} failed: "
                      f"{last_message(proc)}")  # fmt: skip


def preflight_mix(
    spec: SourceSpec, dest: Path, *, git_url_template: str, environ: Mapping[str, str]
) -> MixPreflight:
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
    prepare_clone(dest, fetch_location(spec.repo), environ=environ)
    base_commit = fetch_base(dest, spec, environ=environ)
    base_tree = run_git(["rev-parse", f"{base_commit}^{{tree}}"], cwd=dest, what="cannot read the tag's tree",
                     base=environ).stdout.strip()  # fmt: skip
    kept: list[MixPin] = []
    dropped: list[tuple[MixPin, str]] = []
    for pin in spec.mix:
        _fetch_pin(dest, pin, git_url_template, environ=environ)
        ancestor = run_git(["merge-base", "--is-ancestor", pin.sha, base_commit], cwd=dest, what="", check=False,
                        base=environ)  # fmt: skip
        if ancestor.returncode == 0:
            dropped.append(
                (pin, f"its commit {pin.sha[:12]} is already in {spec.base_tag} (merged upstream)")
            )
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
