"""A warm-up's note in the leg's ccache: which run filled it ahead, for which window and toolchain.

The warm-up's run leaves it (:func:`note_leg_warm_up`); the window's first night reads and removes it
(:func:`pipeline.ccache.session.take_warm_up`) and says it in its record and log (:func:`warm_up_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.ccache.session import note_warm_up
from pipeline.leg.context import LegContext
from pipeline.leg.step_results import BuildPlan
from pipeline.util.timeutil import format_utc


def note_leg_warm_up(ctx: LegContext, plan: BuildPlan) -> None:
    """A warm-up's run: which run filled the leg's cache, for which window and toolchain, left in the cache for
    the window's first night to record (pipeline.ccache.session.take_warm_up)."""
    resolution = ctx.inputs.resolution
    # LegOptions.warm_up comes from this resolution (pipeline/commands/build.py).
    assert resolution is not None and resolution.warm_up is not None
    warmed_by = {
        "toolchain": plan.toolchain.identity,
        "window": format_utc(resolution.now),
        **resolution.warm_up.to_json(),
        "tag": plan.source.tag,
    }
    note_warm_up(plan.ccache.ccache_dir, warmed_by)
    ctx.record.ccache["warm_up"] = warmed_by


def warm_up_text(warmed_by: Mapping[str, Any]) -> str:
    run = warmed_by.get("run_url") or "a local warm-up"
    return f"{run} at {warmed_by.get('resolved_at')} (for the window from {warmed_by.get('window')})"
