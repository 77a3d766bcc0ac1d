"""The benchmark's idle verdict sees a real process beside it: CPU the bench did not spend is the others'."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.bench import idle as bi

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs /proc/stat"),
]


def _cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` (proc(5): fields 14 and 15, after the parenthesised command)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_busy_process_the_bench_did_not_wait_for_is_other_work() -> None:
    start = bi.snapshot()
    # Not waited for until the end snapshot is taken: its CPU is in /proc/stat, not in our getrusage.
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 60
        while _cpu_s(busy.pid) < 1.0:
            assert time.monotonic() < deadline, "the busy loop got no CPU within 60 s"
            time.sleep(0.05)
        end = bi.snapshot()
        spent = _cpu_s(busy.pid)
    finally:
        busy.kill()
        busy.wait()
    other = bi.other_work(start, end, 2)
    # At least what the loop spent (other tests running beside this one only add to it); the counters
    # tick at the clock's rate, so a tick or two either way.
    assert other["other_cpu_s"] >= spent - 0.15, (other, spent)
    assert other["other_share"] > 0
