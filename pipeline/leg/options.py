"""What one leg build is asked to do besides the run's inputs (those are :class:`pipeline.inputs.run_inputs.RunInputs`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.inputs.leg import ShardSpec


@dataclass(frozen=True, kw_only=True)
class LegOptions:
    # The CMake project to build (--source); None: the run's source (its archive, or cloned at its tag).
    source_tree: Path | None = None
    # An existing ROCm install to use instead of downloading one.
    rocm_path: Path | None = None
    # An existing CUDA install / Vulkan SDK instead of matrix.toml's pinned one.
    cuda_path: Path | None = None
    vulkan_sdk: Path | None = None
    # ccache remote storage URL (redis:// or http://); None: matrix.toml's, "" turns it off.
    remote_cache: str | None = None
    # Skip packaging the bundle.
    no_bundle: bool = False
    # Stop after CMake's configure: the toolchain, preflight and flags checked, nothing compiled, no bundle
    # (the record says "configured").
    configure_only: bool = False
    # A warm-up's run (its resolution is the next window's, pipeline/commands/warm_up.py): compile into the
    # leg's ccache, note which run warmed it there, make no bundle (the record says "warmed").
    warm_up: bool = False
    # Run check-bundle on the new bundle (a reproduction compares instead: its original was checked).
    check_bundle: bool = True
    # A shard run (``python -m pipeline shard``): configure as the leg, then compile only this shard's part of
    # its compile steps into the shard's cache; nothing linked or bundled (the record says "sharded").
    shard: ShardSpec | None = None
