"""The smoke run waits for the program, not for a child it left holding its stdout."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipeline.bundle.smoke import run_version

pytestmark = pytest.mark.integration


def test_a_program_that_exits_but_leaves_a_child_holding_stdout_is_not_waited_for(tmp_path: Path) -> None:
    program = tmp_path / "bundle" / "bin" / "llama-cli"
    program.parent.mkdir(parents=True)
    pid_file = tmp_path / "child.pid"
    # As a program that starts a helper daemon: the helper keeps the inherited stdout open.
    program.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > '{pid_file}'\necho 'version: 1 (abc)'\nexit 0\n")
    program.chmod(0o755)
    start = time.monotonic()
    run = run_version(tmp_path / "bundle", "bin/llama-cli", tmp_path / "home")
    assert time.monotonic() - start < 20
    assert (run.exit_code, run.output) == (0, "version: 1 (abc)")
    child = int(pid_file.read_text())
    for _ in range(50):  # the group was stopped: the helper is gone (reaped by init)
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the program's leftover child still runs")


def test_the_wait_for_a_smoke_program_is_woken_by_its_exit_not_by_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Popen.wait(timeout=...)`` sleeps between looks (up to 50 ms each): a warm build paid it per program."""
    import subprocess

    from pipeline.processes import groups

    if not hasattr(os, "pidfd_open"):
        pytest.skip("no os.pidfd_open here: Popen's polling is the fallback")
    naps: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (naps.append(s), real_sleep(s))[1])
    proc = subprocess.Popen(["sleep", "0.3"])
    assert groups.wait_for_exit(proc, 60) == 0
    assert naps == []
    # A process still running after the time limit is Popen's TimeoutExpired, and is still there to stop.
    slow = subprocess.Popen(["sleep", "30"])
    with pytest.raises(subprocess.TimeoutExpired):
        groups.wait_for_exit(slow, 0.2)
    assert slow.poll() is None
    slow.kill()
    assert groups.wait_for_exit(slow, 60) == -9
    # Popen itself polls: the property the test holds is one that could fail.
    polled = subprocess.Popen(["sleep", "0.3"])
    polled.wait(timeout=60)
    assert naps
