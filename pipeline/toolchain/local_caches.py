"""The local caches that only grow, kept bounded: downloads, installed toolchains, the packaging cache.

Every night may bring a new TheRock build (a download of a few GB and an
install several times that) and new bundle members for the packaging cache;
nothing removes the old ones. ``python -m pipeline prune --local`` plans
(dry run) or applies (``--apply``) their removal by two rules, per cache:

- an entry unused for more than ``--max-age`` days goes;
- then, least recently used first, entries go until the cache fits ``--max-size`` GB.

"Used" is the newest of the entry's own mtime and its lock file's: every
install and download takes its lock (:mod:`pipeline.processes.locks`), also
when it only finds the thing already there, and the lock file's mtime is
touched then; the packaging cache touches a member (or an SBOM) when it reuses it.

Never removed: an entry whose lock a live process holds (an install or a
download under way; the removal itself takes the lock, so one cannot start
meanwhile), and an entry used within :data:`RECENT_SECONDS` (a build runs
on an installed toolchain without holding its lock).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.archives.extract import MARKER, remove_install
from pipeline.errors import BusyError
from pipeline.names import SBOM_SUFFIX
from pipeline.processes.locks import LOCK_SUFFIX, hold, is_held

# A day: longer than any build, which uses a toolchain without holding its lock.
RECENT_SECONDS = 86400.0
CACHES = ("downloads", "toolchains", "pack")
_SIDECAR = ".json"


@dataclass(frozen=True, kw_only=True)
class CacheEntry:
    """One removable thing of one cache: a download and its sidecar, an install, a packed member."""

    cache: str
    name: str
    paths: tuple[Path, ...]
    size: int
    last_used: float
    lock: Path | None = None
    held: bool = False


@dataclass(frozen=True, kw_only=True)
class LocalPlan:
    """What ``prune --local`` removes and why, and what it keeps because it is in use."""

    remove: tuple[tuple[CacheEntry, str], ...]
    in_use: tuple[tuple[CacheEntry, str], ...]
    kept: tuple[CacheEntry, ...]

    def to_json(self) -> dict[str, Any]:
        def one(entry: CacheEntry, why: str | None = None) -> dict[str, Any]:
            row: dict[str, Any] = {
                "cache": entry.cache,
                "name": entry.name,
                "size": entry.size,
                "last_used": round(entry.last_used),
            }
            if why is not None:
                row["why"] = why
            return row

        return {
            "remove": [one(e, w) for e, w in self.remove],
            "in_use": [one(e, w) for e, w in self.in_use],
            "kept": [one(e) for e in self.kept],
        }


@dataclass
class LocalResult:
    removed: list[CacheEntry] = field(default_factory=list)
    skipped: list[tuple[CacheEntry, str]] = field(default_factory=list)

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed)


def plan_local(
    entries: Iterable[CacheEntry], *, now: float, max_age_days: float, max_bytes: int
) -> LocalPlan:
    """Pure: which entries go (too old, then least recently used beyond ``max_bytes``), cache by cache."""
    remove: list[tuple[CacheEntry, str]] = []
    in_use: list[tuple[CacheEntry, str]] = []
    kept: list[CacheEntry] = []
    by_cache: dict[str, list[CacheEntry]] = {}
    for entry in entries:
        by_cache.setdefault(entry.cache, []).append(entry)
    for cache in sorted(by_cache):
        total = 0
        # Newest use first: what fits under the limit is what was used last.
        for entry in sorted(by_cache[cache], key=lambda e: (-e.last_used, e.name)):
            age_days = (now - entry.last_used) / 86400
            why = None
            if age_days > max_age_days:
                why = f"unused for {age_days:.0f} days (limit {max_age_days:g})"
            elif total + entry.size > max_bytes:
                why = f"over the {max_bytes / 1e9:g} GB limit of {cache} (least recently used)"
            if why is None:
                total += entry.size
                kept.append(entry)
            elif entry.held:
                in_use.append((entry, "its lock is held by a live run"))
                total += entry.size
            elif now - entry.last_used < RECENT_SECONDS:
                in_use.append((entry, "used within the last day: a build may be running on it"))
                total += entry.size
            else:
                remove.append((entry, why))
    return LocalPlan(remove=tuple(remove), in_use=tuple(in_use), kept=tuple(kept))


# --------------------------------------------------------------------------
# Reading the caches


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _tree_size(root: Path) -> int:
    total = 0
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                total += (Path(folder) / name).lstat().st_size
    return total


def _lock_of(folder: Path, name: str) -> Path:
    return folder / f".{name}{LOCK_SUFFIX}"


def _visible(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    # Dot files are locks, holder notes and a live (or dead) run's partial files: each run cleans its own.
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def scan_downloads(folder: Path) -> list[CacheEntry]:
    entries = []
    names = {p.name for p in _visible(folder)}
    for path in _visible(folder):
        if not path.is_file() or (path.name.endswith(_SIDECAR) and path.name[: -len(_SIDECAR)] in names):
            continue
        sidecar = path.with_name(path.name + _SIDECAR)
        paths = (path, sidecar) if sidecar.is_file() else (path,)
        lock = _lock_of(folder, path.name)
        entries.append(
            CacheEntry(
                cache="downloads",
                name=path.name,
                paths=paths,
                size=sum(p.stat().st_size for p in paths),
                last_used=max(_mtime(p) for p in (*paths, lock)),
                lock=lock,
                held=is_held(lock),
            )
        )
    return entries


def scan_toolchains(folder: Path) -> list[CacheEntry]:
    entries = []
    for path in _visible(folder):
        if not path.is_dir() or path.is_symlink():
            continue
        lock = _lock_of(folder, path.name)
        entries.append(
            CacheEntry(
                cache="toolchains",
                name=path.name,
                paths=(path,),
                size=_tree_size(path),
                last_used=max(_mtime(path / MARKER), _mtime(path), _mtime(lock)),
                lock=lock,
                held=is_held(lock),
            )
        )
    return entries


def scan_pack(folder: Path) -> list[CacheEntry]:
    entries = []
    for sub in _visible(folder):
        for path in _visible(sub) if sub.is_dir() else []:
            # A compressed member, or an SBOM kept by its manifest (pipeline.bundle.sbom_cache).
            if path.is_file() and (path.suffix == ".deflate" or path.name.endswith(SBOM_SUFFIX)):
                st = path.stat()
                entries.append(
                    CacheEntry(
                        cache="pack",
                        name=f"{sub.name}/{path.name}",
                        paths=(path,),
                        size=st.st_size,
                        last_used=st.st_mtime,
                    )
                )
    return entries


def scan(*, downloads: Path, toolchains: Path, pack: Path) -> list[CacheEntry]:
    return [*scan_downloads(downloads), *scan_toolchains(toolchains), *scan_pack(pack)]


# --------------------------------------------------------------------------
# Removing


def apply_local(plan: LocalPlan, *, on_removed: Callable[[CacheEntry], None] | None = None) -> LocalResult:
    """Remove the plan's entries, each under its lock; one a run holds now is skipped, not waited for."""
    result = LocalResult()
    for entry, _why in plan.remove:
        try:
            if entry.lock is not None:
                with hold(entry.lock, what=f"{entry.cache}/{entry.name}", since=None, wait_seconds=0):
                    _remove(entry.paths)
            else:
                _remove(entry.paths)
        except BusyError:
            result.skipped.append((entry, "a run took its lock meanwhile"))
            continue
        result.removed.append(entry)
        if on_removed is not None:
            on_removed(entry)
    return result


def _remove(paths: Sequence[Path]) -> None:
    # The sidecar (a download's proof) goes first: a file without one is never trusted, whatever happens next.
    for path in sorted(paths, key=lambda p: not p.name.endswith(_SIDECAR)):
        if path.is_dir() and not path.is_symlink():
            remove_install(path)
        else:
            path.unlink(missing_ok=True)
