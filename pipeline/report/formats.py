"""One run's legs side by side: console table, markdown summary, HTML page.

Everything is rendered from leg records (:class:`pipeline.results.record.LegRecord`)
through :class:`LegRow`, so the three outputs cannot disagree. The HTML page
is self-contained: data sits in the page as JSON and a small inline script
draws the SVG charts (hit rate, device/host time split, timeline of the
build's steps); it loads nothing from anywhere and opens offline.

The cache alarm: a leg whose hit rate falls under the threshold while its
toolchain did not change gets a warning. A new toolchain explains a cold
cache (ccache hashes the compiler); an unchanged one does not, so something
else broke the cache. Whether the toolchain changed is read, in this order,
from the record's own ``ccache.previous_toolchain`` (the toolchain that
filled the cache the run restored, when the build knows it), else from the
same leg's record of the previous run. With neither, it is unknown and no
warning is raised.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.report.bundle_lines import bundle_check_line
from pipeline.results.ninjalog import CLASSES, Step, assign_lanes
from pipeline.results.record import LegRecord
from pipeline.util.timeutil import duration_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

CLASS_COLOURS = {"device": "#c0392b", "host": "#2f6fba", "link": "#2e8b57", "other": "#8c8c8c"}


@dataclass(frozen=True, kw_only=True)
class LegRow:
    """What the report says about one leg."""

    leg: str
    backend: str
    os: str
    status: str
    hits: int | None
    misses: int | None
    uncacheable: int | None
    # 0..1, None when nothing was compiled.
    hit_rate: float | None
    wall_seconds: float
    toolchain: str
    # True/False when known, None when nothing tells.
    toolchain_changed: bool | None
    # Summed step seconds per class (device, host, link, other); empty without timings.
    class_seconds: Mapping[str, float]
    warning: str | None = None
    # check-bundle's verdict on the leg's bundle, one line (pipeline.report.bundle_lines).
    bundle_check: str | None = None
    # The shader cache's counts (record.ccache.glslc: a vulkan leg's glslc calls), None for other legs.
    glslc_hits: int | None = None
    glslc_misses: int | None = None

    @property
    def device_share(self) -> float | None:
        """Device compilation's share of compile time (device + host)."""
        device = self.class_seconds.get("device", 0.0)
        compile_total = device + self.class_seconds.get("host", 0.0)
        return device / compile_total if compile_total else None


# --------------------------------------------------------------------------
# Rows and warnings (pure)


def _int(value: Any) -> int | None:
    """A count from a record; a negative or non-finite one is a corrupt record's, shown as unknown."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return None
    return int(value)


def hit_rate_of(ccache: Mapping[str, Any]) -> float | None:
    """Hits / (hits + misses) as 0..1; the record's own ``hit_rate`` when counts are missing."""
    hits, misses = _int(ccache.get("hits")), _int(ccache.get("misses"))
    if hits is not None and misses is not None:
        return hits / (hits + misses) if hits + misses else None
    rate = ccache.get("hit_rate")
    if (
        isinstance(rate, int | float)
        and not isinstance(rate, bool)
        and math.isfinite(rate)
        and 0 <= rate <= 100
    ):
        # Some tools report percent; a rate is never above 1.
        return float(rate) / 100.0 if rate > 1 else float(rate)
    return None


def record_toolchain_identity(toolchain: Any) -> str | None:
    """The identity string of a record's toolchain section (or of a bare identity string)."""
    if isinstance(toolchain, str):
        return toolchain or None
    if isinstance(toolchain, Mapping):
        ident = toolchain.get("identity")
        return ident if isinstance(ident, str) and ident else None
    return None


def toolchain_changed(record: LegRecord, previous: LegRecord | None) -> bool | None:
    """Did this leg's toolchain change since the cache was filled? None when unknown.

    The record's ``ccache.previous_toolchain`` (identity string or toolchain
    section) wins; else the previous run's record of the same leg.
    """
    current = record_toolchain_identity(record.toolchain)
    if current is None:
        return None
    before = record_toolchain_identity(record.ccache.get("previous_toolchain"))
    if before is None and previous is not None:
        before = record_toolchain_identity(previous.toolchain)
    if before is None:
        return None
    return before != current


def leg_row(record: LegRecord, previous: LegRecord | None, threshold: float) -> LegRow:
    """The report's view of one record, with its warning when the cache alarm fires."""
    cc = record.ccache
    rate = hit_rate_of(cc)
    changed = toolchain_changed(record, previous)
    timings = record.timings or {}
    classes = timings.get("classes")
    if not isinstance(classes, Mapping):
        classes = {}
    class_seconds = {
        k: float(v.get("seconds", 0.0)) for k, v in classes.items() if k in CLASSES and isinstance(v, Mapping)
    }
    identity = record_toolchain_identity(record.toolchain) or "unknown"
    glslc_record = cc.get("glslc")
    glslc: Mapping[str, Any] = glslc_record if isinstance(glslc_record, Mapping) else {}
    warning = None
    if rate is not None and rate < threshold and changed is False:
        warning = (
            f"{record.leg}: ccache hit rate {rate:.0%} is under {threshold:.0%} although the toolchain "
            f"({identity}) did not change: something broke the cache"
        )
    bad_counts = [key for key in ("hits", "misses", "uncacheable") if key in cc and _int(cc[key]) is None]
    if bad_counts and warning is None:
        # A corrupt record's count is shown as unknown, and said so, never turned into a 250% hit rate.
        warning = f"{record.leg}: the record's ccache {', '.join(bad_counts)} is not a count of 0 or more: shown as unknown"
    stale = record.toolchain.get("stale") if isinstance(record.toolchain, Mapping) else None
    if isinstance(stale, str) and stale:
        # A months-old ROCm build (pipeline/rocm/staleness.py) is said beside any cache alarm, never hidden by it.
        warning = f"{warning}; {record.leg}: {stale}" if warning else f"{record.leg}: {stale}"
    return LegRow(
        leg=record.leg,
        backend=record.backend,
        os=record.os,
        status=record.status,
        hits=_int(cc.get("hits")),
        misses=_int(cc.get("misses")),
        uncacheable=_int(cc.get("uncacheable")),
        hit_rate=rate,
        wall_seconds=float(record.wall_seconds),
        toolchain=identity,
        toolchain_changed=changed,
        class_seconds=class_seconds,
        warning=warning,
        bundle_check=bundle_check_line(record.leg, record.bundle_check),
        glslc_hits=_int(glslc.get("hits")),
        glslc_misses=_int(glslc.get("misses")),
    )


def leg_rows(
    records: Sequence[LegRecord], previous: Mapping[str, LegRecord], threshold: float
) -> list[LegRow]:
    """One row per record, in leg-name order; ``previous`` maps leg name to last run's record."""
    return [leg_row(r, previous.get(r.leg), threshold) for r in sorted(records, key=lambda r: r.leg)]


def warnings_of(rows: Sequence[LegRow]) -> list[str]:
    return [r.warning for r in rows if r.warning]


# --------------------------------------------------------------------------
# Formatting helpers


def format_seconds(seconds: float | None) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``; an em dash for nothing."""
    if seconds is None:
        return "—"
    # Under ten seconds a tenth says something (a warm leg's link step).
    return f"{seconds:.1f}s" if seconds < 10 else duration_text(seconds)


def format_rate(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.1%}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _changed(row: LegRow) -> str:
    """``changed`` / ``same``; with nothing to compare against, why: the cache had no toolchain noted yet
    (a first build, or a new cache directory), or the record names no toolchain."""
    if row.toolchain_changed is not None:
        return "changed" if row.toolchain_changed else "same"
    return NEW_CACHE if row.toolchain != "unknown" else "—"


def _split(row: LegRow) -> str:
    if not row.class_seconds:
        return "—"
    device = row.class_seconds.get("device", 0.0)
    host = row.class_seconds.get("host", 0.0)
    share = row.device_share
    tail = f" ({share:.0%} device)" if share is not None else ""
    return f"{format_seconds(device)} / {format_seconds(host)}{tail}"


def _shaders(row: LegRow) -> str:
    """``1510 / 0``: the glslc cache's hits and misses, beside ccache's; an em dash for a leg without shaders."""
    if row.glslc_hits is None and row.glslc_misses is None:
        return "—"
    return f"{_count(row.glslc_hits)} / {_count(row.glslc_misses)}"


# "Toolchain vs cache" when the cache had no toolchain noted: nothing to compare with, not an unknown.
NEW_CACHE = "new cache"
HEADERS = (
    "Leg",
    "Status",
    "Hits",
    "Misses",
    "Hit rate",
    "Wall",
    "Toolchain",
    "Toolchain vs cache",
    "Device / host (summed)",
    "Shaders hits / misses",
)
# Under every rendering of the table: the last column adds up parallel steps, the wall clock does not.
SUMMED_NOTE = (
    "Device / host (summed): the compile steps' times added up over the parallel jobs, so they can exceed "
    "Wall; Toolchain vs cache: whether the toolchain differs from the one that filled the leg's ccache "
    f"({NEW_CACHE}: none had yet); Shaders hits / misses: the glslc cache's counts, a vulkan leg's shader "
    "compiles, which ccache does not see."
)


def _cells(row: LegRow) -> list[str]:
    return [
        row.leg,
        row.status,
        _count(row.hits),
        _count(row.misses),
        format_rate(row.hit_rate),
        format_seconds(row.wall_seconds),
        row.toolchain,
        _changed(row),
        _split(row),
        _shaders(row),
    ]


# --------------------------------------------------------------------------
# Markdown


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: Sequence[LegRow], *, threshold: float) -> str:
    """The step summary: one table over all legs, then the cache alarms."""
    lines = ["## Build report", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * 5 + ["---"] * 3 + ["---:"]) + "|")
    for row in rows:
        cells = [_md_escape(c) for c in _cells(row)]
        if row.warning:
            cells[4] = f"**{cells[4]}** ⚠️"
        lines.append("| " + " | ".join(cells) + " |")
    warnings = warnings_of(rows)
    lines.extend(["", f"<sub>{SUMMED_NOTE}</sub>", ""])
    if warnings:
        lines.append(f"**Cache alarms** (hit rate under {threshold:.0%} with an unchanged toolchain):")
        lines.append("")
        lines.extend(f"- {_md_escape(w)}" for w in warnings)
        lines.append("")
    if checks := [r.bundle_check for r in rows if r.bundle_check]:
        lines.extend(["**Bundle checks:**", "", *(f"- {_md_escape(c)}" for c in checks), ""])
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Console (rich)


def console_table(rows: Sequence[LegRow]) -> Table:
    from rich.table import Table

    table = Table(title="Build report", header_style="bold")
    for i, name in enumerate(HEADERS):
        table.add_column(name, justify="right" if 2 <= i <= 5 else "left", no_wrap=i == 0)
    for row in rows:
        cells = _cells(row)
        style = "yellow" if row.warning else ("red" if row.status != "success" else None)
        table.add_row(*cells, style=style)
    return table


def print_report(console: Console, rows: Sequence[LegRow]) -> None:
    console.print(console_table(rows))
    console.print(SUMMED_NOTE, style="dim", highlight=False)
    for warning in warnings_of(rows):
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    for row in rows:
        if row.bundle_check:
            console.print(
                row.bundle_check, style=None if "passed" in row.bundle_check else "red", highlight=False
            )


def print_timings(console: Console, summary: Mapping[str, Any], *, title: str) -> None:
    """A ninjalog summary (see :func:`pipeline.results.ninjalog.summarize`) as console tables."""
    from rich.table import Table

    if "error" in summary:
        console.print(f"[red]{summary['error']}[/red]", highlight=False)
        return
    wall = float(summary.get("wall_seconds", 0.0))
    busy = float(summary.get("busy_seconds", 0.0))
    classes = summary.get("classes", {})
    table = Table(title=f"Ninja timings: {title}", header_style="bold")
    for name, justify in (("Class", "left"), ("Steps", "right"), ("Time", "right"), ("Share", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for kind in CLASSES:
        c = classes.get(kind, {"count": 0, "seconds": 0.0})
        share = f"{c['seconds'] / busy:.0%}" if busy else "—"
        table.add_row(kind, str(c["count"]), format_seconds(c["seconds"]), share)
    console.print(table)
    console.print(
        f"{summary.get('steps', 0)} steps, wall {format_seconds(wall)}, "
        f"summed {format_seconds(busy)} (parallelism {summary.get('parallelism', 0)})",
        highlight=False,
    )
    slow = Table(title="Slowest steps", header_style="bold")
    slow.add_column("Time", justify="right")
    slow.add_column("Class")
    slow.add_column("Output", overflow="fold")
    for s in summary.get("slowest", []):
        slow.add_row(format_seconds(s["seconds"]), s["class"], s["output"])
    console.print(slow)
    cp = summary.get("critical_path", {})
    parts = ", ".join(f"{k} {format_seconds(v)}" for k, v in cp.get("classes", {}).items() if v)
    console.print(
        f"Critical path: {cp.get('steps', 0)} steps over {format_seconds(cp.get('seconds', 0.0))} "
        f"(busy {format_seconds(cp.get('busy_seconds', 0.0))}{': ' + parts if parts else ''})",
        highlight=False,
    )
    for s in cp.get("chain", [])[-5:]:
        console.print(f"  {format_seconds(s['seconds']):>8}  {s['class']:<6}  {s['output']}", highlight=False)


# --------------------------------------------------------------------------
# HTML


def chart_data(record: LegRecord, row: LegRow) -> dict[str, Any]:
    """What the page's script needs to draw one leg's charts.

    Timeline rows are ``[start_ms, end_ms, class, output, lane]``; lanes are
    computed here so that the script only draws.
    """
    timings = record.timings or {}
    raw = timings.get("timeline")
    if not isinstance(raw, list):
        raw = []
    steps = [
        Step(outputs=(str(t[3]),), start_ms=int(t[0]), end_ms=int(t[1]), kind=str(t[2]))
        for t in raw
        if isinstance(t, list) and len(t) >= 4
    ]
    lanes = assign_lanes(steps)
    return {
        "leg": row.leg,
        "status": row.status,
        "hits": row.hits or 0,
        "misses": row.misses or 0,
        "uncacheable": row.uncacheable or 0,
        "hit_rate": row.hit_rate,
        "warning": row.warning,
        "classes": {k: row.class_seconds.get(k, 0.0) for k in CLASSES} if row.class_seconds else None,
        "wall_seconds": row.wall_seconds,
        "timeline": [
            [s.start_ms, s.end_ms, s.kind, s.name, lane] for s, lane in zip(steps, lanes, strict=True)
        ],
        "timeline_truncated": bool(timings.get("timeline_truncated")),
    }


def _json_for_script(obj: Any) -> str:
    # Inside <script>, "</script>" or "<!--" in an output name must not end the block.
    return json.dumps(obj).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(
    records: Sequence[LegRecord], rows: Sequence[LegRow], *, generated: str, threshold: float
) -> str:
    """The self-contained report page (no external resources)."""
    by_leg = {r.leg: r for r in records}
    data = {
        "generated": generated,
        "threshold": threshold,
        "colours": CLASS_COLOURS,
        "legs": [chart_data(by_leg[row.leg], row) for row in rows],
    }
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
    body = []
    for row in rows:
        cls = ' class="warn"' if row.warning else (' class="failed"' if row.status != "success" else "")
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in _cells(row))
        body.append(f"<tr{cls}>{cells}</tr>")
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in warnings_of(rows))
    alarms = f'<ul class="alarms">{warnings}</ul>' if warnings else ""
    # check-bundle's verdict on each bundle, as the console and the step summary give it.
    checks = "".join(
        f'<li class="{"passed" if "passed" in c else "failed"}">{html.escape(c)}</li>'
        for c in (r.bundle_check for r in rows)
        if c
    )
    parts = {
        "generated": html.escape(generated),
        "head": head,
        "rows": "\n".join(body),
        "note": html.escape(SUMMED_NOTE),
        "alarms": alarms,
        "checks": f'<h2 class="checks">Bundle checks</h2>\n<ul class="checks">{checks}</ul>'
        if checks
        else "",
        "data": _json_for_script(data),
        "script": _asset("report.js"),
    }
    # One pass, so that a "{{...}}" inside the data is never expanded.
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], _asset("report.html"))


def _asset(name: str) -> str:
    """The page's template and script: package data, kept as plain HTML and JavaScript files."""
    from importlib.resources import files

    return files("pipeline.report").joinpath("assets", name).read_text(encoding="utf-8")
