"""Per-run options of a leg build, gathered from the CLI and the environment."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class LegOptions:
    # The CMake project to build; None: clone the configured repo at `tag`.
    source: Path | None = None
    # Output folder; the leg works in <out>/<leg>/.
    out: Path = Path("out")
    # Source tag override ("b10327" or "latest"); None: matrix.toml's.
    tag: str | None = None
    # ccache directory; None: $CCACHE_DIR, else a per-leg default.
    cache_dir: Path | None = None
    # ROCm: policy/version override ("weekly", "latest", "10.1.0a20260807").
    rocm_version: str | None = None
    # The run's moment (aware, UTC); None: now.
    now: datetime | None = None
    # ROCm index URL override.
    index_url: str | None = None
    # An existing ROCm install to use instead of downloading one.
    rocm_path: Path | None = None
    # An existing CUDA install / Vulkan SDK instead of matrix.toml's pinned one (issue 17).
    cuda_path: Path | None = None
    vulkan_sdk: Path | None = None
    # The run's resolution: a path or inline JSON ($PIPELINE_RESOLVED).
    resolved: str | None = None
    # ccache remote storage URL (redis:// or http://).
    remote_cache: str | None = None
    # Skip packaging the bundle.
    no_bundle: bool = False
