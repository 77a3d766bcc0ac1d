"""After a leg's build: evict stale ccache files and decide whether the cache is worth saving.

A warm run that added nothing need not upload 100+ MB again: the cache it
restored is as good. Files unused for ``[ccache] evict_older_than_days`` are
evicted first so that a saved cache carries only what recent builds use.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import ToolchainError
from pipeline.processes.groups import run_child


@dataclass(frozen=True, kw_only=True)
class SaveDecision:
    save: bool
    new_entries: int
    reason: str


def new_entries(ccache_record: Mapping[str, Any]) -> int:
    """Entries this run added to the local cache: its misses, plus remote hits copied locally, plus the entries
    merged in from the leg's shard caches (a build that hit them all still holds a cache no key has yet)."""
    total = 0
    merged = ccache_record.get("shards_merged")
    for value in (
        *(ccache_record.get(name, 0) for name in ("misses", "remote_hits")),
        merged.get("added", 0) if isinstance(merged, Mapping) else 0,
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            total += value
    return total


def decide_save(ccache_record: Mapping[str, Any], min_new_entries: int) -> SaveDecision:
    """Whether the run's cache is worth uploading, with the reason in one line."""
    if not ccache_record or "misses" not in ccache_record:
        return SaveDecision(save=False, new_entries=0, reason="the record has no ccache statistics")
    added = new_entries(ccache_record)
    if added >= min_new_entries:
        return SaveDecision(
            save=True, new_entries=added, reason=f"{added} new entries (saving from {min_new_entries})"
        )
    return SaveDecision(
        save=False,
        new_entries=added,
        reason=f"only {added} new entries (saving from {min_new_entries}); the restored cache is as good",
    )


def evict_args(days: float) -> list[str] | None:
    """ccache's arguments for evicting files unused for ``days``; None when disabled (0)."""
    seconds = int(days * 86400)
    return None if seconds <= 0 else ["--evict-older-than", f"{seconds}s"]


def evict(ccache_dir: Path, days: float, environ: Mapping[str, str]) -> str | None:
    """Evict ccache files unused for ``days`` in ``ccache_dir``; what was done, or None."""
    from pipeline.ccache.session import ccache_path_value, find_ccache

    extra = evict_args(days)
    if extra is None or not ccache_dir.is_dir():
        return None
    exe = find_ccache()
    env = {**environ, "CCACHE_DIR": ccache_path_value(ccache_dir)}
    try:
        proc = run_child(
            [str(exe), *extra], env=env, capture_output=True, text=True, timeout=600, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{exe}: cannot evict in {ccache_dir}: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolchainError(
            f"{exe} {' '.join(extra)} failed in {ccache_dir}: {detail[-1] if detail else proc.returncode}"
        )
    removed = re.search(r"Removed files:\s*(\d+)", proc.stdout)
    what = f"{removed.group(1)} files" if removed else "files"
    return f"evicted {what} unused for {days:g} days from {ccache_dir}"
