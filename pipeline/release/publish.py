"""Carry out a release's upload plan against GitHub: draft, uploads, publish.

Order matters for a resume: the draft first (found again by a rerun, never
created twice), then the bundles, ``SHA256SUMS`` last, and only then the
switch to live. A crash anywhere leaves a draft that the next run completes.

A live release is never taken down to be replaced. Every new byte goes up
first, under a staged name, and is checked (size and sha256 as GitHub reports
them, or read back); only then do names change, by renames: each replaced
asset steps aside and its new copy takes the name. ``SHA256SUMS`` is swapped
first for an interim one naming only the assets that stay as they are, so at
no moment does it name a bundle with the other bytes' hash, and last for the
new one. The notes follow; the previous copies are deleted at the very end.
A failure before the notes are in rolls the renames back and deletes what
this run staged: the release is as it was. What a rerun still owes is read
from the release itself (staged and previous copies, its notes and kind),
never from what the run uploaded.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipeline.errors import PipelineError, PublishError
from pipeline.release.plan import (
    STAGED_MARK,
    SUMS_NAME,
    AssetStep,
    RemoteAsset,
    UploadPlan,
    retired_name,
    sha256sums_text,
    staged_name,
)
from pipeline.release.releases_client import AssetExists, Release, ReleasesClient


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


def with_digests(client: ReleasesClient, assets: list[RemoteAsset]) -> list[RemoteAsset]:
    """``assets`` with the sha256 of each complete one the server gave no digest for, read back.

    Without it only sizes could be compared, and a rebuilt bundle or SHA256SUMS of the same size
    would be taken for the one on the release.
    """
    return [replace(a, sha256=client.asset_sha256(a.id)) if a.sha256 is None and a.state == "uploaded" else a
            for a in assets]  # fmt: skip


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
        release = client.create_draft(
            tag, name, notes, target_commitish=target_commitish, prerelease=prerelease
        )
        outcome.created = True
        on_step("created draft", tag)
        if target_commitish and release.target_commitish != target_commitish:
            on_step(
                "tagging the default branch: not in this repository: llama.cpp's commit", target_commitish
            )
    outcome.release = release
    for junk in plan.leftovers:
        client.delete_asset(junk.id)
        on_step("removed the leftover", junk.name)
    swap = _Swap(client, release, on_step, outcome)
    steps = [s for s in plan.steps if s.action != "keep"]
    outcome.kept = [s.name for s in plan.steps if s.action == "keep"]
    # A draft is nobody's download yet: a name it lacks is uploaded under that name directly.
    direct = [s for s in steps if release.draft and s.remote is None and s.staged is None]
    staged = [s for s in steps if s not in direct]
    for step in direct:
        swap.upload_direct(step)
    try:
        copies = [(step, swap.stage(step)) for step in staged]
        swap.put_in_place(copies, _interim_sums(plan, staged, live=not release.draft))
        outcome.release = _finish(client, release, notes, prerelease, outcome, on_step)
    except PipelineError:
        if not release.draft:
            swap.roll_back()
        raise
    for old in [*swap.aside, *plan.retired]:
        client.delete_asset(old.id)
        outcome.deleted.append(old.name)
    return outcome


def _interim_sums(plan: UploadPlan, staged: list[AssetStep], *, live: bool) -> str | None:
    """The SHA256SUMS a live release holds while its bundles are swapped, or None when none is needed.

    Needed when a name that stays on the release gets new bytes: the old SHA256SUMS would name it
    with the old hash. The interim one names only the assets this run keeps as they are.
    """
    if not live or not any(s.remote is not None and s.name != SUMS_NAME for s in staged):
        return None
    if not any(s.name == SUMS_NAME and s.remote is not None for s in staged):
        return None
    return sha256sums_text(
        [(s.name, s.local.sha256) for s in plan.steps if s.action == "keep" and s.name != SUMS_NAME]
    )


def _finish(
    client: ReleasesClient,
    release: Release,
    notes: str,
    prerelease: bool,
    outcome: PublishOutcome,
    on_step: Callable[[str, str], None],
) -> Release:
    """Publish the draft, or bring a live release's notes and kind to this run's (when they differ)."""
    if release.draft:
        published = client.publish(release, notes, prerelease=prerelease)
        outcome.published = True
        on_step("published as a prerelease (partial)" if prerelease else "published", release.tag)
        return published
    # What is owed is what differs on the release now: an earlier run's notes update that failed is
    # made up here, even when every asset is already in place.
    if release.prerelease == prerelease and release.body == notes:
        return release
    completed = release.prerelease and not prerelease
    updated = client.publish(release, notes, prerelease=prerelease, make_latest=True if completed else None)
    on_step("completed: a full release now" if completed else "updated the notes of", release.tag)
    return updated


class _Swap:
    """The staged uploads and the renames of one run, and how to undo the renames."""

    def __init__(self, client: ReleasesClient, release: Release, on_step: Callable[[str, str], None],
                 outcome: PublishOutcome) -> None:  # fmt: skip
        self.client, self.release, self.on_step, self.outcome = client, release, on_step, outcome
        # (asset id, its name before, after) for each rename done, in order.
        self.renames: list[tuple[int, str, str]] = []
        # Copies this run uploaded under a staged name (deleted again on a roll-back).
        self.uploaded: list[RemoteAsset] = []
        # Replaced copies, set aside under their previous names: deleted once the release is new.
        self.aside: list[RemoteAsset] = []

    def _send(self, name: str, path: Path, sha256: str, size: int) -> tuple[RemoteAsset, bool]:
        """The checked asset ``name`` with these bytes, and whether it was there already."""
        try:
            copy = self.client.upload_asset(
                self.release, name, path, content_type(name.partition(STAGED_MARK)[0])
            )
        except AssetExists:
            # The upload went through but its answer was lost (or a parallel run was faster):
            # what is there now decides, exactly as on a rerun.
            there = [a for a in self.client.list_assets(self.release) if a.name == name]
            if not there:
                raise
            if not self._same(there[0], sha256, size):
                raise PublishError(
                    f"release {self.release.tag}: {name} appeared meanwhile and differs"
                ) from None
            return there[0], True
        if not self._same(copy, sha256, size):
            # Only this run's own upload is removed: the live names are untouched.
            self.client.delete_asset(copy.id)
            raise PublishError(
                f"release {self.release.tag}: {name} arrived as {copy.size} bytes in state {copy.state!r}, "
                f"not the {size} bytes with sha256 {sha256[:12]}... sent: removed it; nothing replaced"
            )
        return copy, False

    def _same(self, copy: RemoteAsset, sha256: str, size: int) -> bool:
        """Does GitHub hold exactly these bytes (its reported size and digest, else read back)?"""
        if copy.state != "uploaded" or copy.size != size:
            return False
        return (copy.sha256 or self.client.asset_sha256(copy.id)) == sha256

    def upload_direct(self, step: AssetStep) -> None:
        _copy, existed = self._send(step.name, Path(step.local.path), step.local.sha256, step.local.size)
        (self.outcome.kept if existed else self.outcome.uploaded).append(step.name)
        self.on_step("kept" if existed else "uploaded", step.name)

    def stage(self, step: AssetStep) -> RemoteAsset:
        """The checked staged copy of ``step``'s bytes: the one already there, or uploaded now."""
        if step.staged is not None:
            self.on_step("found staged", step.staged.name)
            return step.staged
        copy, _existed = self._send(staged_name(step.name, step.local.sha256), Path(step.local.path),
                                    step.local.sha256, step.local.size)  # fmt: skip
        self.uploaded.append(copy)
        self.outcome.uploaded.append(step.name)
        self.on_step("uploaded and checked", copy.name)
        return copy

    def _rename(self, asset: RemoteAsset, name: str) -> None:
        self.client.rename_asset(asset.id, name)
        self.renames.append((asset.id, asset.name, name))

    def _take_name(self, name: str, old: RemoteAsset | None, new: RemoteAsset) -> None:
        if old is not None:
            self._rename(old, retired_name(name, old.id))
            self.aside.append(old)
        self._rename(new, name)
        self.on_step("replaced" if old is not None else "added", name)

    def put_in_place(self, copies: list[tuple[AssetStep, RemoteAsset]], interim: str | None) -> None:
        """Give each staged copy its name, SHA256SUMS last (through ``interim`` first when given)."""
        sums = [(step, copy) for step, copy in copies if step.name == SUMS_NAME]
        current = sums[0][0].remote if sums else None
        if interim is not None:
            with tempfile.TemporaryDirectory(prefix="sums-") as tmp:
                path = Path(tmp) / SUMS_NAME
                path.write_text(interim)
                data = interim.encode()
                sha256 = hashlib.sha256(data).hexdigest()
                held, _existed = self._send(staged_name(SUMS_NAME, sha256), path, sha256, len(data))
            self.uploaded.append(held)
            self._take_name(SUMS_NAME, current, held)
            current = held
        for step, copy in copies:
            if step.name != SUMS_NAME:
                self._take_name(step.name, step.remote, copy)
        for _step, copy in sums:
            self._take_name(SUMS_NAME, current, copy)

    def roll_back(self) -> None:
        """Undo the renames, newest first, and delete what this run staged (best effort: a rerun completes it)."""
        try:
            for asset_id, before, _after in reversed(self.renames):
                self.client.rename_asset(asset_id, before)
            for copy in self.uploaded:
                self.client.delete_asset(copy.id)
        except PipelineError as err:
            self.on_step("could not roll back (a rerun completes the release)", err.message)
            return
        if self.renames or self.uploaded:
            self.on_step("rolled back: the release is as it was", self.release.tag)
