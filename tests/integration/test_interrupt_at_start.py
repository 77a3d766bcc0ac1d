"""A SIGTERM or SIGINT that lands while a command is still starting (its module importing) is an interrupt.

The run is held at the ``parser`` pause point, just before the command's
module is imported (``source`` and ``publish`` took 0.25 s and 1 s to get
past it), and signalled there: one ``error: interrupted`` line and 128 + the
signal's number, not a ``Terminated`` traceback and exit 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("command", ["source", "publish"])
@pytest.mark.parametrize(
    ("sig", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")]
)
def test_a_signal_before_the_command_is_imported_is_an_interrupt(
    tmp_path: Path, command: str, sig: signal.Signals, code: int, name: str
) -> None:
    pause = tmp_path / "pause"
    pause.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PIPELINE_PAUSE_AT": "parser",
        "PIPELINE_PAUSE_DIR": str(pause),
    }
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", command, "--help"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not (pause / "parser.reached").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the parser pause point"
        time.sleep(0.01)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.splitlines() == [f"error: interrupted ({name}): child processes stopped"]
    assert out == ""
