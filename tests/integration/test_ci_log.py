"""A build's CI log as GitHub Actions keeps it: progress lines and heartbeats, never wrapped, no live bar.

The workflow sets ``FORCE_COLOR=1`` for coloured logs. rich takes that
variable as "this is a terminal", so before the console decision ignored it
on Actions a build drew a live bar into the log (cursor movements, nothing
readable until the end) and wrapped every line at 80 columns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.pipeline_cli import ROOT
from tests.support.projects import write_cpp_project, write_matrix

# Cursor movement, erase-line and cursor show/hide: what a live display writes, never a log.
LIVE_CONTROL = re.compile(r"\x1b\[(\d*[ABCDGK]|\?25[hl]|2K)|\r(?!\n)")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_a_build_in_a_ci_log_prints_progress_and_heartbeats_unwrapped(tmp_path: Path) -> None:
    # A workspace path well past 80 columns: the bundle's line names it, whole.
    ws = tmp_path / ("a-workspace-folder-with-a-long-name-" * 3) / "nightly"
    project = write_cpp_project(ws / "project", units=8)
    # One step that finishes nothing for a while, as a long HIP compile does: heartbeats fill it.
    with (project / "CMakeLists.txt").open("a") as cml:
        cml.write('add_custom_target(slow_step ALL COMMAND "${CMAKE_COMMAND}" -E sleep 4 DEPENDS demo)\n')
    write_matrix(ws / "matrix.toml")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "TERM")}
    env.update(
        PYTHONPATH=str(ROOT), FORCE_COLOR="1", GITHUB_ACTIONS="true", PIPELINE_HEARTBEAT="1"
    )  # the shortest heartbeat there is
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", "--matrix", str(ws / "matrix.toml"), "build", "cpu",
         "--source", str(project), "--out", str(ws / "out"), "--ccache-dir", str(tmp_path / "ccache"),
         "--tag", "b4242"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, check=False,
    )  # fmt: skip
    log = proc.stdout
    assert proc.returncode == 0, log
    assert not LIVE_CONTROL.search(log), repr(log[:2000])
    assert SGR.search(log), "FORCE_COLOR=1 still colours the log"
    lines = SGR.sub("", log).splitlines()
    progress = [line for line in lines if re.match(r"cpu: \[\d+/\d+\] (?!still building)", line)]
    beats = [line for line in lines if re.match(r"cpu: \[\d+/(\d+|\?)\] still building, \d+s elapsed$", line)]
    assert len(progress) >= 3, log
    assert progress[-1].startswith(("cpu: [",)) and re.match(r"cpu: \[(\d+)/\1\] ", progress[-1]), log
    assert len(beats) >= 2, log
    bundle = ws / "out" / "dist" / "llama-b4242-bin-ubuntu-x64.tar.gz"
    assert bundle.is_file()
    assert len(str(bundle)) > 120
    # The bundle's path on one line, as it is: not cut at 80 columns.
    assert any(f"cpu: bundle {bundle} (" in line for line in lines), log
