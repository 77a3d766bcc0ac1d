"""A real Ninja build with one long step: the heartbeat thread writes while nothing finishes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.leg.progress import NINJA_STATUS, NinjaProgress
from pipeline.leg.steps import find_tool, run_logged

pytestmark = pytest.mark.integration


def test_heartbeat_lines_during_a_long_step(tmp_path: Path) -> None:
    (tmp_path / "build.ninja").write_text(
        "rule slow\n  command = sleep 1.5 && touch $out\n  description = SLOW $out\n"
        "rule fast\n  command = touch $out\n  description = FAST $out\n"
        "build a: fast\nbuild b: slow | a\nbuild c: fast | b\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    env = {**os.environ, "NINJA_STATUS": NINJA_STATUS}
    with (tmp_path / "log").open("w") as log, NinjaProgress(console, "cpu", heartbeat=0.2) as progress:
        code, _ = run_logged([str(find_tool("ninja")), "-C", str(tmp_path), "-j1"], env=env, log=log,
                             on_line=progress.line)
    assert code == 0
    beats = [line for line in out.getvalue().splitlines() if "still building" in line]
    # The slow step starts after [1/3]: the heartbeats during it name one finished step of three
    # (one before Ninja's first line, on a loaded machine, knows no count yet).
    assert any(line.startswith("cpu: [1/3] still building, ") for line in beats), out.getvalue()
    assert all(line.startswith(("cpu: [1/3] still building, ", "cpu: [0/?] still building, ")) for line in beats)
    assert out.getvalue().splitlines()[-1].startswith("cpu: [3/3]")
