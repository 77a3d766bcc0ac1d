"""The glslc cache of a vulkan leg run: its launcher, where it keeps results, and this run's counts.

The toolchain names glslc to CMake as ``-DVulkan_GLSLC_EXECUTABLE``; a leg
with one gets a launcher in its build folder instead (a later ``-D`` wins),
``build/pipeline-glslc/glslc``: the compiled client
(:mod:`pipeline.ccache.glslc_client`) that hands each call to the cache server
the build step runs (:mod:`pipeline.ccache.glslc_serving`), with the Python
launcher ``glslc-py`` beside it, which runs :mod:`pipeline.ccache.glslc_cache`
with this run's settings in a process of its own. Without a working C
compiler, CMake gets the Python launcher itself. The folder is this user's
alone (0700): whoever can reach the server's socket can have it write files.

The results live in ``glslc/`` inside the leg's ccache folder: the one folder
the workflow restores and saves with the Actions cache (``cache-key``'s
``ccache-dir``), so a shader compiled one night is a hit the next. ccache
ignores a folder it did not make. Its counts come from a stats file of this
run alone, beside ccache's stats log.

Both launchers are POSIX programs: a Windows leg compiles its shaders with
glslc itself, uncached.
"""

from __future__ import annotations

import dataclasses
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
FALLBACK_NAME = "glslc-py"  # glslc_client.c runs it by this name, beside itself
SOCKET_NAME = "server.sock"  # and connects to this one


@dataclass(frozen=True, kw_only=True)
class GlslcCache:
    """One run's glslc cache: the real glslc, its identity, the cache folder and the launcher.

    ``launcher`` is what CMake runs: the compiled client, or ``fallback`` (the Python launcher) when none
    could be built (``client_problem`` says why); ``socket`` is where the client looks for the server (None:
    no client, no server to start); ``settings`` is the file both launchers and the server read.
    """

    glslc: Path
    identity: str
    cache_dir: Path
    launcher: Path
    stats: Path
    settings: Path
    fallback: Path
    socket: Path | None = None
    client_problem: str | None = None

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
            # Stored results that failed their digest check: each was compiled again (and is among the misses).
            "corrupt": counts["corrupt"],
            "hit_rate": counts["hit"] / calls if calls else None,
        }


def cmake_path(cmake_args: Sequence[str], variable: str) -> Path | None:
    """The path the last ``-D<variable>[:TYPE]=...`` of ``cmake_args`` gives, if any."""
    found = None
    for arg in cmake_args:
        name, sep, value = arg.partition("=")
        if sep and name.split(":", 1)[0] == f"-D{variable}":
            found = Path(value)
    return found


def glslc_of(cmake_args: Sequence[str]) -> Path | None:
    """The glslc a toolchain names to CMake (the last ``-DVulkan_GLSLC_EXECUTABLE``), if any."""
    return cmake_path(cmake_args, GLSLC_VARIABLE)


def glslc_identity(glslc: Path) -> str:
    """The digest of glslc's binary and of its ``--version`` text (the shaderc, glslang and SPIRV-Tools it
    runs: glslc itself is a small front end over libshaderc)."""
    from pipeline.toolchain.toolchain import version_output

    digest = hashlib.sha256(glslc.read_bytes())
    digest.update(b"\0" + version_output(glslc).encode("utf-8"))
    return digest.hexdigest()


def launcher_text(python: str, script: Path, config: Path) -> str:
    # -I -S: no site-packages or user paths to import at each of the 1,117 calls of a build; the module needs none.
    return (
        "#!/bin/sh\n# Written by the pipeline: glslc through the leg's shader cache (pipeline/ccache/glslc_cache.py).\n"
        f'exec {shlex.quote(python)} -I -S {shlex.quote(str(script))} {shlex.quote(str(config))} "$@"\n'
    )


def setup_glslc_cache(
    cmake_args: Sequence[str], *, ccache_dir: Path, base_dir: Path, build: Path, stats_log: Path
) -> GlslcCache | None:
    """The run's glslc cache when the toolchain names a glslc (None for other legs and on Windows).

    The compiled launcher is built with the toolchain's C compiler (``-DCMAKE_C_COMPILER``); a toolchain
    that names none (a cross toolchain file) keeps the Python launcher.
    """
    glslc = glslc_of(cmake_args)
    if glslc is None or os.name == "nt" or not glslc.is_file():
        return None
    from pipeline.ccache.glslc_client import client_program
    from pipeline.util.fsutil import atomic_write_bytes, atomic_write_text

    stats = stats_log.with_name(STATS_NAME)
    stats.unlink(missing_ok=True)
    cache_dir = ccache_dir / CACHE_SUBDIR
    cache_dir.mkdir(parents=True, exist_ok=True)
    identity = glslc_identity(glslc)
    folder = build / LAUNCHER_DIR
    config = folder / "settings"
    try:
        text = glslc_cache.settings_text(
            {
                "glslc": str(glslc),
                "identity": identity,
                "cache_dir": str(cache_dir),
                "base_dir": str(base_dir),
                "stats": str(stats),
            }
        )
    except ValueError:
        # A tab or a newline in a folder's name: such a build compiles its shaders uncached.
        return None
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    atomic_write_text(config, text)
    fallback = folder / FALLBACK_NAME
    atomic_write_text(fallback, launcher_text(sys.executable, Path(glslc_cache.__file__).resolve(), config))
    fallback.chmod(0o755)
    client = client_program(cmake_path(cmake_args, "CMAKE_C_COMPILER"), cache_dir)
    cache = GlslcCache(
        glslc=glslc,
        identity=identity,
        cache_dir=cache_dir,
        launcher=fallback,
        stats=stats,
        settings=config,
        fallback=fallback,
        client_problem=client.problem,
    )
    if client.program is None:
        return cache
    launcher = folder / "glslc"
    atomic_write_bytes(launcher, client.program.read_bytes())
    launcher.chmod(0o755)
    return dataclasses.replace(cache, launcher=launcher, socket=folder / SOCKET_NAME)
