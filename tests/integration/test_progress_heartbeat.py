"""A real Ninja build with one long step: the heartbeat thread writes while nothing finishes."""

from __future__ import annotations

import io
import os
import re
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
        code, _ = run_logged(
            [str(find_tool("ninja")), "-C", str(tmp_path), "-j1"], env=env, log=log, on_line=progress.line
        )
    assert code == 0
    beats = [line for line in out.getvalue().splitlines() if "still building" in line]
    # The slow step starts after [1/3]: the heartbeats during it name one finished step of three
    # (one before Ninja's first line, on a loaded machine, knows no count yet).
    assert any(line.startswith("cpu: [1/3] still building, ") for line in beats), out.getvalue()
    assert all(
        line.startswith(("cpu: [1/3] still building, ", "cpu: [0/?] still building, ")) for line in beats
    )
    assert out.getvalue().splitlines()[-1].startswith("cpu: [3/3]")


def test_a_nested_ninja_stays_out_of_the_legs_progress(tmp_path: Path) -> None:
    """A step that runs Ninja itself (CMake's ExternalProject, as vulkan-shaders-gen): its [1/2] lines are not the leg's."""
    ninja = find_tool("ninja")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "build.ninja").write_text(
        "rule cc\n  command = touch $out\n  description = Building CXX object CMakeFiles/gen.dir/gen.cpp.o\n"
        "rule link\n  command = touch $out\n  description = Linking CXX executable gen\n"
        "build gen.o: cc\nbuild gen: link gen.o\n",
        encoding="utf-8",
    )
    (tmp_path / "build.ninja").write_text(
        "rule t\n  command = touch $out\n  description = Building C object ggml/src/CMakeFiles/ggml-base.dir/$out.o\n"
        f"rule nested\n  command = {ninja} -C sub && touch $out\n"
        "  description = Performing build step for 'vulkan-shaders-gen'\n"
        + "".join(f"build s{i}: t{f' | s{i - 1}' if i else ''}\n" for i in range(10))
        + "build ep: nested | s9\nbuild last: t | ep\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    env = {**os.environ, "NINJA_STATUS": NINJA_STATUS}
    with (tmp_path / "log").open("w") as log, NinjaProgress(console, "vulkan", heartbeat=0) as progress:
        code, _ = run_logged(
            [str(ninja), "-C", str(tmp_path), "-j1"], env=env, log=log, on_line=progress.line
        )
    assert code == 0
    log_text = (tmp_path / "log").read_text()
    # The nested Ninja did print its own count through the outer one...
    assert "[1/2] Building CXX object CMakeFiles/gen.dir/gen.cpp.o" in log_text
    # ...but the leg's lines count the leg's 12 steps only, one per decile.
    lines = out.getvalue().splitlines()
    assert lines and all(re.match(r"vulkan: \[\d+/12\] ", line) for line in lines), lines
    assert lines[-1] == "vulkan: [12/12] Building C object ggml/src/CMakeFiles/ggml-base.dir/last.o"
