"""What each step of a leg run hands the next (the source tree, the prepared toolchain, the build plan, the packaged bundle) and what the run returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.ccache.session import CcacheSetup
from pipeline.results.record import LegRecord
from pipeline.toolchain.compiler_set import Toolchain


@dataclass(frozen=True, kw_only=True)
class SourceTree:
    """The tree a leg builds, what the record says of it, and the bundle's tag."""

    path: Path
    info: dict[str, Any]
    tag: str
    # An unpacked archive has no git metadata: git run by the build must not look above it.
    outside_git: bool = False


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """The source step's tree and the toolchain step's compilers."""

    source: SourceTree
    toolchain: Toolchain


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """Everything configure and build need: the tree, the toolchain, ccache and the build folder."""

    source: SourceTree
    toolchain: Toolchain
    ccache: CcacheSetup
    build: Path
    # The toolchain the leg's cache was last filled with (None: a new cache), for the record.
    previous_toolchain: str | None
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
