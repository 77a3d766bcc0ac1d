"""What each step of a leg run hands the next (the source tree, the prepared toolchain, the build plan, the packaged bundle) and what the run returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.ccache.session import CcacheSetup
from pipeline.inputs.leg import Leg
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain


@dataclass(frozen=True, kw_only=True)
class SourceTree:
    """The tree a leg builds, what the record says of it, and the bundle's tag."""

    path: Path
    info: dict[str, Any]
    tag: str
    # An unpacked archive has no git metadata: git run by the build must not look above it.
    outside_git: bool = False


@dataclass(frozen=True, kw_only=True)
class BaseBuild:
    """The configuration of a leg's ``base`` (another leg), built first in this leg's job: that leg, its toolchain,
    and its build folder (None until the ccache step makes it)."""

    leg: Leg
    toolchain: Toolchain
    build: Path | None = None


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """The source step's tree and the toolchain step's compilers (and the base's, for a leg with a ``base``)."""

    source: SourceTree
    toolchain: Toolchain
    base: BaseBuild | None = None


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """Everything configure and build need: the tree, the toolchain, ccache and the build folder."""

    source: SourceTree
    toolchain: Toolchain
    ccache: CcacheSetup
    build: Path
    # The toolchain the leg's cache was last filled with (None: a new cache), for the record.
    previous_toolchain: str | None
    # The warm-up that filled the restored cache for this toolchain (its note, pipeline.ccache.session), if any.
    warmed_by: dict[str, Any] | None = None
    # A leg with a ``base``: that configuration, built first into its own folder.
    base: BaseBuild | None = None
    # The files the leg's ``build_targets`` made (set by the build step), relative to ``build``.
    made: tuple[str, ...] = ()
    # What Ninja is asked for beyond ``-C <build>`` (none: the whole plan; a shard run's own Ninja file and target).
    ninja_args: tuple[str, ...] = ()
    # A shard run's part of the leg (pipeline.leg.shard_step), and what merging the shards' caches into the leg's
    # did (pipeline.ccache.shard_caches.ShardMerge): both for the record's ccache.
    shard: dict[str, Any] | None = None
    shards_merged: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Packaged:
    """The build step's plan and the bundle it was packaged into (None with ``--no-bundle``, or when the bundle
    is left staged for the workflow's signing step: ``staged``)."""

    plan: BuildPlan
    bundle: Path | None
    staged: bool = False


@dataclass(frozen=True, kw_only=True)
class LegRun:
    """What one leg run made."""

    toolchain: Toolchain
    build_dir: Path
    record: LegRecord
    bundle: Path | None
