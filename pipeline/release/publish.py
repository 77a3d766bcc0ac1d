"""Carry out a release's upload plan against GitHub: draft, uploads, publish.

Order matters for a resume: the draft first (found again by a rerun, never
created twice), then the bundles, ``SHA256SUMS`` last, and only then the
switch to live. A crash anywhere leaves a draft that the next run completes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import PublishError
from pipeline.release.client import AssetExists, Release, ReleasesClient
from pipeline.release.plan import SUMS_NAME, AssetStep, UploadPlan, plan_uploads


def content_type(name: str) -> str:
    """The Content-Type GitHub stores with the asset (browsers and ``gh`` read it)."""
    if name.endswith((".tar.gz", ".tgz")):
        return "application/gzip"
    if name.endswith(".zip"):
        return "application/zip"
    return "text/plain; charset=utf-8" if name == SUMS_NAME else "application/octet-stream"


@dataclass
class PublishOutcome:
    release: Release | None = None
    created: bool = False
    published: bool = False
    uploaded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def refuse_conflicts(plan: UploadPlan, tag: str) -> None:
    """PublishError naming every asset that differs from the one on the release (before any change)."""
    if plan.conflicts:
        names = "; ".join(f"{s.name} ({s.reason})" for s in plan.conflicts)
        raise PublishError(
            f"release {tag} already holds different assets: {names}; pass --replace to overwrite them"
        )


def _upload(client: ReleasesClient, release: Release, step: AssetStep, outcome: PublishOutcome) -> None:
    try:
        client.upload_asset(release, step.name, Path(step.local.path), content_type(step.name))
    except AssetExists:
        # The upload went through but its answer was lost (or a parallel run was faster):
        # what is there now decides, exactly as on a rerun.
        there = {a.name: a for a in client.list_assets(release)}
        again = plan_uploads([step.local], [there[step.name]] if step.name in there else []).steps[0]
        if again.action == "keep":
            outcome.kept.append(step.name)
            return
        raise PublishError(f"release {release.tag}: {step.name} appeared meanwhile and differs ({again.reason})") from None
    outcome.uploaded.append(step.name)


def refuse_partial_onto_full(release: Release | None, tag: str, partial: tuple[str, ...]) -> None:
    """A partial run never publishes onto the tag's full release (its SHA256SUMS would lose the other legs)."""
    if partial and release is not None and not release.draft and not release.prerelease:
        raise PublishError(
            f"release {tag} is already a full release; this run lacks {', '.join(partial)}: "
            "a partial run does not publish onto it (build every leg, with --replace to overwrite)"
        )


def apply_release(
    client: ReleasesClient,
    *,
    tag: str,
    name: str,
    notes: str,
    release: Release | None,
    plan: UploadPlan,
    partial: tuple[str, ...] = (),
    target_commitish: str | None = None,
    on_step: Callable[[str, str], None] = lambda _action, _name: None,
) -> PublishOutcome:
    """Create the draft if needed, carry out ``plan`` step by step, then publish with ``notes``.

    ``partial``: the matrix's legs the release lacks; it is then a prerelease, never latest. A
    full run on a partial release makes it the tag's full release (a prerelease no more).
    """
    refuse_conflicts(plan, tag)
    refuse_partial_onto_full(release, tag, partial)
    prerelease = bool(partial)
    outcome = PublishOutcome(release=release)
    if release is None:
        release = client.create_draft(tag, name, notes, target_commitish=target_commitish, prerelease=prerelease)
        outcome.created = True
        on_step("created draft", tag)
        if target_commitish and release.target_commitish != target_commitish:
            on_step("tagging the default branch: not in this repository: llama.cpp's commit", target_commitish)
    outcome.release = release
    for step in plan.steps:
        if step.action == "keep":
            outcome.kept.append(step.name)
            continue
        if step.remote is not None and step.action in ("replace", "reupload"):
            client.delete_asset(step.remote.id)
            outcome.deleted.append(step.name)
        _upload(client, release, step, outcome)
        on_step("uploaded", step.name)
    if release.draft:
        outcome.release = client.publish(release, notes, prerelease=prerelease)
        outcome.published = True
        on_step("published as a prerelease (partial)" if prerelease else "published", tag)
    elif release.prerelease != prerelease or outcome.uploaded:
        # A live release whose assets changed (a forced rebuild) gets this run's notes; a partial
        # one completed by a full run becomes the tag's full release, and latest.
        completed = release.prerelease and not prerelease
        outcome.release = client.publish(release, notes, prerelease=prerelease, make_latest=True if completed else None)
        on_step("completed: a full release now" if completed else "updated the notes of", tag)
    return outcome
