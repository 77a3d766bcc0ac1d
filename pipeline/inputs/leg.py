"""One leg of matrix.toml: one bundle to build, the unit of a Nox session, a cache key and a record.

Read and checked by :mod:`pipeline.inputs.matrix` (``[legs.<name>]``); every
other layer takes it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import UsageError
from pipeline.inputs.runners import DEFAULT_MACOS_MIN
from pipeline.names import DEFAULT_ARCH

# The most shard jobs a leg may declare (``shards``): nightly.yml's build job has one restore step per shard
# (tests/integration/test_workflow.py keeps the two equal).
MAX_SHARDS = 3


@dataclass(frozen=True, kw_only=True)
class Leg:
    """One bundle to build: the unit of session, cache key and record."""

    name: str
    backend: str
    os: str
    runner: str
    # The CPU architecture the bundle runs on (names.ARCHES): part of its name, record and matrix entry.
    arch: str = DEFAULT_ARCH
    cmake_args: tuple[str, ...] = ()
    family: str | None = None
    targets: tuple[str, ...] = ()
    cuda_architectures: tuple[str, ...] = ()
    # A cuda leg's CUDA line ("12": [toolchains.cuda-12]; None: [toolchains.cuda]) and the
    # [cuda_profiles.<line>] profile its cuda_architectures came from, if any.
    cuda_line: str | None = None
    cuda_profile: str | None = None
    # matrix.toml's ``bundle_name``: the template of the bundle's file name (pipeline.names); None: upstream's
    # style. The file name itself is pipeline.backends.bundle_file_name's.
    bundle_template: str | None = None
    # The newest GLIBC_x.y a Linux bundle may require (check-bundle); its runner's glibc by default.
    glibc_max: str = "2.35"
    # macOS: the oldest macOS its binaries may ask for (LC_BUILD_VERSION minos, check-bundle).
    macos_min: str = DEFAULT_MACOS_MIN
    # Why the leg is declared but not built (None: it is built): it stays listed, with the reason.
    disabled: str | None = None
    # Another leg (a cpu leg of the same os and arch) whose configuration this leg builds first, in its own job
    # and build folder: its programs and libraries are the bundle's base, and this leg's own configure adds the
    # files of ``build_targets`` on top (Windows arm64 CUDA: ggml-cuda, cross-compiled with MSVC, over the
    # clang-built CPU side that MSVC cannot build).
    base: str | None = None
    # The CMake targets this leg's own build makes (none: all of them).
    build_targets: tuple[str, ...] = ()
    # How many shard jobs compile a cold cache for it beside its own job (docs/caches.md, "Shards for a cold
    # build"); 1: none.
    shards: int = 1

    @property
    def cuda_major(self) -> str | None:
        """The major version of a cuda leg's line ("13" for "13.4"), None when the leg names none."""
        return self.cuda_line.split(".", 1)[0] if self.cuda_line else None

    @property
    def needs_resolution(self) -> bool:
        """ROCm legs need the run's resolved toolchain; the others need nothing."""
        return self.backend == "rocm"


@dataclass(frozen=True, kw_only=True)
class ShardSpec:
    """One shard of a leg: ``index`` (from 1) of ``count``, the leg's ``shards``."""

    index: int
    count: int

    @property
    def label(self) -> str:
        """``1of3``: the shard in cache keys and folder names."""
        return f"{self.index}of{self.count}"


def shard_spec(leg: Leg, index: int, of: int | None = None) -> ShardSpec:
    """Shard ``index`` of ``leg``; a UsageError for a leg without shards, an index out of range, or an ``of``
    that is not the leg's count (a workflow's matrix out of step with matrix.toml)."""
    if leg.shards < 2:
        raise UsageError(
            f"leg {leg.name} has no shards: set shards = N (2 to {MAX_SHARDS}) in its [legs] table"
        )
    if of is not None and of != leg.shards:
        raise UsageError(f"leg {leg.name} has {leg.shards} shards, not {of}")
    if not 1 <= index <= leg.shards:
        raise UsageError(f"shard {index} of leg {leg.name}: expected 1 to {leg.shards}")
    return ShardSpec(index=index, count=leg.shards)


def leg_shards(leg: Leg) -> tuple[ShardSpec, ...]:
    """Every shard of ``leg`` (none when it has no shards)."""
    return (
        tuple(ShardSpec(index=i, count=leg.shards) for i in range(1, leg.shards + 1))
        if leg.shards > 1
        else ()
    )
