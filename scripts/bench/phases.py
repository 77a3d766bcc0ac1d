"""The pipeline's per-phase wall times, as the benchmark reports them for the generated project and the real tree.

A leg's record times each of its steps (``phases``); what lies outside every
step (the interpreter's start, the imports, argument and matrix reading, the
lock, the record and summary) is the run's wall time less their sum.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

# The record's phases, one per step of the leg (pipeline/leg/steps.py STEPS); "package" is the archive
# writing inside "bundle" and is not added again.
STEP_PHASES = ("source", "toolchain", "preflight", "ccache", "configure", "build", "bundle", "check")
OUTSIDE = "outside the steps"


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


def phase_breakdown(walls: Sequence[float], phases: Sequence[dict[str, float]]) -> dict[str, float]:
    """Median wall seconds of each step over the runs, and of what lies outside every step: the
    interpreter's start, the imports, argument and matrix reading, the lock, the record and summary."""
    out = {name: _median([p.get(name, 0.0) for p in phases]) for name in STEP_PHASES}
    out[OUTSIDE] = _median(
        [w - sum(p.get(n, 0.0) for n in STEP_PHASES) for w, p in zip(walls, phases, strict=True)]
    )
    return out


def print_phases(console: Any, title: str, phases: dict[str, float]) -> None:
    """``phases`` as a table on ``console`` (a rich Console)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("phase")
    table.add_column("wall (s)", justify="right")
    for name, seconds in phases.items():
        table.add_row(name, f"{seconds:.3f}")
    console.print(table)
