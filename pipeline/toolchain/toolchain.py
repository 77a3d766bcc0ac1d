"""What compiles a leg: compilers, environment, CMake arguments, identity.

Every backend provides a :class:`Toolchain`. Its ``identity`` is the short,
cache-key-safe string that changes whenever the compiler that fills the cache
changes (ccache hashes the compiler into every entry, so a key without it
restores caches that can never hit).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import ToolchainError
from pipeline.inputs.leg import Leg
from pipeline.inputs.pins import ToolchainPins
from pipeline.processes.groups import run_child
from pipeline.util.http_retry import DEFAULT_RETRY, RetryPolicy

if TYPE_CHECKING:
    from pipeline.inputs.resolution_file import ResolvedRocm

__all__ = ["Toolchain", "ToolchainRequest", "version_output"]


def version_output(tool: Path) -> str:
    """What ``tool --version`` prints; a ToolchainError naming the tool when it cannot run."""
    try:
        return str(
            run_child([str(tool), "--version"], capture_output=True, text=True, check=True, timeout=60).stdout
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{tool}: cannot run '--version': {exc}") from None


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """The resolved toolchain of one leg run."""

    # e.g. "gcc", "rocm", "cuda", "vulkan"
    kind: str
    # Short and cache-key safe, e.g. "gcc-12.2.0", "rocm-10.1.0a20260807".
    identity: str
    # Language -> "name version (path)", e.g. {"CXX": "g++ 12.2.0"}.
    compilers: dict[str, str] = field(default_factory=dict)
    # Versions and provenance, e.g. {"version": ..., "url": ..., "sha256": ...}.
    details: dict[str, str] = field(default_factory=dict)
    # Added to the environment of CMake and Ninja.
    env: dict[str, str] = field(default_factory=dict)
    # Added to the CMake configure line (compilers, targets, extra launchers).
    cmake_args: tuple[str, ...] = ()
    # Languages besides C and C++ that get ccache as their launcher (HIP, CUDA).
    launcher_languages: tuple[str, ...] = ()
    # Whether its compilers take GCC's and Clang's -ffile-prefix-map (pipeline.toolchain.prefixmap); MSVC's cl,
    # also as nvcc's host compiler, does not.
    prefix_map: bool = True

    def to_record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "identity": self.identity,
            "compilers": dict(sorted(self.compilers.items())),
            "details": dict(sorted(self.details.items())),
        }


@dataclass(frozen=True, kw_only=True)
class ToolchainRequest:
    """What a profile needs to find or install one leg's toolchain."""

    leg: Leg
    # The environment of the run (compilers and SDKs are found through it).
    environ: Mapping[str, str]
    # A ROCm leg's build, resolved by the run (None for other backends, or with rocm_path).
    rocm: ResolvedRocm | None = None
    # An existing ROCm install to use instead of downloading one, and the version asked for.
    rocm_path: Path | None = None
    rocm_version: str | None = None
    # An existing CUDA install / Vulkan SDK instead of matrix.toml's pinned one.
    cuda_path: Path | None = None
    vulkan_sdk: Path | None = None
    # matrix.toml's [toolchains] pins (CUDA wheels, SDK archives); None: use what the system has.
    pins: ToolchainPins | None = None
    download_cache: Path
    toolchain_dir: Path
    # How every download retries: PIPELINE_HTTP_BACKOFF's first wait, PIPELINE_HTTP_RETRY_BUDGET's cap.
    retry: RetryPolicy = DEFAULT_RETRY
    # Seconds to wait for another run installing the same toolchain (0: fail at once).
    wait_lock: float = 0.0
    # This run's start, written beside a lock this run holds.
    started: datetime | None = None
