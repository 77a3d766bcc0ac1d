"""The nightly's history, leg by leg: hit rate and build time night by night, and the nights a toolchain changed (pure).

A release engineer's two questions, "did the cache hit last night?" and "is
this week's ROCm cold?", are answered by the records the nightly leaves behind
(one per leg per run, see :mod:`pipeline.report.history_fetch`). A night's hit
rate and wall time are read as the run's report reads them
(:func:`pipeline.report.formats.hit_rate_of`); a toolchain change is marked
where the record itself names the toolchain that filled its cache, else where
the leg's identity differs from its previous night in the history: a cold
cache there is expected, a cold cache anywhere else is the alarm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.report.formats import hit_rate_of, record_toolchain_identity, toolchain_changed
from pipeline.results.record import LegRecord


@dataclass(frozen=True, kw_only=True)
class Night:
    """One nightly run and the records its legs left."""

    run_id: int
    # What the charts' axis shows for the night, e.g. "2026-11-30 #412".
    label: str
    # The run's conclusion as GitHub states it ("success", "failure", ...), None when it gave none.
    conclusion: str | None
    records: tuple[LegRecord, ...]


@dataclass(frozen=True, kw_only=True)
class NightPoint:
    """One leg on one night."""

    night: str
    status: str
    # 0..1; None when the night compiled nothing or its record has no counts.
    hit_rate: float | None
    wall_seconds: float
    toolchain: str
    # The toolchain differs from the one that filled the cache (or, unknown there, from the leg's
    # previous night in the history): the night's misses are the price of the new compiler.
    toolchain_changed: bool


def leg_history(nights: Sequence[Night]) -> dict[str, list[NightPoint]]:
    """Every leg's points, night by night, oldest first (``nights`` oldest first); legs in name order."""
    series: dict[str, list[NightPoint]] = {}
    last: dict[str, LegRecord] = {}
    for night in nights:
        for record in sorted(night.records, key=lambda r: r.leg):
            changed = toolchain_changed(record, last.get(record.leg))
            series.setdefault(record.leg, []).append(
                NightPoint(
                    night=night.label,
                    status=record.status,
                    hit_rate=hit_rate_of(record.ccache),
                    wall_seconds=float(record.wall_seconds),
                    toolchain=record_toolchain_identity(record.toolchain) or "unknown",
                    toolchain_changed=bool(changed),
                )
            )
            last[record.leg] = record
    return dict(sorted(series.items()))


def cold_without_change(points: Sequence[NightPoint], threshold: float) -> list[str]:
    """The nights a leg's hit rate fell under ``threshold`` while its toolchain stayed: the cache broke."""
    return [
        p.night
        for p in points
        if p.hit_rate is not None and p.hit_rate < threshold and not p.toolchain_changed
    ]


def summary_lines(series: Mapping[str, Sequence[NightPoint]], threshold: float) -> list[str]:
    """One line per leg: its latest night, and the nights the alarm would have fired."""
    lines = []
    for leg, points in series.items():
        latest = points[-1]
        rate = "no compiles" if latest.hit_rate is None else f"{latest.hit_rate:.0%} hits"
        changes = sum(p.toolchain_changed for p in points)
        broken = cold_without_change(points, threshold)
        alarm = f"; cold with an unchanged toolchain on {', '.join(broken)}" if broken else ""
        lines.append(
            f"{leg}: {len(points)} nights, last {latest.night}: {rate}, {latest.wall_seconds / 60:.1f} min; "
            f"{changes} toolchain change{'' if changes == 1 else 's'}{alarm}"
        )
    return lines
