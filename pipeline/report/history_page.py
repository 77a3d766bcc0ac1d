"""The nightly's history as one self-contained HTML page: per leg, hit rate and build time night by night.

Drawn with plotly (a kept plotting library, not hand-made SVG): one figure per
leg, the hit rate above and the build time below on a shared night axis, a
star on each night the leg's toolchain changed (its misses are expected
there). plotly.js is written into the page once, so it opens offline, as the
run's report does; plotly is imported only here, when a history is drawn.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.report.history import NightPoint, summary_lines

HIT_COLOUR = "#2e8b57"
TIME_COLOUR = "#2f6fba"
CHANGE_COLOUR = "#c0392b"


def _figure(leg: str, points: Sequence[NightPoint], threshold: float) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    nights = [p.night for p in points]
    rates = [None if p.hit_rate is None else round(100 * p.hit_rate, 1) for p in points]
    minutes = [round(p.wall_seconds / 60, 2) for p in points]
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("ccache hit rate (%)", "build time (min)"),
    )
    hover = [f"{p.night}<br>{p.status}<br>toolchain {p.toolchain}" for p in points]
    fig.add_trace(
        go.Scatter(
            x=nights,
            y=rates,
            mode="lines+markers",
            name="hit rate",
            line={"color": HIT_COLOUR},
            hovertext=hover,
            hoverinfo="text+y",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=nights,
            y=minutes,
            mode="lines+markers",
            name="build time",
            line={"color": TIME_COLOUR},
            hovertext=hover,
            hoverinfo="text+y",
        ),
        row=2,
        col=1,
    )
    changed = [i for i, p in enumerate(points) if p.toolchain_changed]
    if changed:
        fig.add_trace(
            go.Scatter(
                x=[nights[i] for i in changed],
                y=[rates[i] if rates[i] is not None else 0 for i in changed],
                mode="markers",
                name="toolchain changed",
                marker={"symbol": "star", "size": 14, "color": CHANGE_COLOUR},
                hovertext=[f"new toolchain: {points[i].toolchain}" for i in changed],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    fig.add_hline(y=100 * threshold, line_dash="dot", line_color="#8c8c8c", row=1, col=1)
    fig.update_yaxes(range=[0, 105], row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=2, col=1)
    fig.update_xaxes(type="category")
    fig.update_layout(
        height=460,
        margin={"l": 50, "r": 20, "t": 40, "b": 40},
        legend={"orientation": "h"},
        template="plotly_white",
    )
    return fig


def render_history_html(
    series: Mapping[str, Sequence[NightPoint]], *, nights: int, generated: str, threshold: float, repo: str
) -> str:
    """The page: a summary line per leg, then one figure per leg (plotly.js inline, once)."""
    parts = []
    for i, (leg, points) in enumerate(series.items()):
        fig = _figure(leg, points, threshold)
        div = fig.to_html(
            full_html=False,
            include_plotlyjs=(i == 0),
            div_id=f"history-{leg}",
            config={"displaylogo": False, "responsive": True},
        )
        parts.append(
            f'<section class="leg" data-leg="{html.escape(leg)}" data-nights="{len(points)}">'
            f"<h2>{html.escape(leg)}</h2>{div}</section>"
        )
    summary = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(series, threshold))
    title = f"{html.escape(repo)}: the last {nights} night{'' if nights == 1 else 's'}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}"
        "section.leg{margin:1.5rem 0;border-top:1px solid #ddd}h2{font-size:1.1rem}</style></head>"
        f'<body data-legs="{len(series)}"><h1>{title}</h1>'
        f"<p>Generated {html.escape(generated)}. A star marks a night whose toolchain changed; the dotted line "
        f'is the alarm threshold ({threshold:.0%}).</p><ul class="summary">{summary}</ul>'
        + "".join(parts)
        + "</body></html>\n"
    )
