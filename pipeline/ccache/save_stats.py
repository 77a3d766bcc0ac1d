"""Which ccache statistics the save decision reads, also when the build never finished.

A failed build writes its record with the ccache statistics; a build killed
by the job's timeout writes no record at all, but ccache has logged every
compiler call of the run to the leg's stats log as it went. Deciding from
what exists means a 30-minute compile that timed out still warms the next
night, instead of being thrown away.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.ccache.stats_parser import CcacheStatsError, parse_stats_log, summarize
from pipeline.errors import ToolchainError
from pipeline.results.record import RECORD_NAME, LegRecord

# The per-run ccache stats log a leg's build writes in its folder (pipeline.leg.steps).
STATS_LOG_NAME = "ccache-stats.log"


@dataclass(frozen=True, kw_only=True)
class SaveInputs:
    """The statistics to decide on, the ccache folder the record names, and where they came from."""

    ccache: dict[str, Any] = field(default_factory=dict)
    ccache_dir: str | None = None
    origin: str = "no statistics"


def recorded_ccache_dir(ccache: Mapping[str, Any]) -> str | None:
    """The leg's ccache folder a record's ``ccache`` names, or None.

    A record an older pipeline wrote names it ``cache_dir``: an output folder kept from
    before the rename still holds one, and its cache is still the one to evict and save.
    """
    recorded = ccache.get("ccache_dir", ccache.get("cache_dir"))
    return recorded if isinstance(recorded, str) and recorded else None


def save_inputs(leg_dir: Path) -> SaveInputs:
    """The record's ccache statistics, else those of the run's stats log, else none."""
    ccache_dir: str | None = None
    record_path = leg_dir / RECORD_NAME
    if record_path.is_file():
        record = LegRecord.read(record_path)
        ccache_dir = recorded_ccache_dir(record.ccache)
        if "misses" in record.ccache:
            return SaveInputs(
                ccache=dict(record.ccache), ccache_dir=ccache_dir, origin=f"the record ({record.status})"
            )
    log = leg_dir / STATS_LOG_NAME
    if log.is_file():
        try:
            summary = summarize(parse_stats_log(log.read_text(encoding="utf-8", errors="replace")))
        except CcacheStatsError as exc:
            raise ToolchainError(f"{log}: unreadable ccache stats log: {exc}") from None
        return SaveInputs(
            ccache=summary.to_dict(), ccache_dir=ccache_dir, origin="the stats log (no finished record)"
        )
    return SaveInputs(ccache_dir=ccache_dir)
