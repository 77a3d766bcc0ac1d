"""``python -m pipeline cache-save LEG``: trim the leg's ccache and decide whether to upload it.

A warm run that added nothing need not upload 100+ MB again: the cache it
restored is as good. Files unused for ``[ccache] evict_older_than_days`` are
evicted first so that a saved cache carries only what recent builds use.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import github
from pipeline.config import load_matrix
from pipeline.errors import ToolchainError
from pipeline.save_stats import save_inputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cache-save",
        help="after a leg's build: evict stale ccache files and decide whether to save the cache",
        description=(
            "Evicts ccache files not used for [ccache] evict_older_than_days, then reads the leg's "
            "record and says whether the run added at least [ccache] save_min_new_entries entries. "
            "On GitHub Actions the answer is the step output save=true|false."
        ),
    )
    p.add_argument("leg", metavar="LEG", help="a leg of the matrix")
    p.add_argument("--out", type=Path, default=Path("out"), metavar="DIR", help="output folder (default: out)")
    p.add_argument("--json", action="store_true", help="print the decision as JSON")
    p.set_defaults(func=run)


@dataclass(frozen=True, kw_only=True)
class SaveDecision:
    save: bool
    new_entries: int
    reason: str


def new_entries(ccache_record: Mapping[str, Any]) -> int:
    """Entries this run added to the local cache: its misses, plus remote hits copied locally."""
    total = 0
    for name in ("misses", "remote_hits"):
        value = ccache_record.get(name, 0)
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


def evict(cache_dir: Path, days: float) -> str | None:
    """Evict ccache files unused for ``days`` in ``cache_dir``; what was done, or None."""
    from pipeline.ccache import find_ccache

    extra = evict_args(days)
    if extra is None or not cache_dir.is_dir():
        return None
    exe = find_ccache()
    env = {**os.environ, "CCACHE_DIR": str(cache_dir)}
    try:
        proc = subprocess.run(
            [str(exe), *extra], env=env, capture_output=True, text=True, timeout=600, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{exe}: cannot evict in {cache_dir}: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolchainError(
            f"{exe} {' '.join(extra)} failed in {cache_dir}: {detail[-1] if detail else proc.returncode}"
        )
    removed = re.search(r"Removed files:\s*(\d+)", proc.stdout)
    what = f"{removed.group(1)} files" if removed else "files"
    return f"evicted {what} unused for {days:g} days from {cache_dir}"


def run(args: argparse.Namespace) -> int:
    from pipeline.ccache import default_cache_dir

    matrix = load_matrix(args.matrix)
    leg = matrix.leg(args.leg)
    # A failed or timed-out build still has statistics: the record's, else its stats log.
    inputs = save_inputs(args.out / leg.name)
    cache_dir = Path(inputs.cache_dir) if inputs.cache_dir else default_cache_dir(leg.name)

    # With --json, stdout carries only the JSON.
    with github.group(f"ccache eviction ({leg.name})", stream=sys.stderr if args.json else None):
        evicted = evict(cache_dir, matrix.ccache.evict_older_than_days)
    decision = decide_save(inputs.ccache, matrix.ccache.save_min_new_entries)
    github.set_output("save", "true" if decision.save else "false")
    if args.json:
        print(
            json.dumps(
                {
                    "leg": leg.name,
                    "save": decision.save,
                    "new_entries": decision.new_entries,
                    "reason": decision.reason,
                    "cache_dir": str(cache_dir),
                    "evicted": evicted,
                }
            )
        )
    else:
        if evicted:
            print(evicted)
        print(f"{leg.name}: {'save' if decision.save else 'do not save'} the cache: {decision.reason} "
              f"(from {inputs.origin})")  # fmt: skip
    return 0
