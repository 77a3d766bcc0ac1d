"""The glslc cache of a vulkan leg run: its launcher, where it keeps results, and this run's counts.

The toolchain names glslc to CMake as ``-DVulkan_GLSLC_EXECUTABLE``; a leg
with one gets a launcher in its build folder instead (a later ``-D`` wins),
which runs :mod:`pipeline.ccache.glslc_cache` with this run's settings.

The results live in ``glslc/`` inside the leg's ccache folder: the one folder
the workflow restores and saves with the Actions cache (``cache-key``'s
``ccache-dir``), so a shader compiled one night is a hit the next. ccache
ignores a folder it did not make. Its counts come from a stats file of this
run alone, beside ccache's stats log.

The launcher is a POSIX shell script: a Windows leg compiles its shaders
with glslc itself, uncached.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.ccache import glslc_cache

# The CMake variable ggml-vulkan reads glslc from (FindVulkan's).
GLSLC_VARIABLE = "Vulkan_GLSLC_EXECUTABLE"
CACHE_SUBDIR = "glslc"
STATS_NAME = "glslc-stats.log"
LAUNCHER_DIR = "pipeline-glslc"


@dataclass(frozen=True, kw_only=True)
class GlslcCache:
    """One run's glslc cache: the real glslc, its identity, the cache folder and the launcher."""

    glslc: Path
    identity: str
    cache_dir: Path
    launcher: Path
    stats: Path

    def cmake_args(self) -> list[str]:
        return [f"-D{GLSLC_VARIABLE}={self.launcher.as_posix()}"]

    def read_stats(self) -> dict[str, int]:
        """This run's hits, misses and uncacheable calls (no stats file: no glslc call yet)."""
        try:
            words = self.stats.read_text(encoding="utf-8", errors="replace").split()
        except FileNotFoundError:
            words = []
        return {outcome: words.count(outcome) for outcome in glslc_cache.OUTCOMES}

    def to_record(self) -> dict[str, Any]:
        counts = self.read_stats()
        calls = counts["hit"] + counts["miss"]
        return {
            "glslc": str(self.glslc),
            "identity": self.identity,
            "cache_dir": str(self.cache_dir),
            "hits": counts["hit"],
            "misses": counts["miss"],
            "uncacheable": counts["uncacheable"],
            "hit_rate": counts["hit"] / calls if calls else None,
        }


def glslc_of(cmake_args: Sequence[str]) -> Path | None:
    """The glslc a toolchain names to CMake (the last ``-DVulkan_GLSLC_EXECUTABLE``), if any."""
    found = None
    for arg in cmake_args:
        name, sep, value = arg.partition("=")
        if sep and name.split(":", 1)[0] == f"-D{GLSLC_VARIABLE}":
            found = Path(value)
    return found


def glslc_identity(glslc: Path) -> str:
    """The digest of glslc's binary and of its ``--version`` text (the shaderc, glslang and SPIRV-Tools it
    runs: glslc itself is a small front end over libshaderc)."""
    from pipeline.toolchain.compiler_set import version_output

    digest = hashlib.sha256(glslc.read_bytes())
    digest.update(b"\0" + version_output(glslc).encode("utf-8"))
    return digest.hexdigest()


def launcher_text(python: str, script: Path, config: Path) -> str:
    # -I -S: no site-packages or user paths to import at each of the 1,117 calls of a build; the module needs none.
    return ("#!/bin/sh\n# Written by the pipeline: glslc through the leg's shader cache (pipeline/ccache/glslc_cache.py).\n"
            f"exec {shlex.quote(python)} -I -S {shlex.quote(str(script))} {shlex.quote(str(config))} \"$@\"\n")


def setup_glslc_cache(cmake_args: Sequence[str], *, ccache_dir: Path, base_dir: Path, build: Path,
                      stats_log: Path) -> GlslcCache | None:
    """The run's glslc cache when the toolchain names a glslc (None for other legs and on Windows)."""
    glslc = glslc_of(cmake_args)
    if glslc is None or os.name == "nt" or not glslc.is_file():
        return None
    from pipeline.util.fsutil import atomic_write_text

    stats = stats_log.with_name(STATS_NAME)
    stats.unlink(missing_ok=True)
    cache_dir = ccache_dir / CACHE_SUBDIR
    cache_dir.mkdir(parents=True, exist_ok=True)
    identity = glslc_identity(glslc)
    folder = build / LAUNCHER_DIR
    config = folder / "settings"
    try:
        text = glslc_cache.settings_text({"glslc": str(glslc), "identity": identity, "cache_dir": str(cache_dir),
                                          "base_dir": str(base_dir), "stats": str(stats)})
    except ValueError:
        # A tab or a newline in a folder's name: such a build compiles its shaders uncached.
        return None
    atomic_write_text(config, text)
    launcher = folder / "glslc"
    atomic_write_text(launcher, launcher_text(sys.executable, Path(glslc_cache.__file__).resolve(), config))
    launcher.chmod(0o755)
    return GlslcCache(glslc=glslc, identity=identity, cache_dir=cache_dir, launcher=launcher, stats=stats)
