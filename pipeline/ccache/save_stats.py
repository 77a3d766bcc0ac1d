"""Which ccache statistics the save decision reads, also when the build never finished.

A failed build writes its record with the ccache statistics; a build killed
by the job's timeout writes no record at all, but ccache has logged every
compiler call of the run to the leg's stats log as it went. Deciding from
what exists means a 30-minute compile that timed out still warms the next
night, instead of being thrown away.
"""

from __future__ import annotations

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
    """The statistics to decide on, the cache folder the record names, and where they came from."""

    ccache: dict[str, Any] = field(default_factory=dict)
    cache_dir: str | None = None
    origin: str = "no statistics"


def save_inputs(leg_dir: Path) -> SaveInputs:
    """The record's ccache statistics, else those of the run's stats log, else none."""
    cache_dir: str | None = None
    record_path = leg_dir / RECORD_NAME
    if record_path.is_file():
        record = LegRecord.read(record_path)
        recorded = record.ccache.get("cache_dir")
        cache_dir = recorded if isinstance(recorded, str) and recorded else None
        if "misses" in record.ccache:
            return SaveInputs(
                ccache=dict(record.ccache), cache_dir=cache_dir, origin=f"the record ({record.status})"
            )
    log = leg_dir / STATS_LOG_NAME
    if log.is_file():
        try:
            summary = summarize(parse_stats_log(log.read_text(encoding="utf-8", errors="replace")))
        except CcacheStatsError as exc:
            raise ToolchainError(f"{log}: unreadable ccache stats log: {exc}") from None
        return SaveInputs(
            ccache=summary.to_dict(), cache_dir=cache_dir, origin="the stats log (no finished record)"
        )
    return SaveInputs(cache_dir=cache_dir)
