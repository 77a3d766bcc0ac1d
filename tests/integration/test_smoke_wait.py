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
