"""One run's legs side by side: console table, markdown summary, HTML page.

Everything is rendered from leg records (:class:`pipeline.record.LegRecord`)
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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.ninjalog import CLASSES, Step, assign_lanes
from pipeline.record import LegRecord
from pipeline.report_bundle import bundle_check_line

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
    # check-bundle's verdict on the leg's bundle, one line (pipeline.report_bundle).
    bundle_check: str | None = None

    @property
    def device_share(self) -> float | None:
        """Device compilation's share of compile time (device + host)."""
        device = self.class_seconds.get("device", 0.0)
        compile_total = device + self.class_seconds.get("host", 0.0)
        return device / compile_total if compile_total else None


# --------------------------------------------------------------------------
# Rows and warnings (pure)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def hit_rate_of(ccache: Mapping[str, Any]) -> float | None:
    """Hits / (hits + misses) as 0..1; the record's own ``hit_rate`` when counts are missing."""
    hits, misses = _int(ccache.get("hits")), _int(ccache.get("misses"))
    if hits is not None and misses is not None:
        return hits / (hits + misses) if hits + misses else None
    rate = ccache.get("hit_rate")
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        # Some tools report percent; a rate is never above 1.
        return float(rate) / 100.0 if rate > 1 else float(rate)
    return None


def toolchain_identity(toolchain: Any) -> str | None:
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
    current = toolchain_identity(record.toolchain)
    if current is None:
        return None
    before = toolchain_identity(record.ccache.get("previous_toolchain"))
    if before is None and previous is not None:
        before = toolchain_identity(previous.toolchain)
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
    identity = toolchain_identity(record.toolchain) or "unknown"
    warning = None
    if rate is not None and rate < threshold and changed is False:
        warning = (
            f"{record.leg}: ccache hit rate {rate:.0%} is under {threshold:.0%} although the toolchain "
            f"({identity}) did not change: something broke the cache"
        )
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
    total = round(seconds)
    if total < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def format_rate(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.1%}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _changed(value: bool | None) -> str:
    return {True: "changed", False: "same", None: "?"}[value]


def _split(row: LegRow) -> str:
    if not row.class_seconds:
        return "—"
    device = row.class_seconds.get("device", 0.0)
    host = row.class_seconds.get("host", 0.0)
    share = row.device_share
    tail = f" ({share:.0%} device)" if share is not None else ""
    return f"{format_seconds(device)} / {format_seconds(host)}{tail}"


HEADERS = (
    "Leg",
    "Status",
    "Hits",
    "Misses",
    "Hit rate",
    "Wall",
    "Toolchain",
    "Toolchain vs cache",
    "Device / host",
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
        _changed(row.toolchain_changed),
        _split(row),
    ]


# --------------------------------------------------------------------------
# Markdown


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: Sequence[LegRow], *, threshold: float) -> str:
    """The step summary: one table over all legs, then the cache alarms."""
    lines = ["## Build report", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * 5 + ["---"] * 3) + "|")
    for row in rows:
        cells = [_md_escape(c) for c in _cells(row)]
        if row.warning:
            cells[4] = f"**{cells[4]}** ⚠️"
        lines.append("| " + " | ".join(cells) + " |")
    warnings = warnings_of(rows)
    lines.append("")
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
    for warning in warnings_of(rows):
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    for row in rows:
        if row.bundle_check:
            console.print(row.bundle_check, style=None if "passed" in row.bundle_check else "red", highlight=False)


def print_timings(console: Console, summary: Mapping[str, Any], *, title: str) -> None:
    """A ninjalog summary (see :func:`pipeline.ninjalog.summarize`) as console tables."""
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
    parts = {
        "generated": html.escape(generated),
        "head": head,
        "rows": "\n".join(body),
        "alarms": alarms,
        "data": _json_for_script(data),
        "script": _SCRIPT,
    }
    # One pass, so that a "{{...}}" inside the data is never expanded.
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], _PAGE)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Build report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; background: #fff; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; }
.generated { color: #666; margin-top: 0; }
table.summary { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
table.summary th, table.summary td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: left; }
table.summary th { background: #f0f0f0; }
tr.warn td { background: #fff4d6; }
tr.failed td { background: #fde2e2; }
ul.alarms { color: #8a5a00; }
section.leg { border-top: 1px solid #ddd; padding-top: 0.5rem; margin-top: 1rem; }
section.leg h2 { font-size: 1.1rem; margin: 0.3rem 0; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.chart h3 { font-size: 0.85rem; font-weight: 600; margin: 0.2rem 0; color: #444; }
.chart svg text { font-size: 11px; fill: #333; }
.note { color: #777; font-size: 0.85rem; }
</style>
</head>
<body data-charts="0">
<h1>Build report</h1>
<p class="generated">Generated {{generated}}</p>
<table class="summary">
<thead><tr>{{head}}</tr></thead>
<tbody>
{{rows}}
</tbody>
</table>
{{alarms}}
<div id="legs"></div>
<noscript><p class="note">The charts need JavaScript; the table above has the numbers.</p></noscript>
<script type="application/json" id="report-data">{{data}}</script>
<script>
{{script}}
</script>
</body>
</html>
"""

# Draws with createElementNS and textContent only: output names are data, never markup.
_SCRIPT = r"""
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var CLASSES = ["device", "host", "link", "other"];
  var rendered = 0;

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var k in attrs) { node.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function text(parent, x, y, s, anchor) {
    var t = el("text", {x: x, y: y, "text-anchor": anchor || "start"}, parent);
    t.textContent = s;
    return t;
  }
  function tip(node, s) { el("title", {}, node).textContent = s; }
  function secs(s) {
    if (s < 60) { return (s < 10 ? s.toFixed(1) : Math.round(s)) + "s"; }
    var m = Math.floor(s / 60), r = Math.round(s % 60);
    return m < 60 ? m + "m " + (r < 10 ? "0" : "") + r + "s" : Math.floor(m / 60) + "h " + (m % 60) + "m";
  }
  function chart(parent, title, kind) {
    var box = document.createElement("div");
    box.className = "chart";
    var h = document.createElement("h3");
    h.textContent = title;
    box.appendChild(h);
    parent.appendChild(box);
    return {box: box, kind: kind};
  }
  function note(c, s) {
    var p = document.createElement("p");
    p.className = "note";
    p.textContent = s;
    c.box.appendChild(p);
  }
  function stacked(c, parts, width, label) {
    var svg = el("svg", {width: width, height: 46, "class": "chart-" + c.kind, role: "img"}, c.box);
    var total = parts.reduce(function (a, p) { return a + p.value; }, 0);
    var x = 0;
    parts.forEach(function (p) {
      if (!total || !p.value) { return; }
      var w = p.value / total * width;
      var r = el("rect", {x: x, y: 0, width: w, height: 22, fill: p.colour, "class": "seg seg-" + p.name}, svg);
      tip(r, p.name + ": " + p.text);
      x += w;
    });
    if (!total) { el("rect", {x: 0, y: 0, width: width, height: 22, fill: "#eee"}, svg); }
    text(svg, 0, 38, label);
    rendered += 1;
    return svg;
  }

  function hitChart(parent, leg) {
    var c = chart(parent, "ccache hit rate", "hit");
    var parts = [
      {name: "hits", value: leg.hits, colour: "#2e8b57", text: String(leg.hits)},
      {name: "misses", value: leg.misses, colour: "#c0392b", text: String(leg.misses)},
      {name: "uncacheable", value: leg.uncacheable, colour: "#bbbbbb", text: String(leg.uncacheable)}
    ];
    var rate = leg.hit_rate === null ? "no compilations" : (leg.hit_rate * 100).toFixed(1) + "% hits";
    stacked(c, parts, 260, rate + " (" + leg.hits + " hits, " + leg.misses + " misses)");
  }

  function splitChart(parent, leg) {
    var c = chart(parent, "Time by step class (summed)", "split");
    if (!leg.classes) { note(c, "no Ninja timings"); return; }
    var parts = CLASSES.map(function (k) {
      return {name: k, value: leg.classes[k], colour: data.colours[k], text: secs(leg.classes[k])};
    });
    var compile = leg.classes.device + leg.classes.host;
    var label = "device " + secs(leg.classes.device) + ", host " + secs(leg.classes.host) +
      (compile ? " (" + Math.round(leg.classes.device / compile * 100) + "% device)" : "");
    stacked(c, parts, 320, label);
  }

  function timelineChart(parent, leg) {
    var c = chart(parent, "Timeline of build steps", "timeline");
    if (!leg.timeline.length) { note(c, "no Ninja timings"); return; }
    var end = 0, lanes = 0;
    leg.timeline.forEach(function (t) { end = Math.max(end, t[1]); lanes = Math.max(lanes, t[4] + 1); });
    var width = 720, row = Math.max(3, Math.min(14, Math.floor(240 / lanes))), top = 4;
    var height = top + lanes * row + 34;
    var svg = el("svg", {width: width + 20, height: height, "class": "chart-timeline", role: "img"}, c.box);
    var scale = end ? width / end : 0;
    leg.timeline.forEach(function (t) {
      var r = el("rect", {
        x: 10 + t[0] * scale, y: top + t[4] * row,
        width: Math.max(1, (t[1] - t[0]) * scale), height: Math.max(1, row - 1),
        fill: data.colours[t[2]] || "#999", stroke: "#fff", "stroke-width": 0.5, "class": "step step-" + t[2]
      }, svg);
      tip(r, t[3] + " (" + t[2] + ", " + secs((t[1] - t[0]) / 1000) + ")");
    });
    var axisY = top + lanes * row + 14;
    el("line", {x1: 10, x2: 10 + width, y1: axisY - 10, y2: axisY - 10, stroke: "#999"}, svg);
    text(svg, 10, axisY + 4, "0s");
    text(svg, 10 + width, axisY + 4, secs(end / 1000), "end");
    var lx = 120;
    CLASSES.forEach(function (k) {
      el("rect", {x: lx, y: axisY - 5, width: 10, height: 10, fill: data.colours[k]}, svg);
      text(svg, lx + 14, axisY + 4, k);
      lx += 70;
    });
    if (leg.timeline_truncated) { note(c, "only the longest steps are shown"); }
    rendered += 1;
  }

  var root = document.getElementById("legs");
  data.legs.forEach(function (leg) {
    var section = document.createElement("section");
    section.className = "leg";
    section.setAttribute("data-leg", leg.leg);
    var h = document.createElement("h2");
    h.textContent = leg.leg + (leg.status === "success" ? "" : " (" + leg.status + ")");
    section.appendChild(h);
    if (leg.warning) {
      var w = document.createElement("p");
      w.className = "note";
      w.textContent = "\u26a0 " + leg.warning;
      section.appendChild(w);
    }
    var charts = document.createElement("div");
    charts.className = "charts";
    section.appendChild(charts);
    hitChart(charts, leg);
    splitChart(charts, leg);
    timelineChart(charts, leg);
    root.appendChild(section);
  });
  document.body.setAttribute("data-charts", String(rendered));
})();
"""
